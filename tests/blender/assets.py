"""Loading the shared third-party assets the way a user would (Blender's bundled glTF importer)."""

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


def play(arm: bpy.types.Object, action: bpy.types.Action, frame: float) -> None:
    """Assign ``action`` to the armature (with its object slot in Blender ≥ 4.4) and go to ``frame``."""
    arm.animation_data_create()
    arm.animation_data.action = action
    slots = getattr(action, "slots", None)
    if slots is not None:
        arm.animation_data.action_slot = next(s for s in slots if s.target_id_type == "OBJECT")
    scene = bpy.context.scene
    scene.frame_set(int(frame), subframe=frame - int(frame))
