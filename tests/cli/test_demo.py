"""``python -m hybrid_skin demo`` (``make demo``) as a newcomer runs it: one progress line per step, and a
folder with the comparison picture, a texture set, shape keys and a .blend that opens with everything set
up and its files found relative to it, even after the folder moves. Failures are one ``error:`` line."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import bpy
import numpy as np
import pytest

from tests.support.animtex import load_bake

REPO_ROOT = Path(__file__).resolve().parents[2]
PANEL_WIDTH, PANEL_HEIGHT = 320, 400  # what the demo renders (hybrid_skin/cli/demo.py render_pose)


def run_demo(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "hybrid_skin", "demo", *args],
        cwd=REPO_ROOT, capture_output=True, text=True, timeout=600, check=False, env=env,
    )  # fmt: skip


@pytest.fixture(scope="module")
def demo(tmp_path_factory, assets):
    output = tmp_path_factory.mktemp("demo") / "out"
    done = run_demo("--asset", str(assets / "RobotExpressive.glb"), "--output", str(output))
    return done, output


def test_progress_lines_and_the_one_comparison_line(demo):
    done, output = demo
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    steps = [line for line in lines if re.match(r"\[\d/9\] ", line)]
    assert [s[:5] for s in steps] == [f"[{k}/9]" for k in range(1, 10)], done.stdout
    assert all(re.search(r"\(\d+\.\d s\)$", s) for s in steps), steps  # each says how long it took
    # Blender's chatter: operator reports, EGL, and Blender 5's timestamped log lines
    # ("00:00.019  color_management | ...")
    chatter = [
        line for line in lines
        if line.startswith(("Info:", "EGL", "Warning:")) or re.match(r"\d\d:\d\d\.\d{3} ", line)
    ]
    assert not chatter, f"Blender chatter leaked: {chatter}"
    # RobotExpressive's head, torso and legs are meshes parented to bones: skinned, they are in every step.
    assert "Skin rigid parts ... 15 meshes parented to bones (" in steps[1], steps[1]
    assert "Add Hybrid Skin ... 19 meshes" in steps[2], steps[2]
    compare = next(s for s in steps if "Compare with Blender" in s)
    worst = float(re.search(r"worst ([0-9.e+-]+) × mesh size", compare).group(1))
    assert worst < 1e-5, compare  # Blender's own LBS, Preserve Volume and mix, as the core tests demand
    assert str(output) in lines[0] and str(output) in done.stdout.split("Done in")[1]


def _panels(path: Path) -> list[np.ndarray]:
    image = bpy.data.images.load(str(path))
    try:
        assert tuple(image.size) == (4 * PANEL_WIDTH, PANEL_HEIGHT)
        pixels = np.empty(4 * PANEL_WIDTH * PANEL_HEIGHT * 4, dtype=np.float32)
        image.pixels.foreach_get(pixels)
    finally:
        bpy.data.images.remove(image)
    pixels = pixels.reshape(PANEL_HEIGHT, 4 * PANEL_WIDTH, 4)[: int(PANEL_HEIGHT * 0.85)]  # below the labels
    background = pixels[2, 4, :3]
    mesh = np.abs(pixels[..., :3] - background).max(axis=-1) > 0.02
    return [mesh[:, i * PANEL_WIDTH + 4 : (i + 1) * PANEL_WIDTH - 4] for i in range(4)]


def test_the_picture_shows_lbs_hybrid_auto_and_dqs_apart(demo):
    done, output = demo
    assert done.returncode == 0, done.stderr
    # The joint chosen is one where LBS and DQS differ visibly: blending meshes only (with the robot's rigid
    # parts skinned, their bones outweighed the forearms' and a palm 1% apart was chosen).
    render = next(s for s in done.stdout.splitlines() if "Render LBS" in s)
    apart = float(re.search(r"LBS and DQS (\d+)% of its size apart", render).group(1))
    assert apart >= 5, render
    lbs, hybrid, auto, dqs = _panels(output / "comparison.png")
    area = dqs.sum()
    assert area > 0.03 * dqs.size, "the mesh should fill a good part of the panel"
    assert 0.5 * area < lbs.sum() < area  # LBS loses volume at the twisted joint, not the whole mesh
    differs = [int((m != dqs).sum()) for m in (lbs, hybrid, auto)]
    assert differs[0] > 0.01 * area, differs  # the panels are not four copies of one drawing
    assert differs[1] < differs[0] and differs[2] < differs[0], differs  # the blends sit between


def test_the_texture_set_and_its_error_line(demo, addon):
    done, output = demo
    assert done.returncode == 0, done.stderr
    core = __import__(addon.__name__ + ".core.animtex", fromlist=["x"])
    meta, _texture = load_bake(core, output / "textures" / "robotexpressive_bone_dq.json")  # schema-checked
    assert meta["kind"] == "BONE_DQ" and len(meta["clips"]) == 4
    assert (output / "textures" / meta["image"]).is_file()
    line = next(s for s in done.stdout.splitlines() if "Bake animation textures" in s)
    for clip in meta["clips"]:
        assert clip["name"] in line or clip["name"].split("_")[0] in line
    stored, halfway = meta["error_report"]["frames"], meta["error_report"]["mid_frames"]
    assert f"max {stored['max_percent']:.2g}% of the size at the stored frames" in line
    assert f"{halfway['max_percent']:.2g}% halfway between them (interpolation)" in line


def test_the_blend_opens_set_up_and_finds_its_files_after_a_move(demo, addon, tmp_path):
    done, output = demo
    assert done.returncode == 0, done.stderr
    moved = tmp_path / "elsewhere"
    shutil.copytree(output, moved)  # a user moves or shares the folder
    bpy.ops.wm.open_mainfile(filepath=str(moved / "robotexpressive_demo.blend"), load_ui=False)
    skinned = sorted(o.name for o in bpy.data.objects if o.type == "MESH" and o.hybrid_skin.enabled)
    assert len(skinned) == 19, skinned  # 4 skinned meshes and 15 rigid parts the demo skinned
    for name in skinned:
        obj = bpy.data.objects[name]
        assert obj.hybrid_skin.deform_factor == pytest.approx(0.5)
        keys = obj.data.shape_keys.key_blocks
        baked = [k for k in keys if k.name.startswith("HS Bake ")]
        assert len(baked) == 45 and keys[0].name == "Basis"  # Wave, frames 0-44, one keyed key per frame
        assert obj.data.shape_keys.animation_data.action is not None
    arm = next(o for o in bpy.data.objects if o.type == "ARMATURE")
    stored = json.loads(arm["_hybrid_skin_animtex"])
    assert stored["sidecar"].startswith("//") and stored["image"].startswith("//"), stored
    summary = __import__(addon.__name__ + ".animtex.summary", fromlist=["x"]).last_summary(arm)
    assert Path(summary.sidecar).resolve() == (moved / "textures" / "robotexpressive_bone_dq.json").resolve()


def test_failures_are_one_sentence_and_a_non_zero_exit(tmp_path):
    missing = run_demo("--asset", str(tmp_path / "nope.glb"), "--output", str(tmp_path / "a"))
    assert missing.returncode == 2 and "demo asset not found" in missing.stderr
    (tmp_path / "file").write_text("")
    blocked = run_demo("--output", str(tmp_path / "file" / "sub"))
    assert blocked.returncode == 1 and "cannot create the output folder" in blocked.stderr
    bpy.ops.mesh.primitive_cube_add()
    cube = tmp_path / "cube.glb"
    bpy.ops.export_scene.gltf(filepath=str(cube), export_format="GLB")
    unskinned = run_demo("--asset", str(cube), "--output", str(tmp_path / "b"))
    assert unskinned.returncode == 1, unskinned.stdout
    assert "error: " in unskinned.stderr
    assert "has no mesh deformed by an Armature modifier" in unskinned.stderr
    assert "Traceback" not in unskinned.stderr


def test_another_asset_names_its_files_and_counts_in_words(tmp_path, assets):
    """The files are named after the asset (they were 'robot_bone_dq' whatever it was), and one mesh or
    one clip is not "1 meshes"."""
    output = tmp_path / "cesium"
    # without Chromium on PATH (the demo must work without it): the page, no screenshot, one line says so
    path = os.pathsep.join(p for p in os.environ["PATH"].split(os.pathsep) if not _has_chromium(p))
    done = run_demo("--asset", str(assets / "CesiumMan.gltf"), "--output", str(output),
                    env={**os.environ, "PATH": path})  # fmt: skip
    assert done.returncode == 0, done.stderr
    crowd_line = next(s for s in done.stdout.splitlines() if "Crowd page" in s)
    if THREE_INSTALLED:
        assert "screenshot skipped: Chromium is not installed" in crowd_line
        assert (output / "crowd.html").is_file() and not (output / "crowd.png").exists()
    else:  # no npm where this runs: the demo says it skipped the page
        assert "skipped: three.js is not installed" in crowd_line and not (output / "crowd.html").exists()
    assert sorted(p.name for p in (output / "textures").iterdir()) == [
        "cesiumman_bone_dq.glb",
        "cesiumman_bone_dq.json",
        "cesiumman_bone_dq.png",
    ]
    assert (output / "cesiumman_demo.blend").is_file()
    steps = [line for line in done.stdout.splitlines() if re.match(r"\[\d/9\] ", line)]
    assert any(" 1 mesh, " in s for s in steps) and any(" 1 clip (" in s for s in steps), steps
    assert not any(re.search(r"\b1 (meshes|clips)\b", s) for s in steps), steps


#: The pinned three.js the demo copies (``make test`` and ``make demo`` install it with npm when npm exists).
THREE_INSTALLED = (REPO_ROOT / "tests" / "engines" / "node_modules" / "three" / "build").is_dir()


def _has_chromium(folder: str) -> bool:
    return any((Path(folder) / name).exists() for name in ("chromium", "chromium-browser", "google-chrome"))


def test_the_crowd_page_plays_the_bake_offline_and_its_screenshot(demo):
    """``crowd.html`` plays the demo's bake with the shipped three.js runtime and three.js copied beside it
    (with its licence; nothing fetched from elsewhere), and headless Chromium's screenshot shows the crowd."""
    done, output = demo
    assert done.returncode == 0, done.stderr
    if not THREE_INSTALLED:
        pytest.skip("three.js is not installed here (make test installs it with npm where npm exists)")
    page, script = (output / "crowd.html").read_text(), (output / "crowd.js").read_text()
    for text in (page, script):
        assert "http://" not in text.replace("http://127.0.0.1", "") and "https://" not in text
    settings = json.loads((output / "crowd.json").read_text())
    assert (output / settings["sidecar"]).is_file() and (output / settings["gltf"]).is_file()
    assert (output / "three" / "LICENSE").read_text().startswith("The MIT License")
    modules = sorted((REPO_ROOT / "shaders" / "engines" / "three").glob("*.js"))
    assert "hybrid_skin_animtex.js" in [m.name for m in modules]
    for module in modules:  # the runtime's entry point and the modules it imports, as shipped
        assert (output / module.name).read_bytes() == module.read_bytes(), module.name
    assert "python3 -m http.server" in done.stdout.split("Done in")[1]
    if not any(_has_chromium(p) for p in os.environ["PATH"].split(os.pathsep)):
        pytest.skip("no Chromium here: the screenshot is checked where it is installed")
    line = next(s for s in done.stdout.splitlines() if "Crowd page" in s)
    assert "crowd.png (headless Chromium)" in line, line
    image = bpy.data.images.load(str(output / "crowd.png"))
    try:
        width, height = image.size
        pixels = np.empty(width * height * 4, np.float32)
        image.pixels.foreach_get(pixels)
    finally:
        bpy.data.images.remove(image)
    rgb = pixels.reshape(height, width, 4)[..., :3]
    assert (width, height) == (960, 540)
    sky, ground = rgb[-2, width // 2], rgb[1, width // 2]  # rows bottom-up: the top row is the sky
    drawn = (np.abs(rgb - sky).max(-1) > 0.05) & (np.abs(rgb - ground).max(-1) > 0.05)
    assert drawn.mean() > 0.01, drawn.mean()  # the instances, not an empty scene
