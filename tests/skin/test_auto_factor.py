"""factor_mode = 'AUTO' through the installed add-on: factors follow the pose and the object's Auto profile;
positions equal Blender's own deformation with the factors written as the Preserve Volume modifier's group."""

from __future__ import annotations

import importlib

import bpy
import numpy as np
import pytest

from tests.support.scenes import (
    bbox_diagonal,
    evaluated_positions,
    make_chain_armature,
    make_cylinder,
    native_positions,
    pose_bone,
    skin_to_chain,
)

PROFILES = ("ROUND", "KEEP_VOLUME", "JOINT")


def bent_then_twisted(blend: float = 0.4):
    """Three bones along Z, bent 120° at z = 1, twisted 170° at z = 2 (bone Y = world Z); Hybrid Skin on."""
    arm = make_chain_armature("Rig", [1.0, 1.0, 1.0])
    cyl = make_cylinder("Limb", height=3.0, rings=36)
    skin_to_chain(cyl, arm, blend=blend)
    pose_bone(arm, "Bone1", (120, 0, 0))
    pose_bone(arm, "Bone2", (0, 170, 0))
    bpy.context.view_layer.objects.active = cyl
    bpy.ops.hybrid_skin.add()
    return arm, cyl


def posed_bind(addon, obj):
    bind = importlib.import_module(addon.__name__ + ".rig.bind")
    dg = bpy.context.evaluated_depsgraph_get()
    return bind.cached_bind(obj, dg).posed(dg)


def test_auto_is_round_by_default_and_every_profile_equals_blender(addon):
    _arm, cyl = bent_then_twisted()
    settings = cyl.hybrid_skin
    assert settings.auto_profile == "ROUND" and settings.auto_profile_stored == -1  # nothing chosen yet
    settings.factor_mode = "AUTO"
    assert settings.auto_profile == "ROUND" and settings.auto_profile_stored == 0  # stamped: saved with it
    z = np.array([v.co.z for v in cyl.data.vertices])
    bend_zone, twist_zone = np.abs(z - 1.0) < 0.2, np.abs(z - 2.0) < 0.2
    for profile in PROFILES:
        settings.auto_profile = profile
        factors = posed_bind(addon, cyl).auto_factors()
        np.testing.assert_array_equal(factors, posed_bind(addon, cyl).auto_factors(profile))
        ours = addon.api.deformed_positions(cyl)  # the object's own setting: Auto with this profile
        ref = native_positions(cyl, np.round(factors, 6))  # Blender's LBS + Preserve Volume mix
        assert np.abs(ours - ref).max() <= 1e-5 * bbox_diagonal(ref), profile
        if profile == "JOINT":  # Auto 0.1: 0.55 at a bend, near 1 at a twist, uniform across each joint
            assert 0.4 <= factors[bend_zone].min() and factors[bend_zone].max() <= 0.7
            assert factors[twist_zone].min() >= 0.85
        else:  # round: DQS at the bent joint, falling along the limb; a pure twist is DQS exactly
            assert factors[bend_zone].max() == pytest.approx(1.0, abs=1e-3)
            assert np.ptp(factors[bend_zone]) > 0.15
            np.testing.assert_array_equal(factors[twist_zone], 1.0)
    fixed = addon.api.deformed_positions(cyl, 0.5)
    assert np.abs(addon.api.deformed_positions(cyl) - fixed).max() > 1e-3  # Auto really differs from 0.5


def test_a_profile_is_only_stamped_when_auto_is_chosen(addon):
    """An object reads "JOINT" only when it is in Auto with no profile stored: what a file saved before
    profiles existed holds. Choosing Auto (UI or script) stores the default, so new files never read it."""
    _arm, cyl = bent_then_twisted()
    settings = cyl.hybrid_skin
    settings.factor_mode = "VERTEX_GROUP"
    assert settings.auto_profile_stored == -1
    settings.auto_profile_stored = -1
    settings.factor_mode = "AUTO"
    assert settings.auto_profile == "ROUND"
    settings.auto_profile = "KEEP_VOLUME"
    settings.factor_mode = "GLOBAL"
    settings.factor_mode = "AUTO"
    assert settings.auto_profile == "KEEP_VOLUME"  # a choice survives switching modes
    settings.auto_profile_stored = -1  # as an old file has it: in Auto, no profile stored
    assert settings.auto_profile == "JOINT"


@pytest.mark.parametrize("profile", PROFILES)
def test_evaluated_display_follows_auto_factors_per_frame(addon, profile):
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
    cyl.hybrid_skin.auto_profile = profile
    cyl.hybrid_skin.display = "EVALUATED"
    for frame in (1, 10):
        bpy.context.scene.frame_set(frame)
        shown = evaluated_positions(cyl)
        ours = addon.api.deformed_positions(cyl)
        # Factors are stored at 1/1024 steps: error ≤ half a step × |LBS − DQS|.
        gap = np.abs(addon.api.deformed_positions(cyl, 0.0) - addon.api.deformed_positions(cyl, 1.0)).max()
        assert np.abs(shown - ours).max() <= 0.5 / 1024 * gap + 1e-5 * bbox_diagonal(ours)
        assert gap > 1e-2  # LBS and DQS differ here: the comparison can see the factor


def test_changing_the_profile_updates_the_evaluated_display(addon):
    _arm, cyl = bent_then_twisted(blend=0.6)
    settings = cyl.hybrid_skin
    settings.factor_mode = "AUTO"
    settings.display = "EVALUATED"
    before = evaluated_positions(cyl)
    settings.auto_profile = "JOINT"  # the property update rewrites the factor group
    after = evaluated_positions(cyl)
    np.testing.assert_allclose(after, addon.api.deformed_positions(cyl), atol=1e-3 * bbox_diagonal(after))
    assert np.abs(after - before).max() > 1e-2
