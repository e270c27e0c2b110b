"""factor_mode = 'AUTO' through the installed add-on: factors follow the pose; positions equal Blender's."""

from __future__ import annotations

import bpy
import numpy as np

from tests.support.scenes import (
    bbox_diagonal,
    make_chain_armature,
    make_cylinder,
    native_positions,
    pose_bone,
    skin_to_chain,
)


def test_auto_factor_bend_joint_vs_twist_joint(addon):
    arm = make_chain_armature("Rig", [1.0, 1.0, 1.0])
    cyl = make_cylinder("Limb", height=3.0, rings=36)
    skin_to_chain(cyl, arm, blend=0.4)
    pose_bone(arm, "Bone1", (120, 0, 0))  # bend at the joint z = 1
    pose_bone(arm, "Bone2", (0, 170, 0))  # twist about the bone axis at z = 2 (bone Y = world Z)
    bpy.context.view_layer.objects.active = cyl
    bpy.ops.hybrid_skin.add()
    cyl.hybrid_skin.factor_mode = "AUTO"

    from bl_ext.user_default.hybrid_skin.skin import bind

    dg = bpy.context.evaluated_depsgraph_get()
    factors = bind.cached_bind(cyl, dg).posed(dg).auto_factors()
    z = np.array([v.co.z for v in cyl.data.vertices])
    bend_zone, twist_zone = np.abs(z - 1.0) < 0.15, np.abs(z - 2.0) < 0.15
    assert 0.4 <= factors[bend_zone].min() and factors[bend_zone].max() <= 0.7
    assert factors[twist_zone].min() >= 0.85

    ours = addon.api.deformed_positions(cyl)  # the object's own setting: AUTO
    ref = native_positions(cyl, np.round(factors, 6))
    assert np.abs(ours - ref).max() <= 1e-5 * bbox_diagonal(ref)
    fixed = addon.api.deformed_positions(cyl, 0.5)
    assert np.abs(ours - fixed).max() > 1e-3  # AUTO really differs from a global factor


def test_evaluated_display_follows_auto_factors_per_frame(addon):
    arm = make_chain_armature("Rig", [1.0, 1.0])
    cyl = make_cylinder("Limb")
    skin_to_chain(cyl, arm)
    pb = arm.pose.bones["Bone1"]
    pb.rotation_mode = "XYZ"
    for frame, angles in ((1, (100, 0, 0)), (10, (0, 170, 0))):  # bend, then twist
        pb.rotation_euler = [np.radians(a) for a in angles]
        pb.keyframe_insert("rotation_euler", frame=frame)
    bpy.context.view_layer.objects.active = cyl
    bpy.ops.hybrid_skin.add()
    cyl.hybrid_skin.factor_mode = "AUTO"
    cyl.hybrid_skin.display = "EVALUATED"
    from tests.support.scenes import evaluated_positions

    for frame in (1, 10):
        bpy.context.scene.frame_set(frame)
        shown = evaluated_positions(cyl)
        ours = addon.api.deformed_positions(cyl)
        # Factors are stored at 1/1024 steps: error ≤ half a step × |LBS − DQS|.
        gap = np.abs(addon.api.deformed_positions(cyl, 0.0) - addon.api.deformed_positions(cyl, 1.0)).max()
        assert np.abs(shown - ours).max() <= 0.5 / 1024 * gap + 1e-5 * bbox_diagonal(ours)
