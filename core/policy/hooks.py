"""Command hooks around a session's prompts and tool calls.

Events: `session_start` (before the session's first prompt runs), `prompt_submit`,
`pre_tool`, `post_tool`, `stop` (the model finished its answer). A hook is a shell command
(`bash -c`, in the session's directory, the agent's model keys left out of its
environment) that reads one JSON object on stdin:

    {"event", "session_id", "cwd", "prompt"?, "tool"?, "arguments"?, "result"?, "ok"?}

- exit 0: go on. Stdout may be JSON: `{"context": "..."}` adds text for the model (to the
  prompt, or to the tool's result), `{"decision": "block", "reason": "..."}` blocks as exit
  2 does. Plain stdout of a `session_start` or `prompt_submit` hook is context too.
- exit 2: block, stderr is the reason: `pre_tool` -> the call does not run and the model
  reads why; `post_tool` -> the model reads it after the result; `prompt_submit` -> the
  prompt is not sent; `stop` -> the model is given the reason and goes on (at most
  MAX_STOP_BLOCKS times a turn).
- any other exit, or the timeout (default 60 s, the process group killed): an error the
  turn survives.
A hook that blocks or fails is shown to the editor as a tool-call card of its own.

`matcher` (tool hooks only) is a permission rule (`Bash(npm *)`, `Edit(src/**)`,
`mcp__github`): the hook runs for the calls it covers; none runs it for every call.
User hooks come from config.toml (`[[hooks.pre_tool]]`); a project's `.hermes/config.toml`
hooks run only once the user trusted that file's content (`/permissions trust`).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import signal
import uuid
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hermes_core.events import Event, Status, TextDelta, ToolCallFinished, ToolCallStarted, TurnEnded
from hermes_core.policy.hook_specs import HookSpec

if TYPE_CHECKING:
    from pydantic import BaseModel

    from hermes_core.messages import ContentPart
    from hermes_core.sandbox.bwrap import Sandbox
    from hermes_core.tools.base import ApprovalFacts, Tool
    from hermes_core.workspace import Workspace

log = logging.getLogger(__name__)

RunOnce = Callable[["str | list[ContentPart]", "str | None"], AsyncIterator[Event]]

BLOCK_EXIT = 2
MAX_OUTPUT = 64 * 1024
MAX_STOP_BLOCKS = 3
STOP_PREFIX = "(A stop hook asks you to go on before finishing:)"


@dataclass(slots=True)
class HookOutcome:
    blocked: bool = False
    reason: str = ""
    context: list[str] = field(default_factory=list)
    cards: list[Event] = field(default_factory=list)  # hooks that blocked or failed, for the editor


class Hooks:
    """A session's hooks; `run` runs those of one event that apply."""

    def __init__(
        self,
        specs: list[HookSpec],
        cwd: str | Path,
        session_id: str | None = None,
        sandbox: Sandbox | None = None,
    ) -> None:
        self.specs = specs
        self.cwd = Path(cwd)
        self.session_id = session_id
        self.sandbox = sandbox  # where hooks run, as the session's commands do
        self._started = False

    def use(self, specs: list[HookSpec]) -> None:
        """Run these hooks from now on (the user trusted a project file's: `/permissions trust`)."""
        self.specs = specs

    def of(self, event: str) -> list[HookSpec]:
        return [spec for spec in self.specs if spec.event == event]

    async def run(
        self,
        event: str,
        payload: dict[str, Any],
        *,
        tool: Tool[Any] | None = None,
        args: BaseModel | None = None,
        workspace: Workspace | None = None,
        facts: ApprovalFacts | None = None,
    ) -> HookOutcome:
        """`facts`: the call's `approval_facts`, read once for the matchers and the policy."""
        outcome = HookOutcome()
        specs = [s for s in self.of(event) if _applies(s, tool, args, workspace, self.cwd, facts)]
        if not specs:
            return outcome
        data = {"event": event, "session_id": self.session_id, "cwd": str(self.cwd), **payload}
        for spec in specs:
            await self._run_one(spec, data, outcome)
            if outcome.blocked:
                break
        return outcome

    async def _run_one(self, spec: HookSpec, data: dict[str, Any], outcome: HookOutcome) -> None:
        if (why := _cannot_confine(spec, self.sandbox)) is not None:
            outcome.cards += _card(spec, "failed", why)
            return
        code, stdout, stderr = await _execute(spec, json.dumps(data).encode(), self.cwd, self.sandbox)
        if code is None:
            outcome.cards += _card(
                spec, "failed", f"Hook timed out after {spec.timeout:g} s; the turn goes on."
            )
            return
        if code == 0:
            reply = _json_reply(stdout)
            if reply is not None and reply.get("decision") == "block":
                outcome.blocked = True
                outcome.reason = str(reply.get("reason") or "blocked by a hook")
                outcome.cards += _card(spec, "failed", f"Blocked: {outcome.reason}")
            elif reply is not None and isinstance(reply.get("context"), str):
                outcome.context.append(reply["context"])
            elif reply is None and stdout.strip() and spec.event in ("session_start", "prompt_submit"):
                outcome.context.append(stdout.strip())
            return
        if code == BLOCK_EXIT:
            outcome.blocked = True
            outcome.reason = stderr.strip() or "blocked by a hook"
            outcome.cards += _card(spec, "failed", f"Blocked: {outcome.reason}")
            return
        detail = stderr.strip() or stdout.strip()
        outcome.cards += _card(
            spec, "failed", f"Hook failed (exit {code}); the turn goes on. {detail}".strip()
        )

    # -- around a turn ------------------------------------------------------------------

    async def around_turn(
        self, run_once: RunOnce, content: str | list[ContentPart], preamble: str | None
    ) -> AsyncIterator[Event]:
        """A turn with its hooks: session_start and prompt_submit before it, stop after.
        `run_once` runs the model's turn (again, each time a stop hook asks it to go on)."""
        from hermes_core.events import StopReason
        from hermes_core.models import Usage

        contexts: list[str] = []
        if not self._started:
            self._started = True
            started = await self.run("session_start", {})
            for card in started.cards:
                yield card
            contexts += started.context
        submitted = await self.run("prompt_submit", {"prompt": _plain(content)})
        for card in submitted.cards:
            yield card
        if submitted.blocked:
            text = f"A hook blocked this prompt; it was not sent: {submitted.reason}"
            yield TextDelta(text)
            yield TurnEnded(StopReason.END_TURN, Usage(), text)
            return
        contexts += submitted.context
        preamble = "\n\n".join(
            [*(f"(From a hook:) {c}" for c in contexts), *([preamble] if preamble else [])]
        )
        usage = Usage()
        texts: list[str] = []
        stop_reason = StopReason.END_TURN
        for round_number in range(MAX_STOP_BLOCKS + 1):
            ended: TurnEnded | None = None
            async for event in run_once(content, preamble or None):
                if isinstance(event, TurnEnded):
                    ended = event
                    continue
                yield event
            assert ended is not None
            usage += ended.usage
            texts.append(ended.text)
            stop_reason = ended.stop_reason
            if stop_reason is not StopReason.END_TURN or round_number == MAX_STOP_BLOCKS:
                break
            stopping = await self.run("stop", {"answer": ended.text})
            for card in stopping.cards:
                yield card
            if not stopping.blocked:
                break
            content, preamble = f"{STOP_PREFIX}\n{stopping.reason}", ""
            yield Status("notice", f"A stop hook asked the model to go on: {stopping.reason}")
        yield TurnEnded(stop_reason, usage, "".join(texts))


def _applies(
    spec: HookSpec,
    tool: Tool[Any] | None,
    args: BaseModel | None,
    workspace: Workspace | None,
    cwd: Path,
    facts: ApprovalFacts | None,
) -> bool:
    if spec.matcher is None or tool is None or args is None or workspace is None:
        return True
    from hermes_core.policy.permission_rules import parse_rule

    rule = parse_rule(spec.matcher, "ask", spec.source, cwd)
    if rule is None:
        return False
    try:
        return rule.covers(tool, args, workspace, facts)
    except Exception:
        log.debug("hook matcher %r could not be applied", spec.matcher, exc_info=True)
        return True


def _cannot_confine(spec: HookSpec, sandbox: Sandbox | None) -> str | None:
    """Why the hook is not run, when it must run in the sandbox and the sandbox cannot
    start: then it ran unconfined, so the workspace script it runs (which the model may
    rewrite unasked) ran outside, where every command of the model's asks. Fails closed, as
    a hook that fails does: the card says so and the turn goes on. The sandbox turned
    `off` by the user, and `unconfined = true` in the user's own config, still run it."""
    if sandbox is None or spec.unconfined or sandbox.confinement != "unavailable":
        return None
    return (
        f"Hook not run: it runs in the sandbox, and the sandbox cannot start "
        f"({sandbox.availability.reason}); the turn goes on. Fix the sandbox, or mark the hook "
        "`unconfined = true` in your config.toml if it runs nothing the workspace can change."
    )


async def _execute(
    spec: HookSpec, stdin: bytes, cwd: Path, sandbox: Sandbox | None
) -> tuple[int | None, str, str]:
    """The hook's exit code (None on timeout), stdout and stderr. A hook runs in the
    session's sandbox, like a command: what it runs (`./scripts/check.sh`, `pytest`, `make
    lint`) is the workspace's, which the model may have rewritten. Only the user's own
    `unconfined = true` takes it out (a sandbox that cannot start runs none: `_cannot_confine`)."""
    from hermes_core.sandbox.hidden_env import CREDENTIAL_ENV

    env = {k: v for k, v in os.environ.items() if not CREDENTIAL_ENV.fullmatch(k)}
    env["HERMES_HOOK_EVENT"] = spec.event
    argv = ["bash", "-c", spec.command]
    if sandbox is not None and sandbox.confinement == "sandboxed" and not spec.unconfined:
        from hermes_core.sandbox.abstract_sockets import in_child

        sandbox = _pinned_or_read_only(sandbox)
        env, argv = sandbox.environment(env), sandbox.wrap(argv, cwd=cwd)
        try:  # scoped as the session's commands are: no abstract socket of the host
            return await _spawn(spec, argv, env, stdin, cwd, in_child(sandbox.bwrap))
        finally:
            sandbox.after_command()
    return await _spawn(spec, argv, env, stdin, cwd)


def _pinned_or_read_only(sandbox: Sandbox) -> Sandbox:
    """The session's sandbox, or, where a root holds a protected name that is a symbolic
    link (`protected.unpinnable_links`: `.zed -> ~/dotfiles/zed`), a view of it with the
    roots read-only. A command there asks first; a hook cannot ask, and what it runs
    (`./scripts/check.sh`) may have been rewritten to swap the link for a folder of its own."""
    from hermes_core.sandbox.protected import unpinnable_links

    if sandbox.mode != "workspace-write" or not any(unpinnable_links(r) for r in sandbox.scope.roots):
        return sandbox
    return sandbox.read_only_view()


async def _spawn(
    spec: HookSpec,
    argv: list[str],
    env: dict[str, str],
    stdin: bytes,
    cwd: Path,
    preexec: Callable[[], None] | None = None,
) -> tuple[int | None, str, str]:
    process = await asyncio.create_subprocess_exec(
        *argv,
        cwd=cwd,
        env=env,
        preexec_fn=preexec,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        start_new_session=True,  # its whole group is killed on a timeout or a cancel
    )
    try:
        out, err = await asyncio.wait_for(_talk(process, stdin), spec.timeout)
    except TimeoutError:
        _kill(process)
        await process.wait()
        log.warning("hook %r (%s) timed out after %s s", spec.command, spec.event, spec.timeout)
        return None, "", ""
    except BaseException:
        _kill(process)
        raise
    decode = lambda b: b.decode("utf-8", errors="replace")  # noqa: E731
    return process.returncode, decode(out), decode(err)


async def _talk(process: asyncio.subprocess.Process, stdin: bytes) -> tuple[bytes, bytes]:
    """`communicate`, keeping the first MAX_OUTPUT bytes of each stream and dropping the
    rest as it comes: what a hook runs is the workspace's (`./scripts/check.sh`, which the
    model rewrites unasked in auto), and `communicate` held all of it in the agent's memory,
    hundreds of megabytes for every session of the editor."""
    assert process.stdin is not None and process.stdout is not None and process.stderr is not None
    writer = process.stdin

    async def feed() -> None:
        try:
            writer.write(stdin)
            await writer.drain()
        except (BrokenPipeError, ConnectionResetError):
            pass  # the hook did not read its input
        finally:
            writer.close()

    _, out, err = await asyncio.gather(feed(), _first_bytes(process.stdout), _first_bytes(process.stderr))
    await process.wait()
    return out, err


async def _first_bytes(stream: asyncio.StreamReader) -> bytes:
    kept = bytearray()
    while chunk := await stream.read(1 << 16):
        if len(kept) < MAX_OUTPUT:
            kept += chunk[: MAX_OUTPUT - len(kept)]
    return bytes(kept)


def _kill(process: asyncio.subprocess.Process) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)


def _json_reply(stdout: str) -> dict[str, Any] | None:
    text = stdout.strip()
    if not text.startswith("{"):
        return None
    try:
        reply = json.loads(text)
    except (ValueError, RecursionError):  # a workspace script's output, nested past the parser's depth
        return None
    return reply if isinstance(reply, dict) else None


def _card(spec: HookSpec, status: str, text: str) -> list[Event]:
    call_id = f"hook_{uuid.uuid4().hex[:12]}"
    title = f"Hook {spec.event}: {spec.command}"
    arguments = {"event": spec.event, "command": spec.command, "source": spec.source}
    started = ToolCallStarted(call_id, "hook", title, "other", arguments)
    finished = ToolCallFinished(call_id, "failed" if status == "failed" else "completed", text)
    return [started, finished]


def _plain(content: str | list[ContentPart]) -> str:
    if isinstance(content, str):
        return content
    return "".join(getattr(part, "text", "") for part in content)
