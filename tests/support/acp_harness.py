"""End-to-end harness: the real `hermes-acp --stdio` in a subprocess, driven over its pipes.

    env = server_env(home, fake)
    async with spawn_server(env) as server:          # the process
        client = server.sdk_client(ZED_CAPABILITIES)  # an ACP SDK client over its pipes
        await client.initialize()
        ...
    # teardown: stdin closed, exit code 0 expected, no schema or framing violations

Every line the server writes is checked on arrival: it must be one JSON-RPC 2.0 object,
and it must validate against the vendored ACP schema for what it is — a response against
the response type of the method it answers (an error against the JSON-RPC error shape),
a request to the client against that method's request type, a `session/update` against
`SessionNotification`. Violations are collected; `server.assert_clean()` fails on any.

Two ways to talk: `sdk_client()` (an `acp.connection.Connection` whose handler records
updates and plays the editor: permission answers by policy, `fs/*` on real files,
`terminal/*` by running real processes — each only if the test's client advertised it),
or raw (`send_line(bytes)`, `next_message()`).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import inspect
import json
import os
import signal
import subprocess
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from acp.connection import Connection
from acp.exceptions import RequestError

from tests.support.schema import SCHEMA_PATH, UNSTABLE_SCHEMA_PATH, validate

MAX_LINE = 64 * 1024 * 1024
DEFAULT_TIMEOUT = 60.0  # seconds: a cap that only catches a hang (CI is a loaded 2-core machine)
FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"

ZED_CAPABILITIES: dict[str, Any] = json.loads((FIXTURES / "zed-initialize.json").read_text())["params"][
    "clientCapabilities"
]
NO_CAPABILITIES: dict[str, Any] = {}
# fs and terminal, but none of Zed's `_meta` conventions and no terminal auth
PLAIN_CAPABILITIES: dict[str, Any] = {"fs": {"readTextFile": True, "writeTextFile": True}, "terminal": True}


# The slash commands the server offers, in the order it lists them.
SLASH_COMMANDS = (
    "help",
    "mode",
    "model",
    "compact",
    "clear",
    "tools",
    "context",
    "cost",
    "steer",
    "queue",
    "rewind",
    "jobs",
    "permissions",
)


# -- the environment --------------------------------------------------------------------------


# The server's settings for a session on each wire API (with `server_env`, whose fake
# speaks all three).
API_SETTINGS: dict[str, dict[str, str]] = {
    "chat_completions": {"HERMES_ACP_PROVIDER": "openai", "HERMES_ACP_MODEL": "gpt-4.1"},
    "responses": {
        "HERMES_ACP_PROVIDER": "openai",
        "HERMES_ACP_MODEL": "gpt-5",
        "HERMES_ACP_API_MODE": "responses",
    },
    "anthropic_messages": {"HERMES_ACP_PROVIDER": "anthropic", "HERMES_ACP_MODEL": "claude-sonnet-4"},
}


def server_env(
    home: Path, fake: Any | None = None, *, model: str = "gpt-4.1", **extra: str
) -> dict[str, str]:
    """A clean environment: nothing inherited but PATH (no real keys), the store under
    `home`, both providers' endpoints pointed at the fake, retries and timeouts tiny."""
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "LANG": "C.UTF-8",
        "HERMES_ACP_HOME": str(home / ".hermes-acp"),
        "HERMES_ACP_MODEL": model,
        "HERMES_ACP_PROVIDER": "openai",
        "HERMES_ACP_RETRY_BASE_SECONDS": "0.01",
        "HERMES_ACP_RETRY_CAP_SECONDS": "0.05",
        "HERMES_ACP_LOG_LEVEL": "debug",
        # A loaded CI machine can take longer than the default 10 s to start a Python MCP server.
        "HERMES_ACP_MCP_CONNECT_TIMEOUT": "120",
        # Each test HOME would leave a warm server of its own behind (hermes_acp/warm/):
        # only the warm start's own tests turn it on, and stop what they started.
        "HERMES_ACP_WARM": "0",
    }
    if fake is not None:
        env["OPENAI_BASE_URL"] = fake.openai_base_url
        env["OPENAI_API_KEY"] = "test"
        env["ANTHROPIC_BASE_URL"] = fake.anthropic_base_url
        env["ANTHROPIC_API_KEY"] = "test"
    env.update(extra)
    return env


# -- schema bookkeeping ------------------------------------------------------------------------


# Responses validated against the draft schema: the initialize response advertises the
# draft-only `fork` session capability, and session/fork exists only in the drafts.
# session/prompt is held to the stable schema (acp conformance ACP-SCHEMA-002): its
# `usage` goes in `_meta`, unless the client asked for the draft field
# (`clientCapabilities._meta.hermes.promptUsage`), and then to the draft schema.
UNSTABLE_RESPONSES = frozenset({"initialize", "session/fork"})


@functools.cache
def _method_defs(unstable: bool = False) -> tuple[dict[str, str], dict[str, str]]:
    """(agent method -> its response def, client method -> its request/notification def)."""
    path = UNSTABLE_SCHEMA_PATH if unstable else SCHEMA_PATH
    defs = json.loads(path.read_text(encoding="utf-8"))["$defs"]
    responses: dict[str, str] = {}
    client_side: dict[str, str] = {}
    for name, definition in defs.items():
        method, side = definition.get("x-method"), definition.get("x-side")
        if not method:
            continue
        if side == "agent" and name.endswith("Response"):
            responses[method] = name
            continue
        to_client = side == "client" and (name.endswith("Request") or name.endswith("Notification"))
        either_way = side == "protocol" and name.endswith("Notification")  # $/cancel_request
        if to_client or either_way:
            client_side[method] = name
    return responses, client_side


@dataclass
class WireChecker:
    """Checks each line the server writes; remembers what each request id was for."""

    violations: list[str] = field(default_factory=list)
    pending: dict[Any, str] = field(default_factory=dict)  # our request id -> method
    schema: bool = True  # benchmarks turn the (slow) schema validation off; framing is always checked
    draft_usage: bool = False  # the client asked for the draft `usage` in prompt responses

    def sent(self, message: Any) -> None:
        if isinstance(message, dict) and "method" in message and "id" in message:
            self.pending[_id_key(message["id"])] = message["method"]
            if message["method"] == "initialize":
                self.draft_usage = _asks_prompt_usage(message.get("params"))

    def check_line(self, line: bytes) -> dict[str, Any] | None:
        try:
            message = json.loads(line.decode("utf-8"))
        except (UnicodeDecodeError, ValueError) as exc:
            self.violations.append(f"stdout carried a line that is not JSON: {line[:200]!r} ({exc})")
            return None
        if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
            self.violations.append(f"stdout carried something other than a JSON-RPC object: {line[:200]!r}")
            return None
        if not self.schema:
            return message
        try:
            self._check(message)
        except AssertionError as exc:
            self.violations.append(str(exc))
        return message

    def _check(self, message: dict[str, Any]) -> None:
        responses, client_side = _method_defs()
        method = message.get("method")
        if method is None:
            assert "id" in message, f"a message with neither method nor id: {message}"
            asked = self.pending.pop(_id_key(message["id"]), None)
            if "error" in message:
                assert "result" not in message, f"response with both result and error: {message}"
                validate("Error", message["error"])
                return
            assert "result" in message, f"response without result or error: {message}"
            if asked is None:
                raise AssertionError(f"a response to a request we never sent: {message}")
            if asked in UNSTABLE_RESPONSES or (asked == "session/prompt" and self.draft_usage):
                validate(_method_defs(True)[0][asked], message["result"], unstable=True)
            elif asked in responses:
                validate(responses[asked], message["result"])
            return
        if method.startswith("_"):
            return  # extension methods have no schema
        definition = client_side.get(method)
        assert definition is not None, f"the server sent {method}, which is not a client method"
        validate(definition, message.get("params") or {})


def _asks_prompt_usage(params: Any) -> bool:
    """Whether an initialize's params ask for the draft `usage` (any shape may come in)."""
    value: Any = params
    for key in ("clientCapabilities", "_meta", "hermes", "promptUsage"):
        value = value.get(key) if isinstance(value, dict) else None
    return value is True


def _id_key(value: Any) -> tuple[type, Any]:
    return (type(value), value)


def take_prompt_usage(result: dict[str, Any]) -> dict[str, Any] | None:
    """A prompt response's usage, taken out of it (emptied `_meta` objects go too)."""
    usage = result.pop("usage", None)
    meta = result.get("_meta")
    hermes = meta.get("hermes") if isinstance(meta, dict) else None
    if isinstance(hermes, dict) and "usage" in hermes:
        usage = hermes.pop("usage")
        if not hermes:
            del meta["hermes"]
        if not meta:
            del result["_meta"]
    return usage


# -- the process --------------------------------------------------------------------------------


class ServerProcess:
    def __init__(self, process: asyncio.subprocess.Process, *, check_schema: bool = True) -> None:
        self.process = process
        self.checker = WireChecker(schema=check_schema)
        self.stderr_lines: list[str] = []
        self.received: list[dict[str, Any]] = []  # every message the server wrote, in order
        self.lines: list[bytes] = []  # ...and as the bytes it wrote, each line with its newline
        self._inbox: asyncio.Queue[dict[str, Any] | None] = asyncio.Queue()
        self._readers = [
            asyncio.create_task(self._read_stdout()),
            asyncio.create_task(self._read_stderr()),
        ]
        self.client: AcpClient | None = None

    @property
    def pid(self) -> int:
        return self.process.pid

    async def _read_stdout(self) -> None:
        assert self.process.stdout is not None
        while True:
            try:
                line = await self.process.stdout.readuntil(b"\n")
            except asyncio.IncompleteReadError as exc:
                if exc.partial:
                    self.checker.violations.append(f"stdout ended inside a line: {exc.partial[:200]!r}")
                break
            self.lines.append(line)
            message = self.checker.check_line(line.rstrip(b"\n"))
            if message is not None:
                self.received.append(message)
                await self._inbox.put(message)
        await self._inbox.put(None)

    async def _read_stderr(self) -> None:
        assert self.process.stderr is not None
        async for line in self.process.stderr:
            self.stderr_lines.append(line.decode("utf-8", errors="replace").rstrip("\n"))

    @property
    def stderr(self) -> str:
        return "\n".join(self.stderr_lines)

    # raw mode

    async def send_line(self, data: bytes) -> None:
        """Write one raw line (a newline is added unless present)."""
        assert self.process.stdin is not None
        with contextlib.suppress(ValueError):
            self.checker.sent(json.loads(data))
        self.process.stdin.write(data if data.endswith(b"\n") else data + b"\n")
        await self.process.stdin.drain()

    async def send(self, message: dict[str, Any]) -> None:
        await self.send_line(json.dumps(message).encode())

    async def send_together(self, *messages: dict[str, Any]) -> None:
        """Several messages in one write, so the server reads them in one go."""
        assert self.process.stdin is not None
        for message in messages:
            self.checker.sent(message)
        self.process.stdin.write(b"".join(json.dumps(m).encode() + b"\n" for m in messages))
        await self.process.stdin.drain()

    async def response_to(self, request_id: Any, within: float = DEFAULT_TIMEOUT) -> dict[str, Any]:
        """The response with this id, found among everything the server wrote (works
        alongside an SDK client, which ignores responses to requests it did not send)."""

        async def find() -> dict[str, Any]:
            while True:
                for message in self.received:
                    if "method" not in message and message.get("id") == request_id:
                        return message
                await asyncio.sleep(0.005)

        return await asyncio.wait_for(find(), within)

    async def next_message(self, within: float = DEFAULT_TIMEOUT) -> dict[str, Any]:
        # A timer per message costs ~30 µs, as much as the server's own work per delta;
        # only arm one when there is nothing to read yet.
        if self._inbox.empty():
            message = await asyncio.wait_for(self._inbox.get(), within)
        else:
            message = self._inbox.get_nowait()
        if message is None:
            raise EOFError(f"the server closed stdout\n--- stderr ---\n{self.stderr[-4000:]}")
        return message

    async def request(
        self, request_id: Any, method: str, params: Any = None, within: float = DEFAULT_TIMEOUT
    ) -> dict[str, Any]:
        """Raw request; returns the response message (skipping notifications in between)."""
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            message["params"] = params
        await self.send(message)
        while True:
            reply = await self.next_message(within)
            if "method" not in reply and reply.get("id") == request_id:
                return reply

    async def receive(self) -> dict[str, Any] | None:
        return await self._inbox.get()

    # SDK mode

    def sdk_client(self, capabilities: dict[str, Any] | None = None, **kwargs: Any) -> AcpClient:
        self.client = AcpClient(self, ZED_CAPABILITIES if capabilities is None else capabilities, **kwargs)
        return self.client

    # ending

    async def close_stdin(self) -> None:
        assert self.process.stdin is not None
        if not self.process.stdin.is_closing():
            self.process.stdin.close()
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                await self.process.stdin.wait_closed()

    async def wait(self, within: float = DEFAULT_TIMEOUT) -> int:
        return await asyncio.wait_for(self.process.wait(), within)

    async def stop(self, within: float = DEFAULT_TIMEOUT) -> int:
        if self.client is not None:
            await self.client.aclose()
        await self.close_stdin()
        try:
            code = await self.wait(within)
        except TimeoutError:
            self.process.kill()
            await self.process.wait()
            raise AssertionError(
                f"the server did not exit after stdin closed\n{self.stderr[-4000:]}"
            ) from None
        for task in self._readers:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await asyncio.wait_for(task, 2)
        return code

    def assert_clean(self) -> None:
        problems = list(self.checker.violations)
        if self.client is not None:
            problems += self.client.violations
        self.checker.violations.clear()
        if self.client is not None:
            self.client.violations.clear()
        assert not problems, (
            "protocol violations:\n" + "\n".join(problems) + f"\n--- stderr ---\n{self.stderr[-3000:]}"
        )

    def rss_kb(self) -> int:
        for line in Path(f"/proc/{self.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
        raise RuntimeError("no VmRSS")


@contextlib.asynccontextmanager
async def spawn_server(
    env: dict[str, str],
    *,
    args: tuple[str, ...] = ("--stdio",),
    cwd: Path | None = None,
    check_exit: bool = True,
    check_schema: bool = True,
    command: tuple[str, ...] | None = None,
) -> AsyncIterator[ServerProcess]:
    process = await asyncio.create_subprocess_exec(
        *(command or (sys.executable, "-m", "hermes_acp", *args)),
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=env,
        cwd=str(cwd) if cwd else None,
        limit=MAX_LINE,
    )
    server = ServerProcess(process, check_schema=check_schema)
    try:
        yield server
    finally:
        if process.returncode is None:
            code = await server.stop()
            if check_exit:
                assert code == 0, f"the server exited with {code}\n{server.stderr[-3000:]}"
        server.assert_clean()


def run_hermes(
    env: dict[str, str], *args: str, stdin: str = "", cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    """`hermes-acp ARGS` run to its end, as a script or a person at a shell would."""
    return subprocess.run(
        [sys.executable, "-m", "hermes_acp", *args],
        input=stdin,
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        timeout=60,
    )


# -- the SDK client ------------------------------------------------------------------------------


class _PipeTransport:
    """The client end of the server's pipes, as an SDK message transport."""

    def __init__(self, server: ServerProcess) -> None:
        self._server = server

    async def send(self, message: dict[str, Any]) -> None:
        self._server.checker.sent(message)
        assert self._server.process.stdin is not None
        self._server.process.stdin.write(json.dumps(message).encode() + b"\n")
        await self._server.process.stdin.drain()

    async def receive(self) -> dict[str, Any] | None:
        return await self._server.receive()

    async def close(self) -> None:
        return None


PermissionPolicy = str | Callable[[dict[str, Any]], Any]


@dataclass
class Terminal:
    process: asyncio.subprocess.Process
    output: bytearray = field(default_factory=bytearray)
    limit: int | None = None
    released: bool = False
    pump: asyncio.Task[None] | None = None


class AcpClient:
    """Plays the editor. `permission` decides `session/request_permission`: an option id
    ("allow_once", ...), "cancelled", or a callable (params -> option id, "cancelled", an
    outcome dict, or an awaitable of one of those)."""

    def __init__(
        self,
        server: ServerProcess,
        capabilities: dict[str, Any],
        *,
        permission: PermissionPolicy = "allow_once",
    ) -> None:
        self.server = server
        self.capabilities = capabilities
        self.permission: PermissionPolicy = permission
        self.terminal_create_delay = 0.0  # seconds between starting a command and answering create
        self.updates: list[dict[str, Any]] = []  # session/update params, in order
        self.permission_requests: list[dict[str, Any]] = []
        # Answers `elicitation/create`: a response dict, or a callable (params -> one, or an
        # awaitable of one). Only asked when the capabilities advertise elicitation.
        self.elicitation: Any = {"action": "decline"}
        self.elicitations: list[dict[str, Any]] = []
        self.withdrawn: list[Any] = []  # request ids the server cancelled with $/cancel_request
        self.calls: list[tuple[str, dict[str, Any]]] = []  # every request the server made
        self.terminals: dict[str, Terminal] = {}
        self.violations: list[str] = []
        # The usage of each prompt answered (`_meta.hermes.usage`, or the draft `usage` for
        # a client that asked for it), by session (prompt() returns the rest, so a test
        # that checks the stop reason compares one key)
        self.prompt_usage: dict[str, list[dict[str, Any] | None]] = {}
        self.initialized: dict[str, Any] = {}  # the last initialize response
        self._changed = asyncio.Event()
        self.connection = Connection(self._handle, _PipeTransport(server))

    # requests to the server

    async def request(self, method: str, params: Any = None, within: float = DEFAULT_TIMEOUT) -> Any:
        return await asyncio.wait_for(self.connection.send_request(method, params), within)

    async def notify(self, method: str, params: Any = None) -> None:
        await self.connection.send_notification(method, params)

    async def initialize(self, protocol_version: int = 1) -> dict[str, Any]:
        self.initialized = await self.request(
            "initialize",
            {
                "protocolVersion": protocol_version,
                "clientCapabilities": self.capabilities,
                "clientInfo": {"name": "hermes-tests", "version": "1.0"},
            },
        )
        return self.initialized

    async def new_session(self, cwd: Path | str, **params: Any) -> dict[str, Any]:
        return await self.request("session/new", {"cwd": str(cwd), "mcpServers": [], **params})

    async def session_in_mode(self, cwd: Path | str, mode: str) -> str:
        """A new session's id, switched to `mode` (ask, accept_edits, plan, auto, yolo)."""
        session_id: str = (await self.new_session(cwd))["sessionId"]
        await self.request("session/set_mode", {"sessionId": session_id, "modeId": mode})
        return session_id

    async def prompt(
        self, session_id: str, text: str | list[dict[str, Any]], within: float = DEFAULT_TIMEOUT
    ) -> dict[str, Any]:
        blocks = [{"type": "text", "text": text}] if isinstance(text, str) else text
        result = await self.request("session/prompt", {"sessionId": session_id, "prompt": blocks}, within)
        if isinstance(result, dict):
            self.prompt_usage.setdefault(session_id, []).append(take_prompt_usage(result))
        return result

    def start_prompt(
        self, session_id: str, text: str | list[dict[str, Any]], within: float = DEFAULT_TIMEOUT
    ) -> asyncio.Task[dict[str, Any]]:
        return asyncio.create_task(self.prompt(session_id, text, within))

    async def cancel(self, session_id: str) -> None:
        await self.notify("session/cancel", {"sessionId": session_id})

    # what the server sent

    def session_updates(self, session_id: str | None = None, kind: str | None = None) -> list[dict[str, Any]]:
        return [
            params["update"]
            for params in self.updates
            if (session_id is None or params["sessionId"] == session_id)
            and (kind is None or params["update"]["sessionUpdate"] == kind)
        ]

    def text(self, session_id: str | None = None, kind: str = "agent_message_chunk") -> str:
        return "".join(
            u["content"].get("text", "")
            for u in self.session_updates(session_id, kind)
            if u["content"]["type"] == "text"
        )

    def tool_updates(self, tool_call_id: str) -> list[dict[str, Any]]:
        return [
            u
            for u in self.session_updates()
            if u["sessionUpdate"] in ("tool_call", "tool_call_update") and u["toolCallId"] == tool_call_id
        ]

    def methods_called(self) -> list[str]:
        return [method for method, _ in self.calls]

    async def wait_for(self, predicate: Callable[[], Any], within: float = DEFAULT_TIMEOUT) -> Any:
        """Wait until predicate() is truthy (checked on each message from the server, and every 20 ms)."""

        async def poll() -> Any:
            while True:
                value = predicate()
                if value:
                    return value
                self._changed.clear()
                # also re-checked now and then: some conditions are not about messages
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._changed.wait(), 0.02)

        return await asyncio.wait_for(poll(), within)

    async def wait_for_update(
        self, kind: str, session_id: str | None = None, within: float = DEFAULT_TIMEOUT
    ) -> dict[str, Any]:
        return (await self.wait_for(lambda: self.session_updates(session_id, kind), within))[-1]

    # playing the editor

    async def _handle(self, method: str, params: Any, is_notification: bool) -> Any:
        try:
            if method == "session/update":
                self.updates.append(params)
                return None
            self.calls.append((method, params))
            if method == "session/request_permission":
                self.permission_requests.append(params)
                return await self._permission(params)
            if method == "elicitation/create":
                return await self._elicit(params)
            if method == "$/cancel_request":
                self.withdrawn.append(params.get("requestId"))
                return None
            if method.startswith("fs/"):
                return await self._fs(method, params)
            if method.startswith("terminal/"):
                return await self._terminal(method, params)
            self.violations.append(f"the server called {method}, which this client does not implement")
            raise RequestError(-32601, f"Method not found: {method}")
        finally:
            self._changed.set()

    async def _permission(self, params: dict[str, Any]) -> dict[str, Any]:
        choice: Any = self.permission
        if callable(choice):
            choice = choice(params)
            if inspect.isawaitable(choice):
                choice = await choice
        if isinstance(choice, dict):
            return choice
        if choice == "cancelled":
            return {"outcome": {"outcome": "cancelled"}}
        return {"outcome": {"outcome": "selected", "optionId": choice}}

    async def _elicit(self, params: dict[str, Any]) -> dict[str, Any]:
        if (self.capabilities.get("elicitation") or {}).get("form") is None:
            self.violations.append("the server sent elicitation/create, which the client did not advertise")
            raise RequestError(-32601, "Method not found: elicitation/create")
        self.elicitations.append(params)
        answer = self.elicitation
        if callable(answer):
            answer = answer(params)
            if inspect.isawaitable(answer):
                answer = await answer
        return answer

    def _advertised(self, method: str) -> bool:
        caps = self.capabilities
        if method == "fs/read_text_file":
            return bool(caps.get("fs", {}).get("readTextFile"))
        if method == "fs/write_text_file":
            return bool(caps.get("fs", {}).get("writeTextFile"))
        return bool(caps.get("terminal"))

    async def _fs(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        if not self._advertised(method):
            self.violations.append(f"the server called {method}, which the client did not advertise")
            raise RequestError(-32601, f"Method not found: {method}")
        path = Path(params["path"])
        if not path.is_absolute():
            self.violations.append(f"{method} with a relative path {path}")
        return _file_operation(method, path, params)

    async def _terminal(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        if not self._advertised(method):
            self.violations.append(f"the server called {method}, which the client did not advertise")
            raise RequestError(-32601, f"Method not found: {method}")
        if method == "terminal/create":
            env = {**os.environ, **{e["name"]: e["value"] for e in params.get("env") or []}}
            process = await asyncio.create_subprocess_exec(
                params["command"],
                *(params.get("args") or []),
                cwd=params.get("cwd"),
                env=env,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.STDOUT,
                start_new_session=True,
            )
            terminal_id = f"term-{len(self.terminals) + 1}"
            terminal = Terminal(process, limit=params.get("outputByteLimit"))
            terminal.pump = asyncio.create_task(self._pump(terminal))
            self.terminals[terminal_id] = terminal
            await asyncio.sleep(
                self.terminal_create_delay
            )  # a slow editor: already running, not yet answered
            return {"terminalId": terminal_id}
        terminal = self.terminals.get(params["terminalId"])
        if terminal is None or terminal.released:
            self.violations.append(f"{method} for an unknown or released terminal {params['terminalId']}")
            raise RequestError(-32002, "Resource not found")
        if method == "terminal/output":
            result: dict[str, Any] = {"output": terminal.output.decode(errors="replace"), "truncated": False}
            if terminal.process.returncode is not None:
                result["exitStatus"] = _exit_status(terminal.process.returncode)
            return result
        if method == "terminal/wait_for_exit":
            code = await terminal.process.wait()
            if terminal.pump is not None:
                await terminal.pump
            return _exit_status(code)
        if method == "terminal/kill":
            _kill_group(terminal.process)
            return {}
        if method == "terminal/release":
            _kill_group(terminal.process)
            terminal.released = True
            return {}
        raise RequestError(-32601, f"Method not found: {method}")

    @staticmethod
    async def _pump(terminal: Terminal) -> None:
        assert terminal.process.stdout is not None
        async for chunk in terminal.process.stdout:
            terminal.output += chunk
            if terminal.limit and len(terminal.output) > terminal.limit:
                del terminal.output[: len(terminal.output) - terminal.limit]

    async def aclose(self) -> None:
        for terminal in self.terminals.values():
            _kill_group(terminal.process)
            with contextlib.suppress(Exception):
                await asyncio.wait_for(terminal.process.wait(), 2)
        await self.connection.close()


def _file_operation(method: str, path: Path, params: dict[str, Any]) -> dict[str, Any]:
    if method == "fs/write_text_file":
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(params["content"], encoding="utf-8")
        return {}
    if not path.exists():
        raise RequestError(-32002, "Resource not found", {"uri": str(path)})
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    start = max((params.get("line") or 1) - 1, 0)
    limit = params.get("limit")
    chosen = lines[start : start + limit] if limit else lines[start:]
    return {"content": "".join(chosen)}


def _exit_status(code: int) -> dict[str, Any]:
    if code < 0:
        return {"exitCode": None, "signal": signal.Signals(-code).name}
    return {"exitCode": code, "signal": None}


def _kill_group(process: asyncio.subprocess.Process) -> None:
    if process.returncode is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)


async def maybe_await(value: Any) -> Any:
    return await value if inspect.isawaitable(value) else value


Policy = Callable[[dict[str, Any]], Awaitable[Any] | Any]


@contextlib.asynccontextmanager
async def connected(
    env: dict[str, str],
    capabilities: dict[str, Any] | None = None,
    *,
    permission: PermissionPolicy = "allow_once",
) -> AsyncIterator[tuple[ServerProcess, AcpClient]]:
    """A spawned server with an initialized SDK client."""
    async with spawn_server(env) as server:
        client = server.sdk_client(capabilities, permission=permission)
        await client.initialize()
        yield server, client
