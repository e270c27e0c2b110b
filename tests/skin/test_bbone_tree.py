"""Issue 34, B-bones: the Auto tree computes every B-bone segment joint's deform matrix as Blender does
(``BKE_pchan_bbone_segments_cache_compute``), so Rigify characters get Auto from Blender itself.

Truth: Blender's own segment matrices (``PoseBone.bbone_segment_matrix``, rest and pose, read at the same
frame) through ``core.binding.virtual_deform_matrices`` (the palette the Armature modifier deforms with), and,
for the factor, Blender's own LBS/DQS mix on a plain copy at the core's Auto factors (``native_positions``).
"""

from __future__ import annotations

import importlib

import bpy
import numpy as np
import pytest

from tests.robustness.helpers import activate, assert_close
from tests.support.bbone_rigs import CONFIGURATIONS, PaletteProbe, handle_rig, pose_randomly, truth_palette
from tests.support.rigify_arm import arm_tube, body_tubes, pose_arm, rigify_enabled, rigify_human
from tests.support.scenes import make_chain_armature, make_cylinder, native_positions, skin_to_chain

pytestmark = pytest.mark.skipif(
    not hasattr(bpy.types, "GeometryNodeBoneInfo"),
    reason="Blender before 5.2 has no Bone Info node: Auto is the add-on's attribute there",
)

PROFILES = ("ROUND", "KEEP_VOLUME", "JOINT")


@pytest.fixture(scope="module")
def rigify():
    yield from rigify_enabled()


def _module(addon, name: str):
    return importlib.import_module(f"{addon.__name__}.{name}")


def _positions(obj) -> np.ndarray:
    mesh = obj.evaluated_get(bpy.context.evaluated_depsgraph_get()).data
    co = np.empty(len(mesh.vertices) * 3, np.float32)
    mesh.vertices.foreach_get("co", co)
    return co.reshape(-1, 3)


def _core_factors(addon, obj) -> np.ndarray:
    dg = bpy.context.evaluated_depsgraph_get()
    return _module(addon, "rig.bind").cached_bind(obj, dg).posed(dg).auto_factors()


def _record(addon, obj):
    return _module(addon, "rig.setup").load(obj)


@pytest.mark.parametrize("config", sorted(CONFIGURATIONS), ids=sorted(CONFIGURATIONS))
def test_segment_joints_equal_blender_for_every_handle_setup(addon, config):
    """Automatic, absolute, relative and tangent handles, custom handle bones, ease, roll, curve and scale
    (the Bone's and the pose's), scale easing, the start handle's end roll, scale and ease from the
    handles; bones posed with uniform and non-uniform scale."""
    arm = handle_rig(CONFIGURATIONS[config], seed=sorted(CONFIGURATIONS).index(config))
    probe = PaletteProbe(addon, arm)
    assert probe.bbones, "the rig has B-bones the tree computes"
    rng = np.random.default_rng(11)
    for step in range(4):
        pose_randomly(arm, rng, uneven=step % 2 == 1)
        probe.assert_equal(truth_palette(addon, arm), f"{config}, pose {step}")


def test_settings_driven_by_constant_inputs_are_constants(addon):
    """A Bone setting driven by a custom property nothing animates (as Rigify drives its DEF bones' ease
    from ``rubber_tweak``) is a constant of the tree, exact at every frame; keying that property, or a
    PoseBone setting, makes the setting animated: the reason names it."""
    arm = make_chain_armature("Arm", [1.0, 0.8, 1.1], segments=5)
    pose = arm.pose.bones
    pose["Bone2"]["rubber"] = 1.4
    driver = arm.data.driver_add('bones["Bone2"].bbone_easein').driver
    driver.type = "SUM"
    variable = driver.variables.new()
    variable.targets[0].id, variable.targets[0].data_path = arm, 'pose.bones["Bone2"]["rubber"]'
    pose["Bone1"].rotation_mode = pose["Bone2"].rotation_mode = "XYZ"
    pose["Bone1"].rotation_euler, pose["Bone2"].rotation_euler = (0.7, 0.0, 0.2), (-0.5, 0.3, 0.0)
    pose["Bone1"].bbone_curveinx = 0.3
    bpy.context.view_layer.update()
    probe = PaletteProbe(addon, arm)
    assert [bb.settings[1] for bb in probe.bbones][2] == pytest.approx(1.4), "the driven ease, read at bind"
    for frame in (1, 9):
        bpy.context.scene.frame_set(frame)
        probe.assert_equal(truth_palette(addon, arm), f"frame {frame}")
    read = _module(addon, "rig.bbone_settings").read
    bones = _module(addon, "bridge").deform_bones(arm)
    segments = tuple(int(s) for s in bones.segments)
    pose["Bone2"].keyframe_insert('["rubber"]', frame=1)
    _, reason = read(arm, bones.names, segments)
    assert reason == (
        "Bone 'Bone2' bbone_easein is driven by 'pose.bones[\"Bone2\"][\"rubber\"]', which is keyed, "
        "and the node tree reads B-bone settings once, at bind"
    ), reason
    arm.animation_data_clear()
    pose["Bone1"].keyframe_insert("bbone_curveinx", frame=1)
    _, reason = read(arm, bones.names, segments)
    assert reason.startswith("PoseBone 'Bone1' bbone_curveinx is keyed"), reason


def test_auto_tree_equals_the_core_on_rigify(addon, rigify):
    """A Rigify human (52 DEF B-bones of 8 and 10 segments, their ease driven by ``rubber_tweak``): the arm
    tube and a body of tubes (spine, arms, legs) with automatic weights get Auto from Blender's tree, and
    every profile's result equals Blender's own mix at the core's factors, bent and twisted."""
    rig = rigify_human()
    arm, body = arm_tube(rig), body_tubes(rig)
    for obj in (arm, body):
        activate(obj)
        assert bpy.ops.hybrid_skin.add() == {"FINISHED"}
        obj.hybrid_skin.factor_mode = "AUTO"
        record = _record(addon, obj)
        assert (record.auto, record.auto_reason) == ("TREE", ""), obj.name
    pose = rig.pose.bones
    for name, axis, angle in (("chest", "Y", 0.5), ("thigh_fk.R", "X", -0.9), ("shin_fk.R", "X", 1.1)):
        pose[name].rotation_mode = "XYZ"
        pose[name].rotation_euler = [angle if a == axis else 0.0 for a in "XYZ"]
    pose["thigh_parent.R"]["IK_FK"] = 1.0
    spread = 0.0
    for bend, twist, bone, profiles in (
        (110.0, 0.0, "forearm_fk.L", PROFILES),
        (60.0, 150.0, "forearm_fk.L", ("ROUND",)),
        (95.0, -120.0, "hand_fk.L", ("KEEP_VOLUME",)),
    ):
        pose_arm(rig, bend, twist, bone)
        for obj in (arm, body):
            for profile in profiles:
                obj.hybrid_skin.auto_profile = profile
                factors = _core_factors(addon, obj)
                what = f"{obj.name}, {profile} at {bend}°/{twist}° ({bone})"
                assert_close(_positions(obj), native_positions(obj, factors), what)
                spread = max(spread, float(np.ptp(factors)))
    assert spread > 0.2, "Auto varies over the arm (or this test is void)"


def _limb(rig: bpy.types.Object, parented: bool = True) -> bpy.types.Object:
    """A cylinder skinned to ``rig``'s chain (and parented to it, as Blender's Parent with Armature does)."""
    obj = make_cylinder(f"Limb {rig.name}", height=3.0)
    skin_to_chain(obj, rig)
    if parented:
        obj.parent = rig
    return obj


def _exact(addon, obj, what: str) -> None:
    bpy.context.view_layer.update()
    bpy.context.view_layer.update()  # what a handler did after the first is evaluated in the second
    assert_close(_positions(obj), native_positions(obj, _core_factors(addon, obj)), what)


def test_what_the_tree_cannot_follow_keeps_the_attribute_path_with_a_reason(addon):
    """Handle scale from a bone that does not inherit its parent's rotation, a mesh with shape keys (the
    rest points move across segments), a mesh that is not parented to the armature, a keyed B-bone
    setting: the attribute path, one sentence each, still the core's numbers."""
    hinge = make_chain_armature("Hinge", [1.0, 1.0, 1.0], segments=4)
    hinge.data.bones["Bone1"].bbone_handle_use_scale_start = (True, False, False)
    bpy.context.view_layer.objects.active = hinge
    bpy.ops.object.mode_set(mode="EDIT")
    root = hinge.data.edit_bones.new("root")
    root.head, root.tail = (0.0, -0.5, 0.0), (0.0, -0.2, 0.0)
    hinge.data.edit_bones["Bone0"].parent = root
    bpy.ops.object.mode_set(mode="OBJECT")
    hinge.data.bones["Bone0"].use_inherit_rotation = False
    animated = make_chain_armature("Animated", [1.0, 1.0, 1.0], segments=4)
    animated.pose.bones["Bone2"].keyframe_insert("bbone_easeout", frame=1)
    keys, loose = (make_chain_armature(name, [1.0, 1.0, 1.0], segments=4) for name in ("Keys", "Loose"))
    cases = {
        "takes scale from handle 'Bone0'": (hinge, _limb(hinge)),
        "split between B-bone segments": (keys, _limb(keys)),
        "is not parented to 'Loose'": (loose, _limb(loose, parented=False)),
        "PoseBone 'Bone2' bbone_easeout is keyed": (animated, _limb(animated)),
    }
    cases["split between B-bone segments"][1].shape_key_add(name="Basis")
    for expected, (rig, obj) in cases.items():
        activate(obj)
        assert bpy.ops.hybrid_skin.add() == {"FINISHED"}
        obj.hybrid_skin.factor_mode = "AUTO"
        record = _record(addon, obj)
        assert record.auto == "ATTRIBUTE" and expected in record.auto_reason, record.auto_reason
        assert record.auto_reason.count(". ") == 0, "one sentence"
        rig.pose.bones["Bone1"].rotation_mode = "XYZ"
        rig.pose.bones["Bone1"].rotation_euler = (0.8, 0.0, 0.3)
        _exact(addon, obj, rig.name)


def test_edits_of_the_rig_build_the_tree_again(addon):
    """A PoseBone's curve or a Bone's ease edited after Add, the mesh moved on the armature, a B-bone
    setting keyed: the add-on sees it after the edit (not while a frame plays) and builds the tree again,
    or takes the attribute path; Blender's result equals the core's every time. The curved vertex mapping
    (the split between segments, made at bind) changes no deform matrix: the tree takes it as it is."""
    rig = make_chain_armature("Rig", [1.0, 1.0, 1.0], segments=4)
    for bone in rig.data.bones:
        bone.bbone_mapping_mode = "CURVED"
        bone.bbone_curveinx, bone.bbone_curveoutz = 0.3, -0.2  # a curved rest shape: the mapping matters
    obj = _limb(rig)
    activate(obj)
    assert bpy.ops.hybrid_skin.add() == {"FINISHED"}
    obj.hybrid_skin.factor_mode = "AUTO"
    assert _record(addon, obj).auto == "TREE"
    pose = rig.pose.bones
    pose["Bone1"].rotation_mode = "XYZ"
    pose["Bone1"].rotation_euler = (0.9, 0.0, 0.4)
    _exact(addon, obj, "posed")
    pose["Bone1"].bbone_curveinx = 0.6
    _exact(addon, obj, "a PoseBone's curve edited")
    rig.data.bones["Bone1"].bbone_easeout = 2.5
    _exact(addon, obj, "a Bone's ease edited")
    obj.location.z += 0.4
    _exact(addon, obj, "the mesh moved up the armature")
    assert _record(addon, obj).auto == "TREE"
    pose["Bone1"].keyframe_insert("bbone_curveinx", frame=1)
    bpy.context.view_layer.update()
    assert _record(addon, obj).auto == "ATTRIBUTE"
    _exact(addon, obj, "a B-bone setting keyed")
