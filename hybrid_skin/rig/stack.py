"""The object's modifier stack as Hybrid Skin reads it: which Armature modifier it follows, how modifiers
are found again after renames, and the mesh that Armature modifier receives (its rest input and weights).

Modifiers are referred to as ``[persistent_uid, name]`` (:func:`modifier_ref`), so a rename keeps them
found. Hybrid Skin's own Preserve Volume modifier (:data:`DQS_MODIFIER`) is never the one followed.
"""

from __future__ import annotations

import re
from contextlib import contextmanager, nullcontext

import bpy
import numpy as np

from .. import bridge, runtime
from ..errors import HybridSkinError
from .bake_record import BakeRecord
from .checks import armature_in_edit_mode, vertex_count_refusal
from .state import hold

__all__ = [
    "DQS_MODIFIER",
    "WEIGHT_ONLY_MODIFIER_TYPES",
    "armature_input",
    "armature_modifier",
    "find_armature_modifier",
    "find_modifier",
    "followed_armature",
    "followed_modifier_name",
    "is_mix_modifier",
    "is_own_modifier",
    "is_part",
    "modifier_ref",
    "PART_KINDS",
    "PART_NAMES",
    "rest_geometry",
    "rig_in_edit_mode",
    "signature",
    "user_modifiers",
    "user_modifiers_after",
    "weight_modifiers_above",
]


#: Hybrid Skin's own modifiers by role, in stack order around the user's Armature modifier (which sits
#: between ``rest`` and ``keep``; :mod:`.parts` adds them, :mod:`.trees.stack_trees` says what they do).
PART_NAMES = {
    "rest": "HybridSkin Rest",
    "keep": "HybridSkin Keep LBS",
    "dqs": "HybridSkin DQS",
    "mix": "HybridSkin Mix",
}
PART_KINDS = {"rest": "NODES", "keep": "NODES", "dqs": "ARMATURE", "mix": "NODES"}
#: The DQS part's name: never the Armature modifier Hybrid Skin follows (earlier builds' mix modifier,
#: with Multi Modifier, had the same name).
DQS_MODIFIER = PART_NAMES["dqs"]
_PART_PATTERNS = {role: re.compile(re.escape(name) + r"(\.\d+)?") for role, name in PART_NAMES.items()}


def is_part(mod: bpy.types.Modifier, role: str | None = None) -> bool:
    """Whether ``mod`` has the name (Blender's ``.001`` … included) and kind of one of Hybrid Skin's
    modifiers (of ``role``). A user's modifier could share both: what was set up is known from the
    object's record, this only keeps our parts out of what is read as the user's stack."""
    roles = PART_NAMES if role is None else (role,)
    return any(mod.type == PART_KINDS[r] and _PART_PATTERNS[r].fullmatch(mod.name) for r in roles)


def is_mix_modifier(mod: bpy.types.Modifier) -> bool:
    """Whether ``mod`` is a Preserve Volume modifier of Hybrid Skin's (:data:`DQS_MODIFIER`)."""
    return is_part(mod, "dqs")


def user_modifiers(obj: bpy.types.Object) -> list[bpy.types.Modifier]:
    """The object's modifiers without Hybrid Skin's parts: the stack as the user arranged it."""
    return [m for m in obj.modifiers if not is_part(m)]


def is_own_modifier(obj: bpy.types.Object, mod: bpy.types.Modifier) -> bool:
    """Whether ``mod`` is one Hybrid Skin put on ``obj``, not the user's: a part of the native hybrid
    (:func:`is_part`: Rest, Keep LBS, DQS, Mix) or the Mesh Cache modifier a point-cache bake added (its
    record names it). The one place that says which modifiers are the add-on's: a bake asks it to tell
    the user's modifiers after the Armature modifier, which Blender shows and a VERTEX texture must hold."""
    if is_part(mod):
        return True
    if mod.type != "MESH_CACHE":
        return False
    try:
        record = BakeRecord.load(getattr(getattr(obj, "hybrid_skin", None), "bake_state", "") or "")
    except (HybridSkinError, ValueError, TypeError):  # a record this build cannot read proves nothing
        return False
    ref = record.cache_modifier if record is not None else None
    return bool(ref) and find_modifier(obj, ref if isinstance(ref, list) else [0, ref]) == mod


def user_modifiers_after(obj: bpy.types.Object, mod: bpy.types.Modifier) -> list[bpy.types.Modifier]:
    """The user's modifiers after ``mod`` that Blender shows in the viewport (:func:`is_own_modifier`
    leaves the add-on's out)."""
    stack = list(obj.modifiers)
    return [m for m in stack[stack.index(mod) + 1 :] if m.show_viewport and not is_own_modifier(obj, m)]


def find_armature_modifier(
    obj: bpy.types.Object, name: str = "", armature: bpy.types.Object | None = None
) -> bpy.types.ArmatureModifier | None:
    """The Armature modifier Hybrid Skin follows on ``obj``: the one named ``name`` if given, else the first
    in the stack (that deforms by ``armature``, if given); never the display's own (:func:`is_mix_modifier`).
    None if none."""
    for mod in obj.modifiers:
        if mod.type != "ARMATURE" or is_mix_modifier(mod) or (name and mod.name != name):
            continue
        if armature is None or mod.object == armature:
            return mod
    return None


def followed_modifier_name(obj: bpy.types.Object) -> str:
    """The name, now, of the Armature modifier Hybrid Skin follows on ``obj``: found by the persistent id
    stored at Add (a rename keeps it), else by the name saved then; "" when Hybrid Skin never bound it."""
    settings = getattr(obj, "hybrid_skin", None)
    if settings is None:
        return ""
    mod = find_modifier(obj, [settings.modifier_uid, settings.modifier_name])
    return mod.name if mod is not None and mod.type == "ARMATURE" else settings.modifier_name


def modifier_ref(mod: bpy.types.Modifier) -> list:
    """How saved state finds a modifier again: ``[persistent_uid, name]`` (the id survives renames)."""
    return [int(getattr(mod, "persistent_uid", 0)), mod.name]


def find_modifier(obj: bpy.types.Object, ref: list) -> bpy.types.Modifier | None:
    """The modifier a :func:`modifier_ref` points at (by id, else by name), or None."""
    uid, name = ref
    if uid:
        for mod in obj.modifiers:
            if getattr(mod, "persistent_uid", 0) == uid:
                return mod
    return obj.modifiers.get(name)


#: Modifier types that change vertex-group weights and nothing else: vertices stay where they are.
WEIGHT_ONLY_MODIFIER_TYPES = frozenset({"VERTEX_WEIGHT_EDIT", "VERTEX_WEIGHT_MIX", "VERTEX_WEIGHT_PROXIMITY"})


def _changes_weights(mod: bpy.types.Modifier) -> bool:
    """Whether ``mod`` may change vertex-group weights (or their stored order) and keep the vertex count."""
    if mod.type == "DATA_TRANSFER":
        return bool(mod.use_vert_data and "VGROUP_WEIGHTS" in mod.data_types_verts)
    if mod.type == "DYNAMIC_PAINT":  # a canvas with a Weight surface paints into a vertex group
        canvas = mod.canvas_settings if mod.ui_type == "CANVAS" else None
        return canvas is not None and any(s.surface_type == "WEIGHT" for s in canvas.canvas_surfaces)
    return mod.type in WEIGHT_ONLY_MODIFIER_TYPES or mod.type == "NODES"  # Geometry Nodes may write any


def weight_modifiers_above(obj: bpy.types.Object, mod: bpy.types.Modifier) -> list[bpy.types.Modifier]:
    """The modifiers shown in the viewport above ``mod`` that may change the vertex-group weights it
    receives (a Vertex Weight modifier, Geometry Nodes, ...): Blender deforms with the weights they
    produce, which may change at every frame (a keyframed setting, a Proximity target that moves)."""
    stack = user_modifiers(obj)
    return [m for m in stack[: stack.index(mod)] if m.show_viewport and _changes_weights(m)]


@contextmanager
def _viewport_disabled(mods: list[bpy.types.Modifier]):
    """Temporarily hide modifiers in the viewport; their settings come back exactly."""
    saved = [(m, m.show_viewport) for m in mods]
    try:
        for m in mods:
            m.show_viewport = False
        yield
    finally:
        for m, state in saved:
            m.show_viewport = state


@contextmanager
def _keys_muted(mesh: bpy.types.Mesh, names: tuple[str, ...]):
    """Temporarily mute shape keys (our own baked keys must not feed back into the rest input)."""
    blocks = [
        mesh.shape_keys.key_blocks[n] for n in names if mesh.shape_keys and n in mesh.shape_keys.key_blocks
    ]
    saved = [(kb, kb.mute) for kb in blocks]
    try:
        for kb in blocks:
            kb.mute = True
        yield
    finally:
        for kb, mute in saved:
            kb.mute = mute


@contextmanager
def armature_input(
    obj: bpy.types.Object,
    mod: bpy.types.Modifier,
    depsgraph: bpy.types.Depsgraph,
    exclude_keys: tuple[str, ...] = (),
):
    """The object as the Armature modifier ``mod`` receives it: its ``data`` is that mesh (positions,
    normals, vertex-group weights) and its ``vertex_groups`` name the mesh's groups.

    Shape keys (except ``exclude_keys``, Hybrid Skin's own baked keys) and enabled modifiers above the
    Armature modifier are applied. When the mesh has neither, that is ``obj`` itself. Otherwise the object is
    evaluated with the Armature modifier and everything after it hidden (as in GPU display mode); the
    user's settings are restored on leaving. Modifiers above that change the vertex count are refused.
    The handlers leave the object alone meanwhile (:func:`.state.hold`): the evaluations here run them,
    and one that set the object up again would remove the very modifiers this hides and shows again
    (Blender crashed on writing to them).
    """
    stack = list(obj.modifiers)
    at = stack.index(mod)
    before = [m for m in stack[:at] if m.show_viewport and not is_part(m)]
    mesh = obj.data
    if not before and mesh.shape_keys is None:
        yield obj
        return
    # Hidden: the Armature modifier, what follows it, and Hybrid Skin's own Rest part above it.
    tail = [m for m in stack if m.show_viewport and (stack.index(m) >= at or is_part(m))]
    with hold([obj]) if runtime.current() is not None else nullcontext():
        try:
            with _viewport_disabled(tail), _keys_muted(mesh, exclude_keys):
                if tail or exclude_keys:
                    depsgraph.update()
                evaluated = obj.evaluated_get(depsgraph)
                if len(evaluated.data.vertices) != len(mesh.vertices):
                    raise HybridSkinError(vertex_count_refusal(obj, mod))
                yield evaluated
        finally:
            if tail or exclude_keys:
                depsgraph.update()


def rest_geometry(
    obj: bpy.types.Object,
    mod: bpy.types.Modifier,
    depsgraph: bpy.types.Depsgraph,
    exclude_keys: tuple[str, ...] = (),
) -> tuple[np.ndarray, np.ndarray]:
    """Positions and vertex normals ``(N, 3)`` that the Armature modifier receives (mesh local space; see
    :func:`armature_input`)."""
    with armature_input(obj, mod, depsgraph, exclude_keys) as source:
        return bridge.vertex_positions(source.data), bridge.vertex_normals(source.data)


def followed_armature(obj: bpy.types.Object) -> bpy.types.Object | None:
    """The armature the Armature modifier Hybrid Skin follows on ``obj`` deforms by (None: no such
    modifier, or no armature in its Object field)."""
    mod = find_armature_modifier(obj, followed_modifier_name(obj))
    arm = mod.object if mod is not None else None
    return arm if arm is not None and arm.type == "ARMATURE" else None


def rig_in_edit_mode(obj: bpy.types.Object) -> bool:
    """:func:`followed_armature` is in Edit Mode (its bones are read when it is left: Blender renames a pose
    channel at once, the bone only then)."""
    arm = followed_armature(obj)
    return arm is not None and armature_in_edit_mode(arm)


def armature_modifier(obj: bpy.types.Object | None, name: str = "") -> bpy.types.ArmatureModifier:
    """:func:`find_armature_modifier` for a mesh that must have one; else a clear :class:`HybridSkinError`."""
    if obj is None or obj.type != "MESH":
        kind = "nothing" if obj is None else f"'{obj.name}' ({obj.type.lower()})"
        raise HybridSkinError(f"Hybrid Skin needs a mesh object, got {kind}: select a skinned mesh")
    mod = find_armature_modifier(obj, name)
    if mod is None:
        what = f"Armature modifier named '{name}'" if name else "Armature modifier"
        raise HybridSkinError(f"'{obj.name}' has no {what}: add one (Ctrl+P ▸ With Automatic Weights) first")
    return mod


def signature(obj: bpy.types.Object) -> tuple:
    """The object's modifier stack as the user arranges it (names, kinds, order; not what is shown): a
    failure to draw is tried again once it changes."""
    return tuple((m.name, m.type) for m in user_modifiers(obj))
