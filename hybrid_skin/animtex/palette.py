"""The bone palette of a bake's meshes (bone kinds), from their posed binds.

All meshes of one bake must sit alike relative to the armature: one palette, in mesh space, serves them
all. The numbers come from :mod:`..core.animtex.palette`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..core.animtex import palette as core_palette
from ..core.animtex.palette import BONE_SLOTS, REST_BONE
from ..errors import HybridSkinError
from ..rig.mesh_bind import PosedBind
from .scene import MeshPart

__all__ = ["BONE_SLOTS", "REST_BONE", "Palette", "prepare", "skinning_matrices"]


@dataclass
class Palette:
    names: list[str]
    pivots: np.ndarray  # (B, 3) rest heads in mesh space (zero for the rest bone)
    rest_bone: bool  # whether the last entry is REST_BONE
    truncated: int  # vertices that had more than BONE_SLOTS influences


def skinning_matrices(posed: PosedBind, rest_bone: bool) -> np.ndarray:
    """``(B, 4, 4)`` palette skinning matrices in the mesh space of ``posed``'s mesh at its frame."""
    return core_palette.skinning_matrices(posed.deform, posed.target_to_armature, rest_bone)


def prepare(armature_name: str, parts: list[MeshPart], posed: list[PosedBind]) -> Palette:
    """Palette names, pivots and per-vertex influences (set on ``parts``), checked at the posed frame."""
    t2a = [p.target_to_armature for p in posed]
    for part, m in zip(parts[1:], t2a[1:]):
        if not np.allclose(m, t2a[0], atol=1e-6):
            raise HybridSkinError(
                f"'{part.obj.name}' and '{parts[0].obj.name}' sit differently relative to "
                f"'{armature_name}': bone textures hold one palette in mesh space. Apply their "
                "transforms (Ctrl+A) or bake each mesh on its own"
            )
    binds = [p.bind for p in posed]
    rest_bone = any(np.any(b.binding.influence < 1.0) for b in binds)
    names = core_palette.palette_names(binds[0].bones, rest_bone)
    pivots = core_palette.palette_pivots(binds[0].virtual_rest, t2a[0], rest_bone)
    truncated = 0
    for part, bound in zip(parts, binds):
        rest_index = len(names) - 1 if rest_bone else -1
        part.bone_indices, part.bone_weights, cut = core_palette.vertex_influences(bound.binding, rest_index)
        truncated += cut
    return Palette(names, pivots, rest_bone, truncated)
