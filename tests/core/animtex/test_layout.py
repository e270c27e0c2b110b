"""Texture layout: sizes follow the documented formulas, wrapping, padding and the pixel ↔ item map."""

from __future__ import annotations

import math

import numpy as np
import pytest

from hybrid_skin.core.animtex.layout import (
    GUARD_FRAMES,
    TEXELS_PER_ITEM,
    Clip,
    Kind,
    Region,
    frame_pair,
    plan_layout,
)


@pytest.mark.parametrize(
    ("kind", "bones", "frames"),
    [(Kind.BONE_DQ, 65, 85), (Kind.BONE_MATRIX, 65, 85), (Kind.BONE_DQ, 4, 248), (Kind.BONE_MATRIX, 67, 131)],
)
def test_bone_texture_sizes_follow_texels_per_bone(kind: Kind, bones: int, frames: int) -> None:
    # Johansson (2021) Tables 2-8: DQ textures use 2 texels per bone per frame, matrix textures 3. Our frames
    # run along y and each clip carries one guard frame, so data is (T * B) wide and (F + 1) tall.
    lay = plan_layout(bones, TEXELS_PER_ITEM[kind], [frames])
    t = {Kind.BONE_DQ: 2, Kind.BONE_MATRIX: 3}[kind]
    assert (lay.width, lay.height) == (t * bones, frames + GUARD_FRAMES)
    assert lay.rows_per_frame == 1 and lay.texels_per_frame == t * bones


def test_thesis_y_bot_vertex_count_wraps_within_limits() -> None:
    # The Y Bot (319,944 vertices) failed in the thesis: one vertex per row exceeded the texture height.
    for max_width, rows in [(8192, math.ceil(319_944 / 4096)), (16384, math.ceil(319_944 / 8192))]:
        lay = plan_layout(319_944, 2, [60], max_width=max_width)
        assert lay.width == max_width
        assert lay.rows_per_frame == rows
        assert lay.height == 61 * rows <= 16384


def test_wrapping_keeps_items_on_one_row() -> None:
    lay = plan_layout(1000, 3, [2], max_width=100)  # 33 bones per row, 99 texels used
    assert (lay.items_per_row, lay.data_width, lay.rows_per_frame) == (33, 99, 31)
    x0, row = lay.item_texels()
    assert x0.max() + 3 <= lay.width
    np.testing.assert_array_equal(row, np.arange(1000) // 33)


def test_power_of_two_padding_and_width_cap() -> None:
    lay = plan_layout(5000, 2, [10, 3], max_width=10000, power_of_two=True, metadata_floats=40)
    # cap becomes 8192 (largest power of two ≤ 10000): 4096 items per row, 2 rows per frame
    assert (lay.width, lay.items_per_row, lay.rows_per_frame, lay.metadata_rows) == (8192, 4096, 2, 1)
    assert lay.data_height == 1 + (11 + 4) * 2
    assert lay.height == 32
    assert lay.clip_first_rows == (1, 1 + 11 * 2)


def test_clip_rows_include_guard_band() -> None:
    lay = plan_layout(10, 2, [4, 1, 7], metadata_floats=25)  # width 20 → 2 metadata rows
    assert lay.metadata_rows == 2
    assert lay.clip_first_rows == (2, 2 + 5, 2 + 5 + 2)
    np.testing.assert_array_equal(lay.frame_rows(0, [0, 3, 4]), [2, 5, 6])
    with pytest.raises(IndexError):
        lay.frame_rows(1, 2)  # a one-frame clip has frame 0 and its guard band 1 only


def test_locate_inverts_the_placement_for_every_pixel() -> None:
    lay = plan_layout(23, 3, [3, 2], max_width=20, power_of_two=True, metadata_floats=9)
    y, x = np.mgrid[0 : lay.height, 0 : lay.width]
    owner = lay.locate(x, y)
    data = owner.region >= Region.FRAME
    # Forward formula from the module docstring, applied to what locate found.
    firsts = np.asarray(lay.clip_first_rows)
    fx = (owner.item % lay.items_per_row) * lay.texels_per_item + owner.slot
    fy = firsts[owner.clip] + owner.frame * lay.rows_per_frame + owner.item // lay.items_per_row
    np.testing.assert_array_equal(fx[data], x[data])
    np.testing.assert_array_equal(fy[data], y[data])
    # Every (clip, frame, item, slot) appears exactly once.
    assert np.sum(owner.region == Region.FRAME) == (3 + 2) * 23 * 3
    assert np.sum(owner.region == Region.GUARD) == 2 * 23 * 3
    keys = np.stack([owner.clip, owner.frame, owner.item, owner.slot], -1)[data]
    assert len(np.unique(keys, axis=0)) == keys.shape[0]
    assert np.all(owner.region[: lay.metadata_rows] == Region.METADATA)
    assert np.all(owner.item[~data] == -1)


def test_item_uv_floors_back_to_texel() -> None:
    lay = plan_layout(70_000, 2, [3], max_width=16384)
    uv = lay.item_uv()
    x0, row = lay.item_texels()
    np.testing.assert_array_equal(np.floor(uv[:, 0] * lay.width).astype(int), x0)
    np.testing.assert_array_equal(np.floor(uv[:, 1] * lay.height).astype(int), row)


def test_invalid_sizes_are_rejected() -> None:
    with pytest.raises(ValueError, match="max_width"):
        plan_layout(10, 2, [3], max_width=16385)
    with pytest.raises(ValueError, match="taller"):
        plan_layout(400_000, 2, [500], max_width=8192)
    with pytest.raises(ValueError, match="narrower"):
        plan_layout(4, 3, [3], max_width=2)
    with pytest.raises(ValueError):
        plan_layout(4, 2, [])


def test_clip_sample_counts() -> None:
    assert Clip("a", 1, 25, loop=False).frame_count == 25
    assert Clip("a", 1, 25, loop=True).frame_count == 24  # end frame repeats the start pose
    assert Clip("a", 1, 25, loop=False, frame_step=4).frame_count == 7  # 1, 5, ..., 25
    assert Clip("a", 1, 25, loop=True, frame_step=4).frame_count == 6
    assert Clip("a", 7, 7, loop=True).frame_count == 1
    clip = Clip("a", 10, 20, fps=30, frame_step=2)
    np.testing.assert_allclose(clip.sample_frames(), [10, 12, 14, 16, 18, 20])
    assert clip.sample_rate == 15
    np.testing.assert_allclose(clip.sample_at_time(0.5), 7.5)
    with pytest.raises(ValueError):
        Clip("a", 5, 1)


def test_frame_pair_wraps_loops_and_clamps_others() -> None:
    f0, f1, a = frame_pair(4, True, [0.0, 3.25, 4.5, -0.5])
    np.testing.assert_array_equal(f0, [0, 3, 0, 3])
    np.testing.assert_array_equal(f1, [1, 4, 1, 4])  # 4 is the guard band (frame 0 of a loop)
    np.testing.assert_allclose(a, [0.0, 0.25, 0.5, 0.5])
    f0, f1, a = frame_pair(4, False, [-2.0, 3.0, 9.0, 2.5])
    np.testing.assert_array_equal(f0, [0, 3, 3, 2])
    np.testing.assert_allclose(a, [0.0, 0.0, 0.0, 0.5])
    f0, f1, a = frame_pair(1, True, [0.7, 12.3])
    np.testing.assert_array_equal(f0, [0, 0])
    np.testing.assert_array_equal(f1, [1, 1])
