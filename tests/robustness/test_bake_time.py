"""Bakes and scene time: Time Stretching and negative frames, against Blender's own evaluation.

Time Stretching (Output ▸ Frame Range ▸ Time Stretching, ``render.frame_map_old/new``) makes Blender
evaluate every animation at ``frame · old / new``: shape-key values and a Mesh Cache's sample included.
A shape-key or point-cache bake must play back, at each scene frame, what the scene showed there
(Blender's own LBS/DQS mix, :func:`tests.support.scenes.native_positions`); an animation texture holds
an action's own frames, whatever the scene's stretching (Blender's mix with the action played unstretched).

Negative frames are ordinary frames in Blender: Start/End given to the bake are baked as given; left out,
they are the scene's range (what the panel's buttons bake).
"""

from __future__ import annotations

import json
import math

import bpy
import numpy as np
import pytest

from tests.robustness.bake_scene import activate, diagonal, evaluated, refused, same_as, snapshot
from tests.support.animtex import clip_frames, decode, load_bake
from tests.support.layout import draw_panel
from tests.support.scenes import make_chain_armature, make_cylinder, native_positions, skin_to_chain

FACTOR = 0.6
#: A bend and twist keyed over action frames -5 … 12 (negative frames are ordinary frames).
KEYS = ((-5, (0, 0, 0)), (1, (60, 0, 40)), (6, (100, 0, 90)), (12, (40, 0, 170)))


def rig(scene_range=(1, 12)) -> tuple:
    arm = make_chain_armature("Rig", [1.0, 1.0])
    obj = make_cylinder("Cylinder", rings=8, segments=12)
    skin_to_chain(obj, arm)
    pb = arm.pose.bones["Bone1"]
    pb.rotation_mode = "XYZ"
    for frame, angles in KEYS:
        pb.rotation_euler = [math.radians(a) for a in angles]
        pb.keyframe_insert("rotation_euler", frame=frame)
    scene = bpy.context.scene
    scene.frame_start, scene.frame_end = scene_range
    scene.frame_set(scene_range[0])
    activate(obj)
    assert bpy.ops.hybrid_skin.add() == {"FINISHED"}
    obj.hybrid_skin.deform_factor = FACTOR
    return arm, obj


def stretch(old: int, new: int) -> None:
    render = bpy.context.scene.render
    render.frame_map_old, render.frame_map_new = old, new


def shown(obj, frames) -> dict[int, np.ndarray]:
    """What the scene shows at each frame: Blender's own (1 − f)·LBS + f·DQS."""
    out = {}
    for frame in frames:
        bpy.context.scene.frame_set(frame)
        out[frame] = native_positions(obj, FACTOR)
    return out


def assert_plays_back(obj, expected: dict[int, np.ndarray]) -> None:
    diag = diagonal(next(iter(expected.values())))
    for frame, want in expected.items():
        bpy.context.scene.frame_set(frame)
        error = np.abs(evaluated(obj) - want).max()
        assert error <= 1e-5 * diag, f"frame {frame}: {error / diag:.2%} of the bounding box"


# --------------------------------------------------------------------------- Time Stretching
@pytest.mark.parametrize("target", ["SHAPE_KEYS", "PC2", "MDD"])
@pytest.mark.parametrize(("old", "new", "step"), [(100, 50, 1), (3, 4, 1), (100, 50, 2)])
def test_bake_plays_back_what_a_time_stretched_scene_shows(addon, tmp_path, target, old, new, step):
    arm, obj = rig((1, 8))
    stretch(old, new)
    frames = list(range(1, 9, step))
    expected = shown(obj, frames)
    stretch(100, 100)  # the check means something: stretching changes what these frames show
    unstretched = shown(obj, frames)
    assert max(np.abs(unstretched[f] - expected[f]).max() for f in frames) > 0.05 * diagonal(expected[1])
    stretch(old, new)
    path = tmp_path / f"cache.{target.lower()}"
    assert bpy.ops.hybrid_skin.bake_deformation(
        target=target, frame_start=1, frame_end=8, frame_step=step, filepath=str(path)
    ) == {"FINISHED"}
    assert_plays_back(obj, expected)


def test_point_cache_beyond_the_mesh_cache_modifiers_speed_is_refused(addon, tmp_path):
    """The Mesh Cache modifier's Frame Scale stops at 100: stretching slower than that cannot play."""
    arm, obj = rig((1, 4))
    stretch(1, 200)
    before = snapshot([tmp_path])
    refused(
        bpy.ops.hybrid_skin.bake_deformation, "Time Stretching",
        target="PC2", frame_start=1, frame_end=4, filepath=str(tmp_path / "c.pc2"),
    )
    same_as(before, [tmp_path], "after a refused bake")
    assert (bpy.context.scene.render.frame_map_old, bpy.context.scene.render.frame_map_new) == (1, 200)


def texture_truth(arm, obj, frames) -> np.ndarray:
    """Blender's own mix with the action played at its own frames (no stretching)."""
    render = bpy.context.scene.render
    saved = render.frame_map_old, render.frame_map_new
    stretch(100, 100)
    out = []
    for frame in frames:
        whole = math.floor(frame)
        bpy.context.scene.frame_set(whole, subframe=float(frame - whole))
        out.append(native_positions(obj, FACTOR))
    stretch(*saved)
    return np.array(out)


def check_texture(addon, arm, obj, json_path) -> None:
    """The texture's stored samples, decoded through the mesh data, against Blender at the action's frames."""
    core = __import__(addon.__name__ + ".core.animtex", fromlist=["x"])
    meta, texture = load_bake(core, json_path)
    clip = meta["clips"][0]
    assert (clip["frame_start"], clip["frame_end"]) == (-5.0, 12.0)
    frames, _ = clip_frames(clip)
    got = decode(core, meta, texture, [obj], 0, np.arange(len(frames), dtype=float))[0]
    want = texture_truth(arm, obj, frames)
    diag = diagonal(want[0])
    error = np.abs(got - want).max()
    assert error <= 1e-5 * diag, f"{error / diag:.2%} of the bounding box"


@pytest.mark.parametrize(("old", "new"), [(100, 50), (3, 4), (100, 100)])
def test_texture_bake_stores_the_actions_own_frames_under_time_stretching(addon, tmp_path, old, new):
    arm, obj = rig()
    stretch(old, new)
    bpy.context.scene.frame_set(3)
    activate(arm)
    assert bpy.ops.hybrid_skin.bake_animation_texture(
        directory=str(tmp_path), file_name="t", kind="VERTEX", precision="EXR32", frame_step=0.5,
    ) == {"FINISHED"}
    scene = bpy.context.scene
    assert (scene.render.frame_map_old, scene.render.frame_map_new, scene.frame_current) == (old, new, 3)
    check_texture(addon, arm, obj, tmp_path / "t.json")


def test_command_line_texture_bake_stores_the_actions_own_frames(addon, tmp_path):
    """``python -m hybrid_skin bake-textures`` on a saved, time-stretched file (the session's bake only
    writes the mesh data the decoder finds each vertex by: the same mesh, the same layout)."""
    from tests.cli.test_textures import run_cli

    arm, obj = rig()
    activate(arm)
    (tmp_path / "session").mkdir()
    assert bpy.ops.hybrid_skin.bake_animation_texture(
        directory=str(tmp_path / "session"), file_name="t", kind="VERTEX", precision="EXR32"
    ) == {"FINISHED"}
    stretch(100, 50)
    blend = tmp_path / "stretched.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(blend), copy=True)
    done = run_cli(
        str(blend), "--object", arm.name, "--output", str(tmp_path / "cli"), "--kind", "VERTEX",
        "--precision", "EXR32",
    )
    assert done.returncode == 0, done.stderr
    check_texture(addon, arm, obj, next((tmp_path / "cli").glob("*.json")))


# ------------------------------------------------------------------------------ negative frames
def test_negative_start_and_end_are_baked_as_given(addon):
    arm, obj = rig((1, 12))
    expected = shown(obj, range(-5, 5))
    assert bpy.ops.hybrid_skin.bake_deformation(target="SHAPE_KEYS", frame_start=-5, frame_end=4) == {
        "FINISHED"
    }
    names = [k.name for k in obj.data.shape_keys.key_blocks][1:]
    assert names == [f"HS Bake -000{-f}" if f < 0 else f"HS Bake 000{f}" for f in range(-5, 5)]
    assert len(set(names)) == len(names)
    assert_plays_back(obj, expected)


def test_a_bound_left_out_is_the_scenes(addon):
    """(A scene's own range starts at 0 or later: Blender's Start has a minimum of 0.)"""
    arm, obj = rig((2, 6))
    expected = shown(obj, range(-2, 7))
    assert bpy.ops.hybrid_skin.bake_deformation(target="SHAPE_KEYS", frame_start=-2) == {"FINISHED"}
    assert json.loads(obj.hybrid_skin.bake_state)["frames"] == list(range(-2, 7))
    assert_plays_back(obj, expected)
    assert bpy.ops.hybrid_skin.bake_deformation(target="SHAPE_KEYS", frame_end=4) == {"FINISHED"}
    assert json.loads(obj.hybrid_skin.bake_state)["frames"] == [2, 3, 4]


def test_the_panels_bake_buttons_bake_the_scenes_range(addon, ui_panel):
    """What a click on the panel's bake buttons runs: the button's properties, nothing more."""
    arm, obj = rig((0, 3))
    expected = shown(obj, range(0, 4))
    drawn = draw_panel(ui_panel).buttons("hybrid_skin.bake_deformation")
    buttons = {c.properties["target"]: c for c in drawn}
    shape_keys = buttons["SHAPE_KEYS"].properties
    assert set(shape_keys) == {"target"}  # no Start or End: the scene's range
    assert bpy.ops.hybrid_skin.bake_deformation(**shape_keys) == {"FINISHED"}
    assert json.loads(obj.hybrid_skin.bake_state)["frames"] == list(range(0, 4))
    assert_plays_back(obj, expected)


def test_a_frame_outside_blenders_range_is_refused(addon):
    arm, obj = rig((1, 4))
    before = snapshot()
    refused(
        bpy.ops.hybrid_skin.bake_deformation, "outside Blender's frame range",
        target="SHAPE_KEYS", frame_start=-2_000_000, frame_end=4,
    )
    same_as(before, what="after a refused bake")


@pytest.fixture
def ui_panel(addon):
    return __import__(addon.__name__ + ".skin.panel", fromlist=["x"]).VIEW3D_PT_hybrid_skin
