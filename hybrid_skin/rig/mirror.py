"""Animation of the Hybrid Skin settings, copied to the Mix modifier's inputs, where Blender evaluates it
without the add-on.

A keyframed or driven *Deform Factor*, *Factor Mode* or *Auto Profile* lives on
``hybrid_skin.deform_factor``, ``hybrid_skin.factor_mode`` or ``hybrid_skin.auto_profile``: the add-on's own
properties, which Blender cannot evaluate where the add-on is not installed. Each such F-Curve (in the
object's action, for its slot, and in the actions of its NLA strips) and driver gets a copy on the matching
Mix input, in the same place (:func:`sync`). The user's own curves are never changed; the copies are
recorded (``DisplayRecord.mirrored``) and removed with the setup (:func:`remove`). A copy follows its source
whenever the source changes (keys moved, a driver edited).
"""

from __future__ import annotations

import bpy
from bpy_extras import anim_utils

from .. import bridge
from .trees.stack_trees import MIX_INPUTS

__all__ = ["SOURCES", "may_choose_auto", "remove", "sync"]

#: The settings whose animation reaches the Mix modifier, and the input each reaches.
SOURCES = {
    "hybrid_skin.deform_factor": MIX_INPUTS.deform_factor,
    "hybrid_skin.factor_mode": MIX_INPUTS.mode,
    "hybrid_skin.auto_profile": MIX_INPUTS.profile,  # the enum's numbers are the input's (0 Round, 1, 2)
}
_DRIVERS = "drivers"
#: Keyframe properties copied one by one (few keys: per key in Python is fine).
_KEY_PROPERTIES = (
    "co",
    "handle_left",
    "handle_right",
    "interpolation",
    "handle_left_type",
    "handle_right_type",
    "easing",
    "back",
    "amplitude",
    "period",
    "type",
)
_VARIABLE_TARGET = (
    "id_type",
    "id",
    "data_path",
    "bone_target",
    "transform_type",
    "transform_space",
    "rotation_mode",
)


def _places(obj: bpy.types.Object) -> list[tuple[str, object]]:
    """``(key, F-Curve collection)`` of every place the object's settings may be animated."""
    anim = obj.animation_data
    if anim is None:
        return []
    out = [(_DRIVERS, anim.drivers)]
    pairs = [(anim.action, getattr(anim, "action_slot", None))]
    pairs += [
        (strip.action, getattr(strip, "action_slot", None))
        for track in anim.nla_tracks
        for strip in track.strips
    ]
    for action, slot in pairs:
        if action is None or action.library is not None:
            continue
        bag = anim_utils.action_get_channelbag_for_slot(action, slot) if slot is not None else None
        if bag is not None:
            out.append((f"{action.name}\x1f{slot.identifier}", bag.fcurves))
    return out


#: The Factor Mode item Auto, as keys and the Mix input hold it (its number in ``properties.FACTOR_MODES``).
_AUTO_NUMBER = 2
_MODE_PATH = "hybrid_skin.factor_mode"


def may_choose_auto(obj: bpy.types.Object) -> bool:
    """Whether the object's animation can set *Factor Mode* to Auto at some time: a key of Auto in any of
    its actions, or a driver on it (whose value is known only when it runs). The Mix tree needs its Auto
    nodes then, although the mode is another one now: a farm without the add-on renders the keyed Auto."""
    for key, curves in _places(obj):
        for curve in curves:
            if curve.data_path != _MODE_PATH:
                continue
            if key == _DRIVERS or any(round(k.co[1]) == _AUTO_NUMBER for k in curve.keyframe_points):
                return True
    return False


def sync(obj: bpy.types.Object, mix: bpy.types.NodesModifier, mirrored: list) -> list:
    """Copy the settings' animation onto ``mix``'s inputs; returns what is mirrored now, as
    ``[place key, data path]`` (the record keeps it). Copies whose source is gone are removed."""
    targets = {source: bridge.modifier_input_path(mix, name) for source, name in SOURCES.items()}
    now = []
    places = dict(_places(obj))
    for key, curves in places.items():
        for curve in [c for c in curves if c.data_path in targets and c.array_index == 0]:
            path = targets[curve.data_path]
            copy = curves.find(path)
            if copy is None:
                copy = _new_driver(obj, path) if key == _DRIVERS else curves.new(path)
            if _fingerprint(curve) != _fingerprint(copy):
                _copy(curve, copy, key == _DRIVERS)
            now.append([key, path])
    for key, path in mirrored:
        if [key, path] not in now:
            _remove_one(obj, places.get(key), key, path)
    return now


def remove(obj: bpy.types.Object, mirrored: list) -> None:
    """Remove every recorded copy (those still there)."""
    places = dict(_places(obj))
    for key, path in mirrored:
        _remove_one(obj, places.get(key), key, path)


def _remove_one(obj: bpy.types.Object, curves, key: str, path: str) -> None:
    if key == _DRIVERS:
        if obj.animation_data is not None and obj.animation_data.drivers.find(path) is not None:
            obj.driver_remove(path)
        return
    copy = curves.find(path) if curves is not None else None
    if copy is not None:
        curves.remove(copy)


def _new_driver(obj: bpy.types.Object, path: str) -> bpy.types.FCurve:
    curve = obj.driver_add(path)
    for modifier in list(curve.modifiers):  # Blender adds a Generator; the copy takes the source's
        curve.modifiers.remove(modifier)
    return curve


def _fingerprint(curve: bpy.types.FCurve) -> tuple:
    keys = tuple(tuple(_plain(getattr(k, p)) for p in _KEY_PROPERTIES) for k in curve.keyframe_points)
    modifiers = tuple(_struct(m) for m in curve.modifiers)
    driver = None
    if curve.driver is not None and curve.driver.type:
        d = curve.driver
        driver = (
            d.type,
            d.expression,
            d.use_self,
            tuple(
                (v.name, v.type, tuple(_struct(t, _VARIABLE_TARGET) for t in v.targets)) for v in d.variables
            ),
        )
    return keys, modifiers, curve.extrapolation, driver, curve.mute


def _copy(source: bpy.types.FCurve, copy: bpy.types.FCurve, is_driver: bool) -> None:
    points = copy.keyframe_points
    while len(points):
        points.remove(points[0], fast=True)
    points.add(len(source.keyframe_points))
    for src, dst in zip(source.keyframe_points, points, strict=True):
        for name in _KEY_PROPERTIES:
            setattr(dst, name, getattr(src, name))
    for modifier in list(copy.modifiers):
        copy.modifiers.remove(modifier)
    for modifier in source.modifiers:
        _set_struct(copy.modifiers.new(modifier.type), modifier)
    copy.extrapolation = source.extrapolation
    copy.mute = source.mute
    if is_driver:
        s, d = source.driver, copy.driver
        d.type, d.expression, d.use_self = s.type, s.expression, s.use_self
        while len(d.variables):
            d.variables.remove(d.variables[0])
        for variable in s.variables:
            new = d.variables.new()
            new.name, new.type = variable.name, variable.type
            for src_target, dst_target in zip(variable.targets, new.targets, strict=True):
                _set_struct(dst_target, src_target, _VARIABLE_TARGET)
    copy.update()


def _plain(value):
    """A value as a comparable tuple or scalar (mathutils vectors are not hashable)."""
    return tuple(value) if hasattr(value, "__len__") and not isinstance(value, str) else value


def _writable(struct, names=None) -> list[str]:
    props = struct.bl_rna.properties
    keys = names or [p.identifier for p in props if not p.is_readonly and p.identifier != "rna_type"]
    return [k for k in keys if k in props and not props[k].is_readonly]


def _struct(struct, names=None) -> tuple:
    return tuple((k, _plain(getattr(struct, k))) for k in _writable(struct, names))


def _set_struct(dst, src, names=None) -> None:
    for key in _writable(src, names):
        if key == "id_type" or key not in dst.bl_rna.properties:
            continue
        try:
            setattr(dst, key, getattr(src, key))
        except (AttributeError, TypeError, ValueError):
            continue  # a property valid only in another state of the struct (a target's id of another type)
    if "id_type" in _writable(src, names):
        dst.id_type = src.id_type
        if "id" in dst.bl_rna.properties:
            dst.id = src.id
