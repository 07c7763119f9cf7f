"""The rules that ask when a command cannot be shown harmless, in the order they are tried.

`hermes_core.command_rules.disasters` names known disasters; these rules ask about what cannot be
seen from the command line: git discarding work or running configured code, inline code,
risky programs on computed or outside operands (`hermes_core.command_rules.operands`) and code
handed over where it cannot be read (`hermes_core.command_rules.hidden_code`).
"""

from __future__ import annotations

from hermes_core.command_rules.git import git_rule
from hermes_core.command_rules.hidden_code import (
    awk_unseen,
    carrier_code,
    container_mounts_host,
    defines_function,
    editor_runs_commands,
    eval_unseen,
    inline_code_unseen,
    program_computed,
    runs_given_command,
    schedules_code,
    sed_unseen,
    sources_unseen,
    sqlite_shells_out,
    subscript_runs_code,
    tar_runs_code,
)
from hermes_core.command_rules.operands import (
    dd_writes,
    deletes_computed,
    deletes_container_data,
    deletes_outside,
    deletes_workspace,
    fed_risky,
    find_unseen,
    in_place_unseen,
    kills_computed,
    moves_unseen,
    ownership_unseen,
    shreds,
    tee_unseen,
    truncates,
    writes_through_option,
)
from hermes_core.command_rules.words import Roots, Rule
from hermes_core.shell.programs import Invocation

_PROGRAM_EXPANSIONS = "a program name the shell computes ($X, $(…), `…`, $'…', globs, {a,b})"

SHELL_COMPUTED = 'runs shell code the shell computes (bash -c "$X", su -c "$X")'


FAIL_CLOSED_RULES: tuple[Rule, ...] = (
    Rule(f"runs {_PROGRAM_EXPANSIONS}", program_computed),
    Rule("deletes paths the shell computes ($VAR, globs, ~, {a,b}, $(…))", deletes_computed),
    Rule("deletes outside the working directory", deletes_outside),
    Rule("deletes the workspace itself", deletes_workspace),
    Rule("runs a risky program on input it reads (… | xargs rm)", fed_risky),
    Rule("overwrites files with random data (shred)", shreds),
    Rule("truncates files (truncate)", truncates),
    Rule("writes raw data to a file (dd of=…)", dd_writes),
    Rule("moves or overwrites paths outside the working directory or computed by the shell", moves_unseen),
    Rule("chmod/chown outside the working directory or on computed paths", ownership_unseen),
    Rule("find deletes, runs commands or writes files beyond what can be checked", find_unseen),
    Rule("edits files in place outside the working directory (sed -i)", in_place_unseen),
    Rule("writes files outside the working directory (tee)", tee_unseen),
    Rule("defines a shell function or alias (what runs cannot be checked)", defines_function),
    Rule('evaluates text the shell computes (eval "$X")', eval_unseen),
    Rule(
        "runs code kept in an array subscript as text (printf -v 'a[$(…)]', let, [[ -eq ]])",
        subscript_runs_code,
    ),
    Rule("sources a script that cannot be checked (source $X, ~/…, <(…))", sources_unseen),
    Rule("awk program runs commands or writes files (system(), |, >)", awk_unseen),
    Rule("sed script runs commands or writes files (e, w)", sed_unseen),
    Rule("tar runs a command (--to-command, -I, --checkpoint-action)", tar_runs_code),
    Rule("an editor or debugger runs commands given on its command line", editor_runs_commands),
    Rule("schedules or distributes commands (crontab, at, parallel)", schedules_code),
    Rule("sqlite runs a shell command (.shell)", sqlite_shells_out),
    Rule("a container gets the host's files or privileges (docker run -v /:…)", container_mounts_host),
    Rule(
        "runs a command given in its options (ssh -o ProxyCommand, rsync -e, man -P, make --eval, …)",
        runs_given_command,
    ),
    Rule("kills processes the shell computes (kill $PID, kill 0)", kills_computed),
    Rule(
        "writes outside the working directory through an option (curl -o ~/…, tar -C ~, sort -o)",
        writes_through_option,
    ),
    Rule("runs shell code handed over as text (script -c, sg)", carrier_code),
    Rule("deletes container volumes or prunes everything (docker system prune)", deletes_container_data),
)


def fail_closed(invocation: Invocation, roots: Roots) -> str | None:
    if hit := git_rule(invocation, roots):
        return hit
    if hit := inline_code_unseen(invocation):
        return hit
    if _hands_over_computed_code(invocation):
        return SHELL_COMPUTED
    for rule in FAIL_CLOSED_RULES:
        if rule.matches(invocation, roots):
            return rule.description
    return None


_CODE_CARRIERS = frozenset({"su", "flock", "script", "ssh", "watch", "trap", "npx", "pnpx", "bunx"})


def _hands_over_computed_code(invocation: Invocation) -> bool:
    """`su -c "$X"`, `watch "$X"`, `ssh host "$X"`, `env -S "$X"`: code that is not visible."""
    words = invocation.words[1:]
    computed = any(not w.literal for w in words)
    if invocation.program == "env":
        return computed and any(w.text.startswith(("-S", "--split")) for w in words)
    if invocation.program in ("npx", "pnpx", "bunx"):
        return computed and any(w.text in ("-c", "--call") or w.text.startswith("--call=") for w in words)
    return computed and invocation.program in _CODE_CARRIERS
