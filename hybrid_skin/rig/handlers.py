"""Application handlers of the rig layer: keep every object's Hybrid Skin setup whole as the scene changes.
(Each feature registers its own handlers for its own state: the viewport frees its GPU skins on load and
undo, texture-bake summaries rebase their paths on save.)

The hybrid itself is Blender's data (:mod:`.setup`): a frame of playback in the Evaluated display costs the
add-on nothing, except where Auto is the attribute path (:mod:`.auto_follow`). The handlers:

* Load, undo and redo drop the caches and sync every object that uses Hybrid Skin (files of builds that
  took the setup off on save are set up; version 1 setups are replaced; unreadable records are said once
  and left alone).
* Saved files hold the setup as it is. A GPU display shows Blender's stack for the save (``save_pre``) and
  hides it again after (``save_post``, or ``save_post_fail``), so the file shows the hybrid anywhere. Objects
  whose Auto is the attribute path are named once per save: elsewhere they render this frame's factors.
* After an edit Blender reports (``depsgraph_update_post``): the setup is synced for the objects it reports
  (parts set up again, taken off an object whose Armature modifier went, taken off objects they were copied
  to), the bind's data follows weight edits, and the settings' animation is copied to the Mix modifier.
* At every frame (``frame_change_post``) only GPU displays (step aside or draw), attribute-path Auto, and
  a viewport render (the GPU display steps aside for it) need anything.
"""

from __future__ import annotations

import bpy
from bpy.app.handlers import persistent

from .. import runtime
from . import auto_data, auto_follow, bind, escaped, mirror, parts, readers, setup, stack
from .state import RIG_IN_EDIT_MODE, RigState, rig_state

__all__ = ["enabled_objects", "reapply_all", "remove_all"]

#: Seconds between checks that a viewport render (playblast) is still running.
RENDER_POLL_S = 0.5


def enabled_objects() -> list[bpy.types.Object]:
    """Local meshes that use Hybrid Skin. Linked objects and library overrides are left as their library
    has them: the library's file holds its own setup, evaluated by Blender like any modifier."""
    return [o for o in bpy.data.objects if o.type == "MESH" and setup.is_local(o) and o.hybrid_skin.enabled]


def reapply_all() -> None:
    """Sync every object that uses Hybrid Skin (set up where the setup is missing or of an older build)."""
    objects = enabled_objects()
    with bind.own_edits(objects):  # one evaluation for all of them, not two per object
        for obj in objects:
            setup.sync(obj)


def remove_all() -> list[str]:
    """Take Hybrid Skin off every local object of the file (File ▸ Clean Up); returns their names."""
    objects = [
        o for o in bpy.data.objects if o.type == "MESH" and setup.is_local(o) and o.hybrid_skin.saved_state
    ]
    objects += [o for o in enabled_objects() if o not in objects]
    names = []
    with bind.own_edits(objects):
        for obj in objects:
            if setup.unreadable(obj):
                continue
            setup.restore(obj)
            obj.hybrid_skin.enabled = False
            names.append(obj.name)
    escaped_all()
    return names


def escaped_all() -> None:
    for obj in bpy.data.objects:
        escaped.clean_escaped(obj)


def _forget_all() -> None:
    bind.forget_all()
    auto_follow.forget()
    state = rig_state()
    state.tree_sources.clear()
    state.draw_failures.clear()
    state.seen.clear()
    state.attribute_auto.clear()


@persistent
def on_load_post(*_args) -> None:
    state = rig_state()
    _forget_all()
    bind.cache().edit_mode_meshes.clear()
    state.saving = False
    runtime.get().reported.clear()  # another file: its problems are said again
    reapply_all()


@persistent
def on_save_pre(*_args) -> None:
    """The file gets Blender's stack as it is; the GPU display shows it for the save. Attribute-path Auto
    is named once per save: where the add-on is not installed it renders this frame's factors."""
    state = rig_state()
    _mirror_all(state)  # the file holds the settings' animation where Blender evaluates it
    state.saving = True
    for obj in enabled_objects():
        rec = setup.readable(obj)
        if rec is None:
            continue
        if rec.gpu_draws:
            with bind.own_edits([obj]):
                setup.preview.show(obj, rec)
                setup.store(obj, rec)
        keyed = obj.hybrid_skin.factor_mode != "AUTO" and mirror.may_choose_auto(obj)
        if rec.auto == setup.AUTO_ATTRIBUTE and (obj.hybrid_skin.factor_mode == "AUTO" or keyed):
            frame = bpy.context.scene.frame_current
            if keyed:  # not Auto now, so not written at this frame: the file gets this frame's factors
                with bind.own_edits([obj]):
                    auto_follow.write(obj, bpy.context.view_layer.depsgraph)
            print(
                f"Hybrid Skin: '{obj.name}' is saved with Auto's factors of frame {frame} "
                f"({rec.auto_reason}): "
                "where Hybrid Skin is not installed, Blender renders those factors at every frame"
            )


@persistent
def on_save_post(*_args) -> None:
    """After a save, or one that failed (``save_post_fail``): GPU displays hide the stack again."""
    rig_state().saving = False
    objects = [o for o in enabled_objects() if o.hybrid_skin.display == "GPU"]
    with bind.own_edits(objects):
        for obj in objects:
            setup.sync(obj)


@persistent
def on_undo_redo(*_args) -> None:
    _forget_all()
    for obj in enabled_objects():  # a step may hold another mode than the one it brings back
        setup.sync(obj)


@persistent
def on_blend_import(*_args) -> None:
    """Append or link: appended objects that use Hybrid Skin are synced (those from files of builds that
    took the setup off on save are set up); parts that arrived on objects that do not use it are removed."""
    for obj in enabled_objects():
        if not setup.is_applied(obj):
            setup.apply(obj)
    escaped_all()


@persistent
def on_depsgraph_update(scene, depsgraph) -> None:
    state = rig_state()
    if state.in_handler or state.saving:
        return  # an evaluation this handler started (a rebind), or a save under way
    state.in_handler = True
    try:
        _after_edit(state, depsgraph)
    finally:
        state.in_handler = False


@persistent
def on_frame_change(scene=None, depsgraph=None, *_args) -> None:
    state = rig_state()
    if state.in_handler or state.saving or depsgraph is None:
        return
    state.in_handler = True
    try:
        _after_frame(state, depsgraph)
    finally:
        state.in_handler = False


def _after_edit(state: RigState, depsgraph: bpy.types.Depsgraph) -> None:
    """After Blender evaluated an edit (not a frame change)."""
    state.bump()  # a counter: cached GPU state re-checks itself at its next draw
    updates = list(depsgraph.updates)
    if any(isinstance(u.id, bpy.types.Object) and u.id.type == "ARMATURE" for u in updates):
        state.pose_generation += 1  # a pose may have changed: Auto follows
    edited = edited_meshes(depsgraph, updates)
    if edited:
        bind.mark_edited(edited)
    # A pose change re-evaluates every mesh it deforms, which the update reports like an edit of the mesh:
    # objects whose stack, settings and mode did not change since they were last seen are left alone (a
    # frame of playback then costs the add-on a signature per object).
    reported = [o for o in _reported_objects(updates) if o.session_uid not in state.held]
    changed = [o for o in reported if state.seen.get(o.session_uid) != _signature(o)]
    for obj in changed:
        failure = state.draw_failures.get(obj.session_uid)
        if failure is not None and failure[1] != stack.signature(obj):
            del state.draw_failures[obj.session_uid]  # the stack changed since the display failed: try again
        escaped.clean_escaped(obj)
    animation = any(isinstance(u.id, bpy.types.Action) for u in updates)
    # The rig, its animation, or an object's place edited (not played): B-bone settings or the split between
    # segments an Auto tree keeps may have changed (a cheap check per object, only after such an edit).
    moved = any(_is_rig(u.id) or (isinstance(u.id, bpy.types.Object) and u.is_updated_transform)
                for u in updates)
    rig_edit = (animation or moved) and not _playing()
    objects = [o for o in enabled_objects() if o.session_uid not in state.held]
    gpu = [o for o in objects if o.hybrid_skin.display == "GPU"]
    read = readers.mesh_readers(gpu)
    ids = {o.session_uid for o in changed}
    rest_digests: dict[int, str] = {}  # each rig's, read once for all its meshes
    for obj in objects:
        failure = state.draw_failures.get(obj.session_uid)
        if failure is not None and failure[1] == RIG_IN_EDIT_MODE and not stack.rig_in_edit_mode(obj):
            del state.draw_failures[obj.session_uid]  # met while its rig was in Edit Mode, now left
        # Objects changed, every GPU display (what reads it may have changed anywhere), and objects that
        # arrived without their setup (appended from a file of an earlier build).
        if obj.session_uid in ids or obj in gpu or not setup.is_applied(obj):
            setup.sync(obj, read.get(obj.session_uid), depsgraph)
        state.seen[obj.session_uid] = _signature(obj)
        if rig_edit and auto_data.bbones_stale(obj, depsgraph, animation):
            setup.rebuild(obj, depsgraph)  # B-bone settings the Auto tree keeps were edited: built again
        elif rig_edit and auto_data.rest_stale(obj, rest_digests):
            auto_follow.refresh(obj, setup.readable(obj), depsgraph)  # its rig's rest pose edited since
        if obj.session_uid not in ids and obj.data.session_uid not in edited and not animation:
            if obj.hybrid_skin.factor_mode != "AUTO" or state.attribute_auto.get(obj.session_uid) is False:
                continue  # nothing of the add-on's to do after this evaluation (unknown: a file just opened)
        rec = setup.readable(obj) if obj.hybrid_skin.saved_state else None
        if rec is None:
            continue
        state.attribute_auto[obj.session_uid] = rec.auto == setup.AUTO_ATTRIBUTE
        if obj.data.session_uid in edited:  # weights or vertices edited: the tree's data follows
            auto_follow.refresh(obj, rec, depsgraph)
            rec = setup.readable(obj)
        if (obj.session_uid in ids or animation) and rec is not None and rec.parts:
            _mirror(obj, rec, depsgraph)
        auto_follow.follow(obj, rec, depsgraph)


def _after_frame(state: RigState, depsgraph: bpy.types.Depsgraph) -> None:
    """After a frame change: only what Blender does not evaluate by itself (see the module docstring)."""
    updates = list(depsgraph.updates)
    # Edits made since the last evaluation are evaluated with the frame (a script edits, then sets it).
    edited = edited_meshes(depsgraph, updates, frame_change=True)
    if edited:
        bind.mark_edited(edited)
        for obj in enabled_objects():
            if obj.data.session_uid in edited and obj.session_uid not in state.held:
                auto_follow.refresh(obj, setup.readable(obj), depsgraph)
    if any(isinstance(u.id, bpy.types.Action) for u in updates):
        _mirror_all(state)  # keys edited since the last evaluation (a script keys, then sets the frame)
    rendering = _viewport_rendering()
    if rendering != state.viewport_render:
        state.viewport_render = rendering
        if rendering and not bpy.app.timers.is_registered(_after_viewport_render):
            bpy.app.timers.register(_after_viewport_render, first_interval=RENDER_POLL_S, persistent=True)
    busy = [
        o
        for o in enabled_objects()
        if o.session_uid not in state.held
        and (o.hybrid_skin.display == "GPU" or (o.hybrid_skin.factor_mode == "AUTO" and _attribute_auto(o)))
    ]
    if not busy:
        return
    state.bump()
    state.pose_generation += 1
    read = readers.mesh_readers([o for o in busy if o.hybrid_skin.display == "GPU"])
    for obj in busy:
        if obj.hybrid_skin.display == "GPU":
            setup.sync(obj, read.get(obj.session_uid), depsgraph)
        auto_follow.follow(obj, setup.readable(obj), depsgraph)


def _signature(obj: bpy.types.Object) -> tuple:
    """What the setup of ``obj`` depends on, cheaply: its modifiers (kind, name, eyes; an Armature
    modifier's armature, mask and what it deforms with, which the DQS part follows), mode, settings,
    record, and whether the mesh has shape keys. Unchanged: an evaluation that reports it (a pose change)
    changed nothing of the setup's."""
    settings = obj.hybrid_skin
    modifiers = tuple(
        (m.name, m.type, m.show_viewport, m.show_render, *(_deforms(m) if m.type == "ARMATURE" else ()))
        for m in obj.modifiers
    )
    return (
        modifiers,
        obj.mode,
        obj.data.session_uid,
        settings.enabled,
        settings.display,
        settings.factor_mode,
        settings.saved_state,
        settings.bake_state,
        len(obj.vertex_groups),
        len(obj.data.attributes),
        obj.data.shape_keys is not None,
    )


def _deforms(mod: bpy.types.ArmatureModifier) -> tuple:
    """What an Armature modifier deforms by and with (:data:`.parts.DEFORMS`), the armature by identity."""
    arm = mod.object
    others = (getattr(mod, name) for name in parts.DEFORMS if name != "object")
    return (arm.session_uid if arm is not None else 0, *others)


def _is_rig(id_data) -> bool:
    if isinstance(id_data, bpy.types.Object):
        return id_data.type == "ARMATURE"
    return isinstance(id_data, bpy.types.Armature)


def _playing() -> bool:
    """Playback or scrubbing: the rig changes every frame, but not its settings."""
    wm = getattr(bpy.context, "window_manager", None)
    return wm is not None and any(
        w.screen is not None and (w.screen.is_animation_playing or w.screen.is_scrubbing) for w in wm.windows
    )


def _attribute_auto(obj: bpy.types.Object) -> bool:
    rec = setup.readable(obj) if obj.hybrid_skin.saved_state else None
    return rec is not None and rec.auto == setup.AUTO_ATTRIBUTE


def _mirror_all(state: RigState) -> None:
    for obj in enabled_objects():
        if obj.session_uid in state.held or obj.animation_data is None:
            continue
        rec = setup.readable(obj)
        if rec is not None and rec.parts:
            _mirror(obj, rec)


def _mirror(obj: bpy.types.Object, rec, depsgraph: bpy.types.Depsgraph | None = None) -> None:
    """The settings' animation copied to the Mix modifier (``depsgraph``: the handler's evaluation, else the
    view layer's as it stands); keys that choose Auto where the Mix tree has no Auto nodes get them now,
    so the file renders Auto where the add-on is not installed."""
    mix = parts.find(obj, rec.parts)[parts.MIX]
    if mix is None:
        return
    mirrored = mirror.sync(obj, mix, rec.mirrored)
    if mirrored != rec.mirrored:
        rec.mirrored = mirrored
        setup.store(obj, rec)
    if rec.auto == setup.AUTO_NONE and obj.mode == "OBJECT" and mirror.may_choose_auto(obj):
        setup.rebuild(obj, depsgraph or bpy.context.view_layer.depsgraph)


def _viewport_rendering() -> bool:
    """A viewport render (View ▸ Viewport Render Animation) runs: its frames draw no add-on callback."""
    wm = getattr(bpy.context, "window_manager", None)
    return wm is not None and any(
        op.bl_idname == "RENDER_OT_opengl" for w in wm.windows for op in w.modal_operators
    )


def _after_viewport_render() -> float | None:
    """Timer: once the viewport render is over, GPU displays draw again."""
    if runtime.current() is None:
        return None
    if _viewport_rendering():
        return RENDER_POLL_S
    rig_state().viewport_render = False
    for obj in [o for o in enabled_objects() if o.hybrid_skin.display == "GPU"]:
        setup.sync(obj)
    return None


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
    reports every mesh whose data or shape keys are animated: those are left out then. Not seen: weights
    edited in the same evaluation as the object's transform or one of its properties changes."""
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


_HANDLERS = (
    ("load_post", on_load_post),
    ("save_pre", on_save_pre),
    ("save_post", on_save_post),
    # A save that fails (unwritable folder, full disk) must re-arm too: save_pre showed the GPU display's
    # stack, and without this the preview and Blender would both draw the mesh.
    ("save_post_fail", on_save_post),
    ("undo_post", on_undo_redo),
    ("redo_post", on_undo_redo),
    ("blend_import_post", on_blend_import),
    ("depsgraph_update_post", on_depsgraph_update),
    ("frame_change_post", on_frame_change),
)


def _rearm_after_register() -> None:
    """bpy.data is read-only while add-ons register at startup: sync on the first tick."""
    reapply_all()
    return None


def register() -> None:
    for name, func in _HANDLERS:
        getattr(bpy.app.handlers, name).append(func)
    if isinstance(bpy.data, bpy.types.BlendData):  # enabled in a running session: sync now
        reapply_all()
    else:
        # Persistent: Blender 4.2 crashes at exit after a file load dropped a pending non-persistent timer
        # (and after any timer left registered), which the bpy module, with no event loop, never runs.
        bpy.app.timers.register(_rearm_after_register, first_interval=0.0, persistent=True)


def unregister() -> None:
    """Disabling or uninstalling leaves every setup in place — it is Blender's own data, and renders the
    hybrid without the add-on — except what only the add-on can draw: GPU displays show Blender's stack."""
    for timer in (_rearm_after_register, auto_follow.write_queued, _after_viewport_render):
        if bpy.app.timers.is_registered(timer):
            bpy.app.timers.unregister(timer)
    for name, func in reversed(_HANDLERS):
        getattr(bpy.app.handlers, name).remove(func)
    for obj in enabled_objects():
        rec = setup.readable(obj)
        if rec is not None and rec.hidden:
            with bind.own_edits([obj]):
                setup.preview.show(obj, rec)
                setup.store(obj, rec)
    bind.forget_all()
