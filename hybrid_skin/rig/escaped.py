"""Hybrid Skin's parts that escaped to another object, taken off it as Blender alone would have left it.

Copy Modifiers, Copy to Selected, Transfer Data, Join, Link/Transfer Data and scripts can copy Hybrid Skin's
modifiers (:data:`.stack.PART_NAMES`), the per-vertex data its Mix tree reads (``.hybrid_skin_*``
attributes) or version 1's factor group onto an object that did not ask for Hybrid Skin; it would then
deform by the other object's settings. The handlers call :func:`clean_escaped` for every object Blender
reports changed (:mod:`.handlers`); the table of these cases is in docs/displays.md.
"""

from __future__ import annotations

import re

import bpy

from .. import runtime
from ..errors import HybridSkinError
from . import setup, stack
from .record import FACTOR_GROUP
from .trees import builder

__all__ = ["clean_escaped"]

_FACTOR_GROUP_NAME = re.compile(re.escape(FACTOR_GROUP) + r"(\.\d+)?")
_ATTRIBUTE_PREFIX = ".hybrid_skin_"


def clean_escaped(obj: bpy.types.Object) -> None:
    """Take Hybrid Skin's parts off an object they escaped to, as Blender alone would have left it, said
    once. A part is known by its name and kind (and, for a Geometry Nodes one, its tree's tag), and it is
    escaped when the object's own record does not list it; the Armature modifier copied with it gets back
    the settings the user has on the original (Preserve Volume, Show in Viewport). A user's own modifier
    or group of those names is never taken."""
    if obj.type != "MESH" or not setup.is_local(obj) or setup.unreadable(obj):
        return
    own = setup.load(obj) if obj.hybrid_skin.enabled else None
    mine = [stack.find_modifier(obj, ref) for ref in (own.parts.values() if own is not None else ())]
    removed = []
    for m in list(obj.modifiers):
        if m in mine or not _is_ours(m):
            continue
        removed.append(f"modifier '{m.name}'")
        obj.modifiers.remove(m)
    if removed:
        for m in obj.modifiers:
            if m.type == "ARMATURE" and (own is None or stack.find_modifier(obj, own.armature) != m):
                _user_settings_from_source(m)
    claimed = _claimed(obj)
    for group in list(obj.vertex_groups):
        ours = group.lock_weight and _FACTOR_GROUP_NAME.fullmatch(group.name)
        if ours and group.name not in claimed:
            removed.append(f"vertex group '{group.name}'")
            obj.vertex_groups.remove(group)
    if "attributes" not in claimed:
        stale = [a.name for a in obj.data.attributes if a.name.startswith(_ATTRIBUTE_PREFIX)]
        for name in stale:
            obj.data.attributes.remove(obj.data.attributes[name])
        if stale:
            removed.append("per-vertex data")
    if removed:
        runtime.get().report_once(
            obj,
            HybridSkinError(
                f"'{obj.name}' got Hybrid Skin's {', '.join(removed)} from another object, which would "
                "deform it by that object's settings: removed (Add Hybrid Skin to use it on this object)"
            ),
        )


def _is_ours(mod: bpy.types.Modifier) -> bool:
    if not stack.is_part(mod):
        return False
    if mod.type == "NODES":
        return mod.node_group is None or builder.tree_tag(mod.node_group) is not None
    return True


def _claimed(obj: bpy.types.Object) -> set[str]:
    """What objects set up on ``obj``'s mesh claim there (vertex groups and attributes live on the mesh):
    version 1's factor group names, and "attributes" when one of them is set up."""
    names = set()
    for other in bpy.data.objects:
        if other.type != "MESH" or other.data != obj.data or not other.hybrid_skin.saved_state:
            continue
        rec = setup.readable(other)
        if rec is None:
            names.add("attributes")  # unknown: its data stays
            continue
        if rec.factor_group:
            names.add(rec.factor_group)
        if rec.parts and other.hybrid_skin.enabled:
            names.add("attributes")
    return names


def _user_settings_from_source(copy: bpy.types.ArmatureModifier) -> None:
    """An Armature modifier copied from a Hybrid Skin object carries what Hybrid Skin changed on the
    original (Preserve Volume off; hidden in the viewport by the GPU display): give it the user's settings,
    read from the original's record (the object whose followed modifier has this name and armature)."""
    for source in bpy.data.objects:
        if source.type != "MESH" or source.data is None or not source.hybrid_skin.saved_state:
            continue
        rec = setup.readable(source)
        if rec is None or rec.armature[1] != copy.name:
            continue
        mod = stack.find_modifier(source, rec.armature)
        if mod is None or mod.object != copy.object:
            continue
        if rec.preserve_volume is not None:
            copy.use_deform_preserve_volume = rec.preserve_volume
        for uid, name, value in rec.hidden:
            if stack.find_modifier(source, [uid, name]) == mod:
                copy.show_viewport = value
        return
