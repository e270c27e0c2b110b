"""A Rigify-generated human rig (real B-bones with custom handles and ease) on a mesh with automatic
weights: the installed add-on equals Blender's deformation, and its round Auto factor does not step across the
arm's edges where B-bone segments and automatic weights end."""

from __future__ import annotations

import importlib

import bmesh
import bpy
import numpy as np
import pytest
from mathutils import Matrix

from tests.support.rigify_arm import arm_tube, pose_arm, rigify_enabled, rigify_human
from tests.support.scenes import bbox_diagonal, native_positions

LIMB_BONES = (
    "DEF-upper_arm.L",
    "DEF-forearm.L",
    "DEF-hand.L",
    "DEF-spine.001",
    "DEF-spine.002",
    "DEF-thigh.R",
)


@pytest.fixture(scope="module")
def rigify():
    yield from rigify_enabled()


def limb_mesh(rig: bpy.types.Object) -> bpy.types.Object:
    """Subdivided tubes along a few deform bones (arm tubes span two bones, so joints get blended)."""
    body = bmesh.new()
    for name in LIMB_BONES:
        bone = rig.data.bones[name]
        length = bone.length * (2.0 if name.endswith(("arm.L", "thigh.R")) else 1.0)
        tube = bmesh.new()
        bmesh.ops.create_cone(tube, cap_ends=True, segments=16, radius1=0.05, radius2=0.05, depth=length)
        sides = [e for e in tube.edges if abs(e.verts[0].co.z - e.verts[1].co.z) > 1e-6]
        bmesh.ops.subdivide_edges(tube, edges=sides, cuts=12)
        # Cone axis (local Z) onto the bone's Y axis, starting at the bone head.
        place = rig.matrix_world @ bone.matrix_local @ Matrix.Rotation(-np.pi / 2, 4, "X")
        bmesh.ops.transform(tube, verts=tube.verts, matrix=place @ Matrix.Translation((0, 0, length / 2)))
        temp = bpy.data.meshes.new("tube")
        tube.to_mesh(temp)
        tube.free()
        body.from_mesh(temp)
        bpy.data.meshes.remove(temp)
    me = bpy.data.meshes.new("Body")
    body.to_mesh(me)
    body.free()
    obj = bpy.data.objects.new("Body", me)
    bpy.context.scene.collection.objects.link(obj)
    return obj


def test_rigify_human_arm_spine_and_leg(addon, rigify):
    bpy.ops.object.armature_human_metarig_add()
    metarig = bpy.context.object
    bpy.ops.pose.rigify_generate()
    rig = next(o for o in bpy.data.objects if o.type == "ARMATURE" and o is not metarig)
    metarig.hide_set(True)
    assert sum(b.use_deform and b.bbone_segments > 1 for b in rig.data.bones) >= 10
    body = limb_mesh(rig)
    bpy.ops.object.select_all(action="DESELECT")
    body.select_set(True)
    rig.select_set(True)
    bpy.context.view_layer.objects.active = rig
    bpy.ops.object.parent_set(type="ARMATURE_AUTO")
    assert any(m.type == "ARMATURE" for m in body.modifiers)
    weighted = {
        body.vertex_groups[g.group].name for v in body.data.vertices for g in v.groups if g.weight > 0.01
    }
    bbones = {b.name for b in rig.data.bones if b.use_deform and b.bbone_segments > 1}
    assert len(weighted & bbones) >= 4, "the mesh must really be weighted to B-bones"

    pose = rig.pose.bones
    pose["upper_arm_fk.L"].rotation_quaternion = Matrix.Rotation(1.2, 4, "X").to_quaternion()
    pose["forearm_fk.L"].rotation_quaternion = Matrix.Rotation(1.4, 4, "Z").to_quaternion()
    pose["upper_arm_parent.L"]["IK_FK"] = 1.0
    pose["chest"].rotation_quaternion = Matrix.Rotation(0.9, 4, "Y").to_quaternion()
    pose["thigh_ik.R"].location = (0.1, -0.2, 0.15)
    pose["forearm_tweak.L"].scale = (1.4, 1.0, 1.4)
    bpy.context.view_layer.update()

    addon.api.rebind(body)
    lbs = native_positions(body, 0.0)
    dqs = native_positions(body, 1.0)
    diag = bbox_diagonal(lbs)
    assert np.abs(lbs - dqs).max() > 1e-3 * diag
    per_vertex = np.round(np.random.default_rng(4).random(len(lbs)), 3).astype(np.float32)
    for f in (0.0, 1.0, 0.5, per_vertex):
        err = np.abs(addon.api.deformed_positions(body, f) - native_positions(body, f)).max() / diag
        assert err <= 1e-5, f"f={'map' if np.ndim(f) else f}: {err:.2e} × diagonal"


def test_round_auto_factor_steps_at_most_half_across_the_arm(addon, rigify):
    """The docs' Rigify arm (elbow 110°, forearm twisted 150°; tests/media/quality_rigify.py): across every
    edge whose two vertices blend, each round profile's factor steps by at most 1/2 (the issue's bound; the
    docs measure 0.36 and 0.31). The same factors without the presence step by 0.94 and 0.84 there: where
    the upper arm's automatic weight ends inside the forearm's B-bone segments (0.038 next to 0)."""
    names = ("rig.bind", "bridge", "core.autofactor", "core.metrics")
    modules = {m: importlib.import_module(f"{addon.__name__}.{m}") for m in names}
    autofactor, metrics = modules["core.autofactor"], modules["core.metrics"]
    rig = rigify_human()
    arm = arm_tube(rig)
    pose_arm(rig, 110.0, 150.0)
    bpy.context.view_layer.objects.active = arm
    assert bpy.ops.hybrid_skin.add() == {"FINISHED"}
    depsgraph = bpy.context.evaluated_depsgraph_get()
    posed = modules["rig.bind"].cached_bind(arm, depsgraph).posed(depsgraph)
    binding = posed.bind.binding
    triangles = modules["bridge"].triangle_vertices(arm.data)
    blended = metrics.blended_vertices(binding.weights)
    for profile in ("ROUND", "KEEP_VOLUME"):
        step = metrics.largest_factor_step(posed.auto_factors(profile), triangles, blended)
        assert step <= 0.5, (profile, step)
        pose = posed.auto_bone_data(profile)
        bare = autofactor.round_factors(pose.bones, binding.bone_indices, binding.weights, pose.vertices,
                                        autofactor.ROUND_SHAPES[profile], presence=0.0)
        assert metrics.largest_factor_step(bare, triangles, blended) > 0.8, profile  # what it bounds
