"""What the user changes on the object's stack after Add is followed, in the session and in the saved file.

* Their Armature modifier's settings (its armature, mask group, Invert, envelopes): the DQS part follows at
  once, in either display, so the display stays Blender's own mix of the two.
* A modifier or shape keys put above the Armature modifier after Add: Auto's node tree (5.2) kept the
  rest distances it stored at bind; it is built again to compute them from the live rest shape.
* Bones moved in Edit Mode after Add: Auto's tree writes the rest distances of the new rest pose.
* Binding through a modifier above evaluates the object with its skinning hidden; the handlers that those
  evaluations run leave the object alone meanwhile. One that set the object up again removed the very
  modifiers the bind was hiding and showing again: Blender crashed (a use after free, in most runs).
"""

from __future__ import annotations

import contextlib
import importlib

import bpy
import numpy as np
import pytest

from tests.robustness.bake_scene import rig
from tests.robustness.helpers import assert_close, modules, three_bone_cylinder
from tests.support.blender import ADDON_MODULE
from tests.support.scenes import evaluated_positions, make_chain_armature, native_positions, pose_bone

DEFORMS = ("object", "vertex_group", "invert_vertex_group", "use_bone_envelopes", "use_vertex_groups")


def _truth(hs, obj, mode: str):
    """Blender's own mix at the settings' factor (0.6), or at the numpy core's Auto factors."""
    if mode == "GLOBAL":
        return native_positions(obj, 0.6)
    dg = bpy.context.evaluated_depsgraph_get()
    return native_positions(obj, hs.bind.cached_bind(obj, dg).posed(dg).auto_factors())


def _painted_mask(obj: bpy.types.Object) -> None:
    """A mask group painted in an evaluation of its own: choosing it afterwards is one edit of the
    modifier."""
    mask = obj.vertex_groups.new(name="Mask")
    mask.add(range(0, len(obj.data.vertices), 2), 1.0, "REPLACE")
    bpy.context.view_layer.update()


def _bent_limb_in_auto() -> tuple[bpy.types.Object, bpy.types.Object]:
    """``(armature, mesh)``: a 3-bone limb bent at both joints, Hybrid Skin added in Auto."""
    arm, obj = three_bone_cylinder()
    pose_bone(arm, "Bone1", (40, 0, 30))
    pose_bone(arm, "Bone2", (60, 20, 0))
    assert bpy.ops.hybrid_skin.add() == {"FINISHED"}
    obj.hybrid_skin.factor_mode = "AUTO"
    bpy.context.view_layer.update()
    return arm, obj


def _another_armature() -> bpy.types.Object:
    """A second chain, of other proportions and posed otherwise, for the Armature modifier to deform by."""
    other = make_chain_armature("Other", [0.7, 1.5])
    pose_bone(other, "Bone1", (70, 0, 40))
    return other


@pytest.mark.parametrize("edit", ["mask", "inverted mask", "another armature", "envelopes"])
@pytest.mark.parametrize("mode", ["GLOBAL", "AUTO"])
def test_the_armature_modifier_edited_after_add_is_followed(addon, edit, mode):
    """The DQS part follows the edit at once (it kept its old settings: 0.77 of the limb's length off with
    a mask, 0.66 with another armature)."""
    hs = modules(addon)
    arm, obj = rig()
    obj.hybrid_skin.factor_mode = mode
    bpy.context.scene.frame_set(6)
    _painted_mask(obj)
    mod = obj.modifiers["Armature"]
    if edit == "another armature":
        mod.object = _another_armature()
    elif edit == "envelopes":
        mod.use_bone_envelopes = True
    else:
        mod.vertex_group, mod.invert_vertex_group = "Mask", edit == "inverted mask"
    bpy.context.view_layer.update()
    dqs = obj.modifiers["HybridSkin DQS"]
    for name in DEFORMS:
        assert getattr(dqs, name) == getattr(mod, name), f"{edit}: the DQS part's {name}"
    assert_close(evaluated_positions(obj), _truth(hs, obj, mode), f"{edit}, {mode}: Blender's own mix")
    if edit != "envelopes":  # every vertex has weights: envelopes change nothing here
        assert np.abs(native_positions(obj, 0.0) - native_positions(obj, 1.0)).max() > 1e-2, "void otherwise"


@pytest.mark.parametrize("edit", ["mask", "another armature"])
def test_the_armature_modifier_edited_under_the_gpu_preview_is_saved_followed(addon, edit, tmp_path):
    """The GPU Preview hides the stack; the DQS part follows the user's modifier meanwhile too, so the
    saved file shows Blender's own mix of what the user set (it saved the DQS part's old settings)."""
    arm, obj = rig(display="GPU")
    bpy.context.scene.frame_set(6)
    _painted_mask(obj)
    mod = obj.modifiers["Armature"]
    if edit == "mask":
        mod.vertex_group = "Mask"
    else:
        mod.object = _another_armature()
    bpy.context.view_layer.update()
    truth = native_positions(obj, 0.6)
    path = tmp_path / "gpu.blend"
    assert bpy.ops.wm.save_as_mainfile(filepath=str(path)) == {"FINISHED"}
    bpy.ops.preferences.addon_disable(module=ADDON_MODULE)
    try:
        bpy.ops.wm.open_mainfile(filepath=str(path))
        saved = bpy.data.objects["Cylinder"]
        assert not hasattr(saved, "hybrid_skin")
        assert_close(evaluated_positions(saved), truth, f"{edit} under the GPU Preview, saved, no add-on")
    finally:
        bpy.ops.preferences.addon_enable(module=ADDON_MODULE)


def _above(obj: bpy.types.Object, kind: str) -> None:
    """A Displace modifier above the Armature modifier, or shape keys that widen the limb."""
    if kind == "modifier":
        displace = obj.modifiers.new("Displace", "DISPLACE")
        displace.strength = 0.3
        obj.modifiers.move(len(obj.modifiers) - 1, 0)
    else:
        obj.shape_key_add(name="Basis")
        wide = obj.shape_key_add(name="Wide")
        co = np.array([v.co[:] for v in obj.data.vertices])
        co[:, :2] *= 1.6
        wide.data.foreach_set("co", co.ravel())
        wide.value = 1.0


@pytest.mark.skipif(not hasattr(bpy.types, "GeometryNodeBoneInfo"), reason="Auto's node tree needs Bone Info")
@pytest.mark.parametrize("kind", ["modifier", "shape keys"])
def test_a_rest_shape_that_can_change_since_add_is_followed_by_autos_tree(addon, kind):
    """Auto's tree computes the rest distances live once a modifier or shape keys sit above the Armature
    modifier (it kept those stored at bind: 10% of the limb's length off the core's Auto)."""
    hs = modules(addon)
    arm, obj = rig()
    obj.hybrid_skin.factor_mode = "AUTO"
    bpy.context.scene.frame_set(6)
    bpy.context.view_layer.update()
    _above(obj, kind)
    bpy.context.view_layer.update()
    for frame in (7, 6):
        bpy.context.scene.frame_set(frame)
    assert_close(evaluated_positions(obj), _truth(hs, obj, "AUTO"), f"{kind} above: the core's Auto")


@pytest.mark.parametrize("kind", ["modifier", "shape keys"])
def test_binding_through_a_modifier_above_leaves_the_parts_in_place(addon, kind, tmp_path):
    """A file opened with Auto and a rest shape that can change: the first bind (here the API's) rebuilds
    the tree, and the evaluations that bind runs must not rebuild the parts under it (Blender crashed)."""
    hs = modules(addon)
    stack = importlib.import_module(f"{addon.__name__}.rig.stack")
    arm, obj = rig(add=False)
    _above(obj, kind)
    bpy.context.view_layer.update()
    bpy.context.view_layer.objects.active = obj
    assert bpy.ops.hybrid_skin.add() == {"FINISHED"}
    obj.hybrid_skin.factor_mode = "AUTO"
    path = tmp_path / "above.blend"
    assert bpy.ops.wm.save_as_mainfile(filepath=str(path)) == {"FINISHED"}
    rebuilt_under_a_bind = []
    real_viewport_disabled = stack._viewport_disabled

    def watched(mods):
        parts = [m for m in mods if m.name.startswith("HybridSkin")]
        uids = {m.persistent_uid for m in parts}
        with real_viewport_disabled(mods):
            yield
            owner = next(o for o in bpy.data.objects if o.type == "MESH" and o.name == "Cylinder")
            now = {m.persistent_uid for m in owner.modifiers if m.name.startswith("HybridSkin")}
            if not uids <= now:
                rebuilt_under_a_bind.append(uids - now)

    for _attempt in range(3):
        bpy.ops.wm.open_mainfile(filepath=str(path))
        obj = bpy.data.objects["Cylinder"]
        stack._viewport_disabled = contextlib.contextmanager(watched)
        try:
            for frame in (4, 6):
                bpy.context.scene.frame_set(frame)
                hs.api.rebind(obj)
                shown = hs.api.deformed_positions(obj)
                bpy.context.view_layer.update()
                assert_close(evaluated_positions(obj), shown, f"{kind}: display and API, frame {frame}")
        finally:
            stack._viewport_disabled = real_viewport_disabled
    assert not rebuilt_under_a_bind, f"parts removed while a bind hid them: {rebuilt_under_a_bind}"


@pytest.mark.parametrize("opened", [False, True], ids=["this session", "an opened file"])
def test_bones_moved_in_edit_mode_after_add_are_followed_by_auto(addon, opened, tmp_path):
    """Auto's tree reads the rest distances stored at bind: moving a bone of the rig in Edit Mode makes
    them new ones (they stayed: 0.028 of the limb's length off the core's Auto, about LBS-to-DQS)."""
    hs = modules(addon)
    arm, obj = _bent_limb_in_auto()
    if opened:
        path = tmp_path / "rig.blend"
        assert bpy.ops.wm.save_as_mainfile(filepath=str(path)) == {"FINISHED"}
        bpy.ops.wm.open_mainfile(filepath=str(path))
        arm, obj = bpy.data.objects["Rig"], bpy.data.objects["Cylinder"]
    bpy.context.view_layer.objects.active = arm
    bpy.ops.object.mode_set(mode="EDIT")
    bone = arm.data.edit_bones["Bone2"]
    bone.head.x += 0.2
    bone.tail.x += 0.2
    bpy.ops.object.mode_set(mode="OBJECT")
    bpy.context.view_layer.objects.active = obj
    bpy.context.view_layer.update()
    assert_close(evaluated_positions(obj), _truth(hs, obj, "AUTO"), "bones moved: the core's Auto")
    assert np.abs(native_positions(obj, 0.0) - native_positions(obj, 1.0)).max() > 1e-2, "void otherwise"


@pytest.mark.parametrize("edit", ["rename", "remove", "add"])
def test_bones_renamed_removed_or_added_in_edit_mode_are_followed(addon, edit, capfd):
    """Blender renames a pose channel (and the vertex group) at once in Edit Mode, and the bone only when
    Edit Mode is left: the handlers read the rig then, with no traceback (a KeyError before, and Auto's
    tree kept the old bone's name: 0.0045 of the limb off the core's Auto, at every frame after)."""
    hs = modules(addon)
    arm, obj = _bent_limb_in_auto()
    capfd.readouterr()
    bpy.context.view_layer.objects.active = arm
    bpy.ops.object.mode_set(mode="EDIT")
    bones = arm.data.edit_bones
    if edit == "rename":
        bones["Bone1"].name = "Forearm"
    elif edit == "remove":
        bones.remove(bones["Bone2"])
    else:
        extra = bones.new("Extra")
        extra.head, extra.tail, extra.parent = (0.3, 0.0, 1.0), (0.3, 0.0, 1.8), bones["Bone0"]
    bpy.ops.object.mode_set(mode="OBJECT")
    bpy.context.view_layer.objects.active = obj
    if edit == "add":
        group = obj.vertex_groups.new(name="Extra")
        group.add(range(0, len(obj.data.vertices), 3), 0.4, "REPLACE")
    bpy.context.view_layer.update()
    for frame in (2, 1):
        bpy.context.scene.frame_set(frame)
    said = capfd.readouterr()
    assert "Traceback" not in said.err + said.out, said.err[-2000:]
    assert_close(evaluated_positions(obj), _truth(hs, obj, "AUTO"), f"bone {edit}d in Edit Mode")


def test_b_bone_segments_set_after_add_are_followed_by_auto(addon):
    """A bone made a B-bone after Add: Auto's tree is built again with its segment joints (it kept the
    plain bone: 0.015 of the limb off the core's Auto, LBS to DQS is 0.019 there)."""
    hs = modules(addon)
    arm, obj = _bent_limb_in_auto()
    arm.data.bones["Bone1"].bbone_segments = 4
    bpy.context.view_layer.update()
    assert_close(evaluated_positions(obj), _truth(hs, obj, "AUTO"), "B-bone segments set after Add")
    assert np.abs(native_positions(obj, 0.0) - native_positions(obj, 1.0)).max() > 1e-2, "void otherwise"
