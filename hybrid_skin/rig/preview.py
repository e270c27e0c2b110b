"""When Blender's own stack draws an object that the GPU Preview could draw, and hiding that stack.

The GPU Preview (``skin/viewport.py``) draws the hybrid from the pose alone: while it draws, the object's
skinning modifiers (the user's Armature modifier and Hybrid Skin's parts) are hidden *in the viewport only*
and the object is shown as bounds. It steps aside — Blender's exact stack draws — whenever something needs
Blender's evaluation or its drawing (:func:`aside_reason`): a mode other than Object Mode, the Armature
modifier hidden by the user, a modifier after the stack, weights a modifier above changes, something that
reads the mesh (:mod:`.readers`), a bind that fails, or a viewport render (a playblast draws no callback).

Paint modes hide Hybrid Skin's parts whatever the display (:func:`hide_for_paint`): brushes place their
strokes through Blender's deform-only modifiers, so the user's Armature modifier alone (LBS) is shown
while painting, and strokes land where they are seen.

Which modifiers were hidden, and the user's own Show in Viewport of each, is in the record (``hidden``).
"""

from __future__ import annotations

import bpy

from . import checks, stack
from .record import DisplayRecord
from .state import rig_state

__all__ = [
    "HIDDEN",
    "PAINT",
    "PAINT_MODES",
    "READ",
    "REFUSED",
    "RENDER",
    "TAIL",
    "aside_reason",
    "gpu_refusal",
    "hide",
    "is_local",
    "show",
    "user_shown",
]

#: Why the GPU display steps aside besides a mode: the user hid the Armature modifier in the viewport.
HIDDEN = "HIDDEN"
#: ... a modifier after the stack (Blender draws the whole stack).
TAIL = "TAIL"
#: ... something reads the mesh (:mod:`.readers`).
READ = "READ"
#: ... the GPU display cannot show this object (:func:`gpu_refusal`) or failed to skin it.
REFUSED = "REFUSED"
#: ... a viewport render (playblast) is under way: it draws no add-on callback.
RENDER = "RENDER"
#: ``DisplayRecord.hidden_for`` of parts hidden while the object is painted.
PAINT = "PAINT"
#: Modes whose brushes reach the mesh through the deform-only modifiers at the top of the stack.
PAINT_MODES = frozenset({"WEIGHT_PAINT", "VERTEX_PAINT", "TEXTURE_PAINT", "SCULPT"})


def is_local(obj: bpy.types.Object) -> bool:
    return obj.library is None and obj.override_library is None and obj.data.library is None


def gpu_refusal(obj: bpy.types.Object) -> str | None:
    """Why the GPU display can never draw ``obj``, as one sentence, or None. It skins one Armature modifier
    from the weights on the mesh: a second Armature modifier would be left out, and weights a modifier
    above changes (at any frame) would have to be read back from Blender at every frame."""
    if not is_local(obj):
        return (
            f"'{obj.name}' is linked from a library: Blender shows its library's own deformation "
            "(make it local to use Hybrid Skin on it)"
        )
    armatures = [m for m in stack.user_modifiers(obj) if m.type == "ARMATURE"]
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
    rec: DisplayRecord,
    mod: bpy.types.Modifier,
    last: bpy.types.Modifier,
    reader: str | None,
    depsgraph: bpy.types.Depsgraph | None = None,
    rendering: bool = False,
) -> tuple[str, str] | None:
    """Why the GPU display lets Blender's exact stack draw ``obj`` now, as ``(code, sentence)``, or None
    when it may draw it. ``last``: the stack's last part (what follows it is the user's tail); ``reader``:
    what reads the mesh, if anything; ``depsgraph``: the evaluation just made, whose vertex count tells a
    modifier above that changes it (refused with the bind's sentence); ``rendering``: a viewport render."""
    if obj.mode != "OBJECT":
        return obj.mode, f"'{obj.name}' is in {obj.mode.replace('_', ' ').title()} Mode: Blender draws it"
    modifiers = list(obj.modifiers)
    tail = [m for m in modifiers[modifiers.index(last) + 1 :] if m.show_viewport]
    failure = rig_state().draw_failures.get(obj.session_uid)
    refusal = gpu_refusal(obj) or (failure[0] if failure else None)
    if refusal is None and depsgraph is not None and not tail:
        # With nothing after the skinning, Blender's evaluation has the vertex count the skinning gets.
        if len(obj.evaluated_get(depsgraph).data.vertices) != len(obj.data.vertices):
            refusal = checks.vertex_count_refusal(obj, mod)
    if refusal is not None:
        return REFUSED, refusal
    if not user_shown(obj, rec, mod):
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
    if rendering:
        return RENDER, f"A viewport render draws '{obj.name}' with Blender's own stack"
    return None


def user_shown(obj: bpy.types.Object, rec: DisplayRecord, mod: bpy.types.Modifier) -> bool:
    """The user's own Show in Viewport of ``mod`` (the record holds it while a display hides it)."""
    for uid, name, value in rec.hidden:
        if stack.find_modifier(obj, [uid, name]) == mod:
            return bool(value)
    return mod.show_viewport


def hide(obj: bpy.types.Object, rec: DisplayRecord, modifiers: list, purpose: str = "") -> None:
    """Hide ``modifiers`` in the viewport, keeping the user's values in the record; the GPU display
    (``purpose`` "") also shows the object as bounds while it draws."""
    rec.hidden = [[*stack.modifier_ref(m), m.show_viewport] for m in modifiers]
    rec.hidden_for = purpose
    for m in modifiers:
        m.show_viewport = False
    if not purpose:
        obj.display_type = "BOUNDS"
    rec.aside = ""


def show(obj: bpy.types.Object, rec: DisplayRecord) -> None:
    """What :func:`hide` hid comes back as the user had it."""
    for uid, name, value in rec.hidden:
        m = stack.find_modifier(obj, [uid, name])
        if m is not None:
            m.show_viewport = value
    if rec.hidden and not rec.hidden_for:
        obj.display_type = rec.display_type
    rec.hidden = []
    rec.hidden_for = ""
