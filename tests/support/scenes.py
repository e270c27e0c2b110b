"""Scene builders and Blender's own deformation (the oracle) for the Blender tests.

Every builder returns real Blender objects made through bpy; the oracle evaluates Armature
modifiers — Blender's C++ deformation — and restores the user's modifier settings afterwards.
"""

from __future__ import annotations

import math
import re

import bmesh
import bpy
import numpy as np
from mathutils import Euler, Matrix, Vector

FACTOR_GROUP = "HS_oracle_factor"


def evaluated_positions(obj: bpy.types.Object) -> np.ndarray:
    dg = bpy.context.evaluated_depsgraph_get()
    me = obj.evaluated_get(dg).data
    out = np.empty(len(me.vertices) * 3, dtype=np.float32)
    me.vertices.foreach_get("co", out)
    return out.reshape(-1, 3)


def group_weights(obj: bpy.types.Object, name: str) -> np.ndarray:
    """The vertex group's weight of every vertex, 0 where a vertex is not in it."""
    index = obj.vertex_groups[name].index
    weights = np.zeros(len(obj.data.vertices))
    for v in obj.data.vertices:
        for g in v.groups:
            if g.group == index:
                weights[v.index] = g.weight
    return weights


def native_positions(obj: bpy.types.Object, deform_factor: float | np.ndarray) -> np.ndarray:
    """Blender's own result: LBS (f=0), Preserve Volume (f=1), or LBS + multi-modifier DQS mix.

    The mix is an LBS Armature modifier followed by a Preserve Volume one with Multi Modifier and a
    vertex group of weight f: Blender interpolates (1-f)·LBS + f·DQS per vertex. When the modifier has
    a mask vertex group that setup cannot express the mask on the DQS part (the multi-modifier's own
    group is the mix weight), so the mix is taken from Blender's masked LBS and masked DQS results.

    Evaluated on a plain copy of the object (:func:`plain_copy`): Hybrid Skin's own setup on the object
    (its Preserve Volume modifier, its hidden modifiers) takes no part, and its handlers never see the
    oracle's temporary modifier on the object under test.
    """
    with plain_copy(obj) as copy:
        return _native_positions(copy, deform_factor)


class plain_copy:  # noqa: N801 - used as a context manager, like contextlib's
    """A copy of ``obj`` (its own mesh, same place, parent and weights) without Hybrid Skin: the add-on's
    modifiers (``HybridSkin Rest``, ``Keep LBS``, ``DQS``, ``Mix``; earlier builds' factor group) and
    per-vertex data removed and its settings off; removed again on leaving."""

    def __init__(self, obj: bpy.types.Object):
        self.obj = obj

    def __enter__(self) -> bpy.types.Object:
        obj = self.obj
        copy = obj.copy()
        copy.data = obj.data.copy()
        if hasattr(copy, "hybrid_skin"):
            copy.hybrid_skin.saved_state = ""  # the original's record: not the copy's to restore
            copy.hybrid_skin.bake_state = ""
            copy.hybrid_skin.enabled = False
        parts = r"HybridSkin (Rest|Keep LBS|DQS|Mix)(\.\d+)?"
        for mod in [m for m in copy.modifiers if re.fullmatch(parts, m.name)]:
            copy.modifiers.remove(mod)
        for name in [a.name for a in copy.data.attributes if a.name.startswith(".hybrid_skin_")]:
            copy.data.attributes.remove(copy.data.attributes[name])
        ours = [g for g in copy.vertex_groups if g.name.startswith("HybridSkin Factor") and g.lock_weight]
        for group in ours:
            copy.vertex_groups.remove(group)
        for mod in copy.modifiers:
            if mod.type == "ARMATURE":
                mod.show_viewport = True  # (hidden on the original by the GPU display)
        # Where the original is (its layer's visibility), unless that collection is a library's or an
        # override's, which take no new objects.
        local = [c for c in obj.users_collection if c.library is None and c.override_library is None]
        for collection in local:
            collection.objects.link(copy)
        if not local:
            bpy.context.scene.collection.objects.link(copy)
        self.copy = copy
        bpy.context.view_layer.update()
        return copy

    def __exit__(self, *_exc) -> None:
        mesh = self.copy.data
        bpy.data.objects.remove(self.copy)
        bpy.data.meshes.remove(mesh)
        bpy.context.view_layer.update()


class native_twin(plain_copy):  # noqa: N801 - a context manager
    """A plain copy of ``obj`` (see :class:`plain_copy`) that Blender deforms by its own exact hybrid at
    ``deform_factor`` (one number, or one per vertex) for as long as the block runs: the user's Armature
    modifier as LBS, a Preserve Volume one with Multi Modifier after it mixing by a vertex group. What a
    scene built on it computes (clothing, instances, exports) is what Blender alone computes for the
    hybrid."""

    def __init__(self, obj: bpy.types.Object, deform_factor: float | np.ndarray):
        super().__init__(obj)
        self.factor = deform_factor

    def __enter__(self) -> bpy.types.Object:
        copy = super().__enter__()
        copy.name = self.obj.name + " (Blender's hybrid)"
        mod = next(m for m in copy.modifiers if m.type == "ARMATURE")
        n = len(copy.data.vertices)
        f = np.broadcast_to(np.asarray(self.factor, dtype=np.float64), (n,))
        mod.use_deform_preserve_volume = False
        group = copy.vertex_groups.new(name=FACTOR_GROUP)
        for value in np.unique(f):
            group.add(np.flatnonzero(f == value).tolist(), float(value), "REPLACE")
        extra = copy.modifiers.new("HS_oracle_dqs", "ARMATURE")
        extra.object = mod.object
        extra.use_deform_preserve_volume = True
        extra.use_multi_modifier = True
        extra.vertex_group = group.name
        extra.use_vertex_groups = mod.use_vertex_groups
        extra.use_bone_envelopes = mod.use_bone_envelopes
        at = list(copy.modifiers).index(mod)
        copy.modifiers.move(len(copy.modifiers) - 1, at + 1)
        bpy.context.view_layer.update()
        return copy


def _native_positions(obj: bpy.types.Object, deform_factor: float | np.ndarray) -> np.ndarray:
    mod = next(m for m in obj.modifiers if m.type == "ARMATURE")
    saved = (mod.use_deform_preserve_volume, mod.show_viewport)
    n = len(obj.data.vertices)
    f = np.broadcast_to(np.asarray(deform_factor, dtype=np.float64), (n,))
    extra = group = None
    if mod.vertex_group and not (np.all(f == 0.0) or np.all(f == 1.0)):
        lbs, dqs = _native_positions(obj, 0.0), _native_positions(obj, 1.0)
        return ((1.0 - f)[:, None] * lbs + f[:, None] * dqs).astype(np.float32)
    try:
        mod.show_viewport = True
        if np.all(f == 0.0) or np.all(f == 1.0):
            mod.use_deform_preserve_volume = bool(f[0] == 1.0)
        else:
            mod.use_deform_preserve_volume = False
            group = obj.vertex_groups.new(name=FACTOR_GROUP)
            for value in np.unique(f):
                group.add(np.flatnonzero(f == value).tolist(), float(value), "REPLACE")
            extra = obj.modifiers.new("HS_oracle_dqs", "ARMATURE")
            extra.object = mod.object
            extra.use_deform_preserve_volume = True
            extra.use_multi_modifier = True
            extra.vertex_group = FACTOR_GROUP
            extra.use_vertex_groups = mod.use_vertex_groups
            extra.use_bone_envelopes = mod.use_bone_envelopes
            at = list(obj.modifiers).index(mod)
            obj.modifiers.move(len(obj.modifiers) - 1, at + 1)
        return evaluated_positions(obj)
    finally:
        if extra is not None:
            obj.modifiers.remove(extra)
        if group is not None:
            obj.vertex_groups.remove(group)
        mod.use_deform_preserve_volume, mod.show_viewport = saved
        bpy.context.view_layer.update()


def bbox_diagonal(points: np.ndarray) -> float:
    return float(np.linalg.norm(points.max(0) - points.min(0)))


def make_chain_armature(name: str, lengths: list[float], segments: int = 1) -> bpy.types.Object:
    """A straight chain of connected bones along +Z starting at the origin."""
    data = bpy.data.armatures.new(name)
    arm = bpy.data.objects.new(name, data)
    bpy.context.scene.collection.objects.link(arm)
    bpy.context.view_layer.objects.active = arm
    bpy.ops.object.mode_set(mode="EDIT")
    z = 0.0
    parent = None
    for i, length in enumerate(lengths):
        eb = data.edit_bones.new(f"Bone{i}")
        eb.head = (0.0, 0.0, z)
        eb.tail = (0.0, 0.0, z + length)
        eb.bbone_segments = segments
        if parent is not None:
            eb.parent = parent
            eb.use_connect = True
        parent = eb
        z += length
    bpy.ops.object.mode_set(mode="OBJECT")
    return arm


def make_cylinder(
    name: str, radius: float = 0.25, height: float = 2.0, rings: int = 24, segments: int = 24
) -> bpy.types.Object:
    """Closed cylinder along +Z from 0 to ``height`` with ``rings`` loops."""
    me = bpy.data.meshes.new(name)
    bm = bmesh.new()
    bmesh.ops.create_cone(
        bm, cap_ends=True, cap_tris=False, segments=segments, radius1=radius, radius2=radius, depth=height
    )
    bmesh.ops.translate(bm, verts=bm.verts, vec=(0.0, 0.0, height / 2))
    side = [e for e in bm.edges if abs(e.verts[0].co.z - e.verts[1].co.z) > 1e-6]
    bmesh.ops.subdivide_edges(bm, edges=side, cuts=rings - 1, use_grid_fill=True)
    bm.to_mesh(me)
    bm.free()
    obj = bpy.data.objects.new(name, me)
    bpy.context.scene.collection.objects.link(obj)
    return obj


def skin_to_chain(
    obj: bpy.types.Object, arm: bpy.types.Object, blend: float = 0.3
) -> bpy.types.ArmatureModifier:
    """Linear weights along Z: each bone owns its span, blended over ``blend`` around each joint.

    Groups are added in a shuffled order so stored order differs from bone order (DQS sign rule).
    """
    bones = list(arm.data.bones)
    co = np.array([v.co[:] for v in obj.data.vertices])
    world = np.array(obj.matrix_world) @ np.c_[co, np.ones(len(co))].T
    local_arm = (np.array(arm.matrix_world.inverted()) @ world).T[:, :3]
    z = local_arm[:, 2]
    joints = [b.head_local.z for b in bones[1:]]
    w = np.zeros((len(co), len(bones)))
    w[:, 0] = 1.0
    for j, zj in enumerate(joints):
        t = np.clip((z - (zj - blend / 2)) / blend, 0.0, 1.0)
        w[:, j + 1] = t
        w[:, j] *= 1.0 - t
    order = np.random.default_rng(7).permutation(len(bones))
    for b in order:
        group = obj.vertex_groups.new(name=bones[b].name)
        for value in np.unique(w[:, b]):
            if value > 0:
                group.add(np.flatnonzero(w[:, b] == value).tolist(), float(value), "REPLACE")
    mod = obj.modifiers.new("Armature", "ARMATURE")
    mod.object = arm
    return mod


def pose_bone(arm: bpy.types.Object, bone: str, rotation_deg=(0, 0, 0), scale=(1, 1, 1), location=(0, 0, 0)):
    pb = arm.pose.bones[bone]
    pb.rotation_mode = "XYZ"
    pb.rotation_euler = Euler([math.radians(a) for a in rotation_deg])
    pb.scale = scale
    pb.location = location
    bpy.context.view_layer.update()


__all__ = [
    "FACTOR_GROUP",
    "Matrix",
    "Vector",
    "bbox_diagonal",
    "evaluated_positions",
    "make_chain_armature",
    "make_cylinder",
    "native_positions",
    "native_twin",
    "plain_copy",
    "pose_bone",
    "skin_to_chain",
]
