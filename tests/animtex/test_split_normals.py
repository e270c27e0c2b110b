"""Hard edges and custom split normals survive a VERTEX bake (issue 14 §4).

Truth: Blender's own corner normals of the evaluated meshes (``Mesh.corner_normals`` with the Armature
modifier on) at several frames. Decoded: each face corner's item from the ``animtex_corner_index``
attribute the bake wrote, its normal from the texture read back from disk (the core's reference
decoder). The parts are skinned rigidly (one bone each), where Blender's recomputed corner normals and
the bake's turned rest normals are the same rotation: they must agree within 1°.
"""

from __future__ import annotations

import numpy as np

from tests.support.animtex import bake, coordinates, load_bake, mesh_attribute
from tests.support.assets import play
from tests.support.hard_edges import corner_normals, hard_scene

FRAMES = (1.0, 4.0, 7.0, 9.0)
TOLERANCE_DEG = 1.0


def angles_deg(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    a = a / np.linalg.norm(a, axis=-1, keepdims=True)
    b = b / np.linalg.norm(b, axis=-1, keepdims=True)
    return np.degrees(np.arccos(np.clip(np.einsum("...i,...i->...", a, b), -1.0, 1.0)))


def test_hard_edges_and_custom_normals_match_blender(addon, core, tmp_path):
    arm, meshes = hard_scene()
    boxes, sphere = meshes
    action = arm.animation_data.action
    bake(directory=str(tmp_path), kind="VERTEX", precision="EXR32", file_name="hard")
    meta, texture = load_bake(core, tmp_path / "hard.json")
    names = meta["mesh_attributes"]
    assert names["corner_index"] == "animtex_corner_index"

    n_boxes, n_sphere = len(boxes.data.vertices), len(sphere.data.vertices)
    corner_items = [mesh_attribute(o, names["corner_index"], 1, "value", np.int32) for o in meshes]
    vertex_items = [mesh_attribute(o, names["texel_index"], 1, "value", np.int32) for o in meshes]
    # the flat boxes: 16 vertices, 48 corners of different faces → 48 items; the custom sphere: a
    # corner group per corner wherever the custom normals differ
    assert len(np.unique(corner_items[0])) == 48 == len(boxes.data.loops)
    assert meta["layout"]["item_count"] == 48 + len(np.unique(corner_items[1]))
    np.testing.assert_array_equal(vertex_items[0], np.arange(n_boxes))
    np.testing.assert_array_equal(vertex_items[1], n_boxes + np.arange(n_sphere))

    # every item's rest position is its vertex's: found through the corners
    rest = np.zeros((meta["layout"]["item_count"], 3), np.float32)
    for obj, items in zip(meshes, corner_items):
        corner_vertex = np.empty(len(obj.data.loops), np.int32)
        obj.data.loops.foreach_get("vertex_index", corner_vertex)
        rest[items] = coordinates(obj)[corner_vertex]

    clip = meta["clips"][0]
    worst = {o.name: 0.0 for o in meshes}
    smooth_worst = 0.0
    for frame in FRAMES:
        sample = (frame - clip["frame_start"]) / clip["frame_step"]
        _, normals = core.decode_vertex_frames(texture, rest, 0, np.array([sample]))
        play(arm, action, frame)
        for obj, items, own in zip(meshes, corner_items, vertex_items):
            corner_vertex = np.empty(len(obj.data.loops), np.int32)
            obj.data.loops.foreach_get("vertex_index", corner_vertex)
            truth = corner_normals(obj)
            worst[obj.name] = max(worst[obj.name], float(angles_deg(normals[0, items], truth).max()))
            if obj is boxes:  # one normal per vertex (the texel index alone) cannot shade a box
                per_vertex = normals[0, own[corner_vertex]]
                smooth_worst = max(smooth_worst, float(angles_deg(per_vertex, truth).max()))
    assert max(worst.values()) < TOLERANCE_DEG, worst
    assert smooth_worst > 45.0  # the test sees a per-vertex normal where a corner's is needed


def test_texel_uv_map_points_at_each_corners_item(addon, core, tmp_path):
    arm, meshes = hard_scene()
    bake(directory=str(tmp_path), kind="VERTEX", precision="PNG16", file_name="hard_uv")
    meta, _ = load_bake(core, tmp_path / "hard_uv.json")
    lay = meta["layout"]
    for obj in meshes:
        items = mesh_attribute(obj, "animtex_corner_index", 1, "value", np.int32)
        uv = mesh_attribute(obj, meta["mesh_attributes"]["texel_uv"], 2, "vector")
        texel = np.floor(uv * [lay["width"], lay["height"]]).astype(int)
        np.testing.assert_array_equal(texel[:, 0], items % lay["items_per_row"] * 2)
        np.testing.assert_array_equal(texel[:, 1], items // lay["items_per_row"])
