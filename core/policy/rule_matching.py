"""What a permission rule's specifier matches: an MCP tool's name, a command line, paths.

A command fits an allow rule only when every simple command in it fits, with nothing the
shell computes and no output redirected into a file; it fits a deny or ask rule when any
program it runs does, wrappers taken off. A path fits an allow rule only where the file
really is (links resolved) and where it seems to be; a deny or ask rule, either.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from hermes_core.fence.wildmatch import PathGlob, star_text

if TYPE_CHECKING:
    from pydantic import BaseModel

    from hermes_core.shell.parse import CommandLine
    from hermes_core.tools.base import Tool
    from hermes_core.workspace import Workspace

Action = Literal["deny", "ask", "allow"]


def mcp_covers(pattern: str, tool_name: str, server: str | None = None) -> bool:
    """Whether `mcp__server__tool`, `mcp__server` or `mcp__server__*` names the tool.
    `server`: the tool's server as its name spells it, when known: a server-wide rule
    compares it whole, since by the name's prefix `mcp__github` also covered the servers
    named `github (work)` (`mcp__github__work___…`) or `github_`."""
    if pattern == tool_name:
        return True
    if pattern.endswith("__*"):
        whole = pattern[:-3]
    elif pattern.count("__") == 1:
        whole = pattern
    else:
        return False
    if server is not None:
        return whole == f"mcp__{server}"
    return tool_name.startswith(whole + "__")


def _text_matches(specifier: str, text: str) -> bool:
    if specifier.endswith(":*"):
        prefix = specifier[:-2].rstrip()
        return text == prefix or text.startswith(prefix + " ")
    if "*" in specifier:
        # The rule may be a project's and the text is the model's: no backtracking regex.
        return star_text(specifier).fullmatch(text) is not None
    return text == specifier


def command_matches(specifier: str, command: CommandLine, action: Action) -> bool:
    from hermes_core.shell.parse import simple_commands
    from hermes_core.shell.programs import all_invocations
    from hermes_core.shell.tokens import ShellSyntaxError

    specifier = " ".join(specifier.split())
    plain = " ".join(command.text.split())
    try:
        script = command.parsed()
    except ShellSyntaxError:
        # Unreadable: it can never be shown to fit an allow rule; a deny or ask rule with
        # its text in front still catches it.
        return action != "allow" and _text_matches(specifier, plain)
    commands = list(simple_commands(script))
    units = [list(c.words) for c in commands]
    if action == "allow":
        if not units or any(w.subs for unit in units for w in unit):
            return False
        if any(_writes_a_file(r) for c in commands for r in c.redirects):
            return False  # `npm test > src/x.py` is more than `npm test`
        return all(_text_matches(specifier, " ".join(w.text for w in unit)) for unit in units)
    from hermes_core.command_rules.words import subcommand_at

    candidates = {plain}
    candidates.update(" ".join(w.text for w in unit) for unit in units)
    named = _program_named(specifier)
    for invocation in all_invocations(script):
        args = invocation.args
        candidates.add(" ".join((invocation.program, *args)))
        candidates.add(" ".join(w.text for w in invocation.words))
        # `git -C . push`, `git --no-pager -c k=v push`: the subcommand past the program's
        # own leading options, which `Bash(git push:*)` does not spell.
        candidates.add(" ".join((invocation.program, *args[subcommand_at(invocation.program, args) :])))
        if invocation.program == named and any(w.subs for w in invocation.words[1:]):
            return True  # `git $(echo push)`: what the rule names may be what the shell computes
    return any(_text_matches(specifier, candidate) for candidate in candidates)


def _program_named(specifier: str) -> str | None:
    """The program a command rule names by its first word (`git` in `git push:*`), if plain."""
    first = specifier.removesuffix(":*").split(" ", 1)[0]
    return first if first and "*" not in first and " " in specifier.removesuffix(":*").strip() else None


def _writes_a_file(redirect: Any) -> bool:
    return bool(redirect.writes) and redirect.target.text not in ("/dev/null", "&1", "&2", "1", "2")


def paths_match(
    pattern: PathGlob, tool: Tool[Any], args: BaseModel, workspace: Workspace, action: Action
) -> bool:
    scope = workspace.scope
    raws = tool.paths(args) or ["."]
    results = []
    for raw in raws:
        lexical = str(scope.absolute(raw))
        real = os.path.realpath(lexical)
        if action == "allow":
            # Allowed only where the file really is: a link under src/ to elsewhere is not src/.
            results.append(bool(pattern.fullmatch(real)) and bool(pattern.fullmatch(lexical)))
        else:
            results.append(bool(pattern.fullmatch(lexical) or pattern.fullmatch(real)))
    return all(results) if action == "allow" else any(results)


def path_pattern(specifier: str, base: Path) -> PathGlob:
    """A rule's path pattern over absolute paths (matched without backtracking: a project's
    rule file is the workspace's, and the path the model's)."""
    spec = specifier.strip()
    if spec.startswith("//"):
        anchored = spec[1:]
    elif spec == "~" or spec.startswith("~/"):
        anchored = str(Path.home()) + spec[1:]
    elif spec.startswith("/"):
        anchored = str(base) + spec
    else:
        spec = spec.removeprefix("./")
        if "/" not in spec.rstrip("/"):
            return PathGlob([*_literal(f"{base}/"), ("dirs", ""), *_glob(spec.rstrip("/")), ("below", "")])
        anchored = f"{base}/{spec}"
    anchored = os.path.normpath(anchored) + ("/**" if anchored.endswith("/") else "")
    below = [] if anchored.endswith("**") else [("below", "")]
    return PathGlob([*_glob(anchored), *below])


def _literal(text: str) -> list[tuple[str, str]]:
    return [("lit", char) for char in text]


def _glob(pattern: str) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    i = 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out.append(("dirs", ""))
            i += 3
        elif pattern.startswith("**", i):
            out.append(("any", ""))
            i += 2
        elif pattern[i] == "*":
            out.append(("seg", ""))
            i += 1
        elif pattern[i] == "?":
            out.append(("one", ""))
            i += 1
        else:
            out.append(("lit", pattern[i]))
            i += 1
    return out
