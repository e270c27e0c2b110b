"""Every operator speaks in one sentence and leaves nothing half-done (issue 12: messages, wrong results
11 and 13, and the one error funnel).

The texture bake refuses before it writes (8 UV maps, a linked mesh, ``//`` in an unsaved file), warns
about an action that keys none of the rig's bones; Render Comparison refuses paths it cannot write; any
exception inside any operator becomes a report through :class:`hybrid_skin.operator_base.GuardedOperator`.
"""

from __future__ import annotations

import importlib
import os

import bpy
import pytest

from tests.robustness.bake_scene import refused, rig, same_as, snapshot, unsaved_file


def texture_bake(**kwargs):
    return bpy.ops.hybrid_skin.bake_animation_texture(**{"kind": "VERTEX", "precision": "PNG16", **kwargs})


def test_texture_bake_refused_for_8_uv_maps_leaves_nothing_behind(addon, tmp_path):
    """Wrong result 13: the refusal came after the PNG, the JSON and the texel attribute were written."""
    arm, obj = rig()
    for i in range(8):
        obj.data.uv_layers.new(name=f"UV{i}")
    before = snapshot([tmp_path])
    refused(texture_bake, "already has 8 UV maps", directory=str(tmp_path))
    same_as(before, [tmp_path], "after a refused texture bake")
    assert not os.listdir(tmp_path) and "hs_texel_index" not in obj.data.attributes


def test_texture_bake_with_8_uv_maps_and_no_mesh_data_is_allowed(addon, tmp_path):
    arm, obj = rig()
    for i in range(8):
        obj.data.uv_layers.new(name=f"UV{i}")
    assert texture_bake(directory=str(tmp_path), write_mesh_data=False) == {"FINISHED"}
    assert sorted(p.suffix for p in tmp_path.iterdir()) == [".json", ".png"]


def test_texture_bake_of_a_linked_mesh_is_refused(addon, tmp_path):
    """Wrong result 11: attributes written on linked data vanish on save, yet the bake said it worked."""
    arm, obj = rig(add=False)
    bpy.ops.wm.save_as_mainfile(filepath=str(tmp_path / "library.blend"))
    bpy.ops.wm.read_homefile(use_empty=True)
    with bpy.data.libraries.load(str(tmp_path / "library.blend"), link=True) as (src, dst):
        dst.objects = ["Rig", "Cylinder"]
    for o in dst.objects:
        bpy.context.scene.collection.objects.link(o)
    bpy.context.view_layer.objects.active = bpy.data.objects["Rig"]
    out = tmp_path / "out"
    out.mkdir()
    before = snapshot([out])
    refused(texture_bake, "linked mesh data", directory=str(out))
    same_as(before, [out], "after a refused texture bake")


def test_texture_bake_to_the_default_folder_of_an_unsaved_file_is_refused(addon, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    unsaved_file()
    arm, obj = rig()
    before = snapshot([tmp_path])
    refused(texture_bake, "save the file first or give an absolute path", directory="//")
    same_as(before, [tmp_path], "after a refused texture bake")


def test_an_action_that_keys_none_of_the_bones_warns(addon, tmp_path, capfd):
    """A static texture with no word: the active action animates something else (here the object)."""
    arm, obj = rig()
    action = bpy.data.actions.new("Elsewhere")
    arm.animation_data.action = action
    arm.location = (0, 0, 0)
    arm.keyframe_insert("location", frame=1)
    arm.location = (0, 0, 0)
    arm.keyframe_insert("location", frame=4)
    capfd.readouterr()
    assert texture_bake(directory=str(tmp_path)) == {"FINISHED"}
    out = capfd.readouterr().out
    assert "Action 'Elsewhere' keys none of the bones of 'Rig'" in out, out


def test_texture_bake_with_a_missing_factor_group_is_a_sentence(addon, tmp_path):
    arm, obj = rig()
    obj.hybrid_skin.factor_mode = "VERTEX_GROUP"
    before = snapshot([tmp_path])
    refused(texture_bake, "no factor vertex group is set", directory=str(tmp_path))
    same_as(before, [tmp_path], "after a refused texture bake")


@pytest.mark.parametrize(
    ("path", "message"),
    [
        ("/proc/version/cmp.png", "Cannot write"),
        ("//cmp.png", "save the file first or give an absolute path"),
        ("{tmp}", "Cannot write"),  # a folder, not a file
        ("{tmp}/cmp.jpg", "is not a .png path"),
    ],
)
def test_render_comparison_refuses_paths_it_cannot_write(addon, tmp_path, monkeypatch, path, message):
    monkeypatch.chdir(tmp_path)
    unsaved_file()
    arm, obj = rig()
    (tmp_path / "cmp.png").mkdir() if path == "{tmp}" else None
    before = snapshot([tmp_path])
    refused(bpy.ops.hybrid_skin.render_comparison, message,
            filepath=path.format(tmp=tmp_path / "cmp.png" if path == "{tmp}" else tmp_path))
    same_as(before, [tmp_path], "after a refused comparison")


def test_render_comparison_save_failure_is_a_sentence(addon, tmp_path, monkeypatch):
    """The folder is writable but saving fails (image.save() raises RuntimeError)."""
    comparison = importlib.import_module(addon.__name__ + ".analyze.comparison")

    def fails(pixels, path):
        raise RuntimeError("Error: Could not write image")

    monkeypatch.setattr(comparison, "_save_png", fails)
    arm, obj = rig()
    refused(bpy.ops.hybrid_skin.render_comparison, "Cannot write", filepath=str(tmp_path / "cmp.png"))
    assert not list(tmp_path.iterdir())


def test_every_operator_goes_through_the_error_funnel(addon):
    base = importlib.import_module(addon.__name__ + ".operator_base")
    operators = [
        cls for cls in bpy.types.Operator.__subclasses__()
        if getattr(cls, "bl_idname", "").startswith("hybrid_skin.")
    ]
    assert len(operators) >= 9
    for cls in operators:
        assert issubclass(cls, base.GuardedOperator), cls.__name__
        for name in ("execute", "invoke", "modal"):
            method = cls.__dict__.get(name)
            assert method is None or method._hybrid_skin_guarded, f"{cls.__name__}.{name}"


@pytest.mark.parametrize("operator", ["add", "rebind", "analyze"])
def test_a_bug_inside_an_operator_is_one_sentence_and_nothing_changes(addon, monkeypatch, operator):
    """Any exception, not only the add-on's own errors, becomes a report; Add takes back what it did."""
    bind = importlib.import_module(addon.__name__ + ".rig.bind")
    arm, obj = rig(add=operator != "add")

    def broken(*args, **kwargs):
        raise KeyError("simulated bug")

    monkeypatch.setattr(bind, "rebind" if operator != "analyze" else "cached_bind", broken)
    before = snapshot()
    label = getattr(bpy.types, f"HYBRID_SKIN_OT_{operator}").bl_label  # "Rebind Hybrid Skin", ...
    refused(getattr(bpy.ops.hybrid_skin, operator), f"{label} failed (KeyError: 'simulated bug')")
    same_as(before, what=f"after a failed {operator}")
    assert obj.hybrid_skin.enabled == (operator != "add")


def test_add_fails_after_enabling_and_is_taken_back(addon, monkeypatch):
    """The failure comes after the display was applied: the funnel's rollback restores it."""
    bind = importlib.import_module(addon.__name__ + ".rig.bind")
    real = bind.rebind

    class Partial:  # a bind whose report line breaks, after Add switched the display on
        def __init__(self, bound):
            self.vertex_count = bound.vertex_count

    monkeypatch.setattr(bind, "rebind", lambda obj, depsgraph: Partial(real(obj, depsgraph)))
    arm, obj = rig(add=False)
    before = snapshot()
    refused(bpy.ops.hybrid_skin.add, "Add Hybrid Skin failed (AttributeError:")
    monkeypatch.undo()
    same_as(before, what="after a failed Add")
    assert not obj.hybrid_skin.enabled and not obj.hybrid_skin.saved_state
