"""``python -m hybrid_skin bake-textures``: the command line bakes a saved .blend as the operator does,
leaves the file alone, and fails with an ``error:`` line and exit status 1 or 2 on bad input."""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
from pathlib import Path

import bpy
import pytest

from tests.support.animtex import load_bake
from tests.support.assets import clip_action, import_gltf

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
    ):
        failed = run_cli(str(blend), *args, "--output", str(tmp_path / "empty"))
        assert failed.returncode == 1 and message in failed.stderr, failed.stderr
        assert os.listdir(tmp_path / "empty") == []
    assert run_cli(str(tmp_path / "missing.blend"), "--object", "x", "--output", str(out)).returncode == 2
