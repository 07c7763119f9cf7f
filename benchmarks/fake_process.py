"""The scripted provider server in a process of its own, for benchmarks.

In-process, the server's thread parses every request body while holding the GIL
our event loop needs, so timings swing with request size. Out of process, the
agent and the reference it is compared with see the same quiet server.
"""

from __future__ import annotations

import multiprocessing
from multiprocessing.connection import Connection
from typing import Any

from tests.support.fake_provider import FakeProvider, Reply


def _serve(conn: Connection) -> None:
    with FakeProvider() as fake:
        conn.send((fake.openai_base_url, fake.anthropic_base_url))
        while True:
            command, payload = conn.recv()
            if command == "script":
                fake.script(payload)
                conn.send(None)
            elif command == "route":
                fake.route(*payload)
                conn.send(None)
            elif command == "bodies":
                conn.send([request.body for request in fake.requests[payload:]])
            elif command == "count":
                conn.send(len(fake.requests))
            elif command == "times":
                conn.send([request.time for request in fake.requests[payload:]])
            else:
                conn.send(None)
                return


class FakeProviderProcess:
    def __enter__(self) -> FakeProviderProcess:
        context = multiprocessing.get_context("spawn")
        self._conn, child = context.Pipe()
        self._process = context.Process(target=_serve, args=(child,), daemon=True)
        self._process.start()
        self.openai_base_url, self.anthropic_base_url = self._conn.recv()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._conn.send(("stop", None))
        self._conn.recv()
        self._process.join(5)

    @property
    def pid(self) -> int:
        assert self._process.pid is not None
        return self._process.pid

    def script(self, replies: list[Reply]) -> None:
        self._conn.send(("script", replies))
        self._conn.recv()

    def route(self, key: str, replies: list[Reply]) -> None:
        """Replies for the requests of conversations whose first user message holds `key`."""
        self._conn.send(("route", (key, replies)))
        self._conn.recv()

    def request_count(self) -> int:
        self._conn.send(("count", None))
        return self._conn.recv()

    def arrival_times_since(self, index: int) -> list[float]:
        """time.monotonic() at each request's arrival: CLOCK_MONOTONIC on Linux, the
        clock of time.perf_counter in any other process of this machine."""
        self._conn.send(("times", index))
        return self._conn.recv()

    def bodies_since(self, index: int) -> list[dict[str, Any]]:
        self._conn.send(("bodies", index))
        return self._conn.recv()
