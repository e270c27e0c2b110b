"""Root motion: how a baked mesh moves as a whole over a clip, written as data beside the texture.

Animation textures are *in place*: they hold each vertex or bone in the mesh's own space, so when an
action also moves the armature object (object-level F-curves, i.e. root motion) that motion is not in
the texture. Engines move crowd instances themselves, so each clip whose mesh moves gets a track:
for every stored sample ``t`` of the clip (same count and order as the texture's frames),

    M_t = inv(W_0) @ W_t = T(translation_t) @ R(rotation_t) @ S(scale_t)

where ``W_t`` is the mesh's object (world) matrix at sample ``t`` and ``W_0`` at the clip's first
sample. ``M_t`` is expressed in the mesh's space at the first sample (translation in that mesh-local
space and units), so an engine plays it as ``instance_world_t = instance_world_at_clip_start @ M_t``.
Rotations are unit quaternions ``(w, x, y, z)``, ``rotation_0 = (1, 0, 0, 0)``, each on the same
hemisphere as the one before so that nlerp/slerp between neighbours takes the short way. A looping
clip also gets ``cycle``: ``M`` at its end frame, where it wraps (one loop's motion).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..dualquat import quaternion_from_matrix, quaternion_to_matrix
from .encode import continuous_quaternions

__all__ = [
    "ROOT_MOTION_RULE",
    "ROOT_MOTION_TOLERANCE",
    "root_motion_at",
    "root_motion_matrices",
    "root_motion_track",
]

#: A world matrix counts as constant over a clip when no entry moves by more than this times the
#: largest entry of the first sample's matrix (at least 1): Blender stores object matrices as float32.
ROOT_MOTION_TOLERANCE = 1e-6
ROOT_MOTION_RULE = "instance_world = instance_world_at_clip_start @ T(translation) @ R(rotation) @ S(scale)"
_SPACE = "mesh object space at the clip's first stored sample (its local units); M_t = inv(W_0) @ W_t"


def _float32_lists(a: np.ndarray) -> list:
    """Rounded to float32 precision, as float64 lists (float32 → JSON → float32 is exact)."""
    return np.asarray(a, dtype=np.float32).astype(np.float64).tolist()


def _decompose(matrices: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(F, 4, 4)`` affine matrices → translation ``(F, 3)``, rotation ``(F, 4)``, scale ``(F, 3)``.

    Blender's convention (``Matrix.decompose``): scale is the length of each column of the 3x3 part,
    negated on all three axes where the matrix mirrors; the rotation is the nearest rotation to the
    columns divided by their scale (exact without shear).
    """
    linear = matrices[:, :3, :3]
    scale = np.linalg.norm(linear, axis=1)
    scale = np.where(np.linalg.det(linear)[:, None] < 0, -scale, scale)
    u, _, vt = np.linalg.svd(linear / np.where(scale == 0, 1.0, scale)[:, None, :])
    mirrored = np.linalg.det(u @ vt) < 0  # only where an axis has zero scale
    u[mirrored, :, 2] *= -1
    return matrices[:, :3, 3], quaternion_from_matrix(u @ vt), scale


def root_motion_track(
    world: np.ndarray,
    *,
    cycle_end: np.ndarray | None = None,
    tolerance: float = ROOT_MOTION_TOLERANCE,
) -> dict[str, Any] | None:
    """The clip's root motion track from the mesh's object matrices ``(F, 4, 4)`` at its stored samples.

    ``cycle_end``: for a looping clip, the matrix at its end frame (where it wraps, not a stored
    sample); the track then also holds ``cycle``, the motion of one whole loop (``M`` at the wrap), so
    an engine advances ``instance_world_at_clip_start`` by it each time the clip loops (a walk cycle).
    ``None`` when the matrix is constant over the clip (within ``tolerance``, relative, see
    :data:`ROOT_MOTION_TOLERANCE`); otherwise the sidecar's ``root_motion`` dict (module docstring).
    Raises ``ValueError`` when the first matrix cannot be inverted (the object starts at zero scale).
    """
    w = np.asarray(world, dtype=np.float64)
    if w.ndim != 3 or w.shape[1:] != (4, 4) or len(w) == 0:
        raise ValueError(f"world matrices must be (F, 4, 4), got {w.shape}")
    every = w if cycle_end is None else np.concatenate([w, np.asarray(cycle_end, np.float64)[None]])
    limit = tolerance * max(1.0, float(np.abs(w[0]).max()))
    if float(np.abs(every - w[0]).max()) <= limit:
        return None
    try:
        relative = np.linalg.solve(w[0], every)  # inv(W_0) @ W_t for every t
    except np.linalg.LinAlgError:
        raise ValueError("the first sample's matrix is singular (zero scale): no relative motion") from None
    relative[0] = np.eye(4)  # exactly, not within rounding
    translation, rotation, scale = _decompose(relative)
    rotation = continuous_quaternions(rotation)
    frames = len(w)
    track = {
        "rule": ROOT_MOTION_RULE,
        "space": _SPACE,
        "translation": _float32_lists(translation[:frames]),
        "rotation": _float32_lists(rotation[:frames]),
        "scale": _float32_lists(scale[:frames]),
    }
    if cycle_end is not None:
        track["cycle"] = {
            "translation": _float32_lists(translation[frames]),
            "rotation": _float32_lists(rotation[frames]),
            "scale": _float32_lists(scale[frames]),
        }
    return track


def root_motion_matrices(track: dict[str, Any]) -> np.ndarray:
    """``(F, 4, 4)`` matrices ``M_t = T @ R @ S`` of a ``root_motion`` track (what an engine computes)."""
    t = np.asarray(track["translation"], dtype=np.float64)
    s = np.asarray(track["scale"], dtype=np.float64)
    rot = quaternion_to_matrix(np.asarray(track["rotation"], dtype=np.float64))
    out = np.tile(np.eye(4), (len(t), 1, 1))
    out[:, :3, :3] = rot * s[:, None, :]
    out[:, :3, 3] = t
    return out


def _compose(translation: np.ndarray, rotation: np.ndarray, scale: np.ndarray) -> np.ndarray:
    out = np.tile(np.eye(4), (len(translation), 1, 1))
    out[:, :3, :3] = quaternion_to_matrix(rotation) * scale[:, None, :]
    out[:, :3, 3] = translation
    return out


def root_motion_at(track: dict[str, Any], frame_count: int, loop: bool, samples: np.ndarray) -> np.ndarray:
    """``(S, 4, 4)`` root motion ``M`` at fractional clip ``samples`` (``seconds * sample_rate``), as a
    runtime plays it (shaders/FORMAT.md section 6, "Root motion playback"): translation and scale lerped,
    rotation nlerped between the stored samples around ``s``; a clip that does not loop holds its ends; a
    loop wraps with period ``frame_count``, its last interval ending at ``cycle``, and adds ``cycle`` once
    per wrap: ``M(s) = cycle^n @ M(s - n F)``, ``n = floor(s / F)`` (negative before the clip's start)."""
    s = np.atleast_1d(np.asarray(samples, dtype=np.float64))
    t = np.asarray(track["translation"], dtype=np.float64)
    r = np.asarray(track["rotation"], dtype=np.float64)
    sc = np.asarray(track["scale"], dtype=np.float64)
    if loop:
        cycle = track["cycle"]
        t, r, sc = (np.concatenate([a, np.asarray(cycle[k], np.float64)[None]]) for a, k in
                    ((t, "translation"), (r, "rotation"), (sc, "scale")))  # fmt: skip
        cycles = np.floor(s / frame_count)
        s = s - cycles * frame_count
    else:
        cycles = np.zeros_like(s)
        s = np.clip(s, 0.0, frame_count - 1)
    f0 = np.minimum(np.floor(s).astype(np.int64), frame_count - 1)
    f1 = f0 + 1 if loop else np.minimum(f0 + 1, frame_count - 1)
    alpha = (s - f0)[:, None]
    q = r[f0] + alpha * (r[f1] - r[f0])
    out = _compose(t[f0] + alpha * (t[f1] - t[f0]), q / np.linalg.norm(q, axis=1, keepdims=True),
                   sc[f0] + alpha * (sc[f1] - sc[f0]))  # fmt: skip
    if loop:
        step = _compose(t[-1:], r[-1:], sc[-1:])[0]
        for k, n in enumerate(cycles.astype(np.int64)):
            out[k] = np.linalg.matrix_power(step, int(n)) @ out[k]
    return out
