"""Issue 26 §2: every display follows what Blender animates, however the frame is set.

* The GPU display draws a keyframed or driven Deform Factor (and a keyed factor mode) at its value at each
  draw, not the first value it saw (it was 5% of the mesh size off at frame 9 of a 0 → 1 key).
* The Evaluated display follows a keyed factor and Auto also when a script sets ``scene.frame_current``
  and calls ``view_layer.update()`` (no frame-change handler runs then), in that same update: Blender
  evaluates the copy of the factor's animation on the Mix modifier, and Auto from the pose (on Blender
  before 5.2, the factors the add-on writes at each evaluation).
* A keyed Auto Profile reaches the Evaluated display as a keyed factor does.
* A Current Frame bake at a sub-frame stores that sub-frame.

Truth: the API (``deformed_positions`` at the object's animated settings, itself equal to Blender's mix,
see ``tests/api``) and Blender's own mix at the factor the animation gives.
"""

from __future__ import annotations

import bpy
import numpy as np
import pytest

from tests.robustness.bake_scene import rig
from tests.robustness.helpers import assert_close, gpu_positions, modules
from tests.support.scenes import evaluated_positions, native_positions


def _keyed_factor(obj, keys=((1, 0.0), (11, 1.0))) -> None:
    settings = obj.hybrid_skin
    for frame, value in keys:
        settings.deform_factor = value
        obj.keyframe_insert("hybrid_skin.deform_factor", frame=frame)


def _driven_factor(obj) -> None:
    curve = obj.driver_add("hybrid_skin.deform_factor")
    curve.driver.type = "SCRIPTED"
    curve.driver.expression = "min(max((frame - 1) / 10, 0), 1)"


def _auto_truth(hs, obj) -> np.ndarray:
    """Blender's own mix at the numpy core's Auto factors of this pose."""
    dg = bpy.context.evaluated_depsgraph_get()
    factors = hs.bind.cached_bind(obj, dg).posed(dg).auto_factors()
    return native_positions(obj, factors)


def _agrees_with_the_api(addon, hs, obj, shown, what: str) -> None:
    assert_close(shown, addon.api.deformed_positions(obj), what)


def _drawn(hs, obj) -> np.ndarray:
    """What the draw callback draws now: the object's skin as the callback gets it, posed, read back."""
    return gpu_positions(hs, obj)


@pytest.mark.gpu
@pytest.mark.parametrize("animate", [_keyed_factor, _driven_factor], ids=["keyframed", "driven"])
def test_the_gpu_display_draws_an_animated_factor(addon, gpu_context, animate):
    hs = modules(addon)
    arm, obj = rig(display="GPU")
    animate(obj)
    scene = bpy.context.scene
    scene.frame_set(1)
    first = _drawn(hs, obj)  # the display has seen the first value
    for frame in (9, 4, 9):
        scene.frame_set(frame)
        value = obj.hybrid_skin.deform_factor
        assert 0.2 < value < 0.95, f"the factor is animated (frame {frame}: {value})"
        assert hs.setup.gpu_draws(obj)
        drawn = _drawn(hs, obj)
        what = f"GPU display at frame {frame} (factor {value:.2f})"
        assert_close(drawn, native_positions(obj, value), what)
    assert np.abs(drawn - first).max() > 1e-2, "the factor must matter (or this test is void)"


@pytest.mark.gpu
def test_the_gpu_display_draws_a_keyed_factor_mode(addon, gpu_context):
    hs = modules(addon)
    arm, obj = rig(display="GPU")
    settings = obj.hybrid_skin
    for frame, mode in ((1, "GLOBAL"), (6, "AUTO")):
        settings.factor_mode = mode
        obj.keyframe_insert("hybrid_skin.factor_mode", frame=frame)
    scene = bpy.context.scene
    scene.frame_set(5)
    _drawn(hs, obj)
    scene.frame_set(8)
    assert settings.factor_mode == "AUTO"
    assert_close(_drawn(hs, obj), addon.api.deformed_positions(obj), "GPU display after the mode key")


@pytest.mark.parametrize("mode", ["GLOBAL", "AUTO"])
def test_a_script_setting_frame_current_sees_the_evaluated_display_follow(addon, mode):
    """``scene.frame_current = f`` + ``view_layer.update()`` (pipeline tools do this) runs no frame-change
    handler: the depsgraph handler writes the factor group and Blender's second pass shows it."""
    hs = modules(addon)
    arm, obj = rig()
    obj.hybrid_skin.factor_mode = mode
    _keyed_factor(obj)
    scene = bpy.context.scene
    scene.frame_set(1)
    seen = set()
    for frame in (9, 3, 7):
        scene.frame_current = frame
        bpy.context.view_layer.update()
        shown = evaluated_positions(obj)
        value = obj.hybrid_skin.deform_factor
        seen.add(round(value, 3))
        expected = _auto_truth(hs, obj) if mode == "AUTO" else native_positions(obj, value)
        assert_close(shown, expected, f"{mode}, frame {frame} set by a script")
        _agrees_with_the_api(addon, hs, obj, shown, f"{mode}, frame {frame}: the API agrees")
    assert len(seen) == 3, "the factor is animated (or this test is void)"


def test_the_evaluated_display_follows_a_keyed_auto_profile(addon):
    """A keyed Auto Profile (Round, then Per Joint at frame 5) reaches the Mix modifier like a keyed factor:
    the Evaluated display shows the profile of the frame, in both directions (it kept the last profile set
    in the panel: 2.4e-4 of the diagonal off at frame 2 on Blender 5.2)."""
    hs = modules(addon)
    arm, obj = rig()
    settings = obj.hybrid_skin
    settings.factor_mode = "AUTO"
    for frame, profile in ((1, "ROUND"), (5, "JOINT")):
        settings.auto_profile = profile
        obj.keyframe_insert("hybrid_skin.auto_profile", frame=frame)
    scene = bpy.context.scene
    shown_by_profile = {}
    for frame in (2, 6, 9, 3):
        scene.frame_set(frame)
        shown = evaluated_positions(obj)
        assert_close(shown, _auto_truth(hs, obj), f"frame {frame}, profile {settings.auto_profile}")
        _agrees_with_the_api(addon, hs, obj, shown, f"frame {frame}: the API agrees")
        shown_by_profile[(frame, settings.auto_profile)] = shown
    assert set(p for _f, p in shown_by_profile) == {"ROUND", "JOINT"}
    round_3, joint_3 = shown_by_profile[(3, "ROUND")], native_positions(obj, _joint_factors(hs, obj))
    assert np.abs(round_3 - joint_3).max() > 1e-3, "the profiles differ at frame 3 (or this test is void)"


def _joint_factors(hs, obj) -> np.ndarray:
    """The core's Auto 0.1 (Per Joint) factors of this pose."""
    dg = bpy.context.evaluated_depsgraph_get()
    return hs.bind.cached_bind(obj, dg).posed(dg).auto_factors("JOINT")


def test_posing_a_bone_updates_auto_factors_of_the_evaluated_display(addon):
    """A bone rotated by hand (or a script) changes Auto's factors without a frame change."""
    hs = modules(addon)
    arm, obj = rig()
    obj.hybrid_skin.factor_mode = "AUTO"
    bpy.context.scene.frame_set(6)
    arm.animation_data_clear()
    bone = arm.pose.bones["Bone1"]
    bone.rotation_euler = (0.0, 0.0, 2.5)  # a twist: Auto goes towards DQS
    bpy.context.view_layer.update()
    shown = evaluated_positions(obj)
    assert_close(shown, _auto_truth(hs, obj), "after posing by hand")
    _agrees_with_the_api(addon, hs, obj, shown, "after posing by hand: the API agrees")


def test_a_current_frame_bake_at_a_sub_frame_stores_that_sub_frame(addon):
    arm, obj = rig()
    scene = bpy.context.scene
    scene.frame_set(6, subframe=0.5)
    expected = addon.api.deformed_positions(obj)
    at_six = native_positions(obj, 0.6)
    scene.frame_set(6)
    assert np.abs(native_positions(obj, 0.6) - expected).max() > 1e-3, "the half frame must differ (or void)"
    scene.frame_set(6, subframe=0.5)
    assert bpy.ops.hybrid_skin.bake_deformation(target="CURRENT") == {"FINISHED"}
    assert scene.frame_current == 6 and abs(scene.frame_subframe - 0.5) < 1e-6
    assert_close(evaluated_positions(obj), expected, "Current Frame baked at 6.5")
    assert_close(at_six, expected, "Blender's own mix at 6.5")
