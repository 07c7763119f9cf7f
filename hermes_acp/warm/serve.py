"""The warm server: imports once, then forks a child per stub (child.py).

Started detached by a cold process (launch.py) with that process's environment: a new
session, stdio on /dev/null, cwd `/`, its log in the agent's home. One per key, by a lock
held for its whole life. The imports run in a thread of nice 10 (a child inherits the
forking thread's nice value and could not lower it again), then that thread ends, the
heap is frozen (`gc.freeze`: children do not copy it on their first collection) and the
server serves: single-threaded, no event loop, reaping its children as SIGCHLD comes.

Before each fork it checks the peer (peer.py: our uid, and our namespaces, privileges,
filters and LSM label, as the kernel reports them: a sandboxed command has its own, and
should never have reached the socket in the first place; through a pidfd where the kernel
gives one, that the process it read is still the one that connected; limits a child
cannot match make it retire), the header's key and the code (fingerprint.py): stale, it says no and exits.
It exits too after `HERMES_ACP_WARM_IDLE` seconds (600) without children or connections,
and when asked to retire (`hermes-acp warm stop`, or a newer server that finds more than
SERVERS_PER_USER alive).
"""

from __future__ import annotations

import array
import contextlib
import gc
import json
import os
import select
import signal
import socket
import struct
import sys
import threading
import time
from typing import Any

from hermes_acp.warm import fingerprint, peer
from hermes_acp.warm.control import alive, ask_to_retire
from hermes_acp.warm.place import SERVERS_PER_USER, hold_lock, key, open_dir, socket_dir, through
from hermes_acp.warm.stub import READY, REPLY

IDLE_SECONDS = 600.0
HEADER_LIMIT = 4 * 1024 * 1024
PEER_SECONDS = 5.0  # a peer that sends nothing is dropped, not waited for
LOG_LIMIT = 1 << 20
_log_fd = -1


def log(message: str) -> None:
    line = f"{time.strftime('%Y-%m-%d %H:%M:%S')} [{os.getpid()}] {message}\n"
    with contextlib.suppress(OSError):
        os.write(_log_fd, line.encode("utf-8", "replace"))


def main() -> None:
    global _log_fd
    environ = dict(os.environ)
    name = key(environ)
    os.closerange(3, 1 << 16)  # nothing of the cold process's (the editor's pipes) is kept
    os.chdir("/")
    dir_fd = open_dir(socket_dir(environ), create=True)
    if dir_fd is None:
        return
    lock = hold_lock(dir_fd, name)
    if lock is None:
        return  # another server of this key is starting or serving
    with contextlib.suppress(OSError):  # who holds it, for `hermes-acp warm status`
        os.ftruncate(lock, 0)
        os.pwrite(lock, f"{os.getpid()}\n".encode(), 0)
    _log_fd = _open_log(environ)
    started = time.time_ns()
    gc.disable()  # the imports make next to no garbage: one collection after them, not ~110 during
    try:
        warm_up()
    finally:
        gc.enable()
    recorded = fingerprint.loaded()
    if fresh := fingerprint.written_since(recorded, started):
        log(f"changed while importing, not serving: {fresh[:3]}")
        return
    gc.collect()
    gc.freeze()
    listener = _listen(dir_fd, name)
    log(f"serving {name} ({len(sys.modules)} modules)")
    retire_oldest(dir_fd, name)
    Server(listener, dir_fd, name, recorded, lock).run()
    log("exiting")


def _open_log(environ: dict[str, str]) -> int:
    """The servers' log in the agent's home, started afresh past LOG_LIMIT (a line per fork)."""
    home = os.path.expanduser(environ.get("HERMES_ACP_HOME") or "~/.hermes-acp")
    path = os.path.join(home, "warm-server.log")
    flags = os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC | os.O_NOFOLLOW  # never a planted link
    try:
        os.makedirs(home, mode=0o700, exist_ok=True)
        with contextlib.suppress(FileNotFoundError):
            if os.stat(path).st_size > LOG_LIMIT:
                flags |= os.O_TRUNC
        return os.open(path, flags, 0o600)
    except OSError:
        return -1


def warm_up() -> None:
    """What a session and its first prompt import, in a thread of low priority."""
    failed: list[str] = []

    def run() -> None:
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), 10)
        from hermes_acp.warm.imports import import_everything

        failed.extend(import_everything())

    thread = threading.Thread(target=run, name="hermes-acp-warm-imports")
    thread.start()
    thread.join()
    if failed:
        log(f"not imported (a child will try): {', '.join(failed)}")


def _listen(dir_fd: int, name: str) -> socket.socket:
    path = through(dir_fd, f"{name}.sock")
    with contextlib.suppress(FileNotFoundError):
        os.unlink(f"{name}.sock", dir_fd=dir_fd)  # a dead server's: the lock is ours
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(socket.SOMAXCONN)  # a burst of spawns queues rather than running cold
    return listener


def retire_oldest(dir_fd: int, name: str) -> None:
    """More than SERVERS_PER_USER alive: ask the one that started first to go."""
    others: list[tuple[float, str]] = []
    for entry in os.listdir(dir_fd):
        other = entry.removesuffix(".sock")
        if other in (entry, name):
            continue
        try:
            started = os.stat(entry, dir_fd=dir_fd).st_mtime
        except OSError:
            continue
        if alive(dir_fd, other):
            others.append((started, other))
    if len(others) + 1 <= SERVERS_PER_USER:
        return
    oldest = min(others)[1]
    ask_to_retire(dir_fd, oldest)
    log(f"asked {oldest} to retire")


class Server:
    def __init__(
        self,
        listener: socket.socket,
        dir_fd: int,
        name: str,
        recorded: dict[str, fingerprint.Stamp | None],
        lock: int,
    ) -> None:
        self.listener: socket.socket | None = listener
        self.dir_fd, self.name, self.recorded = dir_fd, name, recorded
        self.lock = lock  # released with the socket: a successor may start while children finish
        self.children: set[int] = set()
        self.idle = _idle_seconds()
        self.last = time.monotonic()
        self.wake_read, self.wake_write = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)

    def run(self) -> None:
        signal.set_wakeup_fd(self.wake_write)
        signal.signal(signal.SIGCHLD, lambda signum, frame: None)
        signal.signal(signal.SIGTERM, lambda signum, frame: self.stop_listening())
        while True:
            self.reap()
            if self.listener is None and not self.children:
                return
            left = self.idle - (time.monotonic() - self.last)
            if not self.children and left <= 0:
                self.stop_listening()
                return
            poller = select.poll()
            poller.register(self.wake_read, select.POLLIN)
            if self.listener is not None:
                poller.register(self.listener, select.POLLIN)
            timeout = None if self.children else max(0, int(left * 1000) + 1)
            events = dict(poller.poll(timeout))
            if self.wake_read in events:
                with contextlib.suppress(BlockingIOError):
                    os.read(self.wake_read, 4096)
            if self.listener is not None and self.listener.fileno() in events:
                self.accept()

    def stop_listening(self) -> None:
        """No more stubs: the socket goes (new spawns run cold); children finish."""
        if self.listener is None:
            return
        with contextlib.suppress(OSError):
            os.unlink(f"{self.name}.sock", dir_fd=self.dir_fd)
        self.listener.close()
        self.listener = None
        os.close(self.lock)

    def reap(self) -> None:
        while self.children:
            try:
                pid, _ = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                self.children.clear()
                return
            if not pid:
                return
            self.children.discard(pid)
            self.last = time.monotonic()

    def accept(self) -> None:
        assert self.listener is not None
        try:
            connection, _ = self.listener.accept()
        except OSError:
            return
        self.last = time.monotonic()
        fds: list[int] = []
        try:
            connection.settimeout(PEER_SECONDS)
            context = peer.examine(connection)
            connection.sendall(REPLY.pack(READY, 0))  # only now its descriptors (stub.py)
            header, fds = _receive(connection)
            if header.get("op") == "retire":
                log("retiring: asked to (a newer server, `hermes-acp warm stop`)")
                self.stop_listening()
                connection.sendall(REPLY.pack(b"N", 0))  # done: new spawns run cold
                return
            self.serve(connection, header, fds, context)
        except peer.Refused as refused:
            log(f"refused a peer: {refused}")
            if refused.retire:
                log("retiring: a cold start will launch a server that can serve it")
                self.stop_listening()
        except (OSError, ValueError) as exc:
            log(f"dropped a connection: {exc!r}")
        finally:
            for fd in fds:
                os.close(fd)
            connection.close()

    def serve(
        self, connection: socket.socket, header: dict[str, Any], fds: list[int], context: peer.Context
    ) -> None:
        env = header.get("env")
        if len(fds) != 4 or not isinstance(env, dict) or key(env) != self.name:
            connection.sendall(REPLY.pack(b"N", 0))
            return
        if stale := fingerprint.changed(self.recorded):
            log(f"stale ({stale[:3]}): refusing and exiting")
            connection.sendall(REPLY.pack(b"N", 0))
            self.stop_listening()
            return
        if threading.active_count() != 1:  # forking beside a thread copies its locks mid-use
            log("not single-threaded: refusing and exiting")
            connection.sendall(REPLY.pack(b"N", 0))
            self.stop_listening()
            return
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            from hermes_acp.warm.child import become

            assert self.listener is not None
            closing = (self.listener.fileno(), self.wake_read, self.wake_write, self.dir_fd, self.lock)
            become(connection, fds, header, (*closing, _log_fd), context)
        self.children.add(pid)
        log(f"forked {pid} for stub {header.get('pid')}")


def _receive(connection: socket.socket) -> tuple[dict[str, Any], list[int]]:
    """The header and descriptors, whole within PEER_SECONDS of the ready: the server
    serves one peer at a time, and one that sends a byte now and then must not hold it."""
    deadline = time.monotonic() + PEER_SECONDS
    fds = array.array("i")
    data, ancillary, _, _ = connection.recvmsg(4096, socket.CMSG_SPACE(4 * fds.itemsize))
    for level, kind, payload in ancillary:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            fds.frombytes(payload[: len(payload) - len(payload) % fds.itemsize])
    received = list(fds)
    try:
        if len(data) < 4:
            raise ValueError("short header")
        (size,) = struct.unpack("!I", data[:4])
        if size > HEADER_LIMIT:
            raise ValueError("header too large")
        body = data[4:]
        while len(body) < size:
            left = deadline - time.monotonic()
            if left <= 0:
                raise ValueError("header too slow")
            connection.settimeout(left)
            chunk = connection.recv(min(65536, size - len(body)))
            if not chunk:
                raise ValueError("header cut short")
            body += chunk
        header = json.loads(body.decode("utf-8", "surrogateescape"))
        if not isinstance(header, dict):
            raise ValueError("header is not an object")
    except BaseException:
        for fd in received:
            os.close(fd)
        raise
    return header, received


def _idle_seconds() -> float:
    try:
        return max(0.0, float(os.environ.get("HERMES_ACP_WARM_IDLE", IDLE_SECONDS)))
    except ValueError:
        return IDLE_SECONDS


if __name__ == "__main__":
    main()
