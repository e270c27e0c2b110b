"""The installed add-on as a user meets it: operators, panel, settings, exact restore, save/reload."""

from __future__ import annotations

import bpy
import numpy as np
import pytest

from tests.support.scenes import (
    bbox_diagonal,
    evaluated_positions,
    make_chain_armature,
    make_cylinder,
    pose_bone,
    skin_to_chain,
)


def snapshot(obj: bpy.types.Object) -> dict:
    """Everything Hybrid Skin may touch on an object, for exact before/after comparisons."""
    mods = [
        {
            p.identifier: getattr(m, p.identifier)
            for p in m.bl_rna.properties
            if p.identifier not in {"rna_type", "is_active", "execution_time", "persistent_uid"}
            and not p.is_readonly
        }
        for m in obj.modifiers
    ]
    for m in mods:
        for key, value in m.items():
            if isinstance(value, bpy.types.ID):
                m[key] = value.name  # datablocks by name: a reopened file has other Python objects
    return {
        "modifiers": mods,
        "display_type": obj.display_type,
        "groups": [g.name for g in obj.vertex_groups],
        "active_group": obj.vertex_groups.active_index,
    }


@pytest.fixture
def rigged():
    arm = make_chain_armature("Rig", [1.0, 1.0])
    cyl = make_cylinder("Cylinder")
    skin_to_chain(cyl, arm)
    pose_bone(arm, "Bone1", (90, 0, 40))
    bpy.context.view_layer.objects.active = cyl
    cyl.select_set(True)
    return arm, cyl


def test_installed_zip_registers_operators_panel_and_property(addon):
    for op in ("add", "remove", "rebind", "render_comparison"):
        assert hasattr(bpy.ops.hybrid_skin, op)
        assert getattr(bpy.ops.hybrid_skin, op).idname() == f"HYBRID_SKIN_OT_{op}"
    assert bpy.types.VIEW3D_PT_hybrid_skin.bl_category == "Hybrid Skin"
    assert "hybrid_skin" in bpy.types.Object.bl_rna.properties
    assert addon.__name__ == "bl_ext.user_default.hybrid_skin"


PARTS = ["HybridSkin Rest", "Armature", "HybridSkin Keep LBS", "HybridSkin DQS", "HybridSkin Mix"]


def test_add_sets_up_blenders_exact_hybrid_and_remove_restores_exactly(addon, rigged):
    """Add's default display is Evaluated: the user's Armature modifier as LBS, Hybrid Skin's Preserve
    Volume modifier and the Geometry Nodes modifiers that keep the LBS result and mix the two; Blender
    draws it. No vertex group of Hybrid Skin's: the factor lives in the Mix modifier."""
    arm, cyl = rigged
    cyl.modifiers.new("Smooth", "CORRECTIVE_SMOOTH")
    cyl.display_type = "SOLID"
    before = snapshot(cyl)
    assert bpy.ops.hybrid_skin.add() == {"FINISHED"}
    settings = cyl.hybrid_skin
    assert settings.enabled and settings.display == "EVALUATED" and settings.deform_factor == 0.5
    assert [m.name for m in cyl.modifiers] == [*PARTS, "Smooth"]
    assert all(m.show_viewport and m.show_render for m in cyl.modifiers)
    assert cyl.display_type == "SOLID" and [g.name for g in cyl.vertex_groups] == before["groups"]
    assert bpy.ops.hybrid_skin.remove() == {"FINISHED"}
    assert snapshot(cyl) == before
    assert not cyl.hybrid_skin.enabled
    assert not bpy.ops.hybrid_skin.remove.poll() and not bpy.ops.hybrid_skin.rebind.poll()


def test_add_gpu_display_hides_native_drawing_and_remove_restores_exactly(addon, rigged):
    arm, cyl = rigged
    cyl.display_type = "SOLID"
    before = snapshot(cyl)
    assert bpy.ops.hybrid_skin.add(display="GPU") == {"FINISHED"}
    assert cyl.hybrid_skin.display == "GPU"
    assert [m.name for m in cyl.modifiers] == PARTS
    assert [m.show_viewport for m in cyl.modifiers] == [False] * 5
    assert [m.show_render for m in cyl.modifiers] == [True] * 5  # renders: Blender's exact hybrid
    assert cyl.display_type == "BOUNDS"
    cyl.modifiers.new("Smooth", "CORRECTIVE_SMOOTH")  # a modifier after it: Blender draws the stack
    bpy.context.view_layer.update()
    assert all(m.show_viewport for m in cyl.modifiers) and cyl.display_type == "SOLID"
    cyl.modifiers.remove(cyl.modifiers["Smooth"])
    bpy.context.view_layer.update()
    assert cyl.display_type == "BOUNDS", "the GPU display draws again"
    assert bpy.ops.hybrid_skin.remove() == {"FINISHED"}
    assert snapshot(cyl) == before
    assert not cyl.hybrid_skin.enabled


def test_evaluated_display_equals_the_core(addon, rigged):
    arm, cyl = rigged
    before = snapshot(cyl)
    bpy.ops.hybrid_skin.add()
    cyl.hybrid_skin.display = "EVALUATED"
    for f in (0.0, 0.3, 1.0):
        cyl.hybrid_skin.deform_factor = f
        bpy.context.view_layer.update()
        ours = addon.api.deformed_positions(cyl)
        shown = evaluated_positions(cyl)
        assert np.abs(shown - ours).max() <= 1e-5 * bbox_diagonal(ours)
    lbs, dqs = addon.api.deformed_positions(cyl, 0.0), addon.api.deformed_positions(cyl, 1.0)
    assert np.abs(lbs - dqs).max() > 0.01
    bpy.ops.hybrid_skin.remove()
    assert snapshot(cyl) == before


def test_vertex_group_factor_mode(addon, rigged):
    arm, cyl = rigged
    group = cyl.vertex_groups.new(name="Twisty")
    z = np.array([v.co.z for v in cyl.data.vertices])
    for i in range(len(z)):
        group.add([i], float(np.clip(z[i] / 2.0, 0, 1)), "REPLACE")
    bpy.ops.hybrid_skin.add()
    s = cyl.hybrid_skin
    s.deform_factor, s.factor_mode, s.factor_vertex_group = 0.8, "VERTEX_GROUP", "Twisty"
    expect = addon.api.deformed_positions(cyl, (0.8 * np.clip(z / 2.0, 0, 1)).astype(np.float32))
    np.testing.assert_allclose(addon.api.deformed_positions(cyl), expect, atol=1e-6)
    s.factor_vertex_group = "Missing"
    with pytest.raises(addon.api.HybridSkinError, match="does not exist"):
        addon.api.deformed_positions(cyl)


def test_save_reload_keeps_settings_and_saves_blenders_hybrid(addon, rigged, tmp_path):
    """The file holds the setup as Blender evaluates it (issue 34): linked into another file, the object
    comes with every part and the settings; opened again, it is as it was saved."""
    arm, cyl = rigged
    bpy.ops.hybrid_skin.add()
    cyl.hybrid_skin.deform_factor = 0.73
    saved = snapshot(cyl)
    path = tmp_path / "saved.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(path), copy=True)
    assert snapshot(cyl) == saved  # saving changes nothing
    with bpy.data.libraries.load(str(path), link=True) as (src, dst):
        dst.objects = ["Cylinder"]
    loaded = dst.objects[0]
    assert [m.name for m in loaded.modifiers] == PARTS
    assert loaded.hybrid_skin.enabled and abs(loaded.hybrid_skin.deform_factor - 0.73) < 1e-7
    bpy.data.objects.remove(loaded)
    bpy.ops.wm.open_mainfile(filepath=str(path))
    cyl = bpy.data.objects["Cylinder"]
    assert cyl.hybrid_skin.enabled and abs(cyl.hybrid_skin.deform_factor - 0.73) < 1e-7
    assert snapshot(cyl) == saved


def test_deform_factor_is_animatable(addon, rigged):
    arm, cyl = rigged
    bpy.ops.hybrid_skin.add()
    s = cyl.hybrid_skin
    s.deform_factor = 0.1
    cyl.keyframe_insert("hybrid_skin.deform_factor", frame=1)
    s.deform_factor = 0.9
    cyl.keyframe_insert("hybrid_skin.deform_factor", frame=11)
    bpy.context.scene.frame_set(6)
    assert abs(cyl.hybrid_skin.deform_factor - 0.5) < 1e-6


@pytest.mark.parametrize("case", ["no_active", "not_mesh", "no_modifier", "edit_mode_armature", "twice"])
def test_add_bad_input_reports_and_changes_nothing(addon, rigged, case):
    arm, cyl = rigged
    expected = {
        "no_active": "No active object",
        "not_mesh": "not a mesh",
        "no_modifier": "has no Armature modifier",
        "edit_mode_armature": "Edit Mode",
        "twice": None,
    }[case]
    if case == "no_active":
        bpy.context.view_layer.objects.active = None
    elif case == "not_mesh":
        bpy.context.view_layer.objects.active = arm
    elif case == "no_modifier":
        cyl.modifiers.remove(cyl.modifiers["Armature"])
    elif case == "edit_mode_armature":
        bpy.context.view_layer.objects.active = arm
        bpy.ops.object.mode_set(mode="EDIT")
        bpy.context.view_layer.objects.active = cyl
    elif case == "twice":
        bpy.ops.hybrid_skin.add()
    before = snapshot(cyl)
    try:
        if case == "twice":
            assert bpy.ops.hybrid_skin.add() == {"CANCELLED"}
        elif case == "edit_mode_armature":
            with pytest.raises(RuntimeError, match=expected):
                with bpy.context.temp_override(mode="OBJECT"):
                    bpy.ops.hybrid_skin.add()
        else:
            with pytest.raises(RuntimeError, match=expected):
                bpy.ops.hybrid_skin.add()
    finally:
        if arm.mode == "EDIT":
            bpy.context.view_layer.objects.active = arm
            bpy.ops.object.mode_set(mode="OBJECT")
    assert snapshot(cyl) == before


def test_library_linked_mesh_is_refused(addon, rigged, tmp_path):
    arm, cyl = rigged
    path = tmp_path / "lib.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(path), copy=True)
    with bpy.data.libraries.load(str(path), link=True) as (src, dst):
        dst.objects = ["Cylinder"]
    linked = dst.objects[0]
    bpy.context.scene.collection.objects.link(linked)
    bpy.context.view_layer.objects.active = linked
    with pytest.raises(RuntimeError, match="linked from a library"):
        bpy.ops.hybrid_skin.add()
    assert not linked.hybrid_skin.enabled
