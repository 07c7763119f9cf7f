"""The reference for start-up cost: the ACP SDK alone, answering `initialize` on stdio.

Imports `acp`, wires the SDK's own stdio streams to a `Connection`, and answers
initialize (and nothing else). `bench_protocol.py` compares hermes-acp's time from
spawn to initialize response against this script's.
"""

from __future__ import annotations

import asyncio
from typing import Any

import acp  # noqa: F401  (the whole SDK, as an agent built on it imports it)
from acp.connection import Connection
from acp.exceptions import RequestError
from acp.stdio import stdio_streams


async def handle(method: str, params: Any, is_notification: bool) -> Any:
    if method == "initialize":
        return {"protocolVersion": 1, "agentCapabilities": {}, "authMethods": []}
    if is_notification:
        return None
    raise RequestError.method_not_found(method)


async def main() -> None:
    reader, writer = await stdio_streams()
    connection = Connection(handle, writer, reader, listening=False)
    await connection.main_loop()


if __name__ == "__main__":
    asyncio.run(main())
