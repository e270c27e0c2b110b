"""The bone palette of the bone texture kinds (BONE_MATRIX, BONE_DQ), from a bind's arrays.

The palette is the bind's virtual bones (B-Bone segments as bones of their own), plus the identity
:data:`REST_BONE` where some vertex is only partly skinned; its pivots are the rest heads in mesh space
and its skinning matrices ``inv(T2A) @ deform @ T2A`` map mesh space to mesh space. Each vertex keeps
:data:`BONE_SLOTS` palette indices and weights, what engines skin with.
"""

from __future__ import annotations

import numpy as np

from ..binding import DeformBones
from ..skinning import SkinBinding

__all__ = [
    "BONE_SLOTS",
    "REST_BONE",
    "palette_names",
    "palette_pivots",
    "skinning_matrices",
    "vertex_influences",
]

#: Influences per vertex stored on the mesh for the bone kinds (what engines skin with).
BONE_SLOTS = 4
#: Palette entry added when some vertex is only partly skinned (mask group, no weights): the identity.
REST_BONE = "HS_rest"


def palette_names(bones: DeformBones, rest_bone: bool) -> list[str]:
    """Names of the palette entries: a bone, or ``<bone>.bbone<j>`` per segment joint of a B-Bone,
    then :data:`REST_BONE` when ``rest_bone``."""
    names = []
    for name, count in zip(bones.names, bones.virtual_counts):
        names += [name] if count == 1 else [f"{name}.bbone{j}" for j in range(count)]
    return names + [REST_BONE] * rest_bone


def palette_pivots(virtual_rest: np.ndarray, target_to_armature: np.ndarray, rest_bone: bool) -> np.ndarray:
    """``(B, 3)`` rest heads of the palette entries in mesh space (zero for the rest bone)."""
    count = len(virtual_rest)
    heads = np.linalg.inv(target_to_armature)[:3] @ np.c_[virtual_rest[:, :3, 3], np.ones(count)].T
    return np.concatenate([heads.T, np.zeros((int(rest_bone), 3))])


def skinning_matrices(deform: np.ndarray, target_to_armature: np.ndarray, rest_bone: bool) -> np.ndarray:
    """``(B, 4, 4)`` palette skinning matrices in mesh space: ``inv(T2A) @ deform @ T2A`` per entry of the
    ``(V, 4, 4)`` deform matrices, then the identity for the rest bone."""
    mats = np.linalg.inv(target_to_armature) @ deform @ target_to_armature
    if rest_bone:
        mats = np.concatenate([mats, np.eye(4)[None]])
    return mats


def vertex_influences(binding: SkinBinding, rest_bone: int) -> tuple[np.ndarray, np.ndarray, int]:
    """``(N, 4)`` palette indices and weights per vertex, in Blender's stored order (DQS signs).

    The binding's partial influence ``i`` (mask group; 0 for unweighted vertices) becomes weight
    ``1 - i`` on the identity bone ``rest_bone`` (``-1``: none; exact for ``i`` in {0, 1}, which is what
    real rigs have). More than 4 influences keep the 4 largest, renormalised; returns how many vertices
    that cut.
    """
    idx = binding.bone_indices.astype(np.int32)
    w = binding.weights.astype(np.float64) * binding.influence[:, None]
    if rest_bone >= 0:
        idx = np.c_[idx, np.full(len(idx), rest_bone, np.int32)]
        w = np.c_[w, 1.0 - binding.influence]
    k = idx.shape[1]
    cut = int(np.count_nonzero((w > 0).sum(axis=1) > BONE_SLOTS))
    if k > BONE_SLOTS:
        keep = np.sort(np.argsort(-w, axis=1, kind="stable")[:, :BONE_SLOTS], axis=1)
        idx, w = np.take_along_axis(idx, keep, 1), np.take_along_axis(w, keep, 1)
    elif k < BONE_SLOTS:
        idx = np.c_[idx, np.zeros((len(idx), BONE_SLOTS - k), np.int32)]
        w = np.c_[w, np.zeros((len(w), BONE_SLOTS - k))]
    total = w.sum(axis=1, keepdims=True)
    w = np.divide(w, total, out=np.zeros_like(w), where=total > 0)
    return idx, w.astype(np.float32), cut
