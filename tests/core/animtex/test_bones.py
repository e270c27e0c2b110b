"""Bone textures: matrix and dual quaternion round trips, pivots, signs, scale, sizes."""

from __future__ import annotations

import numpy as np
import pytest

from hybrid_skin.core.animtex import (
    Clip,
    Precision,
    decode_bone_frames,
    decode_values,
    encode_bone_dq_animation,
    encode_bone_matrix_animation,
)
from hybrid_skin.core.animtex.decode import read_item_texels
from hybrid_skin.core.animtex.quantize import decode_channels
from hybrid_skin.core.dualquat import dual_quaternion_to_matrix

RNG = np.random.default_rng(5)


def axis_angle(axis: np.ndarray, angle: np.ndarray) -> np.ndarray:
    """Rodrigues' formula, written here so the tests do not trust the code under test."""
    k = axis / np.linalg.norm(axis, axis=-1, keepdims=True)
    kx = np.zeros(k.shape[:-1] + (3, 3))
    kx[..., 0, 1], kx[..., 0, 2], kx[..., 1, 2] = -k[..., 2], k[..., 1], -k[..., 0]
    kx = kx - np.swapaxes(kx, -1, -2)
    s, c = np.sin(angle)[..., None, None], np.cos(angle)[..., None, None]
    return np.eye(3) + s * kx + (1 - c) * kx @ kx


def swinging_bones(frames: int, bones: int, heads: np.ndarray, turns: float = 0.25, scale=None) -> np.ndarray:
    """``(F, B, 4, 4)`` skinning matrices: each bone turns about its head, which drifts a little."""
    axes = RNG.normal(size=(bones, 3))
    phase = RNG.random(bones)
    f = np.arange(frames)[:, None]
    rot = axis_angle(np.broadcast_to(axes, (frames, bones, 3)), 2 * np.pi * turns * f / frames + phase)
    if scale is not None:
        rot = rot * scale[..., None, None]
    moved = heads + 0.05 * np.sin(f[..., None] * 0.7 + np.arange(3))  # where the head goes
    m = np.zeros((frames, bones, 4, 4))
    m[..., :3, :3] = rot
    m[..., :3, 3] = moved - np.einsum("fbij,bj->fbi", rot, heads)
    m[..., 3, 3] = 1.0
    return m


def component_delta(precision: Precision, limit: float = 1.0) -> float:
    """Half a step for a channel in [-limit, limit] (signed mapping) or half an ulp at ``limit``."""
    if precision.normalized:
        return limit / (precision.max_code - 1)
    return 2.0 ** (np.floor(np.log2(limit)) - (11 if precision is Precision.EXR16 else 24))


def translation_delta(u: np.ndarray, precision: Precision) -> np.ndarray:
    """Per bone and axis bound on the stored pivot position ``u`` ``(F, B, 3)`` → ``(B, 3)``."""
    lo, hi = u.min(axis=0), u.max(axis=0)
    if precision.normalized:
        return (hi - lo) / (2 * precision.max_code)
    half = np.maximum((hi - lo) / 2, 1e-300)
    bits = 11 if precision is Precision.EXR16 else 24
    return np.where(hi > lo, 2.0 ** (np.floor(np.log2(half)) - bits), 0.0)


ARITH = 2.0**-21  # float32 decode arithmetic on values of magnitude ≤ 4


@pytest.mark.parametrize("precision", list(Precision))
@pytest.mark.parametrize("use_pivots", [False, True])
def test_bone_matrix_round_trip(precision: Precision, use_pivots: bool) -> None:
    heads = RNG.normal(size=(6, 3))
    mats = swinging_bones(9, 6, heads)
    pivots = heads if use_pivots else np.zeros((6, 3))
    tex = encode_bone_matrix_animation(
        [mats], [Clip("swing", 0, 8)], [f"b{i}" for i in range(6)], bone_pivots=pivots, precision=precision
    )
    got = decode_bone_frames(tex, 0, np.arange(9.0))
    d_lin = component_delta(precision) + ARITH
    # Derived DQS inputs: rigid bones give scale 1 and a dual quaternion reproducing the matrix.
    np.testing.assert_allclose(got.scales, 1.0, atol=3 * d_lin)
    np.testing.assert_allclose(dual_quaternion_to_matrix(got.real, got.dual), got.matrices, atol=20 * d_lin)
    u = np.einsum("fbij,bj->fbi", mats[..., :3, :3], pivots) + mats[..., :3, 3]
    d_t = translation_delta(u, precision) + d_lin * np.abs(pivots).sum(axis=1, keepdims=True) + ARITH
    assert np.abs(got.matrices[..., :3, :3] - mats[..., :3, :3]).max() <= d_lin
    assert np.all(np.abs(got.matrices[..., :3, 3] - mats[..., :3, 3]) <= d_t)
    np.testing.assert_array_equal(got.matrices[..., 3, :], np.broadcast_to([0, 0, 0, 1], (9, 6, 4)))
    # Between frames the matrix is the entrywise lerp of its neighbours, whatever the pivot.
    mid = decode_bone_frames(tex, 0, np.array([2.5])).matrices[0]
    np.testing.assert_allclose(mid, 0.5 * (got.matrices[2] + got.matrices[3]), atol=1e-5)


@pytest.mark.parametrize("precision", list(Precision))
def test_bone_dq_round_trip_for_rigid_bones(precision: Precision) -> None:
    heads = RNG.normal(size=(5, 3))
    mats = swinging_bones(12, 5, heads)
    tex = encode_bone_dq_animation(
        [mats], [Clip("swing", 0, 11)], list("abcde"), bone_pivots=heads, precision=precision
    )
    got = decode_bone_frames(tex, 0, np.arange(12.0))
    delta = component_delta(precision) + ARITH
    # Each quaternion component errs ≤ δ, so |e| ≤ 2δ; renormalising at most doubles it: |q̂ - q| ≤ 4δ.
    d_q = 4 * delta
    # A rotation by unit quaternions d apart moves a vector of length r by at most 2 r d.
    u = mats[..., :3, 3] + np.einsum("fbij,bj->fbi", mats[..., :3, :3], heads)
    assert np.abs(got.matrices[..., :3, :3] - mats[..., :3, :3]).max() <= 2 * d_q
    d_t = translation_delta(u, precision) + 2 * d_q * np.linalg.norm(heads, axis=1, keepdims=True) + ARITH
    assert np.all(np.abs(got.matrices[..., :3, 3] - mats[..., :3, 3]) <= d_t)
    np.testing.assert_allclose(got.scales, 1.0, atol=1e-7)  # rigid: the scale channel is constant, exact
    # The dual quaternion is the rigid part [R | u - R c] in dualquat's convention.
    rigid = dual_quaternion_to_matrix(got.real, got.dual)
    np.testing.assert_allclose(rigid, got.matrices, atol=1e-5)
    if precision is Precision.PNG8:  # bound is not vacuous: 8-bit quaternions visibly err
        assert np.abs(got.matrices[..., :3, :3] - mats[..., :3, :3]).max() > 0.1 * delta


def test_pivots_shrink_error_for_bones_far_from_origin() -> None:
    # Johansson (2021) §4.10: storing the raw dual part (or the skinning translation) spreads 8 bits over
    # a huge range when the bone is far from the origin. Storing where the pivot goes keeps it small.
    heads = np.array([[4.0, 3.0, 5.0], [-6.0, 2.0, 8.0]])
    mats = swinging_bones(16, 2, heads, turns=1.0)
    near = heads[:, None, :] + 0.1 * RNG.normal(size=(2, 50, 3))  # vertices near their bone
    errors = {}
    for pivots in ("origin", "head"):
        tex = encode_bone_dq_animation(
            [mats], [Clip("c", 0, 15)], ["a", "b"], precision=Precision.PNG8,
            bone_pivots=heads if pivots == "head" else None,
        )  # fmt: skip
        m = decode_bone_frames(tex, 0, np.arange(16.0)).matrices.astype(np.float64)
        moved = np.einsum("fbij,bnj->fbni", m[..., :3, :3], near) + m[..., None, :3, 3]
        truth = np.einsum("fbij,bnj->fbni", mats[..., :3, :3], near) + mats[..., None, :3, 3]
        errors[pivots] = np.linalg.norm(moved - truth, axis=-1).max()
    assert errors["head"] < errors["origin"] / 10, errors  # measured: 0.0031 vs 0.115 scene units


def test_dq_signs_stay_in_one_hemisphere_through_a_full_turn_and_the_loop() -> None:
    mats = swinging_bones(10, 3, np.zeros((3, 3)), turns=1.0)  # q(end) ≈ -q(start)
    clip = Clip("spin", 0, 10, loop=True)
    tex = encode_bone_dq_animation([mats], [clip], list("xyz"), precision=Precision.PNG16)
    stored = read_item_texels(tex.channels(), tex, 0, np.arange(11))  # frames 0..9 and the guard band
    raw = decode_channels(stored, tex.decode_offset, tex.decode_scale)[:, :, 0]
    dots = np.einsum("fbc,fbc->fb", raw[1:], raw[:-1])
    assert dots.min() > 0.9  # 36° per frame → cos(18°) ≈ 0.95 between neighbouring quaternions
    # Halfway through the wrap (last → first frame) the lerped quaternion must not collapse.
    wrap = decode_values(tex, 0, np.array([9.5]))[0, :, 0]
    assert np.linalg.norm(wrap, axis=-1).min() > 0.98


def test_uniform_scale_round_trips_and_nonuniform_is_reported() -> None:
    heads = RNG.normal(size=(4, 3))
    scale = 0.5 + 1.5 * RNG.random((8, 4))
    mats = swinging_bones(8, 4, heads, scale=scale)
    tex = encode_bone_dq_animation(
        [mats], [Clip("s", 0, 7)], list("abcd"), bone_pivots=heads, precision=Precision.EXR32
    )
    got = decode_bone_frames(tex, 0, np.arange(8.0))
    np.testing.assert_allclose(got.scales, scale, atol=1e-6)
    np.testing.assert_allclose(got.matrices, mats, atol=2e-5)
    assert tex.non_rigid_residual < 1e-6

    squash = np.tile(np.eye(4), (1, 1, 1, 1))
    squash[0, 0, 1, 1] = 2.0  # diag(1, 2, 1): closest rotation is I, least-squares scale 4/3
    tex = encode_bone_dq_animation([squash], [Clip("q", 0, 0)], ["a"], precision=Precision.EXR32)
    np.testing.assert_allclose(tex.non_rigid_residual, 2.0 / 3.0, rtol=1e-6)
    np.testing.assert_allclose(decode_bone_frames(tex, 0, 0.0).scales, [[4.0 / 3.0]], rtol=1e-6)

    mirror = np.tile(np.eye(4), (1, 1, 1, 1))
    mirror[0, 0, 0, 0] = -1.0
    with pytest.raises(ValueError, match="mirroring"):
        encode_bone_dq_animation([mirror], [Clip("m", 0, 0)], ["a"])
    # The matrix kind keeps any linear part, mirror included.
    tex = encode_bone_matrix_animation([mirror], [Clip("m", 0, 0)], ["a"], precision=Precision.PNG8)
    np.testing.assert_allclose(decode_bone_frames(tex, 0, 0.0).matrices[0, 0], mirror[0, 0], atol=1e-6)


def test_bone_matrix_reports_what_its_dual_quaternion_part_loses() -> None:
    """BONE_MATRIX stores ``A`` whole (LBS exact), but its DQS part keeps only ``s_b R_b`` (FORMAT.md
    section 5: the rotation of ``A``, negated first when mirrored, and the mean column length): the
    sidecar's ``non_rigid_residual`` is ``max |A - s_b R_b|``, here against closed forms."""
    heads = RNG.normal(size=(4, 3))
    uniform = swinging_bones(8, 4, heads, scale=0.5 + 1.5 * RNG.random((8, 4)))
    tex = encode_bone_matrix_animation([uniform], [Clip("u", 0, 7)], list("abcd"), bone_pivots=heads)
    assert tex.non_rigid_residual < 1e-6

    turn = axis_angle(np.array([0.3, -1.0, 0.5]), np.array(0.7))
    for diagonal, s_b, r_b in (
        ((1.6, 0.6, 1.0), 3.2 / 3.0, turn),  # columns turn·(1.6, 0.6, 1): s_b their mean, R_b = turn
        ((-1.0, 1.0, 1.0), 1.0, -turn @ np.diag([-1.0, 1.0, 1.0])),  # mirrored: R_b = -A
    ):
        m = np.tile(np.eye(4), (1, 1, 1, 1))
        m[0, 0, :3, :3] = turn @ np.diag(diagonal)
        tex = encode_bone_matrix_animation([m], [Clip("q", 0, 0)], ["a"], precision=Precision.EXR32)
        want = np.abs(m[0, 0, :3, :3] - s_b * r_b).max()
        assert want > 0.3  # the rig really is not rigid
        np.testing.assert_allclose(tex.non_rigid_residual, want, rtol=1e-6)
        got = decode_bone_frames(tex, 0, 0.0)
        np.testing.assert_allclose(got.scales, [[s_b]], rtol=1e-6)
        rotation = dual_quaternion_to_matrix(got.real, got.dual)[0, 0, :3, :3]
        np.testing.assert_allclose(rotation, r_b, atol=1e-6)


@pytest.mark.parametrize(
    ("encoder", "texels"), [(encode_bone_dq_animation, 2), (encode_bone_matrix_animation, 3)]
)
def test_bone_texture_size_is_texels_per_bone_per_frame(encoder, texels: int) -> None:
    heads = np.zeros((65, 3))
    clips = [Clip("strut", 1, 86), Clip("idle", 1, 31, loop=True)]
    mats = [swinging_bones(c.frame_count, 65, heads) for c in clips]
    tex = encoder(mats, clips, [f"b{i}" for i in range(65)], embed_metadata=False)
    assert tex.pixels.shape == ((86 + 1) + (30 + 1), texels * 65, 4)
    assert tex.layout.clip_first_rows == (0, 87)


def test_one_frame_bone_clip_and_wrong_shapes() -> None:
    mats = swinging_bones(1, 2, np.zeros((2, 3)))
    tex = encode_bone_matrix_animation([mats], [Clip("pose", 3, 3)], ["a", "b"], precision=Precision.PNG16)
    got = decode_bone_frames(tex, "pose", np.array([0.0, 0.5, 20.0])).matrices
    np.testing.assert_allclose(got, np.broadcast_to(mats[0], got.shape), atol=1e-4)
    with pytest.raises(ValueError, match="bones"):
        encode_bone_matrix_animation([mats], [Clip("pose", 3, 3)], ["a"])
    bad = mats.copy()
    bad[0, 0, 3, 0] = 0.5
    with pytest.raises(ValueError, match="affine"):
        encode_bone_dq_animation([bad], [Clip("pose", 3, 3)], ["a", "b"])
