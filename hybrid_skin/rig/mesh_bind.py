"""A skinned mesh's bind and the bind posed at one frame: read once, brought up to each frame in O(bones).

A :class:`MeshBind` holds what does not change from frame to frame (rest geometry, influences, B-bone
rest segments). :meth:`MeshBind.posed` is the one way to bring it up to the depsgraph's frame: re-read a
rest input that can animate, rebuild the influences when they depend on where the rest points sit in
armature space, and read the pose in bulk (deform matrices, bone palette) as a :class:`PosedBind`,
which skins. The API, the viewport, the render comparison, the analysis and every bake use it. Reading a
bind and the session's cache of binds: :mod:`.bind`.
"""

from __future__ import annotations

import functools
import itertools
from dataclasses import dataclass, field

import bpy
import numpy as np

from .. import bridge
from ..core import autofactor
from ..core import binding as core_binding
from ..core.analysis import palette_lengths
from ..core.skinning import BonePalette, SkinBinding, bone_palette, skin, skin_with_ends
from ..core.small_linalg import inverse_affine
from ..errors import HybridSkinError
from . import checks, stack
from . import weights as weights_mod
from .bake_record import BakeRecord

__all__ = [
    "TRANSFORM_TOLERANCE",
    "MeshBind",
    "PosedBind",
    "auto_profile",
    "baked_keys",
    "posed_by",
    "target_to_armature",
]

#: Largest change of an entry of the mesh-to-armature matrix that still counts as "not moved".
TRANSFORM_TOLERANCE = 1e-9

_serials = itertools.count(1)


def target_to_armature(obj_eval: bpy.types.Object, arm_eval: bpy.types.Object) -> np.ndarray:
    """Mesh-local → armature space ``(4, 4)`` (Blender's ``premat``) of the evaluated objects."""
    return inverse_affine(inverse_affine(bridge.object_matrix(obj_eval)) @ bridge.object_matrix(arm_eval))


@dataclass
class MeshBind:
    """One mesh's bind: rest input, influences and bone rest data, as :func:`bind` read them."""

    #: Names as they were at bind time, for messages; the bind follows the objects by ``session_uid`` and
    #: the armature through its Armature modifier, so renaming either object never breaks it.
    object_name: str
    modifier_name: str
    modifier_uid: int
    armature_name: str
    object_uid: int
    armature_uid: int
    bones: core_binding.DeformBones
    pose_index: np.ndarray
    rest_positions: np.ndarray
    rest_normals: np.ndarray
    entries: weights_mod.Entries  # counts, deform bone per entry, weight
    group_weights: dict[int, np.ndarray]  # vertex group index → (N,) weights, for mask/factor groups
    mask: tuple[int, bool, bool]  # (group index or -1, invert, use envelopes)
    rest_segments: dict[int, np.ndarray]
    virtual_rest: np.ndarray
    fingerprint: tuple
    #: Blender reported the mesh's data changed since the bind or its last check (:func:`mark_edited`):
    #: the next :func:`cached_bind` compares weights and rest input before using it.
    suspect: bool = False
    #: A modifier above the Armature modifier may change the weights at any frame: every
    #: :func:`cached_bind` with ``check_rest`` compares them (see the module docstring).
    live_weights: bool = False
    #: A number no other bind of this session has: what a cache of something derived from this bind
    #: (the factor group's values) compares, since ``id()`` may be reused once a bind is dropped.
    serial: int = field(default_factory=lambda: next(_serials))
    binding: SkinBinding = field(init=False)
    bound_target_to_armature: np.ndarray = field(init=False)
    #: Auto's per-vertex rest data and what it was computed from (:meth:`auto_rest`).
    _auto_rest: tuple | None = field(default=None, init=False, repr=False)

    @functools.cached_property
    def palette_parents(self) -> np.ndarray:
        """``bones.virtual_parents()``, computed once per bind (Auto reads it every frame)."""
        return self.bones.virtual_parents()

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
            arm_eval = arm_eval or self.armature(self.mesh_object())

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

    def mesh_object(self) -> bpy.types.Object:
        """The bound mesh object, found again by identity (``session_uid``) if it was renamed."""
        obj = bpy.data.objects.get(self.object_name)
        if obj is None or obj.session_uid != self.object_uid:
            obj = next((o for o in bpy.data.objects if o.session_uid == self.object_uid), None)
        if obj is None:
            raise HybridSkinError(f"'{self.object_name}' no longer exists: nothing to skin")
        self.object_name = obj.name
        return obj

    def modifier(self, obj: bpy.types.Object) -> bpy.types.ArmatureModifier:
        """The bound Armature modifier, by its persistent id (a rename keeps it), else by name."""
        mod = stack.find_modifier(obj, [self.modifier_uid, self.modifier_name])
        if mod is None or mod.type != "ARMATURE":
            raise HybridSkinError(f"'{obj.name}' lost its Armature modifier '{self.modifier_name}': rebind")
        self.modifier_name = mod.name
        return mod

    def armature(self, obj: bpy.types.Object) -> bpy.types.Object:
        """The armature object, by reference: the one the bound Armature modifier deforms by, whatever its
        name now. A modifier that lost it, or now points at another armature, is a clear error."""
        mod = self.modifier(obj)
        arm = mod.object
        if arm is None or arm.type != "ARMATURE":
            raise HybridSkinError(
                f"Armature modifier '{mod.name}' on '{obj.name}' has no armature: "
                "pick one in its Object field"
            )
        if arm.session_uid != self.armature_uid:
            raise HybridSkinError(
                f"Armature modifier '{mod.name}' on '{obj.name}' now deforms by '{arm.name}': rebind"
            )
        self.armature_name = arm.name
        return arm

    def mesh_moved(self, obj: bpy.types.Object, mod: bpy.types.ArmatureModifier) -> bool:
        """Whether the mesh's own vertices moved since the bind (edited without Rebind). A rest input that
        can animate (shape keys, modifiers above) is re-read at every pose anyway: never stale."""
        modifiers = stack.user_modifiers(obj)
        if obj.data.shape_keys is not None or any(m.show_viewport for m in modifiers[: modifiers.index(mod)]):
            return False
        return not np.array_equal(bridge.vertex_positions(obj.data), self.rest_positions)

    def refresh_rest(self, obj: bpy.types.Object, depsgraph: bpy.types.Depsgraph) -> bool:
        """Re-read the rest input when shape keys or modifiers above may animate it; True if it moved."""
        mod = self.modifier(obj)
        modifiers = stack.user_modifiers(obj)
        above = modifiers[: modifiers.index(mod)]
        dynamic = obj.data.shape_keys is not None or any(m.show_viewport for m in above)
        if not dynamic:
            return False
        positions, normals = stack.rest_geometry(obj, mod, depsgraph, baked_keys(obj))
        if np.array_equal(positions, self.rest_positions):
            return False
        self.rest_positions = np.ascontiguousarray(positions, dtype=np.float32)
        self.rest_normals = np.ascontiguousarray(normals, dtype=np.float32)
        return True

    @property
    def binding_uses_positions(self) -> bool:
        """Whether the influences depend on where the rest points lie in armature space: B-bone segments
        and envelopes do; plain vertex-group weights (and the mask group) do not."""
        return bool((self.bones.segments > 1).any() or self.bones.envelope_multiply.any() or self.mask[2])

    def auto_rest(self, placement: np.ndarray) -> np.ndarray:
        """Per vertex ``(N, 4)`` rest data of Auto's round profiles (``autofactor.vertex_geometry``) for the
        mesh→armature ``placement``: computed once (O(N·K)) and kept until the rest input, the binding or
        the placement changes, so the GPU display uploads it only then (it compares by identity)."""
        key = (self.rest_positions, self.binding)
        cached = self._auto_rest
        if cached is not None and cached[0][0] is key[0] and cached[0][1] is key[1] and np.allclose(
            cached[1], placement, rtol=0.0, atol=TRANSFORM_TOLERANCE
        ):
            return cached[2]
        points = self.rest_positions.astype(np.float64) @ placement[:3, :3].T + placement[:3, 3]
        b, lengths = self.binding, palette_lengths(self.bones, self.virtual_rest)
        rest = autofactor.vertex_geometry(points, b.bone_indices, b.weights, self.virtual_rest, lengths)
        self._auto_rest = (key, np.array(placement, dtype=np.float64), rest)
        return rest

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

    def posed(self, depsgraph: bpy.types.Depsgraph) -> PosedBind:
        """This bind brought up to the depsgraph's frame: the one way every feature poses a bind.

        A rest input that can animate is re-read (O(1) unless the mesh has shape keys or modifiers above
        its Armature modifier); the influences are rebuilt when the rest points or the mesh-to-armature
        transform moved (beyond :data:`TRANSFORM_TOLERANCE`) and they depend on them; then the pose is
        read in bulk, O(bones). Consumers of ``binding`` and ``rest_positions`` (the GPU skin) notice a
        rebuild by identity: both are replaced, never edited.
        """
        obj = self.mesh_object()
        arm_eval = self.armature(obj).evaluated_get(depsgraph)
        placement = target_to_armature(obj.evaluated_get(depsgraph), arm_eval)
        moved = self.refresh_rest(obj, depsgraph)
        placed = np.allclose(placement, self.bound_target_to_armature, rtol=0.0, atol=TRANSFORM_TOLERANCE)
        if (moved or not placed) and self.binding_uses_positions:
            self.rebuild_binding(placement, arm_eval)
        if checks.armature_in_edit_mode(arm_eval.original):
            # Blender deforms by the rest pose while the bones are edited (its pose is not evaluated).
            deform = np.broadcast_to(np.eye(4), self.virtual_rest.shape).copy()
        else:
            deform = self.deform_matrices(arm_eval)
        return PosedBind(self, placement, deform, bone_palette(deform, self.virtual_rest))


@dataclass(frozen=True, eq=False)
class PosedBind:
    """A bind at one frame (:meth:`MeshBind.posed`): everything the skinning formulas need."""

    bind: MeshBind
    #: Mesh-local → armature space at this frame.
    target_to_armature: np.ndarray
    #: ``(V, 4, 4)`` deform matrices of every palette entry (B-bone segment joints are entries).
    deform: np.ndarray
    palette: BonePalette

    def auto_bone_data(self, profile: str | None = None) -> autofactor.AutoPose:
        """What the Auto factor needs at this pose: per palette bone ``(V, 8)`` accumulated twist and swing
        (O(bones)) and, for the round profiles, the vertices' rest data (cached by the bind). ``profile``:
        one of ``autofactor.PROFILES``; ``None`` is the object's own (:func:`auto_profile`)."""
        b = self.bind
        profile = profile or auto_profile(b.mesh_object())
        bones = autofactor.bone_factor_data(self.deform, b.virtual_rest, b.palette_parents)
        rest = None if profile == "JOINT" else b.auto_rest(self.target_to_armature)
        return autofactor.AutoPose(profile, bones, rest)

    def auto_factors(self, profile: str | None = None) -> np.ndarray:
        """The Auto factor ``(N,)`` of every vertex at this pose; ``profile`` as :meth:`auto_bone_data`."""
        binding = self.bind.binding
        return autofactor.vertex_factors(self.auto_bone_data(profile), binding.bone_indices, binding.weights)

    def skin(
        self, factors: float | np.ndarray, normals: bool = False
    ) -> tuple[np.ndarray, np.ndarray | None]:
        """Positions (and unit normals) ``(N, 3)`` float32 in mesh space, skinned with ``factors``
        (one number, or ``(N,)`` per vertex; see :meth:`..factor.DeformFactor.values`)."""
        b = self.bind
        rest_normals = b.rest_normals if normals else None
        return skin(b.rest_positions, b.binding, self.palette, factors, rest_normals, self.target_to_armature)

    def skin_with_ends(self, factors: float | np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Positions and unit normals at ``factors``, and the positions at deform factors 0 and 1
        ``(2, N, 3)``, from one blend (:func:`..core.skinning.skin_with_ends`)."""
        b = self.bind
        return skin_with_ends(
            b.rest_positions, b.binding, self.palette, factors, b.rest_normals, self.target_to_armature
        )


def posed_by(
    bound: MeshBind, obj: bpy.types.Object, arm: bpy.types.Object, depsgraph: bpy.types.Depsgraph
) -> PosedBind:
    """``bound`` at ``arm``'s pose now, for a mesh whose Armature modifier is gone (Convert) but whose bind
    is still cached: :meth:`MeshBind.posed` without the modifier, the rest input as it was bound."""
    arm_eval = arm.evaluated_get(depsgraph)
    placement = target_to_armature(obj.evaluated_get(depsgraph), arm_eval)
    deform = bound.deform_matrices(arm_eval)
    return PosedBind(bound, placement, deform, bone_palette(deform, bound.virtual_rest))


def auto_profile(obj: bpy.types.Object) -> str:
    """The Auto profile ``obj`` is skinned with: its setting (which reads "JOINT" for objects saved in Auto
    before profiles existed, see ``skin/properties.py``), the default for an object without settings."""
    settings = getattr(obj, "hybrid_skin", None)
    return autofactor.DEFAULT_PROFILE if settings is None else settings.auto_profile


def baked_keys(obj: bpy.types.Object) -> tuple[str, ...]:
    """Names of the shape keys Hybrid Skin baked on ``obj`` (excluded from the rest input)."""
    settings = getattr(obj, "hybrid_skin", None)
    if settings is None or not settings.bake_state:
        return ()
    return tuple(BakeRecord.load(settings.bake_state).keys)
