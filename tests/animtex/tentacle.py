"""A rig unlike the glTF assets, built in Blender: a twisting tentacle and a hard-edged box.

* ``Tentacle``: a smooth cylinder (24 segments, 24 rings) along a chain of 5 bones, weights blended over
  each joint: the actions twist and bend it (LBS's candy wrapper, DQS's bulge).
* ``Box``: a flat-shaded cube (hard edges: every corner carries its face's normal) on two bones, its
  bottom on ``Base`` and its top on ``Lid``, rigidly.
* Actions that key only some bones: ``Twist`` (a cycle, 1-13, *Manual Frame Range* + *Cyclic*) keys the
  tentacle's bones only; ``Open`` (1-9, not cyclic) keys ``Lid`` only. The scene's pose has ``Lid`` turned
  and ``Tent2`` bent, so a clip shows the bones it does not key as the scene poses them.
* Mesh and scene units differ: the armature object is scaled by :data:`SCALE` (and moved and turned); the
  meshes are its children with identity local transforms, so a mesh unit is 2 scene units.
"""

from __future__ import annotations

import math

import bmesh
import bpy
import numpy as np
from mathutils import Euler, Matrix, Quaternion

__all__ = ["SCALE", "TENTACLE_BONES", "tentacle_scene"]

SCALE = 2.0
TENTACLE_BONES = [f"Tent{i}" for i in range(5)]
BONE_LENGTH = 0.4


def _armature() -> bpy.types.Object:
    data = bpy.data.armatures.new("TentacleRig")
    arm = bpy.data.objects.new("TentacleRig", data)
    bpy.context.scene.collection.objects.link(arm)
    bpy.context.view_layer.objects.active = arm
    bpy.ops.object.mode_set(mode="EDIT")
    parent = None
    for i, name in enumerate(TENTACLE_BONES):
        eb = data.edit_bones.new(name)
        eb.head, eb.tail = (0.0, 0.0, i * BONE_LENGTH), (0.0, 0.0, (i + 1) * BONE_LENGTH)
        if parent is not None:
            eb.parent, eb.use_connect = parent, True
        parent = eb
    base = data.edit_bones.new("Base")
    base.head, base.tail = (1.0, 0.0, 0.0), (1.0, 0.0, 0.25)
    lid = data.edit_bones.new("Lid")
    lid.head, lid.tail = (1.0, -0.25, 0.5), (1.0, 0.25, 0.5)  # a hinge along +Y at the box's top
    lid.parent = base
    bpy.ops.object.mode_set(mode="OBJECT")
    arm.location = (0.3, -0.2, 0.1)
    arm.rotation_euler = (0.0, 0.0, math.radians(30.0))
    arm.scale = (SCALE, SCALE, SCALE)
    return arm


def _child(name: str, bm: bmesh.types.BMesh, arm: bpy.types.Object) -> bpy.types.Object:
    me = bpy.data.meshes.new(name)
    bm.to_mesh(me)
    bm.free()
    obj = bpy.data.objects.new(name, me)
    bpy.context.scene.collection.objects.link(obj)
    obj.parent = arm
    mod = obj.modifiers.new("Armature", "ARMATURE")
    mod.object = arm
    return obj


def _tentacle(arm: bpy.types.Object) -> bpy.types.Object:
    bm = bmesh.new()
    height = BONE_LENGTH * len(TENTACLE_BONES)
    bmesh.ops.create_cone(
        bm, cap_ends=True, cap_tris=False, segments=24, radius1=0.14, radius2=0.06, depth=height
    )
    bmesh.ops.translate(bm, verts=bm.verts, vec=(0.0, 0.0, height / 2))
    side = [e for e in bm.edges if abs(e.verts[0].co.z - e.verts[1].co.z) > 1e-6]
    bmesh.ops.subdivide_edges(bm, edges=side, cuts=23, use_grid_fill=True)
    for f in bm.faces:
        f.smooth = True
    obj = _child("Tentacle", bm, arm)
    z = np.array([v.co.z for v in obj.data.vertices])
    weights = np.zeros((len(z), len(TENTACLE_BONES)))
    weights[:, 0] = 1.0
    blend = 0.2
    for j in range(1, len(TENTACLE_BONES)):
        t = np.clip((z - (j * BONE_LENGTH - blend / 2)) / blend, 0.0, 1.0)
        weights[:, j] = t
        weights[:, j - 1] *= 1.0 - t
    for b in np.random.default_rng(5).permutation(len(TENTACLE_BONES)):  # stored order != bone order
        group = obj.vertex_groups.new(name=TENTACLE_BONES[b])
        for value in np.unique(weights[:, b]):
            if value > 0:
                group.add(np.flatnonzero(weights[:, b] == value).tolist(), float(value), "REPLACE")
    return obj


def _box(arm: bpy.types.Object) -> bpy.types.Object:
    bm = bmesh.new()
    bmesh.ops.create_cube(bm, size=0.5, matrix=Matrix.Translation((1.0, 0.0, 0.25)))
    obj = _child("Box", bm, arm)  # bmesh faces are flat: hard edges everywhere
    top = [v.index for v in obj.data.vertices if v.co.z > 0.25]
    bottom = [v.index for v in obj.data.vertices if v.co.z <= 0.25]
    obj.vertex_groups.new(name="Base").add(bottom, 1.0, "REPLACE")
    obj.vertex_groups.new(name="Lid").add(top, 1.0, "REPLACE")
    return obj


def _key(arm, action_name: str, keys: dict[int, dict[str, tuple]], cyclic: bool) -> bpy.types.Action:
    anim = arm.animation_data or arm.animation_data_create()
    anim.action = bpy.data.actions.new(action_name)
    for frame, poses in keys.items():
        for bone, (axis_deg, twist_deg) in poses.items():
            pb = arm.pose.bones[bone]
            pb.rotation_mode = "QUATERNION"
            bend = Euler([math.radians(a) for a in axis_deg]).to_quaternion()
            pb.rotation_quaternion = bend @ Quaternion((0.0, 1.0, 0.0), math.radians(twist_deg))
            pb.keyframe_insert("rotation_quaternion", frame=frame)
    action = anim.action
    action.use_fake_user = True  # kept in a saved file while no object uses it
    if cyclic:
        action.use_frame_range = True
        action.frame_start, action.frame_end = min(keys), max(keys)
        action.use_cyclic = True
    return action


def tentacle_scene() -> tuple[bpy.types.Object, list[bpy.types.Object], list[str]]:
    """``(armature, [Box, Tentacle], action names)``; the armature active, no action assigned, the scene's
    pose set (``Lid`` open by 25°, ``Tent2`` bent) for the bones a clip does not key."""
    arm = _armature()
    meshes = [_box(arm), _tentacle(arm)]
    rest = {b: ((0, 0, 0), 0) for b in TENTACLE_BONES[1:]}
    twisted = {b: ((15 + 5 * i, 0, 10), 55 + 10 * i) for i, b in enumerate(TENTACLE_BONES[1:])}
    back = {b: ((-20, 10, 0), -35) for b in TENTACLE_BONES[1:]}
    twist = _key(arm, "Twist", {1: rest, 5: twisted, 9: back, 13: rest}, cyclic=True)
    lid = {1: {"Lid": ((0, 0, 0), 0)}, 5: {"Lid": ((0, 0, 0), 70)}, 9: {"Lid": ((0, 0, 15), 40)}}
    opened = _key(arm, "Open", lid, cyclic=False)
    arm.animation_data.action = None
    for pb in arm.pose.bones:
        pb.rotation_mode = "QUATERNION"
        pb.rotation_quaternion = (1.0, 0.0, 0.0, 0.0)
    arm.pose.bones["Lid"].rotation_quaternion = Quaternion((0.0, 1.0, 0.0), math.radians(25.0))
    arm.pose.bones["Tent2"].rotation_quaternion = Euler((math.radians(30.0), 0.0, 0.0)).to_quaternion()
    bpy.context.view_layer.objects.active = arm
    bpy.context.view_layer.update()
    return arm, meshes, [twist.name, opened.name]
