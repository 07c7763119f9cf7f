"""A typed prompt -> ACP content blocks: `@path` attaches the file as editors do (an
embedded resource for text, a resource link for anything else)."""

from __future__ import annotations

import mimetypes
import os
import re
from pathlib import Path
from typing import Any

from hermes_core.errors import InvalidInput
from hermes_core.workspace import WorkspaceError, WorkspaceScope

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
        resolved = path.resolve()
        if resolved in seen:
            continue
        seen.add(resolved)
        blocks.append(_block(path, resolved, cwd))
    return blocks


def _block(path: Path, resolved: Path, cwd: Path) -> dict[str, Any]:
    uri = resolved.as_uri()
    if resolved.is_dir():
        return {"type": "resource_link", "uri": uri, "name": resolved.name}
    # A mention naming a file in the project is opened beneath it by the file tools' rules
    # (a project's `notes.md` may be a link to ~/.ssh/id_ed25519); one the user spelled
    # outside it (`@~/todo.txt`, `@/etc/hosts`) is theirs to send.
    scope = WorkspaceScope(cwd)
    named_inside = scope.contains(Path(os.path.normpath(scope.cwd / path)))
    try:
        fd = scope.open_file(path, allow_outside=not named_inside)
    except (OSError, WorkspaceError) as exc:
        raise AttachmentError(f"@{path}: {getattr(exc, 'strerror', None) or exc}") from exc
    with os.fdopen(fd, "rb") as handle:
        size = os.fstat(fd).st_size
        data = handle.read(MAX_EMBEDDED_BYTES + 1)
    mime = mimetypes.guess_type(resolved.name)[0] or "text/plain"
    if len(data) <= MAX_EMBEDDED_BYTES:
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            text = None
        if text is not None:
            return {"type": "resource", "resource": {"uri": uri, "mimeType": mime, "text": text}}
    return {"type": "resource_link", "uri": uri, "name": resolved.name, "mimeType": mime, "size": size}
