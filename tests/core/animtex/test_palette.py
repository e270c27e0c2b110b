"""The bone palette of the bone texture kinds, from a bind's arrays (core.animtex.palette)."""

from __future__ import annotations

import numpy as np

from hybrid_skin.core.animtex.palette import (
    BONE_SLOTS,
    REST_BONE,
    palette_names,
    palette_pivots,
    skinning_matrices,
    vertex_influences,
)
from hybrid_skin.core.binding import DeformBones
from hybrid_skin.core.skinning import SkinBinding


def bones(segments: tuple[int, ...]) -> DeformBones:
    count = len(segments)
    zeros = np.zeros(count)
    return DeformBones(
        names=tuple(f"B{i}" for i in range(count)),
        rest=np.tile(np.eye(4), (count, 1, 1)),
        segments=np.asarray(segments),
        length=np.ones(count),
        head=np.zeros((count, 3)),
        tail=np.zeros((count, 3)),
        head_radius=zeros,
        tail_radius=zeros,
        envelope_distance=zeros,
        envelope_weight=zeros,
        envelope_multiply=np.zeros(count, dtype=bool),
        curved=np.zeros(count, dtype=bool),
    )


def test_names_list_segment_joints_and_the_rest_bone():
    assert palette_names(bones((1, 3)), rest_bone=False) == [
        "B0",
        "B1.bbone0",
        "B1.bbone1",
        "B1.bbone2",
        "B1.bbone3",
    ]
    assert palette_names(bones((1,)), rest_bone=True) == ["B0", REST_BONE]


def test_pivots_and_matrices_are_in_mesh_space():
    t2a = np.eye(4)
    t2a[:3, 3] = (1.0, 2.0, 3.0)  # mesh space = armature space shifted by -(1, 2, 3)
    rest = np.tile(np.eye(4), (2, 1, 1))
    rest[1, :3, 3] = (0.0, 0.0, 5.0)
    np.testing.assert_allclose(
        palette_pivots(rest, t2a, rest_bone=True), [[-1, -2, -3], [-1, -2, 2], [0, 0, 0]]
    )
    deform = np.tile(np.eye(4), (2, 1, 1))
    deform[1, :3, :3] = [[0, -1, 0], [1, 0, 0], [0, 0, 1]]  # 90° about z through the armature origin
    mats = skinning_matrices(deform, t2a, rest_bone=True)
    assert mats.shape == (3, 4, 4)
    np.testing.assert_allclose(mats[[0, 2]], np.tile(np.eye(4), (2, 1, 1)))
    mesh_point = np.array([1.0, 0.0, 0.0, 1.0])  # armature (2, 2, 3) → (-2, 2, 3) → mesh (-3, 0, 0)
    np.testing.assert_allclose(mats[1] @ mesh_point, [-3.0, 0.0, 0.0, 1.0])


def test_influences_keep_the_largest_four_renormalised_in_stored_order():
    idx = np.array([[0, 1, 2, 3, 4, 5], [2, 0, 0, 0, 0, 0], [0, 0, 0, 0, 0, 0]], dtype=np.int32)
    w = np.array([[0.05, 0.3, 0.1, 0.25, 0.2, 0.1], [1.0, 0, 0, 0, 0, 0], [0, 0, 0, 0, 0, 0]], np.float32)
    binding = SkinBinding(idx, w, np.array([1.0, 0.5, 0.0], dtype=np.float32))
    got_idx, got_w, cut = vertex_influences(binding, rest_bone=9)
    assert got_idx.shape == got_w.shape == (3, BONE_SLOTS) and cut == 1
    # vertex 0: 7 candidates (the rest bone gets 1 - influence = 0); the largest four, stored order kept
    np.testing.assert_array_equal(got_idx[0], [1, 2, 3, 4])  # 0.1 ties: the first stored one stays
    np.testing.assert_allclose(got_w[0], np.array([0.3, 0.1, 0.25, 0.2]) / 0.85, rtol=1e-6)
    # vertex 1: half skinned by the mask: half its own bone, half the identity rest bone
    np.testing.assert_array_equal(got_idx[1, [0, 3]], [2, 9])
    np.testing.assert_allclose(got_w[1], [0.5, 0.0, 0.0, 0.5])
    # vertex 2: unweighted: all on the rest bone
    np.testing.assert_allclose(got_w[2, got_idx[2] == 9].sum(), 1.0)
    _, without_rest, _ = vertex_influences(binding, rest_bone=-1)
    np.testing.assert_allclose(without_rest[1], [1.0, 0.0, 0.0, 0.0])  # renormalised over its own bone
    assert not without_rest[2].any()
