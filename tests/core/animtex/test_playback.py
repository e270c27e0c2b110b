"""Bone texture playback with the hybrid deform factor, held to the core's own hybrid skinning."""

from __future__ import annotations

import numpy as np
import pytest

from hybrid_skin.core.animtex import (
    Clip,
    Precision,
    decode_bone_frames,
    encode_bone_dq_animation,
    encode_bone_matrix_animation,
)
from hybrid_skin.core.animtex.decode import bone_frame_palette, skin_with_bone_frames
from hybrid_skin.core.skinning import SkinBinding, bone_palette, skin

RNG = np.random.default_rng(21)
BONES, VERTICES, FRAMES = 4, 300, 6


def _rotations(count: int) -> np.ndarray:
    q = RNG.normal(size=(count, 4))
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    w, x, y, z = q.T
    return np.stack(
        [
            np.stack([1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)], -1),
            np.stack([2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)], -1),
            np.stack([2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)], -1),
        ],
        -2,
    )


def rig(scaled: bool):
    """Rest frames ``(B, 4, 4)`` and skinning matrices ``(F, B, 4, 4)`` ``[s R | u - s R c]``."""
    heads = RNG.normal(size=(BONES, 3))
    rest = np.tile(np.eye(4), (BONES, 1, 1))
    rest[:, :3, :3] = _rotations(BONES)
    rest[:, :3, 3] = heads
    rot = _rotations(FRAMES * BONES).reshape(FRAMES, BONES, 3, 3)
    scale = 0.6 + 0.8 * RNG.random((FRAMES, BONES)) if scaled else np.ones((FRAMES, BONES))
    moved = heads + 0.3 * RNG.normal(size=(FRAMES, BONES, 3))
    deform = np.tile(np.eye(4), (FRAMES, BONES, 1, 1))
    deform[..., :3, :3] = scale[..., None, None] * rot
    deform[..., :3, 3] = moved - np.einsum("fbij,bj->fbi", deform[..., :3, :3], heads)
    return rest, deform, heads


def influences() -> tuple[np.ndarray, np.ndarray]:
    idx = np.stack([RNG.permutation(BONES)[:3] for _ in range(VERTICES)]).astype(np.int32)
    w = RNG.random((VERTICES, 3)) ** 2
    return idx, (w / w.sum(axis=1, keepdims=True)).astype(np.float32)


@pytest.mark.parametrize("factor", [0.0, 0.35, 1.0])
@pytest.mark.parametrize("scaled", [False, True])
def test_dq_playback_equals_core_hybrid_skinning(factor: float, scaled: bool) -> None:
    # With pivots at the bones' rest heads, "uniform scale about the pivot, then the rigid dual
    # quaternion" is exactly Blender's Preserve Volume split for uniform scale, so the core's skin()
    # (written independently, Blender-exact) must agree on decoded bones.
    rest, deform, heads = rig(scaled)
    tex = encode_bone_dq_animation(
        [deform], [Clip("c", 0, FRAMES - 1)], list("abcd"), bone_pivots=heads, precision=Precision.EXR32
    )
    points = RNG.normal(size=(VERTICES, 3)).astype(np.float32)
    normals = RNG.normal(size=(VERTICES, 3)).astype(np.float32)
    normals /= np.linalg.norm(normals, axis=1, keepdims=True)
    idx, w = influences()
    frames = decode_bone_frames(tex, 0, np.arange(FRAMES, dtype=float))
    got_p, got_n = skin_with_bone_frames(frames, points, idx, w, factor, normals)
    binding = SkinBinding(idx, w, np.ones(VERTICES, np.float32))
    for f in range(FRAMES):
        ref_p, ref_n = skin(points, binding, bone_palette(frames.matrices[f], rest), factor, normals)
        np.testing.assert_allclose(got_p[f], ref_p, atol=2e-5)
        np.testing.assert_allclose(got_n[f], ref_n, atol=2e-5)


def test_matrix_playback_lbs_equals_core_and_dqs_for_rigid_bones() -> None:
    rest, deform, heads = rig(scaled=False)
    tex = encode_bone_matrix_animation(
        [deform], [Clip("c", 0, FRAMES - 1)], list("abcd"), bone_pivots=heads, precision=Precision.EXR32
    )
    points = RNG.normal(size=(VERTICES, 3)).astype(np.float32)
    idx, w = influences()
    frames = decode_bone_frames(tex, 0, np.arange(FRAMES, dtype=float))
    binding = SkinBinding(idx, w, np.ones(VERTICES, np.float32))
    for factor in (0.0, 0.6):
        got, _ = skin_with_bone_frames(frames, points, idx, w, factor)
        for f in range(FRAMES):
            ref, _ = skin(points, binding, bone_palette(frames.matrices[f], rest), factor)
            np.testing.assert_allclose(got[f], ref, atol=2e-5)


def test_deform_factor_matters_at_runtime() -> None:
    # The bone kinds keep the factor as a runtime parameter: one texture, different results.
    rest, deform, heads = rig(scaled=False)
    tex = encode_bone_dq_animation([deform], [Clip("c", 0, FRAMES - 1)], list("abcd"), bone_pivots=heads)
    points = RNG.normal(size=(VERTICES, 3))
    idx, w = influences()
    frames = decode_bone_frames(tex, 0, np.array([2.0]))
    lbs, _ = skin_with_bone_frames(frames, points, idx, w, 0.0)
    dqs, _ = skin_with_bone_frames(frames, points, idx, w, 1.0)
    half, _ = skin_with_bone_frames(frames, points, idx, w, 0.5)
    assert np.abs(lbs - dqs).max() > 0.05  # random rotations: the methods really differ
    np.testing.assert_allclose(half, 0.5 * (lbs + dqs), atol=1e-5)  # positions are linear in the factor


@pytest.mark.parametrize("factor", [0.0, 0.35, 1.0])
@pytest.mark.parametrize("kind", ["dq", "dq-scaled", "matrix"])
def test_bone_frame_palette_skins_like_the_shader_reference(factor: float, kind: str) -> None:
    # The bake's error report skins decoded bones with skin() on bone_frame_palette() (float32, fast);
    # it must be the shader's reference skin_with_bone_frames, scale about the pivot included.
    rest, deform, heads = rig(scaled=kind == "dq-scaled")
    encode = encode_bone_matrix_animation if kind == "matrix" else encode_bone_dq_animation
    tex = encode([deform], [Clip("c", 0, FRAMES - 1)], list("abcd"), bone_pivots=heads)
    points = RNG.normal(size=(VERTICES, 3)).astype(np.float32)
    normals = RNG.normal(size=(VERTICES, 3)).astype(np.float32)
    normals /= np.linalg.norm(normals, axis=1, keepdims=True)
    idx, w = influences()
    samples = np.array([0.0, 1.5, 3.25, FRAMES - 1.0])
    frames = decode_bone_frames(tex, 0, samples)
    assert kind != "dq-scaled" or np.abs(frames.scales - 1.0).max() > 0.1
    ref_p, ref_n = skin_with_bone_frames(frames, points, idx, w, factor, normals)
    binding = SkinBinding(idx, w, np.ones(VERTICES, np.float32))
    for s in range(len(samples)):
        got_p, got_n = skin(points, binding, bone_frame_palette(frames, s), factor, normals)
        np.testing.assert_allclose(got_p, ref_p[s], atol=2e-5)
        np.testing.assert_allclose(got_n, ref_n[s], atol=2e-5)


def test_a_scale_rounded_off_1_is_rigid_for_the_report_and_a_real_one_is_not() -> None:
    # Rigid bones decode with scales like 0.99999994 (float32 rounding through the channel's range);
    # counted as 1 they skip the pivot path, at most UNIT_SCALE_TOLERANCE x the distance to the pivot
    # away from the shader's result. A scale just beyond it still gets its pivot term.
    from dataclasses import replace

    from hybrid_skin.core.animtex.decode import UNIT_SCALE_TOLERANCE

    rest, deform, heads = rig(scaled=False)
    tex = encode_bone_dq_animation([deform], [Clip("c", 0, FRAMES - 1)], list("abcd"), bone_pivots=heads)
    frames = decode_bone_frames(tex, 0, np.array([1.0]))
    rounded = np.float32([1.0 - 2**-24, 1.0 + 2**-23, 1.0, 1.0])
    off = replace(frames, scales=rounded[None])
    assert bone_frame_palette(off, 0).pivot is None
    points = RNG.normal(size=(VERTICES, 3)).astype(np.float32)
    normals = RNG.normal(size=(VERTICES, 3)).astype(np.float32)
    normals /= np.linalg.norm(normals, axis=1, keepdims=True)
    idx, w = influences()
    binding = SkinBinding(idx, w, np.ones(VERTICES, np.float32))
    ref_p, _ = skin_with_bone_frames(off, points, idx, w, 1.0, normals)
    got_p, _ = skin(points, binding, bone_frame_palette(off, 0), 1.0, normals)
    reach = np.linalg.norm(points[:, None] - heads[idx], axis=2).max()
    atol = UNIT_SCALE_TOLERANCE * reach + 2e-6 * np.abs(ref_p).max()
    np.testing.assert_allclose(got_p, ref_p[0], atol=atol)
    beyond = replace(frames, scales=np.float32([1.0 + 3 * UNIT_SCALE_TOLERANCE, 1.0, 1.0, 1.0])[None])
    pivot = bone_frame_palette(beyond, 0).pivot
    assert np.any(pivot[0]) and not np.any(pivot[1:])
