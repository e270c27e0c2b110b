"""Babylon.js plays a bone bake with its own player, as Blender deforms the rig (LBS).

A rig none of the other tests use (:mod:`tests.animtex.tentacle`: a twisting tentacle and a hard-edged box,
actions keying only some bones, mesh units half the scene's) is baked by the command line with
``--babylon``: the bone-kind ``.glb`` (whose palette is a glTF skin) and ``<name>.babylon.json``, the
layout of Babylon's ``VertexAnimationBaker``. The page (``pages/babylon.js``) loads them with Babylon.js
(pinned in ``package-lock.json``) exactly as ``shaders/engines/babylon/README.md`` shows and gives thin
instances their own range, frame offset and speed; every vertex of every instance is drawn by Babylon's
own player code (its ``bakedVertexAnimation`` shader include) and read back from a float target.

Truth: Blender's own Armature modifier (LBS: Babylon's player blends matrices linearly, so the deform factor
does not apply) at the frame Babylon's player shows, in world coordinates. Babylon picks whole frames (no
interpolation); which frame is computed here from its shader's formula, with times half a frame away from
any frame change.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import bpy
import numpy as np
import pytest

from tests.animtex.tentacle import tentacle_scene
from tests.engines.browser import floats
from tests.support.animtex import scene_pose, set_pose
from tests.support.assets import play as play_action
from tests.support.blender import reset_to_empty_scene
from tests.support.gltf import read_gltf
from tests.support.scenes import native_positions

REPO_ROOT = Path(__file__).resolve().parents[2]
#: glTF's +Y up from Blender's axes: (x, y, z) -> (x, z, -y).
TO_GLTF = np.array([[1, 0, 0, 0], [0, 0, 1, 0], [0, -1, 0, 0], [0, 0, 0, 1]], dtype=np.float64)
#: The crowd's clock (Babylon's ``BakedVertexAnimationManager.time``, seconds).
TIME = 0.5 / 24
#: float32 matrices and float32 skinning on the GPU against Blender's float32 Armature modifier: relative to
#: the rig's size in scene units.
TOLERANCE = 2e-6


@pytest.fixture(scope="module")
def babylon_bake(addon, page_server):
    reset_to_empty_scene()
    arm, meshes, actions = tentacle_scene()
    blend = page_server.data_dir / "tentacle.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(blend), copy=True)
    reset_to_empty_scene()
    folder = page_server.data_dir / "babylon"
    done = subprocess.run(
        [sys.executable, "-m", "hybrid_skin", "bake-textures", str(blend), "--object", "TentacleRig",
         "--actions", *actions, "--kind", "BONE_MATRIX", "--precision", "PNG8", "--output", str(folder),
         "--name", "tentacle", "--babylon"],
        cwd=REPO_ROOT, capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in folder.iterdir()) == [
        "tentacle.babylon.json", "tentacle.glb", "tentacle.json", "tentacle.png",
    ]  # fmt: skip
    vat = json.loads((folder / "tentacle.babylon.json").read_text(encoding="utf-8"))
    return blend, folder, vat


def babylon_frame(spec: dict, time: float) -> int:
    """The texture row Babylon's player (``bakedVertexAnimation.fx``) shows at ``time``."""
    total = spec["to"] - spec["from"] + 1
    t = time * spec["fps"] / total
    correction = 0 if t < 1.0 else 1
    frames = total - correction
    frame = math.fmod(math.fmod(t, 1.0) * frames + spec["offset"], frames)
    return int(math.floor(frame)) + spec["from"] + correction


def instances(vat: dict) -> list[dict]:
    """Per clip: the first frames of the first run at other offsets, the last frame of a loop (its frame 0
    again), and a later run (Babylon wraps to a range's second frame), each placed elsewhere."""
    out = []
    for r in vat["ranges"]:
        total = r["to"] - r["from"] + 1
        fps = r["sample_rate"]
        for offset in (0, 3, total - 1):
            out.append({"from": r["from"], "to": r["to"], "offset": offset, "fps": fps})
        # a later run: t = TIME * fps / total lands at 1 + 2.5 / (total - 1), i.e. row from + 1 + 2
        later = (1 + 2.5 / (total - 1)) * total / TIME
        out.append({"from": r["from"], "to": r["to"], "offset": 0, "fps": later})
    for i, spec in enumerate(out):
        place = np.eye(4)
        place[:3, 3] = (1.5 * i, 0.0, -0.5 * (i % 3))
        spec["matrix"] = place.T.ravel().tolist()  # Babylon's matrix order: translation in 12..14
    return out


def test_babylon_plays_the_bake_as_blender_deforms_it(babylon_bake, page_server):
    blend, folder, vat = babylon_bake
    jobs = instances(vat)
    job = {"glb": "/data/babylon/tentacle.glb", "vat": "/data/babylon/tentacle.babylon.json", "time": TIME,
           "instances": jobs}  # fmt: skip
    result = page_server.run_page("babylon.html", job, timeout=300)
    assert result["bones"] == len(vat["bones"]) == 7  # Babylon's skeleton is the palette
    assert result["texture"] == [vat["width"], vat["height"]] == [4 * 8, vat["height"]]
    nodes = read_gltf(folder / "tentacle.glb")
    parts = {p["name"]: p for p in result["parts"]}
    assert sorted(parts) == ["Box", "Tentacle"]

    bpy.ops.wm.open_mainfile(filepath=str(blend), load_ui=False)
    arm = bpy.data.objects["TentacleRig"]
    pose = scene_pose(arm)  # what the bake gives the bones a clip does not key
    clips = {r["name"]: r for r in vat["ranges"]}
    meta = json.loads((folder / "tentacle.json").read_text(encoding="utf-8"))
    by_name = {c["name"]: c for c in meta["clips"]}
    diagonal = meta["error_report"]["bbox_diagonal"]
    rows_seen, worst = set(), 0.0
    for name, part in parts.items():
        n = part["vertices"]
        glb = nodes[name]
        np.testing.assert_array_equal(floats(part["rest"], (n, 3)), glb["POSITION"])  # Babylon kept the order
        np.testing.assert_array_equal(floats(part["joints"], (n, 4)), glb["JOINTS_0"])
        blender_vertex = glb["_ANIMTEX_VERTEX"].astype(np.int64)
        world = np.array(part["world"]).reshape(4, 4).T
        got = floats(part["positions"], (len(jobs), n, 4))[..., :3].astype(np.float64)
        obj = bpy.data.objects[name]
        for i, spec in enumerate(jobs):
            row = babylon_frame(spec, TIME)
            clip = next(r for r in clips.values() if r["from"] <= row <= r["to"])
            rows_seen.add(row - clip["from"])
            entry = by_name[clip["name"]]
            frame = entry["frame_start"] + entry["frame_step"] * ((row - clip["from"]) % entry["frame_count"])
            arm.animation_data_create()
            set_pose(arm, pose)
            play_action(arm, bpy.data.actions[clip["name"]], frame)
            truth = native_positions(obj, 0.0).astype(np.float64)[blender_vertex]  # the Armature modifier
            w = np.array(obj.matrix_world)
            want = (TO_GLTF @ w @ np.c_[truth, np.ones(n)].T).T[:, :3]
            place = np.array(spec["matrix"]).reshape(4, 4).T
            back = np.linalg.inv(world @ place) @ np.c_[got[i], np.ones(n)].T
            error = np.linalg.norm(back.T[:, :3] - want, axis=1)
            worst = max(worst, float(error.max()))
            assert error.max() <= TOLERANCE * diagonal, (name, i, spec, error.max())
    print(f"Babylon.js {result['version']} vs Blender's Armature modifier: max {worst:.3g} scene units "
          f"({worst / diagonal:.2g} of the size)")  # fmt: skip
    assert {0, 3} <= rows_seen  # first run at offsets 0 and 3, the later run's from + 1 + 2
