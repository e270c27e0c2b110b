"""Reading a skinned mesh's bind, and the session's cache of binds (the bind itself: :mod:`.mesh_bind`).

:func:`bind` reads what a mesh needs for skinning into a :class:`.mesh_bind.MeshBind`. Binds are cached per
object in the session's :class:`BindCache` (:func:`cached_bind`), keyed by the
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

from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

import bpy
import numpy as np

from .. import bridge, runtime
from ..core import binding as core_binding
from ..errors import HybridSkinError
from . import bbone_settings, checks, stack
from . import weights as weights_mod
from .mesh_bind import MeshBind, baked_keys, target_to_armature

__all__ = [
    "BindCache",
    "armature_weights",
    "bind",
    "bind_groups",
    "bone_rest_key",
    "cached_bind",
    "forget",
    "forget_all",
    "mark_edited",
    "own_edits",
    "peek",
    "rebind",
]

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
        bone_rest_key(arm),
        _bbone_rest_key(arm),
    )


def _bbone_rest_key(arm: bpy.types.Object | None) -> bytes:
    """The B-bones' own settings (ease, curve, handles ...): the bind's segment rest matrices are made of
    them; an edit binds again (only where the armature has B-bones: bulk reads)."""
    if arm is None or arm.type != "ARMATURE":
        return b""
    segments = np.empty(len(arm.data.bones), dtype=np.int32)
    arm.data.bones.foreach_get("bbone_segments", segments)
    return bbone_settings.rest_key(arm) if (segments > 1).any() else b""


def bone_rest_key(arm: bpy.types.Object | None) -> bytes:
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
