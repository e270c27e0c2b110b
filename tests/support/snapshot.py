"""A snapshot of everything a user owns in a scene, to compare before and after an operation.

One helper for the whole robustness suite: take :func:`snapshot` before Add (or before a refused operation),
do the operation and its undo/Remove/Clear, take it again, and :func:`assert_same` the two. It records plain
Python values only (no bpy references), so snapshots survive undo and file reloads.

What is recorded, per object: every RNA setting of the object, its modifiers (every property, in stack order),
constraints, vertex groups (names, locks, weights of every vertex), custom properties; per mesh: vertex
positions, every attribute (name, domain, type, values), UV maps (active, active render), shape keys (every
setting and coordinate, the key's own settings), the animation data of object, mesh and shape keys (action,
slot, NLA tracks, every F-Curve with its keyframes and modifiers, every driver with expression and variables);
per armature object: the pose (every channel of every pose bone), the armature's pose position; the scene's
frame, frame range, fps and Time Stretching; datablock names of every collection in bpy.data; and files on
disk under the given folders (names, sizes, SHA-256).
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Iterable
from pathlib import Path

import bpy
import numpy as np

#: RNA properties that change on their own (caches, runtime flags) or are derived from other recorded data.
_VOLATILE = {
    "rna_type", "session_uid", "is_evaluated", "original", "users", "is_runtime_data", "tag",
    "is_missing", "is_embedded_data", "is_library_indirect", "library_weak_reference", "preview",
    "use_extra_user", "is_editmode", "bound_box", "matrix_parent_inverse_runtime",
    "is_override_data", "override_library", "asset_data", "use_fake_user", "mode",
    # Modifier runtime state.
    "is_active", "execution_time", "persistent_uid", "show_expanded", "dimensions",
    "ui_expand_flag", "is_bound",
}

_DATA_COLLECTIONS = (
    "objects", "meshes", "armatures", "actions", "materials", "images", "textures", "node_groups",
    "collections", "cameras", "lights", "curves", "lattices", "shape_keys", "texts", "cache_files",
)


def _plain(value):
    """A comparable plain value for an RNA value (pointers by name, arrays as tuples)."""
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        return "nan" if math.isnan(value) else value
    if isinstance(value, bpy.types.ID):
        return ("ID", type(value).__name__, value.name)
    if isinstance(value, bpy.types.bpy_struct):
        name = getattr(value, "name", None)
        return ("struct", type(value).__name__, name)
    try:
        return tuple(_plain(v) for v in value)
    except TypeError:
        return repr(value)


def rna_settings(struct, skip: Iterable[str] = ()) -> dict:
    """Every readable non-collection RNA property of ``struct`` as plain values."""
    skip = set(skip) | _VOLATILE
    out = {}
    for prop in struct.bl_rna.properties:
        key = prop.identifier
        if key in skip or prop.type == "COLLECTION":
            continue
        if prop.type == "POINTER" and not prop.is_never_none and getattr(struct, key, None) is not None:
            target = getattr(struct, key)
            if not isinstance(target, bpy.types.ID):
                continue  # nested structs (e.g. runtime data) are recorded by their owners where they matter
        try:
            out[key] = _plain(getattr(struct, key))
        except (AttributeError, RuntimeError, TypeError):
            continue
    return out


def _bulk(collection, attr: str, width: int, dtype=np.float32) -> tuple:
    buf = np.empty(len(collection) * width, dtype=dtype)
    if len(collection):
        collection.foreach_get(attr, buf)
    return tuple(buf.tolist())


def _fcurve(fc) -> dict:
    return {
        "settings": rna_settings(fc, skip={"group", "is_valid", "select", "hide", "lock"}),
        "keys": [rna_settings(k, skip={"select_control_point", "select_left_handle", "select_right_handle"})
                 for k in fc.keyframe_points],
        "modifiers": [rna_settings(m) for m in fc.modifiers],
        "driver": None if fc.driver is None else {
            "type": fc.driver.type,
            "expression": fc.driver.expression,
            "use_self": fc.driver.use_self,
            "variables": [
                {"name": v.name, "type": v.type,
                 "targets": [rna_settings(t) for t in v.targets]}
                for v in fc.driver.variables
            ],
        },
    }


def _action_curves(action) -> list:
    if action is None:
        return []
    layers = getattr(action, "layers", None)
    curves = []
    if layers:
        for layer in layers:
            for strip in layer.strips:
                for bag in strip.channelbags:
                    curves += [(bag.slot.identifier if bag.slot else "", fc) for fc in bag.fcurves]
    else:
        curves = [("", fc) for fc in getattr(action, "fcurves", ())]
    return sorted(
        ((slot, fc.data_path, fc.array_index, _fcurve(fc)) for slot, fc in curves), key=lambda c: c[:3]
    )


def animation(id_data) -> dict | None:
    anim = getattr(id_data, "animation_data", None)
    if anim is None:
        return None
    slot = getattr(anim, "action_slot", None)
    return {
        "settings": rna_settings(anim, skip={"action_slot", "action_tweak_storage"}),
        "slot": None if slot is None else slot.identifier,
        "action": None if anim.action is None else anim.action.name,
        "action_curves": _action_curves(anim.action),
        "drivers": sorted(
            ((fc.data_path, fc.array_index, _fcurve(fc)) for fc in anim.drivers), key=lambda c: c[:2]
        ),
        "nla": [
            {"settings": rna_settings(t), "strips": [rna_settings(s) for s in t.strips]}
            for t in anim.nla_tracks
        ],
    }


def mesh_snapshot(mesh: bpy.types.Mesh) -> dict:
    out = {
        "settings": rna_settings(mesh, skip={"shape_keys", "texture_mesh", "vertex_colors"}),
        "counts": (len(mesh.vertices), len(mesh.edges), len(mesh.polygons), len(mesh.loops)),
        "co": _bulk(mesh.vertices, "co", 3),
        "attributes": {},
        "uv_layers": [(uv.name, uv.active, uv.active_render) for uv in mesh.uv_layers],
        "animation": animation(mesh),
    }
    for attr in mesh.attributes:
        if attr.name.startswith("."):
            continue  # Blender's internal attributes (selection, hide, sharp flags...) are recorded by value
        field = {"FLOAT_VECTOR": ("vector", 3), "FLOAT_COLOR": ("color", 4), "BYTE_COLOR": ("color", 4),
                 "FLOAT2": ("vector", 2), "INT32_2D": ("value", 2), "INT16_2D": ("value", 2),
                 "QUATERNION": ("value", 4),
                 "FLOAT4X4": ("value", 16)}.get(attr.data_type, ("value", 1))
        dtype = np.int32 if attr.data_type in ("INT", "INT8", "INT32_2D", "INT16_2D") else (
            bool if attr.data_type == "BOOLEAN" else np.float32)
        values = _bulk(attr.data, field[0], field[1], dtype)
        out["attributes"][attr.name] = (attr.domain, attr.data_type, values)
    key = mesh.shape_keys
    if key is not None:
        out["shape_keys"] = {
            "settings": rna_settings(key, skip={"reference_key", "user"}),
            "reference": key.reference_key.name,
            "blocks": [
                {"settings": rna_settings(kb), "co": _bulk(kb.data, "co", 3)} for kb in key.key_blocks
            ],
            "animation": animation(key),
        }
    return out


def object_snapshot(obj: bpy.types.Object) -> dict:
    out = {
        "settings": rna_settings(obj, skip={"hybrid_skin", "matrix_world", "field", "collision",
                                            "rigid_body", "rigid_body_constraint", "image_user"}),
        "matrix_world": _plain(obj.matrix_world),
        "modifiers": [(m.name, m.type, rna_settings(m)) for m in obj.modifiers],
        "constraints": [(c.name, c.type, rna_settings(c)) for c in obj.constraints],
        "vertex_groups": [(g.name, g.index, g.lock_weight) for g in obj.vertex_groups],
        "active_vertex_group": obj.vertex_groups.active_index,
        "custom": {k: _plain(obj[k]) for k in obj.keys() if k != "hybrid_skin"},
        "animation": animation(obj),
        "material_slots": [(s.link, s.material.name if s.material else None) for s in obj.material_slots],
    }
    if obj.type == "MESH":
        out["weights"] = _weights(obj)
        out["mesh"] = mesh_snapshot(obj.data)
        out["active_shape_key_index"] = obj.active_shape_key_index
    if obj.type == "ARMATURE":
        out["pose"] = [rna_settings(pb, skip={"matrix", "matrix_channel", "head", "tail", "child",
                                               "parent", "bone", "custom_shape_transform"})
                       for pb in obj.pose.bones]
        out["armature"] = rna_settings(obj.data)
    return out


def _weights(obj: bpy.types.Object) -> tuple:
    mesh = obj.data
    return tuple(tuple((g.group, g.weight) for g in v.groups) for v in mesh.vertices)


def files_snapshot(folders: Iterable[Path]) -> dict:
    out = {}
    for folder in folders:
        folder = Path(folder)
        if not folder.exists():
            out[str(folder)] = None
            continue
        for path in sorted(folder.rglob("*")):
            if path.is_file():
                out[str(path)] = (path.stat().st_size, hashlib.sha256(path.read_bytes()).hexdigest())
    return out


def snapshot(scene: bpy.types.Scene | None = None, folders: Iterable[Path] = ()) -> dict:
    """Everything the user owns in ``scene`` (default: the context's) plus files under ``folders``."""
    scene = scene or bpy.context.scene
    # Animation, drivers and derived values as the user sees them at this frame (frame_set evaluates
    # animation; channels no action keys keep whatever value the user left in them).
    scene.frame_set(scene.frame_current, subframe=scene.frame_subframe)
    return {
        "scene": {
            "frame": (scene.frame_current, scene.frame_subframe, scene.frame_start, scene.frame_end),
            "fps": (scene.render.fps, scene.render.fps_base),
            "time_stretching": (scene.render.frame_map_old, scene.render.frame_map_new),
            "animation": animation(scene),
        },
        "objects": {o.name: object_snapshot(o) for o in scene.objects},
        "data": {name: sorted(d.name for d in getattr(bpy.data, name)) for name in _DATA_COLLECTIONS
                 if hasattr(bpy.data, name)},
        "files": files_snapshot(folders),
    }


def differences(before, after, path: str = "") -> list[str]:
    """Human-readable paths where two snapshots differ (first few array elements shown)."""
    if type(before) is not type(after):
        return [f"{path}: {type(before).__name__} → {type(after).__name__}"]
    if isinstance(before, dict):
        out = []
        for key in sorted(set(before) | set(after), key=str):
            if key not in before:
                out.append(f"{path}/{key}: added")
            elif key not in after:
                out.append(f"{path}/{key}: removed")
            else:
                out += differences(before[key], after[key], f"{path}/{key}")
        return out
    if isinstance(before, list | tuple):
        if len(before) != len(after):
            return [f"{path}: length {len(before)} → {len(after)}"]
        out = []
        for i, (b, a) in enumerate(zip(before, after)):
            out += differences(b, a, f"{path}[{i}]")
            if len(out) > 20:
                break
        return out
    return [] if before == after else [f"{path}: {before!r} → {after!r}"]


def assert_same(before: dict, after: dict, what: str = "") -> None:
    diff = differences(before, after)
    assert not diff, f"user data changed{(' ' + what) if what else ''}:\n" + "\n".join(diff[:40])
