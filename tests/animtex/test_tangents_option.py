"""The bake's Tangents option (normal maps): what it writes, and what it refuses before writing anything.

On the flat boxes and the custom-normals sphere of ``tests/support/hard_edges.py``, given a UV map: a VERTEX
bake stores 3 texels per item (a tangent texel, the sidecar's ``tangents`` block naming the UV map) whose
tangents at every stored frame are Blender's own MikkTSpace tangents (``Mesh.calc_tangents``) of the mesh
deformed to that frame, at every face corner of each item, made perpendicular to the item's normal; the
hard edges still split. A bone bake's ``.glb`` carries ``TANGENT`` (the rest tangents a runtime turns).
Refused with one sentence, before anything is written and with the user's data unchanged: a mesh without a
UV map, and a mesh with a face of more than 4 corners (Blender cannot compute tangents there).
"""

from __future__ import annotations

import os

import bmesh
import bpy
import numpy as np
import pytest

from tests.support.animtex import bake, load_bake
from tests.support.assets import play
from tests.support.gltf import read_gltf
from tests.support.hard_edges import _object, _skin_rigidly, hard_scene
from tests.support.snapshot import assert_same, snapshot


def with_uv_maps(meshes) -> None:
    for obj in meshes:
        uv = obj.data.uv_layers.new(name="UVMap")
        co = np.array([obj.data.vertices[lp.vertex_index].co for lp in obj.data.loops])
        uv.data.foreach_set("uv", np.c_[co[:, 0] + 0.3 * co[:, 2], co[:, 1] + 0.2 * co[:, 2]].ravel())


def corner_tangents(mesh) -> np.ndarray:
    mesh.calc_tangents(uvmap="UVMap")
    t = np.empty(len(mesh.loops) * 3, np.float32)
    mesh.loops.foreach_get("tangent", t)
    sign = np.empty(len(mesh.loops), np.float32)
    mesh.loops.foreach_get("bitangent_sign", sign)
    mesh.free_tangents()
    return np.c_[t.reshape(-1, 3), sign]


def test_vertex_bake_stores_blenders_deformed_tangents(addon, core, tmp_path):
    arm, meshes = hard_scene()
    with_uv_maps(meshes)
    bake(directory=str(tmp_path), kind="VERTEX", precision="EXR32", file_name="hard", tangents=True,
         export_gltf=True)  # fmt: skip
    meta, texture = load_bake(core, tmp_path / "hard.json")
    assert meta["layout"]["texels_per_item"] == 3
    assert meta["tangents"] == {**meta["tangents"], "uv_maps": ["UVMap", "UVMap"], "stored": "texture"}
    assert "TANGENT" in read_gltf(tmp_path / "hard.glb")["Boxes"]
    (clip,) = meta["clips"]
    decode = __import__(core.__name__ + ".decode", fromlist=["decode_vertex_tangents"])
    worst = 0.0
    for frame in range(clip["frame_count"]):
        got = decode.decode_vertex_tangents(texture, 0, float(frame))[0]
        play(arm, arm.animation_data.action, clip["frame_start"] + clip["frame_step"] * frame)
        depsgraph = bpy.context.evaluated_depsgraph_get()
        for obj in meshes:
            item = np.empty(len(obj.data.loops), np.int32)
            obj.data.attributes["animtex_corner_index"].data.foreach_get("value", item)
            evaluated = obj.evaluated_get(depsgraph)
            mesh = evaluated.to_mesh()
            try:
                want = corner_tangents(mesh)
                normals = np.empty(len(mesh.loops) * 3, np.float32)
                mesh.corner_normals.foreach_get("vector", normals)
            finally:
                evaluated.to_mesh_clear()
            np.testing.assert_array_equal(got[item, 3], want[:, 3])
            # Blender's tangent of the corner, perpendicular to the item's normal (the texture's cofactor
            # normal, within a degree of Blender's corner normal on these rigid parts)
            n = decode.decode_vertex_frames(texture, np.zeros((meta["layout"]["item_count"], 3)), 0,
                                            float(frame))[1][0][item]  # fmt: skip
            w = want[:, :3] - np.sum(want[:, :3] * n, 1, keepdims=True) * n
            w /= np.linalg.norm(w, axis=1, keepdims=True)
            cos = np.clip(np.sum(got[item, :3] * w, 1), -1, 1)
            worst = max(worst, float(np.degrees(np.arccos(cos)).max()))
    print(f"stored tangents within {worst:.3g} degrees of Blender's MikkTSpace of the deformed meshes")
    assert worst < 0.05
    assert meta["layout"]["item_count"] > sum(len(o.data.vertices) for o in meshes)  # hard edges still split


def test_bone_bake_exports_rest_tangents(addon, core, tmp_path):
    arm, meshes = hard_scene()
    with_uv_maps(meshes)
    bake(directory=str(tmp_path), kind="BONE_DQ", file_name="hard", tangents=True, export_gltf=True)
    meta, _ = load_bake(core, tmp_path / "hard.json")
    assert meta["tangents"]["stored"] == "mesh" and meta["layout"]["texels_per_item"] == 2
    nodes = read_gltf(tmp_path / "hard.glb")
    for obj in meshes:
        got = nodes[obj.name]["TANGENT"]
        assert got.shape[1] == 4 and set(np.unique(got[:, 3])) <= {-1.0, 1.0}


def _ngon(arm) -> bpy.types.Object:
    bm = bmesh.new()
    verts = [bm.verts.new((0.3 * np.cos(a), 0.3 * np.sin(a), 0.5)) for a in np.linspace(0, 2 * np.pi, 6)[:-1]]
    bm.faces.new(verts)
    obj = _object("Pentagon", bm)
    _skin_rigidly(obj, arm, np.zeros(5, int))
    return obj


@pytest.mark.parametrize("case", ["no_uv_map", "ngon"])
def test_tangents_refused_before_anything_is_written(addon, tmp_path, case):
    arm, meshes = hard_scene()
    if case == "ngon":
        meshes.append(_ngon(arm))
        with_uv_maps(meshes)
        expected = "Blender cannot compute tangents on mesh 'Pentagon': it has faces of more than 4 corners"
    else:
        with_uv_maps(meshes[:1])
        expected = "Mesh 'Custom' has no UV map: tangents follow a UV map"
    before = snapshot(folders=[tmp_path])
    with pytest.raises(RuntimeError, match=expected):
        bpy.ops.hybrid_skin.bake_animation_texture(directory=str(tmp_path), file_name="hard", tangents=True)
    assert os.listdir(tmp_path) == []
    assert_same(before, snapshot(folders=[tmp_path]), "a refused Tangents bake")
