"""The GPU Preview through an edit of the rig in its Edit Mode: it steps aside meanwhile (Blender renames
the pose channel at once and the bone only when Edit Mode is left, so the rig cannot be read), and draws
again once Edit Mode is left (it stayed aside until the object's stack next changed)."""

from __future__ import annotations

import importlib

import bpy
import numpy as np
import pytest

from tests.robustness.helpers import assert_close, gpu_positions, modules, three_bone_cylinder
from tests.support.scenes import native_positions, pose_bone


@pytest.mark.gpu
def test_the_gpu_preview_draws_again_after_bones_renamed_in_edit_mode(addon, gpu_context, capfd):
    hs = modules(addon)
    state = importlib.import_module(f"{addon.__name__}.rig.state")
    arm, obj = three_bone_cylinder()
    pose_bone(arm, "Bone1", (40, 0, 30))
    assert bpy.ops.hybrid_skin.add(display="GPU") == {"FINISHED"}
    obj.hybrid_skin.deform_factor = 0.5
    bpy.context.view_layer.update()
    bpy.context.view_layer.objects.active = arm
    bpy.ops.object.mode_set(mode="EDIT")
    arm.data.edit_bones["Bone1"].name = "Forearm"
    bpy.context.view_layer.update()
    depsgraph = bpy.context.evaluated_depsgraph_get()
    hs.viewport.draw_objects([obj], depsgraph, np.identity(4), bpy.context.view_layer)  # a redraw meanwhile
    bpy.ops.object.mode_set(mode="OBJECT")
    bpy.context.view_layer.objects.active = obj
    bpy.context.view_layer.update()
    assert obj.session_uid not in state.rig_state().draw_failures, "still stepped aside after Edit Mode"
    assert_close(gpu_positions(hs, obj), native_positions(obj, 0.5), "the GPU Preview after Edit Mode")
    assert "Traceback" not in capfd.readouterr().err
