"""The bone palette of the bone texture kinds (BONE_MATRIX, BONE_DQ).

Owns: the palette's names (B-Bone segments as bones of their own, plus the identity :data:`REST_BONE`
where some vertex is only partly skinned) and pivots (rest heads in mesh space), each vertex's
:data:`BONE_SLOTS` palette indices and weights, and the palette's skinning matrices
``inv(T2A) @ deform @ T2A`` in mesh space at the current frame. All meshes of one bake must sit alike
relative to the armature: one palette serves them all.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import bridge
from ..skin import bind as rig
from .scene import MeshPart

HybridSkinError = bridge.HybridSkinError
#: Influences per vertex stored on the mesh for the bone kinds (what engines skin with).
BONE_SLOTS = 4
#: Palette entry added when some vertex is only partly skinned (mask group, no weights): the identity.
REST_BONE = "HS_rest"


@dataclass
class Palette:
    names: list[str]
    pivots: np.ndarray  # (B, 3) rest heads in mesh space (zero for the rest bone)
    rest_bone: bool  # whether the last entry is REST_BONE
    truncated: int  # vertices that had more than BONE_SLOTS influences


def target_to_armature(armature, depsgraph, bound: rig.SkinRig, part: MeshPart) -> np.ndarray:
    arm_eval = armature.evaluated_get(depsgraph)
    return bound.target_to_armature(part.obj.evaluated_get(depsgraph), arm_eval)


def skinning_matrices(armature, depsgraph, bound: rig.SkinRig, part: MeshPart, rest_bone: bool) -> np.ndarray:
    """``(B, 4, 4)`` palette skinning matrices in the mesh space of ``part`` at the current frame."""
    t2a = target_to_armature(armature, depsgraph, bound, part)
    deform = bound.deform_matrices(armature.evaluated_get(depsgraph))
    mats = np.linalg.inv(t2a) @ deform @ t2a
    if rest_bone:
        mats = np.concatenate([mats, np.eye(4)[None]])
    return mats


def prepare(armature, parts: list[MeshPart], rigs: list[rig.SkinRig], depsgraph) -> Palette:
    """Palette names, pivots and per-vertex influences (set on ``parts``), checked at the current frame."""
    t2a = [target_to_armature(armature, depsgraph, b, p) for b, p in zip(rigs, parts)]
    for part, m in zip(parts[1:], t2a[1:]):
        if not np.allclose(m, t2a[0], atol=1e-6):
            raise HybridSkinError(
                f"'{part.obj.name}' and '{parts[0].obj.name}' sit differently relative to "
                f"'{armature.name}': bone textures hold one palette in mesh space. Apply their "
                "transforms (Ctrl+A) or bake each mesh on its own"
            )
    bones = rigs[0].bones
    names = []
    for name, count in zip(bones.names, bones.virtual_counts):
        names += [name] if count == 1 else [f"{name}.bbone{j}" for j in range(count)]
    rest_bone = any(np.any(b.binding.influence < 1.0) for b in rigs)
    heads = np.linalg.inv(t2a[0])[:3] @ np.c_[rigs[0].virtual_rest[:, :3, 3], np.ones(len(names))].T
    pivots = np.concatenate([heads.T, np.zeros((int(rest_bone), 3))])
    truncated = 0
    for part, bound in zip(parts, rigs):
        part.bone_indices, part.bone_weights, cut = vertex_influences(
            bound.binding, len(names) if rest_bone else -1
        )
        truncated += cut
    return Palette(names + [REST_BONE] * rest_bone, pivots, rest_bone, truncated)


def vertex_influences(binding, rest_bone: int) -> tuple[np.ndarray, np.ndarray, int]:
    """``(N, 4)`` palette indices and weights per vertex, in Blender's stored order (DQS signs).

    The binding's partial influence ``i`` (mask group; 0 for unweighted vertices) becomes weight
    ``1 - i`` on the identity bone ``rest_bone`` (exact for ``i`` in {0, 1}, which is what real rigs
    have). More than 4 influences keep the 4 largest, renormalised; returns how many vertices that cut.
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
