"""What Hybrid Skin changes on a user's object, and how it puts everything back exactly.

* GPU display: the Armature modifier (and every modifier after it, which would otherwise deform the
  undeformed mesh) is hidden in the viewport, and the object is shown as bounds, so Blender does not
  draw the mesh under the add-on's own drawing. Renders (``show_render``) are untouched. Outside Object
  Mode (Edit, Weight Paint, Sculpt, Vertex/Texture Paint) it steps aside: nothing is hidden, Blender draws
  the mesh with the user's own setup (weight colours, the edit cage, sculpt brushes need its drawing), and
  the handlers set it up again when the object is back in Object Mode (:func:`follow_mode`).
* Evaluated display: Blender's own stack computes the hybrid exactly — the user's Armature modifier as
  LBS, followed by a Preserve Volume Armature modifier with Multi Modifier whose vertex group holds
  the per-vertex factor (Blender mixes ``(1-f)·LBS + f·DQS``). Renders and exporters see it. The
  user's active vertex group stays active (Weight Paint paints the group the user picked, never the
  factor group).

The original values are stored as JSON in ``Object.hybrid_skin.saved_state`` (so they survive save,
reload and undo) and restored by :func:`restore`.
"""

from __future__ import annotations

import json
import weakref

import bpy
import numpy as np

from .. import bridge, factor, runtime
from ..bridge import DQS_MODIFIER
from ..errors import HybridSkinError
from . import bind, native

__all__ = [
    "DQS_MODIFIER",
    "FACTOR_GROUP",
    "HIDDEN",
    "apply",
    "follow_mode",
    "gpu_applied",
    "gpu_aside",
    "gpu_refusal",
    "is_applied",
    "queue_factor_write",
    "refresh_factor_group",
    "restore",
    "settings_changed",
    "write_factor_group",
    "write_queued_factors",
]

FACTOR_GROUP = "HybridSkin Factor"


def is_applied(obj: bpy.types.Object) -> bool:
    return bool(obj.hybrid_skin.saved_state)


def gpu_applied(obj: bpy.types.Object) -> bool:
    """Whether the GPU display's setup is in place: Blender's own drawing of the mesh is hidden, so the
    add-on may draw it (else the mesh would be drawn twice)."""
    state = obj.hybrid_skin.saved_state
    return bool(state) and "show_viewport" in json.loads(state)


def gpu_refusal(obj: bpy.types.Object) -> str | None:
    """Why the GPU display cannot show ``obj``, as one sentence (Blender's own stack shows it then), or
    None. The GPU display skins one Armature modifier and hides Blender's drawing of the mesh: a linked
    object's modifiers cannot be hidden, a second Armature modifier would be left out, and weights that a
    modifier above changes (at any frame: a keyframed setting, a Proximity target that moves) would have
    to be read back from Blender's evaluation at every frame, which costs more than Blender's own stack."""
    if obj.library is not None or obj.override_library is not None:
        return (
            f"'{obj.name}' is linked from a library, whose modifiers Hybrid Skin cannot hide: Blender shows "
            "its own deformation (make it local to see the hybrid)"
        )
    armatures = [m for m in obj.modifiers if m.type == "ARMATURE" and not bridge.is_mix_modifier(m)]
    if len(armatures) > 1:
        return (
            f"'{obj.name}' has {len(armatures)} Armature modifiers and the GPU display skins only one: "
            "it uses the Evaluated display (Blender's own stack) instead"
        )
    mod = bridge.find_armature_modifier(obj, bridge.followed_modifier_name(obj))
    weighting = bridge.weight_modifiers_above(obj, mod) if mod is not None else []
    if weighting:
        return (
            f"Modifier '{weighting[0].name}' above the Armature modifier of '{obj.name}' can change its "
            "vertex-group weights at any frame, which the GPU display cannot follow: it uses the Evaluated "
            "display (Blender's own stack) instead"
        )
    return None


def restore(obj: bpy.types.Object) -> None:
    """Undo every change :func:`apply` made; the stack and settings come back exactly."""
    if obj.hybrid_skin.saved_state:
        with bind.own_edits([obj]):  # modifiers shown again: not an edit of what a bind read
            _restore(obj)


def _restore(obj: bpy.types.Object) -> None:
    settings = obj.hybrid_skin
    if not settings.saved_state:
        return
    saved = json.loads(settings.saved_state)
    # Modifiers are found by their persistent id, so a modifier the user renamed is still restored.
    extra = _saved_modifier(obj, saved.get("added_modifier"), DQS_MODIFIER)
    if extra is not None and saved.get("added_modifier"):
        obj.modifiers.remove(extra)
    group = _factor_group(obj, saved)
    if group is not None and saved.get("added_group"):
        active = obj.vertex_groups.active
        picked = None if active is None or active == group else active.name
        obj.vertex_groups.remove(group)
        if picked is not None:  # the user's choice, made while the display was on
            obj.vertex_groups.active_index = obj.vertex_groups[picked].index
        elif len(obj.vertex_groups) > saved["active_group"] >= 0:  # records that made the group active
            obj.vertex_groups.active_index = saved["active_group"]
    shown = saved.get("show_viewport", {})
    entries = shown if isinstance(shown, list) else [[0, name, v] for name, v in shown.items()]
    for uid, name, visible in entries:
        mod = bridge.find_modifier(obj, [uid, name])
        if mod is not None:
            mod.show_viewport = visible
    ref = saved.get("armature_ref") or [0, saved.get("armature_modifier", "")]
    mod = bridge.find_modifier(obj, ref)
    if mod is not None and "preserve_volume" in saved:
        mod.use_deform_preserve_volume = saved["preserve_volume"]
    obj.display_type = saved["display_type"]
    settings.saved_state = ""


def _factor_group(obj: bpy.types.Object, saved: dict | None = None) -> bpy.types.VertexGroup | None:
    """The Evaluated display's factor group, by the name its record holds (records of earlier versions:
    :data:`FACTOR_GROUP`); None without the display."""
    if saved is None:
        state = obj.hybrid_skin.saved_state
        saved = json.loads(state) if state else {}
    if "added_modifier" not in saved:
        return None
    return obj.vertex_groups.get(saved.get("factor_group", FACTOR_GROUP))


def _saved_modifier(obj: bpy.types.Object, ref, name: str) -> bpy.types.Modifier | None:
    """The modifier :func:`apply` added (``ref``: its id and name, or True in records of earlier versions)."""
    return bridge.find_modifier(obj, ref if isinstance(ref, list) else [0, name])


def apply(obj: bpy.types.Object) -> None:
    """Make the object's own display match its settings (restoring first, so this is idempotent).

    Linked objects and library overrides are left exactly as their library has them: their data is not
    the user's to change (Add refuses them too), so the viewport does not draw them either."""
    if obj.library is not None or obj.override_library is not None:
        return  # linked data and library overrides keep their library's setup (see handlers)
    # Modifiers hidden, added or set: not an edit of what a bind read. The Evaluated display's factors are
    # written outside (a bind may read that group: then the write is an edit like any other).
    with bind.own_edits([obj]):
        evaluated = _apply(obj)
    if evaluated:
        refresh_factor_group(obj)


def _apply(obj: bpy.types.Object) -> bool:
    """:func:`apply` but the factors and the evaluations; True when it set up the Evaluated display (whose
    factors are due)."""
    _restore(obj)
    settings = obj.hybrid_skin
    mod = bridge.find_armature_modifier(obj, bridge.followed_modifier_name(obj))
    if not settings.enabled or mod is None or settings.bake_state:
        return False  # a bake shows the result through its own shape keys or cache
    saved: dict = {
        "armature_modifier": mod.name,
        "armature_ref": bridge.modifier_ref(mod),
        "display_type": obj.display_type,
        "object": obj.name,  # a copy of the object (Alt+D, Shift+D) has another name: see separate_copy
        "active_group": obj.vertex_groups.active_index,
    }
    stack = list(obj.modifiers)
    gpu = settings.display == "GPU" and gpu_refusal(obj) is None
    if not gpu and settings.display == "GPU":
        runtime.get().report_once(obj, HybridSkinError(gpu_refusal(obj)))
    aside = _aside_reason(obj, mod)
    if gpu and aside is not None:
        saved["aside"] = aside  # Blender draws it, with the user's setup (see follow_mode)
    elif gpu:
        tail = stack[stack.index(mod) :]
        saved["show_viewport"] = [[*bridge.modifier_ref(m), m.show_viewport] for m in tail]
        for m in tail:
            m.show_viewport = False
        obj.display_type = "BOUNDS"
    else:
        saved["preserve_volume"] = mod.use_deform_preserve_volume
        mod.use_deform_preserve_volume = False
        # Always new ones (restore has removed the display's own): a group or modifier of the same name is
        # the user's, never written over or removed; Blender gives ours a free name, kept in the record.
        group = obj.vertex_groups.new(name=FACTOR_GROUP)  # appended (indices kept) and made active
        if saved["active_group"] >= 0:
            obj.vertex_groups.active_index = saved["active_group"]
        saved["added_group"], saved["factor_group"] = True, group.name
        extra = native.add_mix_modifier(obj, mod, DQS_MODIFIER, group.name)
        saved["added_modifier"] = bridge.modifier_ref(extra)
        extra.show_viewport = mod.show_viewport
        extra.show_render = mod.show_render
    settings.saved_state = json.dumps(saved)
    return not gpu


def follow_mode(obj: bpy.types.Object) -> None:
    """Keep the display right across mode switches (called by the depsgraph handler, which every mode
    switch runs).

    GPU: it steps aside when ``obj`` leaves Object Mode and is set up again when it is back. Painting
    weights, sculpting and editing need Blender's own drawing of the mesh: the GPU display hides it and
    draws the posed mesh without weight colours or an edit cage. Only settings change here, nothing is
    evaluated: Blender evaluates the change after its handlers, without calling them again.

    Evaluated: back in Object Mode the factor group is written again: in full after Edit Mode (Blender
    refuses vertex-group writes there, and the edit may add or remove vertices), after other modes only
    if it changed (a factor group painted in Weight Paint). A vertex-group or Auto factor reads the bind,
    which may evaluate the scene (a rebind of a mesh with shape keys); ``factors_due`` is cleared before,
    so the nested update does not write again."""
    state = obj.hybrid_skin.saved_state
    if not state or obj.library is not None or obj.override_library is not None:
        return
    if separate_copy(obj):
        state = obj.hybrid_skin.saved_state
    saved = json.loads(state)
    if "added_modifier" in saved:
        if obj.mode == "OBJECT" and _parts_removed(obj, saved):
            runtime.get().report_once(
                obj,
                HybridSkinError(
                    f"'{obj.name}': the Evaluated display's modifier or factor group was removed, so it is "
                    "set up again (Remove Hybrid Skin, or pick the GPU display, to take it off)"
                ),
            )
            if _apply(obj):
                runtime.get().factors_written.pop(obj.session_uid, None)
                queue_factor_write(obj)
            return
        if obj.mode != "OBJECT":
            _factors_due(obj, saved, obj.mode)
        elif saved.get("factors_due"):
            edited = saved.pop("factors_due") == "EDIT"  # the edit may have added vertices: write them all
            obj.hybrid_skin.saved_state = json.dumps(saved)
            refresh_factor_group(obj, only_if_changed=not edited)
        return
    if "aside" in saved:  # nothing of the user's is hidden now: the followed modifier's eye is theirs
        mod = bridge.find_modifier(obj, saved.get("armature_ref") or [0, saved.get("armature_modifier", "")])
        if mod is None or _aside_reason(obj, mod) != saved["aside"]:
            _apply(obj)
    elif "show_viewport" in saved and obj.mode != "OBJECT":
        _apply(obj)


def _parts_removed(obj: bpy.types.Object, saved: dict) -> bool:
    """Whether the user removed the Evaluated display's Preserve Volume modifier or its factor group: the
    mesh would show plain LBS (or mix by a group that is gone) while the panel says Evaluated."""
    ref = saved.get("added_modifier")
    if not isinstance(ref, list):  # a record of an earlier version that reused a modifier: nothing to check
        return False
    return _saved_modifier(obj, ref, DQS_MODIFIER) is None or _factor_group(obj, saved) is None


#: Why the GPU display steps aside besides a mode: the user hid the Armature modifier in the viewport.
HIDDEN = "HIDDEN"


def _aside_reason(obj: bpy.types.Object, mod: bpy.types.Modifier) -> str | None:
    """Why the GPU display lets Blender draw ``obj`` with the user's own setup: a mode other than Object
    Mode (see :func:`follow_mode`), or :data:`HIDDEN` — the user hid the Armature modifier in the viewport,
    so Blender shows the mesh undeformed (and so does the Evaluated display); skinning it would show what
    the user turned off. None when the GPU display draws it."""
    if obj.mode != "OBJECT":
        return obj.mode
    return None if mod.show_viewport else HIDDEN


def gpu_aside(obj: bpy.types.Object) -> str | None:
    """Why the GPU display is stepping aside for ``obj`` (a mode or :data:`HIDDEN`), or None."""
    state = obj.hybrid_skin.saved_state
    return json.loads(state).get("aside") if state else None


#: Seconds between a change that needs the Evaluated display's factors written (a painted factor group,
#: its parts set up again by the handler) and the write (the dabs of a stroke coalesce); while a paint
#: stroke runs, the timer waits this long again.
FACTOR_WRITE_DELAY_S = 0.2


def queue_factor_write(obj: bpy.types.Object) -> None:
    """Write ``obj``'s factor group from a timer (:func:`write_queued_factors`): for the depsgraph handler,
    where writing is not allowed (it needs the bind, which may evaluate the scene). In background mode,
    where timers do not run, the next frame change writes it."""
    runtime.get().factors_queued.add(obj.session_uid)
    if not bpy.app.timers.is_registered(write_queued_factors):
        # Persistent: a file load must not drop a pending timer; the add-on's unregister removes it.
        bpy.app.timers.register(write_queued_factors, first_interval=FACTOR_WRITE_DELAY_S, persistent=True)


def _stroke_running() -> bool:
    """A paint or sculpt stroke is in progress (it may hold the mesh's weight arrays: nothing else writes
    them until it ends)."""
    wm = getattr(bpy.context, "window_manager", None)
    return wm is not None and any(
        op.bl_idname.startswith(("PAINT_OT_", "SCULPT_OT_")) for w in wm.windows for op in w.modal_operators
    )


def write_queued_factors() -> float | None:
    """Timer: write the factor group of each object :func:`queue_factor_write` queued, if its factors
    changed (a painted factor group: the bind compares it), after any stroke in progress. The write is the
    add-on's own edit: it leaves the binds trusted."""
    state = runtime.current()
    if state is None:
        return None
    if _stroke_running():
        return FACTOR_WRITE_DELAY_S
    queued, state.factors_queued = state.factors_queued, set()
    for obj in [o for o in bpy.data.objects if o.session_uid in queued]:
        with bind.own_edits([obj]):
            refresh_factor_group(obj, only_if_changed=True)
    return FACTOR_WRITE_DELAY_S if state.factors_queued else None


def separate_copy(obj: bpy.types.Object) -> bool:
    """Give a linked duplicate made after Add (Alt+D: a copy of the object sharing its mesh, and of its
    Evaluated display's record) a factor group of its own. Vertex groups live on the mesh, so both records
    named one group: each object's factor was written over by the other's, and Remove on either removed
    the group the other still mixed by. The claimant named in the record (the original keeps its name; a
    copy gets a new one; else the first name) keeps the group; the others set up their own, with its
    weights. Only settings and weights change, nothing is evaluated (called from the depsgraph handler).
    True when ``obj`` was separated."""
    mesh = obj.data
    if mesh is None or mesh.users < 2:
        return False
    saved = json.loads(obj.hybrid_skin.saved_state)
    if "added_modifier" not in saved:
        return False
    group = saved.get("factor_group", FACTOR_GROUP)
    claimants = [obj]
    for other in bpy.data.objects:
        state = other.hybrid_skin.saved_state if other is not obj and other.data == mesh else ""
        record = json.loads(state) if state else {}
        if "added_modifier" in record and record.get("factor_group", FACTOR_GROUP) == group:
            claimants.append(other)
    if len(claimants) == 1:
        return False
    first = min(claimants, key=lambda o: o.name)
    owner = next((o for o in claimants if o.name == saved.get("object")), first)
    if owner == obj:
        return False
    old = obj.vertex_groups.get(group)
    weights = None
    if old is not None:
        counts, groups, values = bridge.read_vertex_group_entries(mesh)
        weights = np.zeros(len(counts), dtype=np.float32)
        hit = groups == old.index
        weights[np.repeat(np.arange(len(counts)), counts)[hit]] = values[hit]
    saved["added_group"] = False  # the owner's: restore leaves it
    obj.hybrid_skin.saved_state = json.dumps(saved)
    _apply(obj)
    mine = _factor_group(obj)
    if mine is not None and weights is not None:
        _write_weights(mine, weights)
    runtime.get().factors_written.pop(obj.session_uid, None)
    return True


def _factors_due(obj: bpy.types.Object, saved: dict, mode: str) -> None:
    """Note in the display's record that its factor group is to be written back in Object Mode (``mode``:
    where it was; Edit Mode wins, its edits may have added vertices)."""
    if saved.get("factors_due") not in (mode, "EDIT"):
        saved["factors_due"] = mode
        obj.hybrid_skin.saved_state = json.dumps(saved)


#: AUTO factors written to the Evaluated display's group are rounded to this step (one bulk call per value).
AUTO_STEP = 1.0 / 1024.0


def write_factor_group(obj: bpy.types.Object, only_if_changed: bool = False) -> None:
    """Store the object's per-vertex factors in the Evaluated display's vertex group (Blender mixes by
    its weight); Auto factors from the current pose. Raises :class:`..errors.HybridSkinError` when the
    factor cannot be resolved (e.g. a missing factor group): the group keeps its last values.

    ``only_if_changed``: skip the write when the group already holds these factors: the same mode,
    number and group, and for a vertex group the same bind (a painted group binds again when next used).
    Auto factors follow the pose: always written."""
    group = _factor_group(obj)
    if group is None:
        return
    if obj.mode == "EDIT":  # Blender refuses vertex-group writes now: written when Edit Mode is left
        if obj.hybrid_skin.saved_state:
            _factors_due(obj, json.loads(obj.hybrid_skin.saved_state), "EDIT")
        return
    settings, written = obj.hybrid_skin, runtime.get().factors_written
    bound = None
    if settings.factor_mode == "VERTEX_GROUP":
        bound = bind.cached_bind(obj, bpy.context.evaluated_depsgraph_get(), check_rest=False)
    key = (settings.factor_mode, float(settings.deform_factor), settings.factor_vertex_group)
    if only_if_changed and settings.factor_mode != "AUTO":
        old = written.get(obj.session_uid)
        if old is not None and old[0] == key and (old[1] is None if bound is None else old[1]() is bound):
            return
    written.pop(obj.session_uid, None)  # a write that fails half-way is written again next time
    wanted = factor.resolve(obj, bound)
    if wanted.auto:
        depsgraph = bpy.context.evaluated_depsgraph_get()
        auto = bind.cached_bind(obj, depsgraph, check_rest=False).posed(depsgraph).auto_factors()
        values = np.round(auto / AUTO_STEP) * AUTO_STEP
    else:
        values = wanted.values()
    _write_weights(group, np.broadcast_to(np.asarray(values, dtype=np.float32), (len(obj.data.vertices),)))
    written[obj.session_uid] = (key, None if bound is None else weakref.ref(bound))


def _write_weights(group: bpy.types.VertexGroup, values: np.ndarray) -> None:
    """Every vertex's weight in ``group``: one ``add`` per distinct value (Blender has no bulk write), the
    vertices of each found by one sort — a painted group has about as many values as vertices, and
    searching the whole mesh per value was quadratic (0.25 s at 10k vertices, seconds at 50k)."""
    order = np.argsort(values, kind="stable")
    ranked = values[order]
    starts = np.flatnonzero(np.concatenate(([True], ranked[1:] != ranked[:-1])))
    ends = np.append(starts[1:], len(ranked))
    zero = np.flatnonzero(values == 0.0)
    if len(zero):
        group.add(zero.tolist(), 0.0, "REPLACE")
    for start, end in zip(starts.tolist(), ends.tolist()):
        value = float(ranked[start])
        if value != 0.0:
            group.add(order[start:end].tolist(), value, "REPLACE")


def refresh_factor_group(obj: bpy.types.Object, only_if_changed: bool = False) -> None:
    """:func:`write_factor_group` from a property update, a handler or :func:`apply`, which cannot show an
    operator report: a factor that cannot be resolved is printed once (the display stays applied)."""
    try:
        write_factor_group(obj, only_if_changed)
    except HybridSkinError as err:
        runtime.get().report_once(obj, err)


def settings_changed(obj: bpy.types.Object) -> None:
    """Property update: re-apply the display state when it changed; refresh the Evaluated factors."""
    settings = obj.hybrid_skin
    saved = json.loads(settings.saved_state) if settings.saved_state else None
    mode = None if saved is None else ("EVALUATED" if "added_modifier" in saved else "GPU")
    wanted = settings.display if settings.enabled and not settings.bake_state else None
    if wanted == "GPU" and gpu_refusal(obj) is not None:
        wanted = "EVALUATED"  # what apply() shows for an object the GPU display cannot
    if mode != wanted:
        apply(obj)
    elif wanted == "EVALUATED":
        refresh_factor_group(obj)
