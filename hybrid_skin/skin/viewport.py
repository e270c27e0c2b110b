"""The live GPU display: one POST_VIEW draw callback for all Hybrid Skin objects.

Per object (:func:`draw_object`, which the callback calls with the region's matrices and tests call
with their own):

* once per bind: a :class:`~.gpu.resources.GpuSkin` with the rest geometry and influences on the GPU,
  and for ``factor_mode = 'VERTEX_GROUP'`` the group's weights as the per-vertex factor map;
* per settings change: the factor. GLOBAL is one uniform, VERTEX_GROUP the slider as a uniform over the
  map already uploaded, AUTO a shader mode: nothing per vertex is uploaded when the slider moves;
* per frame (:func:`update_pose`): the pose, O(bones) — bone matrices, dual quaternions and, for AUTO,
  each bone's accumulated twist and swing, from which the shader derives every vertex's factor. Only a
  mesh whose rest input can animate (shape keys, modifiers above the Armature modifier) is re-read, and
  its binding rebuilt, when that input moved.
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

import bpy
import numpy as np

from .. import bridge, stats
from ..factor import factor_group_weights
from . import bind as rig
from . import display as state

if TYPE_CHECKING:
    from ..draw.resources import GpuSkin

__all__ = [
    "ShownSkin",
    "apply_factors",
    "draw_callback",
    "draw_object",
    "shows_on_gpu",
    "skin_for",
    "update_pose",
]

_handle = None
#: (object, message) pairs already printed by the draw callback: each problem once, not per redraw.
_reported: set[tuple[str, str]] = set()


@dataclass
class ShownSkin:
    """The viewport's state for one object: its GPU skin and what it last uploaded."""

    skin: GpuSkin
    #: (generation, frame) of the pose on the GPU; None re-reads the pose at the next draw.
    pose_key: tuple | None = None
    #: The object's factor settings changed since they were applied.
    factors_stale: bool = True
    #: Generation at which the bind was last checked against the scene (see :func:`skin_for`).
    checked: int = -1


#: session_uid → what is shown for that object
_skins: dict[int, ShownSkin] = {}
#: Bumped by depsgraph and frame-change handlers; a skin whose key differs re-reads its pose.
_generation = [0]


def bump() -> None:
    _generation[0] += 1


def forget(obj: bpy.types.Object | None = None) -> None:
    """Free GPU resources of ``obj`` (or of every object)."""
    keys = list(_skins) if obj is None else [obj.session_uid]
    for key in keys:
        shown = _skins.pop(key, None)
        if shown is not None:
            shown.skin.free()


def _factors_changed(obj: bpy.types.Object) -> None:
    shown = _skins.get(obj.session_uid)
    if shown is not None:
        shown.factors_stale = True
        shown.pose_key = None  # switching to AUTO needs this pose's bone data
    bump()


def _color(obj: bpy.types.Object) -> tuple[float, float, float, float]:
    mat = obj.active_material
    return tuple(mat.diffuse_color) if mat is not None else tuple(obj.color)


def shows_on_gpu(obj: bpy.types.Object, view_layer: bpy.types.ViewLayer, space=None) -> bool:
    """Whether the draw callback draws ``obj``: Hybrid Skin on, GPU display, not baked, visible."""
    settings = obj.hybrid_skin if obj.type == "MESH" else None
    if settings is None or not settings.enabled or settings.display != "GPU" or settings.bake_state:
        return False
    return obj.visible_get(view_layer=view_layer, viewport=space)


def apply_factors(skin: GpuSkin, obj: bpy.types.Object, bound: rig.SkinRig) -> None:
    """Give ``skin`` the object's factor settings without per-vertex work, except for uploading a
    vertex group's weights the first time this bind uses them."""
    settings = obj.hybrid_skin
    if settings.factor_mode == "AUTO":
        skin.set_factors("AUTO")
    elif settings.factor_mode == "VERTEX_GROUP":
        weights = factor_group_weights(obj, bound)
        skin.set_factor_map(weights)  # the rig's own array: uploaded once per bind, then only re-enabled
        skin.deform_factor = float(settings.deform_factor)
    else:
        skin.set_factors(float(settings.deform_factor))


def skin_for(obj: bpy.types.Object, depsgraph: bpy.types.Depsgraph) -> ShownSkin:
    """The object's GPU skin, built on first use and after a rebind, with its current factor settings."""
    from ..draw.resources import GpuSkin  # noqa: PLC0415  (gpu only once something is drawn)

    shown = _skins.get(obj.session_uid)
    if shown is not None and shown.checked == _generation[0] and not shown.factors_stale:
        return shown  # nothing changed since the last draw: no bind check on a mere redraw
    settings = obj.hybrid_skin
    groups = (settings.factor_vertex_group,) if settings.factor_mode == "VERTEX_GROUP" else ()
    bound = rig.cached_rig(obj, depsgraph, settings.modifier_name, groups)
    if shown is None or shown.skin.rig is not bound:
        forget(obj)
        surface = bridge.surface(obj.evaluated_get(depsgraph).data)
        shown = _skins[obj.session_uid] = ShownSkin(GpuSkin(bound, surface))
    if shown.factors_stale:
        apply_factors(shown.skin, obj, bound)
        shown.factors_stale = False
    shown.checked = _generation[0]
    return shown


def _binding_uses_positions(bound: rig.SkinRig) -> bool:
    """Whether the influences depend on where the rest points lie in armature space: B-bone segments
    and envelopes do; plain vertex-group weights do not (the transform is a uniform of the shader)."""
    return bool((bound.bones.segments > 1).any() or bound.bones.envelope_multiply.any() or bound.mask[2])


def update_pose(skin: GpuSkin, obj: bpy.types.Object, depsgraph: bpy.types.Depsgraph) -> None:
    """One frame of the GPU path: the evaluated pose to the GPU, O(bones).

    A rest input that can animate is re-read first (``SkinRig.refresh_rest``: O(1) unless the mesh has
    shape keys or modifiers above its Armature modifier) and the binding rebuilt when the rest points or
    the mesh-to-armature transform moved and the influences depend on them; ``GpuSkin.update_pose`` then
    re-uploads its per-vertex data, which it notices by identity.
    """
    bound = skin.rig
    obj_eval = obj.evaluated_get(depsgraph)
    arm_eval = bpy.data.objects[bound.armature_name].evaluated_get(depsgraph)
    target_to_armature = bound.target_to_armature(obj_eval, arm_eval)
    moved = bound.refresh_rest(obj, depsgraph)
    placed = np.allclose(target_to_armature, bound.bound_target_to_armature, rtol=0.0, atol=1e-9)
    if (moved or not placed) and _binding_uses_positions(bound):
        bound.rebuild_binding(target_to_armature, arm_eval)
    deform = bound.deform_matrices(arm_eval)
    auto = bound.auto_bone_data(deform) if skin.auto_factor else None
    skin.update_pose(bound.palette(arm_eval, deform), target_to_armature, auto_bone_data=auto)


def draw_object(obj: bpy.types.Object, depsgraph: bpy.types.Depsgraph, view_projection: np.ndarray,
                view_layer: bpy.types.ViewLayer, space=None) -> GpuSkin | None:
    """Draw ``obj``'s hybrid skin into the bound framebuffer with the world → clip ``view_projection``
    ``(4, 4)``; the pose is re-read when the frame or the scene changed since the last draw. Returns the
    :class:`GpuSkin` drawn, or None when ``obj`` is not shown (see :func:`shows_on_gpu`). Raises
    ``bridge.HybridSkinError`` for an object that cannot be skinned."""
    if not shows_on_gpu(obj, view_layer, space):
        return None
    shown = skin_for(obj, depsgraph)
    key = (_generation[0], depsgraph.scene.frame_current_final)
    if shown.pose_key != key:
        start = time.perf_counter()
        update_pose(shown.skin, obj, depsgraph)
        stats.last_update_ms[obj.name] = (time.perf_counter() - start) * 1e3
        shown.pose_key = key
    obj_eval = obj.evaluated_get(depsgraph)
    shown.skin.draw(view_projection, bridge.object_matrix(obj_eval), _color(obj))
    return shown.skin


def draw_callback() -> None:
    context = bpy.context
    view_layer, space, region = context.view_layer, context.space_data, context.region_data
    if view_layer is None or region is None:
        return
    depsgraph = context.evaluated_depsgraph_get()
    view_projection = np.array(region.perspective_matrix, dtype=np.float64)
    for obj in view_layer.objects:
        try:
            draw_object(obj, depsgraph, view_projection, view_layer, space)
        except bridge.HybridSkinError as err:
            if (obj.name, str(err)) not in _reported:
                _reported.add((obj.name, str(err)))
                print(f"Hybrid Skin: {err}")


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
    _reported.clear()
    shaders = sys.modules.get(f"{__package__.rpartition('.')[0]}.draw.shaders")
    if shaders is not None:  # compiled only once something was drawn
        shaders.clear_cache()


def is_registered() -> bool:
    return _handle is not None
