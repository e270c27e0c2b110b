"""Bind state of one skinned mesh: read once per bind, evaluated per frame in O(bones) + the core.

A :class:`SkinRig` holds what does not change from frame to frame (rest geometry, influences, B-bone
rest segments). Per frame, :meth:`SkinRig.palette` reads the evaluated pose in bulk and builds bone
matrices and dual quaternions (O(bones)); :meth:`SkinRig.evaluate` runs the numpy core.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import bpy
import numpy as np

from .. import bridge
from ..core import autofactor
from ..core import binding as core_binding
from ..core.skinning import BonePalette, SkinBinding, bone_palette, skin

__all__ = ["SkinRig", "bind", "cached_rig", "forget", "forget_all"]


@dataclass
class SkinRig:
    object_name: str
    modifier_name: str
    armature_name: str
    bones: core_binding.DeformBones
    pose_index: np.ndarray
    rest_positions: np.ndarray
    rest_normals: np.ndarray
    entries: tuple[np.ndarray, np.ndarray, np.ndarray]  # counts, deform bone per entry, weight
    group_weights: dict[int, np.ndarray]  # vertex group index → (N,) weights, for mask/factor groups
    mask: tuple[int, bool, bool]  # (group index or -1, invert, use envelopes)
    rest_segments: dict[int, np.ndarray]
    virtual_rest: np.ndarray
    fingerprint: tuple
    binding: SkinBinding = field(init=False)
    bound_target_to_armature: np.ndarray = field(init=False)

    @property
    def vertex_count(self) -> int:
        return int(self.rest_positions.shape[0])

    def rebuild_binding(
        self, target_to_armature: np.ndarray, arm_eval: bpy.types.Object | None = None
    ) -> None:
        """(Re)compute influences for the given mesh→armature transform (B-bone segments depend on it)."""
        counts, bone, weight = self.entries
        points = (
            self.rest_positions.astype(np.float64) @ target_to_armature[:3, :3].T + target_to_armature[:3, 3]
        )
        group, invert, envelopes = self.mask
        mask = self.group_weights.get(group) if group >= 0 else None
        if group >= 0 and mask is None:
            mask = np.zeros(self.vertex_count)
        split = None
        if self.bones.curved.any():
            arm_eval = arm_eval or bpy.data.objects[self.armature_name]

            def split(d: int, pts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
                pb = arm_eval.pose.bones[self.bones.names[d]]
                res = np.array([pb.bbone_segment_index(tuple(p)) for p in pts], dtype=np.float64).reshape(
                    -1, 2
                )
                return res[:, 0].astype(np.int32), res[:, 1]

        self.binding = core_binding.build_binding(
            counts, bone, weight, points, self.bones, mask, invert, envelopes, split
        )
        self.bound_target_to_armature = target_to_armature

    def refresh_rest(self, obj: bpy.types.Object, depsgraph: bpy.types.Depsgraph) -> bool:
        """Re-read the rest input when shape keys or modifiers above may animate it; True if it moved."""
        mod = obj.modifiers.get(self.modifier_name)
        if mod is None:
            raise bridge.HybridSkinError(
                f"'{obj.name}' lost its Armature modifier '{self.modifier_name}': rebind"
            )
        stack = list(obj.modifiers)
        dynamic = obj.data.shape_keys is not None or any(m.show_viewport for m in stack[: stack.index(mod)])
        if not dynamic:
            return False
        positions, normals = bridge.rest_geometry(obj, mod, depsgraph, baked_keys(obj))
        if np.array_equal(positions, self.rest_positions):
            return False
        self.rest_positions = np.ascontiguousarray(positions, dtype=np.float32)
        self.rest_normals = np.ascontiguousarray(normals, dtype=np.float32)
        return True

    def target_to_armature(self, obj_eval: bpy.types.Object, arm_eval: bpy.types.Object) -> np.ndarray:
        return np.linalg.inv(np.linalg.inv(bridge.object_matrix(obj_eval)) @ bridge.object_matrix(arm_eval))

    def deform_matrices(self, arm_eval: bpy.types.Object) -> np.ndarray:
        """Deform matrices of every palette entry for the evaluated pose ``(V, 4, 4)`` (O(bones))."""
        channel = bridge.channel_matrices(arm_eval, self.pose_index)
        if not self.rest_segments:
            return channel
        pose_segments = bridge.segment_matrices(arm_eval, self.bones, rest=False)
        return core_binding.virtual_deform_matrices(self.bones, channel, pose_segments, self.rest_segments)

    def palette(self, arm_eval: bpy.types.Object, deform: np.ndarray | None = None) -> BonePalette:
        """Bone matrices and dual quaternions of the evaluated pose (O(bones))."""
        return bone_palette(self.deform_matrices(arm_eval) if deform is None else deform, self.virtual_rest)

    def auto_bone_data(self, deform: np.ndarray) -> np.ndarray:
        """Per palette bone ``(V, 4)`` accumulated twist and swing for the AUTO factor (O(bones))."""
        return autofactor.bone_factor_data(deform, self.virtual_rest, self.bones.virtual_parents())

    def auto_factors(self, deform: np.ndarray) -> np.ndarray:
        return autofactor.vertex_factors(
            self.auto_bone_data(deform), self.binding.bone_indices, self.binding.weights
        )

    def evaluate(
        self,
        depsgraph: bpy.types.Depsgraph,
        deform_factor: float | np.ndarray | str,
        normals: bool = False,
    ) -> tuple[np.ndarray, np.ndarray | None]:
        """Skin at the depsgraph's frame; ``deform_factor`` may be ``"AUTO"`` (per vertex, from the pose)."""
        obj = bpy.data.objects[self.object_name]
        obj_eval = obj.evaluated_get(depsgraph)
        arm_eval = bpy.data.objects[self.armature_name].evaluated_get(depsgraph)
        t2a = self.target_to_armature(obj_eval, arm_eval)
        changed = self.refresh_rest(obj, depsgraph)
        if changed or not np.allclose(t2a, self.bound_target_to_armature, rtol=0.0, atol=1e-9):
            self.rebuild_binding(t2a, arm_eval)
        deform = self.deform_matrices(arm_eval)
        if isinstance(deform_factor, str) and deform_factor == "AUTO":
            deform_factor = self.auto_factors(deform)
        return skin(
            self.rest_positions,
            self.binding,
            self.palette(arm_eval, deform),
            deform_factor,
            self.rest_normals if normals else None,
            t2a,
        )


def baked_keys(obj: bpy.types.Object) -> tuple[str, ...]:
    """Names of the shape keys Hybrid Skin baked on ``obj`` (excluded from the rest input)."""
    settings = getattr(obj, "hybrid_skin", None)
    if settings is None or not settings.bake_state:
        return ()
    return tuple(json.loads(settings.bake_state).get("keys", ()))


def _fingerprint(obj: bpy.types.Object, mod: bpy.types.ArmatureModifier) -> tuple:
    arm = mod.object
    return (
        obj.data.session_uid,
        len(obj.data.vertices),
        mod.name,
        arm.session_uid if arm else None,
        mod.vertex_group,
        mod.invert_vertex_group,
        mod.use_bone_envelopes,
        mod.use_vertex_groups,
        tuple(g.name for g in obj.vertex_groups),
        tuple((b.name, b.use_deform, b.bbone_segments) for b in arm.data.bones) if arm else (),
    )


def bind(
    obj: bpy.types.Object,
    depsgraph: bpy.types.Depsgraph,
    modifier_name: str = "",
    extra_groups: tuple[str, ...] = (),
) -> SkinRig:
    """Read everything a mesh needs for skinning. Raises :class:`bridge.HybridSkinError` on bad input."""
    mod = bridge.armature_modifier(obj, modifier_name)
    arm = bridge.validate(obj, mod)
    bones = bridge.deform_bones(arm)
    arm_eval = arm.evaluated_get(depsgraph)
    positions, normals = bridge.rest_geometry(obj, mod, depsgraph, baked_keys(obj))
    counts, groups, weights = bridge.read_vertex_group_entries(obj.data)

    group_names = [g.name for g in obj.vertex_groups]
    bone_of_name = {name: i for i, name in enumerate(bones.names)}
    group_to_bone = np.array([bone_of_name.get(name, -1) for name in group_names] + [-1], dtype=np.int64)
    entry_bone = group_to_bone[np.where(groups < len(group_names), groups, len(group_names))]
    if mod.use_vertex_groups and not mod.use_bone_envelopes and not np.any(group_to_bone >= 0):
        raise bridge.HybridSkinError(
            f"No vertex group of '{obj.name}' matches a deform bone of '{arm.name}': "
            "parent with automatic weights or rename the groups after the bones"
        )
    if not mod.use_vertex_groups:
        entry_bone = np.full_like(entry_bone, -1)

    wanted = {mod.vertex_group, *extra_groups} - {""}
    vertex = np.repeat(np.arange(len(counts)), counts)
    group_weights: dict[int, np.ndarray] = {}
    for name in wanted:
        gi = obj.vertex_groups.find(name)
        if gi >= 0:
            w = np.zeros(len(counts), dtype=np.float64)
            hit = groups == gi
            w[vertex[hit]] = weights[hit]
            group_weights[gi] = w

    rest_segments = bridge.segment_matrices(arm_eval, bones, rest=True)
    rig = SkinRig(
        object_name=obj.name,
        modifier_name=mod.name,
        armature_name=arm.name,
        bones=bones,
        pose_index=bridge.pose_bone_index(arm, bones.names),
        rest_positions=np.ascontiguousarray(positions, dtype=np.float32),
        rest_normals=np.ascontiguousarray(normals, dtype=np.float32),
        entries=(counts, entry_bone, weights),
        group_weights=group_weights,
        mask=(
            obj.vertex_groups.find(mod.vertex_group) if mod.vertex_group else -1,
            mod.invert_vertex_group,
            mod.use_bone_envelopes,
        ),
        rest_segments=rest_segments,
        virtual_rest=core_binding.virtual_rest_matrices(bones, rest_segments),
        fingerprint=_fingerprint(obj, mod),
    )
    obj_eval = obj.evaluated_get(depsgraph)
    rig.rebuild_binding(rig.target_to_armature(obj_eval, arm_eval), arm_eval)
    return rig


_RIGS: dict[int, SkinRig] = {}


def cached_rig(
    obj: bpy.types.Object,
    depsgraph: bpy.types.Depsgraph,
    modifier_name: str = "",
    extra_groups: tuple[str, ...] = (),
) -> SkinRig:
    """The rig for ``obj``, re-bound when its mesh, modifier settings, groups or bones changed."""
    mod = bridge.armature_modifier(obj, modifier_name)
    rig = _RIGS.get(obj.session_uid)
    if (
        rig is None
        or rig.fingerprint != _fingerprint(obj, mod)
        or rig.object_name != obj.name
        or any(gi not in rig.group_weights for gi in map(obj.vertex_groups.find, extra_groups) if gi >= 0)
    ):
        rig = bind(obj, depsgraph, mod.name, extra_groups)
        _RIGS[obj.session_uid] = rig
    return rig


def forget(obj: bpy.types.Object) -> None:
    _RIGS.pop(obj.session_uid, None)


def forget_all() -> None:
    _RIGS.clear()


def peek(obj: bpy.types.Object) -> SkinRig | None:
    """The cached rig of ``obj`` if any, without binding (for UI)."""
    return _RIGS.get(obj.session_uid)
