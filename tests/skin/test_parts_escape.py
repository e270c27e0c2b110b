"""Issue 26 §3 and §4: Hybrid Skin's parts (its modifiers, and the per-vertex data its Mix tree reads, on
the user's object) never outlive or escape their object, whatever Blender's own tools do with them.

Each case ends either exactly as Blender alone would leave the objects (truth: Blender's own Armature
modifier on a plain copy, ``native_positions``) or with Hybrid Skin fully set up on the object that carries
it (truth: the API, and Blender's exact mix), and says so in one sentence when the add-on changed something
the user did not ask for.
"""

from __future__ import annotations

import importlib

import bpy
import numpy as np
import pytest

from tests.robustness.bake_scene import rig
from tests.robustness.helpers import activate, assert_close, modules
from tests.support.layout import draw_panel
from tests.support.scenes import evaluated_positions, native_positions

FRAME = 6
MIX, GROUP = "HybridSkin DQS", "HybridSkin Factor"
#: Hybrid Skin's modifiers on an object it is set up on.
PARTS = ["HybridSkin Rest", "HybridSkin Keep LBS", "HybridSkin DQS", "HybridSkin Mix"]


def _parts(obj) -> list[str]:
    """Hybrid Skin's modifiers, version 1's factor group, and its per-vertex data, on ``obj``."""
    data = [a.name for a in obj.data.attributes if a.name.startswith(".hybrid_skin_")]
    return [m.name for m in obj.modifiers if m.name.startswith("HybridSkin ")] + [
        g.name for g in obj.vertex_groups if g.name.startswith(GROUP)
    ] + (["per-vertex data"] if data else [])


def _modifier_parts(obj) -> list[str]:
    return [m.name for m in obj.modifiers if m.name.startswith("HybridSkin ")]


def _exact(addon, obj, what: str) -> None:
    """Hybrid Skin fully set up on ``obj``: Blender shows the API's hybrid, which is Blender's own mix."""
    assert obj.hybrid_skin.enabled and modules(addon).setup.is_applied(obj), what
    shown = evaluated_positions(obj)
    assert_close(shown, addon.api.deformed_positions(obj), what)
    assert_close(shown, native_positions(obj, obj.hybrid_skin.deform_factor), what + " (Blender's mix)")


def _glove(body, name="Glove"):
    """A second mesh skinned to the same rig (a copy of the body's mesh made before Hybrid Skin)."""
    glove = bpy.data.objects.new(name, body.data.copy())
    bpy.context.scene.collection.objects.link(glove)
    for group in [g for g in glove.vertex_groups if g.name.startswith(GROUP)]:
        glove.vertex_groups.remove(group)
    glove.vertex_groups.clear()
    for group in body.vertex_groups:
        if not group.name.startswith(GROUP):
            glove.vertex_groups.new(name=group.name)
    glove.location.x = 1.5
    return glove


@pytest.fixture
def body(addon):
    arm, obj = rig()
    bpy.context.scene.frame_set(FRAME)
    return arm, obj


# ------------------------------------------------------------------------------------------ Apply
def test_applying_the_armature_modifier_freezes_blenders_lbs_and_takes_hybrid_skin_off(addon, body, capfd):
    arm, obj = body
    lbs = native_positions(obj, 0.0)
    with bpy.context.temp_override(object=obj, active_object=obj):
        assert bpy.ops.object.modifier_apply(modifier="Armature") == {"FINISHED"}
    bpy.context.view_layer.update()
    assert _parts(obj) == [] and not obj.hybrid_skin.enabled and len(obj.modifiers) == 0
    rest = np.array([v.co[:] for v in obj.data.vertices])
    assert_close(rest, lbs, "the applied mesh is Blender's LBS, as without the add-on")
    assert_close(evaluated_positions(obj), lbs, "and nothing deforms it a second time")
    assert capfd.readouterr().out.count("no longer has the Armature modifier Hybrid Skin followed") == 1


# ---------------------------------------------------------------------------------- Copy Modifiers
@pytest.mark.parametrize("display", ["EVALUATED", "GPU"])
def test_copy_modifiers_to_a_glove_gives_it_what_blender_alone_would(addon, display, capfd):
    arm, obj = rig(display=display)
    obj.modifiers["Armature"].use_deform_preserve_volume = False
    glove = _glove(obj)
    bpy.context.scene.frame_set(FRAME)
    activate(obj)
    glove.select_set(True)
    assert bpy.ops.object.make_links_data(type="MODIFIERS") == {"FINISHED"}
    bpy.context.view_layer.update()
    assert [m.name for m in glove.modifiers] == ["Armature"] and _parts(glove) == []
    mod = glove.modifiers["Armature"]
    assert mod.show_viewport and mod.show_render and not mod.use_deform_preserve_volume
    assert_close(evaluated_positions(glove), native_positions(glove, 0.0), "the glove: Blender's LBS")
    assert "'Glove' got Hybrid Skin's modifier" in capfd.readouterr().out
    obj.hybrid_skin.display = "EVALUATED"  # what Blender holds for the body, to compare
    _exact(addon, obj, "the body")


# ------------------------------------------------------------------------------------ Append, Link
def _library(addon, tmp_path, display):
    """A file with the rig and the body (Hybrid Skin on, ``display``) in a collection 'Character'."""
    arm, obj = rig(display=display)
    holder = bpy.data.collections.new("Character")
    bpy.context.scene.collection.children.link(holder)
    for o in (arm, obj):
        bpy.context.scene.collection.objects.unlink(o)
        holder.objects.link(o)
    path = tmp_path / "library.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(path), copy=True)
    bpy.data.batch_remove([obj, arm, obj.data, arm.data, holder])
    bpy.data.orphans_purge(do_recursive=True)
    return path


@pytest.mark.parametrize("display", ["EVALUATED", "GPU"])
@pytest.mark.parametrize("how", ["operator", "script", "collection"])
def test_an_appended_character_is_set_up(addon, tmp_path, display, how):
    path = _library(addon, tmp_path, display)
    if how == "operator":
        assert bpy.ops.wm.append(directory=f"{path}/Object/", filename="Cylinder") == {"FINISHED"}
        assert bpy.ops.wm.append(directory=f"{path}/Object/", filename="Rig") == {"FINISHED"}
    elif how == "script":
        with bpy.data.libraries.load(str(path)) as (_src, dst):
            dst.objects = ["Cylinder", "Rig"]
        for o in dst.objects:
            bpy.context.scene.collection.objects.link(o)
    else:
        assert bpy.ops.wm.append(directory=f"{path}/Collection/", filename="Character") == {"FINISHED"}
    obj = bpy.data.objects["Cylinder"]
    bpy.context.scene.frame_set(FRAME)
    assert obj.library is None and obj.hybrid_skin.display == display
    hs = modules(addon)
    if display == "GPU":
        assert hs.setup.gpu_draws(obj), "the preview draws the appended character"
        obj.hybrid_skin.display = "EVALUATED"  # what Blender holds, to compare
    _exact(addon, obj, f"appended ({how})")


def test_a_linked_character_shows_its_librarys_hybrid_and_the_panel_says_so(addon, tmp_path):
    """Linked data is not the user's to change: Blender shows the library's own stack — which holds Hybrid
    Skin's hybrid (issue 34) — and the panel says why nothing can be changed here."""
    path = _library(addon, tmp_path, "EVALUATED")
    assert bpy.ops.wm.link(directory=f"{path}/Collection/", filename="Character") == {"FINISHED"}
    instancer = bpy.data.objects["Character"]
    assert instancer.instance_collection is not None
    obj = bpy.data.objects["Cylinder"]
    assert obj.library is not None and obj.hybrid_skin.enabled and _modifier_parts(obj) == PARTS
    panel = importlib.import_module(addon.__name__ + ".skin.panel").VIEW3D_PT_hybrid_skin
    linked = bpy.data.collections["Character"]
    layer = bpy.context.view_layer
    override = linked.override_hierarchy_create(bpy.context.scene, layer, reference=instancer)
    assert override is not None
    local = next(o for o in bpy.data.objects if o.override_library is not None and o.type == "MESH")
    bpy.context.scene.frame_set(FRAME)
    assert _modifier_parts(local) == PARTS, "an override keeps its library's stack"
    factor = local.hybrid_skin.deform_factor
    assert_close(evaluated_positions(local), native_positions(local, factor), "the override: the hybrid")
    lbs = native_positions(local, 0.0)
    assert np.abs(evaluated_positions(local) - lbs).max() > 1e-3, "and not Blender's LBS (or this is void)"
    activate(local)
    assert "Linked: Blender shows its library's deformation" in draw_panel(panel).labels()


# --------------------------------------------------------------------------- Copy to Selected, Transfer
def test_copy_vertex_groups_to_selected_gives_the_glove_nothing_of_hybrid_skins(addon, body):
    arm, obj = body
    glove = _glove(obj)
    activate(obj)
    glove.select_set(True)
    assert bpy.ops.object.vertex_group_copy_to_selected() == {"FINISHED"}
    bpy.context.view_layer.update()
    assert _parts(glove) == []
    assert [g.name for g in glove.vertex_groups] == [g.name for g in obj.vertex_groups]
    _exact(addon, obj, "the body")


def test_transfer_of_all_vertex_groups_deforms_the_receiver_as_blender_alone_would(addon, body):
    """Transfer Data copies every group by name, the factor group too — as a plain (unlocked) group, which
    cannot be told from a group of the user's of that name, so it stays: it deforms nothing (no modifier
    of the receiver mixes by it)."""
    arm, obj = body
    glove = _glove(obj)
    glove.vertex_groups.clear()
    glove.modifiers.new("Armature", "ARMATURE").object = arm
    with bpy.context.temp_override(active_object=obj, object=obj, selected_editable_objects=[glove]):
        assert bpy.ops.object.data_transfer(
            data_type="VGROUP_WEIGHTS", layers_select_src="ALL", layers_select_dst="NAME"
        ) == {"FINISHED"}
    bpy.context.view_layer.update()
    assert [m.name for m in glove.modifiers] == ["Armature"] and not glove.hybrid_skin.enabled
    assert_close(evaluated_positions(glove), native_positions(glove, 0.0), "the glove: Blender's LBS")
    _exact(addon, obj, "the body")


def test_link_object_data_shares_the_mesh_without_mixing_the_second_object(addon, body):
    arm, obj = body
    glove = _glove(obj)
    glove.modifiers.new("Armature", "ARMATURE").object = arm
    activate(obj)
    glove.select_set(True)
    assert bpy.ops.object.make_links_data(type="OBDATA") == {"FINISHED"}
    bpy.context.view_layer.update()
    assert glove.data == obj.data and [m.name for m in glove.modifiers] == ["Armature"]
    assert_close(evaluated_positions(glove), native_positions(glove, 0.0), "the glove: Blender's LBS")
    _exact(addon, obj, "the body, whose factor group the shared mesh keeps")


# ----------------------------------------------------------------- Duplicate Linked, Make Single User
def test_make_single_user_after_a_linked_duplicate_keeps_both_exact_and_no_stray_group(addon, body):
    arm, obj = body
    activate(obj)
    assert bpy.ops.object.duplicate_move_linked() == {"FINISHED"}
    twin = bpy.context.active_object
    bpy.context.view_layer.update()
    twin.hybrid_skin.deform_factor = 0.9
    assert bpy.ops.object.make_single_user(object=True, obdata=True) == {"FINISHED"}
    bpy.context.view_layer.update()
    for o in (obj, twin):
        assert o.data.users == 1 and _modifier_parts(o) == PARTS, (o.name, _parts(o))
        _exact(addon, o, o.name)


# --------------------------------------------------------------------------------------- Join, Separate
def test_joining_a_glove_into_the_body_keeps_the_body_exact(addon, body, capfd):
    arm, obj = body
    glove = _glove(obj)
    glove.modifiers.new("Armature", "ARMATURE").object = arm
    activate(obj)
    glove.select_set(True)
    count = len(obj.data.vertices)
    assert bpy.ops.object.join() == {"FINISHED"}
    bpy.context.view_layer.update()
    assert len(obj.data.vertices) == 2 * count and _modifier_parts(obj) == PARTS
    _exact(addon, obj, "the joined body")


@pytest.mark.parametrize("mode", ["GLOBAL", "AUTO"])
def test_joining_the_body_into_a_glove_leaves_the_glove_as_blender_alone_would(addon, body, capfd, mode):
    """Auto keeps per-vertex data on the mesh (the tree's, or the factors the add-on writes where Blender has
    no Bone Info node), which the join carries into the glove: said once; a Global factor keeps none (the
    tree holds no Auto nodes until Auto is chosen)."""
    arm, obj = body
    obj.hybrid_skin.factor_mode = mode
    bpy.context.view_layer.update()
    data = {a.name for a in obj.data.attributes if a.name.startswith(".hybrid_skin")}
    assert bool(data) == (mode == "AUTO"), data  # the tree's data (5.2), or the factors written (4.5)
    capfd.readouterr()
    glove = _glove(obj)
    glove.modifiers.new("Armature", "ARMATURE").object = arm
    activate(glove)
    obj.select_set(True)
    assert bpy.ops.object.join() == {"FINISHED"}
    bpy.context.view_layer.update()
    assert _parts(glove) == [] and not glove.hybrid_skin.enabled
    assert_close(evaluated_positions(glove), native_positions(glove, 0.0), "the glove: Blender's LBS")
    said = "'Glove' got Hybrid Skin's per-vertex data" in capfd.readouterr().out
    assert said == bool(data)


def test_a_separated_part_keeps_hybrid_skin_set_up(addon, body):
    arm, obj = body
    activate(obj)
    bpy.ops.object.mode_set(mode="EDIT")
    bpy.ops.mesh.select_all(action="DESELECT")
    bpy.ops.object.mode_set(mode="OBJECT")
    for v in obj.data.vertices:
        v.select = v.co.z > 1.0
    bpy.ops.object.mode_set(mode="EDIT")
    assert bpy.ops.mesh.separate(type="SELECTED") == {"FINISHED"}
    bpy.ops.object.mode_set(mode="OBJECT")
    part = next(o for o in bpy.context.selected_objects if o != obj)
    bpy.context.view_layer.update()
    for o in (obj, part):
        assert _modifier_parts(o) == PARTS, (o.name, _parts(o))
        _exact(addon, o, o.name)


# ---------------------------------------------------------------------------- scripts move the stack
def test_a_script_moving_the_dqs_modifier_away_gets_it_put_back(addon, body, capfd):
    arm, obj = body
    obj.modifiers.new("Smooth", "SMOOTH")
    mix = obj.modifiers[MIX]
    obj.modifiers.move(list(obj.modifiers).index(mix), len(obj.modifiers) - 1)
    bpy.context.view_layer.update()
    assert [m.name for m in obj.modifiers] == [PARTS[0], "Armature", *PARTS[1:], "Smooth"]
    assert "was removed or moved, so it is set up again" in capfd.readouterr().out
    shown = evaluated_positions(obj)
    obj.modifiers.remove(obj.modifiers["Smooth"])
    bpy.context.view_layer.update()
    assert np.abs(shown - evaluated_positions(obj)).max() > 0.0, "the Smooth modifier after it acts"
    _exact(addon, obj, "after the script")


# ------------------------------------------------------------------------------------- §4 vertex count
@pytest.mark.parametrize("display", ["EVALUATED", "GPU"])
def test_a_modifier_changing_the_vertex_count_moved_above_is_one_sentence(addon, display, capfd):
    hs = modules(addon)
    arm, obj = rig(display=display)
    subdivision = obj.modifiers.new("Subdivision", "SUBSURF")
    bpy.context.view_layer.update()
    assert not hs.setup.gpu_draws(obj)  # a modifier after the Armature one: Blender draws the stack
    with bpy.context.temp_override(object=obj):
        bpy.ops.object.modifier_move_to_index(modifier=subdivision.name, index=0)
    bpy.context.view_layer.update()
    assert not hs.setup.gpu_draws(obj), "the display steps aside: Blender draws its own stack"
    refusal = "change the vertex count: move the Armature modifier above them"
    with pytest.raises(hs.errors.HybridSkinError, match=refusal):
        addon.api.deformed_positions(obj)
    if display == "GPU":
        assert refusal in capfd.readouterr().out, "the display says why it steps aside"
