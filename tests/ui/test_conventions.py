"""Blender's conventions, checked over everything the add-on registers: every operator in a menu that F3
finds with Developer Extras off, under a label that says what it does out of context; every greyed
button says why; every property has a description.

F3 (menu search) lists what the editor's header menus hold, submenus included; an operator in no menu is
found only by the developer's operator search. The walk below draws the headers of the 3D Viewport (Object
and Pose Mode) and of the Action editor with a recording layout, Blender's own menus included, and follows
every submenu, as the search does.
"""

from __future__ import annotations

import importlib
from types import SimpleNamespace

import bpy
import pytest

from tests.support.layout import Call, Drawn, RecordingLayout, operator_class_name
from tests.test_ui import registered_operators as operator_idnames
from tests.test_ui import rig_with_action


class MenuLayout(RecordingLayout):
    """A recording layout that also takes what Blender's own menus draw and the walk does not follow
    (enum sub-menus, asset menus, ...): those calls are recorded by name and otherwise ignored."""

    operator_context = "INVOKE_REGION_WIN"

    def __getattr__(self, name):
        if name.startswith("_"):
            raise AttributeError(name)

        def ignored(*args, **kwargs):
            return None

        return ignored

    def _child(self, *_args, **_kwargs):
        return MenuLayout(self.calls)

    def operator(self, idname: str, **kwargs):
        """The add-on's buttons are checked (a registered operator, real properties); Blender's own
        (C operators have no Python class to check against) are recorded as they are."""
        if idname.startswith("hybrid_skin."):
            return super().operator(idname, **kwargs)
        self.calls.append(Call("operator", (idname,), kwargs))
        return SimpleNamespace()

    row = column = box = split = column_flow = grid_flow = _child


def registered_operators(addon) -> dict[str, type]:
    """``bl_idname`` → class of every operator the add-on registers."""
    return {idname: getattr(bpy.types, operator_class_name(idname)) for idname in operator_idnames(addon)}


def menu_context(mode: str, obj, space=None):
    """What a header menu's draw reads, over Blender's real context."""
    action = obj.animation_data.action if obj is not None and obj.animation_data else None
    values = {"mode": mode, "active_object": obj, "object": obj, "edit_object": None, "active_action": action}
    if space is not None:
        values["space_data"] = space

    class Context:
        def __getattr__(self, name):
            return values[name] if name in values else getattr(bpy.context, name)

    return Context()


def walk(header: str, context) -> dict[str, list[str]]:
    """Operator → the menu paths (``"Object ▸ Hybrid Skin"``) that offer it, from the header menu down."""
    found: dict[str, list[str]] = {}
    failed_ours = []
    queue, seen = [(header, "")], set()
    while queue:
        name, path = queue.pop(0)
        if name in seen:
            continue
        seen.add(name)
        menu = getattr(bpy.types, name)
        layout = MenuLayout()
        for draw in menu._dyn_ui_initialize():
            try:
                draw(Drawn(menu, layout), context)
            except Exception as err:  # Blender's own menus may want more context than a stand-in has
                if draw.__module__.startswith(("bl_ext.", "hybrid_skin")):
                    failed_ours.append((name, err))
        for call in layout.calls:
            if call.kind == "menu":
                sub = call.args[0]
                label = call.kwargs.get("text") or getattr(bpy.types, sub).bl_label
                queue.append((sub, f"{path} ▸ {label}".lstrip(" ▸")))
            elif call.kind == "operator":
                found.setdefault(call.args[0], []).append(path)
    assert not failed_ours, failed_ours
    return found


@pytest.fixture
def rig():
    """A tube on two bones with an action (what every menu entry can act on)."""
    return rig_with_action("Tube")


def test_every_operator_is_in_a_menu_that_f3_searches(addon, rig):
    arm, obj = rig
    action_editor = SimpleNamespace(ui_mode="ACTION", mode="ACTION", show_markers=True,
                                    action=arm.animation_data.action)  # fmt: skip
    found: dict[str, list[str]] = {}
    for header, context in (
        ("VIEW3D_MT_editor_menus", menu_context("OBJECT", obj)),
        ("VIEW3D_MT_editor_menus", menu_context("POSE", arm)),
        ("DOPESHEET_MT_editor_menus", menu_context("OBJECT", arm, action_editor)),
    ):
        for idname, paths in walk(header, context).items():
            found.setdefault(idname, []).extend(paths)
    operators = registered_operators(addon)
    missing = sorted(set(operators) - set(found))
    assert not missing, f"in no menu F3 searches: {missing}"
    for idname in operators:  # everything is under Object ▸ Hybrid Skin, where the sidebar's tools are
        assert "Object ▸ Hybrid Skin" in found[idname], (idname, found[idname])
    assert "Object ▸ Animation" in found["hybrid_skin.bake_animation_texture"]  # beside Bake Action...
    assert "Pose ▸ Hybrid Skin" in found["hybrid_skin.bake_animation_texture"]
    assert "Action" in found["hybrid_skin.bake_animation_texture"] + found["hybrid_skin.crowd_preview"]
    # Control: Blender's own Bake Action is found where Blender puts it (the walk reads Blender's menus).
    assert "Object ▸ Animation" in found["nla.bake"]


def test_every_label_makes_sense_in_a_search_list(addon):
    """F3 lists an entry by its label alone (with its menu path): each says what it acts on."""
    subjects = ("Hybrid Skin", "Animation Texture", "Rigid Parts")
    for idname, cls in registered_operators(addon).items():
        assert any(s in cls.bl_label for s in subjects), (idname, cls.bl_label)
        assert cls.__doc__ and len(cls.__doc__.split()) >= 6, idname  # the tooltip says what it does


def refusal(operator, **kwargs) -> str:
    """The sentence Blender shows for a greyed button (the poll message, as the call reports it)."""
    assert not operator.poll(), "the poll let it through"
    with pytest.raises(RuntimeError) as refused:
        operator(**kwargs)
    text = str(refused.value)
    assert ".poll() " in text and "failed, context is incorrect" not in text, text
    return text.split(".poll() ", 1)[1]


def activate(obj) -> None:
    bpy.context.view_layer.objects.active = obj


def test_every_greyed_button_says_why(addon, rig):
    arm, obj = rig
    ops = bpy.ops.hybrid_skin
    empty = bpy.data.objects.new("Empty", None)
    bpy.context.scene.collection.objects.link(empty)
    said: dict[str, list[str]] = {}

    def check(name: str, sentence: str, **kwargs) -> None:
        assert refusal(getattr(ops, name), **kwargs) == sentence, name
        said.setdefault(name, []).append(sentence)

    activate(None)
    check("remove_all", "No object of this file uses Hybrid Skin")
    check("remove", "Select a mesh that uses Hybrid Skin")
    check("rebind", "Select a mesh that uses Hybrid Skin")
    check("bake_deformation", "Select the skinned mesh to bake")
    check("clear_bake", "Select a mesh with a Hybrid Skin bake (shape keys or a point cache)")
    check("analyze", "Select a mesh that uses Hybrid Skin to measure its joints")
    check("render_comparison", "Select a mesh deformed by an Armature modifier to compare its skinning")
    check("crowd_preview", "Select the armature or mesh whose last animation texture bake to show")
    activate(empty)
    check("bake_animation_texture", "Select an armature, or a mesh an Armature modifier deforms, to bake")
    check("skin_rigid_parts", "Select an armature, or a mesh it deforms, whose rigid parts to skin")

    activate(obj)
    bpy.ops.object.mode_set(mode="EDIT")
    try:
        check("add", "Switch to Object Mode to add Hybrid Skin")
        check("remove_all", "Switch to Object Mode to remove Hybrid Skin from the file")
        check("bake_deformation", "Switch to Object Mode to bake")
        check("bake_animation_texture", "Switch to Object Mode or Pose Mode to bake")
        check("skin_rigid_parts", "Switch to Object Mode to skin rigid parts")
    finally:
        bpy.ops.object.mode_set(mode="OBJECT")
    assert ops.add() == {"FINISHED"}
    bpy.ops.object.mode_set(mode="EDIT")
    try:
        check("analyze", "Switch to Object Mode to analyze the deformation")
    finally:
        bpy.ops.object.mode_set(mode="OBJECT")
    # Every operator with a poll that can refuse was made to refuse, and said why.
    with_poll = {
        idname.split(".")[1] for idname, cls in registered_operators(addon).items() if hasattr(cls, "poll")
    }
    assert len(with_poll) == 11 and with_poll == said.keys(), with_poll ^ said.keys()


def test_every_property_has_a_description(addon):
    """Blender shows a property's description as its tooltip; one without leaves the user guessing. Over
    every operator and property group the add-on registers (panels and menus have Blender's own RNA)."""
    missing, checked = set(), 0
    for feature, names in addon.FEATURES:
        for name in names:
            module = importlib.import_module(f"{addon.__name__}.{feature}.{name}")
            for cls in getattr(module, "classes", ()):
                if issubclass(cls, bpy.types.Operator):
                    module_name, _, op = cls.bl_idname.partition(".")
                    rna = getattr(getattr(bpy.ops, module_name), op).get_rna_type()
                elif issubclass(cls, bpy.types.PropertyGroup):
                    rna = cls.bl_rna
                else:
                    continue
                for prop in rna.properties:
                    if prop.identifier == "rna_type":
                        continue
                    checked += 1
                    if not prop.description.strip():
                        missing.add(f"{cls.__name__}.{prop.identifier}")
    assert checked > 40  # the walk sees the properties (else an empty loop would pass)
    assert not missing, sorted(missing)
