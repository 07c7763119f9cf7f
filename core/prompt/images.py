"""Image files the model can look at: PNG, JPEG, GIF and WebP, read, checked and, when large,
downscaled (with Pillow) to what every provider takes.

The type comes from the file's first bytes, not its name; a file that says `.png` and is
not one is refused. The result is an `ImagePart`, which each provider sends in its own
form (core/providers/*), or a note when it cannot be used.
"""

from __future__ import annotations

import base64
import io
from dataclasses import dataclass
from pathlib import Path

from hermes_core.messages import ImagePart

IMAGE_SUFFIXES = frozenset({".png", ".jpg", ".jpeg", ".gif", ".webp"})
MAX_FILE_BYTES = 20 * 1024 * 1024  # not even read beyond this
MAX_SEND_BYTES = 3_750_000  # what is sent: under Anthropic's 5 MB once base64-encoded
MAX_SIDE = 2000  # pixels; larger images are scaled down to this on their longer side
# Decoding costs memory by pixels, not by file size: a 140 KB PNG of 12000 x 12000 black
# pixels took the server to 1.3 GB. Refused above this (a 48-megapixel photo still fits),
# well below Pillow's own warning (89 M) and error (179 M).
MAX_PIXELS = 50_000_000


class ImageError(ValueError):
    """The file is not an image that can be shown; the message says why."""


class NotAnImage(ImageError):
    """Its bytes are none of the four formats, whatever its name: read it as any other file."""


@dataclass(frozen=True, slots=True)
class LoadedImage:
    part: ImagePart
    width: int | None
    height: int | None
    original_bytes: int
    downscaled: bool

    def describe(self, name: str) -> str:
        size = f"{self.width}x{self.height}, " if self.width else ""
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


def load_image(name: str, data: bytes) -> LoadedImage:
    """The image in `data` (a file's bytes, read by the caller through the workspace's
    opener, beneath its root); NotAnImage when the bytes are none of the four formats,
    ImageError when they cannot be decoded."""
    mime = sniff(data[:16])
    if mime is None:
        raise NotAnImage(f"{Path(name).name} is not a PNG, JPEG, GIF or WebP image")
    width, height = _dimensions(data)
    if width is not None and height is not None and width * height > MAX_PIXELS:
        raise ImageError(
            f"refused: {width}x{height} is {width * height:,} pixels, over the {MAX_PIXELS:,} an image may "
            "have here (decoding it would take gigabytes: a decompression bomb)"
        )
    if len(data) <= MAX_SEND_BYTES and (width is None or max(width, height or 0) <= MAX_SIDE):
        part = ImagePart(mime_type=mime, data=base64.b64encode(data).decode("ascii"))
        return LoadedImage(part, width, height, len(data), False)
    return _downscaled(data, mime, width, height)


def _dimensions(data: bytes) -> tuple[int | None, int | None]:
    try:
        from PIL import Image
    except ImportError:
        return None, None
    try:
        with Image.open(io.BytesIO(data)) as image:
            return image.size
    except Exception as exc:  # Pillow raises many kinds for a broken file
        raise ImageError(f"the image cannot be decoded: {exc}") from None


def _downscaled(data: bytes, mime: str, width: int | None, height: int | None) -> LoadedImage:
    try:
        from PIL import Image
    except ImportError:
        raise ImageError(
            f"the image is {len(data):,} bytes, over the {MAX_SEND_BYTES:,} a model takes, and Pillow "
            "(which would downscale it) is not installed"
        ) from None
    with Image.open(io.BytesIO(data)) as image:
        image.seek(0)  # a GIF's first frame
        image.draft("RGB", (MAX_SIDE, MAX_SIDE))  # a JPEG decodes at 1/2, 1/4 or 1/8 of its size
        frame = image.convert("RGBA" if image.mode in ("RGBA", "LA", "P") else "RGB")
    frame.thumbnail((MAX_SIDE, MAX_SIDE))  # in place: one full-size copy in memory, not two
    side = MAX_SIDE
    while True:
        scaled = frame.copy()
        scaled.thumbnail((side, side))
        buffer = io.BytesIO()
        if scaled.mode == "RGBA":
            scaled.save(buffer, format="PNG", optimize=True)
            out_mime = "image/png"
        else:
            scaled.save(buffer, format="JPEG", quality=85)
            out_mime = "image/jpeg"
        encoded = buffer.getvalue()
        if len(encoded) <= MAX_SEND_BYTES or side <= 256:
            break
        side //= 2
    if len(encoded) > MAX_SEND_BYTES:
        raise ImageError("the image stays too large even downscaled")
    part = ImagePart(mime_type=out_mime, data=base64.b64encode(encoded).decode("ascii"))
    return LoadedImage(part, width, height, len(data), True)
