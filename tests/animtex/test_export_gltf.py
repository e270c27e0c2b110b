"""One export (issue 14 §5): a bake writes its meshes as .glb, with the mesh data an engine loader keeps.

The file is read with a reader written from the glTF spec (``tests/support/gltf.py``) and every exported
vertex is checked against the Blender mesh: position (glTF's +Y up), corner normal, its texture item and
corner item, the texel UV (glTF's v flipped), bone indices and weights; the user's meshes get no
leftover attribute and keep their selection.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import bpy
import numpy as np
import pytest

from tests.support.animtex import bake, coordinates, load_bake, mesh_attribute
from tests.support.gltf import _load as gltf_document
from tests.support.gltf import read_gltf
from tests.support.hard_edges import hard_scene

REPO_ROOT = Path(__file__).resolve().parents[2]


def blender_axes(v: np.ndarray) -> np.ndarray:
    """glTF's +Y up ``(x, y, z)`` → Blender's ``(x, -z, y)``."""
    return np.stack([v[:, 0], -v[:, 2], v[:, 1]], -1)


def corner_data(obj) -> tuple[np.ndarray, np.ndarray]:
    me = obj.data
    vertex = np.empty(len(me.loops), np.int32)
    me.loops.foreach_get("vertex_index", vertex)
    normals = np.empty(len(me.loops) * 3, np.float32)
    me.corner_normals.foreach_get("vector", normals)
    return vertex, normals.reshape(-1, 3)


def test_vertex_bake_exports_its_meshes(addon, core, tmp_path):
    arm, meshes = hard_scene()
    arm.select_set(True)
    bake(directory=str(tmp_path), kind="VERTEX", precision="PNG16", file_name="hard", export_gltf=True)
    assert sorted(os.listdir(tmp_path)) == ["hard.glb", "hard.json", "hard.png"]
    meta, _ = load_bake(core, tmp_path / "hard.json")
    lay = meta["layout"]
    nodes = read_gltf(tmp_path / "hard.glb")
    assert sorted(nodes) == ["Boxes", "Custom"]
    for obj in meshes:
        got = nodes[obj.name]
        vertex = got["_ANIMTEX_VERTEX"].astype(np.int64)
        np.testing.assert_allclose(blender_axes(got["POSITION"]), coordinates(obj)[vertex], atol=1e-6)
        texel_index = mesh_attribute(obj, "animtex_index", 1, "value", np.int32)
        np.testing.assert_array_equal(got["_ANIMTEX_INDEX"], texel_index[vertex])
        # each exported vertex's corner item is the item of one of its vertex's corners, with that normal
        item = got["_ANIMTEX_CORNER_INDEX"].astype(np.int64)
        corner_vertex, corner_normals = corner_data(obj)
        corner_item = mesh_attribute(obj, "animtex_corner_index", 1, "value", np.int32)
        pairs = set(zip(corner_vertex.tolist(), corner_item.tolist()))
        assert all((v, i) in pairs for v, i in zip(vertex.tolist(), item.tolist()))
        normal_of_item = dict(zip(corner_item.tolist(), corner_normals))
        want = np.array([normal_of_item[i] for i in item.tolist()])
        np.testing.assert_allclose(blender_axes(got["NORMAL"]), want, atol=2e-3)
        # the texel UV map: glTF's v runs from the top
        u = (item % lay["items_per_row"] * 2 + 0.5) / lay["width"]
        v = (item // lay["items_per_row"] + 0.5) / lay["height"]
        np.testing.assert_allclose(got["TEXCOORD_0"], np.stack([u, 1.0 - v], -1), atol=1e-7)
        assert not [a.name for a in obj.data.attributes if a.name.startswith("_")]
    assert len(np.unique(nodes["Boxes"]["_ANIMTEX_CORNER_INDEX"])) == 48  # the flat faces, split
    assert arm.select_get() and not any(o.select_get() for o in meshes)
    assert bpy.context.view_layer.objects.active == arm


def test_bone_bake_exports_indices_and_weights(addon, core, tmp_path):
    arm, meshes = hard_scene()
    bake(directory=str(tmp_path), kind="BONE_DQ", precision="EXR16", file_name="hard", export_gltf=True)
    assert sorted(os.listdir(tmp_path)) == ["hard.exr", "hard.glb", "hard.json"]
    nodes = read_gltf(tmp_path / "hard.glb")
    for obj in meshes:
        got = nodes[obj.name]
        vertex = got["_ANIMTEX_VERTEX"].astype(np.int64)
        for name in ("bone_indices", "bone_weights"):
            want = mesh_attribute(obj, f"animtex_{name}", 4, "color")[vertex]
            np.testing.assert_array_equal(got[f"_ANIMTEX_{name.upper()}"], want)
        assert "_ANIMTEX_CORNER_INDEX" not in got
        # never as vertex colours (a loader seeing COLOR_0 tints the mesh with the bone indices) ...
        assert not [a for a in got if a.startswith("COLOR_")], sorted(got)
        # ... but as the glTF skin of the palette: joint i is bone i of the sidecar
        np.testing.assert_array_equal(got["JOINTS_0"], got["_ANIMTEX_BONE_INDICES"])
        np.testing.assert_array_equal(got["WEIGHTS_0"], got["_ANIMTEX_BONE_WEIGHTS"])
    meta, _ = load_bake(core, tmp_path / "hard.json")
    doc, _ = gltf_document(tmp_path / "hard.glb")
    (skin,) = doc["skins"]
    assert [doc["nodes"][j]["name"] for j in skin["joints"]] == [b["name"] for b in meta["bones"]]


def test_bone_bake_keeps_the_vertex_colours_a_material_uses(addon, core, tmp_path):
    """A mesh without material gets no COLOR_0; one whose material reads a colour attribute of the
    user's keeps that one (and only that one); a plain material changes nothing."""
    arm, (boxes, custom) = hard_scene()
    red = bpy.data.materials.new("Red")
    if bpy.app.version < (5, 0, 0):  # always node-based from Blender 5
        red.use_nodes = True
    red.node_tree.nodes["Principled BSDF"].inputs["Base Color"].default_value = (0.8, 0.1, 0.1, 1.0)
    boxes.data.materials.append(red)
    colours = custom.data.color_attributes.new("Col", "FLOAT_COLOR", "POINT")
    colours.data.foreach_set("color", np.tile([0.2, 0.4, 0.6, 1.0], len(custom.data.vertices)))
    painted = bpy.data.materials.new("Painted")
    if bpy.app.version < (5, 0, 0):  # always node-based from Blender 5
        painted.use_nodes = True
    node = painted.node_tree.nodes.new("ShaderNodeVertexColor")
    node.layer_name = "Col"
    bsdf = painted.node_tree.nodes["Principled BSDF"]
    painted.node_tree.links.new(node.outputs["Color"], bsdf.inputs["Base Color"])
    custom.data.materials.append(painted)
    plain, _ = hard_scene()
    for name, obj in (("painted", arm), ("plain", plain)):
        for other in bpy.data.objects:
            other.select_set(False)
        bpy.context.view_layer.objects.active = obj
        bake(directory=str(tmp_path), kind="BONE_MATRIX", file_name=name, export_gltf=True)
    nodes = read_gltf(tmp_path / "painted.glb")
    assert not [a for a in nodes["Boxes"] if a.startswith("COLOR_")]
    assert [a for a in nodes["Custom"] if a.startswith("COLOR_")] == ["COLOR_0"]
    colour = nodes["Custom"]["COLOR_0"]
    colour = colour / np.iinfo(colour.dtype).max if colour.dtype.kind == "u" else colour  # normalised
    np.testing.assert_allclose(colour[:, :3], np.tile([0.2, 0.4, 0.6], (len(colour), 1)), atol=1e-4)
    for name, got in read_gltf(tmp_path / "plain.glb").items():
        assert not [a for a in got if a.startswith("COLOR_")], name


def test_export_needs_the_mesh_data(addon, tmp_path):
    hard_scene()
    with pytest.raises(RuntimeError, match="turn Mesh Data on to export glTF"):
        bpy.ops.hybrid_skin.bake_animation_texture(
            directory=str(tmp_path), file_name="hard", export_gltf=True, write_mesh_data=False
        )
    assert os.listdir(tmp_path) == []


def test_command_line_flag(addon, core, tmp_path):
    arm, meshes = hard_scene()
    blend = tmp_path / "hard.blend"
    action = arm.animation_data.action.name
    bpy.ops.wm.save_as_mainfile(filepath=str(blend), copy=True)
    before = blend.read_bytes()
    out = tmp_path / "out"
    done = subprocess.run(
        [sys.executable, "-m", "hybrid_skin", "bake-textures", str(blend), "--object", arm.name,
         "--actions", action, "--output", str(out), "--name", "hard", "--gltf"],
        cwd=REPO_ROOT, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert sorted(os.listdir(out)) == ["hard.glb", "hard.json", "hard.png"]
    assert str(out / "hard.glb") in done.stdout
    assert blend.read_bytes() == before  # without --save the .blend is left alone
    nodes = read_gltf(out / "hard.glb")
    assert len(np.unique(nodes["Boxes"]["_ANIMTEX_CORNER_INDEX"])) == 48


def test_babylon_export_beside_the_glb_and_its_refusals(addon, core, tmp_path):
    """The dialog's Babylon.js option writes ``<name>.babylon.json`` beside the ``.glb`` (bone kinds); a
    VERTEX bake or one without glTF is refused with one sentence and writes nothing."""
    import json

    hard_scene()
    with pytest.raises(RuntimeError, match="bake BONE_MATRIX or BONE_DQ with glTF on"):
        bpy.ops.hybrid_skin.bake_animation_texture(
            directory=str(tmp_path), file_name="hard", kind="VERTEX", export_gltf=True, export_babylon=True
        )
    with pytest.raises(RuntimeError, match="bake BONE_MATRIX or BONE_DQ with glTF on"):
        bpy.ops.hybrid_skin.bake_animation_texture(
            directory=str(tmp_path), file_name="hard", kind="BONE_DQ", export_babylon=True
        )
    assert os.listdir(tmp_path) == []
    bake(directory=str(tmp_path), kind="BONE_DQ", precision="PNG8", file_name="hard", export_gltf=True,
         export_babylon=True)  # fmt: skip
    assert sorted(os.listdir(tmp_path)) == ["hard.babylon.json", "hard.glb", "hard.json", "hard.png"]
    meta, _ = load_bake(core, tmp_path / "hard.json")
    vat = json.loads((tmp_path / "hard.babylon.json").read_text(encoding="utf-8"))
    (clip,) = meta["clips"]
    bones = len(meta["bones"])
    assert vat["bones"] == [b["name"] for b in meta["bones"]] and vat["width"] == 4 * (bones + 1)
    (entry,) = vat["ranges"]
    assert (entry["from"], entry["to"], entry["loop"]) == (0, clip["frame_count"] - 1, clip["loop"])
    assert entry["sample_rate"] == clip["sample_rate"] and vat["height"] == clip["frame_count"]
