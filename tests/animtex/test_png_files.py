"""PNG textures written by the add-on load into Blender with the exact codes (Non-Color, alpha as data)."""

from __future__ import annotations

import importlib

import bpy
import numpy as np
import pytest


@pytest.mark.parametrize("dtype", [np.uint8, np.uint16])
def test_blender_loads_the_exact_codes(addon, tmp_path, dtype):
    png = importlib.import_module(addon.__name__ + ".core.animtex.png")
    top = np.iinfo(dtype).max
    rng = np.random.default_rng(3)
    codes = rng.integers(0, top + 1, (9, 13, 4), dtype=np.int64).astype(dtype)
    # alpha between 0 and 1: where a premultiplying loader would change the colour channels
    codes[..., 3] = rng.choice([0, 1, top // 2, top], codes.shape[:2])
    path = tmp_path / "codes.png"
    path.write_bytes(png.encode_png(codes))
    image = bpy.data.images.load(str(path), check_existing=False)
    try:
        image.colorspace_settings.name = "Non-Color"
        image.alpha_mode = "CHANNEL_PACKED"
        assert tuple(image.size) == (13, 9)
        pixels = np.empty(13 * 9 * 4, np.float32)
        image.pixels.foreach_get(pixels)
    finally:
        bpy.data.images.remove(image)
    np.testing.assert_array_equal(np.rint(pixels.reshape(9, 13, 4) * top), codes)  # row 0 at the bottom
