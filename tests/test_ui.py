"""Every panel, sub-panel, dialog and Action-editor entry, drawn in the states a user meets.

The bpy module cannot draw a real UI, so each ``draw`` gets a recording layout
(``tests/support/layout.py``) that checks what Blender would check while drawing: an operator button
names a registered operator, a property exists on its data, a property set on a button exists on the
operator. Over all states, every operator the add-on registers must be offered somewhere.
"""

from __future__ import annotations

import importlib
import math
from types import SimpleNamespace

import bpy
import pytest

from tests.support.layout import Drawn, RecordingLayout, draw_function, draw_panel, operator_properties
from tests.support.scenes import make_chain_armature, make_cylinder, skin_to_chain

#: Operators offered in a state, over every panel and entry.
Offered = dict[str, set[str]]


@pytest.fixture(scope="module")
def ui(addon) -> SimpleNamespace:
    module = importlib.import_module
    panels = module(addon.__name__ + ".animtex.panels")
    return SimpleNamespace(
        addon=addon,
        main=module(addon.__name__ + ".skin.panel").VIEW3D_PT_hybrid_skin,
        analyze=module(addon.__name__ + ".analyze.panel").VIEW3D_PT_hybrid_skin_analyze,
        animtex=panels.VIEW3D_PT_hybrid_skin_animtex,
        dopesheet=panels.DOPESHEET_PT_hybrid_skin_animtex,
        menu_entry=panels._menu_entry,
        menu=panels.MENU,
        crowd=module(addon.__name__ + ".animtex.crowd"),
        summary=module(addon.__name__ + ".animtex.summary"),
    )


def registered_operators(addon) -> set[str]:
    """``bl_idname`` of every operator the add-on registers (FEATURES' modules' ``classes``)."""
    out = set()
    for feature, names in addon.FEATURES:
        for name in names:
            module = importlib.import_module(f"{addon.__name__}.{feature}.{name}")
            out |= {c.bl_idname for c in getattr(module, "classes", ()) if issubclass(c, bpy.types.Operator)}
    return out


def action_editor(obj) -> SimpleNamespace:
    """What the Dope Sheet's Action editor gives a panel or menu as context (a stand-in: no window)."""
    return SimpleNamespace(
        space_data=SimpleNamespace(ui_mode="ACTION", mode="ACTION"),
        active_object=obj,
        object=obj,
        mode="OBJECT" if obj is None or obj.mode == "OBJECT" else obj.mode,
        scene=bpy.context.scene,
    )


def draw_everything(ui) -> dict[str, RecordingLayout | None]:
    """Each panel (None where its poll refuses), the Action editor's panel and menu entry."""
    obj = bpy.context.view_layer.objects.active
    drawn = {name: draw_panel(getattr(ui, name)) for name in ("main", "analyze", "animtex")}
    drawn["dopesheet"] = draw_panel(ui.dopesheet, action_editor(obj))
    drawn["menu"] = draw_function(ui.menu_entry, action_editor(obj))
    assert draw_panel(ui.dopesheet) is None, "the Action editor's panel showed outside the Action editor"
    assert draw_function(ui.menu_entry).calls == [], "the menu entry showed outside the Action editor"
    return drawn


def offered(drawn: dict[str, RecordingLayout | None]) -> set[str]:
    return {op for layout in drawn.values() if layout is not None for op in layout.operators()}


def rig_with_action(name: str = "Cylinder"):
    arm = make_chain_armature("Rig", [1.0, 1.0])
    obj = make_cylinder(name, rings=8, segments=12)
    skin_to_chain(obj, arm)
    bone = arm.pose.bones["Bone1"]
    bone.rotation_mode = "XYZ"
    for frame, angle in ((1, 0.0), (5, 70.0)):
        bone.rotation_euler = (math.radians(angle), 0.0, 0.0)
        bone.keyframe_insert("rotation_euler", frame=frame)
    scene = bpy.context.scene
    scene.frame_start, scene.frame_end = 1, 5
    scene.frame_set(3)
    return arm, obj


def activate(obj) -> None:
    bpy.context.view_layer.objects.active = obj


def test_every_state_draws_and_every_operator_is_offered(ui, tmp_path):
    seen: Offered = {}

    activate(None)  # no object
    drawn = draw_everything(ui)
    assert drawn["main"].labels() == ["Select a skinned mesh"] and drawn["main"].operators() == []
    assert drawn["analyze"] is drawn["animtex"] is drawn["dopesheet"] is None
    assert drawn["menu"].operators() == ["hybrid_skin.bake_animation_texture"]  # greyed out by its poll:
    assert not bpy.ops.hybrid_skin.bake_animation_texture.poll()
    seen["no object"] = offered(drawn)

    empty = bpy.data.objects.new("Empty", None)
    bpy.context.scene.collection.objects.link(empty)
    activate(empty)  # a non-mesh that nothing bakes
    drawn = draw_everything(ui)
    assert drawn["main"].labels() == ["Select a skinned mesh"]
    assert drawn["analyze"] is drawn["animtex"] is drawn["dopesheet"] is None
    seen["empty"] = offered(drawn)

    arm, obj = rig_with_action()
    activate(arm)  # an armature: the texture bake starts from it; the main panel names its meshes
    drawn = draw_everything(ui)
    assert drawn["main"].labels() == ["Hybrid Skin is set on a mesh: select one", obj.name]
    assert drawn["analyze"] is None
    bake, crowd = "hybrid_skin.bake_animation_texture", "hybrid_skin.crowd_preview"
    assert drawn["animtex"].operators() == [bake, crowd]
    assert drawn["dopesheet"].operators() == [bake] and drawn["menu"].operators() == [bake]
    seen["armature"] = offered(drawn)

    helmet = bpy.data.objects.new("Helmet", bpy.data.meshes.new("Helmet"))
    helmet.data.from_pydata([(0, 0, 0), (0.1, 0, 0), (0, 0.1, 0)], [], [(0, 1, 2)])
    bpy.context.scene.collection.objects.link(helmet)
    helmet.parent, helmet.parent_type, helmet.parent_bone = arm, "BONE", arm.data.bones[-1].name
    drawn = draw_everything(ui)  # a mesh parented to a bone: a bake would leave it out, the panel says so
    assert drawn["animtex"].operators() == [bake, "hybrid_skin.skin_rigid_parts", crowd]
    assert "1 mesh(es) parented to bones are not baked" in drawn["animtex"].labels()
    seen["armature with a rigid part"] = offered(drawn)
    assert bpy.ops.hybrid_skin.skin_rigid_parts() == {"FINISHED"}
    assert draw_everything(ui)["animtex"].operators() == [bake, crowd]

    activate(obj)  # a skinned mesh without Hybrid Skin
    drawn = draw_everything(ui)
    assert drawn["main"].operators() == ["hybrid_skin.add"] and drawn["analyze"] is None
    seen["mesh"] = offered(drawn)

    assert bpy.ops.hybrid_skin.add(display="GPU") == {"FINISHED"}  # the GPU preview, drawing
    drawn = draw_everything(ui)
    main = drawn["main"]
    # What the preview does not feed, in the panel (docs/displays.md has the whole table).
    assert "Preview drawn by Hybrid Skin's shaders" in main.labels()
    assert "OBJ/FBX exports, ray casts, scripts and" in main.labels()
    assert "Viewport Render Image see the rest pose" in main.labels()
    assert main.operators()[:3] == [
        "hybrid_skin.remove",
        "hybrid_skin.rebind",
        "hybrid_skin.render_comparison",
    ]
    targets = [c.properties["target"] for c in main.buttons("hybrid_skin.bake_deformation")]
    assert targets == ["SHAPE_KEYS", "CURRENT", "PC2", "MDD"]
    assert main.props() == ["factor_mode", "deform_factor", "display"]  # only what acts in the mode
    assert "Vertices: 108" in main.labels()
    assert drawn["analyze"].operators() == ["hybrid_skin.analyze"]
    seen["GPU display"] = offered(drawn)

    settings = obj.hybrid_skin
    settings.display = "EVALUATED"
    assert not any("Preview" in label for label in draw_everything(ui)["main"].labels())
    settings.factor_vertex_group = obj.vertex_groups[0].name
    settings.factor_mode = "VERTEX_GROUP"
    drawn = draw_everything(ui)
    assert drawn["main"].props() == ["factor_mode", "factor_vertex_group", "deform_factor", "display"]
    assert bpy.ops.hybrid_skin.analyze() == {"FINISHED"}
    drawn = draw_everything(ui)
    labels = drawn["analyze"].labels()
    methods = ["LBS", "DQS", "Your Setting", "Best Single Factor", "Auto: Round", "Auto: Keep Volume",
               "Auto: Per Joint"]  # fmt: skip
    assert labels[:5] == ["Whole mesh", "Method", "Factor", "Volume", "Folds"]
    assert labels[5:33:4] == methods  # human names
    assert {"Shrink", "Collapse", "Bone1"} <= set(labels)
    assert labels[8:36:4][:2] == ["—", "—"]  # LBS and DQS are the folds' reference
    assert all(text == "0" or text.endswith("°") for text in labels[16:36:4]), labels[16:36:4]
    internal = {"current", "best", "AUTO", "AUTO_KEEP_VOLUME", "AUTO_JOINT", "Keep Vol.", "Auto 0.1"}
    assert not internal & set(labels), internal & set(labels)
    seen["Evaluated display, analysed"] = offered(drawn)

    settings.factor_mode = "AUTO"
    drawn = draw_everything(ui)
    assert drawn["main"].props() == ["factor_mode", "auto_profile", "display"]  # Auto reads no slider
    assert any(label.startswith("Auto: ") for label in drawn["main"].labels())  # who computes it
    seen["Auto"] = offered(drawn)

    assert bpy.ops.hybrid_skin.bake_deformation(target="CURRENT") == {"FINISHED"}
    drawn = draw_everything(ui)
    assert "hybrid_skin.clear_bake" in drawn["main"].operators()
    assert "hybrid_skin.bake_deformation" not in drawn["main"].operators()
    assert "Baked: the Armature modifier is bypassed" in drawn["main"].labels()
    seen["baked"] = offered(drawn)
    assert bpy.ops.hybrid_skin.clear_bake() == {"FINISHED"}

    activate(arm)
    directory = str(tmp_path)
    assert bpy.ops.hybrid_skin.bake_animation_texture(directory=directory, kind="BONE_DQ") == {"FINISHED"}
    drawn = draw_everything(ui)
    seconds = ui.summary.last_summary(arm).seconds
    for panel in ("animtex", "dopesheet"):
        labels = drawn[panel].labels()
        assert labels[0].startswith("BONE_DQ PNG16, step 1, 1 clip(s)") and labels[1].startswith("Max error")
        assert f"Baked in {sum(seconds.values()):.2f} s" in labels  # where the time went, phase by phase
        shown = ", ".join(labels)
        for phase, value in seconds.items():  # phases under 5 ms are left out
            assert (f"{phase} {value:.2f}" in shown) == (value >= 0.005), (phase, value, shown)
    seen["after a texture bake"] = offered(drawn)

    everything = set().union(*seen.values())
    assert everything == registered_operators(ui.addon), seen
    assert len(everything) == 11


def test_the_bake_dialog_draws_its_settings(ui):
    """The texture bake's settings dialog (``invoke`` → ``invoke_props_dialog``), for listed actions."""
    cls = bpy.types.HYBRID_SKIN_OT_bake_animation_texture
    rna = operator_properties(cls.bl_idname)
    layout = RecordingLayout()
    actions = [SimpleNamespace(name="Walk", use=True, bl_rna=rna.properties["actions"].fixed_type)]
    options = importlib.import_module(ui.addon.__name__ + ".animtex.options")
    values = {name: getattr(options.BakeOptions(), name) for name, o in options.declared() if o.ui}
    values.update(action_source="LISTED", kind="BONE_DQ")
    dialog = Drawn(cls, layout, bl_rna=rna, actions=actions, **values)
    cls.draw(dialog, bpy.context)
    assert layout.props() == [  # top-down by what depends on what (tests/animtex/test_dialog.py)
        "action_source",
        "use",
        "kind",
        "tolerance",
        "precision",
        "frame_step",
        "unkeyed_bones_at_rest",
        "runtime_auto",
        "max_width",
        "power_of_two",
        "embed_metadata",
        "directory",
        "file_name",
        "replace_files",
        "write_mesh_data",
        "export_gltf",
        "export_babylon",
        "tangents",
        "export_instancing",
        "memory_budget",
    ]
    assert [c.text for c in layout.calls if c.kind == "prop" and c.args[1] == "use"] == ["Walk"]


def test_the_action_editor_menu_holds_the_entry(ui):
    assert ui.menu_entry in getattr(bpy.types, ui.menu)._dyn_ui_initialize()


@pytest.mark.gpu
def test_the_crowd_preview_state(ui, gpu_context, tmp_path):
    arm, _obj = rig_with_action()
    activate(arm)
    assert bpy.ops.hybrid_skin.bake_animation_texture(directory=str(tmp_path), kind="VERTEX") == {"FINISHED"}
    assert bpy.ops.hybrid_skin.crowd_preview(count=16) == {"FINISHED"}
    try:
        drawn = draw_panel(ui.animtex)
        assert [c.text for c in drawn.buttons("hybrid_skin.crowd_preview")] == ["Hide Crowd"]
        assert drawn.labels()[-1].startswith("Crowd: 16 instances, 1 draw call")
    finally:
        assert bpy.ops.hybrid_skin.crowd_preview() == {"FINISHED"}  # toggles it off
    assert [c.text for c in draw_panel(ui.animtex).buttons("hybrid_skin.crowd_preview")] == ["Crowd Preview"]


def _asking(operator_class, **values):
    """Call an operator's ``invoke`` as a click does, with a window manager that records the dialog it
    opens (the bpy module has no window to open one in)."""
    asked = []
    manager = SimpleNamespace(invoke_props_dialog=lambda op, width=300: asked.append(op) or {"RUNNING_MODAL"})
    layout = RecordingLayout()
    operator = Drawn(operator_class, layout, bl_rna=operator_properties(operator_class.bl_idname), **values)
    result = operator_class.invoke(operator, SimpleNamespace(window_manager=manager), None)
    return result, asked, operator


def test_crowd_preview_and_render_comparison_ask_for_their_options_first(ui):
    crowd_op = bpy.types.HYBRID_SKIN_OT_crowd_preview
    result, asked, _ = _asking(crowd_op, count=1000, spacing=0.0)
    assert result == {"RUNNING_MODAL"} and len(asked) == 1  # instances and spacing, before anything runs
    assert {"count", "spacing"} <= set(operator_properties(crowd_op.bl_idname).properties.keys())

    compare = bpy.types.HYBRID_SKIN_OT_render_comparison
    result, asked, operator = _asking(compare, filepath="//hybrid_skin_comparison.png", width=512, height=512)
    assert result == {"RUNNING_MODAL"} and len(asked) == 1
    if not bpy.data.filepath:  # no folder for "//": the picture only goes to Blender
        assert operator.filepath == ""
    compare.draw(operator, bpy.context)
    assert operator.layout.props() == ["width", "height", "filepath"]
