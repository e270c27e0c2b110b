"""Loading the third-party assets in assets/ the way a user would (Blender's bundled glTF importer)."""

from __future__ import annotations

from pathlib import Path

import bpy


def import_gltf(path: Path) -> tuple[bpy.types.Object, list[bpy.types.Object]]:
    """Import a glTF file; return its armature and the meshes it deforms through Armature modifiers."""
    before = set(bpy.data.objects)
    result = bpy.ops.import_scene.gltf(filepath=str(path))
    assert result == {"FINISHED"}, f"glTF import of {path} failed"
    new = [o for o in bpy.data.objects if o not in before]
    arm = next(o for o in new if o.type == "ARMATURE")
    skinned = [o for o in new if o.type == "MESH" and any(m.type == "ARMATURE" for m in o.modifiers)]
    return arm, skinned


def _data_paths(action: bpy.types.Action) -> list[str]:
    """Every F-Curve data path of ``action``: layered (Blender ≥ 4.4) or legacy ``action.fcurves``."""
    layers = getattr(action, "layers", None)
    if layers:
        return [
            fc.data_path
            for layer in layers
            for strip in layer.strips
            for bag in strip.channelbags
            for fc in bag.fcurves
        ]
    return [fc.data_path for fc in getattr(action, "fcurves", ())]


def armature_actions() -> list[bpy.types.Action]:
    """The actions that animate pose bones, in ``bpy.data.actions`` order.

    A glTF file's animations are one action each in Blender ≥ 4.4 (slotted: armature and shape keys
    in one). Blender 4.2's importer makes one action per animated object instead: ``Punch_GLTF_created_0``
    for the armature plus ``Punch_mesh_2``… for shape keys, so counting ``bpy.data.actions`` would not do.
    """
    return [a for a in bpy.data.actions if any(p.startswith("pose.bones[") for p in _data_paths(a))]


def clip_action(name: str) -> bpy.types.Action:
    """The armature action of the glTF animation ``name``: ``name`` itself, or ``name_…`` (Blender 4.2)."""
    found = [a for a in armature_actions() if a.name == name]
    found = found or [a for a in armature_actions() if a.name.startswith(name + "_")]
    assert len(found) == 1, f"no single armature action for {name!r}: {[a.name for a in found]}"
    return found[0]


def play(arm: bpy.types.Object, action: bpy.types.Action, frame: float) -> None:
    """Assign ``action`` to the armature (with its object slot in Blender ≥ 4.4) and go to ``frame``."""
    arm.animation_data_create()
    arm.animation_data.action = action
    slots = getattr(action, "slots", None)
    if slots is not None:
        arm.animation_data.action_slot = next(s for s in slots if s.target_id_type == "OBJECT")
    scene = bpy.context.scene
    scene.frame_set(int(frame), subframe=frame - int(frame))


def give_hybrid_skin(meshes: list[bpy.types.Object], active: bpy.types.Object | None = None) -> None:
    """Add Hybrid Skin to each of ``meshes`` as a user does (its default factor, 0.5), then make ``active``
    the active object again. A bake of a mesh without Hybrid Skin stores what Blender shows (LBS): scenes
    that test the hybrid give it Hybrid Skin first."""
    layer = bpy.context.view_layer
    for obj in meshes:
        layer.objects.active = obj
        assert bpy.ops.hybrid_skin.add() == {"FINISHED"}, obj.name
    layer.objects.active = active
