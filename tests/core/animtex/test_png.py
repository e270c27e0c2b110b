"""The PNG writer against an independent reader (pypng) and PNG's own rules."""

from __future__ import annotations

import struct
import zlib

import numpy as np
import png as pypng
import pytest

from hybrid_skin.core.animtex import png as hs_png


def _codes(dtype, height=7, width=5, seed=0) -> np.ndarray:
    top = np.iinfo(dtype).max
    codes = np.random.default_rng(seed).integers(0, top + 1, (height, width, 4), dtype=np.int64)
    codes[0, 0] = top  # the extremes, exactly
    codes[-1, -1] = 0
    return codes.astype(dtype)


def _read_with_pypng(data: bytes) -> tuple[np.ndarray, dict]:
    width, height, rows, info = pypng.Reader(bytes=data).asDirect()
    top_first = np.array([np.asarray(r) for r in rows]).reshape(height, width, 4)
    return top_first[::-1], info  # row 0 at the bottom, as the texture counts


@pytest.mark.parametrize("dtype", [np.uint8, np.uint16])
@pytest.mark.parametrize("level", [0, 1, 9])
def test_pypng_reads_the_exact_codes_bottom_row_first(dtype, level):
    codes = _codes(dtype)
    back, info = _read_with_pypng(hs_png.encode_png(codes, level))
    assert info["bitdepth"] == 8 * np.dtype(dtype).itemsize and info["alpha"] and not info["greyscale"]
    np.testing.assert_array_equal(back, codes)
    np.testing.assert_array_equal(hs_png.decode_png(hs_png.encode_png(codes, level)), codes)


def test_no_colour_management_chunks():
    data = hs_png.encode_png(_codes(np.uint16))
    kinds = []
    pos = 8
    while pos < len(data):
        (length,) = struct.unpack_from(">I", data, pos)
        kinds.append(data[pos + 4 : pos + 8])
        pos += 12 + length
    assert kinds == [b"IHDR", b"IDAT", b"IEND"]  # no gAMA / sRGB / iCCP / cHRM: samples are data


def test_level_zero_stores_and_a_higher_level_deflates():
    codes = np.zeros((64, 64, 4), np.uint16)  # compressible
    stored, deflated = hs_png.encode_png(codes, 0), hs_png.encode_png(codes, 6)
    assert len(stored) > codes.nbytes and len(deflated) < codes.nbytes / 20


@pytest.mark.parametrize(("percent", "level"), [(0, 0), (15, 1), (50, 4), (100, 9)])
def test_blender_compression_percent_to_zlib_level(percent, level):
    assert hs_png.zlib_level(percent) == level


def test_refuses_what_it_cannot_write_or_read():
    with pytest.raises(ValueError, match="RGBA"):
        hs_png.encode_png(np.zeros((2, 2, 3), np.uint8))
    with pytest.raises(ValueError, match="uint8 or uint16"):
        hs_png.encode_png(np.zeros((2, 2, 4), np.float32))
    data = hs_png.encode_png(_codes(np.uint16))
    with pytest.raises(ValueError, match="truncated or corrupt"):
        hs_png.decode_png(data[:-20])
    corrupt = bytearray(data)
    corrupt[40] ^= 0xFF
    with pytest.raises((ValueError, zlib.error)):
        hs_png.decode_png(bytes(corrupt))
    with pytest.raises(ValueError, match="not a PNG"):
        hs_png.decode_png(b"GIF89a")
