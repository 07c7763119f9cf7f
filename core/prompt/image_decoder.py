"""Downscaling an image in a child the sandbox confines: read-only, no network, the
session's secrets and the agent's home hidden, no model key in its environment
(`image_child.py` does the decoding).

The agent process only reads an image's header (`image_size.py`). Where the sandbox cannot
start, nothing is decoded: a large image is refused, saying why (fail closed). With the
sandbox turned off by the user, the child still runs apart, with an empty environment.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import weakref
from typing import TYPE_CHECKING

from hermes_core.prompt.image_child import MAX_SEND_BYTES

if TYPE_CHECKING:
    from hermes_core.sandbox.bwrap import Sandbox

TIMEOUT_SECONDS = 120.0
_CHILD = [sys.executable, "-I", "-m", "hermes_core.prompt.image_child"]
_decoders: weakref.WeakKeyDictionary[Sandbox, tuple[Sandbox, threading.Lock]] = weakref.WeakKeyDictionary()
_decoders_lock = threading.Lock()


class DecodeRefused(ValueError):
    """The image could not be downscaled; the message says why."""


def downscale(data: bytes, mime: str, sandbox: Sandbox | None) -> tuple[bytes, str]:
    """(the downscaled image, its MIME type), decoded in a confined child."""
    env = {"LANG": "C.UTF-8", "PATH": os.defpath}
    argv = [*_CHILD, mime]
    if sandbox is not None and sandbox.confinement == "unavailable":
        raise DecodeRefused(
            f"it must be downscaled, which is done only in the sandbox, and the sandbox cannot start "
            f"({sandbox.availability.reason}). Downscale it with a command first (which asks the user), "
            "e.g. `sips -Z 2000 in.png --out small.png` on macOS or "
            "`magick in.png -resize 2000x2000 small.png`, then read the smaller file"
        )
    if sandbox is None or sandbox.confinement == "off":
        return _run(argv, env, data)
    decoder, one_at_a_time = _decoder(sandbox)
    # One decode at a time per session: its sandbox's process cap (8, the session's decodes
    # together: threads count) is one decoder's, and the reads of one reply run in parallel
    # threads: two decodes at once could exceed it and fail (an image left out under load).
    with one_at_a_time:
        wrapped = decoder.wrap(argv, cwd=decoder.scope.cwd)
        try:
            return _run(wrapped, decoder.environment(env), data)
        finally:
            decoder.after_command()


def _decoder(sandbox: Sandbox) -> tuple[Sandbox, threading.Lock]:
    """The session's sandbox, read-only and without network: the child writes nothing and
    sends nothing but its answer (made once; a lock of its own, below)."""
    with _decoders_lock:
        made = _decoders.get(sandbox)
        if made is None:
            made = _decoders[sandbox] = (_read_only(sandbox), threading.Lock())
    return made


def _read_only(sandbox: Sandbox) -> Sandbox:
    from hermes_core.sandbox.bwrap import Sandbox

    return Sandbox(
        sandbox.scope,
        mode="read-only",
        network=False,
        caches=(),
        hidden=sandbox.hidden,
        hidden_env=sandbox.hidden_env,
        state=None,
        max_processes=8,
        tmp_mb=16,
        bwrap=sandbox.bwrap,
        home=sandbox.home,
    )


def _run(argv: list[str], env: dict[str, str], data: bytes) -> tuple[bytes, str]:
    try:
        done = subprocess.run(
            argv, input=data, capture_output=True, env=env, timeout=TIMEOUT_SECONDS, check=False
        )
    except subprocess.TimeoutExpired:
        raise DecodeRefused(f"downscaling it took over {TIMEOUT_SECONDS:g} s") from None
    if done.returncode != 0:
        why = done.stderr.decode("utf-8", errors="replace").strip().splitlines()
        raise DecodeRefused(f"it cannot be decoded: {why[-1] if why else f'exit {done.returncode}'}")
    mime, _, encoded = done.stdout.partition(b"\n")
    # The child's answer is checked as any workspace bytes are: it ran the decoder.
    if mime not in (b"image/png", b"image/jpeg") or len(encoded) > MAX_SEND_BYTES:
        raise DecodeRefused("the decoder's answer is not a downscaled image")
    if not encoded.startswith(b"\x89PNG\r\n\x1a\n" if mime == b"image/png" else b"\xff\xd8\xff"):
        raise DecodeRefused("the decoder's answer is not a downscaled image")
    return encoded, mime.decode()
