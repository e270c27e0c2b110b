"""The chunked float32 kernel of ``skin()`` against a float64 per-vertex reference written from the method.

The reference follows Blender's armature deform literally, one influence at a time: LBS sums weighted
bone matrices; DQS negates a bone's dual quaternion when its real part points away from the running sum
(stored order), adds the scale pivot term ``F·p``, normalises and turns the blend into ``[R | t]``
(``mul_v3m3_dq``); the hybrid mixes the two matrices, the influence blends with the identity; normals
are ``cofactor(M₃)·n``. Rigs here have many antipodal pairs, scaled bones, padding, partial influence,
per-vertex factors and an object transform, so every fast path of the kernel meets its exact fallback.
"""

from __future__ import annotations

import numpy as np
import pytest

from hybrid_skin.core import skin_plan, skinning
from hybrid_skin.core.dualquat import quaternion_to_matrix
from hybrid_skin.core.skinning import (
    BonePalette,
    SkinBinding,
    bone_palette,
    chunk_bounds,
    skin,
    skin_matrices,
    skin_with_ends,
)


def reference_matrices(p: np.ndarray, binding: SkinBinding, pal: BonePalette, f) -> np.ndarray:
    """``(N, 3, 4)`` float64 hybrid matrices in armature space, one influence at a time."""
    n, k_count = binding.weights.shape
    idx, w = binding.bone_indices, binding.weights.astype(np.float64)
    mats, real, dual = (np.asarray(a, np.float64) for a in (pal.matrices, pal.real, pal.dual))
    lbs = np.zeros((n, 3, 4))
    acc_real, acc_dual = np.zeros((n, 4)), np.zeros((n, 4))
    for k in range(k_count):
        b = idx[:, k]
        lbs += w[:, k, None, None] * mats[b]
        q = real[b]
        sign = np.where(np.einsum("nc,nc->n", acc_real, q) < 0.0, -1.0, 1.0)
        d = dual[b]
        if pal.pivot is not None:
            d = d + np.einsum("nij,nj->ni", np.asarray(pal.pivot, np.float64)[b], p)
        acc_real += (sign * w[:, k])[:, None] * q
        acc_dual += (sign * w[:, k])[:, None] * d
    norm_sq = np.einsum("nc,nc->n", acc_real, acc_real)
    safe = np.where(norm_sq > 0, norm_sq, 1.0)
    rot = quaternion_to_matrix(np.where(norm_sq[:, None] > 0, acc_real, [1.0, 0, 0, 0]))
    rot[norm_sq == 0] = 0.0
    rw, v = acc_real[:, 0], acc_real[:, 1:]
    tw, tv = acc_dual[:, 0], acc_dual[:, 1:]
    move = 2 * (rw[:, None] * tv - tw[:, None] * v + np.cross(v, tv)) / safe[:, None]
    move[norm_sq == 0] = 0.0
    dqs = np.concatenate([rot, move[:, :, None]], 2)
    fv = np.broadcast_to(np.asarray(f, np.float64), (n,))[:, None, None]
    m = (1 - fv) * lbs + fv * dqs
    a = binding.influence.astype(np.float64)[:, None, None]
    return np.eye(3, 4) + a * (m - np.eye(3, 4))


def reference_skin(pos, binding, pal, f, nrm, t2a):
    pre, post = t2a, np.linalg.inv(t2a)
    p = pos.astype(np.float64) @ pre[:3, :3].T + pre[:3, 3]
    m = reference_matrices(p, binding, pal, f)
    out = np.einsum("nij,nj->ni", m[:, :, :3], p) + m[:, :, 3]
    out = out @ post[:3, :3].T + post[:3, 3]
    full = np.einsum("ij,njk,kl->nil", post[:3, :3], m[:, :, :3], pre[:3, :3])
    r0, r1, r2 = full[:, 0], full[:, 1], full[:, 2]
    cof = np.stack([np.cross(r1, r2), np.cross(r2, r0), np.cross(r0, r1)], 1)
    normals = np.einsum("nij,nj->ni", cof, nrm)
    return out, normals / np.linalg.norm(normals, axis=1, keepdims=True)


def random_rotation(rng, count: int, max_angle: float) -> np.ndarray:
    axis = rng.normal(size=(count, 3))
    axis /= np.linalg.norm(axis, axis=1, keepdims=True)
    half = rng.uniform(-max_angle, max_angle, count) / 2
    return quaternion_to_matrix(np.c_[np.cos(half), axis * np.sin(half)[:, None]])


def random_rig(n: int, bones: int = 12, k: int = 4, seed: int = 0, scaled: bool = True):
    """Bones turned up to 340° (many co-occurring pairs are antipodal), some scaled, some stored with
    the opposite quaternion sign; per vertex ``k`` distinct bones with one zero-weight padding slot."""
    rng = np.random.default_rng(seed)
    deform = np.tile(np.eye(4), (bones, 1, 1))
    deform[:, :3, :3] = random_rotation(rng, bones, np.radians(340))
    deform[:, :3, 3] = rng.normal(scale=0.3, size=(bones, 3))
    if scaled:
        deform[: bones // 3, :3, :3] *= rng.uniform(0.6, 1.5, (bones // 3, 1, 3))
    rest = np.tile(np.eye(4), (bones, 1, 1))
    rest[:, :3, 3] = rng.normal(size=(bones, 3))
    pal = bone_palette(deform, rest)
    flip = np.where(rng.random(bones) < 0.3, -1.0, 1.0).astype(np.float32)[:, None]
    pal = pal._replace(real=pal.real * flip, dual=pal.dual * flip)
    idx = np.argsort(rng.random((n, bones)), axis=1)[:, :k].astype(np.int32)
    w = rng.random((n, k)).astype(np.float32)
    w[:, -1] = 0.0  # padding
    w /= w.sum(1, keepdims=True)
    infl = np.where(rng.random(n) < 0.8, 1.0, rng.random(n)).astype(np.float32)
    pos = rng.normal(size=(n, 3)).astype(np.float32)
    nrm = rng.normal(size=(n, 3))
    nrm = (nrm / np.linalg.norm(nrm, axis=1, keepdims=True)).astype(np.float32)
    return pos, nrm, SkinBinding(idx, w, infl), pal


@pytest.mark.parametrize("n", [0, 1, 7, 5000, 40_000])
@pytest.mark.parametrize("factor", [0.0, 0.4, 1.0, "per-vertex"])
def test_kernel_equals_the_float64_reference(n, factor):
    pos, nrm, binding, pal = random_rig(n, seed=n)
    rng = np.random.default_rng(1)
    f = rng.random(n).astype(np.float32) if factor == "per-vertex" else factor
    t2a = np.eye(4)
    t2a[:3, :3] = random_rotation(rng, 1, 2.0)[0] * np.array([1.2, 0.8, 1.0])
    t2a[:3, 3] = (0.5, -1.0, 2.0)
    ref_p, ref_n = reference_skin(pos, binding, pal, f, nrm, t2a)
    got_p, got_n = skin(pos, binding, pal, f, nrm, t2a)
    scale = np.abs(ref_p).max(initial=1.0)
    np.testing.assert_allclose(got_p, ref_p, atol=2e-6 * scale, rtol=0)  # measured 2.4e-7 × scale
    np.testing.assert_allclose(got_n, ref_n, atol=2e-5, rtol=0)  # measured 2.3e-6


@pytest.mark.parametrize("n", [1, 5000, 40_000])
@pytest.mark.parametrize("factor", [0.0, 0.4, 1.0, "per-vertex"])
def test_one_blend_gives_the_positions_at_factors_0_and_1(n, factor):
    """``skin_with_ends``: the float64 reference at the factor and at 0 and 1, and bit for bit what
    :func:`skin` gives at 0 and 1 (flipped signs, scale pivots, partial influence, object transform)."""
    pos, nrm, binding, pal = random_rig(n, seed=n + 3)
    rng = np.random.default_rng(2)
    f = rng.random(n).astype(np.float32) if factor == "per-vertex" else factor
    t2a = np.eye(4)
    t2a[:3, :3] = random_rotation(rng, 1, 2.0)[0] * np.array([0.9, 1.3, 1.0])
    t2a[:3, 3] = (-0.5, 1.0, 0.25)
    got_p, got_n, ends = skin_with_ends(pos, binding, pal, f, nrm, t2a)
    assert ends.shape == (2, n, 3)
    ref_p, ref_n = reference_skin(pos, binding, pal, f, nrm, t2a)
    scale = np.abs(ref_p).max(initial=1.0)
    np.testing.assert_allclose(got_p, ref_p, atol=2e-6 * scale, rtol=0)
    np.testing.assert_allclose(got_n, ref_n, atol=2e-5, rtol=0)
    for end, value in zip(ends, (0.0, 1.0)):
        np.testing.assert_array_equal(end, skin(pos, binding, pal, value, None, t2a)[0])
        np.testing.assert_allclose(
            end, reference_skin(pos, binding, pal, value, nrm, t2a)[0], atol=2e-6 * scale
        )
    # positions are affine in the factor: the ends mix back to the positions at f
    fv = np.broadcast_to(np.asarray(f, np.float64), (n,))[:, None]
    np.testing.assert_allclose((1 - fv) * ends[0] + fv * ends[1], got_p, atol=2e-6 * scale, rtol=0)


def test_the_rigs_really_flip_and_scale():
    """Guard for the test above: its rigs send many vertices through the exact sign loop and the pivots."""
    _, _, binding, pal = random_rig(40_000, seed=40_000)
    frame = skinning._frame(binding, pal, 1.0)
    assert frame.suspect is not None and frame.scaled is not None
    w = binding.weights.astype(np.float64)
    real = pal.real.astype(np.float64)[binding.bone_indices]
    acc, flips = w[:, 0, None] * real[:, 0], np.zeros(len(w), bool)
    for k in range(1, 4):
        flip = (np.einsum("nc,nc->n", acc, real[:, k]) < 0) & (w[:, k] > 0)
        flips |= flip
        acc += np.where(flip, -w[:, k], w[:, k])[:, None] * real[:, k]
    assert 0.2 < flips.mean() < 0.9
    assert 0.2 < frame.scaled[binding.bone_indices[:, :3]].any(1).mean() < 0.9


def test_no_flip_shortcut_only_when_every_shared_pair_agrees():
    """With all bones within 80° of each other no shared pair disagrees (no sign loop runs); turning bones 3
    and 4 by +170° and −170° about Z spreads the bones that share vertices over more than 180°, so no signs
    make every shared pair agree: those pairs are suspect, and the result still equals the reference."""
    pos, nrm, binding, _ = random_rig(3000, seed=5, scaled=False)
    rng = np.random.default_rng(2)
    deform = np.tile(np.eye(4), (12, 1, 1))
    deform[:, :3, :3] = random_rotation(rng, 12, np.radians(80))
    rest = np.tile(np.eye(4), (12, 1, 1))
    assert skinning._frame(binding, bone_palette(deform, rest), 1.0).suspect is None
    for bone, angle in ((3, 170.0), (4, -170.0)):
        half = np.radians(angle) / 2
        deform[bone, :3, :3] = quaternion_to_matrix(np.array([np.cos(half), 0.0, 0.0, np.sin(half)]))
    pal = bone_palette(deform, rest)
    frame = skinning._frame(binding, pal, 1.0)
    assert frame.suspect is not None and frame.suspect[3] and frame.suspect[4]
    ref, _ = reference_skin(pos, binding, pal, 1.0, nrm, np.eye(4))
    np.testing.assert_allclose(skin(pos, binding, pal, 1.0)[0], ref, atol=2e-6 * np.abs(ref).max(), rtol=0)


def test_a_rig_turned_half_round_needs_no_sign_loop():
    """Bones turned 170°–190° about Z: their canonical quaternions (w ≥ 0) split into two opposite
    hemispheres, yet they are close rotations. Signing them along the plan's spanning forest makes every
    shared pair agree, so no vertex needs the running-sum loop, and the result equals the reference."""
    pos, nrm, binding, _ = random_rig(4000, seed=6, scaled=False)
    rng = np.random.default_rng(8)
    deform = np.tile(np.eye(4), (12, 1, 1))
    half = np.radians(rng.uniform(170, 190, 12)) / 2
    deform[:, :3, :3] = quaternion_to_matrix(np.c_[np.cos(half), np.zeros((12, 2)), np.sin(half)])
    pal = bone_palette(deform, np.tile(np.eye(4), (12, 1, 1)))
    assert np.any(pal.real[:, 3] > 0) and np.any(pal.real[:, 3] < 0)  # both hemispheres
    assert skinning._frame(binding, pal, 0.5).suspect is None
    ref, ref_n = reference_skin(pos, binding, pal, 0.5, nrm, np.eye(4))
    got, got_n = skin(pos, binding, pal, 0.5, nrm)
    np.testing.assert_allclose(got, ref, atol=2e-6 * np.abs(ref).max(), rtol=0)
    np.testing.assert_allclose(got_n, ref_n, atol=2e-5, rtol=0)


def test_plan_lists_exactly_the_bone_pairs_that_share_a_weighted_vertex():
    idx = np.array([[0, 1, 2], [2, 0, 5], [4, 4, 1], [3, 1, 0]], np.int32)
    w = np.array([[0.5, 0.5, 0.0], [0.2, 0.3, 0.5], [0.5, 0.5, 0.0], [1.0, 0.0, 0.0]], np.float32)
    plan = skin_plan.plan_binding(idx, w, np.ones(4, np.float32))
    assert {tuple(p) for p in plan.pairs.tolist()} == {(0, 1), (0, 2), (2, 5), (0, 5)}
    assert plan.full_influence
    assert not skin_plan.plan_binding(idx, w, np.array([1, 1, 0.5, 1], np.float32)).full_influence


def test_a_tiny_pivot_on_one_bone_is_applied():
    """Only vertices touching the scaled bone go through the pivot term, and they get all of it."""
    pos, nrm, binding, pal = random_rig(2000, seed=3, scaled=False)
    assert pal.pivot is None
    base, _ = skin(pos, binding, pal, 1.0)
    pivot = np.zeros((pal.bone_count, 4, 3), np.float32)
    pivot[5] = 1e-3
    scaled = pal._replace(pivot=pivot)
    moved = skin(pos, binding, scaled, 1.0)[0]
    ref, _ = reference_skin(pos, binding, scaled, 1.0, nrm, np.eye(4))
    touched = np.any(binding.bone_indices[:, :3] == 5, axis=1)
    assert 0.1 < touched.mean() < 0.5
    assert np.abs(moved - base)[touched].max() > 1e-4
    np.testing.assert_array_equal(moved[~touched], base[~touched])
    np.testing.assert_allclose(moved, ref, atol=2e-6 * np.abs(ref).max(), rtol=0)


@pytest.mark.parametrize("n", [0, 1, 4095, 4096, 10_000, 100_000, 1_000_003])
def test_chunks_cover_every_vertex_once(n):
    bounds = chunk_bounds(n)
    edges = [0] + [e for _, e in bounds]
    assert [s for s, _ in bounds] == edges[:-1] and edges[-1] == n
    assert all(0 < e - s <= skinning.CHUNK for s, e in bounds)
    if skinning.THREADS > 1 and n >= 2 * skinning.MIN_SPLIT:
        assert len(bounds) >= 2  # small meshes use both cores too


def test_result_does_not_depend_on_chunking(monkeypatch):
    pos, nrm, binding, pal = random_rig(30_000, seed=9)
    f = np.random.default_rng(4).random(30_000).astype(np.float32)
    threaded = skin(pos, binding, pal, f, nrm)
    matrices = skin_matrices(pos, binding, pal, f)
    monkeypatch.setattr(skinning, "THREADS", 1)
    monkeypatch.setattr(skinning, "CHUNK", 30_000)
    single = skin(pos, binding, pal, f, nrm)
    np.testing.assert_array_equal(threaded[0], single[0])
    np.testing.assert_array_equal(threaded[1], single[1])
    np.testing.assert_array_equal(matrices, skin_matrices(pos, binding, pal, f))


def test_huge_palettes_take_the_running_sum_loop(monkeypatch):
    """Above PAIR_TABLE_BONES bones the pair table would be too big: suspect vertices run Blender's loop
    on the gathered quaternions instead, with the same result."""
    pos, nrm, binding, pal = random_rig(6000, seed=12)
    f = np.random.default_rng(3).random(6000).astype(np.float32)
    with_table = skin(pos, binding, pal, f, nrm)
    monkeypatch.setattr(skin_plan, "PAIR_TABLE_BONES", 0)
    frame = skinning._frame(binding, pal, f)
    assert frame.suspect is not None and frame.pair_dots is None
    looped = skin(pos, binding, pal, f, nrm)
    ref_p, ref_n = reference_skin(pos, binding, pal, f, nrm, np.eye(4))
    np.testing.assert_allclose(looped[0], ref_p, atol=2e-6 * np.abs(ref_p).max(), rtol=0)
    np.testing.assert_allclose(looped[1], ref_n, atol=2e-5, rtol=0)
    np.testing.assert_allclose(looped[0], with_table[0], atol=1e-6 * np.abs(ref_p).max(), rtol=0)


def test_skinning_never_writes_into_the_binding():
    """A one-vertex chunk's weights transposed are already contiguous: the sign rule must work on a copy
    (it once negated the binding's own weights, so the next frame skinned with wrong ones)."""
    pos, nrm, binding, pal = random_rig(1, seed=4)
    assert skinning._frame(binding, pal, 0.4).pair_dots is not None  # the sign rule runs
    weights = binding.weights.copy()
    first = skin(pos, binding, pal, 0.4, nrm)
    np.testing.assert_array_equal(binding.weights, weights)
    second = skin(pos, binding, pal, 0.4, nrm)
    np.testing.assert_array_equal(first[0], second[0])
