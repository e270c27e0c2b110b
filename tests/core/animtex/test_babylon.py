"""Bone bakes for engines (numpy only): the palette as a glTF skin, and Babylon.js's baked vertex animation.

The skinned file is read back with the spec-written reader of ``tests/support/gltf.py``; the Babylon.js
texture is read as Babylon's shader reads it (``readMatrixFromRawSamplerVAT``: 4 texels per bone, the
columns of a 4x4 matrix, row = frame) and blended as its ``bakedVertexAnimation.fx`` does (LBS).
"""

from __future__ import annotations

import base64
import json

import numpy as np
import pytest

from hybrid_skin.core.animtex import Clip
from hybrid_skin.core.animtex.babylon import BLENDER_TO_GLTF, babylon_vat
from hybrid_skin.core.animtex.gltf import (
    PlacementError,
    accessor,
    add_palette_skin,
    node_world_matrices,
    read_glb,
    skinned_placement,
    write_glb,
)
from tests.support.gltf import read_gltf

RNG = np.random.default_rng(11)


def _glb(tmp_path, indices: np.ndarray, weights: np.ndarray):
    """A two-node file as Blender's exporter writes a bone bake: positions, the float VEC4 custom
    attributes, a translated and a scaled node sharing nothing."""
    return _write(tmp_path, indices, weights, [{"name": "Body", "mesh": 0, "translation": [1.0, 2.0, 3.0],
                                                 "scale": [2.0, 2.0, 2.0]}, {"name": "Prop", "children": []}])


def _write(tmp_path, indices, weights, nodes, meshes=1):
    """A file of ``nodes`` whose ``meshes`` meshes each have the positions and the palette attributes."""
    n = len(indices)
    positions = RNG.normal(size=(n, 3)).astype(np.float32)
    blobs = [positions.tobytes(), indices.astype(np.float32).tobytes(), weights.astype(np.float32).tobytes()]
    faces = np.arange(n - n % 3, dtype=np.uint16)
    blobs.append(faces.tobytes())
    binary, views = bytearray(), []
    for blob in blobs:
        views.append({"buffer": 0, "byteOffset": len(binary), "byteLength": len(blob)})
        binary.extend(blob + b"\0" * (-len(blob) % 4))
    accessors = [
        {"bufferView": 0, "componentType": 5126, "count": n, "type": "VEC3"},
        {"bufferView": 1, "componentType": 5126, "count": n, "type": "VEC4"},
        {"bufferView": 2, "componentType": 5126, "count": n, "type": "VEC4"},
        {"bufferView": 3, "componentType": 5123, "count": len(faces), "type": "SCALAR"},
    ]
    primitive = {
        "attributes": {"POSITION": 0, "_ANIMTEX_BONE_INDICES": 1, "_ANIMTEX_BONE_WEIGHTS": 2},
        "indices": 3,
    }
    roots = [i for i in range(len(nodes)) if not any(i in n.get("children", ()) for n in nodes)]
    doc = {
        "asset": {"version": "2.0"},
        "scene": 0,
        "scenes": [{"nodes": roots}],
        "nodes": nodes,
        "meshes": [{"name": f"Body{m}" if m else "Body", "primitives": [primitive]} for m in range(meshes)],
        "accessors": accessors,
        "bufferViews": views,
        "buffers": [{"byteLength": len(binary)}],
    }
    path = tmp_path / "bake.glb"
    path.write_bytes(write_glb(doc, binary))
    return path, positions


def _influences(n: int, bones: int) -> tuple[np.ndarray, np.ndarray]:
    indices = RNG.integers(0, bones, (n, 4))
    weights = RNG.random((n, 4)) ** 2
    weights[:, 3] = 0.0  # an unused slot, as the bake writes vertices with fewer influences
    return indices, (weights / weights.sum(1, keepdims=True)).astype(np.float32)


def test_palette_skin_carries_the_bake_influences(tmp_path):
    names = ["hip", "spine", "arm", "HS_rest"]
    indices, weights = _influences(30, len(names))
    path, positions = _glb(tmp_path, indices, weights)
    data, skinned = add_palette_skin(path.read_bytes(), names)
    assert skinned == [0]
    out = tmp_path / "skinned.glb"
    out.write_bytes(data)
    nodes = read_gltf(out)  # the spec-written reader
    body = nodes["Body"]
    np.testing.assert_array_equal(body["POSITION"], positions)  # what was there stays
    np.testing.assert_array_equal(body["JOINTS_0"], indices)
    np.testing.assert_array_equal(body["WEIGHTS_0"], weights)
    doc, binary = read_glb(data)
    prim = doc["meshes"][0]["primitives"][0]
    assert doc["accessors"][prim["attributes"]["JOINTS_0"]]["componentType"] == 5121  # unsigned byte
    (skin,) = doc["skins"]
    assert [doc["nodes"][j]["name"] for j in skin["joints"]] == names  # joint i is palette bone i
    assert doc["nodes"][0]["skin"] == 0 and "skin" not in doc["nodes"][1]
    ibm = doc["accessors"][skin["inverseBindMatrices"]]
    assert (ibm["type"], ibm["count"]) == ("MAT4", len(names))
    # the skeleton's root is joint 0 (the validator's common root; no bone a loader would add), holding the
    # placement the exporter gave the skinned node, which is now a root without a transform of its own
    root = skin["joints"][0]
    assert skin["skeleton"] == root and root in doc["scenes"][0]["nodes"]
    assert doc["nodes"][root].get("children") == skin["joints"][1:]
    assert all(set(doc["nodes"][j]) == {"name"} for j in skin["joints"][1:])
    assert not {"matrix", "translation", "rotation", "scale"} & set(doc["nodes"][0])
    assert 0 in doc["scenes"][0]["nodes"]
    placement = [[2, 0, 0, 1], [0, 2, 0, 2], [0, 0, 2, 3], [0, 0, 0, 1]]
    np.testing.assert_allclose(skinned_placement(doc), placement, atol=1e-12)
    # glTF's skinning at rest (joint world x inverse bind matrix, weighted; the node's own transform
    # ignored) puts every vertex where the exporter placed it
    world = node_world_matrices(doc)
    ibm = accessor(doc, binary, skin["inverseBindMatrices"]).reshape(-1, 4, 4).transpose(0, 2, 1)
    joint = np.stack([world[j] for j in skin["joints"]]) @ ibm
    skinning = np.einsum("nk,nkij->nij", weights, joint[indices])
    placed = np.einsum("nij,nj->ni", skinning[:, :3, :3], positions) + skinning[:, :3, 3]
    np.testing.assert_allclose(placed, positions * 2 + [1, 2, 3], rtol=1e-6, atol=1e-6)
    assert len(data) % 4 == 0 and doc["buffers"][0]["byteLength"] <= len(binary)


def test_palette_skin_placement_of_older_files(tmp_path):
    """Files written before the skeleton had a root (joints at the scene's roots, the skinned node
    transformed) give the same placement: the skinned node's world matrix."""
    indices, weights = _influences(12, 3)
    path, _ = _glb(tmp_path, indices, weights)
    doc, binary = read_glb(add_palette_skin(path.read_bytes(), ["a", "b", "c"])[0])
    skin = doc["skins"][0]
    old = json.loads(json.dumps(doc))
    old["nodes"][0].update(translation=[1.0, 2.0, 3.0], scale=[2.0, 2.0, 2.0])
    for j in skin["joints"]:
        old["nodes"][j] = {"name": old["nodes"][j]["name"]}
    del old["skins"][0]["skeleton"]
    np.testing.assert_allclose(skinned_placement(old), skinned_placement(doc), atol=1e-12)
    assert skinned_placement({"nodes": []}) is None


def test_palette_skin_refuses_meshes_placed_apart(tmp_path):
    indices, weights = _influences(9, 3)
    nodes = [{"name": "A", "mesh": 0, "translation": [1.0, 0.0, 0.0]}, {"name": "B", "mesh": 1}]
    path, _ = _write(tmp_path, indices, weights, nodes, meshes=2)
    with pytest.raises(PlacementError, match="placed differently"):
        add_palette_skin(path.read_bytes(), ["a", "b", "c"])
    turned = {"rotation": [0.0, 0.6, 0.0, 0.8], "translation": [0.0, 1.0, 0.0]}
    nodes = [{"name": "A", "mesh": 0, **turned}, {"name": "B", "mesh": 1, **turned}]
    path, _ = _write(tmp_path, indices, weights, nodes, meshes=2)
    doc, _ = read_glb(add_palette_skin(path.read_bytes(), ["a", "b", "c"])[0])
    root = doc["nodes"][doc["skins"][0]["skeleton"]]
    np.testing.assert_allclose(root["rotation"], [0.0, 0.6, 0.0, 0.8], atol=1e-12)
    np.testing.assert_allclose(root["translation"], [0.0, 1.0, 0.0], atol=1e-12)
    assert "scale" not in root
    assert all("skin" in doc["nodes"][i] and "rotation" not in doc["nodes"][i] for i in (0, 1))


def test_palette_skin_refuses_what_it_cannot_carry(tmp_path):
    indices, weights = _influences(9, 5)
    path, _ = _glb(tmp_path, indices, weights)
    with pytest.raises(ValueError, match="names bone"):
        add_palette_skin(path.read_bytes(), ["a", "b"])
    with pytest.raises(ValueError, match="not a glTF binary"):
        add_palette_skin(b"{}", ["a"])
    many = [f"b{i}" for i in range(300)]  # above 256 bones: unsigned short joints
    doc, _ = read_glb(add_palette_skin(path.read_bytes(), many)[0])
    assert (
        doc["accessors"][doc["meshes"][0]["primitives"][0]["attributes"]["JOINTS_0"]]["componentType"] == 5123
    )


def _rigid(frames: int, bones: int) -> np.ndarray:
    m = np.tile(np.eye(4), (frames, bones, 1, 1))
    for f in range(frames):
        for b in range(bones):
            q = RNG.normal(size=4)
            w, x, y, z = q / np.linalg.norm(q)
            m[f, b, :3, :3] = 1.3 * np.array([
                [1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
                [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
                [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)],
            ])  # fmt: skip
            m[f, b, :3, 3] = RNG.normal(size=3)
    return m


def test_babylon_texture_plays_blenders_linear_blend():
    """Read as Babylon's shader reads it and blended as it blends, the texture gives the glTF-space
    positions of the Blender-space LBS: ``N · C · Σ w M p`` (``N`` the skinned node's world, which
    Babylon ignores for a skinned node)."""
    bones = 3
    clips = [Clip("walk", 1, 9, fps=24, loop=True, frame_step=2), Clip("wave", 0, 4, fps=24)]
    mats = [_rigid(c.frame_count, bones) for c in clips]
    node_world = np.diag([2.0, 2.0, 2.0, 1.0])
    node_world[:3, 3] = (0.5, -1.0, 4.0)
    doc = json.loads(json.dumps(babylon_vat(mats, clips, ["a", "b", "c"], node_world)))
    data = np.frombuffer(base64.b64decode(doc["vertexData"]), "<f4")
    assert (doc["width"], doc["height"]) == (4 * (bones + 1), 5 + 5)  # the loop's frame 0 again, 4 + 1
    texels = data.reshape(doc["height"], doc["width"], 4)
    walk, wave = doc["ranges"]
    assert (walk["from"], walk["to"], walk["loop"], walk["sample_rate"]) == (0, 4, True, 12)
    assert (wave["from"], wave["to"], wave["loop"], wave["sample_rate"]) == (5, 9, False, 24)

    def joint(row: int, index: int) -> np.ndarray:  # mat4(m0, m1, m2, m3): texels are columns
        return texels[row, 4 * index : 4 * index + 4].T.astype(np.float64)

    np.testing.assert_array_equal(joint(3, bones), np.eye(4))  # Babylon's spare matrix
    np.testing.assert_array_equal(texels[4], texels[0])  # the loop ends on its first frame
    p = RNG.normal(size=(7, 3))
    idx, w = _influences(7, bones)
    to_gltf = BLENDER_TO_GLTF
    for clip, rows, stack in ((0, range(0, 4), mats[0]), (1, range(5, 10), mats[1])):
        for frame, row in enumerate(rows):
            p_gltf = (to_gltf[:3, :3] @ p.T).T
            got = np.einsum("nk,nkij->nij", w, np.stack([[joint(row, b) for b in v] for v in idx]))
            got = np.einsum("nij,nj->ni", got, np.c_[p_gltf, np.ones(len(p))])[:, :3]
            lbs = np.einsum("nk,nkij->nij", w, stack[frame][idx])
            want = np.einsum("nij,nj->ni", lbs, np.c_[p, np.ones(len(p))])
            want = (node_world @ to_gltf @ np.c_[want[:, :3], np.ones(len(p))].T).T[:, :3]
            np.testing.assert_allclose(
                got, want, rtol=0, atol=2e-5 * np.abs(want).max(), err_msg=f"{clip} {frame}"
            )


def test_babylon_texture_refuses_mismatched_matrices():
    clips = [Clip("walk", 1, 5, fps=24)]
    with pytest.raises(ValueError, match="expected"):
        babylon_vat([_rigid(3, 2)], clips, ["a", "b"], np.eye(4))
    with pytest.raises(ValueError, match="matrix stacks"):
        babylon_vat([], clips, ["a"], np.eye(4))
