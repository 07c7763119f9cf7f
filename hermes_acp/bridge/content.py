"""ACP prompt blocks -> the parts of a user message.

A block that cannot be used (an unreadable file, an image the model cannot see) becomes
a short note in the text, so the model and the user know; it never fails the prompt.
Only a block type the protocol does not define here is an error (ValueError).

The user message keeps the prompt as the user sent it (`with_prompt_shown`), so that a
replay shows the bubble the user saw, a mention and not the file it attached.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import html
import re
from collections.abc import AsyncIterator
from typing import Any
from urllib.parse import urlparse
from urllib.request import url2pathname

from hermes_core.messages import ContentPart, ImagePart, TextPart
from hermes_core.prompt.images import looks_like_image
from hermes_core.workspace import BinaryFile, FileTooLarge, OutsideWorkspace, Workspace, WorkspaceError

NO_IMAGES = "[An image was attached, but the current model does not accept images; it was left out.]"

NO_AUDIO = (
    "[An audio clip was attached ({mime}, {size:,} bytes); hermes cannot listen to audio, so it was "
    "left out. Ask the user for a transcript if it matters.]"
)

_LINES = re.compile(r"^L(\d+)(?:(?::\d+)?[-:]L?(\d+))?")  # #L10, #L10-20, #L10:20 (1-based)
_TEXT_MIME = re.compile(r"^(text/|application/(json|xml|javascript|x-(sh|python|yaml|toml)))")


async def prompt_to_content(
    blocks: list[dict[str, Any]],
    workspace: Workspace,
    *,
    accepts_images: bool,
    max_resource_bytes: int = 200_000,
) -> list[ContentPart]:
    parts: list[ContentPart] = []
    attached: set[int] = set()  # parts made from a block other than text
    for block in blocks:
        if not isinstance(block, dict):
            raise ValueError(f"a prompt block must be an object, not {type(block).__name__}")
        kind = block.get("type")
        if kind != "text":
            attached.add(len(parts))
        if kind == "text":
            parts.append(TextPart(_required(block, "text")))
        elif kind == "audio":
            mime = block.get("mimeType") or "audio"
            size = _decoded_size(block["data"]) if isinstance(block.get("data"), str) else 0
            parts.append(TextPart(NO_AUDIO.format(mime=mime, size=size)))
        elif kind == "image":
            data, mime = _required(block, "data"), _required(block, "mimeType")
            parts.append(ImagePart(mime_type=mime, data=data) if accepts_images else TextPart(NO_IMAGES))
        elif kind == "resource_link":
            parts.append(await _linked(block, workspace, max_resource_bytes, accepts_images=accepts_images))
        elif kind == "resource":
            resource = block.get("resource")
            if not isinstance(resource, dict):
                raise ValueError("a resource block needs a 'resource' object")
            parts.append(_embedded(resource, accepts_images=accepts_images, max_bytes=max_resource_bytes))
        else:
            raise ValueError(f"unsupported prompt content block type {kind!r}")
    return _separated(parts, attached)


def _separated(parts: list[ContentPart], attached: set[int]) -> list[ContentPart]:
    """An attachment on its own lines: providers join adjacent text parts as they are, and
    "look at" + `<file ...>` would reach the model as "look at<file ...>"."""
    out = list(parts)
    for index in sorted(attached):
        part = out[index]
        if not isinstance(part, TextPart):
            continue
        text = part.text
        before = out[index - 1] if index > 0 else None
        after = out[index + 1] if index + 1 < len(out) else None
        if isinstance(before, TextPart) and before.text and not before.text.endswith("\n"):
            text = "\n" + text
        if isinstance(after, TextPart) and after.text and not text.endswith("\n"):
            text += "\n"
        out[index] = TextPart(text, attached=True)
    return out


async def _linked(
    block: dict[str, Any], workspace: Workspace, max_bytes: int, *, accepts_images: bool
) -> ContentPart:
    uri = _required(block, "uri")
    label = block.get("name") or uri
    parsed = urlparse(uri)
    if parsed.scheme != "file":
        return TextPart(f"[Attached link {label}: {uri} (not a file, so not read)]")
    try:
        path = workspace.scope.resolve(url2pathname(parsed.path))  # url2pathname unquotes
        if await asyncio.to_thread(path.is_dir):
            return TextPart(f"[Attached directory {path}: use the listing and search tools to look inside]")
        name = url2pathname(parsed.path)
        if looks_like_image(path) and (
            image := await _linked_image(uri, workspace, name, accepts_images=accepts_images)
        ):
            return image  # `@image.png`: the image itself, as an attached one would be
        # Opened beneath the workspace by the raw name: a link swapped in meanwhile is refused.
        text = await workspace.read_text(name)
    except OutsideWorkspace as exc:
        return TextPart(f"[Attached file {uri} was not read: {exc}]")
    except FileNotFoundError:
        return TextPart(f"[Attached file {uri} was not read: it does not exist]")
    except FileTooLarge as exc:
        return TextPart(f"[Attached file {uri} was not read: {exc}]")
    except BinaryFile:
        return TextPart(f"[Attached file {uri} was not read: it is a binary file]")
    except (WorkspaceError, OSError, UnicodeDecodeError) as exc:
        return TextPart(f"[Attached file {uri} could not be read: {exc}]")
    from hermes_core.sandbox.git_credentials import shown

    # `@.git/config` (or a link to it) shows what read_file would: no token in a remote's URL.
    text, lines = _select_lines(shown(text, name, path), parsed.fragment)
    return TextPart(_wrapped(uri, text, max_bytes, lines))


async def _linked_image(uri: str, workspace: Any, name: str, *, accepts_images: bool) -> ContentPart | None:
    """None when the file's bytes are no image: it is attached as any other file. Read
    through the workspace's opener (beneath its root, regular, never a FIFO)."""
    from hermes_core.prompt.image_decoder import downscale
    from hermes_core.prompt.images import MAX_FILE_BYTES, ImageError, NotAnImage, load_image

    sandbox = workspace.sandbox
    try:
        data = await asyncio.to_thread(workspace.scope.read_bytes, name, MAX_FILE_BYTES)
        loaded = await asyncio.to_thread(load_image, name, data, lambda d, m: downscale(d, m, sandbox))
    except NotAnImage:
        return None  # attached as any other file; the text path names what is wrong
    except (ImageError, OSError, WorkspaceError) as exc:
        return TextPart(f"[Attached image {uri} could not be read: {exc}]")
    if not accepts_images:
        return TextPart(f"[Attached image {uri}: {NO_IMAGES[1:-1]}]")
    return loaded.part


def _embedded(resource: dict[str, Any], *, accepts_images: bool, max_bytes: int) -> ContentPart:
    uri = _required(resource, "uri")
    mime = resource.get("mimeType") or ""
    if "text" in resource:
        from hermes_core.sandbox.git_credentials import shown

        # An editor embeds what `@.git/config` (or a link to it) holds: shown as read_file shows it.
        path = url2pathname(urlparse(uri).path) if uri.startswith("file:") else None
        return TextPart(_wrapped(uri, shown(_required(resource, "text"), path), max_bytes))
    blob = _required(resource, "blob")
    size = _decoded_size(blob)
    if mime.startswith("image/"):
        if accepts_images:
            return ImagePart(mime_type=mime, data=blob)
        return TextPart(f"[Attached image {uri} ({mime}, {size:,} bytes): {NO_IMAGES[1:-1]}]")
    if _TEXT_MIME.match(mime):
        try:
            return TextPart(_wrapped(uri, base64.b64decode(blob, validate=True).decode("utf-8"), max_bytes))
        except (binascii.Error, UnicodeDecodeError):
            pass
    return TextPart(f"[Attached {uri}: {mime or 'binary'} data, {size:,} bytes, not readable as text]")


def _wrapped(uri: str, text: str, max_bytes: int, lines: str = "") -> str:
    """`<file uri="...">text</file>`, cut to max_bytes with a line saying so."""
    encoded = text.encode("utf-8")
    cut = ""
    if len(encoded) > max_bytes:
        text = encoded[:max_bytes].decode("utf-8", errors="ignore")
        cut = (
            f"[cut: only the first {max_bytes:,} of {len(encoded):,} bytes are shown;"
            " read the rest with the read tool]\n"
        )
    tag = "file" if uri.startswith("file:") else "resource"
    attributes = f'uri="{html.escape(uri, quote=True)}"'
    if lines:
        attributes += f' lines="{lines}"'
    if text and not text.endswith("\n"):
        text += "\n"
    return f"<{tag} {attributes}>\n{text}{cut}</{tag}>"


def _select_lines(text: str, fragment: str) -> tuple[str, str]:
    """Honour a `#L10-20` fragment (a selection the editor linked to): the lines and
    "10-20", or the whole text and ""."""
    match = _LINES.match(fragment)
    if not match:
        return text, ""
    first = int(match.group(1))
    last = int(match.group(2) or first)
    if last < first:
        first, last = last, first
    lines = text.splitlines(keepends=True)
    return "".join(lines[max(first - 1, 0) : last]), f"{first}-{last}"


def _decoded_size(blob: str) -> int:
    return len(blob) * 3 // 4 - blob[-2:].count("=")


def _required(block: dict[str, Any], key: str) -> str:
    value = block.get(key)
    if not isinstance(value, str):
        raise ValueError(f"the {block.get('type', 'resource')!s} block needs a string {key!r}")
    return value


# -- the prompt as the user sent it, kept for a replay ---------------------------------------


def shown_prompt(blocks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A prompt's blocks as the user's bubble shows them again: text and mentions. An
    embedded resource is kept as a link to it (its text is in the message already); an
    image comes back from the message's content, audio is not kept."""
    shown: list[dict[str, Any]] = []
    for block in blocks:
        kind = block.get("type")
        if kind == "text" and isinstance(block.get("text"), str):
            shown.append({"type": "text", "text": block["text"]})
        elif kind == "resource_link" and isinstance(block.get("uri"), str):
            link = {key: block[key] for key in _LINK_KEYS if key in block}
            link.setdefault("name", block["uri"])
            shown.append(link)
        elif kind == "resource" and isinstance(block.get("resource"), dict):
            uri = block["resource"].get("uri")
            if isinstance(uri, str):
                name = uri.rstrip("/").rsplit("/", 1)[-1] or uri
                link = {"type": "resource_link", "uri": uri, "name": name}
                if isinstance(block["resource"].get("mimeType"), str):
                    link["mimeType"] = block["resource"]["mimeType"]
                shown.append(link)
    return shown


_LINK_KEYS = ("type", "uri", "name", "title", "description", "mimeType", "size")


async def with_prompt_shown(events: AsyncIterator[Any], blocks: list[dict[str, Any]]) -> AsyncIterator[Any]:
    """The turn's events, its user message marked with the prompt as the user sent it
    (`display["prompt_blocks"]`): a replay shows that, not the files a mention attached."""
    from hermes_core.events import MessageCommitted

    marked = False
    async for event in events:
        if not marked and isinstance(event, MessageCommitted) and event.message.role == "user":
            message = event.message
            message.display = {**(message.display or {}), "prompt_blocks": shown_prompt(blocks)}
            marked = True
        yield event
