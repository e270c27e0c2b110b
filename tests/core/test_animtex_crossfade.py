"""Cross-fade decoders against closed forms: weighted angles, shortest arcs, exact ends, lerped vertices."""

from __future__ import annotations

import numpy as np
import pytest

from hybrid_skin.core.animtex import (
    Clip,
    Kind,
    Precision,
    decode_bone_frames,
    decode_vertex_frames,
    encode_bone_dq_animation,
    encode_bone_matrix_animation,
    encode_vertex_animation,
    skin_with_bone_frames,
)
from hybrid_skin.core.animtex.crossfade import (
    blend_bone_frames,
    crossfade_bone_frames,
    crossfade_vertex_frames,
)

RNG = np.random.default_rng(11)
AXIS = np.array([1.0, 2.0, 2.0]) / 3.0  # unit
POINT = np.array([0.4, -0.3, 1.1])  # the rotation axis passes here, away from every pivot
PIVOTS = np.array([[0.0, 0.0, 0.0], [0.2, 0.5, -0.1]])


def rotation_about(axis: np.ndarray, angle: float, point: np.ndarray) -> np.ndarray:
    """4x4 rotation by ``angle`` about the line through ``point`` along unit ``axis`` (Rodrigues)."""
    k = np.array([[0, -axis[2], axis[1]], [axis[2], 0, -axis[0]], [-axis[1], axis[0], 0]])
    r = np.eye(3) + np.sin(angle) * k + (1 - np.cos(angle)) * k @ k
    m = np.eye(4)
    m[:3, :3] = r
    m[:3, 3] = point - r @ point
    return m


def weighted_angle(a: float, b: float, w: float) -> float:
    """Angle of the normalised blend of two rotations about one axis (module docstring's closed form),
    along the shortest arc: ``b`` moves a full turn nearer ``a`` when they are over half a turn apart."""
    if abs(b - a) > np.pi:
        b -= np.copysign(2 * np.pi, b - a)
    return 2 * np.arctan2(
        (1 - w) * np.sin(a / 2) + w * np.sin(b / 2), (1 - w) * np.cos(a / 2) + w * np.cos(b / 2)
    )


def two_pose_texture(kind: Kind, a: float, b: float, precision=Precision.EXR32):
    """Two one-frame clips: bone 0 rotated by ``a`` (clip 0) or ``b`` (clip 1) about AXIS through POINT;
    bone 1 keeps still."""
    clips = [Clip("a", 1, 1), Clip("b", 1, 1)]
    mats = [np.stack([rotation_about(AXIS, angle, POINT), np.eye(4)])[None] for angle in (a, b)]
    encode = encode_bone_dq_animation if kind is Kind.BONE_DQ else encode_bone_matrix_animation
    return encode(mats, clips, ["turn", "still"], bone_pivots=PIVOTS, precision=precision)


@pytest.mark.parametrize("w", [0.25, 0.5, 0.8])
@pytest.mark.parametrize(("a", "b"), [(0.3, 1.7), (-1.0, 2.0), (-1.0, 2.5)])  # the last: the short way
def test_dq_blend_of_rotations_about_one_axis_is_the_weighted_angle(a, b, w):
    tex = two_pose_texture(Kind.BONE_DQ, a, b)
    frames = crossfade_bone_frames(tex, "a", 0.0, "b", 0.0, w)
    expected = rotation_about(AXIS, weighted_angle(a, b, w), POINT)
    np.testing.assert_allclose(frames.matrices[0, 0], expected, atol=2e-6)
    np.testing.assert_allclose(frames.matrices[0, 1], np.eye(4), atol=1e-7)
    np.testing.assert_allclose(np.linalg.det(frames.matrices[0, 0, :3, :3]), 1.0, atol=1e-6)  # rigid
    # skinned: a vertex on bone 0 alone turns about the axis, LBS and DQS alike
    p = np.array([[1.0, 0.5, -0.2], [-0.3, 0.8, 0.4]])
    idx, weights = np.array([[0, 1], [0, 1]]), np.array([[1.0, 0.0], [1.0, 0.0]])
    for factor in (0.0, 1.0):
        got, _ = skin_with_bone_frames(frames, p, idx, weights, factor)
        np.testing.assert_allclose(got[0], p @ expected[:3, :3].T + expected[:3, 3], atol=4e-6)


def test_dq_blend_halfway_is_the_mid_rotation_and_matrix_blend_shrinks():
    a, b = 0.2, 2.2
    dq = crossfade_bone_frames(two_pose_texture(Kind.BONE_DQ, a, b), 0, 0.0, 1, 0.0, 0.5)
    np.testing.assert_allclose(dq.matrices[0, 0], rotation_about(AXIS, (a + b) / 2, POINT), atol=2e-6)
    mat = crossfade_bone_frames(two_pose_texture(Kind.BONE_MATRIX, a, b), 0, 0.0, 1, 0.0, 0.5)
    lerp = 0.5 * (rotation_about(AXIS, a, POINT) + rotation_about(AXIS, b, POINT))
    np.testing.assert_allclose(mat.matrices[0, 0], lerp, atol=2e-6)  # BONE_MATRIX blends matrices
    # the in-plane part of a lerp of two rotations is scaled by cos((a - b) / 2): volume is lost
    np.testing.assert_allclose(np.linalg.det(lerp[:3, :3]), np.cos((a - b) / 2) ** 2, atol=1e-12)
    assert np.linalg.det(mat.matrices[0, 0, :3, :3]) < 0.35
    # its DQS input is still the rotation of the blended matrix (what the decoder derives)
    np.testing.assert_allclose(np.linalg.norm(mat.real[0, 0]), 1.0, atol=1e-6)


def test_dq_blend_takes_the_shortest_arc():
    # 170° and 190° (= -170°) about one axis: quaternions in opposite hemispheres. The short way
    # passes through 180°; a blend without the sign flip would pass through 0° (the long way).
    a, b = np.radians(170.0), np.radians(-170.0)
    frames = crossfade_bone_frames(two_pose_texture(Kind.BONE_DQ, a, b), 0, 0.0, 1, 0.0, 0.5)
    np.testing.assert_allclose(frames.matrices[0, 0], rotation_about(AXIS, np.pi, POINT), atol=4e-6)


@pytest.mark.parametrize("kind", [Kind.BONE_MATRIX, Kind.BONE_DQ])
@pytest.mark.parametrize("precision", [Precision.PNG8, Precision.EXR16])
def test_bone_weights_zero_and_one_reproduce_each_clip_exactly(kind, precision):
    frames, bones = 7, 5
    clips = [Clip("walk", 1, 8, loop=True), Clip("run", 3, 9)]
    mats = []
    for _ in clips:
        m = np.stack(
            [
                np.stack(
                    [
                        rotation_about(RNG.normal(size=3) / 2, RNG.normal(), RNG.normal(size=3))
                        for _ in range(bones)
                    ]
                )
                for _ in range(frames)
            ]
        )
        m[..., :3, :3] *= RNG.uniform(0.9, 1.1, size=(frames, bones, 1, 1))  # some uniform scale
        mats.append(m)
    encode = encode_bone_dq_animation if kind is Kind.BONE_DQ else encode_bone_matrix_animation
    pivots = RNG.normal(size=(bones, 3))
    tex = encode(mats, clips, [f"b{i}" for i in range(bones)], bone_pivots=pivots, precision=precision)
    sa, sb = np.array([0.0, 2.3, 6.7, 9.1]), np.array([5.5, 0.25, 3.0, 1.0])
    a, b = decode_bone_frames(tex, "walk", sa), decode_bone_frames(tex, "run", sb)
    weights = np.array([0.0, 1.0, 0.0, 1.0])
    got = crossfade_bone_frames(tex, "walk", sa, "run", sb, weights)
    for field in ("matrices", "real", "dual", "scales"):
        want = np.where(
            weights.reshape((-1,) + (1,) * (getattr(a, field).ndim - 1)) == 0,
            getattr(a, field),
            getattr(b, field),
        )
        np.testing.assert_array_equal(getattr(got, field), want)
    # weights between blend; outside [0, 1] they clamp to the ends
    mid = crossfade_bone_frames(tex, "walk", sa, "run", sb, 0.5)
    assert np.abs(mid.matrices - a.matrices).max() > 1e-3
    np.testing.assert_array_equal(crossfade_bone_frames(tex, 0, sa, 1, sb, -0.5).matrices, a.matrices)
    np.testing.assert_array_equal(crossfade_bone_frames(tex, 0, sa, 1, sb, 1.5).matrices, b.matrices)


def test_dq_blend_lerps_uniform_scale_about_the_pivot():
    clips = [Clip("small", 1, 1), Clip("big", 1, 1)]
    mats = []
    for s in (0.8, 1.4):
        m = rotation_about(AXIS, 0.5, POINT)
        m[:3, :3] *= s
        mats.append(np.stack([m, np.eye(4)])[None])
    tex = encode_bone_dq_animation(mats, clips, ["s", "t"], bone_pivots=PIVOTS, precision=Precision.EXR32)
    frames = crossfade_bone_frames(tex, 0, 0.0, 1, 0.0, 0.25)
    np.testing.assert_allclose(frames.scales[0, 0], 0.8 + 0.25 * (1.4 - 0.8), atol=1e-6)
    # the pivot goes where both clips put it (they agree), the rotation is the shared one
    u = frames.matrices[0, 0, :3, :3] @ PIVOTS[0] + frames.matrices[0, 0, :3, 3]
    np.testing.assert_allclose(u, mats[0][0, 0, :3, :3] @ PIVOTS[0] + mats[0][0, 0, :3, 3], atol=2e-6)


def test_vertex_crossfade_lerps_positions_and_renormalises_normals():
    rest = np.array([[0.0, 0.0, 0.0], [1.0, 1.0, 1.0]])
    clips = [Clip("a", 1, 2), Clip("b", 1, 2)]
    pos_a = rest + np.array([1.0, 0.0, 0.0])
    pos_b = rest + np.array([0.0, 1.0, 0.0])
    n_a = np.tile([1.0, 0.0, 0.0], (2, 1))
    n_b = np.tile([0.0, 1.0, 0.0], (2, 1))
    positions = [np.stack([pos_a, pos_a]), np.stack([pos_b, pos_b])]
    normals = [np.stack([n_a, n_a]), np.stack([n_b, n_b])]
    tex = encode_vertex_animation(rest, positions, normals, clips, precision=Precision.EXR32)
    positions, normals = crossfade_vertex_frames(tex, rest, "a", [0.0, 0.5], "b", [1.0, 0.2], [0.5, 0.25])
    np.testing.assert_allclose(positions[0], rest + [0.5, 0.5, 0.0], atol=1e-7)
    np.testing.assert_allclose(positions[1], rest + [0.75, 0.25, 0.0], atol=1e-7)
    np.testing.assert_allclose(normals[0], np.tile([1.0, 1.0, 0.0], (2, 1)) / np.sqrt(2), atol=1e-7)
    np.testing.assert_allclose(normals[1], np.tile([3.0, 1.0, 0.0], (2, 1)) / np.sqrt(10), atol=1e-7)


@pytest.mark.parametrize("precision", [Precision.PNG8, Precision.PNG16])
def test_vertex_weights_zero_and_one_reproduce_each_clip_exactly(precision):
    n, frames = 40, 6
    rest = RNG.normal(size=(n, 3))
    clips = [Clip("a", 0, 6, loop=True), Clip("b", 0, 5)]
    pos = [rest + 0.1 * RNG.normal(size=(frames, n, 3)) for _ in clips]
    nor = [RNG.normal(size=(frames, n, 3)) for _ in clips]
    nor = [v / np.linalg.norm(v, axis=-1, keepdims=True) for v in nor]
    tex = encode_vertex_animation(rest, pos, nor, clips, precision=precision)
    sa, sb = np.array([0.5, 4.75, 5.5]), np.array([2.25, 0.0, 7.0])
    pa, na = decode_vertex_frames(tex, rest, "a", sa)
    pb, nb = decode_vertex_frames(tex, rest, "b", sb)
    p0, n0 = crossfade_vertex_frames(tex, rest, "a", sa, "b", sb, 0.0)
    p1, n1 = crossfade_vertex_frames(tex, rest, "a", sa, "b", sb, 1.0)
    for got, want in ((p0, pa), (n0, na), (p1, pb), (n1, nb)):
        np.testing.assert_array_equal(got, want)
    pm, nm = crossfade_vertex_frames(tex, rest, "a", sa, "b", sb, 0.3)
    np.testing.assert_allclose(pm, pa + np.float32(0.3) * (pb - pa), rtol=0, atol=1e-6)
    mixed = na + np.float32(0.3) * (nb - na)
    np.testing.assert_allclose(nm, mixed / np.linalg.norm(mixed, axis=-1, keepdims=True), atol=1e-6)


def test_bad_input_says_what_is_wrong():
    tex = two_pose_texture(Kind.BONE_DQ, 0.1, 0.2)
    a = decode_bone_frames(tex, 0, [0.0])
    with pytest.raises(ValueError, match="BONE_MATRIX or BONE_DQ"):
        blend_bone_frames(a, a, 0.5, Kind.VERTEX)
    with pytest.raises(ValueError, match="differ in shape"):
        blend_bone_frames(a, decode_bone_frames(tex, 0, [0.0, 0.0]), 0.5, Kind.BONE_DQ)
    with pytest.raises(ValueError, match="finite"):
        crossfade_bone_frames(tex, 0, 0.0, 1, 0.0, np.nan)
    with pytest.raises(KeyError, match="no clip 'jump'"):
        crossfade_bone_frames(tex, "jump", 0.0, 1, 0.0, 0.5)
