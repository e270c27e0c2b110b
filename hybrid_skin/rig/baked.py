"""Taking a bake off an object: exactly what it added, nothing of the user's (Clear Bake, Remove).

A bake (:mod:`..bake.baker`) records in :class:`.bake_record.BakeRecord` its shape keys, their F-Curves and
the action they are in, whether it created the Basis, the shape keys' animation data or that action, the
Mesh Cache modifier it added and the modifiers it bypassed. :func:`clear` removes only that: the user's
drivers, keyframes added afterwards (even inside an action the bake created), active shape key and
values stay, and Hybrid Skin's display is set up again. Here in the rig layer because removing Hybrid
Skin (:mod:`..skin`) clears a bake too, and the bind must know the baked keys (they are not rest input).
"""

from __future__ import annotations

import bpy
from bpy_extras import anim_utils

from . import bind, setup, stack
from .bake_record import BakeRecord

__all__ = ["action_fcurves", "clear", "data_path", "fcurves", "is_baked"]


def is_baked(obj: bpy.types.Object) -> bool:
    return bool(obj.hybrid_skin.bake_state)


def clear(obj: bpy.types.Object) -> None:
    """Remove exactly what a bake added (see the module docstring) and restore the modifier flags."""
    record = BakeRecord.load(obj.hybrid_skin.bake_state)
    if record is None:
        return
    with bind.own_edits([obj]):  # the bake's own keys, cache and flags: never what a bind read
        _clear(obj, record)


def _clear(obj: bpy.types.Object, record: BakeRecord) -> None:
    cache_ref = record.cache_modifier
    cache = stack.find_modifier(obj, cache_ref if isinstance(cache_ref, list) else [0, cache_ref or ""])
    if cache is not None and cache.type == "MESH_CACHE":
        obj.modifiers.remove(cache)
    key = obj.data.shape_keys
    if key is not None and record.keys:
        _clear_animation(key, record)
        blocks = key.key_blocks
        active = obj.active_shape_key
        active_name = active.name if active is not None else None
        for name in record.keys:
            kb = blocks.get(name)
            if kb is not None:
                obj.shape_key_remove(kb)
        if record.created_basis and len(key.key_blocks) == 1:
            obj.shape_key_clear()
        elif obj.data.shape_keys is not None:  # the user's active key stays active
            names = obj.data.shape_keys.key_blocks.keys()
            if active_name in names:
                obj.active_shape_key_index = names.index(active_name)
            elif 0 <= record.active_key < len(names):
                obj.active_shape_key_index = record.active_key
    for uid, name, viewport, render in record.bypassed:
        mod = stack.find_modifier(obj, [uid, name])
        if mod is not None:
            mod.show_viewport, mod.show_render = viewport, render
    obj.hybrid_skin.bake_state = ""
    setup.apply(obj)


def _clear_animation(key: bpy.types.Key, record: BakeRecord) -> None:
    """Remove the bake's F-Curves; then the action and animation data only if the bake created them
    and nothing of the user's is in them (keyframes added later, drivers, NLA tracks)."""
    ours = {data_path(name) for name in record.keys}
    anim = key.animation_data
    action = bpy.data.actions.get(record.action) if record.action else None
    if action is None and anim is not None:
        action = anim.action  # records of version 0
    if action is None:
        return
    for curves in action_fcurves(action):
        for fcurve in [fc for fc in curves if fc.data_path in ours]:
            curves.remove(fcurve)
    if not record.created_action or not action_is_empty(action):
        return
    if anim is not None and anim.action == action:
        anim.action = None
    if anim is not None and anim.action is None and hasattr(anim, "last_slot_identifier"):
        anim.last_slot_identifier = record.last_slot  # Blender's memory of the bake's slot
    if action.users == 0:
        bpy.data.actions.remove(action)
    anim = key.animation_data
    if (
        record.created_animation_data
        and anim is not None
        and anim.action is None
        and not len(anim.drivers)
        and not len(anim.nla_tracks)
    ):
        key.animation_data_clear()


def action_fcurves(action: bpy.types.Action) -> list:
    """Every F-Curve collection of ``action`` (the action itself before slotted actions)."""
    layers = getattr(action, "layers", None)
    if not layers:
        return [action.fcurves] if hasattr(action, "fcurves") else []
    return [bag.fcurves for layer in layers for strip in layer.strips for bag in strip.channelbags]


def action_is_empty(action: bpy.types.Action) -> bool:
    return not any(len(curves) for curves in action_fcurves(action))


def data_path(name: str) -> str:
    return f'key_blocks["{bpy.utils.escape_identifier(name)}"].value'


def fcurves(id_data):
    """The F-Curve collection animating ``id_data`` (slotted actions in Blender ≥ 4.4)."""
    anim = id_data.animation_data
    if anim is None or anim.action is None:
        return None
    action = anim.action
    if hasattr(action, "fcurves") and not hasattr(action, "slots"):
        return action.fcurves  # Blender 4.2/4.3
    bag = anim_utils.action_get_channelbag_for_slot(action, anim.action_slot)
    return None if bag is None else bag.fcurves
