"""The danger rules: whether a command may run without asking, and what "always" covers.

`check.dangerous_rule` is the decision path. It reads the command with `hermes_core.shell`, then
tries on every program the command may run, in this order: the known disasters
(`disasters`), then the fail-closed rules (`fail_closed`: git in `git`, inline code read by
`inline_code`, risky programs on unseen operands in `operands`, code that cannot be read in
`hidden_code`). `words` is their shared vocabulary. `scope.command_scope` answers the other
question asked of a command: how far an "always allow" for it reaches.
"""
