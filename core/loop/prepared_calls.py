"""A model response's tool calls, read before anything runs: the tool found (or the
closest name), the arguments parsed and checked against its schema, repeats of one call
marked, the files each touches resolved, and the card the editor shows at once.

`contained` is the one place that keeps a tool call, whatever its arguments, from ending a
turn: whatever goes wrong with one call, from parsing to reporting, becomes its error.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ValidationError

from hermes_core.events import Location, ToolCallStarted, ToolKind
from hermes_core.loop.tool_record import OutputTail
from hermes_core.loop.tool_waves import file_identity
from hermes_core.messages import ToolCall
from hermes_core.tools.base import ApprovalFacts, Tool, ToolResult
from hermes_core.tools.registry import ToolRegistry
from hermes_core.workspace import Workspace, WorkspaceError

if TYPE_CHECKING:
    from hermes_core.policy.approval import PolicyVerdict

log = logging.getLogger(__name__)


@dataclass(slots=True)
class PreparedCall:
    """One tool call of a model response, from parse to result."""

    call: ToolCall
    tool: Tool | None = None
    args: BaseModel | None = None
    raw_args: dict[str, Any] = field(default_factory=dict)
    error: str | None = None  # set when the call cannot run (unknown tool, bad arguments)
    duplicate_of: PreparedCall | None = None
    started: ToolCallStarted | None = None
    result: ToolResult | None = None
    allow_outside: bool = False
    # A stored "always" outside the sandbox, applied at run time only (`always_guard`).
    guarded: PolicyVerdict | None = None
    cancels_turn: bool = False  # the user answered its permission request with "cancel"
    # The files the call touches, resolved (see `file_identity`); None when a path could
    # not be resolved, so nothing can be proven about it.
    targets: frozenset[object] | None = frozenset()
    hook_notes: list[str] = field(default_factory=list)  # what hooks added for the model
    # What the tool declares about the call (its command line read once), for the hooks'
    # matchers and the approval policy alike; read on first need (`facts()`).
    _facts: ApprovalFacts | None = None
    output: OutputTail = field(default_factory=OutputTail)  # what it streamed, kept for replays

    def facts(self) -> ApprovalFacts:
        assert self.tool is not None and self.args is not None
        if self._facts is None:
            self._facts = self.tool.approval_facts(self.args)
        return self._facts

    @property
    def writes(self) -> bool:
        return self.tool is not None and not self.tool.read_only


def prepare_calls(
    tool_calls: list[ToolCall], tools: ToolRegistry, workspace: Workspace
) -> list[PreparedCall]:
    """The calls of one response, each read once; a repeat of a call (same tool, same
    arguments) is marked and gets its first's result."""
    prepared: list[PreparedCall] = []
    seen: dict[tuple[str, str], PreparedCall] = {}
    for call in tool_calls:
        item = PreparedCall(call)
        prepared.append(item)
        key = (call.name, _canonical_json(call.arguments))
        if key in seen:
            item.duplicate_of = seen[key]
            item.tool = seen[key].tool
            item.raw_args = seen[key].raw_args
            item.targets = seen[key].targets
            continue
        seen[key] = item
        with contained(item, "could not be prepared"):
            _parse(item, tools)
            item.targets = _targets(item, workspace)
    for item in prepared:
        item.started = _started_event(item, workspace)
    return prepared


def _parse(item: PreparedCall, tools: ToolRegistry) -> None:
    call = item.call
    tool = tools.get(call.name) or tools.closest(call.name)
    if tool is None:
        available = ", ".join(sorted(tools.names()))
        item.error = f"Unknown tool {call.name!r}. Available tools: {available}."
        return
    item.tool = tool
    try:
        parsed = json.loads(call.arguments) if call.arguments.strip() else {}
    except json.JSONDecodeError as exc:
        item.error = (
            f"The arguments for {tool.name} are not valid JSON ({exc.msg} at line {exc.lineno} "
            f"column {exc.colno}). Send a JSON object matching the tool's schema."
        )
        return
    except RecursionError:  # the model's `[[[[…`: a failed call, not a failed turn
        item.error = f"The arguments for {tool.name} are nested too deeply. Send a flat JSON object."
        return
    if not isinstance(parsed, dict):
        item.error = f"The arguments for {tool.name} must be a JSON object, not {type(parsed).__name__}."
        return
    item.raw_args = parsed
    try:
        item.args = tool.parse(parsed)
    except ValidationError as exc:
        item.error = f"Invalid arguments for {tool.name}: {_describe_validation(exc)}"


def _targets(item: PreparedCall, workspace: Workspace) -> frozenset[object] | None:
    if item.tool is None or item.args is None:
        return frozenset()
    scope = workspace.scope
    try:
        return frozenset(file_identity(scope.absolute(raw)) for raw in item.tool.paths(item.args))
    except WorkspaceError:
        return None  # the call fails when it runs; until then it may touch anything


def _started_event(item: PreparedCall, workspace: Workspace) -> ToolCallStarted:
    tool = item.tool
    title = item.call.name
    kind: ToolKind = "other"
    locations: tuple = ()
    if tool is not None:
        kind = tool.kind
        title = tool.name
        if item.args is not None:
            with contextlib.suppress(Exception):
                title = tool.title(item.args, workspace)
            with contextlib.suppress(Exception):
                locations = tuple(
                    loc for loc in tool.locations(item.args, workspace) if _followable(loc, workspace)
                )
    return ToolCallStarted(item.call.id, item.call.name, title, kind, item.raw_args, locations)


def _followable(location: Location, workspace: Workspace) -> bool:
    """Whether an editor may open this location as the card arrives (Zed's "follow the
    agent" does, before the user answered): a file of the workspace that is no secret and
    no FIFO or device. `~/.aws/credentials` opened in a tab is on screen for anyone who sees
    it, and a FIFO or `/dev/zero` hangs the editor that reads it. The title still names it."""
    scope = workspace.scope
    path = Path(location.path)
    if scope.outside(path) or scope.is_secret(path):
        return False
    try:
        mode = os.stat(path).st_mode  # a stat, not an open: a FIFO does not block it
    except FileNotFoundError:
        return True  # a file about to be written
    except OSError:
        return False
    return stat.S_ISREG(mode) or stat.S_ISDIR(mode)


@contextlib.contextmanager
def contained(item: PreparedCall, what: str) -> Iterator[None]:
    """Any exception inside becomes the call's error result; the turn goes on.

    The one place that keeps a tool call, whatever its arguments, from ending a turn:
    a path with a NUL byte or through a symlink loop, a tool bug, an approver that
    broke. Cancelling the task passes through (CancelledError is no Exception).
    """
    try:
        yield
    except WorkspaceError as exc:  # an expected refusal: its text is written for the model
        item.error = str(exc)
        item.result = ToolResult.error(item.error)
    except Exception as exc:
        name = item.tool.name if item.tool is not None else item.call.name
        log.exception("tool call %s (%s) %s", item.call.id, name, what)
        item.error = f"{name} {what}: {type(exc).__name__}: {exc}"
        item.result = ToolResult.error(item.error)


def _canonical_json(arguments: str) -> str:
    try:
        return json.dumps(json.loads(arguments), sort_keys=True)
    except (json.JSONDecodeError, TypeError, RecursionError):
        return arguments


def _describe_validation(exc: ValidationError) -> str:
    problems = []
    for error in exc.errors():
        where = ".".join(str(p) for p in error["loc"]) or "(arguments)"
        problems.append(f"{where}: {error['msg']}")
    return "; ".join(problems)
