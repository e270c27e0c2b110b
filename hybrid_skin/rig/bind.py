"""Bind state of one skinned mesh: read once per bind, brought up to each frame in O(bones) + the core.

A :class:`MeshBind` holds what does not change from frame to frame (rest geometry, influences, B-bone
rest segments). :meth:`MeshBind.posed` is the one way to bring it up to the depsgraph's frame: re-read a
rest input that can animate, rebuild the influences when they depend on where the rest points sit in
armature space, and read the pose in bulk (deform matrices, bone palette) as a :class:`PosedBind`,
which skins. The API, the viewport, the render comparison, the analysis and every bake use it.

Binds are cached per object in the session's :class:`BindCache` (:func:`cached_bind`), keyed by the
object and re-bound when its mesh, modifier settings, vertex groups or bones change. Weights cannot be
compared at every use (reading them costs most of a bind), so a mesh whose data Blender reports changed (a
weight painted or set by a script, vertices moved, but also a modifier shown or hidden) makes its binds
*suspect* (:func:`mark_edited`, from the depsgraph handlers): the next use reads the weights and the rest
input again and binds again only if what the bind read differs (:func:`cached_bind`; reading and comparing
weights: :mod:`.weights`).

Weights are those the Armature modifier receives: the mesh's own, or, when a modifier above it may change
them (Vertex Weight modifiers, Geometry Nodes; :func:`..bridge.weight_modifiers_above`), those of the mesh
evaluated up to it, like the rest positions. Such weights change without any edit of the mesh (a keyframed
modifier setting, a Proximity target that moves), so those binds have *live weights*: every use but the
viewport's compares them.
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

import bpy
import numpy as np

from .. import bridge, runtime
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
    "auto_profile",
    "PosedBind",
    "armature_weights",
    "bind",
    "bind_groups",
    "cached_bind",
    "forget",
    "forget_all",
    "mark_edited",
    "own_edits",
    "peek",
    "rebind",
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
        modifiers = list(obj.modifiers)
        if obj.data.shape_keys is not None or any(m.show_viewport for m in modifiers[: modifiers.index(mod)]):
            return False
        return not np.array_equal(bridge.vertex_positions(obj.data), self.rest_positions)

    def refresh_rest(self, obj: bpy.types.Object, depsgraph: bpy.types.Depsgraph) -> bool:
        """Re-read the rest input when shape keys or modifiers above may animate it; True if it moved."""
        mod = self.modifier(obj)
        modifiers = list(obj.modifiers)
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


@dataclass
class BindCache:
    """The session's binds (:meth:`..runtime.Runtime.state`)."""

    #: ``Object.session_uid`` → its bind.
    binds: dict[int, MeshBind] = field(default_factory=dict)
    #: ``Mesh.session_uid`` of meshes the add-on is changing without changing what a bind read
    #: (:func:`own_edits`): their depsgraph update leaves the binds trusted.
    own_mesh_edits: set[int] = field(default_factory=set)
    #: ``Mesh.session_uid`` of meshes a depsgraph update showed in Edit Mode (:mod:`.handlers`): when one is
    #: out of it, its edits are in the mesh and its binds are compared before their next use.
    edit_mode_meshes: set[int] = field(default_factory=set)


def _cache() -> BindCache:
    return runtime.get().state(BindCache)


def cache() -> BindCache:
    """The session's bind cache (the handlers track Edit Mode in it)."""
    return _cache()


def baked_keys(obj: bpy.types.Object) -> tuple[str, ...]:
    """Names of the shape keys Hybrid Skin baked on ``obj`` (excluded from the rest input)."""
    settings = getattr(obj, "hybrid_skin", None)
    if settings is None or not settings.bake_state:
        return ()
    return tuple(BakeRecord.load(settings.bake_state).keys)


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
        tuple(m.name for m in stack.weight_modifiers_above(obj, mod)),  # one added or shown: live weights
        tuple((b.name, b.use_deform, b.bbone_segments) for b in arm.data.bones) if arm else (),
        _bone_rest_key(arm),
    )


def _bone_rest_key(arm: bpy.types.Object | None) -> bytes:
    """The bones' rest matrices as bytes (O(bones), one bulk read): bones moved in Edit Mode bind again."""
    if arm is None or arm.type != "ARMATURE":
        return b""
    bones = arm.data.bones
    buf = np.empty(len(bones) * 16, dtype=np.float32)
    bones.foreach_get("matrix_local", buf)
    return buf.tobytes()


def armature_weights(
    obj: bpy.types.Object,
    mod: bpy.types.ArmatureModifier,
    bones: core_binding.DeformBones,
    groups: tuple[str, ...],
    depsgraph: bpy.types.Depsgraph,
) -> weights_mod.Weights:
    """The weights the Armature modifier ``mod`` receives (and the ``groups`` a bind keeps): the mesh's
    own, or, when modifiers above it may change them, those of the mesh evaluated up to it (as Blender
    deforms it)."""
    if not stack.weight_modifiers_above(obj, mod):
        return weights_mod.read(obj, mod, bones, groups)
    with stack.armature_input(obj, mod, depsgraph, baked_keys(obj)) as source:
        return weights_mod.read(obj, mod, bones, groups, source)


def bind(
    obj: bpy.types.Object,
    depsgraph: bpy.types.Depsgraph,
    modifier_name: str = "",
    extra_groups: tuple[str, ...] = (),
    *,
    weights: weights_mod.Weights | None = None,
) -> MeshBind:
    """Read everything a mesh needs for skinning (not cached: see :func:`cached_bind`).

    ``modifier_name``: the Armature modifier to follow (the first one when empty); ``extra_groups``:
    vertex groups whose weights the bind keeps besides the modifier's mask group (the factor group);
    ``weights``: the weights as :func:`armature_weights` read them just before, for these groups.
    Raises :class:`..errors.HybridSkinError` on bad input."""
    mod = stack.armature_modifier(obj, modifier_name)
    arm = checks.validate(obj, mod, rest_in_edit_mode=True)
    bones = bridge.deform_bones(arm)
    arm_eval = arm.evaluated_get(depsgraph)
    positions, normals = stack.rest_geometry(obj, mod, depsgraph, baked_keys(obj))
    if weights is None or weights.bone_names != bones.names:
        weights = armature_weights(obj, mod, bones, extra_groups, depsgraph)
    if mod.use_vertex_groups and not mod.use_bone_envelopes and not weights.matches_a_bone:
        raise HybridSkinError(
            f"No vertex group of '{obj.name}' matches a deform bone of '{arm.name}': "
            "parent with automatic weights or rename the groups after the bones"
        )

    rest_segments = bridge.segment_matrices(arm_eval, bones, rest=True)
    bound = MeshBind(
        object_name=obj.name,
        modifier_name=mod.name,
        modifier_uid=stack.modifier_ref(mod)[0],
        armature_name=arm.name,
        object_uid=obj.session_uid,
        armature_uid=arm.session_uid,
        bones=bones,
        pose_index=bridge.pose_bone_index(arm, bones.names),
        rest_positions=np.ascontiguousarray(positions, dtype=np.float32),
        rest_normals=np.ascontiguousarray(normals, dtype=np.float32),
        entries=weights.entries,
        group_weights=weights.group_weights,
        mask=(
            obj.vertex_groups.find(mod.vertex_group) if mod.vertex_group else -1,
            mod.invert_vertex_group,
            mod.use_bone_envelopes,
        ),
        rest_segments=rest_segments,
        virtual_rest=core_binding.virtual_rest_matrices(bones, rest_segments),
        fingerprint=_fingerprint(obj, mod),
        live_weights=bool(stack.weight_modifiers_above(obj, mod)),
    )
    bound.rebuild_binding(target_to_armature(obj.evaluated_get(depsgraph), arm_eval), arm_eval)
    return bound


def bind_groups(obj: bpy.types.Object) -> tuple[str, ...]:
    """The vertex groups a bind of ``obj`` keeps weights of besides the mask: its factor group, if one is
    named. Whatever the object's own factor mode: a caller may replace that mode (a bake's
    ``factor_mode``, the command line's ``--factor-mode``) and then reads the group from this bind."""
    settings = getattr(obj, "hybrid_skin", None)
    if settings is None or not settings.factor_vertex_group:
        return ()
    return (settings.factor_vertex_group,)


def cached_bind(
    obj: bpy.types.Object, depsgraph: bpy.types.Depsgraph, *, check_rest: bool = True
) -> MeshBind:
    """The bind of ``obj`` as its Hybrid Skin settings ask (their Armature modifier, their factor group),
    from the runtime's cache; re-bound when its mesh, modifier settings, groups, bones or weights changed.

    ``check_rest``: also bind again when the mesh's vertices moved since the bind (O(vertices), one bulk
    read), and when a bind with live weights (modifiers above may change them) reads other weights now
    (the mesh evaluated up to the Armature modifier). Why rebind rather than refuse: the bind is a cache
    of the mesh, and a cache that no longer matches its source is refreshed; a message would only ask the
    user to press Rebind, and a result (a bake, a script's positions) must never come from a mesh that is
    not there any more. The viewport passes False: it is O(bones) per frame, and does not show binds with
    live weights. Otherwise weights are compared only when the bind is suspect (:func:`mark_edited`:
    Blender reported the mesh's data changed), for every caller: one bulk read of the weights, then the
    same bind is kept if nothing it uses changed."""
    settings = getattr(obj, "hybrid_skin", None)
    mod = stack.armature_modifier(obj, stack.followed_modifier_name(obj) if settings is not None else "")
    groups = bind_groups(obj)
    binds = _cache().binds
    bound = binds.get(obj.session_uid)
    read: weights_mod.Weights | None = None  # weights read to compare: a rebind uses them (one read, not two)
    if (
        bound is None
        or bound.fingerprint != _fingerprint(obj, mod)
        or bound.object_name != obj.name
        or any(gi not in bound.group_weights for gi in map(obj.vertex_groups.find, groups) if gi >= 0)
        or ((check_rest or bound.suspect) and bound.mesh_moved(obj, mod))
        or (
            (bound.suspect or (check_rest and bound.live_weights))
            and not (read := armature_weights(obj, mod, bound.bones, groups, depsgraph)).same_use(
                bound.entries, bound.group_weights
            )
        )
    ):
        bound = binds[obj.session_uid] = bind(obj, depsgraph, mod.name, groups, weights=read)
    bound.suspect = False
    return bound


def rebind(obj: bpy.types.Object, depsgraph: bpy.types.Depsgraph) -> MeshBind:
    """Bind ``obj`` again now (after its weights or rest shape were edited), replacing the cached bind."""
    forget(obj)
    return cached_bind(obj, depsgraph)


def mark_edited(meshes: set[int]) -> None:
    """Blender reported that the data of these meshes (``Mesh.session_uid``) changed: their binds are
    suspect, and the next :func:`cached_bind` compares what they read before using them. Called by the
    depsgraph handlers; the report does not say what changed (a weight edit and a modifier shown look the
    same), hence a comparison rather than a rebind. Meshes the add-on is changing inside
    :func:`own_edits` are left out."""
    state = _cache()
    meshes = meshes - state.own_mesh_edits
    if meshes:
        for bound in state.binds.values():
            if bound.fingerprint[0] in meshes:
                bound.suspect = True


@contextmanager
def own_edits(objects: Iterable[bpy.types.Object]) -> Iterator[None]:
    """The add-on's own changes to the objects that leave what a bind read as it was (modifiers hidden and
    shown, its baked keys, texel attributes): their depsgraph update does not make binds suspect, so a bake
    or a display switch does not cost a comparison of every weight. Exactly these changes: updates pending
    before are evaluated first (and mark binds as usual), and the changes' own update is evaluated before
    leaving (an evaluation they need anyway to be seen). Nests."""
    state = _cache()
    uids = {o.data.session_uid for o in objects if o.type == "MESH"} - state.own_mesh_edits
    context = bpy.context
    if not uids or getattr(context, "view_layer", None) is None:  # nothing to evaluate with: marks as usual
        yield
        return
    context.evaluated_depsgraph_get()
    state.own_mesh_edits |= uids
    try:
        yield
        context.evaluated_depsgraph_get()
    finally:
        state.own_mesh_edits -= uids


def forget(obj: bpy.types.Object) -> None:
    """Drop the cached bind of ``obj``: the next use binds it again."""
    _cache().binds.pop(obj.session_uid, None)


def forget_all() -> None:
    _cache().binds.clear()


def peek(obj: bpy.types.Object) -> MeshBind | None:
    """The cached bind of ``obj`` if any, without binding (for the panel)."""
    return _cache().binds.get(obj.session_uid)
