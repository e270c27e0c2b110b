"""A bone scaled to 0 (game rigs hide parts that way): finite results by Blender's rules, in closed form.

Blender's ``mat4_to_dquat`` splits a scaled bone into a rotation and a scale matrix; for a bone scaled to 0
the orthogonalised axes are zero vectors (``normalize_v3`` leaves them zero) and ``mat3_to_quat`` of a zero
matrix is no rotation (Blender #101848). The scale matrix then collapses the vertex onto the point the bone
shrinks to. The Blender tests (tests/robustness/test_skin_zero_scale.py) compare the same with Blender.
"""

from __future__ import annotations

import numpy as np
import pytest

from hybrid_skin.core import autofactor
from hybrid_skin.core.dualquat import (
    bone_dual_quaternions,
    dual_quaternion_to_matrix,
    quaternion_from_matrix,
    quaternion_to_matrix,
)
from hybrid_skin.core.skinning import bone_palette, skin
from tests.core.test_skinning import rigid, tube

CENTRE = np.array([0.3, 1.4, -0.2])


def collapse(centre=CENTRE) -> np.ndarray:
    """A deform matrix that scales everything to 0 about ``centre``: every point goes to ``centre``."""
    m = np.zeros((4, 4))
    m[:3, 3] = centre
    m[3, 3] = 1.0
    return m


def test_zero_matrix_is_no_rotation_and_degenerate_matrices_take_blenders_branch():
    np.testing.assert_array_equal(quaternion_from_matrix(np.zeros((3, 3))), [1.0, 0.0, 0.0, 0.0])
    # Blender's mat3_normalized_to_quat_fast picks its branch by signs (m22 >= 0, m00 < -m11: the Z
    # branch), not by the largest candidate (which would be the Y branch here): 180° about Z.
    degenerate = np.diag([-0.5, 0.0, 0.0])
    blender = quaternion_from_matrix(degenerate, blender_branch=True)
    np.testing.assert_allclose(blender, [0, 0, 0, 1], atol=1e-12)
    rng = np.random.default_rng(5)
    q = rng.normal(size=(1000, 4))
    rotations = quaternion_to_matrix(q)  # for a rotation both choices give the same quaternion
    np.testing.assert_allclose(
        quaternion_from_matrix(rotations, blender_branch=True), quaternion_from_matrix(rotations), atol=1e-12
    )


def test_bone_scaled_to_zero_has_no_rotation_and_a_finite_scale_fold():
    rest = np.eye(4)
    rest[:3, 3] = (0.0, 1.0, 0.0)
    dq = bone_dual_quaternions(collapse()[None], rest[None])
    assert all(np.isfinite(a).all() for a in dq)
    np.testing.assert_array_equal(dq.real[0], [1.0, 0.0, 0.0, 0.0])
    # dual(p) = dual + pivot @ p must carry p to CENTRE: translation CENTRE - p with no rotation.
    p = np.array([0.1, 1.7, 0.05])
    moved = dual_quaternion_to_matrix(dq.real[0], dq.dual[0] + dq.pivot[0] @ p)
    np.testing.assert_allclose(moved[:3, :3] @ p + moved[:3, 3], CENTRE, atol=1e-12)


@pytest.mark.parametrize("factor", [0.0, 0.5, 1.0])
def test_blend_with_a_collapsed_bone_is_the_straight_line_to_its_centre(factor):
    """Bone 0 at rest, bone 1 scaled to 0: a vertex with weight t on bone 1 goes to p + t (c - p) whatever
    the factor (both bones have no rotation, so LBS and DQS agree); a vertex on bone 1 alone goes to c."""
    pos, nrm, binding, rest, _ = tube()
    palette = bone_palette(np.stack([np.eye(4), collapse()]), rest)
    got, normals = skin(pos, binding, palette, factor, nrm)
    t = binding.weights[:, 1:2].astype(np.float64)
    np.testing.assert_allclose(got, pos + t * (CENTRE - pos), atol=2e-6)
    assert np.isfinite(normals).all()
    alone = got[binding.weights[:, 1] == 1.0]
    assert len(alone) > 0
    np.testing.assert_allclose(alone, np.broadcast_to(CENTRE, alone.shape), atol=2e-6)


def test_dqs_blend_of_a_turned_bone_and_a_collapsed_one_in_closed_form():
    """Bone 0 turned 80° about Z, bone 1 scaled to 0: DQS blends (q0, 0) with (1, ½ (0, c - p))."""
    pos, nrm, binding, rest, _ = tube()
    turned = rigid((0, 0, 1), np.radians(80.0))
    palette = bone_palette(np.stack([turned, collapse()]), rest)
    got = skin(pos, binding, palette, 1.0)[0]
    q0 = quaternion_from_matrix(turned[:3, :3])
    w = binding.weights.astype(np.float64)
    expected = np.empty_like(pos, dtype=np.float64)
    for i, p in enumerate(pos.astype(np.float64)):
        real = w[i, 0] * q0 + w[i, 1] * np.array([1.0, 0, 0, 0])
        dual = w[i, 1] * 0.5 * np.r_[0.0, CENTRE - p]
        m = dual_quaternion_to_matrix(real, dual)
        expected[i] = m[:3, :3] @ p + m[:3, 3]
    np.testing.assert_allclose(got, expected, atol=5e-6)
    assert np.abs(got - skin(pos, binding, palette, 0.0)[0]).max() > 0.05  # the factor matters here


def test_auto_factor_data_is_finite_under_a_collapsed_parent():
    """The Auto factor relates each bone to its parent (inv(D_parent) @ D): a parent scaled to 0 has no
    inverse, so it relates to the parent's rotation (none), never to NaN."""
    rest = np.stack([np.eye(4)] * 3)
    rest[1, :3, 3], rest[2, :3, 3] = (0, 1, 0), (0, 2, 0)
    deform = np.stack([rigid((1, 0, 0), 0.4), collapse(), collapse()])
    data = autofactor.bone_factor_data(deform, rest, np.array([-1, 0, 1]))
    assert np.isfinite(data).all()
    # A collapsed bone reads no rotation relative to its parent: it accumulates its parent's twist and swing
    # (and the root's swing of 0.4 about X, at its head, the origin).
    np.testing.assert_allclose(data[0], [0.0, 0.4, 0.0, 0.0, 0.4, 0.0, 0.0, 0.0], atol=1e-6)
    np.testing.assert_allclose(data[1], data[0], atol=1e-6)
    np.testing.assert_allclose(data[2], data[1], atol=1e-6)
