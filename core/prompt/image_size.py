"""An image's width and height, read from its header by plain Python.

The agent process itself never hands workspace bytes to an image decoder (C code: a flaw in
it would run with the model keys in memory); it needs only the size, to refuse a
decompression bomb and to know whether the picture must be downscaled, which a child does
in the sandbox (`image_decoder.py`). Each format's header says its size in a few fixed
bytes: PNG's IHDR, GIF's logical screen, JPEG's start-of-frame segment, WebP's VP8, VP8L
or VP8X chunk.
"""

from __future__ import annotations

import struct


class HeaderError(ValueError):
    """The header does not say the size: the file is cut short or not what its magic says."""


def image_size(mime: str, data: bytes) -> tuple[int, int]:
    """(width, height) of the image in `data`, whose type `mime` its first bytes named."""
    try:
        if mime == "image/png":
            return _png(data)
        if mime == "image/gif":
            return struct.unpack("<HH", data[6:10])
        if mime == "image/jpeg":
            return _jpeg(data)
        if mime == "image/webp":
            return _webp(data)
    except struct.error:
        raise HeaderError("its header is cut short") from None
    raise HeaderError(f"{mime} is not a type read here")


def _png(data: bytes) -> tuple[int, int]:
    if data[12:16] != b"IHDR":
        raise HeaderError("a PNG without its IHDR chunk first")
    return struct.unpack(">II", data[16:24])


# Start-of-frame markers (C0-CF), except DHT (C4), JPG (C8) and DAC (CC), which share the range.
_SOF = frozenset(range(0xC0, 0xD0)) - {0xC4, 0xC8, 0xCC}
_NO_LENGTH = frozenset({0x01, *range(0xD0, 0xDA)})  # TEM, RSTn, SOI, EOI: a marker alone


def _jpeg(data: bytes) -> tuple[int, int]:
    at = 2
    while at + 4 <= len(data):
        if data[at] != 0xFF:
            raise HeaderError("a JPEG segment without its marker")
        marker = data[at + 1]
        if marker == 0xFF:  # fill byte before a marker
            at += 1
            continue
        if marker in _NO_LENGTH:
            at += 2
            continue
        (length,) = struct.unpack(">H", data[at + 2 : at + 4])
        if marker in _SOF:
            height, width = struct.unpack(">HH", data[at + 5 : at + 9])
            return width, height
        if marker == 0xDA:  # the scan starts: no frame header came first
            break
        at += 2 + length
    raise HeaderError("a JPEG without a frame header")


def _webp(data: bytes) -> tuple[int, int]:
    kind = data[12:16]
    if kind == b"VP8 ":
        if data[23:26] != b"\x9d\x01\x2a":
            raise HeaderError("a lossy WebP without its start code")
        width, height = struct.unpack("<HH", data[26:30])
        return width & 0x3FFF, height & 0x3FFF
    if kind == b"VP8L":
        if data[20:21] != b"\x2f":
            raise HeaderError("a lossless WebP without its signature")
        (bits,) = struct.unpack("<I", data[21:25])
        return (bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1
    if kind == b"VP8X":
        if len(data) < 30:
            raise HeaderError("its header is cut short")
        return int.from_bytes(data[24:27], "little") + 1, int.from_bytes(data[27:30], "little") + 1
    raise HeaderError("a WebP of an unknown kind")
