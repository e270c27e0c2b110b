"""Canonical limb geometry: counts, closed-form volume and normals, weights, and pose composition."""

from __future__ import annotations

import numpy as np
import pytest

from hybrid_skin.core.primitives import (
    CANONICAL_POSES,
    bend,
    bone_chain,
    canonical_pose,
    capped_cylinder,
    chain_deform_matrices,
    joint_blend_weights,
    make_limb,
    pose_chain,
    rotation_matrix,
    twist,
    vertex_normals,
)

RINGS, SEGMENTS, RADIUS, LENGTH = 9, 12, 0.5, 4.0


def _apply(m: np.ndarray, p: np.ndarray) -> np.ndarray:
    return m[:3, :3] @ p + m[:3, 3]


def _volume(p: np.ndarray, tri: np.ndarray) -> float:
    return float(np.sum(np.einsum("ij,ij->i", p[tri[:, 0]], np.cross(p[tri[:, 1]], p[tri[:, 2]]))) / 6.0)


def test_cylinder_counts_and_closed_surface() -> None:
    mesh = capped_cylinder(RADIUS, LENGTH, RINGS, SEGMENTS)
    assert mesh.positions.shape == (RINGS * SEGMENTS + 2, 3)
    assert mesh.triangles.shape == (2 * (RINGS - 1) * SEGMENTS + 2 * SEGMENTS, 3)
    tri = mesh.triangles
    edges = np.sort(np.concatenate([tri[:, [0, 1]], tri[:, [1, 2]], tri[:, [2, 0]]]), 1)
    _, counts = np.unique(edges, axis=0, return_counts=True)
    assert np.all(counts == 2), "every edge must be shared by exactly two triangles"
    np.testing.assert_array_equal(mesh.ring[:SEGMENTS], 0)
    np.testing.assert_array_equal(mesh.ring[-2:], -1)


def test_cylinder_volume_is_the_prism_volume() -> None:
    # Closed form: a regular S-gon of circumradius r has area S/2 r^2 sin(2π/S); outward winding → positive.
    mesh = capped_cylinder(RADIUS, LENGTH, RINGS, SEGMENTS)
    expected = 0.5 * SEGMENTS * RADIUS**2 * np.sin(2 * np.pi / SEGMENTS) * LENGTH
    np.testing.assert_allclose(_volume(mesh.positions, mesh.triangles), expected, rtol=1e-12)


def test_cylinder_rings_and_normals() -> None:
    mesh = capped_cylinder(RADIUS, LENGTH, RINGS, SEGMENTS)
    side = mesh.positions[: RINGS * SEGMENTS].reshape(RINGS, SEGMENTS, 3)
    np.testing.assert_allclose(np.linalg.norm(side[..., [0, 2]], axis=-1), RADIUS, rtol=1e-12)
    np.testing.assert_allclose(side[:, 0, 1], np.linspace(0, LENGTH, RINGS), atol=1e-12)
    # Interior rings: the smooth normal is radial (by symmetry of the four adjacent quads).
    inner = slice(SEGMENTS, (RINGS - 1) * SEGMENTS)
    radial = mesh.positions[inner] * [1.0, 0.0, 1.0] / RADIUS
    np.testing.assert_allclose(mesh.normals[inner], radial, atol=1e-12)
    np.testing.assert_allclose(mesh.normals[-2:], [[0, -1, 0], [0, 1, 0]], atol=1e-12)
    np.testing.assert_allclose(np.linalg.norm(mesh.normals, axis=1), 1.0, rtol=1e-12)


def test_vertex_normals_of_unreferenced_vertex_is_zero() -> None:
    p = np.array([[0.0, 0, 0], [1, 0, 0], [0, 1, 0], [5, 5, 5]])
    n = vertex_normals(p, np.array([[0, 1, 2]]))
    np.testing.assert_allclose(n, [[0, 0, 1], [0, 0, 1], [0, 0, 1], [0, 0, 0]], atol=1e-15)


def test_bone_chain_rest_frames() -> None:
    chain = bone_chain(3, 6.0)
    np.testing.assert_array_equal(chain.parents, [-1, 0, 1])
    np.testing.assert_allclose(chain.heads, [[0, 0, 0], [0, 2, 0], [0, 4, 0]], atol=1e-15)
    np.testing.assert_allclose(chain.tails, [[0, 2, 0], [0, 4, 0], [0, 6, 0]], atol=1e-15)
    np.testing.assert_allclose(chain.rest[:, :3, 1], np.tile([0.0, 1.0, 0.0], (3, 1)), atol=1e-15)
    rolled = bone_chain(3, 6.0, roll=np.pi / 2)
    np.testing.assert_allclose(rolled.rest[:, :3, 1], chain.rest[:, :3, 1], atol=1e-15)  # roll keeps Y
    np.testing.assert_allclose(rolled.rest[0, :3, 0], [0, 0, -1], atol=1e-15)  # X turned about +Y


def test_blend_weights_are_a_linear_ramp_around_each_joint() -> None:
    chain = bone_chain(3, 6.0)
    y = np.array([0.0, 1.4, 1.5, 1.75, 2.0, 2.25, 2.5, 3.0, 4.0, 4.5, 6.0])
    idx, w = joint_blend_weights(np.column_stack([np.zeros_like(y), y, np.zeros_like(y)]), chain, 1.0)
    child = np.array([0.0, 0.0, 0.0, 0.25, 0.5, 0.75, 1.0, 1.0, 0.5, 1.0, 1.0])
    np.testing.assert_allclose(w[:, 1], child, atol=1e-15)
    np.testing.assert_allclose(w.sum(1), 1.0, atol=1e-15)
    np.testing.assert_array_equal(idx[:, 0], [0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1])
    np.testing.assert_array_equal(idx[:, 1], idx[:, 0] + 1)
    with pytest.raises(ValueError):
        joint_blend_weights(np.zeros((1, 3)), chain, 2.5)


def test_limb_joint_ring_is_half_half() -> None:
    limb = make_limb(2)
    joint_ring = limb.mesh.ring == 20  # 20 rings per bone: ring 20 is the joint at y = 2
    np.testing.assert_allclose(limb.mesh.positions[joint_ring, 1], 2.0, atol=1e-12)
    np.testing.assert_allclose(limb.weights[joint_ring], 0.5, atol=1e-15)
    binding = limb.binding()
    assert binding.weights.dtype == np.float32 and binding.bone_indices.dtype == np.int32


def test_rotation_helpers() -> None:
    np.testing.assert_allclose(rotation_matrix((0, 0, 2), np.pi / 2) @ [1, 0, 0], [0, 1, 0], atol=1e-15)
    np.testing.assert_allclose(bend(np.pi / 2) @ [0, 1, 0], [0, 0, 1], atol=1e-15)  # +X bend: Y → +Z
    np.testing.assert_allclose(bend(np.pi / 2, "Z") @ [0, 1, 0], [-1, 0, 0], atol=1e-15)
    np.testing.assert_allclose(twist(np.pi) @ [1, 2, 3], [-1, 2, -3], atol=1e-14)
    r = rotation_matrix((1, 2, 3), 0.7)
    np.testing.assert_allclose(r.T @ r, np.eye(3), atol=1e-14)
    np.testing.assert_allclose(np.linalg.det(r), 1.0, rtol=1e-14)


def test_bend_pivots_about_the_joint() -> None:
    chain = bone_chain(2, 4.0)
    theta = np.radians(120.0)
    d = chain_deform_matrices(chain, np.stack([np.eye(3), bend(theta)]))
    np.testing.assert_allclose(d[0], np.eye(4), atol=1e-15)
    joint, tail = np.array([0.0, 2.0, 0.0]), np.array([0.0, 4.0, 0.0])
    np.testing.assert_allclose(_apply(d[1], joint), joint, atol=1e-14)
    bent_tail = joint + 2.0 * np.array([0, np.cos(theta), np.sin(theta)])
    np.testing.assert_allclose(_apply(d[1], tail), bent_tail, atol=1e-14)


def test_twist_composes_down_the_chain() -> None:
    cp = canonical_pose("bend_120_twist_170")
    chain, d = cp.limb.chain, cp.deform
    posed = pose_chain(chain.rest, chain.parents, np.stack(CANONICAL_POSES["bend_120_twist_170"]))
    np.testing.assert_allclose(posed @ np.linalg.inv(chain.rest), d, atol=1e-14)
    # Bone 2's head follows bone 1's tail, and a pure twist keeps bone 2's axis along bone 1's axis.
    np.testing.assert_allclose(_apply(d[2], chain.heads[2]), _apply(d[1], chain.tails[1]), atol=1e-14)
    np.testing.assert_allclose(posed[2, :3, 1], posed[1, :3, 1], atol=1e-14)
    # Relative to bone 1, bone 2 turns 170° about its axis: X maps to (cos 170°, 0, -sin 170°) locally.
    rel = np.linalg.solve(d[1], d[2])[:3, :3]
    a = np.radians(170.0)
    np.testing.assert_allclose(rel @ [1, 0, 0], [np.cos(a), 0, -np.sin(a)], atol=1e-14)
    assert cp.bent_joints == (1,) and cp.twisted_joints == (2,)
    assert chain_deform_matrices(chain, np.tile(np.eye(3), (3, 1, 1)), np.float32).dtype == np.float32


def test_canonical_poses_metadata() -> None:
    assert canonical_pose("bend_90").bent_joints == (1,)
    assert canonical_pose("twist_180").twisted_joints == (1,)
    assert canonical_pose("twist_180").bent_joints == ()


def test_pose_chain_rejects_children_before_parents() -> None:
    chain = bone_chain(2, 4.0)
    with pytest.raises(ValueError):
        pose_chain(chain.rest, np.array([1, -1]), np.tile(np.eye(3), (2, 1, 1)))
