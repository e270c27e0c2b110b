"""Closed-form checks of the skinning core (no Blender)."""

from __future__ import annotations

import numpy as np
import pytest

from hybrid_skin.core.dualquat import (
    bone_dual_quaternions,
    dual_quaternion_to_matrix,
    quaternion_from_matrix,
    quaternion_to_matrix,
    rigid_to_dual_quaternion,
)
from hybrid_skin.core.skinning import SkinBinding, bone_palette, skin, skin_matrices


def rotation(axis, angle: float) -> np.ndarray:
    axis = np.asarray(axis, float) / np.linalg.norm(axis)
    half = angle / 2
    return quaternion_to_matrix(np.r_[np.cos(half), np.sin(half) * axis])


def rigid(axis, angle: float, translation=(0, 0, 0), pivot=(0, 0, 0)) -> np.ndarray:
    """4×4 rotation about ``pivot`` followed by ``translation``."""
    m = np.eye(4)
    r = rotation(axis, angle)
    m[:3, :3] = r
    m[:3, 3] = np.asarray(pivot) - r @ np.asarray(pivot) + np.asarray(translation)
    return m


def tube(rings: int = 41, segments: int = 32, radius: float = 0.2, length: float = 2.0):
    """Open tube along +Y, two bones jointed at y = 1 with a linear blend zone of width 0.4."""
    y = np.linspace(0.0, length, rings)
    a = np.linspace(0.0, 2 * np.pi, segments, endpoint=False)
    yy, aa = np.meshgrid(y, a, indexing="ij")
    pos = np.stack([radius * np.cos(aa), yy, radius * np.sin(aa)], -1).reshape(-1, 3)
    nrm = np.stack([np.cos(aa), np.zeros_like(aa), np.sin(aa)], -1).reshape(-1, 3)
    t = np.clip((pos[:, 1] - 0.8) / 0.4, 0.0, 1.0)
    weights = np.stack([1 - t, t], -1).astype(np.float32)
    binding = SkinBinding(
        np.tile(np.array([[0, 1]], np.int32), (len(pos), 1)), weights, np.ones(len(pos), np.float32)
    )
    rest = np.stack([np.eye(4), np.eye(4)])
    rest[1, :3, 3] = (0.0, 1.0, 0.0)
    return pos.astype(np.float32), nrm.astype(np.float32), binding, rest, (rings, segments)


def test_quaternion_round_trip_is_canonical():
    rng = np.random.default_rng(3)
    q = rng.normal(size=(200, 4))
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    back = quaternion_from_matrix(quaternion_to_matrix(q))
    np.testing.assert_allclose(back, np.where(q[:, :1] < 0, -q, q), atol=1e-12)
    assert np.all(back[:, 0] >= 0)


def test_dual_quaternion_round_trip_and_known_value():
    m = rigid((0, 0, 1), np.pi / 2, translation=(1, 2, 3))
    real, dual = rigid_to_dual_quaternion(m)
    np.testing.assert_allclose(real, [np.cos(np.pi / 4), 0, 0, np.sin(np.pi / 4)], atol=1e-12)
    # dual = 0.5 * (0, t) * real
    np.testing.assert_allclose(np.dot(real, dual), 0.0, atol=1e-12)
    np.testing.assert_allclose(dual_quaternion_to_matrix(real, dual), m, atol=1e-12)


def test_rest_pose_is_identity():
    pos, nrm, binding, rest, _ = tube()
    pal = bone_palette(np.stack([np.eye(4)] * 2), rest)
    for f in (0.0, 0.5, 1.0):
        p, n = skin(pos, binding, pal, f, nrm)
        np.testing.assert_allclose(p, pos, atol=1e-6)
        np.testing.assert_allclose(n, nrm, atol=1e-6)


def test_single_influence_is_the_bone_rigid_motion():
    rng = np.random.default_rng(5)
    pos = rng.normal(size=(500, 3)).astype(np.float32)
    nrm = rng.normal(size=(500, 3)).astype(np.float32)
    nrm /= np.linalg.norm(nrm, axis=1, keepdims=True)
    bones = np.stack([rigid((1, 2, 3), 2.5, (0.3, -1, 2)), rigid((0, 1, 0), -1.0, (1, 1, 1))])
    idx = rng.integers(0, 2, size=(500, 1)).astype(np.int32)
    binding = SkinBinding(idx, np.ones((500, 1), np.float32), np.ones(500, np.float32))
    pal = bone_palette(bones, np.stack([np.eye(4)] * 2))
    expect_p = np.einsum("nij,nj->ni", bones[idx[:, 0], :3, :3], pos) + bones[idx[:, 0], :3, 3]
    expect_n = np.einsum("nij,nj->ni", bones[idx[:, 0], :3, :3], nrm)
    for f in (0.0, 0.37, 1.0):
        p, n = skin(pos, binding, pal, f, nrm)
        np.testing.assert_allclose(p, expect_p, atol=2e-5)
        np.testing.assert_allclose(n, expect_n, atol=2e-5)


def test_twist_180_midpoint_collapses_under_lbs_and_keeps_radius_under_dqs():
    pos, nrm, binding, rest, (rings, segments) = tube()
    # Twist the second bone 180° about its own axis (Y through x = z = 0).
    pal = bone_palette(np.stack([np.eye(4), rigid((0, 1, 0), np.pi)]), rest)
    mid = np.isclose(pos[:, 1], 1.0)
    assert mid.sum() == segments
    lbs, _ = skin(pos, binding, pal, 0.0)
    dqs, _ = skin(pos, binding, pal, 1.0)
    half, _ = skin(pos, binding, pal, 0.5)
    radius = lambda p: np.linalg.norm(p[mid][:, [0, 2]], axis=1)  # noqa: E731
    np.testing.assert_allclose(radius(lbs), 0.0, atol=1e-6)  # candy wrapper: full collapse
    np.testing.assert_allclose(radius(dqs), 0.2, rtol=1e-5)  # DQS keeps the radius
    np.testing.assert_allclose(radius(half), 0.1, rtol=1e-5)  # the hybrid is the linear mix of positions


def test_bend_hybrid_is_linear_mix_and_dqs_bulges_less_volume_loss():
    pos, nrm, binding, rest, _ = tube()
    pal = bone_palette(np.stack([np.eye(4), rigid((0, 0, 1), np.radians(90), pivot=(0, 1, 0))]), rest)
    lbs, _ = skin(pos, binding, pal, 0.0)
    dqs, _ = skin(pos, binding, pal, 1.0)
    f = np.random.default_rng(1).random(len(pos)).astype(np.float32)
    mix, _ = skin(pos, binding, pal, f)
    np.testing.assert_allclose(mix, (1 - f[:, None]) * lbs + f[:, None] * dqs, atol=1e-6)
    assert np.abs(lbs - dqs).max() > 0.02  # the two methods really differ here


def surface_normals_by_finite_differences(p: np.ndarray, shape: tuple[int, int]) -> np.ndarray:
    """Normals of a (rings × segments) tube from central differences of positions."""
    grid = p.reshape(*shape, 3)
    du = np.gradient(grid, axis=0)
    dv = (np.roll(grid, -1, axis=1) - np.roll(grid, 1, axis=1)) / 2
    n = np.cross(du, dv).reshape(-1, 3)
    return n / np.linalg.norm(n, axis=1, keepdims=True)


@pytest.mark.parametrize("f", [0.0, 0.5, 1.0])
def test_normals_are_unit_and_match_finite_differences(f):
    """cofactor(M)·n is the exact normal where M is locally constant (one bone rules).

    Inside a blend zone the true Jacobian is M + (∂M/∂x)·x; the blended-matrix normal (Yin 2019
    Algorithm 1, and every GPU skinner) ignores the weight-gradient term, so it deviates there by an
    amount that grows with the bend angle and shrinks with a wider, smoother blend. Both are pinned.
    """
    pos, nrm, binding, rest, shape = tube(rings=161, segments=256)
    t = np.clip((pos[:, 1] - 0.2) / 1.6, 0.0, 1.0)
    t = t * t * (3 - 2 * t)  # smooth weights over a wide zone: a smooth surface
    binding = SkinBinding(
        binding.bone_indices, np.stack([1 - t, t], -1).astype(np.float32), binding.influence
    )
    pal = bone_palette(np.stack([np.eye(4), rigid((0, 0, 1), np.radians(30), pivot=(0, 1, 0))]), rest)
    p, n = skin(pos, binding, pal, f, nrm)
    np.testing.assert_allclose(np.linalg.norm(n, axis=1), 1.0, atol=1e-6)
    fd = surface_normals_by_finite_differences(p.astype(np.float64), shape)
    interior = np.ones(shape, bool)
    interior[[0, -1], :] = False
    angle = np.degrees(np.arccos(np.clip(np.sum(fd * n, 1), -1, 1)))[interior.ravel()]
    one_bone = ((pos[:, 1] < 0.2) | (pos[:, 1] > 1.8))[interior.ravel()]
    assert one_bone.sum() > 1000
    assert angle[one_bone].max() < 0.05  # measured 0.016°: finite-difference noise only
    assert angle.max() < 10.0  # measured 9.2–9.5° at the blend zone's steepest weight gradient
    assert angle.mean() < 3.0  # measured 2.8°


def test_scaled_bone_single_influence_matches_its_matrix_under_dqs():
    """Blender folds scale at the vertex into the translation: one bone ⇒ exactly its matrix."""
    m = rigid((1, 0, 0), 0.7, (0.5, 0, 0))
    m[:3, :3] = m[:3, :3] @ np.diag([1.5, 0.6, 1.2])
    pos = np.random.default_rng(2).normal(size=(100, 3)).astype(np.float32)
    binding = SkinBinding(
        np.zeros((100, 1), np.int32), np.ones((100, 1), np.float32), np.ones(100, np.float32)
    )
    pal = bone_palette(m[None], np.eye(4)[None])
    assert pal.pivot is not None
    p, _ = skin(pos, binding, pal, 1.0)
    np.testing.assert_allclose(p, pos @ m[:3, :3].T + m[:3, 3], atol=2e-5)


def test_antipodal_dual_quaternions_are_flipped_against_the_running_sum():
    # Bone 1's quaternion is stored with w < 0 relative to bone 0 (a rotation by 350° ≡ -10°).
    q0 = np.eye(4)
    q1 = rigid((0, 0, 1), np.radians(-10))
    dq = bone_dual_quaternions(np.stack([q0, q1]), np.stack([np.eye(4)] * 2))
    pal = bone_palette(np.stack([q0, q1]), np.stack([np.eye(4)] * 2))
    pal = pal._replace(
        real=pal.real * np.array([[1], [-1]], np.float32), dual=pal.dual * np.array([[1], [-1]], np.float32)
    )
    assert np.dot(pal.real[0], pal.real[1]) < 0 and np.all(dq.real[:, 0] > 0)
    pos = np.array([[1.0, 0.0, 0.0]], np.float32)
    binding = SkinBinding(
        np.array([[0, 1]], np.int32), np.array([[0.5, 0.5]], np.float32), np.ones(1, np.float32)
    )
    p, _ = skin(pos, binding, pal, 1.0)
    np.testing.assert_allclose(p[0], [np.cos(np.radians(-5)), np.sin(np.radians(-5)), 0.0], atol=1e-6)


def test_influence_blends_with_identity():
    pos, nrm, binding, rest, _ = tube()
    pal = bone_palette(np.stack([np.eye(4), rigid((0, 0, 1), np.radians(90), pivot=(0, 1, 0))]), rest)
    full, _ = skin(pos, binding, pal, 0.5)
    a = np.linspace(0, 1, len(pos)).astype(np.float32)
    masked, _ = skin(pos, SkinBinding(binding.bone_indices, binding.weights, a), pal, 0.5)
    np.testing.assert_allclose(masked, pos + a[:, None] * (full - pos), atol=1e-6)
    m = skin_matrices(pos, SkinBinding(binding.bone_indices, binding.weights, a), pal, 0.5)
    np.testing.assert_allclose(np.einsum("nij,nj->ni", m[:, :, :3], pos) + m[:, :, 3], masked, atol=1e-6)


def test_object_transform_round_trip():
    pos, nrm, binding, rest, _ = tube()
    pal = bone_palette(np.stack([np.eye(4), rigid((0, 0, 1), np.radians(70), pivot=(0, 1, 0))]), rest)
    t2a = rigid((1, 1, 0), 0.4, (1, 2, 3)) @ np.diag([2.0, 0.5, 1.5, 1.0])
    # Skinning in armature space by hand, then back: must equal skin(..., target_to_armature).
    p_arm = pos @ t2a[:3, :3].T + t2a[:3, 3]
    ref, _ = skin(p_arm, binding, pal, 0.5)
    inv = np.linalg.inv(t2a)
    ref = ref @ inv[:3, :3].T + inv[:3, 3]
    ours, n = skin(pos, binding, pal, 0.5, nrm, t2a)
    np.testing.assert_allclose(ours, ref, atol=1e-5)
    np.testing.assert_allclose(np.linalg.norm(n, axis=1), 1.0, atol=1e-5)


@pytest.mark.parametrize("factor", [0.0, 0.35, 1.0, "per-vertex"])
@pytest.mark.parametrize("scaled", [False, True])
def test_normals_path_equals_the_cofactor_of_the_skinning_matrices(factor, scaled):
    # skin() builds only the 3x3 part for normals; skin_matrices() builds the full per-vertex matrices.
    pos, nrm, binding, rest, _ = tube()
    bent = rigid((0, 0, 1), np.radians(80), pivot=(0, 1, 0))
    if scaled:
        bent[:3, :3] *= np.array([1.3, 0.7, 1.1])
    pal = bone_palette(np.stack([rigid((1, 0, 0), 0.3, (0.1, 0.2, 0)), bent]), rest)
    f = np.linspace(0, 1, len(pos)).astype(np.float32) if factor == "per-vertex" else factor
    masked = np.linspace(0.2, 1, len(pos), dtype=np.float32)
    partial = SkinBinding(binding.bone_indices, binding.weights, masked)
    for b in (binding, partial):
        p, n = skin(pos, b, pal, f, nrm)
        m = skin_matrices(pos, b, pal, f).astype(np.float64)
        r0, r1, r2 = m[:, 0, :3], m[:, 1, :3], m[:, 2, :3]
        cof = np.stack([np.cross(r1, r2), np.cross(r2, r0), np.cross(r0, r1)], 1)
        ref = np.einsum("nij,nj->ni", cof, nrm)
        ref /= np.linalg.norm(ref, axis=1, keepdims=True)
        np.testing.assert_allclose(n, ref, atol=2e-6)
        np.testing.assert_allclose(p, np.einsum("nij,nj->ni", m[:, :, :3], pos) + m[:, :, 3], atol=2e-6)
        np.testing.assert_array_equal(skin(pos, b, pal, f)[0], p)  # same positions with or without normals


def test_running_sum_flips_follow_each_vertex_on_many_vertices():
    # Per vertex the second bone is either a copy of bone 0 (no flip) or a -10° rotation stored with
    # w < 0 (flip): an irregular flip mask over many vertices, four influences per vertex (two padding)
    # as on real rigs; numpy 2.4 got in-place masked ufuncs on such float32 columns wrong.
    n = 301
    turn = rigid((0, 0, 1), np.radians(-10))
    pal = bone_palette(np.stack([np.eye(4), turn, np.eye(4)]), np.stack([np.eye(4)] * 3))
    pal = pal._replace(
        real=pal.real * np.array([[1], [-1], [1]], np.float32),
        dual=pal.dual * np.array([[1], [-1], [1]], np.float32),
    )
    rng = np.random.default_rng(11)
    second = np.where(rng.random(n) < 0.5, 1, 2).astype(np.int32)
    t = rng.uniform(0.05, 0.95, n)
    binding = SkinBinding(
        np.stack([np.zeros(n, np.int32), second, np.zeros(n, np.int32), np.zeros(n, np.int32)], 1),
        np.stack([1 - t, t, np.zeros(n), np.zeros(n)], 1).astype(np.float32),
        np.ones(n, np.float32),
    )
    pos = np.tile(np.array([[1.0, 0.0, 0.0]], np.float32), (n, 1))
    # nlerp of identity and the -10° rotation with weight t: angle 2·atan2(t·sin(-5°), 1 - t + t·cos 5°)
    half = np.radians(5.0)
    angle = np.where(second == 1, 2 * np.arctan2(-t * np.sin(half), 1 - t + t * np.cos(half)), 0.0)
    expected = np.stack([np.cos(angle), np.sin(angle), np.zeros(n)], 1)
    p, _ = skin(pos, binding, pal, 1.0)
    np.testing.assert_allclose(p, expected, atol=1e-6)
    m = skin_matrices(pos, binding, pal, 1.0)
    np.testing.assert_allclose(np.einsum("nij,nj->ni", m[:, :, :3], pos) + m[:, :, 3], expected, atol=1e-6)


def test_scale_within_blenders_orthonormal_tolerance_is_rigid():
    # Blender 4.x/5.x: |column² − 1| ≤ 1e-5 is orthonormal, so 1 + 3e-6 keeps the bone rigid; 1 + 3e-5 not.
    turn = rigid((1, 2, 0), 0.8, (0.2, 0.1, 0))
    for scale, is_rigid in ((1 + 3e-6, True), (1 + 3e-5, False)):
        m = turn.copy()
        m[:3, :3] *= scale
        dq = bone_dual_quaternions(m[None], np.eye(4)[None])
        assert (dq.pivot is None) == is_rigid


def test_sheared_stretched_bone_rotation_follows_blenders_second_orthogonalisation_case():
    # A child of a bone scaled (3, 0.4, 1), turned −45° and tilted 40°: its unit Y axis has a dot product
    # ≥ 1 with its unscaled X column, so Blender's orthogonalize_m4(·, 1) keeps the YZ plane (X = Y × Z)
    # instead of the XY plane.
    m = np.eye(4)
    m[:3, :3] = np.diag([3.0, 0.4, 1.0]) @ rotation((0, 0, 1), np.radians(-45)) @ rotation((1, 0, 0), 0.7)
    y = m[:3, 1] / np.linalg.norm(m[:3, 1])
    assert y @ m[:3, 0] >= 1.0
    x = np.cross(y, m[:3, 2])
    x /= np.linalg.norm(x)
    expected = np.stack([x, y, np.cross(x, y)], -1)
    dq = bone_dual_quaternions(m[None], np.eye(4)[None])
    np.testing.assert_allclose(quaternion_to_matrix(dq.real[0]), expected, atol=1e-12)
    # the first case would have kept X in the XY plane: a different rotation
    z_first = np.cross(m[:3, 0], y)
    z_first /= np.linalg.norm(z_first)
    assert np.abs(np.cross(y, z_first) - x).max() > 0.1
