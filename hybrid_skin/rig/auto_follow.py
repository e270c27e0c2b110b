"""What the add-on still does after an evaluation for the Mix tree: nothing per frame where Blender
evaluates Auto itself; otherwise Auto's factors of each evaluation, and the bind's data after a weight edit.

* :func:`follow` — objects whose Auto is the attribute path (Blender before 5.2, or a rig the tree does not
  express: ``DisplayRecord.auto == "ATTRIBUTE"``): the factors of this evaluation are written to the mesh
  (one bulk write) when the pose, frame, bind or settings moved. Immediate, so Blender's second pass of the
  same update evaluates it; while the GPU display draws and playback, scrubbing or a modal tool runs, a
  timer writes it after (the preview stays O(bones) per frame).
* :func:`refresh` — after Blender reported the mesh changed (weights painted, vertices edited): if the bind
  changed, the per-vertex data the tree reads is written again (the tree rebuilt when its shape changed).
  Only in Object Mode: a stroke's dabs do not rebind; leaving the mode does.
"""

from __future__ import annotations

import bpy

from .. import runtime
from ..errors import HybridSkinError
from . import auto_data, bind, setup, stack
from .state import rig_state

__all__ = ["WRITE_DELAY_S", "follow", "forget", "refresh", "write", "write_queued"]

#: Seconds between a change whose write waits for a timer and the write; again while the tool runs.
WRITE_DELAY_S = 0.2


def forget(obj: bpy.types.Object | None = None) -> None:
    """Forget what was written for ``obj`` (every object): the next :func:`follow` writes."""
    state = rig_state()
    if obj is None:
        state.auto_written.clear()
        state.vertex_data.clear()
    else:
        state.auto_written.pop(obj.session_uid, None)
        state.vertex_data.pop(obj.session_uid, None)


def _key(obj: bpy.types.Object, bound) -> tuple:
    settings = obj.hybrid_skin
    return (
        settings.factor_mode,
        settings.auto_profile,
        bound.serial,
        rig_state().pose_generation,
        bpy.context.scene.frame_current_final,
    )


def follow(obj: bpy.types.Object, rec, depsgraph: bpy.types.Depsgraph) -> None:
    """After an evaluation (``depsgraph``, the handler's): write Auto's factors of an attribute-path object if
    they may have moved."""
    if rec is None or rec.auto != setup.AUTO_ATTRIBUTE or obj.hybrid_skin.factor_mode != "AUTO":
        return
    if obj.mode == "EDIT":
        return  # Blender keeps the mesh in Edit Mode's own data meanwhile: written when it is left
    if (rec.gpu_draws and _busy()) or _stroke_running():
        _queue(obj)
        return
    write(obj, depsgraph)


def write(obj: bpy.types.Object, depsgraph: bpy.types.Depsgraph) -> None:
    """The factors of ``depsgraph``'s pose, whatever the Factor Mode is now (a save also writes them for
    an object whose keys choose Auto at other frames). Never evaluated here (a handler must not evaluate the
    scene again): Blender's second pass of the same update evaluates the write, and its report of the mesh
    reaches no handler, so it is taken for no edit."""
    try:
        bound = bind.cached_bind(obj, depsgraph, check_rest=False)
        key = _key(obj, bound)
        if rig_state().auto_written.get(obj.session_uid) == key:
            return
        auto_data.write_factors(obj, bound.posed(depsgraph))
        rig_state().auto_written[obj.session_uid] = key
    except HybridSkinError as err:
        runtime.get().report_once(obj, err)


def refresh(obj: bpy.types.Object, rec, depsgraph: bpy.types.Depsgraph) -> None:
    """The bind changed since its data went onto the mesh (a weight edit): write it again."""
    if rec is None or obj.mode != "OBJECT" or not rec.parts:
        return
    if stack.rig_in_edit_mode(obj):
        return  # its bones are read when it leaves Edit Mode (``auto_data.rest_stale`` then)
    state = rig_state()
    try:
        bound = bind.cached_bind(obj, depsgraph, check_rest=False)
    except HybridSkinError as err:
        runtime.get().report_once(obj, err)
        return
    if state.vertex_data.get(obj.session_uid) == bound.serial:
        return
    if rec.auto == setup.AUTO_NONE:  # no Auto nodes, no data of theirs on the mesh
        state.vertex_data[obj.session_uid] = bound.serial
        return
    source, reason = auto_data.source(obj, bound, depsgraph)
    same_shape = rec.auto == setup.AUTO_TREE and not reason and set(rec.attributes) == set(source.helpers)
    if same_shape and _tree_matches(obj, rec, source):
        auto_data.write_vertex_data(obj, bound, source)
        state.vertex_data[obj.session_uid] = bound.serial
    else:
        setup.rebuild(obj, depsgraph)  # the tree's shape changed (influences, bones, the path)


def _tree_matches(obj: bpy.types.Object, rec, source) -> bool:
    """The Mix tree was built in this session for ``source`` (its bones, parents, influences, placement);
    the trees of a loaded file are unknown, so their first rebind builds them again."""
    return rig_state().tree_sources.get(obj.session_uid) == source


def _busy() -> bool:
    """Playback, scrubbing, or a modal tool (transform, paint stroke) is running: a write waits for it."""
    wm = getattr(bpy.context, "window_manager", None)
    if wm is None:
        return False
    for window in wm.windows:
        screen = window.screen
        if screen is not None and (screen.is_animation_playing or screen.is_scrubbing):
            return True
        names = [op.bl_idname for op in window.modal_operators]
        if any(n.startswith(("PAINT_OT_", "SCULPT_OT_", "TRANSFORM_OT_")) for n in names):
            return True
    return False


def _stroke_running() -> bool:
    wm = getattr(bpy.context, "window_manager", None)
    return wm is not None and any(
        op.bl_idname.startswith(("PAINT_OT_", "SCULPT_OT_")) for w in wm.windows for op in w.modal_operators
    )


def _queue(obj: bpy.types.Object) -> None:
    rig_state().auto_queued.add(obj.session_uid)
    if not bpy.app.timers.is_registered(write_queued):
        # Persistent: a file load must not drop a pending timer; the add-on's unregister removes it.
        bpy.app.timers.register(write_queued, first_interval=WRITE_DELAY_S, persistent=True)


def write_queued() -> float | None:
    """Timer: the queued writes, once no stroke, playback or modal tool runs."""
    if runtime.current() is None:
        return None
    if _busy() or _stroke_running():
        return WRITE_DELAY_S
    state = rig_state()
    queued, state.auto_queued = state.auto_queued, set()
    depsgraph = bpy.context.evaluated_depsgraph_get()  # a timer: evaluating is allowed here
    for obj in [o for o in bpy.data.objects if o.session_uid in queued and o.type == "MESH"]:
        write(obj, depsgraph)
    return None
