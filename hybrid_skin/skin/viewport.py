"""The live GPU display: one POST_VIEW draw callback for all Hybrid Skin objects.

Per object (:func:`draw_object`, which the callback calls with the region's matrices and tests call
with their own):

* once per bind: a :class:`~..draw.resources.GpuSkin` with the rest geometry and influences on the GPU,
  and for ``factor_mode = 'VERTEX_GROUP'`` the group's weights as the per-vertex factor map;
* per factor change: the factor. GLOBAL is one uniform, VERTEX_GROUP the slider as a uniform over the
  map already uploaded, AUTO a shader mode: nothing per vertex is uploaded when the slider moves. The
  settings are compared at every draw (a float and two strings), so a keyframed or driven Deform Factor or
  factor mode is drawn at its animated value;
* per frame (:func:`update_pose`): the pose, O(bones) — bone matrices, dual quaternions and, for AUTO,
  each bone's accumulated twist and swing, from which the shader derives every vertex's factor. The bind
  is brought up to the frame by :meth:`~..rig.mesh_bind.MeshBind.posed`, like every other feature's.

What is shown lives in the runtime (``shown``, ``generation``); the property update callback, the
operators and the handlers call :func:`settings_changed` and :func:`forget` directly.
An object the callback fails to skin (a scene the add-on refuses) is handed to Blender's exact stack:
the failure is kept in the rig's state (``draw_failures``) and a timer makes the display step aside
(:func:`step_aside_failed`), since a draw callback may not change the object.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import bpy
import numpy as np

from .. import bridge, runtime
from ..draw.colors import display_color
from ..draw.resources import GpuSkin
from ..errors import HybridSkinError
from ..rig import bind, factor, mesh_bind, setup, stack
from ..rig.state import RIG_IN_EDIT_MODE, RigState, rig_state

__all__ = [
    "ShownSkin",
    "ViewportState",
    "apply_factors",
    "draw_callback",
    "draw_object",
    "draw_objects",
    "forget",
    "settings_changed",
    "shows_on_gpu",
    "skin_for",
    "update_pose",
]


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
    #: The factor settings the skin has, ``(mode, number, group, profile)``: compared at every draw.
    factor_key: tuple | None = None
    #: CPU milliseconds of its last per-frame update (the panel shows it).
    update_ms: float | None = None


@dataclass
class ViewportState:
    """The live display's session state (:meth:`..runtime.Runtime.state`)."""

    #: ``Object.session_uid`` → what the viewport draws for it.
    shown: dict[int, ShownSkin] = field(default_factory=dict)
    #: The draw handler, while registered.
    draw_handle: Any = None


def viewport_state() -> ViewportState:
    return runtime.get().state(ViewportState)


def forget(obj: bpy.types.Object | None = None) -> None:
    """Free the GPU resources of ``obj`` (or of every object): after a rebind, Remove, undo or load."""
    shown = viewport_state().shown
    keys = list(shown) if obj is None else [obj.session_uid]
    for key in keys:
        entry = shown.pop(key, None)
        if entry is not None:
            entry.skin.free()


def settings_changed(obj: bpy.types.Object) -> None:
    """The object's Hybrid Skin settings changed: apply its factor settings at the next draw."""
    entry = viewport_state().shown.get(obj.session_uid)
    if entry is not None:
        entry.factors_stale = True
        entry.pose_key = None  # switching to AUTO needs this pose's bone data
    rig_state().bump()


def shows_on_gpu(obj: bpy.types.Object, view_layer: bpy.types.ViewLayer, space=None) -> bool:
    """Whether the draw callback draws ``obj``: Hybrid Skin on, the GPU display drawing it (Blender's
    deformation and drawing of it hidden: else it would be drawn twice), not baked, visible."""
    settings = obj.hybrid_skin if obj.type == "MESH" else None
    if settings is None or not settings.enabled or settings.display != "GPU" or settings.bake_state:
        return False
    if not setup.is_local(obj):  # its library's setup: Blender draws it (said once)
        runtime.get().report_once(obj, HybridSkinError(setup.gpu_refusal(obj)))
        return False
    if not setup.gpu_draws(obj):
        return False  # stepping aside: Blender's exact stack draws it (setup.aside_reason says why)
    return obj.visible_get(view_layer=view_layer, viewport=space)


def factor_key(obj: bpy.types.Object) -> tuple:
    """The factor settings as drawn: mode, number, group and Auto profile (an animated value included)."""
    settings = obj.hybrid_skin
    value = float(settings.deform_factor)
    return settings.factor_mode, value, settings.factor_vertex_group, settings.auto_profile


def apply_factors(skin: GpuSkin, obj: bpy.types.Object, bound: mesh_bind.MeshBind) -> None:
    """Give ``skin`` the object's factor settings without per-vertex work, except for uploading a
    vertex group's weights the first time this bind uses them (the bind's own array: uploaded once per
    bind, then only re-enabled)."""
    skin.set_factor(factor.resolve(obj, bound))


def skin_for(obj: bpy.types.Object, depsgraph: bpy.types.Depsgraph) -> ShownSkin:
    """The object's GPU skin, built on first use and after a rebind, with its current factor settings."""
    state, generation = viewport_state(), rig_state().generation
    shown = state.shown.get(obj.session_uid)
    key = factor_key(obj)
    if shown is not None and shown.factor_key != key:
        settings_changed(obj)  # keyframed or driven: no property update callback told us
    if shown is not None and shown.checked == generation and not shown.factors_stale:
        return shown  # nothing changed since the last draw: no bind check on a mere redraw
    bound = bind.cached_bind(obj, depsgraph, check_rest=False)
    if shown is None or shown.skin.source is not bound:
        forget(obj)
        surface = bridge.surface(obj.evaluated_get(depsgraph).data)
        shown = state.shown[obj.session_uid] = ShownSkin(GpuSkin(bound, surface))
    if shown.factors_stale:
        apply_factors(shown.skin, obj, bound)
        shown.factors_stale = False
        shown.factor_key = key
    shown.checked = generation
    return shown


def update_pose(skin: GpuSkin, obj: bpy.types.Object, depsgraph: bpy.types.Depsgraph) -> None:
    """One frame of the GPU path: the bind posed at the depsgraph's frame, its palette to the GPU.

    ``GpuSkin.update_pose`` re-uploads per-vertex data only when posing replaced the bind's rest input or
    binding (animated shape keys; B-bones or envelopes after the object moved), which it notices by
    identity; otherwise this is O(bones).
    """
    posed = skin.source.posed(depsgraph)
    auto = posed.auto_bone_data() if skin.auto_factor else None
    skin.update_pose(posed.palette, posed.target_to_armature, auto_bone_data=auto)


def draw_object(
    obj: bpy.types.Object,
    depsgraph: bpy.types.Depsgraph,
    view_projection: np.ndarray,
    view_layer: bpy.types.ViewLayer,
    space=None,
) -> GpuSkin | None:
    """Draw ``obj``'s hybrid skin into the bound framebuffer with the world → clip ``view_projection``
    ``(4, 4)``; the pose is re-read when the frame or the scene changed since the last draw. Returns the
    :class:`GpuSkin` drawn, or None when ``obj`` is not shown (see :func:`shows_on_gpu`). Raises
    :class:`..errors.HybridSkinError` for an object that cannot be skinned."""
    if not shows_on_gpu(obj, view_layer, space):
        return None
    shown = skin_for(obj, depsgraph)
    key = (rig_state().generation, depsgraph.scene.frame_current_final)
    if shown.pose_key != key:
        start = time.perf_counter()
        update_pose(shown.skin, obj, depsgraph)
        shown.update_ms = (time.perf_counter() - start) * 1e3
        shown.pose_key = key
    obj_eval = obj.evaluated_get(depsgraph)
    shown.skin.draw(view_projection, bridge.object_matrix(obj_eval), display_color(obj))
    return shown.skin


def draw_objects(
    objects,
    depsgraph: bpy.types.Depsgraph,
    view_projection: np.ndarray,
    view_layer: bpy.types.ViewLayer,
    space=None,
) -> list[GpuSkin]:
    """:func:`draw_object` for each of ``objects``; returns the skins drawn.

    One object that cannot be drawn never stops the others: whatever goes wrong with it (a scene the
    add-on refuses, or a bug) is printed once per object and message, and the loop goes on."""
    drawn = []
    state = rig_state()
    for obj in objects:
        try:
            skin = draw_object(obj, depsgraph, view_projection, view_layer, space)
        except HybridSkinError as err:
            _failed(state, obj, str(err))
        except Exception as err:  # noqa: BLE001 - isolate per object; printed once, never per redraw
            _failed(state, obj, f"cannot draw '{obj.name}': {type(err).__name__}: {err}")
        else:
            if skin is not None:
                drawn.append(skin)
    return drawn


def _failed(state: RigState, obj: bpy.types.Object, problem: str) -> None:
    """The GPU display cannot skin ``obj``: said once, and Blender's exact stack shows it instead (a timer
    steps aside: the draw callback may not change the object) until its stack changes, or until its rig
    leaves Edit Mode when the failure was met there."""
    runtime.get().report_once(obj, HybridSkinError(problem))
    signature = RIG_IN_EDIT_MODE if stack.rig_in_edit_mode(obj) else stack.signature(obj)
    state.draw_failures[obj.session_uid] = (f"{problem}; Blender's own stack draws it", signature)
    if not bpy.app.timers.is_registered(step_aside_failed):
        bpy.app.timers.register(step_aside_failed, first_interval=0.0, persistent=True)


def step_aside_failed() -> None:
    """Timer: objects the draw callback failed to skin step aside (:func:`..rig.setup.sync`)."""
    if runtime.current() is None:
        return None
    failures = rig_state().draw_failures
    for obj in [o for o in bpy.data.objects if o.session_uid in failures and o.type == "MESH"]:
        if obj.hybrid_skin.enabled and setup.is_local(obj):
            setup.sync(obj)
    return None


def draw_callback() -> None:
    context = bpy.context
    view_layer, space, region = context.view_layer, context.space_data, context.region_data
    if view_layer is None or region is None:
        return
    depsgraph = context.evaluated_depsgraph_get()
    view_projection = np.array(region.perspective_matrix, dtype=np.float64)
    draw_objects(view_layer.objects, depsgraph, view_projection, view_layer, space)


def register() -> None:
    viewport_state().draw_handle = bpy.types.SpaceView3D.draw_handler_add(
        draw_callback, (), "WINDOW", "POST_VIEW"
    )


def unregister() -> None:
    state = viewport_state()
    if state.draw_handle is not None:
        bpy.types.SpaceView3D.draw_handler_remove(state.draw_handle, "WINDOW")
        state.draw_handle = None
    forget()


def is_registered() -> bool:
    return runtime.current() is not None and viewport_state().draw_handle is not None
