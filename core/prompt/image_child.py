"""The child that decodes and downscales one image, run in the sandbox (`image_decoder.py`):
the image's bytes on stdin; its MIME type, a newline and the downscaled image on stdout.

Pillow's decoders are C code fed the workspace's bytes; here a flaw in them runs without the
model keys, network or the user's secrets, and with its memory capped. Only the sniffed
format's decoder is tried, and Pillow refuses more pixels than the agent let through.
"""

from __future__ import annotations

import io
import resource
import sys
import warnings

MAX_SIDE = 2000  # pixels: the longer side sent
MAX_SEND_BYTES = 3_750_000  # what is sent: under Anthropic's 5 MB once base64-encoded
MAX_PIXELS = 50_000_000  # as images.py: decoding costs 4 bytes a pixel
MEMORY_BYTES = 2 * 1024**3  # a 50-megapixel RGBA frame and its copies fit; a bomb does not
FORMATS = {"image/png": "PNG", "image/jpeg": "JPEG", "image/gif": "GIF", "image/webp": "WEBP"}


def downscaled(data: bytes, mime: str) -> tuple[bytes, str]:
    """The image at most MAX_SIDE on a side and MAX_SEND_BYTES long: a PNG when it has
    transparency, else a JPEG. ValueError when it stays too large."""
    from PIL import Image

    Image.MAX_IMAGE_PIXELS = MAX_PIXELS
    warnings.simplefilter("error", Image.DecompressionBombWarning)
    with Image.open(io.BytesIO(data), formats=[FORMATS[mime]]) as image:
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
        raise ValueError("the image stays too large even downscaled")
    return encoded, out_mime


def main() -> int:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_BYTES, MEMORY_BYTES))
    mime = sys.argv[1]
    data = sys.stdin.buffer.read()
    try:
        encoded, out_mime = downscaled(data, mime)
    except Exception as exc:  # Pillow raises many kinds for a broken file; the agent reads why
        sys.stderr.write(f"{exc}\n")
        return 1
    sys.stdout.buffer.write(out_mime.encode() + b"\n" + encoded)
    return 0


if __name__ == "__main__":
    sys.exit(main())
