"""Application handlers of the rig layer: keep every object's Hybrid Skin setup whole and current as the
scene changes. (Each feature registers its own handlers for its own state: the viewport frees its GPU
skins on load and undo, texture-bake summaries rebase their paths on save.)

* Load, undo and redo drop the caches; load, append and register set the display up on every object that
  uses Hybrid Skin (an appended object arrives with the user's own setup: files are saved that way).
* Saved .blend files hold the user's own modifier and display settings (restored in ``save_pre`` and set
  up again in ``save_post``, or ``save_post_fail`` when the save failed), so a file opened without the
  add-on looks exactly as before Hybrid Skin.
* After every evaluation Blender reports (``depsgraph_update_post``, ``frame_change_post``): the setup is
  synced (:func:`.setup.sync`: parts set up again, taken off an object whose Armature modifier was
  applied or removed, taken off objects they were copied to, the GPU display hiding or stepping aside) and
  the factor group follows an animated factor, the pose (Auto) and painted weights
  (:func:`.factor_group.follow`). What these handlers change is evaluated by Blender's second pass of the same
  update, so a script that sets the frame and calls ``view_layer.update()`` reads the right mesh.
* Binds are told when Blender reports their mesh changed (weights painted or set by a script).
"""

from __future__ import annotations

import bpy
from bpy.app.handlers import persistent

from .. import runtime
from . import bind, escaped, factor_group, readers, setup, stack
from .state import RigState, rig_state


def enabled_objects() -> list[bpy.types.Object]:
    """Local meshes that use Hybrid Skin. Linked objects and library overrides are left as their library
    has them: the library's file was saved with its own setup restored, and changing an override's
    modifiers on load would store that change in the user's file."""
    return [
        o
        for o in bpy.data.objects
        if o.type == "MESH" and setup.is_local(o) and o.hybrid_skin.enabled
    ]


def reapply_all() -> None:
    objects = enabled_objects()
    with bind.own_edits(objects):  # one evaluation for all of them (a save runs this), not two per object
        for obj in objects:
            setup.apply(obj)


def restore_all() -> None:
    objects = enabled_objects()
    with bind.own_edits(objects):
        for obj in objects:
            setup.restore(obj)


def _clean_all() -> None:
    for obj in bpy.data.objects:
        escaped.clean_escaped(obj)


@persistent
def on_load_post(*_args) -> None:
    state = rig_state()
    bind.forget_all()
    bind.cache().edit_mode_meshes.clear()
    factor_group.forget()
    state.draw_failures.clear()
    state.saving = False
    runtime.get().reported.clear()  # another file: its problems are said again
    reapply_all()


@persistent
def on_save_pre(*_args) -> None:
    """Until ``save_post`` the objects keep the user's own setup: no handler sets them up again meanwhile."""
    rig_state().saving = True
    restore_all()


@persistent
def on_save_post(*_args) -> None:
    """After a save, or one that failed (``save_post_fail``)."""
    rig_state().saving = False
    reapply_all()


@persistent
def on_undo_redo(*_args) -> None:
    bind.forget_all()
    # The step brought its own factor group back, which may lag the user's factor group it brought (a
    # stroke's step is pushed before the timer writes): every group is written again if it differs.
    factor_group.forget()
    for obj in enabled_objects():  # a step may hold another mode than the one it brings back
        setup.sync(obj)


@persistent
def on_blend_import(*_args) -> None:
    """Append or link from another file: appended objects that use Hybrid Skin arrive with the user's own
    setup (files are saved that way, and append runs no load handler): set them up; parts that arrived on
    objects that do not use Hybrid Skin are taken off."""
    for obj in enabled_objects():
        if not setup.is_applied(obj):
            setup.apply(obj)
    _clean_all()


@persistent
def on_depsgraph_update(scene, depsgraph) -> None:
    state = rig_state()
    if state.in_handler or state.saving:
        return  # an evaluation this handler started (a rebind), or a save under way
    state.in_handler = True
    try:
        _after_evaluation(state, depsgraph, frame_change=False)
    finally:
        state.in_handler = False


def _after_evaluation(state: RigState, depsgraph: bpy.types.Depsgraph, frame_change: bool) -> None:
    """What both handlers do after Blender evaluated the scene (a frame change evaluates edits, new objects
    and modifiers made since the last update without calling ``depsgraph_update_post``)."""
    state.bump()  # a counter: cached GPU state re-checks itself at the next draw
    updates = list(depsgraph.updates)
    if frame_change or any(isinstance(u.id, bpy.types.Object) and u.id.type == "ARMATURE" for u in updates):
        state.pose_generation += 1  # a pose may have changed: Auto factors follow it
    # Weights or vertices may have changed (in the UI, or by a script: background mode too): binds of the
    # mesh are compared before their next use. Pose changes do not report a mesh's data.
    edited = edited_meshes(depsgraph, updates, frame_change)
    if edited:
        bind.mark_edited(edited)
    changed = [o for o in _reported_objects(updates) if o.session_uid not in state.held]
    for obj in changed:
        failure = state.draw_failures.get(obj.session_uid)
        if failure is not None and failure[1] != stack.signature(obj):
            del state.draw_failures[obj.session_uid]  # the stack changed since the display failed: try again
        escaped.clean_escaped(obj)
    objects = [o for o in enabled_objects() if o.session_uid not in state.held]
    gpu = [o for o in objects if o.hybrid_skin.display == "GPU"]
    read = readers.mesh_readers(gpu)
    ids = {o.session_uid for o in changed}
    for obj in objects:
        # Every GPU display (what reads it may have changed anywhere), objects reported, and objects that
        # arrived without their setup (appended: append runs no load handler).
        if obj.session_uid in ids or obj in gpu or not setup.is_applied(obj):
            setup.sync(obj, read.get(obj.session_uid), depsgraph)
    for obj in objects:
        # The factor group follows an animated factor, the pose (Auto) and painted weights; a frame change
        # may move any of them.
        uid = obj.session_uid
        auto = obj.hybrid_skin.factor_mode == "AUTO"
        if frame_change or auto or uid in ids or not factor_group.is_current(obj):
            factor_group.follow(obj)


def _reported_objects(updates) -> list[bpy.types.Object]:
    """Mesh objects whose object or mesh data the update reports (originals), each once."""
    seen: dict[int, bpy.types.Object] = {}
    meshes = {u.id.original.session_uid for u in updates if isinstance(u.id, bpy.types.Mesh)}
    for obj in bpy.data.objects:
        if obj.type == "MESH" and obj.data is not None and obj.data.session_uid in meshes:
            seen[obj.session_uid] = obj
    for u in updates:
        if isinstance(u.id, bpy.types.Object) and u.id.type == "MESH":
            obj = u.id.original
            seen[obj.session_uid] = obj
    return list(seen.values())


def _animated(id_data: bpy.types.ID | None) -> bool:
    ad = None if id_data is None else id_data.animation_data
    return ad is not None and (ad.action is not None or len(ad.drivers) > 0 or len(ad.nla_tracks) > 0)


def edited_meshes(
    depsgraph: bpy.types.Depsgraph | None, updates: list | None = None, frame_change: bool = False
) -> set[int]:
    """``session_uid`` of the meshes whose data the update reports changed, out of Edit Mode (whose edits
    reach the mesh when it is left: a mesh seen in Edit Mode counts as edited when it is out of it). The
    updates hold the evaluated copies, whose ``session_uid`` is 0: their originals'. A frame change also
    reports every mesh whose data or shape keys are animated: those are left out then (their edits are
    seen at the next evaluation that is not a frame change). Not seen:
    weights edited in the same evaluation as the object's transform or one of its properties changes (a
    script that does both, or edits and then changes the frame of an animated object, before anything
    evaluates the scene)."""
    if depsgraph is None:
        return set()
    updates = list(depsgraph.updates) if updates is None else updates
    # Setting any property of an object (its Hybrid Skin settings too: a factor slider dragged) makes
    # Blender report the object's transform and its mesh's data as changed; a weight edit reports the
    # mesh without the object's transform. Those meshes are left out: a slider drag must not read weights.
    set_on_object = {
        u.id.original.data.session_uid
        for u in updates
        if u.is_updated_transform and isinstance(u.id, bpy.types.Object) and u.id.type == "MESH"
    }
    # Meshes seen in Edit Mode and now out of it: whatever the edit changed is in the mesh now (its update
    # also reports the object's transform, so the rule above would leave it out).
    editing, left = bind.cache().edit_mode_meshes, set()
    for mesh in {u.id.original for u in updates if isinstance(u.id, bpy.types.Mesh)}:
        if mesh.is_editmode:
            editing.add(mesh.session_uid)
        elif mesh.session_uid in editing:
            editing.discard(mesh.session_uid)
            left.add(mesh.session_uid)
    meshes = (u.id.original for u in updates if u.is_updated_geometry and isinstance(u.id, bpy.types.Mesh))
    meshes = (m for m in meshes if not m.is_editmode and m.session_uid not in set_on_object)
    if frame_change:
        meshes = (m for m in meshes if not (_animated(m) or _animated(m.shape_keys)))
    return {m.session_uid for m in meshes} | left


@persistent
def on_frame_change(scene=None, depsgraph=None, *_args) -> None:
    state = rig_state()
    if state.in_handler or state.saving or depsgraph is None:
        return
    state.in_handler = True
    try:
        _after_evaluation(state, depsgraph, frame_change=True)
    finally:
        state.in_handler = False


_HANDLERS = (
    ("load_post", on_load_post),
    ("save_pre", on_save_pre),
    ("save_post", on_save_post),
    # A save that fails (unwritable folder, full disk) must re-arm too: save_pre restored the user's setup,
    # and without this the GPU display would draw over Blender's own mesh.
    ("save_post_fail", on_save_post),
    ("undo_post", on_undo_redo),
    ("redo_post", on_undo_redo),
    ("blend_import_post", on_blend_import),
    ("depsgraph_update_post", on_depsgraph_update),
    ("frame_change_post", on_frame_change),
)


def _rearm_after_register() -> None:
    """bpy.data is read-only while add-ons register at startup: re-apply on the first tick."""
    reapply_all()
    return None


def register() -> None:
    for name, func in _HANDLERS:
        getattr(bpy.app.handlers, name).append(func)
    if isinstance(bpy.data, bpy.types.BlendData):  # enabled in a running session: re-apply now
        reapply_all()
    else:
        # Persistent: Blender 4.2 crashes at exit after a file load dropped a pending non-persistent timer
        # (and after any timer left registered), which the bpy module, with no event loop, never runs.
        bpy.app.timers.register(_rearm_after_register, first_interval=0.0, persistent=True)


def unregister() -> None:
    for timer in (_rearm_after_register, factor_group.write_queued):
        if bpy.app.timers.is_registered(timer):
            bpy.app.timers.unregister(timer)
    for name, func in reversed(_HANDLERS):
        getattr(bpy.app.handlers, name).remove(func)
    restore_all()  # disabling or uninstalling leaves the user's objects exactly as they were
    bind.forget_all()
