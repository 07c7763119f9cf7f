"""Writing a whole answer to a descriptor before the server's transport exists."""

from __future__ import annotations

import os
import select


def write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        try:
            written = os.write(fd, view)
        except BlockingIOError:  # a non-blocking pipe the client is slow to read
            poller = select.poll()
            poller.register(fd, select.POLLOUT)
            poller.poll()
            continue
        view = view[written:]
