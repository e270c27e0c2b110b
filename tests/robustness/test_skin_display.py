"""What the live display shows must be what Blender would: issue 12 §10 (a failed save left the GPU display
disarmed: the mesh drawn twice), §11 (a linked object with Hybrid Skin in its library drawn twice, since its
modifiers cannot be hidden), §12 (two Armature modifiers: the GPU display skinned only the first) and §15
(an armature in Edit Mode: Blender shows the rest mesh)."""

from __future__ import annotations

import bpy
import numpy as np
import pytest

from tests.robustness.helpers import activate, assert_close, gpu_positions, modules, three_bone_cylinder
from tests.support.scenes import evaluated_positions, native_positions, pose_bone
from tests.support.snapshot import assert_same, snapshot


# ---------------------------------------------------------------------------------- failed save (§10)
def test_a_failed_save_re_arms_the_gpu_display(addon, tmp_path):
    arm, cyl = three_bone_cylinder()
    assert bpy.ops.hybrid_skin.add(display="GPU") == {"FINISHED"}
    armed = snapshot()
    assert not cyl.modifiers[0].show_viewport and cyl.display_type == "BOUNDS"
    blocker = tmp_path / "a file, not a folder"
    blocker.write_text("")
    with pytest.raises(RuntimeError, match="Cannot open file"):
        bpy.ops.wm.save_as_mainfile(filepath=str(blocker / "scene.blend"), copy=True)
    # save_pre put the user's setup back for the file; the failure must put the display's back.
    assert_same(armed, snapshot(), "after a failed save")
    assert modules(addon).viewport.shows_on_gpu(cyl, bpy.context.view_layer)


# ---------------------------------------------------------------------------------- linked data (§11)
@pytest.fixture
def linked_cylinder(addon, tmp_path):
    """A library file whose cylinder uses Hybrid Skin (GPU display), linked into an empty scene."""
    arm, cyl = three_bone_cylinder()
    pose_bone(arm, "Bone1", (70, 0, 0))
    assert bpy.ops.hybrid_skin.add(display="GPU") == {"FINISHED"}
    library = tmp_path / "library.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(library), copy=True)
    for obj in (cyl, arm):
        data = obj.data
        bpy.data.objects.remove(obj)
        (bpy.data.meshes if isinstance(data, bpy.types.Mesh) else bpy.data.armatures).remove(data)
    with bpy.data.libraries.load(str(library), link=True) as (src, dst):
        dst.objects = ["Cylinder", "Rig"]
    for obj in dst.objects:
        bpy.context.scene.collection.objects.link(obj)
    bpy.context.view_layer.update()
    linked = bpy.data.objects["Cylinder"]
    assert linked.library is not None and linked.hybrid_skin.enabled and linked.hybrid_skin.display == "GPU"
    return linked


def test_a_linked_object_is_not_drawn_twice(addon, linked_cylinder, capfd):
    hs = modules(addon)
    layer = bpy.context.view_layer
    # Blender draws it (its modifiers are shown and cannot be hidden): the add-on must not draw it again.
    assert linked_cylinder.modifiers[0].show_viewport and linked_cylinder.display_type != "BOUNDS"
    for _ in range(2):
        assert not hs.viewport.shows_on_gpu(linked_cylinder, layer)
        depsgraph = bpy.context.evaluated_depsgraph_get()
        assert hs.viewport.draw_objects([linked_cylinder], depsgraph, np.eye(4), layer) == []
    out = capfd.readouterr().out
    assert out.count("'Cylinder' is linked from a library: Blender shows its library's own deformation") == 1


def test_a_library_override_is_left_as_its_library_has_it_and_not_drawn_twice(addon, linked_cylinder):
    """Issue 12 §4's display half: re-arming after load must not hide an override's modifiers."""
    hs = modules(addon)
    override = linked_cylinder.override_create(remap_local_usages=True)
    assert override.override_library is not None and override.hybrid_skin.enabled
    before = snapshot()
    hs.handlers.on_load_post()  # what runs after the file is opened
    assert_same(before, snapshot(), "after re-arming on load")
    assert override.modifiers[0].show_viewport and override.display_type != "BOUNDS"
    assert not hs.viewport.shows_on_gpu(override, bpy.context.view_layer)


# ------------------------------------------------------------------------------ two Armature modifiers (§12)
@pytest.fixture
def two_armatures(addon):
    """A cylinder deformed by its rig and, after it, by a second armature that turns the whole mesh."""
    arm, cyl = three_bone_cylinder()
    pose_bone(arm, "Bone1", (70, 0, 30))
    second = three_bone_cylinder("Helper mesh", "Second rig")[0]
    pose_bone(second, "Bone0", (0, 25, 0))
    extra = cyl.modifiers.new("Second Armature", "ARMATURE")
    extra.object = second
    activate(cyl)
    return cyl


def blender_hybrid(cyl, factor: float) -> np.ndarray:
    """Blender's stack with the first Armature modifier as LBS and as DQS, mixed: the second modifier is
    linear in its input (fixed weights, no envelopes), so the hybrid of the stack is this mix."""
    first = cyl.modifiers[0]
    first.use_deform_preserve_volume = False
    lbs = evaluated_positions(cyl).copy()
    first.use_deform_preserve_volume = True
    dqs = evaluated_positions(cyl).copy()
    first.use_deform_preserve_volume = False
    bpy.context.view_layer.update()
    return ((1.0 - factor) * lbs + factor * dqs).astype(np.float32)


def test_two_armature_modifiers_warn_at_add_and_show_blenders_stack(addon, two_armatures, capfd):
    cyl = two_armatures
    expected = blender_hybrid(cyl, 0.5)
    assert bpy.ops.hybrid_skin.add(display="GPU") == {"FINISHED"}
    out = capfd.readouterr().out
    assert "'Cylinder' has 2 Armature modifiers and the GPU display skins only one" in out
    assert not modules(addon).setup.gpu_draws(cyl)  # it steps aside: Blender's exact stack draws
    assert all(m.show_viewport for m in cyl.modifiers)  # nothing of Blender's hidden
    assert not modules(addon).viewport.shows_on_gpu(cyl, bpy.context.view_layer)
    assert_close(evaluated_positions(cyl), expected, "Evaluated display with two Armature modifiers")


def test_switching_two_armature_modifiers_to_gpu_keeps_blenders_stack(addon, two_armatures):
    cyl = two_armatures
    expected = blender_hybrid(cyl, 0.5)
    assert bpy.ops.hybrid_skin.add() == {"FINISHED"}
    cyl.hybrid_skin.display = "GPU"
    assert not modules(addon).viewport.shows_on_gpu(cyl, bpy.context.view_layer)
    assert cyl.display_type != "BOUNDS"
    assert_close(evaluated_positions(cyl), expected, "GPU asked for, two Armature modifiers")


def test_the_panel_says_the_gpu_display_is_not_used(addon, two_armatures):
    import importlib

    from tests.support.layout import draw_panel

    cyl = two_armatures
    assert bpy.ops.hybrid_skin.add() == {"FINISHED"}
    cyl.hybrid_skin.display = "GPU"
    panel = importlib.import_module(addon.__name__ + ".skin.panel").VIEW3D_PT_hybrid_skin
    assert "Shown by Blender's own modifiers (see the Info log)" in draw_panel(panel).labels()


def test_a_second_armature_modifier_added_later_falls_back_too(addon):
    arm, cyl = three_bone_cylinder()
    pose_bone(arm, "Bone1", (70, 0, 30))
    assert bpy.ops.hybrid_skin.add() == {"FINISHED"}
    extra = cyl.modifiers.new("Second Armature", "ARMATURE")
    extra.object = three_bone_cylinder("Helper mesh", "Second rig")[0]
    activate(cyl)
    cyl.hybrid_skin.deform_factor = 0.5  # any settings change re-applies the display
    assert not modules(addon).viewport.shows_on_gpu(cyl, bpy.context.view_layer)
    assert cyl.display_type != "BOUNDS"


# ----------------------------------------------------------------------------- armature in Edit Mode (§15)
@pytest.fixture
def editing_rig(addon):
    arm, cyl = three_bone_cylinder()
    pose_bone(arm, "Bone1", (70, 0, 30))
    assert bpy.ops.hybrid_skin.add() == {"FINISHED"}
    posed = modules(addon).api.deformed_positions(cyl)  # bound and posed before Edit Mode
    activate(arm)
    bpy.ops.object.mode_set(mode="EDIT")
    yield arm, cyl, posed
    bpy.ops.object.mode_set(mode="OBJECT")


def test_api_shows_the_rest_mesh_while_the_armature_is_in_edit_mode(addon, editing_rig):
    arm, cyl, posed = editing_rig
    blender = native_positions(cyl, 0.5)
    rest = np.array([v.co[:] for v in cyl.data.vertices], dtype=np.float32)
    assert_close(blender, rest, "Blender in Edit Mode")
    assert np.abs(posed - rest).max() > 0.5  # the pose moved it: a stale pose would show
    assert_close(modules(addon).api.deformed_positions(cyl, deform_factor=0.5), blender, "API in Edit Mode")


def test_api_binds_while_the_armature_is_in_edit_mode(addon):
    arm, cyl = three_bone_cylinder()
    pose_bone(arm, "Bone1", (70, 0, 30))
    activate(arm)
    bpy.ops.object.mode_set(mode="EDIT")
    try:
        ours = modules(addon).api.deformed_positions(cyl, deform_factor=1.0)
        assert_close(ours, native_positions(cyl, 1.0))
    finally:
        bpy.ops.object.mode_set(mode="OBJECT")


@pytest.mark.gpu
def test_gpu_display_shows_the_rest_mesh_while_the_armature_is_in_edit_mode(addon, gpu_context, editing_rig):
    arm, cyl, posed = editing_rig
    assert_close(gpu_positions(modules(addon), cyl), native_positions(cyl, 0.5), "GPU display in Edit Mode")


def test_bones_moved_in_edit_mode_bind_again(addon, editing_rig):
    arm, cyl, posed = editing_rig
    arm.data.edit_bones["Bone2"].tail.x += 0.6  # the bone's rest frame turns
    bpy.ops.object.mode_set(mode="OBJECT")
    pose_bone(arm, "Bone2", (0, 0, 60), scale=(1.6, 0.6, 1.0))  # a scaled bone's DQ needs its rest frame
    assert_close(modules(addon).api.deformed_positions(cyl, deform_factor=1.0), native_positions(cyl, 1.0))
    activate(arm)
    bpy.ops.object.mode_set(mode="EDIT")  # the fixture leaves Edit Mode
