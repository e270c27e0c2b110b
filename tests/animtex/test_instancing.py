"""The instancing mesh: a bone bake's meshes as a static glTF whose UV channels carry the skin's data.

The tentacle rig (``tests/animtex/tentacle.py``) in factor mode Auto, given a UV map of its own on one
mesh, baked as BONE_DQ with glTF and the Instancing Mesh option. Read with the spec-written reader
(``tests/support/gltf.py``), ``<name>_instancing.glb`` has no skin, its meshes where the ``.glb``'s skin
places them, and per exported vertex, in the channels after the mesh's own UV maps and from ``TEXCOORD_2``
on (the sidecar's ``instancing``; empty channels before), exactly the palette indices, weights and Auto rest
data of the ``.glb``'s skin (``JOINTS_0``, ``WEIGHTS_0``, ``_ANIMTEX_AUTO_REST``) for the same Blender
vertex, which Godot's importer gives its shader as ``CUSTOM0``–``CUSTOM2``. The user's UV maps come
back as they were (names, data, active ones). Refused with one sentence before anything is written: a
VERTEX bake, and a mesh without room for the channels (Blender allows 8 UV maps).
"""

from __future__ import annotations

import os

import bpy
import numpy as np
import pytest

from tests.animtex.tentacle import tentacle_scene
from tests.support.animtex import load_bake
from tests.support.gltf import _load as gltf_document
from tests.support.gltf import read_gltf
from tests.support.snapshot import assert_same, snapshot


def test_instancing_mesh_carries_the_skin_in_uv_channels(addon, animtex, core, tmp_path):
    arm, meshes, actions = tentacle_scene()
    box = next(o for o in meshes if o.name == "Box")
    own = box.data.uv_layers.new(name="Paint")
    own.data.foreach_set("uv", np.linspace(0, 1, 2 * len(box.data.loops), dtype=np.float32))
    before = {o.name: (o.data.uv_layers.active_index, [uv.name for uv in o.data.uv_layers]) for o in meshes}
    options = animtex.BakeOptions(str(tmp_path), file_name="t", kind="BONE_DQ", export_gltf=True,
                                  export_instancing=True, factor_mode="AUTO")  # fmt: skip
    result = animtex.bake(bpy.context, arm, options, actions)
    assert sorted(os.listdir(tmp_path)) == ["t.glb", "t.json", "t.png", "t_instancing.glb"]
    assert result.instancing_path == str(tmp_path / "t_instancing.glb")
    after = {o.name: (o.data.uv_layers.active_index, [uv.name for uv in o.data.uv_layers]) for o in meshes}
    assert after == before  # the export's UV maps are gone again
    meta, _ = load_bake(core, tmp_path / "t.json")
    layout = meta["instancing"]
    # after the mesh's own UV maps, from TEXCOORD_2 at the earliest (empty channels before: Godot's CUSTOM0)
    assert layout["file"] == "t_instancing.glb" and layout["first_uv_channel"] == {"Box": 2, "Tentacle": 2}
    keys = ["bone_indices"] * 2 + ["bone_weights"] * 2 + ["auto_rest"] * 2
    assert [c["mesh_attribute"] for c in layout["channels"]] == keys
    skinned, static = read_gltf(tmp_path / "t.glb"), read_gltf(tmp_path / "t_instancing.glb")
    doc, _ = gltf_document(tmp_path / "t_instancing.glb")
    assert "skins" not in doc and not any("skin" in n for n in doc["nodes"])
    gltf = __import__(core.__name__ + ".gltf", fromlist=["skinned_placement"])
    placement = gltf.skinned_placement(gltf_document(tmp_path / "t.glb")[0])
    worlds = gltf.node_world_matrices(doc)
    for world in worlds.values():
        np.testing.assert_allclose(world, placement, atol=1e-6)
    for obj in meshes:
        s, got = skinned[obj.name], static[obj.name]
        assert "JOINTS_0" not in got and "WEIGHTS_0" not in got
        assert [a for a in got if a.startswith("_")] == ["_ANIMTEX_VERTEX"]  # the channels once, as UVs
        first = layout["first_uv_channel"][obj.name]
        data = {"bone_indices": np.zeros((len(got["POSITION"]), 4), np.float32)}
        data["bone_weights"], data["auto_rest"] = np.zeros_like(data["bone_indices"]), np.zeros_like(
            data["bone_indices"])  # fmt: skip
        for k, channel in enumerate(layout["channels"]):
            a, b = channel["components"]
            data[channel["mesh_attribute"]][:, [a, b]] = got[f"TEXCOORD_{first + k}"]
        # the same Blender vertex, the same numbers, bit for bit
        truth = {"bone_indices": s["JOINTS_0"].astype(np.float32), "bone_weights": s["WEIGHTS_0"],
                 "auto_rest": s["_ANIMTEX_AUTO_REST"]}  # fmt: skip
        by_vertex = {key: np.zeros((len(obj.data.vertices), 4), np.float32) for key in truth}
        for key in truth:
            by_vertex[key][s["_ANIMTEX_VERTEX"].astype(np.int64)] = truth[key]
            np.testing.assert_array_equal(data[key], by_vertex[key][got["_ANIMTEX_VERTEX"].astype(np.int64)])
        own = len(obj.data.uv_layers)
        for k in range(own, first):  # the empty channels between the mesh's own and the data
            np.testing.assert_array_equal(got[f"TEXCOORD_{k}"], 0.0)
        # Godot 4's importer: TEXCOORD_0/1 are UV/UV2, each further pair one CUSTOM vector (xy, zw), so the
        # crowd shader's CUSTOM0, CUSTOM1, CUSTOM2 are the indices, weights and Auto rest data exactly
        custom = [np.concatenate([got[f"TEXCOORD_{2 + 2 * c}"], got[f"TEXCOORD_{3 + 2 * c}"]], axis=1)
                  for c in range(3)]  # fmt: skip
        for c, key in enumerate(("bone_indices", "bone_weights", "auto_rest")):
            np.testing.assert_array_equal(custom[c], by_vertex[key][got["_ANIMTEX_VERTEX"].astype(np.int64)])
        if obj.name == "Box":  # its own UV map stays first, as the skinned export has it
            np.testing.assert_array_equal(got["_ANIMTEX_VERTEX"], s["_ANIMTEX_VERTEX"])
            np.testing.assert_array_equal(got["TEXCOORD_0"], s["TEXCOORD_0"])
    assert bpy.context.view_layer.objects.active == arm


@pytest.mark.parametrize("case", ["vertex", "no_room"])
def test_instancing_refused_before_anything_is_written(addon, tmp_path, case):
    arm, meshes, _ = tentacle_scene()
    kind = "VERTEX" if case == "vertex" else "BONE_MATRIX"
    if case == "no_room":
        for k in range(5):
            meshes[0].data.uv_layers.new(name=f"Map{k}")
    expected = {"vertex": "The instancing mesh carries bone indices and weights: bake BONE_MATRIX or BONE_DQ",
                "no_room": "Mesh 'Box' has 5 UV maps: the instancing mesh adds 4 and Blender allows 8"}[case]
    before = snapshot(folders=[tmp_path])
    with pytest.raises(RuntimeError, match=expected):
        bpy.ops.hybrid_skin.bake_animation_texture(
            directory=str(tmp_path), file_name="t", kind=kind, action_source="ALL", export_instancing=True
        )
    assert os.listdir(tmp_path) == []
    assert_same(before, snapshot(folders=[tmp_path]), "a refused instancing bake")
