"""The first `initialize` of `hermes-acp --stdio`, answered before the server exists.

Why: an editor waits for this answer before it shows the agent, and nothing in it
needs the event loop. Everything else on the way costs more than the interpreter
itself: `import asyncio` ~40-85 ms, pydantic ~60 ms (the SDK's `acp.connection` needs
it), the server's own modules ~15 ms. So the first line is read from fd 0 here, with
a blocking `os.read` (nothing else exists yet to be blocked), and when it is a plainly
valid `initialize` (hello.py's plain reading, declining anything unusual) its answer
is written to fd 1 with the stdlib `json`, as the same bytes the server would write
(wire.py, hello.py). The server starts after that and gets a `Handover`: the bytes
read past that line, and the client's hello, which it takes as if it had answered
itself (hermes_acp/server.py `greeted`).

Anything else (another method, a notification, a line that is not UTF-8 or JSON or
nests deeply, a batch, params the plain reader declines, a line longer than
`FIRST_LINE_LIMIT`, end of input, a read error) is not looked at further: every byte
read goes to the server, which answers it as it always has.

SIGTERM and SIGHUP are counted from the start, and the server replays them once its
own handlers are in place, so a signal shuts down exactly as it does later on. The
wait is a poll of the input and of a signal wake-up pipe (`signal.set_wakeup_fd`), so
a signal ends it wherever it lands, even on another thread or just before the read.

When no input is there yet (an editor that spawns us early and says hello later),
the server's modules are imported in a thread (`meanwhile`) during the wait, as the
server used to do before it read a line: a `session/new` right after a late hello
then waits no longer than it did. When the hello is already there, nothing competes
with its answer.
"""

from __future__ import annotations

import os
import select
import signal
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from hermes_acp import __version__
from hermes_acp.startup.fd_write import write_all
from hermes_acp.startup.hello import ClientHello, agent_hello, is_plain, plain_request, read_plain
from hermes_acp.wire import encode

if TYPE_CHECKING:
    from hermes_acp.startup.early_session import EarlySession

FIRST_LINE_LIMIT = 64 * 1024  # an initialize is well under 1 KB; past this the server reads it
NESTING_LIMIT = 64  # deeper lines go to the server, which has the rule (transport.MAX_DEPTH)
READ_SIZE = 64 * 1024
SHUTDOWN_SIGNALS = (signal.SIGTERM, signal.SIGHUP)


class Handover:
    """What the server takes over from the early start."""

    __slots__ = (
        "answered",
        "done_fd",
        "ended",
        "hello",
        "meanwhile",
        "session",
        "signals",
        "unread",
        "write_error",
    )

    def __init__(self) -> None:
        self.hello: ClientHello | None = None  # set when `initialize` was answered here
        self.answered: Any = None  # the id of that request
        self.write_error: OSError | None = None
        self.unread = b""  # read from the input but not handled: the server reads it first
        self.ended = False  # the input has ended after `unread`
        self.signals = 0  # shutdown signals received so far, for the server to replay
        self.meanwhile: Any = None  # the thread that imports the server during the wait
        self.done_fd: int | None = None  # written to once that thread is done (input_ends_next)
        self.session: EarlySession | None = None  # a session/new answered here (early_session.py)

    def answer_session_new(self, write_fd: int, tracer: Any = None) -> None:
        """After the early hello: answer the next line here when it is a plainly valid
        `session/new` (early_session.py); the server then builds that session first."""
        if self.hello is None or self.signals or self.write_error or self.ended:
            return
        from hermes_acp.startup.early_session import answer_session_new

        try:
            answered = answer_session_new(write_fd, self.unread, self.hello, tracer)
        except OSError:  # the client is gone: the server answers the line and meets the error
            return
        if answered is not None:
            self.session, self.unread = answered

    def on_signal(self, signum: int, frame: Any) -> None:
        self.signals += 1

    def join(self) -> None:
        """Wait for the imports done during the wait, if any (the server needs them now)."""
        if self.meanwhile is not None:
            self.meanwhile.join()
        if self.done_fd is not None:
            os.close(self.done_fd)
            self.done_fd = None

    def report(self) -> None:
        """Log what happened here, once logging is set up (after the answer: ~5 ms)."""
        import logging

        log = logging.getLogger(__name__)
        if self.write_error is not None:  # the client is gone: the server finds out as it would have
            log.error("could not write the initialize response: %s", self.write_error)
        if self.hello is not None:
            log.debug("initialize %r answered before the server started", self.answered)
        if self.session is not None:
            log.debug("session/new answered ahead of the server: session %s", self.session.session_id)


def answer_first_initialize(
    read_fd: int, write_fd: int, tracer: Any = None, *, meanwhile: Callable[[], object] | None = None
) -> Handover:
    """Read the first line of `read_fd`; answer it on `write_fd` when it is a plainly
    valid `initialize`. Leaves the shutdown signals counted by the handover. When
    nothing can be read yet, `meanwhile` runs in a thread during the wait."""
    handover = Handover()
    for signum in SHUTDOWN_SIGNALS:
        signal.signal(signum, handover.on_signal)
    if meanwhile is not None and not _ready(read_fd, timeout=0):
        import threading

        handover.meanwhile = threading.Thread(target=meanwhile, name="hermes-acp-imports", daemon=True)
        handover.meanwhile.start()
    buffer = _read_first_line(read_fd, handover)
    newline = buffer.find(b"\n")
    # After a signal the server stops reading at once: what was read stays unanswered.
    found = _initialize_request(buffer[:newline]) if newline >= 0 and not handover.signals else None
    if found is None:
        handover.unread = buffer
        return handover
    message, hello = found
    if tracer is not None:
        tracer.incoming(message)
    result = agent_hello(__version__, terminal_auth=hello.terminal_auth)
    response = {"jsonrpc": "2.0", "id": message["id"], "result": result}
    try:
        write_all(write_fd, encode(response))
    except OSError as exc:
        handover.write_error = exc
    if tracer is not None:
        tracer.outgoing(response)
    handover.hello, handover.answered = hello, message["id"]
    handover.unread = buffer[newline + 1 :]
    return handover


def input_ends_next(read_fd: int, handover: Handover, imports: Callable[[], object]) -> bool:
    """After an early answer: whether the input ends before anything else comes, checked
    while the server is imported (`imports`, in a thread, unless it already runs).

    Why: a client that only wanted the hello (a probe, a registry's check) closes the input
    after reading it. The server, its imports and the warm-up after them are ~0.3 s of
    CPU that such a process never needs; it now ends as soon as it sees the end. A line
    that comes instead is kept for the server (`unread`), which starts as it always did.
    """
    if handover.hello is None or handover.unread.strip() or handover.signals or handover.write_error:
        return False  # blank lines are nothing to serve (the transport skips them)
    if handover.ended:
        return True
    import threading

    done_read, done_write = os.pipe()

    def run(previous: Any = handover.meanwhile) -> None:
        try:
            if previous is not None:
                previous.join()
            else:
                imports()
        finally:
            os.write(done_write, b".")  # a pipe's buffer takes it: never blocks
            os.close(done_write)

    thread = threading.Thread(target=run, name="hermes-acp-imports", daemon=True)
    thread.start()
    handover.meanwhile, handover.done_fd = thread, done_read
    if _ready(read_fd, also=done_read) != read_fd:
        return False  # the server is in: it reads the input from here on
    try:
        chunk = os.read(read_fd, READ_SIZE)
    except OSError:  # the server meets the error (or the drained pipe) as it would have
        return False
    if not chunk:
        handover.ended = True
        return True
    handover.unread += chunk
    return False


def _read_first_line(fd: int, handover: Handover) -> bytes:
    """What `fd` gives until a newline, the end, an error, a signal or the size limit."""
    chunks: list[bytes] = []
    size = 0
    woken, waker = os.pipe()
    os.set_blocking(waker, False)
    previous = signal.set_wakeup_fd(waker)
    try:
        while not handover.signals:
            if _ready(fd, also=woken) != fd:
                os.read(woken, 512)  # a signal: its handler has run, the loop's test decides
                continue
            try:
                chunk = os.read(fd, READ_SIZE)
            except BlockingIOError:  # a non-blocking pipe that someone else drained: wait again
                continue
            if not chunk:
                handover.ended = True
                break
            chunks.append(chunk)
            size += len(chunk)
            if b"\n" in chunk or size > FIRST_LINE_LIMIT:
                break
    except KeyboardInterrupt:  # Ctrl-C in a terminal: stops as a signal does
        handover.signals += 1
    except OSError:  # the server reads the descriptor again and meets the error as it always has
        pass
    finally:
        signal.set_wakeup_fd(previous)
        os.close(woken)
        os.close(waker)
    return b"".join(chunks)


def _ready(fd: int, *, also: int | None = None, timeout: float | None = None) -> int | None:
    """The first of `fd` and `also` with something to read (or an end or error to meet),
    waiting up to `timeout` seconds (None: for ever); None when neither is."""
    poller = select.poll()
    poller.register(fd, select.POLLIN)
    if also is not None:
        poller.register(also, select.POLLIN)
    events = dict(poller.poll(None if timeout is None else int(timeout * 1000)))
    return fd if fd in events else also if also in events else None


def _initialize_request(line: bytes) -> tuple[dict[str, Any], ClientHello] | None:
    """The request and the client's hello when `line` is an `initialize` the server would
    answer with its hello (read as transport.py reads a line); None for anything else."""
    message = plain_request(line, "initialize")
    if message is None:
        return None
    params = message.get("params")
    if type(params) is not dict or not is_plain(params) or _nests_deeper(message, NESTING_LIMIT):
        return None
    return message, read_plain(params)


def _nests_deeper(value: Any, limit: int) -> bool:
    """Whether `value` nests more than `limit` objects and arrays deep."""
    stack = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if type(node) is dict:
            children: Any = node.values()
        elif type(node) is list:
            children = node
        else:
            continue
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in children)
    return False
