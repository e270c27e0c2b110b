"""Root motion of animation texture bakes: an action that moves the armature object itself gets a
per-clip track in the sidecar, checked against Blender's own evaluation of the mesh's world matrix."""

from __future__ import annotations

import bpy
import numpy as np
from mathutils import Matrix, Quaternion

from tests.support.animtex import clip_frames, load_bake
from tests.support.assets import clip_action, play


def key_root_motion(arm, action) -> None:
    """Key the armature object's location and Z rotation into ``action`` over its frame range."""
    start, end = (float(f) for f in action.frame_range)
    play(arm, action, start)  # assigns the action (and its object slot): the keys land in it
    arm.rotation_mode = "XYZ"
    for frame, x, y, angle in (
        (start, 0.0, 0.0, 0.0),
        ((start + end) / 2, 1.5, 0.4, 0.7),
        (end, 3.0, -0.5, 1.9),
    ):
        arm.location, arm.rotation_euler = (x, y, 0.0), (0.0, 0.0, angle)
        arm.keyframe_insert("location", frame=frame)
        arm.keyframe_insert("rotation_euler", index=2, frame=frame)


def test_root_motion_track_follows_the_moving_armature(addon, animtex, core, robot, tmp_path):
    arm, meshes = robot
    walk, sitting = clip_action("Walking"), clip_action("Sitting")
    key_root_motion(arm, walk)
    scene = bpy.context.scene
    scene.frame_set(7)
    before = {o.name: np.array(o.matrix_world) for o in (arm, *meshes)}
    pose = [tuple(pb.rotation_quaternion) for pb in arm.pose.bones]
    options = animtex.BakeOptions(str(tmp_path), kind="VERTEX", frame_step=2, file_name="walk")
    animtex.bake(bpy.context, arm, options, [walk.name, sitting.name])
    # the user's scene is back: action, frame, object matrices (root motion included), pose
    assert arm.animation_data.action == walk and scene.frame_current == 7
    for obj in (arm, *meshes):
        np.testing.assert_allclose(np.array(obj.matrix_world), before[obj.name], atol=1e-5)
    np.testing.assert_allclose([tuple(pb.rotation_quaternion) for pb in arm.pose.bones], pose, atol=1e-6)

    meta, _ = load_bake(core, tmp_path / "walk.json")  # validated against the shipped schema
    walking, sitting = meta["clips"]
    assert "root_motion" not in sitting  # an action that does not move the object has no track
    track = walking["root_motion"]
    frames, _ = clip_frames(walking)
    assert len(frames) == walking["frame_count"] == 12
    assert all(len(track[k]) == 12 for k in ("translation", "rotation", "scale"))
    # independently: the first baked mesh's world matrix at each stored frame, Blender's own evaluation
    worlds = []
    for frame in frames:
        play(arm, walk, float(frame))
        worlds.append(np.array(meshes[0].matrix_world))
    worlds = np.array(worlds)
    expected = np.linalg.inv(worlds[0]) @ worlds  # in the mesh's space at the clip's first sample
    got = np.array(
        [
            np.array(Matrix.LocRotScale(t, Quaternion(q), s))
            for t, q, s in zip(track["translation"], track["rotation"], track["scale"])
        ]
    )
    np.testing.assert_allclose(got, expected, atol=1e-5)  # entries ~1: float32 rounding and then some
    np.testing.assert_allclose(worlds[0] @ got, worlds, atol=1e-5 * np.abs(worlds).max())
    assert np.linalg.norm(track["translation"][-1]) > 1e-3  # it really moves (in mesh units)
    # the texture stays in place: decoded mesh-local positions placed by each sample's own world
    # matrix match the truth within the encoding bound
    assert meta["error_report"]["frames"]["max"] <= meta["error_report"]["encoding_bound"]


def test_root_motion_of_a_loop_and_a_user_transform_left_alone(addon, animtex, core, robot, tmp_path):
    arm, meshes = robot
    walk, sitting = clip_action("Walking"), clip_action("Sitting")
    key_root_motion(arm, walk)
    walk.use_frame_range, walk.use_cyclic = True, True  # a walk cycle: its end frame is the wrap
    idle = clip_action("Idle")  # the user's active action keys no object transform
    play(arm, idle, 3.0)
    arm.location, arm.rotation_euler = (0.25, -0.5, 0.125), (0.0, 0.0, 0.3)
    bpy.context.view_layer.update()
    before = np.array(arm.matrix_world)
    options = animtex.BakeOptions(str(tmp_path), kind="BONE_DQ", file_name="loop")
    animtex.bake(bpy.context, arm, options, [walk.name, sitting.name])
    assert arm.animation_data.action == idle
    # the object keys of the baked action must not leave the armature where its last frame put it
    np.testing.assert_allclose(np.array(arm.matrix_world), before, atol=1e-6)

    meta, _ = load_bake(core, tmp_path / "loop.json")
    walking, sitting = meta["clips"]
    assert walking["loop"] and "root_motion" not in sitting  # Sitting starts from the user's transform
    start, end = walking["frame_start"], walking["frame_end"]
    worlds = []
    for frame in (start, end):
        play(arm, walk, float(frame))
        worlds.append(np.array(meshes[0].matrix_world))
    cycle = walking["root_motion"]["cycle"]
    got = np.array(Matrix.LocRotScale(cycle["translation"], Quaternion(cycle["rotation"]), cycle["scale"]))
    np.testing.assert_allclose(got, np.linalg.inv(worlds[0]) @ worlds[1], atol=1e-5)
    assert np.linalg.norm(cycle["translation"]) > 1e-3
