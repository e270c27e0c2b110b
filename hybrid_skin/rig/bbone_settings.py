"""What the Auto tree needs of an armature's B-bones, read at bind: per B-bone its segments, handles and
settings (:class:`.trees.palette.BBone`), or the one sentence saying why the tree cannot compute them.

Bone Info gives the tree every bone's pose and rest matrices; the rest of a B-bone's shape is settings:
the Bone's (edit mode) and the PoseBone's curve, ease, roll and scale, its handle types and flags. They are
constants in the tree, so a setting that can change from frame to frame keeps the attribute path: one that
is keyed, or driven by anything that can change (a keyed property, a transform, the frame, a Python
expression). A driver of constant inputs gives a constant: Rigify drives its DEF bones' ease from each
tweak bone's ``rubber_tweak`` property, which stays put unless it is keyed. (Driving the tree's own
sockets instead would be exact too, but Blender prepares the whole tree again at each frame then: tens of
milliseconds on a Rigify body.)
"""

from __future__ import annotations

import hashlib
import re

import bpy
import numpy as np

from .trees import bbone_groups
from .trees.bbone_groups import Flag
from .trees.palette import SETTING_PATHS, BBone, Handle

__all__ = ["placement_reason", "read", "rest_key", "values_digest"]

_KINDS = {
    "AUTO": bbone_groups.KIND_ABSOLUTE,
    "ABSOLUTE": bbone_groups.KIND_ABSOLUTE,
    "RELATIVE": bbone_groups.KIND_RELATIVE,
    "TANGENT": bbone_groups.KIND_TANGENT,
}
#: Blender's MAX_BBONE_SUBDIV.
MAX_SEGMENTS = 32


def read(
    arm: bpy.types.Object, names: tuple[str, ...], segments, evaluated: bpy.types.Object | None = None
) -> tuple[tuple[BBone, ...], str | None]:
    """The B-bones among the deform bones ``names`` (``segments``: theirs, as the bind read them), in that
    order; or ``((), reason)``. The values are the evaluated armature's (``evaluated``; default: the
    context's evaluation, brought up to date): a driver writes its result there."""
    evaluated = evaluated or arm.evaluated_get(bpy.context.evaluated_depsgraph_get())
    animated = _Animated(arm)
    out = []
    for name, count in zip(names, segments, strict=True):
        if count <= 1:
            continue
        bone = arm.data.bones[name]
        start, end = _handle(bone, "start"), _handle(bone, "end")
        for handle, side in ((start, "start"), (end, "end")):
            reason = _handle_reason(bone, handle, side)
            if reason:
                return (), reason
        settings, reason = _settings(arm, evaluated, bone, start, animated)
        if reason:
            return (), reason
        handles = (_as_handle(start, bone, "start"), _as_handle(end, bone, "end"))
        out.append(BBone(name, min(int(count), MAX_SEGMENTS), _flags(bone, start, end), *handles, settings))
    return tuple(out), None


#: The object properties that place a mesh on its parent.
_PLACEMENT = (
    "location", "rotation_euler", "rotation_quaternion", "rotation_axis_angle", "scale",
    "delta_location", "delta_rotation_euler", "delta_rotation_quaternion", "delta_scale",
)


def placement_reason(obj: bpy.types.Object, arm: bpy.types.Object) -> str:
    """Why ``obj`` may move on ``arm`` from frame to frame (its vertices would then fall in other B-bone
    segments than at bind), or "": it is parented to it, unconstrained, its transform not animated."""
    where = "its vertices would fall in other B-bone segments than the node tree keeps from the bind"
    if obj.parent is not arm or obj.parent_type not in ("OBJECT", "ARMATURE"):
        return f"'{obj.name}' is not parented to '{arm.name}': where it moves on it, {where}"
    if any(c.enabled for c in obj.constraints):
        return f"'{obj.name}' has constraints: where they move it on '{arm.name}', {where}"
    animated = _Animated(arm)
    for path in _PLACEMENT:
        for index in range(4):
            why = animated.why(obj, path, index)
            if why:
                return f"'{obj.name}' {path} is {why}: where it moves it on '{arm.name}', {where}"
    return ""


def _handle(bone: bpy.types.Bone, side: str) -> bpy.types.Bone | None:
    """The handle bone Blender uses (``BKE_pchan_bbone_handles_get``): Automatic is the connected parent
    (start) or the last connected child (end)."""
    if getattr(bone, f"bbone_handle_type_{side}") != "AUTO":
        return getattr(bone, f"bbone_custom_handle_{side}")
    if side == "start":
        return bone.parent if bone.use_connect else None
    connected = [child for child in bone.children if child.use_connect]
    return connected[-1] if connected else None


def _as_handle(handle: bpy.types.Bone | None, bone: bpy.types.Bone, side: str) -> Handle | None:
    if handle is None:
        return None
    return Handle(handle.name, _KINDS[getattr(bone, f"bbone_handle_type_{side}")])


def _handle_reason(bone: bpy.types.Bone, handle: bpy.types.Bone | None, side: str) -> str:
    """Why a handle's scale cannot be read from Bone Info (its Local Pose is Blender's bone-space pose only
    for a bone that inherits its parent's rotation and full scale), or ""."""
    if handle is None or handle.parent is None:
        return ""
    uses_scale = any(getattr(bone, f"bbone_handle_use_scale_{side}")) or getattr(
        bone, f"bbone_handle_use_ease_{side}"
    )
    full = handle.use_inherit_rotation and handle.inherit_scale == "FULL"
    if uses_scale and not full:
        return (
            f"B-bone '{bone.name}' takes scale from handle '{handle.name}', which does not inherit its "
            "parent's rotation and full scale: the node tree cannot read that scale"
        )
    return ""


def _flags(bone: bpy.types.Bone, start, end) -> int:
    flags = 0
    if bone.use_scale_easing:
        flags |= Flag.SCALE_EASING
    if bone.use_endroll_as_inroll:
        flags |= Flag.END_ROLL
    if start is not None and start.bbone_segments > 1:
        flags |= Flag.PREV_BBONE
    if end is not None and end.bbone_segments > 1:
        flags |= Flag.NEXT_BBONE
    for side, bits, ease in (
        ("start", Flag.PREV_SCALE, Flag.PREV_EASE),
        ("end", Flag.NEXT_SCALE, Flag.NEXT_EASE),
    ):
        for used, bit in zip(getattr(bone, f"bbone_handle_use_scale_{side}"), bits, strict=True):
            flags |= bit if used else 0
        flags |= ease if getattr(bone, f"bbone_handle_use_ease_{side}") else 0
    return flags


def _settings(
    arm: bpy.types.Object, evaluated: bpy.types.Object, bone: bpy.types.Bone, start, animated: _Animated
) -> tuple[tuple[float, ...], str]:
    """The 30 numbers of :data:`.trees.palette.SETTING_PATHS` (the Bone's, then the PoseBone's, as
    ``evaluated`` has them), or why one of them can change from frame to frame."""
    out = []
    for level, owner, prefix in (("Bone", arm.data, "bones"), ("PoseBone", arm, "pose.bones")):
        for vector in SETTING_PATHS:
            for entry in vector:
                target, (prop, index) = (bone, entry) if entry is not None else (start, ("bbone_rollout", -1))
                if target is None or (entry is None and not bone.use_endroll_as_inroll):
                    out.append(0.0)  # no start handle's end roll to add
                    continue
                path = f'{prefix}["{bpy.utils.escape_identifier(target.name)}"].{prop}'
                why = animated.why(owner, path, max(index, 0))
                if why:
                    sentence = f"{level} '{target.name}' {prop} is {why}"
                    return (), f"{sentence}, and the node tree reads B-bone settings once, at bind"
                data = (evaluated.data.bones if level == "Bone" else evaluated.pose.bones)[target.name]
                value = getattr(data, prop)
                out.append(float(value[index]) if index >= 0 else float(value))
    return tuple(out), ""


class _Animated:
    """What keys or drives a property (``why``): a short phrase, or "" where it cannot change from frame
    to frame. A driver is constant when all its inputs are (a custom or plain property nothing animates);
    transforms, the frame, Python expressions and context properties are not."""

    def __init__(self, arm: bpy.types.Object) -> None:
        self._curves: dict[int, dict] = {}
        self._arm = arm

    def _of(self, owner: bpy.types.ID) -> dict:
        key = owner.session_uid
        if key not in self._curves:
            keyed, drivers = set(), {}
            anim = owner.animation_data
            if anim is not None:
                drivers = {(d.data_path, d.array_index): d for d in anim.drivers}
                actions = [
                    anim.action,
                    *(strip.action for track in anim.nla_tracks for strip in track.strips),
                ]
                keyed = {(c.data_path, c.array_index) for a in actions if a is not None for c in _fcurves(a)}
            self._curves[key] = {"keyed": keyed, "drivers": drivers}
        return self._curves[key]

    def why(self, owner: bpy.types.ID, path: str, index: int, depth: int = 0) -> str:
        curves = self._of(owner)
        if (path, index) in curves["keyed"]:
            return "keyed"
        driver = curves["drivers"].get((path, index))
        if driver is None:
            return ""
        cause = self._driver(driver.driver, depth)
        return f"driven by {cause}" if cause else ""

    def _driver(self, driver, depth: int) -> str:
        if depth > 8:
            return "a chain of drivers"
        if driver.type == "SCRIPTED" and (not driver.is_simple_expression or "frame" in driver.expression):
            return "a Python expression" if not driver.is_simple_expression else "the frame"
        if driver.use_self:
            return "a driver that reads itself"
        for variable in driver.variables:
            if variable.type != "SINGLE_PROP":
                return "a transform" if variable.type != "CONTEXT_PROP" else "a context property"
            target = variable.targets[0]
            if target.id is None:
                continue
            why = self._property(target.id, target.data_path, depth)
            if why:
                return f"'{target.data_path}', which is {why}"
        return ""

    def _property(self, owner: bpy.types.ID, path: str, depth: int) -> str:
        base, index = path, 0
        match = re.fullmatch(r"(.*)\[(\d+)\]", path)
        if match and not path.endswith('"]'):
            base, index = match.group(1), int(match.group(2))
        if not base.endswith('"]'):  # an RNA property (not a custom one): Blender may compute it
            struct_path, _, name = base.rpartition(".")
            try:
                struct = owner.path_resolve(struct_path) if struct_path else owner
            except ValueError:
                return ""  # Blender reads nothing there either
            prop = struct.bl_rna.properties.get(name) if hasattr(struct, "bl_rna") else None
            if prop is None or prop.is_readonly:
                return "computed by Blender"
        return self.why(owner, base, index, depth + 1)


#: Bone and PoseBone properties whose values :func:`values_digest` covers (every bone, in bulk).
_BULK = {
    "bones": (
        *(f"bbone_{p}" for p in ("curveinx", "curveinz", "curveoutx", "curveoutz", "easein", "easeout")),
        "bbone_rollin", "bbone_rollout", "bbone_segments", "use_scale_easing", "use_endroll_as_inroll",
    ),
    "pose.bones": tuple(f"bbone_{p}" for p in ("curveinx", "curveinz", "curveoutx", "curveoutz", "easein",
                                               "easeout", "rollin", "rollout")),
}
_BULK_VECTORS = ("bbone_scalein", "bbone_scaleout")


def _fcurves(action: bpy.types.Action) -> list:
    """Every F-Curve of ``action``, of every slot (the action itself before slotted actions)."""
    layers = getattr(action, "layers", None)
    if not layers:
        return list(action.fcurves) if hasattr(action, "fcurves") else []
    return [c for layer in layers for strip in layer.strips for bag in strip.channelbags for c in bag.fcurves]


def values_digest(arm: bpy.types.Object) -> str:
    """A digest of every bone's B-bone settings (bulk reads: cheap enough for each edit of the rig), to
    notice that the ones a tree keeps changed since it was built."""
    return hashlib.sha1(rest_key(arm) + _bulk(arm.pose.bones, _BULK["pose.bones"])).hexdigest()


def rest_key(arm: bpy.types.Object) -> bytes:
    """The Bones' B-bone settings and handles as bytes: what Blender's rest shape of each B-bone is made
    of besides the bones' rest matrices (a bind's segment rest matrices hold while it is the same)."""
    bones = arm.data.bones
    handles = [
        (b.bbone_handle_type_start, b.bbone_handle_type_end, getattr(b.bbone_custom_handle_start, "name", ""),
         getattr(b.bbone_custom_handle_end, "name", ""), tuple(b.bbone_handle_use_scale_start),
         tuple(b.bbone_handle_use_scale_end), b.bbone_handle_use_ease_start, b.bbone_handle_use_ease_end)
        for b in bones if b.bbone_segments > 1
    ]
    return _bulk(bones, _BULK["bones"]) + repr(handles).encode()


def _bulk(collection, names: tuple[str, ...]) -> bytes:
    parts = []
    for name in (*names, *_BULK_VECTORS):
        values = np.empty(len(collection) * (3 if name in _BULK_VECTORS else 1), dtype=np.float32)
        collection.foreach_get(name, values)
        parts.append(values.tobytes())
    return b"".join(parts)
