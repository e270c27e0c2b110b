"""A bone-kind ``.glb`` loaded with the three.js README's own code renders in its materials' colours.

Issue 28 §1: the bake's glTF export wrote the bone indices and weights also as ``COLOR_0…COLOR_3``, and
three's GLTFLoader turns vertex colours on whenever ``COLOR_0`` exists: a crowd of meshes without a
material was drawn coloured by bone index. Here the hard-edged rig (:mod:`tests.support.hard_edges`; its
``Custom`` part given a red material, ``Boxes`` left without one) is baked as BONE_DQ with ``--gltf`` and
drawn by ``pages/three.js`` (mode ``colours``) with the README's loading code, under an ambient and a
directional light. Checks: no geometry has a ``color`` attribute and no material has vertex colours on; the
picture equals, pixel for pixel, the same crowd with every material's vertex colours forced off; ``Boxes``
(GLTFLoader's default material: white, metallic) is grey everywhere and ``Custom`` is red.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import bpy
import numpy as np
import pytest

from tests.engines.browser import floats
from tests.engines.test_three_runtime import TIME, instance
from tests.support.blender import reset_to_empty_scene
from tests.support.hard_edges import hard_scene

REPO_ROOT = Path(__file__).resolve().parents[2]
WIDTH, HEIGHT = 320, 240


@pytest.fixture(scope="module")
def coloured_bake(addon, page_server):
    reset_to_empty_scene()
    arm, (_boxes, custom) = hard_scene()
    red = bpy.data.materials.new("Red")
    if bpy.app.version < (5, 0, 0):  # always node-based from Blender 5
        red.use_nodes = True
    red.node_tree.nodes["Principled BSDF"].inputs["Base Color"].default_value = (0.8, 0.05, 0.05, 1.0)
    custom.data.materials.append(red)
    blend = page_server.data_dir / "coloured.blend"
    name, action = arm.name, arm.animation_data.action.name
    bpy.ops.wm.save_as_mainfile(filepath=str(blend), copy=True)
    reset_to_empty_scene()
    folder = page_server.data_dir / "colours"
    done = subprocess.run(
        [sys.executable, "-m", "hybrid_skin", "bake-textures", str(blend), "--object", name,
         "--actions", action, "--kind", "BONE_DQ", "--precision", "EXR16", "--output", str(folder),
         "--name", "hard", "--gltf"],
        cwd=REPO_ROOT, capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return folder


def test_bone_kind_glb_renders_in_the_materials_colours(coloured_bake, page_server):
    import json

    meta = json.loads((coloured_bake / "hard.json").read_text(encoding="utf-8"))
    clip = meta["clips"][0]
    instances = []
    for i, sample in enumerate((0.0, 3.0, 5.5, 8.0)):
        spec = instance(clip, sample)
        place = np.eye(4)
        place[:3, 3] = (1.6 * i - 2.4, 0.0, 0.0)
        spec["matrix"] = place.T.ravel().tolist()
        instances.append(spec)
    job = {
        "mode": "colours", "width": WIDTH, "height": HEIGHT, "time": TIME, "instances": instances,
        "sidecar": "/data/colours/hard.json", "gltf": "/data/colours/hard.glb", "sun": [2.0, 4.0, 3.0],
        "camera": {"fov": 45.0, "position": [0.0, 1.6, 5.5], "target": [0.0, 1.0, 0.0]},
    }  # fmt: skip
    result = page_server.run_page("three.html", job)
    loaded = floats(result["as_loaded"], (HEIGHT, WIDTH, 4))
    plain = floats(result["without_vertex_colours"], (HEIGHT, WIDTH, 4))
    parts = {"Boxes" if p["color"] == [1.0, 1.0, 1.0] else "Custom": p for p in result["parts"]}
    assert sorted(parts) == ["Boxes", "Custom"], [p["color"] for p in result["parts"]]
    for name, part in parts.items():
        assert "color" not in part["attributes"] and not part["vertexColors"], (name, part)
    np.testing.assert_array_equal(loaded, plain)  # no vertex colour reaches the picture
    masks = {name: floats(p["mask"], (HEIGHT, WIDTH)) > 0.5 for name, p in parts.items()}
    boxes = masks["Boxes"] & ~masks["Custom"]
    custom = masks["Custom"] & ~masks["Boxes"]
    assert boxes.sum() > 2000 and custom.sum() > 1000, (boxes.sum(), custom.sum())
    grey = loaded[boxes][:, :3]
    chroma = grey.max(axis=1) - grey.min(axis=1)
    print(f"Boxes: {boxes.sum()} px, mean colour {grey.mean(0).round(1)}, chroma max {chroma.max():g}")
    assert chroma.max() <= 2  # GLTFLoader's default material (white) under white lights: grey
    assert (grey.max(axis=1) > 8).mean() > 0.5  # and lit, not black
    red = loaded[custom][:, :3]
    print(f"Custom: {custom.sum()} px, mean colour {red.mean(0).round(1)}")
    assert np.all(red[:, 0] >= red[:, 1]) and np.all(red[:, 1] == red[:, 2])  # the red material, lit white
    assert red[:, 0].mean() > 3 * red[:, 1].mean()
