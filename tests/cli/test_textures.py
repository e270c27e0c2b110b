"""``python -m hybrid_skin bake-textures``: the command line bakes a saved .blend as the operator does,
leaves the file alone, and fails with an ``error:`` line and exit status 1 or 2 on bad input."""

from __future__ import annotations

import importlib
import math
import os
import subprocess
import sys
from pathlib import Path

import bpy
import numpy as np
import pytest

from tests.support.animtex import clip_frames, decode, load_bake, scene_pose, set_pose, to_world
from tests.support.assets import clip_action, import_gltf, play
from tests.support.scenes import make_chain_armature, make_cylinder, native_positions, skin_to_chain

REPO_ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def core(addon):
    return importlib.import_module(addon.__name__ + ".core.animtex")


@pytest.fixture
def robot(assets):
    arm, meshes = import_gltf(assets / "RobotExpressive.glb")
    bpy.context.view_layer.objects.active = arm
    return arm, sorted(meshes, key=lambda o: o.name)


def run_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "hybrid_skin", "bake-textures", *args],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def test_command_line(addon, core, robot, tmp_path):
    arm, _ = robot
    blend = tmp_path / "robot.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(blend), copy=True)
    before = blend.read_bytes()
    out = tmp_path / "textures"
    clips = [clip_action("Idle").name, clip_action("Wave").name]
    done = run_cli(
        str(blend),
        "--object",
        arm.name,
        "--actions",
        *clips,
        "--kind",
        "BONE_DQ",
        "--precision",
        "EXR16",
        "--output",
        str(out),
        "--name",
        "crowd",
    )
    assert done.returncode == 0, done.stderr
    meta, _ = load_bake(core, out / "crowd.json")
    assert (meta["kind"], meta["precision"], [c["name"] for c in meta["clips"]]) == (
        "BONE_DQ",
        "EXR16",
        clips,
    )
    assert "overall" in done.stdout and blend.read_bytes() == before
    for args, message in (
        (("--object", "Object_72"), "has no Armature modifier"),
        (("--object", arm.name, "--actions", "Nope"), "No action named"),
        (("--object", "Ghost"), "no object 'Ghost'"),
        (("--object", arm.name, "--tolerance", "-1"), "Tolerance must be 0 (off"),  # was taken for "off"
        (("--object", arm.name, "--tolerance", "nan"), "Tolerance must be 0 (off"),
    ):
        failed = run_cli(str(blend), *args, "--output", str(tmp_path / "empty"))
        assert failed.returncode == 1 and message in failed.stderr, failed.stderr
        assert os.listdir(tmp_path / "empty") == []
    assert run_cli(str(tmp_path / "missing.blend"), "--object", "x", "--output", str(out)).returncode == 2
    not_blend = tmp_path / "notes.blend"
    not_blend.write_text("not a blend file\n")
    failed = run_cli(str(not_blend), "--object", "x", "--output", str(tmp_path / "empty"))
    assert failed.returncode == 2 and "Traceback" not in failed.stderr, failed.stderr
    assert f"error: cannot open '{not_blend}' as a .blend file: " in failed.stderr, failed.stderr


def test_deform_factor_is_the_objects_own_or_the_one_given(addon, core, robot, tmp_path):
    """VERTEX bakes the factor in: at each object's own setting by default (here 0.25, not the 0.5 default),
    at ``--deform-factor`` when given; the sidecar records which. The texture, decoded through the mesh data
    the bake saved, matches Blender's own Armature modifier at that factor (LBS/Preserve Volume mix)."""
    arm, meshes = robot
    for obj in meshes:
        obj.hybrid_skin.deform_factor = 0.25
    arm, names = arm.name, sorted(o.name for o in meshes)  # objects are reloaded below
    blend = tmp_path / "robot.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(blend), copy=True)
    wave = clip_action("Wave").name
    for flags, want, source in (((), 0.25, "object"), (("--deform-factor", "1"), 1.0, "bake")):
        folder = tmp_path / source
        folder.mkdir()
        copy = folder / "robot.blend"
        copy.write_bytes(blend.read_bytes())
        args = (str(copy), "--object", arm, "--actions", wave, "--precision", "EXR32")
        done = run_cli(*args, "--output", str(folder), "--name", "wave", "--save", *flags)
        assert done.returncode == 0, done.stderr
        assert f"deform factor {want:g} (GLOBAL, baked in, from {source})" in done.stdout
        bpy.ops.wm.open_mainfile(filepath=str(copy))
        meta, texture = load_bake(core, folder / "wave.json")
        assert meta["deform_factor"] == {"value": want, "baked": True, "mode": "GLOBAL", "source": source}
        saved, rig = [bpy.data.objects[o] for o in names], bpy.data.objects[arm]
        assert all(o.hybrid_skin.deform_factor == 0.25 for o in saved)  # the option leaves the file's own
        frames, _ = clip_frames(meta["clips"][0])
        report = meta["error_report"]
        truth = [([], []) for _ in saved]
        set_pose(rig, scene_pose(rig))  # as loaded: what the command line started from
        for frame in frames[::4]:
            play(rig, bpy.data.actions[wave], float(frame))
            for (local, world), obj in zip(truth, saved):
                local.append(native_positions(obj, want))
                world.append(np.array(obj.matrix_world))
        truth = [(np.array(p), np.array(w)) for p, w in truth]
        got = decode(core, meta, texture, saved, 0, np.arange(len(frames))[::4].astype(float))
        error = max(
            np.linalg.norm(to_world(g, w) - to_world(t, w), axis=-1).max() for (t, w), g in zip(truth, got)
        )
        assert error <= report["frames"]["max"] + 1e-6 * report["bbox_diagonal"], (source, error)
    for bad, message in ((("--deform-factor", "1.5"), "must lie in [0, 1]"),):
        failed = run_cli(str(blend), "--object", arm, "--output", str(tmp_path / "bad"), *bad)
        assert failed.returncode == 1 and message in failed.stderr, failed.stderr


def _keyed_bend_saved(arm, tmp_path) -> tuple[str, Path]:
    """Key ``Bone1`` from rest (frame 1) to bent and twisted (frame 3) and save a copy of the file:
    the action's name and the file."""
    pb = arm.pose.bones["Bone1"]
    pb.rotation_mode = "XYZ"
    for frame, angles in ((1, (0, 0, 0)), (3, (80, 0, 60))):
        pb.rotation_euler = [math.radians(a) for a in angles]
        pb.keyframe_insert("rotation_euler", frame=frame)
    blend = tmp_path / "tube.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(blend), copy=True)
    return arm.animation_data.action.name, blend


def test_factor_mode_option_uses_the_objects_factor_group(addon, core, tmp_path):
    """``--factor-mode VERTEX_GROUP`` on an object whose own mode is Global bakes f = slider × its factor
    group's weight (the group named in its settings): the texture, decoded through the saved mesh data,
    matches Blender's own LBS/Preserve Volume mix at that per-vertex factor."""
    arm = make_chain_armature("Rig", [1.0, 1.0])
    obj = make_cylinder("Tube", rings=12, segments=12)
    skin_to_chain(obj, arm)
    z = np.array([v.co.z for v in obj.data.vertices])
    weights = np.round(np.clip(z / 2.0, 0.0, 1.0), 3)  # graded: a number would pass for a group
    group = obj.vertex_groups.new(name="HSF")
    for value in np.unique(weights):
        group.add(np.flatnonzero(weights == value).tolist(), float(value), "REPLACE")
    settings = obj.hybrid_skin
    settings.factor_vertex_group, settings.deform_factor = "HSF", 0.8
    assert settings.factor_mode == "GLOBAL"
    action, blend = _keyed_bend_saved(arm, tmp_path)
    args = ("--object", "Rig", "--actions", action, "--precision", "EXR32", "--name", "tube", "--save")
    done = run_cli(str(blend), *args, "--output", str(tmp_path), "--factor-mode", "VERTEX_GROUP")
    assert done.returncode == 0, done.stderr
    assert "deform factor per vertex (VERTEX_GROUP, baked in, from bake)" in done.stdout
    bpy.ops.wm.open_mainfile(filepath=str(blend))
    tube, rig = bpy.data.objects["Tube"], bpy.data.objects["Rig"]
    assert tube.hybrid_skin.factor_mode == "GLOBAL"  # the option leaves the file's own
    meta, texture = load_bake(core, tmp_path / "tube.json")
    assert meta["deform_factor"] == {"value": None, "baked": True, "mode": "VERTEX_GROUP", "source": "bake"}
    frames, _ = clip_frames(meta["clips"][0])
    (got,) = decode(core, meta, texture, [tube], 0, np.arange(len(frames), dtype=float))
    wanted = []
    for frame in frames:
        play(rig, bpy.data.actions[action], float(frame))
        wanted.append(native_positions(tube, 0.8 * weights))
    lbs, dqs = native_positions(tube, 0.0), native_positions(tube, 1.0)
    assert np.abs(lbs - dqs).max() > 0.01  # the last frame: the factor matters
    np.testing.assert_allclose(got, np.array(wanted), atol=1e-5)


def test_factor_mode_auto_carries_auto_in_a_bone_bake(addon, core, tmp_path):
    """``--factor-mode AUTO`` with a bone kind: the texture carries Auto, the mesh data and the .glb the
    vertices' rest data, and the printout says the runtime computes Auto (``--no-runtime-auto``: one
    factor, as before). The tube never got Hybrid Skin: its one factor is what Blender shows, LBS (0)."""
    arm = make_chain_armature("Rig", [1.0, 1.0])
    obj = make_cylinder("Tube", rings=12, segments=12)
    skin_to_chain(obj, arm)
    action, blend = _keyed_bend_saved(arm, tmp_path)
    args = ("--object", "Rig", "--actions", action, "--kind", "BONE_DQ", "--factor-mode", "AUTO", "--gltf")
    done = run_cli(str(blend), *args, "--name", "auto", "--output", str(tmp_path))
    assert done.returncode == 0, done.stderr
    assert "deform factor Auto per vertex (ROUND, at runtime; one factor: 0)" in done.stdout
    assert "Auto factor vs the add-on's: max" in done.stdout
    meta, _ = load_bake(core, tmp_path / "auto.json")
    assert meta["auto"]["profile"] == "ROUND" and meta["mesh_attributes"]["auto_rest"] == "animtex_auto_rest"
    assert b"_ANIMTEX_AUTO_REST" in (tmp_path / "auto.glb").read_bytes()
    done = run_cli(str(blend), *args, "--name", "plain", "--output", str(tmp_path), "--no-runtime-auto")
    assert done.returncode == 0, done.stderr
    assert "deform factor 0 (GLOBAL, at runtime, from bake)" in done.stdout
    plain, _ = load_bake(core, tmp_path / "plain.json")
    assert "auto" not in plain and plain["options"]["runtime_auto"] is False


def test_a_stray_key_is_refused_before_a_frame_is_played(addon, tmp_path):
    """A key far out on the timeline: the command line refuses in one line naming the frame range and
    what would fit, writes nothing, and exits 1 at once (its own clock, not the frames: a bake of
    400,000 frames takes minutes)."""
    arm = make_chain_armature("Rig", [1.0, 1.0])
    obj = make_cylinder("Tube", rings=12, segments=12)
    skin_to_chain(obj, arm)
    action, blend = _keyed_bend_saved(arm, tmp_path)
    arm.pose.bones["Bone1"].keyframe_insert("rotation_euler", frame=400_000)
    bpy.ops.wm.save_as_mainfile(filepath=str(blend), copy=True)
    out = tmp_path / "out"
    failed = run_cli(str(blend), "--object", "Rig", "--actions", action, "--output", str(out))
    assert failed.returncode == 1 and "Traceback" not in failed.stderr, failed.stderr
    (line,) = failed.stderr.strip().splitlines()
    assert line.startswith(f"error: '{action}' (frames 1–400,000) at frame step 1 are 400,000 stored samples")
    assert "taller than the 16,384 rows" in line and "frame step of at least 24.42" in line, line
    assert os.listdir(out) == []
