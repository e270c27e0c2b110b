"""The live GPU display: one POST_VIEW draw callback for all Hybrid Skin objects.

Per frame (or depsgraph update) each visible object's pose is read and its bone texture re-uploaded:
O(bones) CPU work. Rest geometry, influences and factors live on the GPU from bind time on.
"""

from __future__ import annotations

import sys
import time

import bpy
import numpy as np

from . import bridge, rig, state, stats
from .factors import vertex_factors

_handle = None
#: session_uid → (GpuSkin, pose key it shows)
_skins: dict[int, list] = {}
#: Bumped by depsgraph and frame-change handlers; a skin whose key differs re-reads its pose.
_generation = [0]


def bump() -> None:
    _generation[0] += 1


def forget(obj: bpy.types.Object | None = None) -> None:
    """Free GPU resources of ``obj`` (or of every object)."""
    keys = list(_skins) if obj is None else [obj.session_uid]
    for key in keys:
        entry = _skins.pop(key, None)
        if entry is not None:
            entry[0].free()


def _factors_changed(obj: bpy.types.Object) -> None:
    entry = _skins.get(obj.session_uid)
    if entry is not None:
        entry[1] = None  # re-upload factors and pose on next draw
        entry.append("factors")
    bump()


def _color(obj: bpy.types.Object) -> tuple[float, float, float, float]:
    mat = obj.active_material
    return tuple(mat.diffuse_color) if mat is not None else tuple(obj.color)


def _skin_for(obj: bpy.types.Object, depsgraph) -> list:
    from .gpu.resources import GpuSkin  # noqa: PLC0415  (gpu only once something is drawn)

    settings = obj.hybrid_skin
    groups = (settings.factor_vertex_group,) if settings.factor_mode == "VERTEX_GROUP" else ()
    bound = rig.cached_rig(obj, depsgraph, settings.modifier_name, groups)
    entry = _skins.get(obj.session_uid)
    if entry is None or entry[0].rig is not bound:
        forget(obj)
        surface = bridge.surface(obj.evaluated_get(depsgraph).data)
        entry = [GpuSkin(bound, surface, vertex_factors(obj, bound)), None]
        _skins[obj.session_uid] = entry
    elif "factors" in entry:
        entry[0].set_factors(vertex_factors(obj, bound))
        del entry[2:]
    return entry


def draw_callback() -> None:
    context = bpy.context
    view_layer, space, region = context.view_layer, context.space_data, context.region_data
    if view_layer is None or region is None:
        return
    depsgraph = context.evaluated_depsgraph_get()
    view_projection = np.array(region.perspective_matrix, dtype=np.float32)
    for obj in view_layer.objects:
        settings = obj.hybrid_skin if obj.type == "MESH" else None
        if settings is None or not settings.enabled or settings.display != "GPU" or settings.bake_state:
            continue
        if not obj.visible_get(view_layer=view_layer, viewport=space):
            continue
        try:
            entry = _skin_for(obj, depsgraph)
        except bridge.HybridSkinError as err:
            print(f"Hybrid Skin: {err}")
            continue
        skin, key = entry[0], (_generation[0], context.scene.frame_current_final)
        obj_eval = obj.evaluated_get(depsgraph)
        if entry[1] != key:
            start = time.perf_counter()
            arm_eval = bpy.data.objects[skin.rig.armature_name].evaluated_get(depsgraph)
            skin.update_pose(skin.rig.palette(arm_eval), skin.rig.target_to_armature(obj_eval, arm_eval))
            stats.last_update_ms[obj.name] = (time.perf_counter() - start) * 1e3
            entry[1] = key
        skin.draw(view_projection, np.array(obj_eval.matrix_world, dtype=np.float32), _color(obj))


def register() -> None:
    global _handle
    _handle = bpy.types.SpaceView3D.draw_handler_add(draw_callback, (), "WINDOW", "POST_VIEW")
    state.listeners.append(_factors_changed)


def unregister() -> None:
    global _handle
    if _handle is not None:
        bpy.types.SpaceView3D.draw_handler_remove(_handle, "WINDOW")
        _handle = None
    state.listeners.remove(_factors_changed)
    forget()
    shaders = sys.modules.get(f"{__package__}.gpu.shaders")
    if shaders is not None:  # compiled only once something was drawn
        shaders.clear_cache()


def is_registered() -> bool:
    return _handle is not None
