"""The GPU data layout (core.gpu_layout): influences and bone texels pack and unpack exactly.

The shaders read exactly these texels (tests/draw/test_shaders.py holds them to the numpy core); here
the packing itself, without a GPU.
"""

from __future__ import annotations

import numpy as np

from hybrid_skin.core.gpu_layout import (
    AUTO_TEXEL,
    BONE_TEXELS,
    pack_bone_texture,
    pack_influences,
    unpack_auto_bone_data,
    unpack_bone_texture,
    unpack_influences,
)
from hybrid_skin.core.skinning import BonePalette, SkinBinding


def test_layout_round_trip_keeps_stored_order_and_drops_zero_weights():
    rng = np.random.default_rng(3)
    n, k, b = 500, 6, 5000
    weights = rng.random((n, k)).astype(np.float32)
    weights[rng.random((n, k)) < 0.4] = 0.0
    weights[7] = 0.0  # an undeformed vertex
    bones = rng.integers(0, b, (n, k)).astype(np.int32)
    binding = SkinBinding(bones, weights, rng.random(n).astype(np.float32))
    layout = pack_influences(binding, width=64)
    assert layout.entry_count == int((weights != 0).sum()) and layout.width == 64
    assert layout.span[7, 1] == 0
    back = unpack_influences(layout)
    for v in range(n):
        keep = weights[v] != 0
        c = int(keep.sum())
        np.testing.assert_array_equal(back.bone_indices[v, :c], bones[v, keep])
        np.testing.assert_array_equal(back.weights[v, :c], weights[v, keep])
        assert not back.weights[v, c:].any()

    matrices = rng.random((b, 3, 4)).astype(np.float32)
    real, dual = rng.random((b, 4)).astype(np.float32), rng.random((b, 4)).astype(np.float32)
    pivot = rng.random((b, 4, 3)).astype(np.float32)
    texels = pack_bone_texture(BonePalette(matrices, real, dual, pivot))
    assert texels.shape == (b, BONE_TEXELS, 4) and texels.flags.c_contiguous
    np.testing.assert_array_equal(texels[:, 5 + 2, :], pivot[:, :, 2])  # texel 5 + j = pivot column j
    back_palette = unpack_bone_texture(texels, b)
    for got, want in zip(back_palette, (matrices, real, dual, pivot)):
        np.testing.assert_array_equal(got, want)
    rigid = pack_bone_texture(BonePalette(matrices, real, dual, None))
    assert not rigid[:, 5:].any()
    auto = rng.normal(size=(b, 8)).astype(np.float32)
    with_auto = pack_bone_texture(BonePalette(matrices, real, dual, pivot), auto)
    palette_texels = slice(0, AUTO_TEXEL)
    np.testing.assert_array_equal(with_auto[:, palette_texels], texels[:, palette_texels])  # unchanged
    np.testing.assert_array_equal(unpack_auto_bone_data(with_auto, b), auto)
    # (tau, sigma) in texel AUTO_TEXEL, (A, H) in the next (the shader reads HS_AUTO_TEXEL + 1)
    np.testing.assert_array_equal(with_auto[:, AUTO_TEXEL], auto[:, :4])
    np.testing.assert_array_equal(with_auto[:, AUTO_TEXEL + 1], auto[:, 4:])
    assert not unpack_auto_bone_data(texels, b).any()  # no AUTO data: a zero texel
