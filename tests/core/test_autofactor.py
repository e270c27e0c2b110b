"""Auto deform factor, part 1: the swing-twist decomposition, the per-bone data, and the "JOINT" profile (the
Auto of version 0.1, kept for files saved with it: its numbers are pinned here unchanged).
tests/core/test_autoround.py covers the round profiles."""

from __future__ import annotations

import numpy as np
import pytest

from hybrid_skin.core.autofactor import (
    ANGLE_EPSILON,
    SWING_FACTOR,
    TWIST_FACTOR,
    AutoPose,
    auto_factors,
    bone_factor_data,
    chain_sums,
    joint_factors,
    joint_vertex_factors,
    relative_rotations,
    swing_twist,
    vertex_factors,
)
from hybrid_skin.core.dualquat import quaternion_from_matrix, quaternion_to_matrix
from hybrid_skin.core.metrics import measure_pose, prepare_measures
from hybrid_skin.core.primitives import (
    CanonicalPose,
    bend,
    bone_chain,
    canonical_pose,
    chain_deform_matrices,
    rotation_matrix,
    twist,
)
from hybrid_skin.core.skinning import bone_palette, skin

RNG = np.random.default_rng(7)


def _rotvec_matrix(v: np.ndarray) -> np.ndarray:
    angle = np.linalg.norm(v)
    return np.eye(3) if angle < 1e-15 else rotation_matrix(v, angle)


def _auto(cp: CanonicalPose) -> np.ndarray:
    limb, chain = cp.limb, cp.limb.chain
    idx, w = limb.bone_indices, limb.weights
    return auto_factors(cp.deform, chain.rest, chain.parents, idx, w, profile="JOINT")


def _region(cp: CanonicalPose, child: int) -> np.ndarray:
    idx, w = cp.limb.bone_indices, cp.limb.weights
    return (np.where(idx == child - 1, w, 0).sum(1) > 1e-3) & (np.where(idx == child, w, 0).sum(1) > 1e-3)


def test_swing_twist_of_pure_rotations() -> None:
    axis = np.array([[0.0, 1.0, 0.0]] * 3)
    q = quaternion_from_matrix(np.stack([twist(1.2), bend(0.8), twist(np.radians(190.0))]))
    result = swing_twist(q, axis)
    np.testing.assert_allclose(result.twist, [1.2, 0.0, np.radians(-170.0)], atol=1e-12)  # shortest way round
    np.testing.assert_allclose(result.swing, [[0, 0, 0], [0.8, 0, 0], [0, 0, 0]], atol=1e-12)


def test_swing_times_twist_rebuilds_random_rotations() -> None:
    q = RNG.normal(size=(64, 4))
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    axis = RNG.normal(size=(64, 3))
    axis /= np.linalg.norm(axis, axis=1, keepdims=True)
    result = swing_twist(q, axis)
    np.testing.assert_allclose(np.einsum("bc,bc->b", result.swing, axis), 0.0, atol=1e-12)  # swing ⟂ axis
    assert np.all(np.abs(result.twist) <= np.pi + 1e-12)
    rebuilt = np.stack(
        [_rotvec_matrix(s) @ rotation_matrix(a, t) for s, a, t in zip(result.swing, axis, result.twist)]
    )
    np.testing.assert_allclose(rebuilt, quaternion_to_matrix(q), atol=1e-12)


def test_relative_rotations_are_the_pose_basis() -> None:
    cp = canonical_pose("bend_120_twist_170")
    q = relative_rotations(cp.deform, cp.limb.chain.parents)
    expected = np.stack([np.eye(3), bend(np.radians(120.0)), twist(np.radians(170.0))])
    np.testing.assert_allclose(quaternion_to_matrix(q), expected, atol=1e-12)


def test_joint_factor_mapping_closed_forms() -> None:
    chain = bone_chain(4, 8.0)
    basis = np.stack([np.eye(3), bend(np.radians(120)), twist(np.pi), twist(np.pi / 2) @ bend(np.pi / 2)])
    f = joint_factors(chain_deform_matrices(chain, basis), chain.rest, chain.parents)
    eps2, half_pi2 = ANGLE_EPSILON**2, (np.pi / 2) ** 2
    expected = [
        SWING_FACTOR,  # rest: nothing to decide, the bend default
        SWING_FACTOR,  # pure swing
        SWING_FACTOR + (TWIST_FACTOR - SWING_FACTOR) * np.pi**2 / (np.pi**2 + eps2),
        SWING_FACTOR
        + (TWIST_FACTOR - SWING_FACTOR) * half_pi2 / (2 * half_pi2 + eps2),  # 90° swing + 90° twist
    ]
    np.testing.assert_allclose(f, expected, rtol=1e-12)
    assert 0.4 <= f[1] <= 0.7 and f[2] >= 0.85


def test_factors_ignore_roll_and_armature_orientation() -> None:
    basis = np.stack([np.eye(3), bend(np.radians(70.0), (1.0, 0.0, 0.5)) @ twist(1.0), twist(-2.0)])
    plain = bone_chain(3, 6.0)
    rolled = bone_chain(3, 6.0, roll=0.9)
    f_plain = joint_factors(chain_deform_matrices(plain, basis), plain.rest, plain.parents)
    np.testing.assert_allclose(
        joint_factors(chain_deform_matrices(rolled, basis), rolled.rest, rolled.parents), f_plain, rtol=1e-12
    )
    g = np.eye(4)
    g[:3, :3] = rotation_matrix((0.3, -1.0, 2.0), 2.2)
    g[:3, 3] = (4.0, -1.0, 0.5)
    deform = chain_deform_matrices(plain, basis)
    moved = g @ deform @ np.linalg.inv(g)
    data, moved_data = (
        bone_factor_data(deform, plain.rest, plain.parents),
        bone_factor_data(moved, g @ plain.rest, plain.parents),
    )
    np.testing.assert_allclose(moved_data[:, 0], data[:, 0], atol=1e-6)  # twist is a scalar
    np.testing.assert_allclose(moved_data[:, 1:4], data[:, 1:4] @ g[:3, :3].T, atol=1e-6)  # swing turns along
    np.testing.assert_allclose(moved_data[:, 4], data[:, 4], atol=1e-6)  # the swing angle is a scalar
    # H = sum of angle x rest head: the heads move with g, so H turns and gains angle x translation.
    moved_h = data[:, 5:8].astype(np.float64) @ g[:3, :3].T + data[:, 4:5] * g[:3, 3]
    np.testing.assert_allclose(moved_data[:, 5:8], moved_h, atol=1e-5)


def test_bone_data_accumulates_down_any_bone_order() -> None:
    chain = bone_chain(40, 40.0)
    twists = RNG.uniform(-0.3, 0.3, 40)
    basis = np.stack([twist(t) for t in twists])
    deform = chain_deform_matrices(chain, basis)
    data = bone_factor_data(deform, chain.rest, chain.parents)
    np.testing.assert_allclose(data[:, 0], np.cumsum(twists), atol=1e-5)  # float32 output
    np.testing.assert_allclose(data[:, 1:], 0.0, atol=1e-6)
    order = RNG.permutation(40)  # children may now come before parents
    where = np.argsort(order)
    parents = np.where(chain.parents[order] >= 0, where[np.maximum(chain.parents[order], 0)], -1)
    shuffled = bone_factor_data(deform[order], chain.rest[order], parents)
    np.testing.assert_allclose(shuffled, data[order], atol=1e-6)


def test_vertex_factor_reads_the_joint_whatever_the_weights() -> None:
    cp = canonical_pose("bend_120_twist_170")
    chain = cp.limb.chain
    data = bone_factor_data(cp.deform, chain.rest, chain.parents)
    joint = joint_factors(cp.deform, chain.rest, chain.parents)
    w = np.linspace(0.01, 0.99, 25)
    for parent, child in ((0, 1), (1, 2)):
        idx = np.tile([parent, child], (w.size, 1))
        f = vertex_factors(AutoPose("JOINT", data), idx, np.column_stack([1 - w, w]))
        np.testing.assert_allclose(f, joint[child], atol=1e-6)
    single = joint_vertex_factors(
        data, np.array([[2, 0], [1, 1], [0, 2]]), np.array([[1.0, 0], [0.3, 0.7], [0, 0]])
    )
    np.testing.assert_allclose(single, SWING_FACTOR, atol=1e-7)  # one bone (or none): factor irrelevant


def test_pair_sums_equal_the_one_pass_shader_form() -> None:
    data = RNG.normal(size=(9, 4))
    idx = RNG.integers(0, 9, size=(200, 4))
    w = RNG.uniform(0.0, 1.0, size=(200, 4))
    w /= w.sum(1, keepdims=True)
    d = data[idx]  # one pass: W sum(w x^2) - (sum w x)^2 with W = 1
    t = np.einsum("nk,nk->n", w, d[..., 0] ** 2) - np.einsum("nk,nk->n", w, d[..., 0]) ** 2
    s = np.einsum("nk,nkc->n", w, d[..., 1:] ** 2) - (np.einsum("nk,nkc->nc", w, d[..., 1:]) ** 2).sum(1)
    pairs = (1.0 - (w**2).sum(1)) / 2.0
    expected = SWING_FACTOR + (TWIST_FACTOR - SWING_FACTOR) * t / (t + s + ANGLE_EPSILON**2 * pairs)
    np.testing.assert_allclose(joint_vertex_factors(data, idx, w), expected, rtol=1e-6)
    padded = joint_vertex_factors(
        data, np.column_stack([idx, np.full(200, 3)]), np.column_stack([w, np.zeros(200)])
    )
    np.testing.assert_allclose(padded, joint_vertex_factors(data, idx, w), rtol=1e-7)


@pytest.mark.parametrize(
    ("name", "low", "high"), [("bend_90", 0.4, 0.7), ("bend_120", 0.4, 0.7), ("twist_180", 0.85, 1.0)]
)
def test_auto_factor_on_single_joint_poses(name: str, low: float, high: float) -> None:
    cp = canonical_pose(name)
    f = _auto(cp)[_region(cp, 1)]
    assert f.size > 0 and low <= f.min() and f.max() <= high, f"{name}: AUTO factor {f.min()}..{f.max()}"


def test_joint_profile_beats_every_global_factor_on_bend_then_twist() -> None:
    """Issue acceptance: bend 120° at joint 1, twist 170° at joint 2. AUTO keeps the bulge at the bent joint
    no larger than f = 0.6 and the collapse at the twisted joint no larger than f = 0.9; no single global
    factor does both."""
    cp = canonical_pose("bend_120_twist_170")
    limb, chain = cp.limb, cp.limb.chain
    setup = prepare_measures(
        limb.mesh.positions,
        limb.mesh.triangles,
        chain.rest,
        chain.parents,
        chain.lengths,
        limb.bone_indices,
        limb.weights,
    )
    palette, binding = bone_palette(cp.deform, chain.rest), limb.binding()

    def measure(factor: float | np.ndarray) -> tuple[float, float]:
        m = measure_pose(setup, skin(limb.mesh.positions, binding, palette, factor)[0], cp.deform)
        return m.joint(1).bulge, m.joint(2).collapse

    auto = _auto(cp)
    assert 0.4 <= auto[_region(cp, 1)].max() <= 0.7 and auto[_region(cp, 2)].min() >= 0.85
    bulge_06, _ = measure(0.6)
    _, collapse_09 = measure(0.9)
    auto_bulge, auto_collapse = measure(auto)
    assert auto_bulge <= bulge_06 and auto_collapse <= collapse_09
    grid = [measure(float(f)) for f in np.linspace(0.0, 1.0, 101)]
    assert not any(b <= bulge_06 and c <= collapse_09 for b, c in grid)
    # AUTO's bent joint is exactly the seed's f = 0.55 mix (the twist leaves it untouched).
    np.testing.assert_allclose(auto_bulge, measure(SWING_FACTOR)[0], atol=2e-5)
    # Margins, so that a regression shows up before the criteria flip.
    assert auto_bulge < 0.9 * bulge_06 and auto_collapse < 0.05 * collapse_09


@pytest.mark.parametrize("shape", ["chain", "tree", "forest"])
def test_chain_sums_add_every_ancestor_in_any_bone_order(shape: str) -> None:
    """``chain_sums`` (pointer jumping) against a walk up each bone's chain, with parents listed after
    their children too (palette order need not be topological)."""
    rng = np.random.default_rng(7)
    count = 57
    if shape == "chain":
        parents = np.arange(count) - 1
    else:
        roots = 0.0 if shape == "tree" else 0.2
        parents = np.array([-1 if i == 0 or rng.random() < roots else int(rng.integers(0, i))
                            for i in range(count)])
    order = rng.permutation(count)
    where = np.argsort(order)
    shuffled = np.where(parents[order] >= 0, where[np.maximum(parents[order], 0)], -1)
    values = rng.normal(size=(count, 8))
    expected = np.zeros_like(values)
    for bone in range(count):
        at = bone
        while at >= 0:
            expected[bone] += values[at]
            at = shuffled[at]
    np.testing.assert_allclose(chain_sums(values, shuffled), expected, rtol=0.0, atol=1e-12)
    np.testing.assert_array_equal(chain_sums(values, np.full(count, -1)), values)  # roots alone
