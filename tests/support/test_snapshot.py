"""The user-data snapshot (tests/support/snapshot.py) sees every kind of change the robustness tests rely on:
a helper that misses a change would make every "nothing of the user's is lost" assertion pass vacuously."""

from __future__ import annotations

import bpy
import pytest

from tests.support import snapshot as snap


@pytest.fixture
def owned(tmp_path):
    """A mesh with what a user owns: a modifier, vertex groups with weights, shape keys with a driver and a
    keyframe, a UV map, an attribute; an armature with a posed bone; a file on disk."""
    bpy.ops.mesh.primitive_cube_add()
    obj = bpy.context.active_object
    group = obj.vertex_groups.new(name="Arm")
    group.add([0, 1, 2], 0.75, "REPLACE")
    obj.modifiers.new("Smooth", "SMOOTH").factor = 0.3
    obj.shape_key_add(name="Basis")
    key = obj.shape_key_add(name="Open")
    key.data[0].co.x += 0.5
    key.value = 0.25
    key.keyframe_insert("value", frame=3)
    driven = obj.shape_key_add(name="Driven")
    fcurve = driven.driver_add("value")
    fcurve.driver.expression = "frame / 100"
    obj.data.attributes.new("heat", "FLOAT", "POINT").data[4].value = 2.0
    arm_data = bpy.data.armatures.new("Rig")
    arm = bpy.data.objects.new("Rig", arm_data)
    bpy.context.collection.objects.link(arm)
    bpy.context.view_layer.objects.active = arm
    bpy.ops.object.mode_set(mode="EDIT")
    arm_data.edit_bones.new("Bone").tail = (0, 0, 1)
    bpy.ops.object.mode_set(mode="OBJECT")
    arm.pose.bones["Bone"].rotation_quaternion = (0.9, 0.1, 0.0, 0.0)
    (tmp_path / "cache.pc2").write_bytes(b"1234")
    return obj, arm, tmp_path


def _key(obj, name):
    return obj.data.shape_keys.key_blocks[name]


CHANGES = {
    "modifier setting": lambda o, a, d: setattr(o.modifiers["Smooth"], "factor", 0.31),
    "modifier visibility": lambda o, a, d: setattr(o.modifiers["Smooth"], "show_viewport", False),
    "vertex weight": lambda o, a, d: o.vertex_groups["Arm"].add([1], 0.5, "REPLACE"),
    "shape key value": lambda o, a, d: setattr(o.data.shape_keys.key_blocks["Open"], "slider_max", 2.0),
    "shape key coordinate": lambda o, a, d: setattr(_key(o, "Open").data[1].co, "y", 3.0),
    "active shape key": lambda o, a, d: setattr(o, "active_shape_key_index", (o.active_shape_key_index + 1) % 3),  # noqa: E501
    "driver": lambda o, a, d: setattr(
        o.data.shape_keys.animation_data.drivers[0].driver, "expression", "frame / 50"
    ),
    "driver removed": lambda o, a, d: o.data.shape_keys.animation_data.drivers.remove(
        o.data.shape_keys.animation_data.drivers[0]
    ),
    "keyframe": lambda o, a, d: _key(o, "Open").keyframe_insert("value", frame=9),
    "attribute value": lambda o, a, d: setattr(o.data.attributes["heat"].data[4], "value", 2.5),
    "uv map added": lambda o, a, d: o.data.uv_layers.new(name="Second"),
    "vertex position": lambda o, a, d: setattr(o.data.vertices[3].co, "z", 9.0),
    "display setting": lambda o, a, d: setattr(o, "display_type", "BOUNDS"),
    "pose": lambda o, a, d: setattr(a.pose.bones["Bone"], "rotation_quaternion", (1.0, 0.0, 0.0, 0.0)),
    "file": lambda o, a, d: (d / "cache.pc2").write_bytes(b"12345"),
    "new file": lambda o, a, d: (d / "stray.json").write_text("{}"),
    "scene frame": lambda o, a, d: bpy.context.scene.frame_set(7),
}


def test_an_untouched_scene_compares_equal(owned):
    obj, arm, folder = owned
    before = snap.snapshot(folders=[folder])
    snap.assert_same(before, snap.snapshot(folders=[folder]))


@pytest.mark.parametrize("change", sorted(CHANGES))
def test_every_kind_of_change_is_seen(owned, change):
    obj, arm, folder = owned
    before = snap.snapshot(folders=[folder])
    CHANGES[change](obj, arm, folder)
    assert snap.differences(before, snap.snapshot(folders=[folder])), f"the snapshot missed: {change}"
