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


def test_the_read_back_check_catches_a_file_that_differs_from_what_was_encoded(addon, tmp_path):
    """The bake's check after writing a PNG: the file must hold the encoder's bytes exactly (one flipped
    bit or a cut-off file is a failed write; the bake then saves nothing)."""
    core = importlib.import_module(addon.__name__ + ".core.animtex")
    files = importlib.import_module(addon.__name__ + ".animtex.files")
    rng = np.random.default_rng(5)
    base = rng.normal(size=(40, 3)).astype(np.float32)
    moved = [base[None] + rng.normal(scale=0.1, size=(3, 40, 3)).astype(np.float32)]
    normals = [np.broadcast_to(np.float32([0, 0, 1]), (3, 40, 3))]
    clip = core.Clip("Walk", 1.0, 3.0, 24.0)
    texture = core.encode_vertex_animation(base, moved, normals, [clip], precision=core.Precision.PNG16)
    path = str(tmp_path / "walk.png")
    written = files._save_image(texture, path)
    assert files._file_matches(path, texture, written)
    assert bpy.data.images.load(path, check_existing=False).size[:] == texture.pixels.shape[1::-1]
    data = bytearray(written)
    data[len(data) // 2] ^= 1
    (tmp_path / "walk.png").write_bytes(bytes(data))
    assert not files._file_matches(path, texture, written)
    (tmp_path / "walk.png").write_bytes(written[:-1])
    assert not files._file_matches(path, texture, written)
