"""Application handlers: re-arm on file load, keep saved files clean, drop caches on undo, and tell binds
when Blender reports their mesh changed (weights painted or set by a script).

Saved .blend files hold the user's own modifier and display settings (restored in ``save_pre`` and
re-applied in ``save_post``, or ``save_post_fail`` when the save failed), so a file opened without the
add-on looks exactly as before Hybrid Skin. A save into another folder also rebases the ``//`` paths the
add-on stores (the texture bake's files), as Blender does for its own; they are put back when the open
file stays the old one (Save Copy, a failed save).
"""

from __future__ import annotations

import os

import bpy
from bpy.app.handlers import persistent

from .. import runtime
from ..animtex import summary
from . import bind, display, viewport


def enabled_objects() -> list[bpy.types.Object]:
    """Local meshes that use Hybrid Skin. Linked objects and library overrides are left as their library
    has them: the library's file was saved with its own setup restored, and changing an override's
    modifiers on load would store that change in the user's file."""
    return [
        o
        for o in bpy.data.objects
        if o.type == "MESH" and o.library is None and o.override_library is None and o.hybrid_skin.enabled
    ]


def reapply_all() -> None:
    objects = enabled_objects()
    with bind.own_edits(objects):  # one evaluation for all of them (a save runs this), not two per object
        for obj in objects:
            display.apply(obj)


def restore_all() -> None:
    objects = enabled_objects()
    with bind.own_edits(objects):
        for obj in objects:
            display.restore(obj)


@persistent
def on_load_post(*_args) -> None:
    bind.forget_all()
    viewport.forget()
    runtime.get().edit_mode_meshes.clear()
    runtime.get().factors_written.clear()
    runtime.get().reported.clear()  # another file: its problems are said again
    reapply_all()


def _same_file(a: str, b: str) -> bool:
    return bool(a and b) and os.path.normcase(os.path.abspath(a)) == os.path.normcase(os.path.abspath(b))


@persistent
def on_save_pre(filepath: str = "", *_args) -> None:
    """``filepath`` is the file being written; ``bpy.data.filepath`` is still the open one."""
    restore_all()
    new = filepath if isinstance(filepath, str) else ""
    runtime.get().summaries_before_save = summary.rebase_paths(bpy.data.filepath, new)


@persistent
def on_save_post(filepath: str = "", *_args) -> None:
    """After a save, or one that failed (``save_post_fail``): the open file is the one written, or the old
    one still (Save Copy, a failure), whose stored paths must name its own files again."""
    state = runtime.get()
    before, state.summaries_before_save = state.summaries_before_save, {}
    if before and not _same_file(bpy.data.filepath, filepath if isinstance(filepath, str) else ""):
        summary.restore_texts(before)
    reapply_all()


@persistent
def on_undo_redo(*_args) -> None:
    bind.forget_all()
    viewport.forget()
    # The step brought its own factor group back, which may lag the user's factor group it brought (a
    # stroke's step is pushed before the timer writes): the update after the undo reports every mesh
    # edited, which queues the write again (on_depsgraph_update).
    runtime.get().factors_written.clear()
    for obj in enabled_objects():  # a step may hold another mode than the one it brings back
        display.follow_mode(obj)


@persistent
def on_depsgraph_update(scene, depsgraph) -> None:
    runtime.get().bump()  # a counter: cached GPU state re-checks itself at the next draw
    # Weights or vertices may have changed (in the UI, or by a script: background mode too): binds of the
    # mesh are compared before their next use. Pose changes do not report a mesh's data; frame changes do
    # not come here (see on_frame_change).
    edited = edited_meshes(depsgraph)
    if edited:
        bind.mark_edited(edited)
        _painted_factor_groups(edited - runtime.get().own_mesh_edits)
    # Every mode switch evaluates (the mode operators do): the GPU display steps aside outside Object Mode,
    # the Evaluated display writes the factors held back outside it.
    for u in depsgraph.updates:
        obj = u.id.original if isinstance(u.id, bpy.types.Object) else None
        if obj is not None and obj.type == "MESH" and obj.hybrid_skin.enabled:
            display.follow_mode(obj)


def _painted_factor_groups(edited: set[int]) -> None:
    """The Evaluated display mixes by a group the add-on writes from the user's factor group: when a weight
    edit may have changed that group (painted, set by a script), the write is queued for a timer. Not here:
    writing needs the bind, which may evaluate the scene, and nothing may evaluate inside this handler."""
    for obj in enabled_objects():
        settings = obj.hybrid_skin
        if (
            settings.display == "EVALUATED"
            and settings.factor_mode == "VERTEX_GROUP"
            and not settings.bake_state
            and obj.data.session_uid in edited
        ):
            display.queue_factor_write(obj)


def _animated(id_data: bpy.types.ID | None) -> bool:
    ad = None if id_data is None else id_data.animation_data
    return ad is not None and (ad.action is not None or len(ad.drivers) > 0 or len(ad.nla_tracks) > 0)


def edited_meshes(depsgraph: bpy.types.Depsgraph | None, frame_change: bool = False) -> set[int]:
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
    updates = list(depsgraph.updates)
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
    editing, left = runtime.get().edit_mode_meshes, set()
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
    runtime.get().bump()
    # A frame change evaluates edits made since the last evaluation without calling depsgraph_update_post
    # (a script that edits weights, then sets the frame): marked here, before anything binds.
    edited = edited_meshes(depsgraph, frame_change=True)
    if edited:
        bind.mark_edited(edited)
    # The Evaluated display's factors follow the frame: Auto ones the pose, the others an animated or
    # driven Deform Factor and a factor group painted since (rewritten only when they changed).
    for obj in enabled_objects():
        settings = obj.hybrid_skin
        if settings.display == "EVALUATED" and not settings.bake_state:
            display.refresh_factor_group(obj, only_if_changed=True)


_HANDLERS = (
    ("load_post", on_load_post),
    ("save_pre", on_save_pre),
    ("save_post", on_save_post),
    # A save that fails (unwritable folder, full disk) must re-arm too: save_pre restored the user's setup,
    # and without this the GPU display would draw over Blender's own mesh.
    ("save_post_fail", on_save_post),
    ("undo_post", on_undo_redo),
    ("redo_post", on_undo_redo),
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
    for timer in (_rearm_after_register, display.write_queued_factors):
        if bpy.app.timers.is_registered(timer):
            bpy.app.timers.unregister(timer)
    for name, func in reversed(_HANDLERS):
        getattr(bpy.app.handlers, name).remove(func)
    restore_all()  # disabling or uninstalling leaves the user's objects exactly as they were
    bind.forget_all()
