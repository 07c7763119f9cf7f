"""Image files the model can look at: PNG, JPEG, GIF and WebP, read, checked and, when large,
downscaled to what every provider takes: by Pillow in a confined child (image_decoder.py),
never in the agent process, which reads only the header (image_size.py).

The type comes from the file's first bytes, not its name; a file that says `.png` and is
not one is refused. The result is an `ImagePart`, which each provider sends in its own
form (core/providers/*), or a note when it cannot be used.
"""

from __future__ import annotations

import base64
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from hermes_core.messages import ImagePart
from hermes_core.prompt.image_child import MAX_PIXELS, MAX_SEND_BYTES, MAX_SIDE
from hermes_core.prompt.image_size import HeaderError, image_size

Downscale = Callable[[bytes, str], tuple[bytes, str]]  # (bytes, MIME type) -> the same, downscaled

IMAGE_SUFFIXES = frozenset({".png", ".jpg", ".jpeg", ".gif", ".webp"})
MAX_FILE_BYTES = 20 * 1024 * 1024  # not even read beyond this
# MAX_PIXELS: decoding costs memory by pixels, not by file size: a 140 KB PNG of 12000 x
# 12000 black pixels took the server to 1.3 GB. Refused above it (a 48-megapixel photo still
# fits), from the header, before any decoder sees the file.


class ImageError(ValueError):
    """The file is not an image that can be shown; the message says why."""


class NotAnImage(ImageError):
    """Its bytes are none of the four formats, whatever its name: read it as any other file."""


@dataclass(frozen=True, slots=True)
class LoadedImage:
    part: ImagePart
    width: int
    height: int
    original_bytes: int
    downscaled: bool

    def describe(self, name: str) -> str:
        size = f"{self.width}x{self.height}, "
        scaled = ", downscaled to fit" if self.downscaled else ""
        return f"{name}: {self.part.mime_type} image ({size}{self.original_bytes:,} bytes{scaled})"


def looks_like_image(path: str | Path) -> bool:
    return Path(path).suffix.lower() in IMAGE_SUFFIXES


def sniff(head: bytes) -> str | None:
    """The image's MIME type from its first bytes, or None."""
    if head.startswith(b"\x89PNG\r\n\x1a\n"):
        return "image/png"
    if head.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    if head[:6] in (b"GIF87a", b"GIF89a"):
        return "image/gif"
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return "image/webp"
    return None


def load_image(name: str, data: bytes, downscale: Downscale | None = None) -> LoadedImage:
    """The image in `data` (a file's bytes, read by the caller through the workspace's
    opener, beneath its root); NotAnImage when the bytes are none of the four formats,
    ImageError when they cannot be used. Only the header is read here (plain Python); an
    image too large to send as it is goes to `downscale` (a confined child:
    `image_decoder.downscale`), or is refused without one."""
    mime = sniff(data[:16])
    if mime is None:
        raise NotAnImage(f"{Path(name).name} is not a PNG, JPEG, GIF or WebP image")
    try:
        width, height = image_size(mime, data)
    except HeaderError as exc:
        raise ImageError(f"the image cannot be decoded: {exc}") from None
    if width * height > MAX_PIXELS:
        raise ImageError(
            f"refused: {width}x{height} is {width * height:,} pixels, over the {MAX_PIXELS:,} an image may "
            "have here (decoding it would take gigabytes: a decompression bomb)"
        )
    if len(data) <= MAX_SEND_BYTES and max(width, height) <= MAX_SIDE:
        part = ImagePart(mime_type=mime, data=base64.b64encode(data).decode("ascii"))
        return LoadedImage(part, width, height, len(data), False)
    if downscale is None:
        raise ImageError(
            f"it is {width}x{height}, {len(data):,} bytes: too large to send without downscaling"
        )
    try:
        encoded, out_mime = downscale(data, mime)
    except ValueError as exc:
        raise ImageError(str(exc)) from None
    part = ImagePart(mime_type=out_mime, data=base64.b64encode(encoded).decode("ascii"))
    return LoadedImage(part, width, height, len(data), True)
