"""What Hybrid Skin sets up on a user's object, keeps right as the scene changes, and puts back exactly.

Both displays set up Blender's exact hybrid: the user's Armature modifier as LBS, followed by a Preserve
Volume Armature modifier with Multi Modifier (:data:`MIX_MODIFIER`) whose vertex group (:data:`FACTOR_GROUP`)
holds every vertex's deform factor; Blender mixes ``(1-f)·LBS + f·DQS`` in C++. So renders, exporters,
other objects (clothing, Boolean cutters, Geometry Nodes), instances, Convert, ray casts and scripts read the
hybrid from Blender's own evaluation, as they read Blender's LBS without the add-on.

* *Evaluated* (the default): that is all; Blender draws the mesh.
* *GPU* (a fast preview): while nothing else needs the mesh, the two Armature modifiers are hidden in the
  viewport (renders untouched) and the object is shown as bounds; the add-on's shaders draw the hybrid from
  O(bones) per frame (:mod:`.viewport`). It steps aside — Blender's exact stack draws — whenever something
  needs Blender's evaluation or its drawing (:func:`aside_reason`): a mode other than Object Mode (weight
  colours, the edit cage, brushes), the Armature modifier hidden by the user, a modifier after it (Blender
  draws the whole stack), weights a modifier above it changes, something that reads the mesh
  (:mod:`.readers`), or a bind that fails. What it cannot see coming (an exporter or Convert evaluating the
  viewport, a ray cast, a script reading the evaluated mesh) gets the rest pose while it draws: the panel
  and README say so.

What was changed is recorded in ``Object.hybrid_skin.saved_state`` (:mod:`.record`); :func:`restore` puts
everything back. :func:`sync` is called by the handlers for every change Blender reports and keeps the
setup whole: parts deleted by the user are set up again, an Armature modifier applied or removed takes
Hybrid Skin off; parts copied onto other objects are taken off them by :mod:`.escaped`. Each change
the user did not ask for is said once (``runtime.report_once``). The factor group's values are written by
:mod:`.factors`.
"""

from __future__ import annotations

import bpy

from .. import bridge, runtime
from ..core.skinning import skin
from ..errors import HybridSkinError
from . import bind, checks, factor, factor_group, mesh_bind, native, readers, record, stack
from .record import FACTOR_GROUP, MIX_MODIFIER, DisplayRecord
from .state import rig_state

__all__ = [
    "FACTOR_GROUP",
    "HIDDEN",
    "MIX_MODIFIER",
    "aside_reason",
    "apply",
    "gpu_draws",
    "gpu_refusal",
    "is_applied",
    "load",
    "restore",
    "settings_changed",
    "store",
    "sync",
]

#: Why the GPU display steps aside besides a mode: the user hid the Armature modifier in the viewport.
HIDDEN = "HIDDEN"
#: ... a modifier after the Armature modifier (Blender draws the whole stack).
TAIL = "TAIL"
#: ... something reads the mesh (:mod:`.readers`).
READ = "READ"
#: ... the GPU display cannot show this object (:func:`gpu_refusal`) or failed to skin it.
REFUSED = "REFUSED"

def load(obj: bpy.types.Object) -> DisplayRecord | None:
    return record.load(obj.hybrid_skin.saved_state)


def store(obj: bpy.types.Object, rec: DisplayRecord | None) -> None:
    text = record.save(rec)
    if obj.hybrid_skin.saved_state != text:
        obj.hybrid_skin.saved_state = text


def is_applied(obj: bpy.types.Object) -> bool:
    return bool(obj.hybrid_skin.saved_state)


def gpu_draws(obj: bpy.types.Object) -> bool:
    """Whether the GPU display draws ``obj`` now: Blender's deformation and drawing of it are hidden."""
    rec = load(obj)
    return rec is not None and rec.gpu_draws


def is_local(obj: bpy.types.Object) -> bool:
    return obj.library is None and obj.override_library is None and obj.data.library is None


# ----------------------------------------------------------------------------------- GPU refusals
def gpu_refusal(obj: bpy.types.Object) -> str | None:
    """Why the GPU display can never draw ``obj``, as one sentence, or None. It skins one Armature modifier
    from the weights on the mesh: a second Armature modifier would be left out, and weights a modifier
    above changes (at any frame) would have to be read back from Blender at every frame."""
    if not is_local(obj):
        return (
            f"'{obj.name}' is linked from a library: Blender shows its library's own deformation "
            "(make it local to use Hybrid Skin on it)"
        )
    armatures = [m for m in obj.modifiers if m.type == "ARMATURE" and not stack.is_mix_modifier(m)]
    if len(armatures) > 1:
        return (
            f"'{obj.name}' has {len(armatures)} Armature modifiers and the GPU display skins only one: "
            "Blender's own stack draws it (the Evaluated display)"
        )
    mod = stack.find_armature_modifier(obj, stack.followed_modifier_name(obj))
    weighting = stack.weight_modifiers_above(obj, mod) if mod is not None else []
    if weighting:
        return (
            f"Modifier '{weighting[0].name}' above the Armature modifier of '{obj.name}' can change its "
            "weights at any frame, which the GPU display cannot follow: Blender's own stack draws it"
        )
    return None


def aside_reason(
    obj: bpy.types.Object,
    mod: bpy.types.Modifier,
    mix: bpy.types.Modifier | None,
    reader: str | None,
    depsgraph: bpy.types.Depsgraph | None = None,
) -> tuple[str, str] | None:
    """Why the GPU display lets Blender's exact stack draw ``obj`` now, as ``(code, sentence)``, or None
    when it may draw it. ``reader``: what reads the mesh (:func:`.readers.mesh_readers`), if anything.
    ``depsgraph``: the evaluation just made (a handler's), where the mesh the GPU display would skin is
    Blender's evaluation with the skinning hidden: another vertex count than the mesh's means a modifier
    above changes it, which the bind refuses with the same sentence."""
    if obj.mode != "OBJECT":
        return obj.mode, f"'{obj.name}' is in {obj.mode.replace('_', ' ').title()} Mode: Blender draws it"
    modifiers = list(obj.modifiers)
    after = modifiers[modifiers.index(mix if mix is not None else mod) + 1 :]
    tail = [m for m in after if m.show_viewport]
    failure = rig_state().draw_failures.get(obj.session_uid)
    refusal = gpu_refusal(obj) or (failure[0] if failure else None)
    if refusal is None and depsgraph is not None and not tail:
        # With nothing after the skinning, Blender's evaluation has the vertex count the skinning gets.
        if len(obj.evaluated_get(depsgraph).data.vertices) != len(obj.data.vertices):
            refusal = checks.vertex_count_refusal(obj, mod)
    if refusal is not None:
        return REFUSED, refusal
    if not _user_shown(obj, mod):
        return HIDDEN, (
            f"The Armature modifier of '{obj.name}' is hidden in the viewport: Blender shows the rest shape"
        )
    if tail:
        return TAIL, (
            f"Modifier '{tail[0].name}' comes after the Armature modifier of '{obj.name}': Blender draws the "
            "whole stack (the GPU display draws the skinning alone)"
        )
    if reader is not None:
        return READ, f"{reader}: Blender draws '{obj.name}' so that it sees the pose"
    return None


def _user_shown(obj: bpy.types.Object, mod: bpy.types.Modifier) -> bool:
    """The user's own Show in Viewport of ``mod`` (the record holds it while the GPU display hides it)."""
    rec = load(obj)
    for uid, name, value in rec.hidden if rec is not None else ():
        if stack.find_modifier(obj, [uid, name]) == mod:
            return bool(value)
    return mod.show_viewport


# ----------------------------------------------------------------------------------------- restore
def restore(obj: bpy.types.Object) -> None:
    """Undo every change :func:`apply` made; the stack and settings come back exactly."""
    if obj.hybrid_skin.saved_state:
        with bind.own_edits([obj]):  # modifiers shown again: not an edit of what a bind read
            _restore(obj)


def _restore(obj: bpy.types.Object) -> None:
    rec = load(obj)
    if rec is None:
        return
    factor_group.forget(obj)
    _show(obj, rec)
    extra = stack.find_modifier(obj, rec.mix) if rec.mix else None
    if extra is not None and extra.type == "ARMATURE":
        obj.modifiers.remove(extra)
    group = obj.vertex_groups.get(rec.factor_group) if rec.factor_group else None
    if group is not None and rec.owns_group and not _group_claimed_elsewhere(obj, rec.factor_group):
        active = obj.vertex_groups.active
        picked = None if active is None or active == group else active.name
        obj.vertex_groups.remove(group)
        if picked is not None:  # the user's choice, made while the display was on
            obj.vertex_groups.active_index = obj.vertex_groups[picked].index
        elif len(obj.vertex_groups) > rec.active_group >= 0:
            obj.vertex_groups.active_index = rec.active_group
    mod = stack.find_modifier(obj, rec.armature)
    if mod is not None and rec.preserve_volume is not None:
        mod.use_deform_preserve_volume = rec.preserve_volume
    obj.hybrid_skin.saved_state = ""


def _group_claimed_elsewhere(obj: bpy.types.Object, name: str) -> bool:
    """Another object that shares ``obj``'s mesh mixes by the group ``name`` (vertex groups live on the
    mesh): Remove on one of them must leave it to the other."""
    for other in bpy.data.objects:
        if other is obj or other.data != obj.data:
            continue
        rec = load(other)
        if rec is not None and rec.factor_group == name:
            return True
    return False


def _hide(obj: bpy.types.Object, rec: DisplayRecord, mod, mix) -> None:
    """The GPU display draws: Blender's deformation and drawing of the mesh are hidden in the viewport."""
    rec.hidden = [[*stack.modifier_ref(m), m.show_viewport] for m in (mod, mix)]
    mod.show_viewport = mix.show_viewport = False
    obj.display_type = "BOUNDS"
    rec.aside = ""


def _show(obj: bpy.types.Object, rec: DisplayRecord) -> None:
    """Blender draws again: what the GPU display hid comes back as the user had it."""
    for uid, name, value in rec.hidden:
        m = stack.find_modifier(obj, [uid, name])
        if m is not None:
            m.show_viewport = value
    if rec.hidden:
        obj.display_type = rec.display_type
    rec.hidden = []


# ------------------------------------------------------------------------------------------- apply
def apply(obj: bpy.types.Object) -> None:
    """Set the object up as its settings ask, from the user's own state (restoring first: idempotent).

    Linked objects and library overrides are left exactly as their library has them: their data is not
    the user's to change (Add refuses them too)."""
    if not is_local(obj):
        return
    # Modifiers hidden, added or set: not an edit of what a bind read. The factors are written after (a
    # bind may read the factor group: then the write is an edit like any other).
    with bind.own_edits([obj]):
        set_up = _apply(obj, readers.mesh_readers([obj]).get(obj.session_uid))
    if set_up:
        factor_group.refresh(obj)


def _apply(obj: bpy.types.Object, reader: str | None) -> bool:
    """:func:`apply` but the factors and the evaluations; True when the parts were set up."""
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
    # Always new ones: a group or modifier of the same name is the user's, never written over or removed;
    # Blender gives ours a free name, kept in the record.
    group = obj.vertex_groups.new(name=FACTOR_GROUP)  # appended (indices kept) and made active
    # Locked: Weight Paint and weight tools leave it alone (the add-on writes it), and a copy of it that
    # another object receives (Copy to Selected, Join) is told from a group of the user's of that name.
    group.lock_weight = True
    if rec.active_group >= 0:
        obj.vertex_groups.active_index = rec.active_group
    rec.factor_group = group.name
    mix = native.add_mix_modifier(obj, mod, MIX_MODIFIER, group.name)
    rec.mix = stack.modifier_ref(mix)
    _mirror(mod, mix)
    if settings.display == "GPU":
        _place_gpu(obj, rec, mod, mix, reader)
    store(obj, rec)
    return True


def _place_gpu(obj, rec: DisplayRecord, mod, mix, reader: str | None, depsgraph=None) -> None:
    """Hide Blender's deformation for the GPU display, or step aside and say why (once per reason). The
    factor group may lag while the display draws (see :mod:`.factors`): the handler's next
    :func:`.factors.follow` brings it up to date before Blender draws from it."""
    store(obj, rec)  # aside_reason reads the user's eye from the record
    reason = aside_reason(obj, mod, mix, reader, depsgraph)
    if reason is None:
        if not rec.gpu_draws:
            _hide(obj, rec, mod, mix)
        return
    code, sentence = reason
    if rec.gpu_draws:
        _show(obj, rec)
    if code in (REFUSED, TAIL, READ):  # a mode or a hidden modifier: the panel says it
        runtime.get().report_once(obj, HybridSkinError(sentence))
    rec.aside = code


# --------------------------------------------------------------------------------------------- sync
def sync(
    obj: bpy.types.Object, reader: str | None = None, depsgraph: bpy.types.Depsgraph | None = None
) -> None:
    """Keep ``obj``'s setup whole and its display right after any change Blender reported (the depsgraph
    handler calls this for objects it reports and every GPU display). Only settings change here; what they
    change is evaluated by Blender's second pass of the same update.

    * No record although enabled (an object appended from another file: append runs no load handler; a
      display taken down by a save): set up.
    * The followed Armature modifier is gone (applied to freeze a pose, Convert to Mesh, removed): Hybrid
      Skin comes off, exactly as Blender alone would leave the object, said once.
    * A part is gone or moved (the user deleted the added modifier or the factor group, a script reordered
      the stack): set up again, said once.
    * A copy carrying the record (Duplicate Linked) gets its own factor group (:func:`separate_copy`).
    * GPU display: hides or steps aside as :func:`aside_reason` says."""
    settings = obj.hybrid_skin
    if not is_local(obj):
        return
    rec = load(obj)
    if rec is None:
        if settings.enabled and not settings.bake_state and stack.find_armature_modifier(
            obj, stack.followed_modifier_name(obj)
        ):
            _apply(obj, reader)
        return
    if not settings.enabled or settings.bake_state:
        _restore(obj)
        return
    mod = stack.find_modifier(obj, rec.armature)
    if mod is None or mod.type != "ARMATURE":
        mix_gone = not rec.mix or stack.find_modifier(obj, rec.mix) is None
        converted = rec.gpu_draws and mix_gone and _freeze_converted(obj, depsgraph)
        _take_off(obj, converted)
        return
    if separate_copy(obj, rec):
        rec = load(obj)
    mix = stack.find_modifier(obj, rec.mix) if rec.mix else None
    group = obj.vertex_groups.get(rec.factor_group) if rec.factor_group else None
    if obj.mode == "OBJECT" and not _parts_in_place(obj, mod, mix, group):
        runtime.get().report_once(
            obj,
            HybridSkinError(
                f"'{obj.name}': Hybrid Skin's modifier '{MIX_MODIFIER}' or its vertex group "
                f"'{FACTOR_GROUP}' was removed or moved, so it is set up again (Remove Hybrid Skin takes "
                "it off)"
            ),
        )
        _apply(obj, reader)
        return
    if obj.mode == "EDIT":
        factor_group.note_mode(obj, rec)
    if mix is not None and not rec.gpu_draws:
        _mirror(mod, mix)
    if settings.display == "GPU" and mix is not None:
        _place_gpu(obj, rec, mod, mix, reader, depsgraph)
    else:
        if rec.gpu_draws:
            _show(obj, rec)
        rec.aside = ""
    store(obj, rec)


def _parts_in_place(obj, mod, mix, group) -> bool:
    """The added modifier exists right after the followed one and mixes by an existing factor group."""
    if mix is None or group is None or mix.type != "ARMATURE":
        return False
    modifiers = list(obj.modifiers)
    return modifiers.index(mix) == modifiers.index(mod) + 1 and mix.vertex_group == group.name


#: What the DQS part copies from the user's Armature modifier, at setup and whenever the user changes it.
MIRRORED = (
    "object",
    "use_vertex_groups",
    "use_bone_envelopes",
    "show_viewport",
    "show_render",
    "show_in_editmode",
    "show_on_cage",
)


def _mirror(mod: bpy.types.ArmatureModifier, mix: bpy.types.ArmatureModifier) -> None:
    """The DQS part follows the user's Armature modifier: its armature, what it binds to, its eyes."""
    for name in MIRRORED:
        value = getattr(mod, name)
        if getattr(mix, name) != value:
            setattr(mix, name, value)


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
            f"removed), so Hybrid Skin is off for it and its own modifier and vertex group are removed{kept}"
        ),
    )


def _freeze_converted(obj: bpy.types.Object, depsgraph: bpy.types.Depsgraph | None) -> bool:
    """Object ▸ Convert ▸ Mesh while the GPU preview drew: Blender converted its evaluation, in which the
    skinning was hidden, so the mesh now holds the skinning's input. Give it the pose the preview drew:
    the cached bind's influences and the pose now, skinned from the converted vertices (which are that
    input at this frame). The caller tells Convert by its mark: both Armature modifiers gone at once (a
    modifier the user deletes is one; Blender refuses to apply the hidden ones). True when posed."""
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


def separate_copy(obj: bpy.types.Object, rec: DisplayRecord) -> bool:
    """Give a linked duplicate made after Add (Alt+D: a copy of the object sharing its mesh, and carrying
    its record) a factor group of its own. Vertex groups live on the mesh, so both records named one group:
    each object's factors were written over by the other's. The object named in the record keeps the group
    (a copy has another name; else the first name); the others set up their own. True when ``obj`` was
    separated (its factors are then due)."""
    mesh = obj.data
    if mesh is None or mesh.users < 2 or not rec.factor_group:
        return False
    claimants = [obj]
    for other in bpy.data.objects:
        mine = load(other) if other is not obj and other.data == mesh else None
        if mine is not None and mine.factor_group == rec.factor_group:
            claimants.append(other)
    if len(claimants) == 1:
        return False
    owner = next((o for o in claimants if o.name == rec.object_name), min(claimants, key=lambda o: o.name))
    if owner == obj:
        return False
    rec.factor_group = ""  # the owner's: this copy's modifier, which mixed by it, goes; its own is set up
    store(obj, rec)
    _apply(obj, None)
    return True


# ------------------------------------------------------------------------------------ settings
def settings_changed(obj: bpy.types.Object) -> None:
    """Property update: set the display up again when it changed; refresh the factors."""
    settings = obj.hybrid_skin
    rig_state().draw_failures.pop(obj.session_uid, None)  # new settings: the GPU display tries again
    rec = load(obj)
    wanted = settings.enabled and not settings.bake_state
    if (rec is not None) != wanted:
        apply(obj)
        return
    if rec is None:
        return
    with bind.own_edits([obj]):
        sync(obj, readers.mesh_readers([obj]).get(obj.session_uid))
    factor_group.refresh(obj, only_if_changed=True)
