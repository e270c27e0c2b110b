"""Clear Bake and Remove take back exactly what a shape-key bake created, nothing of the user's.

Issue 12, lost data 1, 2 and 5: the user's shape-key drivers (keys with drivers but no action), keyframes
the user added after the bake (inside the action the bake created), and the active shape key.
"""

from __future__ import annotations

import bpy
import numpy as np
import pytest

from tests.robustness.bake_scene import diagonal, evaluated, rig, same_as, snapshot


def fcurves(key) -> dict:
    from bl_ext.user_default.hybrid_skin.rig.baked import fcurves as _fcurves

    curves = _fcurves(key)
    if curves is None:
        return {}
    return {fc.data_path: [tuple(p.co) for p in fc.keyframe_points] for fc in curves}


def baked(obj) -> list[str]:
    key = obj.data.shape_keys
    return [] if key is None else [k for k in key.key_blocks.keys() if k.startswith("HS Bake")]


def add_driver(obj, name="Bulge", expression="0.25"):
    fcurve = obj.data.shape_keys.key_blocks[name].driver_add("value")
    fcurve.driver.expression = expression
    return fcurve


def test_clear_keeps_the_users_drivers_when_the_keys_had_no_action(addon):
    """Lost data 1: drivers but no action; the bake creates the action, Clear must not clear the
    animation data whole."""
    arm, obj = rig(keys=True)
    add_driver(obj)
    assert obj.data.shape_keys.animation_data.action is None
    before = snapshot()
    assert bpy.ops.hybrid_skin.bake_deformation(frame_start=1, frame_end=12, frame_step=4) == {"FINISHED"}
    assert len(baked(obj)) == 3
    assert bpy.ops.hybrid_skin.clear_bake() == {"FINISHED"}
    anim = obj.data.shape_keys.animation_data
    assert anim is not None and len(anim.drivers) == 1 and anim.drivers[0].driver.expression == "0.25"
    assert anim.action is None and not baked(obj)
    same_as(before, what="after Clear Bake")


def test_remove_keeps_the_users_drivers(addon):
    arm, obj = rig(keys=True)
    add_driver(obj, expression="frame / 100")
    bpy.ops.hybrid_skin.remove()
    before = snapshot()
    bpy.ops.hybrid_skin.add()
    bpy.ops.hybrid_skin.bake_deformation(frame_start=1, frame_end=6)
    assert bpy.ops.hybrid_skin.remove() == {"FINISHED"}
    assert obj.data.shape_keys.animation_data.drivers[0].driver.expression == "frame / 100"
    same_as(before, what="after Remove of a baked object")


def test_clear_keeps_keyframes_the_user_added_after_the_bake(addon):
    """Lost data 2: the user keys their own shape key after the bake, into the action the bake made."""
    arm, obj = rig(keys=True)
    key = obj.data.shape_keys
    assert key.animation_data is None
    bpy.ops.hybrid_skin.bake_deformation(frame_start=1, frame_end=12, frame_step=3)
    action = key.animation_data.action
    bulge = key.key_blocks["Bulge"]
    for frame, value in ((2, 0.1), (9, 0.9)):
        bulge.value = value
        bulge.keyframe_insert("value", frame=frame)
    assert bpy.ops.hybrid_skin.clear_bake() == {"FINISHED"}
    assert key.animation_data is not None and key.animation_data.action == action
    assert list(fcurves(key)) == ['key_blocks["Bulge"].value']
    np.testing.assert_allclose(fcurves(key)['key_blocks["Bulge"].value'], [(2.0, 0.1), (9.0, 0.9)], atol=1e-6)
    assert not baked(obj)
    bpy.context.scene.frame_set(9)
    assert bulge.value == pytest.approx(0.9)


def test_clear_removes_the_action_it_created_when_nothing_else_is_in_it(addon):
    arm, obj = rig(keys=True)
    before = snapshot()
    bpy.ops.hybrid_skin.bake_deformation(frame_start=1, frame_end=12, frame_step=6)
    name = obj.data.shape_keys.animation_data.action.name
    bpy.ops.hybrid_skin.clear_bake()
    assert name not in bpy.data.actions and obj.data.shape_keys.animation_data is None
    same_as(before, what="after Clear Bake")


def test_clear_keeps_the_users_own_action_and_its_curves(addon):
    arm, obj = rig(keys=True)
    bulge = obj.data.shape_keys.key_blocks["Bulge"]
    for frame, value in ((1, 0.0), (12, 1.0)):
        bulge.value = value
        bulge.keyframe_insert("value", frame=frame)
    before = snapshot()
    bpy.ops.hybrid_skin.bake_deformation(frame_start=1, frame_end=12, frame_step=2)
    assert bpy.ops.hybrid_skin.clear_bake() == {"FINISHED"}
    same_as(before, what="after Clear Bake")


@pytest.mark.parametrize("active", ["Bulge", "Smile"])
def test_clear_keeps_the_active_shape_key(addon, active):
    """Lost data 5: Clear reset the active shape key to the Basis."""
    arm, obj = rig(keys=True)
    obj.shape_key_add(name="Smile").value = 0.2
    obj.active_shape_key_index = obj.data.shape_keys.key_blocks.keys().index(active)
    before = snapshot()
    bpy.ops.hybrid_skin.bake_deformation(frame_start=1, frame_end=12, frame_step=4)
    assert bpy.ops.hybrid_skin.clear_bake() == {"FINISHED"}
    assert obj.active_shape_key.name == active
    same_as(before, what="after Clear Bake")


def test_clear_when_the_user_made_a_baked_key_active_falls_back_to_their_key(addon):
    arm, obj = rig(keys=True)
    obj.active_shape_key_index = 1  # Bulge
    bpy.ops.hybrid_skin.bake_deformation(frame_start=1, frame_end=12, frame_step=4)
    obj.active_shape_key_index = len(obj.data.shape_keys.key_blocks) - 1  # one of the baked keys
    bpy.ops.hybrid_skin.clear_bake()
    assert obj.active_shape_key.name == "Bulge"


@pytest.mark.parametrize("target", ["SHAPE_KEYS", "CURRENT"])
def test_bake_and_clear_on_a_mesh_without_shape_keys(addon, target):
    arm, obj = rig()
    bpy.context.scene.frame_set(6)
    expected = addon.api.deformed_positions(obj)
    before = snapshot()
    assert bpy.ops.hybrid_skin.bake_deformation(target=target, frame_start=1, frame_end=12) == {"FINISHED"}
    shown = evaluated(obj)
    assert np.abs(shown - expected).max() <= 1e-5 * diagonal(expected)
    assert bpy.ops.hybrid_skin.clear_bake() == {"FINISHED"}
    assert obj.data.shape_keys is None
    same_as(before, what="after Clear Bake")


def test_bake_after_renaming_the_action_clears_by_record(addon):
    """The action the bake created, renamed by the user: Clear still finds its curves (by the key)."""
    arm, obj = rig(keys=True)
    add_driver(obj)
    bpy.ops.hybrid_skin.bake_deformation(frame_start=1, frame_end=12, frame_step=6)
    obj.data.shape_keys.animation_data.action.name = "Renamed"
    bpy.ops.hybrid_skin.clear_bake()
    assert not fcurves(obj.data.shape_keys) and not baked(obj)
    assert obj.data.shape_keys.animation_data.drivers[0].driver.expression == "0.25"
