"""Hard edges and custom split normals survive a VERTEX bake (issue 14 §4).

Truth: Blender's own corner normals of the evaluated meshes (``Mesh.corner_normals`` with the Armature
modifier on) at several frames. Decoded: each face corner's item from the ``animtex_corner_index``
attribute the bake wrote, its normal from the texture read back from disk (the core's reference
decoder). The parts are skinned rigidly (one bone each), where Blender's recomputed corner normals and
the bake's turned rest normals are the same rotation: they must agree within 1°.
"""

from __future__ import annotations

import math

import bmesh
import bpy
import numpy as np
from mathutils import Matrix

from tests.support.animtex import bake, coordinates, load_bake, mesh_attribute
from tests.support.assets import play
from tests.support.scenes import make_chain_armature

FRAMES = (1.0, 4.0, 7.0, 9.0)
TOLERANCE_DEG = 1.0


def _object(name: str, bm: bmesh.types.BMesh) -> bpy.types.Object:
    me = bpy.data.meshes.new(name)
    bm.to_mesh(me)
    bm.free()
    obj = bpy.data.objects.new(name, me)
    bpy.context.scene.collection.objects.link(obj)
    return obj


def _skin_rigidly(obj: bpy.types.Object, arm: bpy.types.Object, bone_of_vertex: np.ndarray) -> None:
    for name in ("Bone0", "Bone1"):
        obj.vertex_groups.new(name=name)
    for v, bone in enumerate(bone_of_vertex):
        obj.vertex_groups[int(bone)].add([v], 1.0, "REPLACE")
    mod = obj.modifiers.new("Armature", "ARMATURE")
    mod.object = arm


def hard_scene() -> tuple[bpy.types.Object, list[bpy.types.Object]]:
    """A two-bone arm: two flat-shaded boxes (one per bone) and a smooth sphere with custom split
    normals on the upper bone; both bones keyed over frames 1-9."""
    arm = make_chain_armature("HardRig", [1.0, 1.0])
    bm = bmesh.new()
    for z in (0.5, 1.5):
        bmesh.ops.create_cube(bm, size=0.6, matrix=Matrix.Translation((0.0, 0.0, z)))
    boxes = _object("Boxes", bm)  # bmesh faces are flat: every box corner has its face's normal
    _skin_rigidly(boxes, arm, (coordinates(boxes)[:, 2] > 1.0).astype(int))

    bm = bmesh.new()
    bmesh.ops.create_uvsphere(
        bm, u_segments=12, v_segments=8, radius=0.3, matrix=Matrix.Translation((0.6, 0.0, 1.5))
    )
    for f in bm.faces:
        f.smooth = True
    sphere = _object("Custom", bm)
    me = sphere.data
    # custom normals: each corner's smooth normal tilted towards its face's normal and towards +X
    face_of_corner = np.repeat(np.arange(len(me.polygons)), [p.loop_total for p in me.polygons])
    face_normals = np.array([p.normal for p in me.polygons])
    smooth = np.array([me.vertices[lp.vertex_index].normal for lp in me.loops])
    custom = smooth + 0.6 * face_normals[face_of_corner] + np.array([0.4, 0.0, 0.0])
    custom /= np.linalg.norm(custom, axis=1, keepdims=True)
    me.normals_split_custom_set([tuple(n) for n in custom])
    _skin_rigidly(sphere, arm, np.ones(len(me.vertices), int))

    for frame, (a, b) in {1: (0, 0), 5: (35, -50), 9: (-20, 80)}.items():
        for bone, angles in (("Bone0", (a, 0, 0)), ("Bone1", (0, b, 0.5 * b))):
            pb = arm.pose.bones[bone]
            pb.rotation_mode = "XYZ"
            pb.rotation_euler = [math.radians(x) for x in angles]
            pb.keyframe_insert("rotation_euler", frame=frame)
    bpy.context.view_layer.objects.active = arm
    return arm, [boxes, sphere]


def corner_normals(obj: bpy.types.Object) -> np.ndarray:
    """Blender's corner normals of the evaluated object (Armature modifier on), mesh-local."""
    me = obj.evaluated_get(bpy.context.evaluated_depsgraph_get()).data
    out = np.empty(len(me.loops) * 3, np.float32)
    me.corner_normals.foreach_get("vector", out)
    return out.reshape(-1, 3)


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
