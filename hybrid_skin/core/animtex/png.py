"""PNG files of animation textures, written and read with numpy and zlib (no Blender, no imaging library).

Blender's image writer spends most of a VERTEX texture bake's file time (8192x630 PNG16: ~0.5 s through
``Image.save_render``), converting the exact integer codes to floats and back on the way. A PNG of
integer codes is a few lines of bytes: the signature, an ``IHDR`` chunk, the rows (each prefixed with
filter byte 0, samples big-endian) deflated into one ``IDAT`` chunk, and ``IEND``. No ``gAMA``, ``sRGB``,
``iCCP`` or ``cHRM`` chunk is written: the samples are data, and readers that colour-manage must leave them
alone (see shaders/FORMAT.md).

Rows: a texture's ``pixels[0]`` is row 0 of the layout (the bottom row, as Blender's images and GL
textures count); a PNG stores its top row first, so the file holds the rows in reverse.
"""

from __future__ import annotations

import struct
import zlib

import numpy as np

__all__ = ["PNG_SIGNATURE", "encode_png", "decode_png", "zlib_level"]

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
_COLOR_TYPE_RGBA = 6


def zlib_level(compression_percent: int) -> int:
    """zlib level for Blender's PNG compression percent (``ImageFormatSettings.compression``), as
    Blender maps it."""
    if not 0 <= compression_percent <= 100:
        raise ValueError(f"PNG compression must be 0-100 %, got {compression_percent}")
    return int(compression_percent / 11.1111)


def _chunk(kind: bytes, data: bytes | memoryview) -> bytes:
    crc = zlib.crc32(data, zlib.crc32(kind))
    return struct.pack(">I", len(data)) + kind + bytes(data) + struct.pack(">I", crc)


def encode_png(codes: np.ndarray, level: int = 0) -> bytes:
    """A PNG of ``(H, W, 4)`` uint8 or uint16 RGBA codes, ``codes[0]`` the bottom row."""
    if codes.ndim != 3 or codes.shape[2] != 4:
        raise ValueError(f"expected (H, W, 4) RGBA codes, got shape {codes.shape}")
    if codes.dtype not in (np.uint8, np.uint16):
        raise ValueError(f"PNG samples are uint8 or uint16, got {codes.dtype}")
    height, width = codes.shape[:2]
    depth = 8 * codes.dtype.itemsize
    # one buffer: per row a filter byte (0, None) then the row's samples, top row first, big-endian
    rows = np.zeros((height, 1 + width * 4 * codes.dtype.itemsize), np.uint8)
    samples = rows[:, 1:].view(codes.dtype.newbyteorder(">")).reshape(height, width, 4)
    samples[...] = codes[::-1]
    header = struct.pack(">IIBBBBB", width, height, depth, _COLOR_TYPE_RGBA, 0, 0, 0)
    return b"".join(
        (
            PNG_SIGNATURE,
            _chunk(b"IHDR", header),
            _chunk(b"IDAT", zlib.compress(rows.data, level)),
            _chunk(b"IEND", b""),
        )
    )


def decode_png(data: bytes) -> np.ndarray:
    """``(H, W, 4)`` codes, row 0 at the bottom, of a PNG that :func:`encode_png` wrote.

    Checks every chunk's CRC and the rows' length; only filter 0 and non-interlaced RGBA are read
    (this reads back our own files; the tests read them with an independent decoder too).
    """
    if not data.startswith(PNG_SIGNATURE):
        raise ValueError("not a PNG file")
    pos = len(PNG_SIGNATURE)
    header = None
    idat = []
    while pos < len(data):
        if pos + 8 > len(data):
            raise ValueError("truncated PNG chunk")
        (length,) = struct.unpack_from(">I", data, pos)
        kind = data[pos + 4 : pos + 8]
        body = data[pos + 8 : pos + 8 + length]
        end = pos + 12 + length
        crc = zlib.crc32(body, zlib.crc32(kind))
        if end > len(data) or struct.unpack_from(">I", data, end - 4)[0] != crc:
            raise ValueError(f"PNG chunk {kind!r} is truncated or corrupt")
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat.append(body)
        elif kind == b"IEND":
            break
        pos = end
    if header is None:
        raise ValueError("PNG has no IHDR chunk")
    width, height, depth, color_type, _, _, interlace = header
    if color_type != _COLOR_TYPE_RGBA or depth not in (8, 16) or interlace:
        raise ValueError(f"not a non-interlaced RGBA PNG (colour type {color_type}, depth {depth})")
    dtype = np.dtype(">u1" if depth == 8 else ">u2")
    raw = np.frombuffer(zlib.decompress(b"".join(idat)), np.uint8)
    row_bytes = 1 + width * 4 * dtype.itemsize
    if raw.size != height * row_bytes:
        raise ValueError("PNG pixel data has the wrong length")
    rows = raw.reshape(height, row_bytes)
    if rows[:, 0].any():
        raise ValueError("PNG rows use filters this reader does not implement")
    codes = rows[:, 1:].copy().view(dtype).reshape(height, width, 4)[::-1]
    return codes.astype(np.uint8 if depth == 8 else np.uint16)
