"""The crowd preview's numpy side (core.animtex.crowd): grid, per-instance data, vertex columns, time."""

from __future__ import annotations

import numpy as np
import pytest

from hybrid_skin.core.animtex.crowd import crowd_layout, crowd_texels, crowd_vertices, instance_samples


def test_layout_is_a_centred_grid_with_cycling_clips_and_times_within_the_clips():
    layout = crowd_layout(5, 2.0, [1.0, 3.0], seed=4)
    np.testing.assert_allclose(layout.offsets[:, :2], [[-2, -2], [0, -2], [2, -2], [-2, 0], [0, 0]])  # 3 x 3
    assert not layout.offsets[:, 2].any()
    np.testing.assert_allclose(crowd_layout(9, 2.0, [1.0]).offsets.mean(axis=0), 0.0)  # a full grid: centred
    np.testing.assert_array_equal(layout.clips, [0, 1, 0, 1, 0])
    durations = np.array([1.0, 3.0])[layout.clips]
    assert np.all((layout.time_offsets >= 0) & (layout.time_offsets < durations))
    again = crowd_layout(5, 2.0, [1.0, 3.0], seed=4)
    np.testing.assert_array_equal(again.time_offsets, layout.time_offsets)  # seeded
    assert not np.array_equal(crowd_layout(5, 2.0, [1.0, 3.0], seed=5).time_offsets, layout.time_offsets)


def test_texels_hold_instances_and_part_matrices():
    layout = crowd_layout(2, 1.0, [2.0])
    matrix = np.arange(16, dtype=np.float64).reshape(4, 4)
    texels = crowd_texels(layout, [np.eye(4), matrix])
    assert texels.shape == (4, 3, 4) and texels.dtype == np.float32  # at least 3 columns: a matrix's rows
    np.testing.assert_allclose(texels[0, :2, :3], layout.offsets)
    np.testing.assert_allclose(texels[0, :2, 3], layout.time_offsets)
    np.testing.assert_allclose(texels[3, :3], matrix[:3])


def test_vertex_columns_concatenate_parts_with_offset_triangles():
    part = {
        "positions": np.zeros((3, 3)),
        "normals": np.ones((3, 3)),
        "triangles": np.array([[0, 1, 2]]),
        "items": np.array([5, 6, 7]),
    }
    columns, triangles = crowd_vertices([part, part])
    np.testing.assert_array_equal(triangles, [[0, 1, 2], [3, 4, 5]])
    np.testing.assert_array_equal(columns["part"], [0, 0, 0, 1, 1, 1])
    np.testing.assert_array_equal(columns["item"], [5, 6, 7, 5, 6, 7])
    assert columns["bones"].dtype == np.int32 and columns["weights"].dtype == np.float32
    assert columns["bones"].shape == (6, 4)


@pytest.mark.parametrize(("loop", "expected"), [(True, 1.5 * 24), (False, 0.5 * 24)])
def test_samples_wrap_only_clips_that_do_not_loop(loop, expected):
    """A 25-frame clip at 24 samples per second lasts 1 s; 1.5 s in, a loop is at sample 36 (the decoders
    wrap it), a clip that does not loop replays from the start in the preview: sample 12."""
    layout = crowd_layout(1, 1.0, [1.0])
    layout = type(layout)(layout.offsets, np.zeros(1, np.float32), layout.clips)
    clip = {"frame_count": 25, "sample_rate": 24.0, "loop": loop}
    np.testing.assert_allclose(instance_samples(layout, [clip], 1.5), [expected])
