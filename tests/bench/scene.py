"""Generated benchmark scenes: a quad-grid cylinder of any size skinned to a bone chain.

Everything is built in bulk (``foreach_set``, one ``VertexGroup.add`` per bone and weight level), so a
million-vertex scene takes seconds. Weights are random but deterministic: 4 distinct bones per vertex.
"""

from __future__ import annotations

import math

import bpy
import numpy as np

FACTOR_GROUP = "HS_bench_factor"
INFLUENCES = 4
WEIGHT_LEVELS = 8  # weights are multiples of 1/8 before normalisation: few VertexGroup.add calls


def clear_scene() -> None:
    for collection in (bpy.data.objects, bpy.data.meshes, bpy.data.armatures, bpy.data.actions):
        for block in list(collection):
            collection.remove(block)
    for block in list(bpy.data.collections):
        bpy.data.collections.remove(block)


def collection(name: str) -> bpy.types.Collection:
    """A new collection in the scene: rigs in their own collections can be left out of the depsgraph
    (``LayerCollection.exclude``) so a frame change evaluates only the rig being timed."""
    coll = bpy.data.collections.new(name)
    bpy.context.scene.collection.children.link(coll)
    return coll


def exclude(coll: bpy.types.Collection, excluded: bool) -> None:
    layer = bpy.context.view_layer.layer_collection.children[coll.name]
    if layer.exclude != excluded:
        layer.exclude = excluded
        bpy.context.view_layer.update()


def make_chain_armature(
    name: str, bones: int, height: float, into: bpy.types.Collection | None = None
) -> bpy.types.Object:
    data = bpy.data.armatures.new(name)
    arm = bpy.data.objects.new(name, data)
    (into or bpy.context.scene.collection).objects.link(arm)
    bpy.context.view_layer.objects.active = arm
    bpy.ops.object.mode_set(mode="EDIT")
    step = height / bones
    parent = None
    for i in range(bones):
        eb = data.edit_bones.new(f"Bone{i:02d}")
        eb.head = (0.0, 0.0, i * step)
        eb.tail = (0.0, 0.0, (i + 1) * step)
        if parent is not None:
            eb.parent = parent
            eb.use_connect = True
        parent = eb
    bpy.ops.object.mode_set(mode="OBJECT")
    for pb in arm.pose.bones:
        pb.rotation_mode = "QUATERNION"
    return arm


def make_grid_cylinder(
    name: str, vertices: int, height: float, radius: float = 0.5, into: bpy.types.Collection | None = None
) -> bpy.types.Object:
    """Open cylinder of about ``vertices`` vertices (rings × columns quads), built with foreach_set, shaded
    smooth as a character's skin is (flat faces would give VERTEX texture bakes an item per face corner)."""
    cols = max(8, int(round(math.sqrt(vertices / 4))))
    rows = max(2, vertices // cols)
    n = rows * cols
    r, c = np.divmod(np.arange(n), cols)
    angle = 2 * np.pi * c / cols
    co = np.stack([radius * np.cos(angle), radius * np.sin(angle), height * r / (rows - 1)], -1)
    qr, qc = np.divmod(np.arange((rows - 1) * cols), cols)
    a = qr * cols + qc
    b = qr * cols + (qc + 1) % cols
    quads = np.stack([a, b, b + cols, a + cols], -1).astype(np.int32)
    me = bpy.data.meshes.new(name)
    me.vertices.add(n)
    me.vertices.foreach_set("co", co.astype(np.float32).ravel())
    me.loops.add(quads.size)
    me.loops.foreach_set("vertex_index", quads.ravel())
    me.polygons.add(len(quads))
    me.polygons.foreach_set("loop_start", np.arange(0, quads.size, 4, dtype=np.int32))
    me.update()
    me.shade_smooth()
    obj = bpy.data.objects.new(name, me)
    (into or bpy.context.scene.collection).objects.link(obj)
    return obj


def add_random_weights(obj: bpy.types.Object, arm: bpy.types.Object, seed: int = 1) -> int:
    """4 distinct bones per vertex (nearest along Z plus 3 random), quantised random weights.

    Returns the number of weight entries written.
    """
    names = [b.name for b in arm.data.bones]
    nb = len(names)
    n = len(obj.data.vertices)
    co = np.empty(n * 3, np.float32)
    obj.data.vertices.foreach_get("co", co)
    z = co[2::3]
    rng = np.random.default_rng(seed)
    nearest = np.clip((z / max(z.max(), 1e-9) * nb).astype(np.int64), 0, nb - 1)
    offsets = np.stack(
        [np.zeros(n, np.int64), rng.integers(1, 6, n), rng.integers(6, 11, n), rng.integers(11, 16, n)], -1
    )
    bone = (nearest[:, None] + offsets) % nb
    level = np.concatenate([np.full((n, 1), WEIGHT_LEVELS), rng.integers(1, WEIGHT_LEVELS, (n, 3))], 1)
    vertex = np.repeat(np.arange(n), INFLUENCES)
    key = bone.ravel() * (WEIGHT_LEVELS + 1) + level.ravel()
    order = np.argsort(key, kind="stable")
    key, vertex = key[order], vertex[order]
    starts = np.flatnonzero(np.r_[True, key[1:] != key[:-1]])
    ends = np.r_[starts[1:], len(key)]
    groups = [obj.vertex_groups.new(name=nm) for nm in names]
    for s, e in zip(starts, ends):
        b, q = divmod(int(key[s]), WEIGHT_LEVELS + 1)
        groups[b].add(vertex[s:e].tolist(), q / WEIGHT_LEVELS, "REPLACE")
    return n * INFLUENCES


def add_lbs_modifier(obj: bpy.types.Object, arm: bpy.types.Object) -> bpy.types.ArmatureModifier:
    mod = obj.modifiers.new("Armature", "ARMATURE")
    mod.object = arm
    return mod


def add_native_mix(obj: bpy.types.Object, arm: bpy.types.Object, factor: float) -> None:
    """Blender's own hybrid: a Preserve Volume Armature modifier after the LBS one, Multi Modifier,
    mixed by a vertex group of weight ``factor``."""
    group = obj.vertex_groups.new(name=FACTOR_GROUP)
    group.add(range(len(obj.data.vertices)), factor, "REPLACE")
    dqs = obj.modifiers.new("Armature DQS", "ARMATURE")
    dqs.object = arm
    dqs.use_deform_preserve_volume = True
    dqs.use_multi_modifier = True
    dqs.vertex_group = FACTOR_GROUP


def random_pose(arm: bpy.types.Object, seed: int, max_degrees: float = 30.0) -> np.ndarray:
    """Unit quaternions ``(bones, 4)`` of random rotations up to ``max_degrees``."""
    rng = np.random.default_rng(seed)
    nb = len(arm.pose.bones)
    axis = rng.normal(size=(nb, 3))
    axis /= np.linalg.norm(axis, axis=1, keepdims=True)
    half = np.radians(rng.uniform(0, max_degrees, nb)) / 2
    return np.c_[np.cos(half), axis * np.sin(half)[:, None]].astype(np.float32)


def random_scales(arm: bpy.types.Object, seed: int, every: int = 4) -> np.ndarray:
    """``(bones, 3)`` pose scales: every ``every``-th bone scaled non-uniformly by 0.7–1.4, others 1."""
    rng = np.random.default_rng(seed)
    nb = len(arm.pose.bones)
    scales = np.ones((nb, 3), np.float32)
    scales[::every] = rng.uniform(0.7, 1.4, (len(scales[::every]), 3))
    return scales


def set_pose(arm: bpy.types.Object, quaternions: np.ndarray, scales: np.ndarray | None = None) -> None:
    arm.pose.bones.foreach_set("rotation_quaternion", np.ascontiguousarray(quaternions).ravel())
    if scales is not None:
        arm.pose.bones.foreach_set("scale", np.ascontiguousarray(scales, dtype=np.float32).ravel())
    arm.update_tag(refresh={"DATA"})  # foreach_set does not tag the depsgraph by itself


def evaluated_positions(obj: bpy.types.Object) -> np.ndarray:
    me = obj.evaluated_get(bpy.context.evaluated_depsgraph_get()).data
    out = np.empty(len(me.vertices) * 3, np.float32)
    me.vertices.foreach_get("co", out)
    return out.reshape(-1, 3)


def evaluated_normals(obj: bpy.types.Object) -> np.ndarray:
    me = obj.evaluated_get(bpy.context.evaluated_depsgraph_get()).data
    out = np.empty(len(me.vertices) * 3, np.float32)
    me.vertex_normals.foreach_get("vector", out)
    return out.reshape(-1, 3)


def bench_rig(
    name: str, vertices: int, bones: int, into: bpy.types.Collection | None = None
) -> tuple[bpy.types.Object, bpy.types.Object, int]:
    """Chain armature + grid cylinder of about ``vertices`` vertices with random weights and Blender's
    LBS Armature modifier; returns ``(armature, mesh, weight entries)``."""
    arm = make_chain_armature(f"{name}Rig", bones, height=4.0, into=into)
    obj = make_grid_cylinder(f"{name}Mesh", vertices, height=4.0, into=into)
    entries = add_random_weights(obj, arm)
    add_lbs_modifier(obj, arm)
    return arm, obj, entries
