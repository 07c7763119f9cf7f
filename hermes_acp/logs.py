"""Logging to stderr (and a file), and the wire trace (`--trace FILE`).

Stdout belongs to the protocol, so nothing here ever writes to it.
"""

from __future__ import annotations

import json
import logging
import os
import stat
import sys
import threading
import time
from pathlib import Path
from typing import Any, TextIO

LEVELS = ("debug", "info", "warning", "error")
_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


def setup_logging(
    level: str = "info", log_file: str | Path | None = None, *, quiet_stderr: bool = False
) -> None:
    """Root logging to stderr, plus `log_file` when given. Replaces earlier handlers.
    `quiet_stderr`: only a crash reaches stderr (`run` and `chat` show what matters in
    their own words; a log line would repeat it, and split the spinner)."""
    root = logging.getLogger()
    for handler in list(root.handlers):
        root.removeHandler(handler)
    root.setLevel(getattr(logging, level.upper(), logging.INFO))
    formatter = logging.Formatter(_FORMAT)
    stderr = logging.StreamHandler(sys.stderr)
    stderr.setFormatter(formatter)
    if quiet_stderr:
        stderr.setLevel(logging.CRITICAL)
    root.addHandler(stderr)
    if log_file:
        # The log and the trace hold what the model read and the user pasted: the user's
        # alone, whatever the umask (its folder is the user's choice and left as it is).
        path = Path(log_file).expanduser()
        path.parent.mkdir(parents=True, exist_ok=True)
        _private(path)
        file_handler = logging.FileHandler(path, encoding="utf-8")
        file_handler.setFormatter(formatter)
        root.addHandler(file_handler)
    # Libraries that are chatty at info level about every HTTP request.
    for noisy in ("httpx", "httpx2", "httpcore", "httpcore2", "openai", "anthropic"):
        logging.getLogger(noisy).setLevel(max(root.level, logging.WARNING))


class TraceWriter:
    """Every wire message, in and out, as one JSON line: `{"t", "dir", "msg"}`."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path).expanduser()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        _private(self.path)
        self._file: TextIO = self.path.open("a", encoding="utf-8")
        self._lock = threading.Lock()

    def incoming(self, message: Any) -> None:
        self._write("in", message)

    def outgoing(self, message: Any) -> None:
        self._write("out", message)

    def _write(self, direction: str, message: Any) -> None:
        line = json.dumps({"t": round(time.time(), 6), "dir": direction, "msg": message}, default=str)
        with self._lock:
            if self._file.closed:
                return
            self._file.write(line + "\n")
            self._file.flush()

    def close(self) -> None:
        with self._lock:
            self._file.close()


def _private(path: Path) -> None:
    """`path` created 0600, or made 0600 when it is ours (`--log-file` and `--trace` append)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        info = os.fstat(fd)
        if stat.S_ISREG(info.st_mode) and info.st_uid == os.geteuid():  # not a terminal's device
            os.fchmod(fd, 0o600)
    finally:
        os.close(fd)
