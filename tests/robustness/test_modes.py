"""Hybrid Skin outside Object Mode, as a user paints, sculpts and edits a skinned mesh.

* The GPU display hides Blender's drawing of the mesh (bounds, Armature modifiers off): weight colours, the
  edit cage and sculpt brushes would be invisible. Outside Object Mode it steps aside (the user's display
  type and Armature modifier shown, so Blender draws) and is set up again back in Object Mode, after undo
  and reload too.
* In paint and sculpt modes Blender shows the user's Armature modifier alone (LBS), whatever the display:
  brushes reach a deformed mesh only through the deform-only modifiers at the top of its stack (Blender's
  crazy-space), which Hybrid Skin's Geometry Nodes parts would end, so strokes would land on the rest
  shape. What is shown is then where the brush paints.
* Hybrid Skin adds no vertex group and leaves the user's active one alone: Weight Paint paints the group
  the user picked.
* Weights and vertices edited in Edit Mode are used without Rebind (leaving Edit Mode reports the mesh like
  a property set on the object, which alone does not make a bind suspect).
"""

from __future__ import annotations

import importlib

import bmesh
import bpy
import numpy as np
import pytest

from tests.robustness.helpers import activate, assert_close, gpu_positions, modules, three_bone_cylinder
from tests.support.layout import draw_panel
from tests.support.scenes import evaluated_positions, native_positions, pose_bone
from tests.support.snapshot import differences, object_snapshot

PAINT_MODES = ["EDIT", "WEIGHT_PAINT", "SCULPT", "VERTEX_PAINT", "TEXTURE_PAINT"]


def _user_setup(obj: bpy.types.Object) -> dict:
    """What the GPU display changes and must give back while it steps aside."""
    shot = object_snapshot(obj)
    return {
        "display_type": obj.display_type,
        "modifiers": shot["modifiers"],
        "vertex_groups": shot["vertex_groups"],
        "active_vertex_group": shot["active_vertex_group"],
    }


def _blender_draws(hs, obj: bpy.types.Object, setup: dict) -> None:
    """The GPU display steps aside: Blender draws the mesh with the user's display type and Armature
    modifier shown, and Hybrid Skin's exact setup after it (what Blender draws is the hybrid)."""
    assert obj.display_type == setup["display_type"]
    assert obj.modifiers["Armature"].show_viewport
    assert not hs.setup.gpu_draws(obj)
    assert not hs.viewport.shows_on_gpu(obj, bpy.context.view_layer), "the mesh would be drawn twice"


@pytest.fixture
def bent(addon):
    """``(modules, cylinder, user setup before Add, Blender's own deformation before Add)``: the three-bone
    cylinder bent at its first joint, shown as the user left it (wire), Hybrid Skin added (GPU display)."""
    arm, cyl = three_bone_cylinder()
    pose_bone(arm, "Bone1", (70, 0, 30))
    cyl.display_type = "WIRE"
    activate(cyl)
    setup, lbs = _user_setup(cyl), evaluated_positions(cyl)
    assert bpy.ops.hybrid_skin.add(display="GPU") == {"FINISHED"}
    hs = modules(addon)
    assert hs.setup.gpu_draws(cyl) and cyl.display_type == "BOUNDS"
    assert np.abs(evaluated_positions(cyl) - lbs).max() > 0.1, "the GPU display hides Blender's deformation"
    return hs, cyl, setup, lbs


def _mode(obj: bpy.types.Object, mode: str) -> None:
    assert bpy.ops.object.mode_set(mode=mode) == {"FINISHED"}
    assert obj.mode == mode


@pytest.mark.parametrize("mode", PAINT_MODES)
def test_the_gpu_display_steps_aside_outside_object_mode(bent, mode):
    hs, cyl, setup, lbs = bent
    _mode(cyl, mode)
    _blender_draws(hs, cyl, setup)
    if mode != "EDIT":  # paint modes: the user's Armature modifier alone, where brushes paint
        assert_close(evaluated_positions(cyl), native_positions(cyl, 0.0), f"Blender's LBS in {mode}")
    _mode(cyl, "OBJECT")
    assert hs.setup.gpu_draws(cyl) and cyl.display_type == "BOUNDS"
    assert hs.viewport.shows_on_gpu(cyl, bpy.context.view_layer)


def test_the_panel_says_who_draws_the_mesh_outside_object_mode(bent, addon):
    panel = importlib.import_module(addon.__name__ + ".skin.panel").VIEW3D_PT_hybrid_skin
    note, painting = "Blender draws the mesh until Object Mode", "Painting: your Armature modifier alone"
    assert note not in draw_panel(panel).labels()
    _mode(bent[1], "EDIT")
    assert note in draw_panel(panel).labels()
    _mode(bent[1], "WEIGHT_PAINT")
    assert painting in draw_panel(panel).labels()


@pytest.mark.gpu
def test_the_gpu_display_is_back_in_object_mode_with_the_weights_painted(bent, gpu_context):
    """Paint (the Weight Paint tools a stroke shares its update with), back to Object Mode: the shader draws
    Blender's hybrid of the new weights."""
    hs, cyl, _setup, _lbs = bent
    before = gpu_positions(hs, cyl)
    _mode(cyl, "WEIGHT_PAINT")
    assert bpy.ops.object.vertex_group_smooth(group_select_mode="ALL", factor=1.0, repeat=5) == {"FINISHED"}
    _mode(cyl, "OBJECT")
    drawn = gpu_positions(hs, cyl)
    assert np.abs(drawn - before).max() > 1e-3, "the smoothing must change the result (or this test is void)"
    hs.setup.restore(cyl)
    assert_close(drawn, native_positions(cyl, 0.5), "GPU display after Weight Paint")


def _edit_weights(obj: bpy.types.Object) -> None:
    """In Edit Mode, through BMesh (as edit-mode tools write them): the first joint's ring all Bone1."""
    bm = bmesh.from_edit_mesh(obj.data)
    layer = bm.verts.layers.deform.verify()
    group = obj.vertex_groups["Bone1"].index
    for v in bm.verts:
        if abs(v.co.z - 1.0) < 0.35:
            v[layer].clear()
            v[layer][group] = 1.0
    bmesh.update_edit_mesh(obj.data)


def _move_vertices(obj: bpy.types.Object) -> None:
    bm = bmesh.from_edit_mesh(obj.data)
    for v in bm.verts:
        if abs(v.co.z - 1.0) < 0.35:
            v.co.x *= 1.5
    bmesh.update_edit_mesh(obj.data)


@pytest.mark.parametrize("edit", [_edit_weights, _move_vertices], ids=["weights", "vertices"])
def test_edit_mode_edits_are_used_without_rebind(bent, edit):
    hs, cyl, _setup, _lbs = bent
    before = hs.api.deformed_positions(cyl, deform_factor=0.5)
    _mode(cyl, "EDIT")
    edit(cyl)
    _mode(cyl, "OBJECT")
    after = hs.api.deformed_positions(cyl, deform_factor=0.5)
    assert np.abs(after - before).max() > 1e-3, "the edit must change the result (or this test is void)"
    hs.setup.restore(cyl)
    assert_close(after, native_positions(cyl, 0.5), "API after Edit Mode")


@pytest.mark.gpu
def test_the_gpu_display_draws_edit_mode_weights(bent, gpu_context):
    hs, cyl, _setup, _lbs = bent
    before = gpu_positions(hs, cyl)
    _mode(cyl, "EDIT")
    _edit_weights(cyl)
    _mode(cyl, "OBJECT")
    drawn = gpu_positions(hs, cyl)
    assert np.abs(drawn - before).max() > 1e-3, "the edit must change the result (or this test is void)"
    hs.setup.restore(cyl)
    assert_close(drawn, native_positions(cyl, 0.5), "GPU display after Edit Mode")


def test_undo_and_redo_across_a_mode_switch_keep_the_display_in_step(bent):
    hs, cyl, setup, _lbs = bent
    bpy.ops.ed.undo_push(message="added")
    _mode(cyl, "WEIGHT_PAINT")
    bpy.ops.ed.undo_push(message="weight paint")
    _mode(cyl, "OBJECT")
    bpy.ops.ed.undo_push(message="object")
    for step in (bpy.ops.ed.undo, bpy.ops.ed.undo, bpy.ops.ed.redo, bpy.ops.ed.redo):
        assert step() == {"FINISHED"}
        cyl = bpy.data.objects["Cylinder"]  # undo re-reads the data
        bpy.context.evaluated_depsgraph_get()
        if cyl.mode == "OBJECT":
            assert hs.setup.gpu_draws(cyl) and cyl.display_type == "BOUNDS", step
        else:
            _blender_draws(hs, cyl, setup)
    assert cyl.mode == "OBJECT" and hs.setup.gpu_draws(cyl)


def test_a_file_saved_in_weight_paint_holds_the_users_setup_and_reopens_drawn_right(bent, tmp_path):
    hs, cyl, setup, _lbs = bent
    _mode(cyl, "WEIGHT_PAINT")
    path = str(tmp_path / "painting.blend")
    bpy.ops.wm.save_as_mainfile(filepath=path, copy=True)
    bpy.ops.wm.open_mainfile(filepath=path)
    cyl = bpy.data.objects["Cylinder"]
    assert cyl.mode == "WEIGHT_PAINT", "Blender reopens a file in the mode it was saved in"
    _blender_draws(hs, cyl, setup)
    activate(cyl)
    _mode(cyl, "OBJECT")
    assert hs.setup.gpu_draws(cyl)
    assert bpy.ops.hybrid_skin.remove() == {"FINISHED"}
    assert _user_setup(cyl) == setup


def test_the_evaluated_display_keeps_the_users_active_vertex_group(addon):
    arm, cyl = three_bone_cylinder()
    cyl.vertex_groups.active_index = 1
    picked = cyl.vertex_groups.active.name
    cyl.hybrid_skin.display = "EVALUATED"
    setup = _user_setup(cyl)
    assert bpy.ops.hybrid_skin.add() == {"FINISHED"}
    hs = modules(addon)
    assert len(cyl.vertex_groups) == len(setup["vertex_groups"]), "no vertex group of Hybrid Skin's"
    assert cyl.vertex_groups.active.name == picked, "Weight Paint would paint another group"
    _mode(cyl, "WEIGHT_PAINT")
    assert cyl.vertex_groups.active.name == picked
    cyl.vertex_groups.active_index = 0  # the user picks another group while painting
    _mode(cyl, "OBJECT")
    hs.setup.restore(cyl)  # as a save does
    assert cyl.vertex_groups.active_index == 0, "the user's pick made while the display was on is lost"
    hs.setup.apply(cyl)
    assert bpy.ops.hybrid_skin.remove() == {"FINISHED"}
    setup["active_vertex_group"] = 0
    assert _user_setup(cyl) == setup


def test_the_evaluated_display_follows_edits_made_in_edit_mode(addon):
    """A factor set in Edit Mode, and vertices an edit adds, are in the display once Edit Mode is left:
    the factor in the Mix modifier, Auto's per-vertex data written again for the new vertices."""
    arm, cyl = three_bone_cylinder()
    pose_bone(arm, "Bone1", (70, 0, 30))
    cyl.hybrid_skin.display = "EVALUATED"
    assert bpy.ops.hybrid_skin.add() == {"FINISHED"}
    hs = modules(addon)
    _mode(cyl, "EDIT")
    cyl.hybrid_skin.deform_factor = 0.3  # the slider dragged in Edit Mode
    bpy.ops.mesh.select_all(action="SELECT")
    assert bpy.ops.mesh.subdivide(number_cuts=1) == {"FINISHED"}  # vertices no bind has seen
    _mode(cyl, "OBJECT")
    assert len(cyl.data.vertices) > 888
    assert_close(evaluated_positions(cyl), hs.api.deformed_positions(cyl, 0.3), "Evaluated display")

    cyl.hybrid_skin.factor_mode = "AUTO"
    hs.runtime.get().reported.clear()
    _mode(cyl, "EDIT")
    bpy.context.scene.frame_set(bpy.context.scene.frame_current)  # Auto factors follow frame changes
    assert not hs.runtime.get().reported, "a message for a mesh the user is editing"
    assert bpy.ops.mesh.subdivide(number_cuts=1) == {"FINISHED"}
    _mode(cyl, "OBJECT")
    dg = bpy.context.evaluated_depsgraph_get()
    auto = hs.bind.cached_bind(cyl, dg).posed(dg).auto_factors()
    assert len(auto) == len(cyl.data.vertices) and np.ptp(auto) > 0.01, "Auto factors vary (or this is void)"
    assert_close(evaluated_positions(cyl), native_positions(cyl, auto), "Auto after the edit")


def test_switching_the_display_while_painting_keeps_blenders_drawing_until_object_mode(bent):
    hs, cyl, setup, lbs = bent
    _mode(cyl, "WEIGHT_PAINT")
    cyl.hybrid_skin.display = "EVALUATED"
    assert cyl.modifiers.get("HybridSkin Mix") is not None, "Evaluated: Blender's own hybrid"
    assert_close(evaluated_positions(cyl), native_positions(cyl, 0.0), "Blender's LBS while painting")
    cyl.hybrid_skin.display = "GPU"
    _blender_draws(hs, cyl, setup)
    assert_close(evaluated_positions(cyl), native_positions(cyl, 0.0), "Blender's LBS while painting")
    _mode(cyl, "OBJECT")
    assert hs.setup.gpu_draws(cyl) and cyl.display_type == "BOUNDS"
    assert bpy.ops.hybrid_skin.remove() == {"FINISHED"}
    assert _user_setup(cyl) == setup


def test_a_save_in_edit_mode_with_the_evaluated_display_keeps_everything(addon, tmp_path):
    """Saving keeps the setup (the file holds Blender's hybrid): a save in Edit Mode, whose mesh lives in
    the edit mesh meanwhile, changes nothing of the user's or of the setup."""
    arm, cyl = three_bone_cylinder()
    pose_bone(arm, "Bone1", (70, 0, 30))
    cyl.hybrid_skin.display = "EVALUATED"
    assert bpy.ops.hybrid_skin.add() == {"FINISHED"}
    before = object_snapshot(cyl)
    hs = modules(addon)
    _mode(cyl, "EDIT")
    assert bpy.ops.wm.save_as_mainfile(filepath=str(tmp_path / "edit.blend"), copy=True) == {"FINISHED"}
    _mode(cyl, "OBJECT")
    assert differences(before, object_snapshot(cyl)) == [], "the save changed the object"
    assert cyl.modifiers.get("HybridSkin Mix") is not None
    assert_close(evaluated_positions(cyl), hs.api.deformed_positions(cyl, 0.5), "after the save")


def test_an_armature_modifier_the_user_hid_is_respected_by_the_gpu_display(addon):
    """A rigger hides the Armature modifier in the viewport to see the rest shape: Blender (and the
    Evaluated display) then show the mesh undeformed, but the GPU display skinned it anyway. It steps
    aside while the modifier is hidden (the panel says why) and draws again once the user shows it."""
    arm, cyl = three_bone_cylinder()
    pose_bone(arm, "Bone1", (70, 0, 30))
    activate(cyl)
    hs = modules(addon)
    panel = importlib.import_module(addon.__name__ + ".skin.panel").VIEW3D_PT_hybrid_skin
    note = "Armature modifier hidden: Blender draws the mesh"
    lbs = evaluated_positions(cyl)
    cyl.modifiers["Armature"].show_viewport = False
    rest, setup = evaluated_positions(cyl), _user_setup(cyl)
    assert np.abs(rest - lbs).max() > 0.1, "hiding the modifier must show the rest shape (or this is void)"
    assert bpy.ops.hybrid_skin.add(display="GPU") == {"FINISHED"}
    assert cyl.display_type == setup["display_type"] and not hs.setup.gpu_draws(cyl)
    assert not any(m.show_viewport for m in cyl.modifiers), "the user's hidden modifier stays hidden"
    assert not hs.viewport.shows_on_gpu(cyl, bpy.context.view_layer)
    assert_close(evaluated_positions(cyl), rest, "what Blender shows: the rest shape, as the user asked")
    assert note in draw_panel(panel).labels()
    cyl.modifiers["Armature"].show_viewport = True  # the user shows it again
    bpy.context.view_layer.update()
    assert hs.setup.gpu_draws(cyl) and hs.viewport.shows_on_gpu(cyl, bpy.context.view_layer)
    assert note not in draw_panel(panel).labels()
    assert bpy.ops.hybrid_skin.remove() == {"FINISHED"}
    assert cyl.modifiers["Armature"].show_viewport, "the user's last choice comes back"
    assert_close(evaluated_positions(cyl), lbs, "after Remove")
