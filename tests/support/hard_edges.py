"""A hard-edged rig for the split-normal tests (issue 14 §4): flat boxes and custom split normals.

Two bones, each part skinned rigidly to one of them, so that Blender's corner normals of the deformed
mesh and a bake's turned rest corner normals are the same rotation.
"""

from __future__ import annotations

import math

import bmesh
import bpy
import numpy as np
from mathutils import Matrix

from tests.support.animtex import coordinates
from tests.support.scenes import make_chain_armature

__all__ = ["corner_normals", "hard_scene"]


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
