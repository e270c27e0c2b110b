"""The modifiers of Blender's own hybrid on one object: added, found, kept in step with the user's Armature
modifier, and removed. The one owner of those modifiers (what they evaluate: :mod:`.trees.stack_trees`)::

    HybridSkin Rest  →  <your Armature: LBS>  →  HybridSkin Keep LBS  →  HybridSkin DQS  →  HybridSkin Mix

Modifiers are recorded as ``[persistent_uid, name]`` refs (:func:`.stack.modifier_ref`) by role in the
object's :class:`.record.DisplayRecord`: a rename keeps them found, and nothing of the user's of the same
name is ever taken for one of ours (Blender gives ours a free name, ``.001`` ...).
"""

from __future__ import annotations

import bpy

from .. import bridge
from . import stack
from .trees import stack_trees
from .trees.stack_trees import MIX_INPUTS

__all__ = ["DQS", "KEEP", "MIX", "REST", "ROLES", "add", "find", "in_place", "mirror", "remove", "set_inputs"]

REST, KEEP, DQS, MIX = "rest", "keep", "dqs", "mix"
#: The roles in stack order around the user's Armature modifier (which sits between REST and KEEP).
ROLES = (REST, KEEP, DQS, MIX)
NAMES, _KIND = stack.PART_NAMES, stack.PART_KINDS
#: What every part copies from the user's Armature modifier: its eyes (the GPU preview's hiding aside).
EYES = ("show_viewport", "show_render", "show_in_editmode")
#: What the DQS part also copies: what it deforms by and with, the mask included.
DEFORMS = ("object", "use_vertex_groups", "use_bone_envelopes", "vertex_group", "invert_vertex_group")


def find(obj: bpy.types.Object, refs: dict) -> dict[str, bpy.types.Modifier | None]:
    """Role → the recorded part (None when gone or no longer of its kind)."""
    out = {}
    for role in ROLES:
        ref = refs.get(role)
        mod = stack.find_modifier(obj, ref) if ref else None
        out[role] = mod if mod is not None and mod.type == _KIND[role] else None
    return out


def in_place(obj: bpy.types.Object, mod: bpy.types.Modifier, found: dict) -> bool:
    """Every part exists and they sit around ``mod`` in stack order, with nothing in between."""
    if any(found[role] is None for role in ROLES):
        return False
    modifiers = list(obj.modifiers)
    at = modifiers.index(mod)
    expected = [found[REST], mod, found[KEEP], found[DQS], found[MIX]]
    return at >= 1 and modifiers[at - 1 : at + 4] == expected and found[MIX].node_group is not None


def add(obj: bpy.types.Object, mod: bpy.types.ArmatureModifier, mix_tree: bpy.types.NodeTree) -> dict:
    """Put the parts around the user's Armature modifier ``mod``; returns role → ref."""
    made = {}
    for role in ROLES:
        part = obj.modifiers.new(NAMES[role], _KIND[role])  # always new: one of that name may be the user's
        if role == REST:
            part.node_group = stack_trees.shared_tree(stack_trees.REST_TREE)
        elif role == KEEP:
            part.node_group = stack_trees.shared_tree(stack_trees.KEEP_TREE)
        elif role == MIX:
            part.node_group = mix_tree
        else:
            part.use_deform_preserve_volume = True
        made[role] = part
    order = [made[REST], mod, made[KEEP], made[DQS], made[MIX]]
    start = list(obj.modifiers).index(mod)
    for offset, part in enumerate(order):
        obj.modifiers.move(list(obj.modifiers).index(part), start + offset)
    for part in made.values():
        part.show_expanded = False  # the user's own modifiers stay the ones in view
    mirror(mod, made)
    return {role: stack.modifier_ref(part) for role, part in made.items()}


def mirror(mod: bpy.types.ArmatureModifier, found: dict, eyes: bool = True) -> None:
    """The parts follow the user's Armature modifier: the DQS part deforms by what it deforms by (its
    mask too, so that the mix of the two masked results is Blender's own masked mix), and all of them
    show where it shows (``eyes``; not while a display or a paint mode hides them: what they show then
    is the display's). Only changed values are written."""
    for role, part in found.items():
        if part is None:
            continue
        names = (EYES if eyes else ()) + (DEFORMS if role == DQS else ())
        for name in names:
            value = getattr(mod, name)
            if getattr(part, name) != value:
                setattr(part, name, value)


def set_inputs(obj: bpy.types.Object, mix: bpy.types.NodesModifier, arm: bpy.types.Object | None) -> None:
    """The Mix modifier's inputs from the object's settings (the numbers of their enum items)."""
    settings = obj.hybrid_skin
    bridge.set_modifier_input(mix, MIX_INPUTS.deform_factor, float(settings.deform_factor))
    bridge.set_modifier_input(mix, MIX_INPUTS.mode, _item_number(settings, "factor_mode"))
    bridge.set_modifier_input(mix, MIX_INPUTS.group, settings.factor_vertex_group)
    bridge.set_modifier_input(mix, MIX_INPUTS.profile, _item_number(settings, "auto_profile"))
    bridge.set_modifier_input(mix, MIX_INPUTS.armature, arm)


def _item_number(settings, prop: str) -> int:
    """The stored number of an enum setting's current item (what a mirrored F-Curve of it holds)."""
    items = settings.bl_rna.properties[prop].enum_items
    return int(items[getattr(settings, prop)].value)


def remove(obj: bpy.types.Object, refs: dict) -> None:
    """Take the recorded parts off (a modifier of the user's is never taken: only recorded refs)."""
    for part in find(obj, refs).values():
        if part is not None:
            obj.modifiers.remove(part)
