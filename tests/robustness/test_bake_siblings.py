"""Siblings of the lost-data faults: the user edits a bake's own output before Clear, bakes again, or
saves and reopens; Clear and Remove still take back exactly the bake, nothing of the user's."""

from __future__ import annotations

import bpy
import pytest

from tests.robustness.bake_scene import activate, rig, same_as, snapshot


def baked(obj) -> list[str]:
    key = obj.data.shape_keys
    return [] if key is None else [k for k in key.key_blocks.keys() if k.startswith("HS Bake")]


def test_clear_after_the_user_deleted_a_baked_key(addon):
    arm, obj = rig(keys=True)
    before = snapshot()
    bpy.ops.hybrid_skin.bake_deformation(frame_start=1, frame_end=12, frame_step=4)
    obj.shape_key_remove(obj.data.shape_keys.key_blocks[baked(obj)[1]])
    obj.active_shape_key_index = 0
    assert bpy.ops.hybrid_skin.clear_bake() == {"FINISHED"}
    same_as(before, what="after Clear Bake")


def test_clear_after_the_user_unassigned_the_bakes_action(addon):
    arm, obj = rig(keys=True)
    obj.data.shape_keys.key_blocks["Bulge"].driver_add("value").driver.expression = "0.5"
    before = snapshot()
    bpy.ops.hybrid_skin.bake_deformation(frame_start=1, frame_end=12, frame_step=4)
    obj.data.shape_keys.animation_data.action = None
    assert bpy.ops.hybrid_skin.clear_bake() == {"FINISHED"}
    same_as(before, what="after Clear Bake")


def test_a_second_bake_keeps_keyframes_added_after_the_first(addon):
    arm, obj = rig(keys=True)
    bpy.ops.hybrid_skin.bake_deformation(frame_start=1, frame_end=12, frame_step=4)
    bulge = obj.data.shape_keys.key_blocks["Bulge"]
    bulge.value = 0.7
    bulge.keyframe_insert("value", frame=5)
    bpy.ops.hybrid_skin.bake_deformation(frame_start=1, frame_end=12, frame_step=6)
    assert len(baked(obj)) == 2
    bpy.ops.hybrid_skin.remove()
    anim = obj.data.shape_keys.animation_data
    paths = [fc.data_path for fc in anim.action.fcurves] if hasattr(anim.action, "fcurves") else None
    if paths is None:  # slotted actions (Blender >= 4.4)
        from bpy_extras import anim_utils

        paths = [fc.data_path for fc in anim_utils.action_get_channelbag_for_slot(
            anim.action, anim.action_slot).fcurves]
    assert paths == ['key_blocks["Bulge"].value'] and not baked(obj)


def test_clear_after_save_and_reopen_keeps_the_drivers(addon, tmp_path):
    arm, obj = rig(keys=True)
    obj.data.shape_keys.key_blocks["Bulge"].driver_add("value").driver.expression = "0.3"
    before = snapshot()
    bpy.ops.hybrid_skin.bake_deformation(frame_start=1, frame_end=12, frame_step=4)
    bpy.ops.wm.save_as_mainfile(filepath=str(tmp_path / "baked.blend"))
    bpy.ops.wm.open_mainfile(filepath=str(tmp_path / "baked.blend"))
    obj = bpy.data.objects["Cylinder"]
    activate(obj)
    assert bpy.ops.hybrid_skin.clear_bake() == {"FINISHED"}
    same_as(before, what="after Clear Bake in the reopened file")


@pytest.mark.parametrize("display", ["EVALUATED", "GPU"])
def test_deleting_the_armature_modifier_takes_hybrid_skin_off(addon, capfd, display):
    """Issue 26 §3: with the Armature modifier gone, Hybrid Skin's own modifier would deform the mesh by
    itself. The update that reports the deletion takes Hybrid Skin off (its modifier and group too), as
    Blender alone would leave the object, and says so once."""
    arm, obj = rig(add=False)
    obj.modifiers.new("Smooth", "SMOOTH")
    bpy.ops.hybrid_skin.add(display=display)
    obj.modifiers.remove(obj.modifiers["Armature"])
    bpy.context.view_layer.update()
    assert [m.name for m in obj.modifiers] == ["Smooth"] and obj.modifiers["Smooth"].show_viewport
    assert obj.display_type == "TEXTURED" and not obj.vertex_groups.get("HybridSkin Factor")
    assert not obj.hybrid_skin.enabled and not obj.hybrid_skin.saved_state
    assert capfd.readouterr().out.count("no longer has the Armature modifier Hybrid Skin followed") == 1
