"""A synthetic rig encoded with the core encoders (numpy only): what the port tests decode.

Bones swing about their heads with some uniform scale; vertices have four influences each; three clips (a
loop, a clamp, a one-frame pose). VERTEX textures store an LBS pose per frame of the same rig. A mirrored
rig (BONE_MATRIX only: BONE_DQ refuses mirrors) has the bones :data:`MIRRORED` scaled by -1 along their
own x axis in every frame (negative determinant). An Auto rig (bone kinds, ``auto=True``) is the limb of
:mod:`tests.support.auto_rig` (three bones bending and twisting, its first :data:`VERTICES` vertices) with
its Auto data: the texture carries Auto, and the scene each vertex's Auto rest data.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from hybrid_skin.core import animtex as source_animtex
from tests.support import auto_rig

VERTICES, BONES = 300, 7
#: The bones a mirrored scene scales by -1 along x.
MIRRORED = (0, 3)
#: (name, frame_start, frame_end, loop)
CLIPS = (("walk", 1, 13, True), ("run", 1, 9, False), ("pose", 1, 1, False))
#: (clip a, sample a, clip b, sample b, weight, deform factor): loops wrapping, clamps holding, weights
#: strictly between and exactly at the ends. A negative factor is Auto (:data:`AUTO_CASES`).
CASES = (
    (0, 3.25, 1, 0.5, 0.5, 0.5),
    (0, 11.75, 1, 7.9, 0.2, 0.0),
    (1, 9.5, 2, 0.0, 0.85, 1.0),
    (2, 0.0, 0, 5.5, 0.6, 0.3),
    (1, 4.5, 0, 2.0, 0.0, 0.5),
    (0, 7.25, 2, 0.0, 1.0, 0.7),
)
#: The same playback with Auto (factor -1) where the ports play an Auto rig, one case keeping a factor.
AUTO_CASES = tuple((*case[:5], -1.0 if i != 4 else 0.5) for i, case in enumerate(CASES))


@dataclass(frozen=True)
class Scene:
    texture: object  # the core's AnimationTexture
    rest: np.ndarray  # (N, 3) float32
    normals: np.ndarray  # (N, 3) float32 unit
    bones: np.ndarray  # (N, 4) int32
    weights: np.ndarray  # (N, 4) float32, rows sum to 1
    auto_rest: np.ndarray | None = None  # (N, 4) float32 Auto rest data (a texture that carries Auto)

    @property
    def cases(self) -> tuple:
        return AUTO_CASES if self.auto_rest is not None else CASES


def _axis_angle(axis: np.ndarray, angle: np.ndarray) -> np.ndarray:
    k = axis / np.linalg.norm(axis, axis=-1, keepdims=True)
    kx = np.zeros(k.shape[:-1] + (3, 3))
    kx[..., 0, 1], kx[..., 0, 2], kx[..., 1, 2] = -k[..., 2], k[..., 1], -k[..., 0]
    kx = kx - np.swapaxes(kx, -1, -2)
    s, c = np.sin(angle)[..., None, None], np.cos(angle)[..., None, None]
    return np.eye(3) + s * kx + (1 - c) * kx @ kx


def auto_scene(kind: str, precision: str, at=source_animtex) -> Scene:
    """The Auto rig (module docstring) encoded as bone ``kind``/``precision`` by ``at``, carrying Auto."""
    rig = auto_rig.auto_rig(rings_per_bone=10, segments=10)
    clips = [
        at.Clip(name, start, end, loop=loop)
        for name, start, end, loop in (*auto_rig.CLIPS, auto_rig.POSE_CLIP)
    ]
    frames = [np.arange(c.frame_count, dtype=np.float64) for c in clips]
    matrices = [rig.deform(i, f) for i, f in enumerate(frames)]
    bones = [rig.bone_data(i, f) for i, f in enumerate(frames)]
    encode = at.encode_bone_dq_animation if kind == "BONE_DQ" else at.encode_bone_matrix_animation
    tex = encode(
        matrices, clips, [f"b{i}" for i in range(len(rig.rest))], bone_pivots=rig.pivots,
        precision=at.Precision(precision), auto=at.AutoBake("ROUND", bones, 4),
    )  # fmt: skip
    keep = slice(0, VERTICES)
    return Scene(
        tex, rig.positions[keep], rig.normals[keep], rig.bone_indices[keep], rig.weights[keep],
        rig.vertex_rest()[keep],
    )  # fmt: skip


def scene(
    kind: str, precision: str, at=source_animtex, *, mirrored: bool = False, auto: bool = False
) -> Scene:
    """The rig encoded as ``kind``/``precision`` by ``at`` (the core's ``animtex`` package: the source
    tree's by default; GPU tests pass the installed add-on's, whose types the decoders check);
    ``mirrored``: the bones :data:`MIRRORED` scaled by -1 along x (BONE_MATRIX only); ``auto``: the Auto
    rig (bone kinds)."""
    if auto:
        return auto_scene(kind, precision, at)
    assert not mirrored or kind == "BONE_MATRIX", "only BONE_MATRIX stores mirrored bones"
    clips = [at.Clip(name, start, end, loop=loop) for name, start, end, loop in CLIPS]
    rng = np.random.default_rng(4)
    heads = rng.normal(size=(BONES, 3))
    rest = rng.normal(size=(VERTICES, 3)).astype(np.float32)
    normals = rng.normal(size=(VERTICES, 3))
    normals = (normals / np.linalg.norm(normals, axis=1, keepdims=True)).astype(np.float32)
    bones = np.stack([rng.choice(BONES, 4, replace=False) for _ in range(VERTICES)]).astype(np.int32)
    weights = rng.random((VERTICES, 4)) ** 2
    weights = (weights / weights.sum(1, keepdims=True)).astype(np.float32)
    matrices, positions, skinned_normals = [], [], []
    for clip in clips:
        f = np.arange(clip.frame_count)[:, None]
        angle = 2 * np.pi * f / 12 * rng.uniform(0.5, 1.5, BONES) + rng.uniform(-3, 3, BONES)
        rot = _axis_angle(np.broadcast_to(rng.normal(size=(BONES, 3)), (len(f), BONES, 3)), angle)
        rot *= rng.uniform(0.9, 1.15, (len(f), BONES, 1, 1))
        if mirrored:
            rot[:, list(MIRRORED)] = rot[:, list(MIRRORED)] @ np.diag([-1.0, 1.0, 1.0])
        moved = heads + 0.1 * np.sin(f[..., None] + np.arange(3))
        m = np.zeros((len(f), BONES, 4, 4))
        m[..., :3, :3], m[..., 3, 3] = rot, 1.0
        m[..., :3, 3] = moved - np.einsum("fbij,bj->fbi", rot, heads)
        matrices.append(m)
        lbs = np.einsum("nk,fnkij->fnij", weights, m[:, bones])
        positions.append(np.einsum("fnij,nj->fni", lbs[..., :3, :3], rest) + lbs[..., :3, 3])
        n = np.einsum("fnij,nj->fni", lbs[..., :3, :3], normals)
        skinned_normals.append(n / np.linalg.norm(n, axis=-1, keepdims=True))
    p = at.Precision(precision)
    if kind == "VERTEX":
        tex = at.encode_vertex_animation(rest, positions, skinned_normals, clips, precision=p)
    else:
        encode = at.encode_bone_dq_animation if kind == "BONE_DQ" else at.encode_bone_matrix_animation
        tex = encode(matrices, clips, [f"b{i}" for i in range(BONES)], bone_pivots=heads, precision=p)
    return Scene(tex, rest, normals, bones, weights)
