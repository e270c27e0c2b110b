"""The factor group: every vertex's deform factor as a vertex-group weight, which Blender mixes by.

Blender's exact hybrid (:mod:`.display`) reads the factor from a vertex group, so the group must hold the
factor the object has *in the evaluation that reads it*: a keyframed or driven Deform Factor, a painted
factor group, Auto factors that follow the pose. The handlers call :func:`follow` after every evaluation
Blender reports (a frame change, any depsgraph update: a script that sets ``scene.frame_current`` and calls
``view_layer.update()`` runs no frame-change handler). A write there is evaluated by Blender's second pass
of the same update, so the mesh the caller reads back is already right.

What was written is remembered per object (:class:`FactorGroupState`: a :class:`Written` key), so an
update that changes nothing writes nothing. While the GPU display draws, the group is read only by renders
and by Blender's stack when the display steps aside: during playback, scrubbing or a modal tool (a bone
rotated, a stroke) the write is left to a timer after it, so the preview stays O(bones) per frame; a
render, or the display stepping aside, gets the current values (the write is immediate outside those).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import bpy
import numpy as np

from .. import runtime
from ..errors import HybridSkinError
from . import bind, factor, mesh_bind, record
from .state import rig_state

__all__ = [
    "AUTO_STEP",
    "WRITE_DELAY_S",
    "Written",
    "FactorGroupState",
    "follow",
    "forget",
    "is_current",
    "note_mode",
    "queue_write",
    "refresh",
    "write",
    "write_queued",
]

#: Auto factors written to the group are rounded to this step (one bulk call per value).
AUTO_STEP = 1.0 / 1024.0
#: Seconds between a change that needs the factors written from a timer and the write (the dabs of a
#: stroke coalesce); while a stroke, playback or a modal tool runs, the timer waits this long again.
WRITE_DELAY_S = 0.2


@dataclass(frozen=True)
class Written:
    """What the factor group holds: the settings, the mesh, the bind (a painted group binds again) and,
    for Auto, the frame and pose it was computed at."""

    mode: str
    value: float
    group: str
    profile: str
    vertices: int
    bind_id: int
    frame: float = 0.0
    pose: int = 0


@dataclass
class FactorGroupState:
    """What each object's factor group holds, per ``Object.session_uid`` (:meth:`..runtime.Runtime.state`)."""

    #: The settings, mesh, bind and pose the group was last written for.
    written: dict[int, Written] = field(default_factory=dict)
    #: ``(group name, (N,) values)`` last written: a write changes only the vertices whose value moved.
    values: dict[int, tuple] = field(default_factory=dict)
    #: Objects whose group a timer writes after a stroke, playback or a modal tool.
    queued: set[int] = field(default_factory=set)


def _state() -> FactorGroupState:
    return runtime.get().state(FactorGroupState)


def is_current(obj: bpy.types.Object) -> bool:
    """Whether ``obj``'s factor group was written this session (else the next evaluation writes it)."""
    return obj.session_uid in _state().written


def forget(obj: bpy.types.Object | None = None) -> None:
    """Forget what ``obj``'s (every object's) factor group was written with: the next write is whole."""
    state = _state()
    if obj is None:
        state.written.clear()
        state.values.clear()
    else:
        state.written.pop(obj.session_uid, None)
        state.values.pop(obj.session_uid, None)


def _group(obj: bpy.types.Object) -> bpy.types.VertexGroup | None:
    rec = record.load(obj.hybrid_skin.saved_state)
    if rec is None or not rec.factor_group:
        return None
    return obj.vertex_groups.get(rec.factor_group)


def _wanted(obj: bpy.types.Object, bound: mesh_bind.MeshBind | None) -> Written:
    settings = obj.hybrid_skin
    auto = settings.factor_mode == "AUTO"
    return Written(
        mode=settings.factor_mode,
        value=float(settings.deform_factor),
        group=settings.factor_vertex_group,
        profile=settings.auto_profile if auto else "",
        vertices=len(obj.data.vertices),
        bind_id=bound.serial if bound is not None else 0,
        frame=bpy.context.scene.frame_current_final if auto else 0.0,
        pose=rig_state().pose_generation if auto else 0,
    )


def write(obj: bpy.types.Object, only_if_changed: bool = False) -> None:
    """Store the object's per-vertex factors in its factor group; Auto factors from the current pose.
    Raises :class:`..errors.HybridSkinError` when the factor cannot be resolved (a missing factor group):
    the group keeps its last values.

    ``only_if_changed``: skip the write when the group already holds these factors (see :class:`Written`)."""
    group = _group(obj)
    if group is None:
        return
    if obj.mode == "EDIT":  # Blender refuses vertex-group writes now: written when Edit Mode is left
        rec = record.load(obj.hybrid_skin.saved_state)
        note_mode(obj, rec)
        obj.hybrid_skin.saved_state = record.save(rec)
        return
    settings, state = obj.hybrid_skin, _state()
    written = state.written
    depsgraph = bpy.context.evaluated_depsgraph_get()
    bound = None
    if settings.factor_mode in ("VERTEX_GROUP", "AUTO"):
        bound = bind.cached_bind(obj, depsgraph, check_rest=False)
    key = _wanted(obj, bound)
    if only_if_changed and written.get(obj.session_uid) == key:
        return
    before = state.values.pop(obj.session_uid, None)
    written.pop(obj.session_uid, None)  # a write that fails half-way is written again next time
    wanted = factor.resolve(obj, bound)
    if wanted.auto:
        values = np.round(bound.posed(depsgraph).auto_factors() / AUTO_STEP) * AUTO_STEP
    else:
        values = wanted.values()
    values = np.ascontiguousarray(
        np.broadcast_to(np.asarray(values, dtype=np.float32), (len(obj.data.vertices),))
    )
    if before is not None and before[0] == group.name and before[1].shape == values.shape:
        changed = np.flatnonzero(before[1] != values)  # only what moved since the last write
        _write_weights(group, values[changed], changed)
    else:
        _write_weights(group, values)
    state.values[obj.session_uid] = (group.name, values)
    written[obj.session_uid] = key
    rec = record.load(obj.hybrid_skin.saved_state)
    if rec is not None and rec.factors_due:
        rec.factors_due = ""
        obj.hybrid_skin.saved_state = record.save(rec)


def _write_weights(group: bpy.types.VertexGroup, values: np.ndarray, vertices=None) -> None:
    """The weight of each of ``vertices`` (all when None) in ``group``: one ``add`` per distinct value
    (Blender has no bulk write), the vertices of each found by one sort — a painted group has about as many
    values as vertices, and searching the whole mesh per value was quadratic (0.25 s at 10k vertices,
    seconds at 50k)."""
    if not len(values):
        return
    codes = np.rint(values * np.float32(1.0 / AUTO_STEP))
    if np.array_equal(codes * np.float32(AUTO_STEP), values):  # Auto's steps: a radix sort of 16-bit codes
        order = np.argsort(codes.astype(np.int16), kind="stable")  # (9x faster than sorting the floats)
    else:
        order = np.argsort(values, kind="stable")
    ranked = values[order]
    index = order if vertices is None else np.asarray(vertices)[order]
    starts = np.flatnonzero(np.concatenate(([True], ranked[1:] != ranked[:-1])))
    ends = np.append(starts[1:], len(ranked))
    for start, end in zip(starts.tolist(), ends.tolist()):
        group.add(index[start:end].tolist(), float(ranked[start]), "REPLACE")


def refresh(obj: bpy.types.Object, only_if_changed: bool = False) -> None:
    """:func:`write` from a property update, a handler or a setup, which cannot show an operator report: a
    factor that cannot be resolved is printed once (the display stays set up)."""
    try:
        write(obj, only_if_changed)
    except HybridSkinError as err:
        runtime.get().report_once(obj, err)


def note_mode(obj: bpy.types.Object, rec: record.DisplayRecord) -> None:
    """Note in ``rec`` that the factor group is to be written back in Object Mode (``obj.mode``: where it
    was; Edit Mode wins, its edits may have added vertices)."""
    if rec.factors_due not in (obj.mode, "EDIT"):
        rec.factors_due = obj.mode
    if obj.mode == "EDIT":
        forget(obj)


def _busy() -> bool:
    """Playback, scrubbing, or a modal tool (transform, paint stroke) is running: a write waits for it."""
    wm = getattr(bpy.context, "window_manager", None)
    if wm is None:
        return False
    for window in wm.windows:
        screen = window.screen
        if screen is not None and (screen.is_animation_playing or screen.is_scrubbing):
            return True
        if len(window.modal_operators):
            names = [op.bl_idname for op in window.modal_operators]
            if any(n.startswith(("PAINT_OT_", "SCULPT_OT_", "TRANSFORM_OT_")) for n in names):
                return True
    return False


def _stroke_running() -> bool:
    """A paint or sculpt stroke is in progress (it may hold the mesh's weight arrays)."""
    wm = getattr(bpy.context, "window_manager", None)
    return wm is not None and any(
        op.bl_idname.startswith(("PAINT_OT_", "SCULPT_OT_")) for w in wm.windows for op in w.modal_operators
    )


def follow(obj: bpy.types.Object) -> None:
    """After an evaluation: write the factor group if what it must hold changed. Immediate (so Blender's
    second pass of this update evaluates it), except while the GPU display draws the object and playback,
    scrubbing or a modal tool runs, or a stroke holds the weights: then a timer writes it after."""
    rec = record.load(obj.hybrid_skin.saved_state)
    if rec is None or not rec.factor_group or obj.mode == "EDIT":
        return  # Blender refuses vertex-group writes in Edit Mode: written when it is left
    if (rec.gpu_draws and _busy()) or _stroke_running():
        queue_write(obj)
        return
    refresh(obj, only_if_changed=True)


def queue_write(obj: bpy.types.Object) -> None:
    """Write ``obj``'s factor group from a timer (:func:`write_queued`), after the stroke, playback or modal
    tool that holds it back (none runs in background mode, where timers do not run either)."""
    _state().queued.add(obj.session_uid)
    if not bpy.app.timers.is_registered(write_queued):
        # Persistent: a file load must not drop a pending timer; the add-on's unregister removes it.
        bpy.app.timers.register(write_queued, first_interval=WRITE_DELAY_S, persistent=True)


def write_queued() -> float | None:
    """Timer: write the factor group of each object :func:`queue_write` queued, if it changed, once no
    stroke, playback or modal tool runs. The write is the add-on's own edit: it leaves the binds trusted."""
    if runtime.current() is None:
        return None
    if _busy() or _stroke_running():
        return WRITE_DELAY_S
    state = _state()
    queued, state.queued = state.queued, set()
    for obj in [o for o in bpy.data.objects if o.session_uid in queued and o.type == "MESH"]:
        with bind.own_edits([obj]):
            refresh(obj, only_if_changed=True)
    return WRITE_DELAY_S if state.queued else None
