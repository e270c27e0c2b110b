"""Meshes parented to bones (rigid parts) in animation texture bakes.

RobotExpressive, the three.js example robot, is 4 skinned meshes (hands and forearms) and 15 meshes
that follow bones rigidly (the head with its shape keys, torso, legs … parented to empties parented to
bones). A bake carried only the skinned four: the crowd was hands without a robot. Now the bake names
what it leaves out, and Skin Rigid Parts skins those meshes so that they move exactly as Blender moved
them before (positions and normals, checked against Blender's own evaluation at frames of a real clip);
then the bake carries the whole robot.
"""

from __future__ import annotations

import dataclasses
import importlib
import json
import math

import bpy
import numpy as np
import pytest

from tests.support.assets import armature_actions, play
from tests.support.layout import draw_panel
from tests.support.scenes import make_chain_armature, make_cylinder, skin_to_chain
from tests.support.snapshot import object_snapshot

RIGID_IN_ROBOT = 15


def world_geometry(objects) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Every object's evaluated vertex positions and corner normals in world space (what the viewport
    shows and shades)."""
    depsgraph = bpy.context.evaluated_depsgraph_get()
    out = {}
    for obj in objects:
        evaluated = obj.evaluated_get(depsgraph)
        mesh = evaluated.to_mesh()
        try:
            co = np.empty(len(mesh.vertices) * 3)
            mesh.vertices.foreach_get("co", co)
            normals = np.empty(len(mesh.loops) * 3)
            mesh.corner_normals.foreach_get("vector", normals)
            m = np.array(evaluated.matrix_world)
            turned = normals.reshape(-1, 3) @ np.linalg.inv(m[:3, :3])  # the normal matrix, transposed
            turned /= np.linalg.norm(turned, axis=1, keepdims=True)
            out[obj.name] = (co.reshape(-1, 3) @ m[:3, :3].T + m[:3, 3], turned)
        finally:
            evaluated.to_mesh_clear()
    return out


def assert_same_geometry(before, after, size: float, where) -> None:
    for name, (positions, normals) in before.items():
        gap = float(np.abs(after[name][0] - positions).max())
        assert gap <= 1e-5 * size, (name, where, gap)
        turn = float(np.abs(after[name][1] - normals).max())
        # Custom split normals are stored quantised (two 16-bit angles each): rewritten in the part's new
        # mesh space they round again, by up to ~1e-4.
        assert turn <= 5e-4, (name, where, "normals", turn)


def robot_meshes() -> list[bpy.types.Object]:
    """The robot's meshes (all of them are parented to something of the robot's)."""
    return sorted((o for o in bpy.data.objects if o.type == "MESH" and o.parent), key=lambda o: o.name)


def test_skinned_rigid_parts_move_exactly_as_blender_moved_them(addon, robot):
    arm, _skinned = robot
    action = armature_actions()[0]
    frames = (action.frame_range[0], 0.5 * sum(action.frame_range), action.frame_range[1] - 1)
    meshes = robot_meshes()
    before = {}
    for frame in frames:
        play(arm, action, frame)
        before[frame] = world_geometry(meshes)
    # Convert at a posed frame: the rest transform is worked out from the pose.
    play(arm, action, frames[1])
    bpy.context.view_layer.objects.active = arm
    assert bpy.ops.hybrid_skin.skin_rigid_parts() == {"FINISHED"}
    assert sum(1 for o in meshes if len(o.vertex_groups) == 1) == RIGID_IN_ROBOT, [o.name for o in meshes]
    assert all(any(m.type == "ARMATURE" and m.object == arm for m in o.modifiers) for o in meshes)
    size = float(np.ptp(np.concatenate([p for p, _n in before[frames[0]].values()]), axis=0).max())
    for frame in frames:
        play(arm, action, frame)
        assert_same_geometry(before[frame], world_geometry(meshes), size, frame)


def carried() -> list[str]:
    """The meshes a bone texture bake wrote its per-vertex palette indices on."""
    return [o.name for o in robot_meshes() if "animtex_bone_indices" in o.data.attributes]


def test_the_bake_names_what_it_leaves_out_then_carries_the_whole_robot(addon, animtex, robot, tmp_path):
    arm, skinned = robot
    options = animtex.BakeOptions(directory=str(tmp_path), kind="BONE_MATRIX", precision="EXR32",
                                  file_name="before", export_gltf=False)
    result = animtex.bake(bpy.context, arm, options)
    warning = next(w for w in result.warnings if "parented to bones" in w)
    assert warning.startswith(f"{RIGID_IN_ROBOT} mesh(es) parented to bones of '{arm.name}'"), warning
    assert "Skin Rigid Parts" in warning
    assert carried() == sorted(o.name for o in skinned)

    bpy.context.view_layer.objects.active = arm
    assert bpy.ops.hybrid_skin.skin_rigid_parts() == {"FINISHED"}
    result = animtex.bake(bpy.context, arm, dataclasses.replace(options, file_name="after"))
    assert not any("parented to bones" in w for w in result.warnings), result.warnings
    assert carried() == [o.name for o in robot_meshes()]
    meta = json.loads((tmp_path / "after.json").read_text())
    # The whole robot at the stored frames, measured against Blender's own evaluation (matrices at EXR32:
    # exact up to float32; between frames the report also holds the interpolation's error).
    frames = meta["error_report"]["frames"]
    assert frames["max"] <= meta["error_report"]["encoding_bound"] and frames["max"] < 1e-4, frames


def _rigid_chain():
    """A two-bone chain, a skinned cylinder, and a box parented to the second bone."""
    arm = make_chain_armature("RigidRig", [1.0, 1.0])
    skin_to_chain(make_cylinder("Body"), arm)
    bpy.ops.mesh.primitive_cube_add(size=0.3, location=(0.0, 0.0, 1.5))
    box = bpy.context.active_object
    box.name = "Helmet"
    box.parent, box.parent_type, box.parent_bone = arm, "BONE", arm.data.bones[1].name
    arm.pose.bones[1].rotation_mode = "XYZ"
    arm.pose.bones[1].rotation_euler = (math.radians(50.0), 0.0, math.radians(20.0))
    bpy.context.view_layer.update()
    return arm, box


def _refuses(arm, box, message: str) -> None:
    bpy.context.view_layer.update()
    before = object_snapshot(box)
    bpy.context.view_layer.objects.active = arm
    with pytest.raises(RuntimeError, match=message) as info:
        bpy.ops.hybrid_skin.skin_rigid_parts()
    assert "Traceback" not in str(info.value)
    after = object_snapshot(box)
    changed = {k: (before["settings"][k], after["settings"].get(k)) for k in before["settings"]
               if before["settings"][k] != after["settings"].get(k)}
    assert after == before, changed


def test_a_part_on_a_bone_that_does_not_deform_is_refused_and_left_as_it_was(addon):
    arm, box = _rigid_chain()
    arm.data.bones[1].use_deform = False
    _refuses(arm, box, "which does not deform")


def test_a_part_hanging_from_an_animated_empty_is_refused(addon):
    arm, box = _rigid_chain()
    empty = bpy.data.objects.new("Socket", None)
    bpy.context.scene.collection.objects.link(empty)
    empty.parent, empty.parent_type, empty.parent_bone = arm, "BONE", arm.data.bones[1].name
    box.parent, box.parent_type = empty, "OBJECT"
    empty.keyframe_insert("location", frame=1)
    _refuses(arm, box, "animated or constrained on its own")


def test_a_vertex_group_named_like_the_bone_is_refused(addon):
    arm, box = _rigid_chain()
    box.vertex_groups.new(name=arm.data.bones[1].name)
    _refuses(arm, box, "already has a vertex group named")


@pytest.mark.parametrize("mirrored", [False, True], ids=["plain", "mirrored"])
def test_a_posed_part_keeps_its_place_and_undo_takes_it_back(addon, mirrored):
    arm, box = _rigid_chain()
    if mirrored:  # left/right parts are often one part scaled by -1
        box.scale = (-1.0, 1.0, 1.3)
        bpy.context.view_layer.update()
    before = world_geometry([box])
    snapshot = object_snapshot(box)
    bpy.context.view_layer.objects.active = arm
    bpy.ops.ed.undo_push(message="before")
    assert bpy.ops.hybrid_skin.skin_rigid_parts("EXEC_DEFAULT", True) == {"FINISHED"}
    box = bpy.data.objects["Helmet"]
    assert box.parent == arm and box.parent_type == "OBJECT"
    assert_same_geometry(before, world_geometry([box]), 1.0, "after")
    bpy.ops.ed.undo()
    assert object_snapshot(bpy.data.objects["Helmet"]) == snapshot


def test_the_panel_offers_skin_rigid_parts_only_when_a_bake_would_leave_meshes_out(addon):
    panels = importlib.import_module(addon.__name__ + ".animtex.panels")
    arm, _box = _rigid_chain()
    bpy.context.view_layer.objects.active = arm
    drawn = draw_panel(panels.VIEW3D_PT_hybrid_skin_animtex)
    assert "hybrid_skin.skin_rigid_parts" in drawn.operators()
    assert any("1 mesh(es) parented to bones are not baked" in text for text in drawn.labels())
    assert bpy.ops.hybrid_skin.skin_rigid_parts() == {"FINISHED"}
    drawn = draw_panel(panels.VIEW3D_PT_hybrid_skin_animtex)
    assert "hybrid_skin.skin_rigid_parts" not in drawn.operators()
