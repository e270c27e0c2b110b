"""What Hybrid Skin sets up on a user's object, keeps right as the scene changes, and puts back exactly.

Both displays set up Blender's exact hybrid as Blender's own data (:mod:`.parts`, trees in
:mod:`.trees.stack_trees`): the user's Armature modifier as LBS, a Preserve Volume one as DQS, and Geometry
Nodes modifiers that keep the LBS result and mix ``(1 - f) LBS + f DQS`` per vertex, ``f`` from the Mix
modifier's inputs (the settings, and a copy of their animation: :mod:`.mirror`) or, for Auto, from the pose
(Bone Info nodes, Blender 5.2+) or an attribute the add-on writes (:mod:`.auto_data`). The setup is saved
with the file, so renders, exporters, other objects and other machines — with or without the add-on —
evaluate the hybrid.

* *Evaluated* (the default): that is all; Blender draws the mesh.
* *GPU* (a fast preview): while nothing else needs the mesh, the skinning modifiers are hidden in the
  viewport and the add-on's shaders draw the hybrid (:mod:`.preview` says when it steps aside).

What was changed is recorded in ``Object.hybrid_skin.saved_state`` (:mod:`.record`); :func:`restore` puts
everything back. :func:`sync` is called by the handlers for every change Blender reports and keeps the setup
whole: parts deleted by the user are set up again, an Armature modifier applied or removed takes Hybrid Skin
off, a record from a newer build or a damaged one is left alone (said once).
"""

from __future__ import annotations

import bpy

from .. import bridge, runtime
from ..core.skinning import skin
from ..errors import HybridSkinError
from . import auto_data, bind, factor, mesh_bind, mirror, parts, preview, readers, record, stack
from .preview import (
    HIDDEN,
    PAINT,
    PAINT_MODES,
    READ,
    REFUSED,
    RENDER,
    TAIL,
    aside_reason,
    gpu_refusal,
    is_local,
)
from .record import DisplayRecord
from .state import hold, rig_state
from .trees import auto_tree, builder, stack_trees

__all__ = [
    "AUTO_ATTRIBUTE",
    "AUTO_NONE",
    "AUTO_TREE",
    "HIDDEN",
    "PAINT",
    "READ",
    "REFUSED",
    "RENDER",
    "TAIL",
    "apply",
    "aside_reason",
    "gpu_draws",
    "gpu_refusal",
    "has_parts",
    "is_applied",
    "is_local",
    "load",
    "readable",
    "restore",
    "settings_changed",
    "store",
    "sync",
    "unreadable",
]

#: The record's ``auto``: Blender evaluates Auto from the pose in the Mix tree ...
AUTO_TREE = "TREE"
#: ... or the add-on writes Auto's factors at each evaluation (``auto_reason`` says why) ...
AUTO_ATTRIBUTE = "ATTRIBUTE"
#: ... or the Factor Mode is not Auto and the tree holds no Auto nodes (choosing Auto builds them).
AUTO_NONE = "NONE"


def load(obj: bpy.types.Object) -> DisplayRecord | None:
    """The object's record; raises :class:`HybridSkinError` for a record this build cannot read (one saved by
    a newer build, or damaged), naming the object."""
    text = obj.hybrid_skin.saved_state
    try:
        return record.load(text)
    except HybridSkinError as err:
        raise HybridSkinError(f"'{obj.name}': {err}; it is left as it is") from None
    except (ValueError, TypeError, KeyError, AttributeError):
        raise HybridSkinError(
            f"'{obj.name}' has a damaged Hybrid Skin record: it is left as it is (Remove Hybrid Skin from "
            "All Objects in File ▸ Clean Up takes what can be found off)"
        ) from None


def readable(obj: bpy.types.Object) -> DisplayRecord | None:
    """:func:`load`, or None after saying once why the record cannot be read (callbacks: never raise)."""
    try:
        return load(obj)
    except HybridSkinError as err:
        runtime.get().report_once(obj, err)
        return None


def store(obj: bpy.types.Object, rec: DisplayRecord | None) -> None:
    text = record.save(rec)
    if obj.hybrid_skin.saved_state != text:
        obj.hybrid_skin.saved_state = text


def is_applied(obj: bpy.types.Object) -> bool:
    return bool(obj.hybrid_skin.saved_state)


def gpu_draws(obj: bpy.types.Object) -> bool:
    """Whether the GPU display draws ``obj`` now: Blender's deformation and drawing of it are hidden."""
    try:
        rec = load(obj)
    except HybridSkinError:
        return False
    return rec is not None and rec.gpu_draws


def has_parts(obj: bpy.types.Object) -> bool:
    """The object's record names modifiers of Hybrid Skin's (a setup of version 2)."""
    try:
        rec = load(obj)
    except HybridSkinError:
        return False
    return rec is not None and bool(rec.parts)


def unreadable(obj: bpy.types.Object) -> bool:
    """A record is there that this build cannot read: the object is left alone."""
    try:
        load(obj)
    except HybridSkinError:
        return True
    return False


# ----------------------------------------------------------------------------------------- restore
def restore(obj: bpy.types.Object) -> None:
    """Undo every change :func:`apply` made; the stack, settings and animation come back exactly."""
    if obj.hybrid_skin.saved_state and not unreadable(obj):
        with bind.own_edits([obj]):  # modifiers shown again, parts removed: not an edit of what a bind read
            _restore(obj)


def _restore(obj: bpy.types.Object) -> None:
    rec = load(obj)
    if rec is None:
        return
    preview.show(obj, rec)
    found = parts.find(obj, rec.parts)
    mix = found[parts.MIX]
    trees = {*rec.trees, *([mix.node_group.name] if mix is not None and mix.node_group is not None else [])}
    mirror.remove(obj, rec.mirrored)
    parts.remove(obj, rec.parts)
    builder.remove_unused_trees(trees)
    if not _mesh_shared_with_setup(obj):
        auto_data.remove_attributes(obj.data, [*rec.attributes, auto_tree.AUTO_ATTRIBUTE])
    _restore_version_1(obj, rec)
    mod = stack.find_modifier(obj, rec.armature)
    if mod is not None and rec.preserve_volume is not None:
        mod.use_deform_preserve_volume = rec.preserve_volume
    obj.hybrid_skin.saved_state = ""


def _restore_version_1(obj: bpy.types.Object, rec: DisplayRecord) -> None:
    """A setup of version 1: its Multi Modifier mix and the factor group it mixed by."""
    extra = stack.find_modifier(obj, rec.mix) if rec.mix else None
    if extra is not None and extra.type == "ARMATURE":
        obj.modifiers.remove(extra)
    group = obj.vertex_groups.get(rec.factor_group) if rec.factor_group else None
    if group is not None and rec.owns_group and not _mesh_shared_with_setup(obj, rec.factor_group):
        active = obj.vertex_groups.active
        picked = None if active is None or active == group else active.name
        obj.vertex_groups.remove(group)
        if picked is not None:  # the user's choice, made while the display was on
            obj.vertex_groups.active_index = obj.vertex_groups[picked].index
        elif len(obj.vertex_groups) > rec.active_group >= 0:
            obj.vertex_groups.active_index = rec.active_group


def _mesh_shared_with_setup(obj: bpy.types.Object, factor_group: str | None = None) -> bool:
    """Another object that shares ``obj``'s mesh is set up too (what lives on the mesh is also its)."""
    for other in bpy.data.objects:
        if other is obj or other.data != obj.data or not other.hybrid_skin.saved_state:
            continue
        try:
            rec = load(other)
        except HybridSkinError:
            return True  # unknown: keep the mesh's data
        if rec is not None and (factor_group is None or rec.factor_group == factor_group):
            return True
    return False


# ------------------------------------------------------------------------------------------- apply
def apply(obj: bpy.types.Object) -> None:
    """Set the object up as its settings ask, from the user's own state (restoring first: idempotent).

    Linked objects and library overrides are left exactly as their library has them: their data is not
    the user's to change (Add refuses them too), and the library's file holds its own setup."""
    if not is_local(obj) or unreadable(obj):
        return
    # the parts and attributes are not an edit of what a bind read; the handlers that run in the
    # evaluation own_edits makes leave the object alone (they would set it up once more)
    with hold([obj]), bind.own_edits([obj]):
        _apply(obj, readers.mesh_readers([obj]).get(obj.session_uid))


def rebuild(obj: bpy.types.Object, depsgraph: bpy.types.Depsgraph) -> None:
    """Set ``obj`` up again from a handler (its bind changed shape): nothing evaluated here."""
    if is_local(obj) and not unreadable(obj):
        _apply(obj, readers.mesh_readers([obj]).get(obj.session_uid), depsgraph)


def _apply(obj: bpy.types.Object, reader: str | None, depsgraph: bpy.types.Depsgraph | None = None) -> bool:
    """:func:`apply` without the evaluation scope; True when the parts were set up. ``depsgraph``: the
    evaluation to bind from (a handler's: a handler must not evaluate the scene again); else the context's,
    evaluated now. The handlers leave the object alone meanwhile."""
    with hold([obj]):
        return _set_up(obj, reader, depsgraph)


def _set_up(obj: bpy.types.Object, reader: str | None, depsgraph: bpy.types.Depsgraph | None) -> bool:
    _restore(obj)
    settings = obj.hybrid_skin
    mod = stack.find_armature_modifier(obj, stack.followed_modifier_name(obj))
    if not settings.enabled or mod is None or settings.bake_state:
        return False  # a bake shows the result through its own shape keys or cache
    rec = DisplayRecord(
        object_name=obj.name,
        armature=stack.modifier_ref(mod),
        display_type=obj.display_type,
        active_group=obj.vertex_groups.active_index,
        preserve_volume=mod.use_deform_preserve_volume,
    )
    mod.use_deform_preserve_volume = False
    if depsgraph is None:
        state = rig_state()
        depsgraph = (
            bpy.context.view_layer.depsgraph if state.in_handler else bpy.context.evaluated_depsgraph_get()
        )
    try:
        bound = bind.cached_bind(obj, depsgraph)
    except HybridSkinError as err:  # set up anyway: Blender's LBS/DQS mix needs no bind; Auto waits for one
        runtime.get().report_once(obj, err)
        bound = None
    keyed_auto = mirror.may_choose_auto(obj)
    if keyed_auto and is_local(obj):
        settings.keep_auto_profile()  # one profile at every frame, in every path (the Mix input is set once)
    if settings.factor_mode == "AUTO" or keyed_auto:
        source, reason = auto_data.source(obj, bound, depsgraph)
    else:
        source, reason = auto_tree.NotChosen(), ""
    if isinstance(source, auto_tree.FromPose):
        rec.attributes = auto_data.write_vertex_data(obj, bound, source)
    tree = stack_trees.build_mix(f"HybridSkin Mix · {obj.name}", source, source.helpers)
    rec.trees = [tree.name]
    rec.parts = parts.add(obj, mod, tree)
    if isinstance(source, auto_tree.NotChosen):
        rec.auto, rec.auto_reason = AUTO_NONE, ""
    else:
        rec.auto, rec.auto_reason = (AUTO_TREE, "") if not reason else (AUTO_ATTRIBUTE, reason)
    found = parts.find(obj, rec.parts)
    parts.set_inputs(obj, found[parts.MIX], mod.object)
    rec.mirrored = mirror.sync(obj, found[parts.MIX], [])
    _place(obj, rec, mod, found, reader)
    store(obj, rec)
    if rec.auto == AUTO_ATTRIBUTE and bound is not None:
        auto_data.write_factors(obj, bound.posed(depsgraph))
    state = rig_state()
    state.vertex_data[obj.session_uid] = bound.serial if bound is not None else 0
    state.tree_sources[obj.session_uid] = source
    state.attribute_auto[obj.session_uid] = rec.auto == AUTO_ATTRIBUTE  # the handlers' cache of the record
    return True


def _place(obj, rec: DisplayRecord, mod, found: dict, reader: str | None, depsgraph=None) -> None:
    """Hide the parts while the object is painted; for the GPU display, hide the skinning or step aside
    and say why (once per reason)."""
    skinning = [mod, *(found[role] for role in parts.ROLES)]
    if obj.mode in PAINT_MODES:
        if rec.hidden_for != PAINT:
            preview.show(obj, rec)
            preview.hide(obj, rec, [found[role] for role in parts.ROLES], PAINT)
        return
    if rec.hidden_for == PAINT:
        preview.show(obj, rec)
    if obj.hybrid_skin.display != "GPU":
        if rec.gpu_draws:
            preview.show(obj, rec)
        rec.aside = ""
        return
    rendering = rig_state().viewport_render
    reason = aside_reason(obj, rec, mod, found[parts.MIX], reader, depsgraph, rendering)
    if reason is None:
        if not rec.gpu_draws:
            preview.hide(obj, rec, skinning)
        return
    code, sentence = reason
    if rec.gpu_draws:
        preview.show(obj, rec)
    if code in (REFUSED, TAIL, READ):  # a mode, a hidden modifier or a render: the panel says it
        runtime.get().report_once(obj, HybridSkinError(sentence))
    rec.aside = code


# --------------------------------------------------------------------------------------------- sync
def sync(
    obj: bpy.types.Object, reader: str | None = None, depsgraph: bpy.types.Depsgraph | None = None
) -> None:
    """Keep ``obj``'s setup whole and its display right after any change Blender reported (the depsgraph
    handler calls this for objects it reports and every GPU display). Only settings change here; what they
    change is evaluated by Blender's second pass of the same update.

    * No record although enabled (an object set up by a build that took the setup off on save, or appended
      from such a file): set up.
    * A record of version 1 (a Multi Modifier mix): taken off and set up as today.
    * The followed Armature modifier is gone (applied to freeze a pose, Convert to Mesh, removed): Hybrid
      Skin comes off, exactly as Blender alone would leave the object, said once.
    * A part is gone or moved (the user deleted one, a script reordered the stack): set up again, said once.
    * The parts follow the user's Armature modifier; paint modes hide them; the GPU display hides the
      skinning or steps aside as :func:`aside_reason` says."""
    settings = obj.hybrid_skin
    if not is_local(obj):
        return
    rec = readable(obj)
    if rec is None:
        if (
            settings.enabled
            and not settings.bake_state
            and not unreadable(obj)
            and stack.find_armature_modifier(obj, stack.followed_modifier_name(obj))
        ):
            _apply(obj, reader, depsgraph)
        return
    if not settings.enabled or settings.bake_state:
        _restore(obj)
        return
    mod = stack.find_modifier(obj, rec.armature)
    if mod is None or mod.type != "ARMATURE":
        converted = rec.gpu_draws and _freeze_converted(obj, depsgraph)
        _take_off(obj, converted)
        return
    if not rec.parts:  # version 1's setup
        _apply(obj, reader, depsgraph)
        return
    found = parts.find(obj, rec.parts)
    stale = _tree_version(found[parts.MIX])
    if stale == "newer":
        runtime.get().report_once(
            obj,
            HybridSkinError(
                f"'{obj.name}' was set up by a newer Hybrid Skin (its node tree): it is left as it is; "
                "update the add-on to change it"
            ),
        )
        return
    if stale == "older" and obj.mode == "OBJECT":  # a tree of an earlier build: built again, as today's
        _apply(obj, reader, depsgraph)
        return
    if rec.auto == AUTO_NONE and obj.mode == "OBJECT" and (
        settings.factor_mode == "AUTO" or mirror.may_choose_auto(obj)
    ):
        _apply(obj, reader, depsgraph)  # Auto chosen or keyed without its update: its nodes are built now
        return
    if obj.mode in ("OBJECT", *PAINT_MODES) and not parts.in_place(obj, mod, found):
        runtime.get().report_once(
            obj,
            HybridSkinError(
                f"'{obj.name}': a modifier of Hybrid Skin's was removed or moved, so it is set up again "
                "(Remove Hybrid Skin takes it off)"
            ),
        )
        _apply(obj, reader, depsgraph)
        return
    if rec.auto == AUTO_TREE and obj.mode == "OBJECT" and _rest_went_live(obj, mod, found[parts.MIX]):
        _apply(obj, reader, depsgraph)  # its stored rest distances no longer hold: computed by the tree now
        return
    _check_particles(obj)
    parts.mirror(mod, found, eyes=not rec.hidden)
    if found[parts.MIX] is not None:
        bridge.set_modifier_input(found[parts.MIX], stack_trees.MIX_INPUTS.armature, mod.object)
    _place(obj, rec, mod, found, reader, depsgraph)
    store(obj, rec)


def _rest_went_live(obj: bpy.types.Object, mod: bpy.types.Modifier, mix: bpy.types.Modifier | None) -> bool:
    """Auto's tree reads the rest distances stored at bind, and since then the shape the Armature modifier
    receives can change (shape keys or a modifier above it were added or shown)."""
    tree = mix.node_group if mix is not None else None
    return tree is not None and tree.get(auto_tree.LIVE_REST) == 0 and auto_data.rest_can_change(obj, mod)


def _tree_version(mix: bpy.types.Modifier | None) -> str:
    """ "older" or "newer" when the Mix modifier's tree is of another build's version, else ""."""
    tag = builder.tree_tag(mix.node_group) if mix is not None and mix.node_group is not None else None
    if tag is None or tag[1] == stack_trees.TREE_VERSION:
        return ""
    return "older" if tag[1] < stack_trees.TREE_VERSION else "newer"


def _check_particles(obj: bpy.types.Object) -> None:
    """Legacy particles emitted from faces or volume follow the mesh's deformation through Blender's
    deform-only modifiers at the top of its stack; Hybrid Skin's Geometry Nodes parts end those (as any
    Geometry Nodes or Vertex Weight modifier does), so such hair sits off the surface unless its settings
    use the modifier stack. Said once per object and system; the user's settings are theirs to change."""
    for mod in obj.modifiers:
        if mod.type != "PARTICLE_SYSTEM" or not mod.show_viewport and not mod.show_render:
            continue
        part = mod.particle_system.settings
        if part.emit_from in ("FACE", "VOLUME") and not part.use_modifier_stack:
            runtime.get().report_once(
                obj,
                HybridSkinError(
                    f"'{obj.name}': particles '{mod.particle_system.name}' follow the deformation only "
                    "through deform-only modifiers, which Hybrid Skin's Geometry Nodes end: turn on Use "
                    "Modifier Stack "
                    f"in their settings '{part.name}' (Emission) so that they sit on the hybrid"
                ),
            )


def _take_off(obj: bpy.types.Object, converted: bool = False) -> None:
    """The followed Armature modifier is gone: Hybrid Skin's parts come off and it is turned off."""
    _restore(obj)
    settings = obj.hybrid_skin
    settings.enabled = False
    bind.forget(obj)
    kept = " (Convert got the pose the GPU preview drew)" if converted else ""
    runtime.get().report_once(
        obj,
        HybridSkinError(
            f"'{obj.name}' no longer has the Armature modifier Hybrid Skin followed (applied, converted or "
            f"removed), so Hybrid Skin is off for it and its own modifiers are removed{kept}"
        ),
    )


def _freeze_converted(obj: bpy.types.Object, depsgraph: bpy.types.Depsgraph | None) -> bool:
    """Object ▸ Convert ▸ Mesh while the GPU preview drew: Blender converted its evaluation, in which the
    skinning was hidden, so the mesh now holds the skinning's input. Give it the pose the preview drew:
    the cached bind's influences and the pose now, skinned from the converted vertices (which are that
    input at this frame). True when posed."""
    bound = bind.peek(obj)
    if bound is None or depsgraph is None:
        return False
    if len(obj.data.vertices) != bound.vertex_count or obj.data.shape_keys is not None:
        return False
    arm = next((o for o in bpy.data.objects if o.session_uid == bound.armature_uid), None)
    if arm is None or arm.type != "ARMATURE":
        return False
    posed = mesh_bind.posed_by(bound, obj, arm, depsgraph)
    try:
        values = factor.resolve(obj, bound).values(posed)
    except HybridSkinError:
        return False
    rest = bridge.vertex_positions(obj.data)  # the skinning's input at this frame, as converted
    positions, _ = skin(rest, bound.binding, posed.palette, values, None, posed.target_to_armature)
    bridge.set_vertex_positions(obj.data, positions)
    return True


# ------------------------------------------------------------------------------------ settings
def settings_changed(obj: bpy.types.Object) -> None:
    """Property update: set the display up again when it changed; the Mix modifier takes the settings.

    A change of a setting evaluates nothing here: a script that sets a keyed Deform Factor and then inserts
    a key (a common pattern) must find its value still there, and an evaluation in between re-applies the
    animation, which copies of it (:mod:`.mirror`) may just have changed."""
    settings = obj.hybrid_skin
    rig_state().draw_failures.pop(obj.session_uid, None)  # new settings: the GPU display tries again
    if unreadable(obj):
        return
    rec = load(obj)
    wanted = settings.enabled and not settings.bake_state
    if (rec is not None) != wanted:
        apply(obj)
        return
    if rec is None:
        return
    if settings.factor_mode == "AUTO" and rec.auto == AUTO_NONE and is_local(obj):
        # Auto chosen: the Mix tree gets its Auto nodes, from the evaluation at hand (evaluating again here
        # would re-apply keys over the value just set)
        _apply(obj, readers.mesh_readers([obj]).get(obj.session_uid), bpy.context.view_layer.depsgraph)
        return
    mod = stack.find_modifier(obj, rec.armature)
    mix = parts.find(obj, rec.parts)[parts.MIX]
    if mix is not None and mod is not None:
        parts.set_inputs(obj, mix, mod.object)
    if settings.factor_mode == "VERTEX_GROUP" and obj.vertex_groups.get(settings.factor_vertex_group) is None:
        # Blender reads no weights from a group that is not there: said once, as every feature says it
        runtime.get().report_once(obj, factor.missing_group(obj))
    sync(obj, readers.mesh_readers([obj]).get(obj.session_uid))
