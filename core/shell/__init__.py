"""Reading a command line the way bash will run it.

`lexer` reads quoting, substitutions and here-documents; `parse` builds pipelines of
simple commands and subshells from them; `programs` takes each simple command apart into
the programs it runs (wrappers such as `sudo`, `env`, `xargs`, `npx` unwrapped) and the code
it hands to another interpreter. The danger rules (`hermes_core.command_rules`) work on these.
"""
