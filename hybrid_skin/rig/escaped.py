"""Hybrid Skin's parts that escaped to another object, taken off it as Blender alone would have left it.

Copy Modifiers, Copy to Selected, Transfer Data, Join, Link/Transfer Data and scripts can copy the display's
mix modifier (:data:`.record.MIX_MODIFIER`) or its factor group (:data:`.record.FACTOR_GROUP`) onto an
object that did not ask for Hybrid Skin; it would then deform by the other object's settings. The handlers
call :func:`clean_escaped` for every object Blender reports changed (:mod:`.handlers`); the table of these
cases is in docs/displays.md.
"""

from __future__ import annotations

import re

import bpy

from .. import runtime
from ..errors import HybridSkinError
from . import setup, stack
from .record import FACTOR_GROUP

__all__ = ["clean_escaped"]

_FACTOR_GROUP_NAME = re.compile(re.escape(FACTOR_GROUP) + r"(\.\d+)?")


def clean_escaped(obj: bpy.types.Object) -> None:
    """Take Hybrid Skin's parts off an object they escaped to, as Blender alone would have left it, said
    once: a mix modifier (:data:`.record.MIX_MODIFIER`) copied with Copy Modifiers or Copy to Selected, a
    factor group copied with the vertex groups (Copy to Selected, Transfer Data, Join). The Armature
    modifier copied with it gets back the settings the user has on the original (Preserve Volume, Show in
    Viewport). Parts are known by name and kind: a Multi Modifier Armature modifier of the mix modifier's
    name, a *locked* group of the factor group's name (``.001`` … too) that no object using this mesh mixes
    by; a user's own group or modifier of those names is never taken."""
    if obj.type != "MESH" or not setup.is_local(obj):
        return
    own = setup.load(obj) if obj.hybrid_skin.enabled else None
    claimed = _claimed_groups(obj)
    removed = []
    modifiers = list(obj.modifiers)
    for i, m in enumerate(modifiers):
        if m.type != "ARMATURE" or not m.use_multi_modifier or not stack.is_mix_modifier(m):
            continue
        if own is not None and own.mix and stack.find_modifier(obj, own.mix) == m:
            continue
        above = modifiers[i - 1] if i > 0 and modifiers[i - 1].type == "ARMATURE" else None
        if above is not None:
            _user_settings_from_source(above)
        removed.append(f"modifier '{m.name}'")
        obj.modifiers.remove(m)
    for group in list(obj.vertex_groups):
        ours = group.lock_weight and _FACTOR_GROUP_NAME.fullmatch(group.name)
        if ours and group.name not in claimed:
            removed.append(f"vertex group '{group.name}'")
            obj.vertex_groups.remove(group)
    if removed:
        runtime.get().report_once(
            obj,
            HybridSkinError(
                f"'{obj.name}' got Hybrid Skin's {' and '.join(removed)} from another object, which would "
                "deform it by that object's settings: removed (Add Hybrid Skin to use it on this object)"
            ),
        )


def _claimed_groups(obj: bpy.types.Object) -> set[str]:
    """Factor group names recorded by the objects that use ``obj``'s mesh (vertex groups live on the mesh)."""
    names = set()
    for other in bpy.data.objects:
        if other.data == obj.data and other.type == "MESH":
            rec = setup.load(other)
            if rec is not None and rec.factor_group:
                names.add(rec.factor_group)
    return names


def _user_settings_from_source(copy: bpy.types.ArmatureModifier) -> None:
    """An Armature modifier copied from a Hybrid Skin object carries what Hybrid Skin changed on the
    original (Preserve Volume off; hidden in the viewport by the GPU display): give it the user's settings,
    read from the original's record (the object whose followed modifier has this name and armature)."""
    for source in bpy.data.objects:
        rec = setup.load(source) if source.type == "MESH" and source.data is not None else None
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
