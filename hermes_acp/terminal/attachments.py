"""A typed prompt -> ACP content blocks: `@path` attaches the file as editors do (an
embedded resource for text, a resource link for anything else)."""

from __future__ import annotations

import mimetypes
import re
from pathlib import Path
from typing import Any

from core.errors import InvalidInput

MAX_EMBEDDED_BYTES = 512 * 1024
_MENTION = re.compile(r"(?<!\S)@(\S+)")


class AttachmentError(InvalidInput):
    pass


def prompt_blocks(text: str, cwd: Path) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = [{"type": "text", "text": text}]
    seen: set[Path] = set()
    for mention in _MENTION.finditer(text):
        raw = mention.group(1).rstrip(".,;:!?)")
        path = (cwd / raw).expanduser()
        if not path.exists():
            if "/" in raw or "." in raw:
                raise AttachmentError(f"@{raw}: no such file")
            continue  # "@alice": a name, not a file
        path = path.resolve()
        if path in seen:
            continue
        seen.add(path)
        blocks.append(_block(path))
    return blocks


def _block(path: Path) -> dict[str, Any]:
    uri = path.as_uri()
    if path.is_dir():
        return {"type": "resource_link", "uri": uri, "name": path.name}
    try:
        size = path.stat().st_size
        data = path.read_bytes() if size <= MAX_EMBEDDED_BYTES else None
    except OSError as exc:
        raise AttachmentError(f"@{path}: {exc.strerror}") from exc
    mime = mimetypes.guess_type(path.name)[0] or "text/plain"
    if data is not None:
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            text = None
        if text is not None:
            return {"type": "resource", "resource": {"uri": uri, "mimeType": mime, "text": text}}
    return {"type": "resource_link", "uri": uri, "name": path.name, "mimeType": mime, "size": size}
