"""Corner groups of a VERTEX texture (split normals): closed forms on a flat cube and a smooth sphere."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from hybrid_skin.core.animtex.split import split_corners


def flat_cube() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Unit cube, 8 vertices, 6 quads shaded flat: positions, corner vertices, corner and vertex normals."""
    positions = np.array(list(itertools.product((-1, 1), repeat=3)), dtype=np.float64)
    corner_vertex, corner_normals = [], []
    for axis, side in itertools.product(range(3), (-1, 1)):
        on_face = np.flatnonzero(positions[:, axis] == side)
        normal = np.zeros(3)
        normal[axis] = side
        corner_vertex.extend(on_face)
        corner_normals.extend([normal] * 4)
    return (
        positions,
        np.array(corner_vertex),
        np.array(corner_normals),
        positions / np.sqrt(3.0),  # smooth vertex normals point along the diagonals
    )


def test_flat_cube_has_one_item_per_face_corner():
    _, cv, cn, vn = flat_cube()
    split = split_corners(cv, cn, vn)
    assert (split.item_count, split.vertex_count, split.extra_count) == (24, 8, 16)
    np.testing.assert_array_equal(split.item_vertex[:8], np.arange(8))
    # every corner's item belongs to its vertex and carries exactly its face normal
    np.testing.assert_array_equal(split.item_vertex[split.corner_item], cv)
    np.testing.assert_allclose(split.item_normals[split.corner_item], cn, atol=1e-7)
    # the 24 corners are 24 distinct items; each vertex's own item is its first corner's group
    assert len(np.unique(split.corner_item)) == 24
    first = np.array([np.flatnonzero(cv == v)[0] for v in range(8)])
    np.testing.assert_array_equal(split.corner_item[first], np.arange(8))
    # extra items come in vertex order, two per vertex
    np.testing.assert_array_equal(split.item_vertex[8:], np.repeat(np.arange(8), 2))
    np.testing.assert_array_equal(np.sort(split.changed_items), np.arange(24))


def test_smooth_sphere_has_no_extra_items():
    lat, lon = np.meshgrid(np.linspace(0.2, np.pi - 0.2, 7), np.linspace(0, 2 * np.pi, 12, endpoint=False))
    normals = np.stack([np.sin(lat) * np.cos(lon), np.sin(lat) * np.sin(lon), np.cos(lat)], -1).reshape(-1, 3)
    n = len(normals)
    rows, cols = 12, 7
    quads = [
        [i * cols + j, ((i + 1) % rows) * cols + j, ((i + 1) % rows) * cols + j + 1, i * cols + j + 1]
        for i in range(rows)
        for j in range(cols - 1)
    ]
    cv = np.array(quads).ravel()
    # smooth shading: every corner has its vertex's normal, up to float32 rounding
    cn = normals[cv] + np.random.default_rng(1).normal(0, 1e-7, (len(cv), 3))
    split = split_corners(cv, cn, normals.astype(np.float32))
    assert (split.item_count, split.extra_count) == (n, 0)
    np.testing.assert_array_equal(split.corner_item, cv)
    np.testing.assert_array_equal(split.item_normals, normals.astype(np.float32))
    assert split.changed_items.size == 0


def test_threshold_is_an_angle_and_groups_are_transitive():
    # one vertex, four corners: 0.05° apart in a chain (one group), then one at 1° (its own item)
    angles = np.radians([0.0, 0.05, 0.1, 0.15, 1.15])
    cn = np.stack([np.sin(angles), np.zeros(5), np.cos(angles)], -1)
    split = split_corners(np.zeros(5, int), cn, np.array([[0.0, 0, 1]]))
    np.testing.assert_array_equal(split.corner_item, [0, 0, 0, 0, 1])
    np.testing.assert_array_equal(split.item_vertex, [0, 0])
    np.testing.assert_allclose(split.item_normals[1], cn[4], atol=1e-7)


def test_mismatched_input_is_refused():
    _, cv, cn, vn = flat_cube()
    with pytest.raises(ValueError, match="corner data do not match"):
        split_corners(cv, cn[:-1], vn)
    with pytest.raises(ValueError, match="corner data do not match"):
        split_corners(cv + 8, cn, vn)
