"""Issue 12 §6: a bone scaled to 0 (game rigs hide parts that way) gave NaN at f > 0 in the API, the GPU
display, Auto and a Current Frame bake. Blender stays finite; every path must give Blender's numbers
(Armature modifier = LBS, Preserve Volume = DQS, the two-modifier mix for the hybrid)."""

from __future__ import annotations

import bpy
import numpy as np
import pytest

from tests.robustness.helpers import assert_close, gpu_positions, modules, three_bone_cylinder
from tests.support.scenes import evaluated_positions, native_positions, pose_bone

CASES = {
    "middle bone (and its child) to 0": ("Bone1", (40, 0, 0), (0, 0, 0)),
    "root bone to 0": ("Bone0", (20, 0, 0), (0, 0, 0)),
    "last bone to 0, turned": ("Bone2", (0, 90, 0), (0, 0, 0)),
    "one axis to 0": ("Bone1", (40, 0, 0), (0, 1, 1)),
}


@pytest.fixture(params=list(CASES), ids=list(CASES))
def collapsed(request, addon):
    arm, cyl = three_bone_cylinder()
    bone, rotation, scale = CASES[request.param]
    pose_bone(arm, bone, rotation, scale=scale)
    return arm, cyl


@pytest.mark.parametrize("factor", [0.5, 1.0])
def test_api_equals_blender_with_a_bone_scaled_to_zero(addon, collapsed, factor):
    arm, cyl = collapsed
    hs = modules(addon)
    ours = hs.api.deformed_positions(cyl, deform_factor=factor)
    assert_close(ours, native_positions(cyl, factor), f"f={factor}")
    assert np.isfinite(hs.api.deformed_normals(cyl, deform_factor=factor)).all()


def test_auto_factor_is_finite_and_equals_blenders_mix_with_a_bone_scaled_to_zero(addon, collapsed):
    arm, cyl = collapsed
    hs = modules(addon)
    assert bpy.ops.hybrid_skin.add() == {"FINISHED"}
    cyl.hybrid_skin.factor_mode = "AUTO"
    depsgraph = bpy.context.evaluated_depsgraph_get()
    factors = hs.bind.cached_bind(cyl, depsgraph).posed(depsgraph).auto_factors()
    assert np.isfinite(factors).all() and factors.min() >= 0.0 and factors.max() <= 1.0
    ours = hs.api.deformed_positions(cyl)
    assert_close(ours, native_positions(cyl, np.round(factors, 6)), "auto")


def test_current_frame_bake_writes_blenders_result_with_a_bone_scaled_to_zero(addon, collapsed):
    arm, cyl = collapsed
    cyl.hybrid_skin.deform_factor = 0.7
    expected = native_positions(cyl, 0.7)
    assert bpy.ops.hybrid_skin.add() == {"FINISHED"}
    assert bpy.ops.hybrid_skin.bake_deformation(target="CURRENT") == {"FINISHED"}
    keys = cyl.data.shape_keys.key_blocks
    baked = np.array([p.co[:] for p in keys[-1].points], dtype=np.float32)
    assert np.isfinite(baked).all(), "the baked shape key holds NaN"
    assert_close(evaluated_positions(cyl), expected, "baked mesh")


@pytest.mark.gpu
def test_gpu_display_draws_blenders_result_with_a_bone_scaled_to_zero(addon, gpu_context, collapsed):
    arm, cyl = collapsed
    hs = modules(addon)
    assert bpy.ops.hybrid_skin.add() == {"FINISHED"}
    cyl.hybrid_skin.deform_factor = 1.0
    expected = native_positions(cyl, 1.0)
    assert_close(gpu_positions(hs, cyl), expected, "GPU display")
