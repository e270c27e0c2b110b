"""Issue 34 §5: the file's life cycle. Setups of earlier builds are taken off exactly and set up as today's;
a record or tree of a newer build, or a damaged record, is one sentence and left as it is while every other
object loads, draws and saves; Remove Hybrid Skin from All Objects hands a file on without the add-on; a
masked Armature modifier is Blender's own masked mix; the GPU Preview steps aside for a viewport render.
"""

from __future__ import annotations

import importlib
import json

import bpy
import numpy as np
import pytest

from tests.robustness.bake_scene import activate, rig, same_as, snapshot
from tests.robustness.helpers import assert_close, modules
from tests.support.scenes import evaluated_positions, native_positions

PARTS = ["HybridSkin Rest", "Armature", "HybridSkin Keep LBS", "HybridSkin DQS", "HybridSkin Mix"]


def _version_1_setup(obj: bpy.types.Object) -> None:
    """What a build of version 1 left on the object (an autosave, an undo step): a Multi Modifier DQS
    mixing by a locked factor group, and its record."""
    mod = obj.modifiers["Armature"]
    group = obj.vertex_groups.new(name="HybridSkin Factor")
    group.lock_weight = True
    group.add(range(len(obj.data.vertices)), 0.6, "REPLACE")
    extra = obj.modifiers.new("HybridSkin DQS", "ARMATURE")
    extra.object, extra.use_deform_preserve_volume, extra.use_multi_modifier = mod.object, True, True
    extra.vertex_group = group.name
    obj.hybrid_skin.saved_state = json.dumps(
        {
            "version": 1,
            "object_name": obj.name,
            "armature": [0, "Armature"],
            "display_type": obj.display_type,
            "active_group": 0,
            "preserve_volume": False,
            "mix": [0, "HybridSkin DQS"],
            "factor_group": "HybridSkin Factor",
            "owns_group": True,
            "hidden": [],
            "aside": "",
            "factors_due": "",
        }
    )


def test_a_setup_of_version_1_is_replaced_by_todays_on_load(addon, tmp_path):
    arm, obj = rig(add=False)
    obj.hybrid_skin.modifier_name = "Armature"
    obj.hybrid_skin.deform_factor = 0.6
    handlers = importlib.import_module(addon.__name__ + ".rig.handlers")
    bpy.app.handlers.depsgraph_update_post.remove(handlers.on_depsgraph_update)  # as a file would hold it
    try:
        obj.hybrid_skin.enabled = True
        hs = modules(addon)
        hs.setup.restore(obj)
        _version_1_setup(obj)
        path = tmp_path / "version1.blend"
        bpy.ops.wm.save_as_mainfile(filepath=str(path), copy=True)
    finally:
        bpy.app.handlers.depsgraph_update_post.append(handlers.on_depsgraph_update)
    bpy.ops.wm.open_mainfile(filepath=str(path))
    obj = bpy.data.objects["Cylinder"]
    assert [m.name for m in obj.modifiers] == PARTS
    assert obj.vertex_groups.get("HybridSkin Factor") is None, "version 1's group is taken off"
    bpy.context.scene.frame_set(6)
    assert_close(evaluated_positions(obj), native_positions(obj, 0.6), "today's setup after the load")


@pytest.mark.parametrize("damage", ["newer", "broken"])
def test_an_unreadable_record_is_one_sentence_and_the_others_load_draw_and_save(
    addon, tmp_path, capfd, damage
):
    arm, good = rig(name="Good")
    other = bpy.data.objects.new("Odd", good.data.copy())
    bpy.context.scene.collection.objects.link(other)
    other.modifiers.new("Armature", "ARMATURE").object = arm
    other.hybrid_skin.modifier_name = "Armature"
    handlers = importlib.import_module(addon.__name__ + ".rig.handlers")
    bpy.app.handlers.depsgraph_update_post.remove(handlers.on_depsgraph_update)
    try:
        text = '{"version": 99, "object_name": "Odd"}' if damage == "newer" else '{"version": 2, "armat'
        other.hybrid_skin.saved_state = text
        other.hybrid_skin.enabled = True
        path = tmp_path / "odd.blend"
        bpy.ops.wm.save_as_mainfile(filepath=str(path), copy=True)
    finally:
        bpy.app.handlers.depsgraph_update_post.append(handlers.on_depsgraph_update)
    capfd.readouterr()
    bpy.ops.wm.open_mainfile(filepath=str(path))
    bpy.context.scene.frame_set(6)
    good, other = bpy.data.objects["Good"], bpy.data.objects["Odd"]
    out = capfd.readouterr()
    assert "Traceback" not in out.err + out.out
    expected = "saved by a newer Hybrid Skin" if damage == "newer" else "has a damaged Hybrid Skin record"
    assert out.out.count(expected) == 1, out.out
    assert other.hybrid_skin.saved_state == text, "the record is left as it was, for a build that reads it"
    assert [m.name for m in other.modifiers] == ["Armature"]
    assert [m.name for m in good.modifiers] == [p if p != "Armature" else "Armature" for p in PARTS]
    assert_close(evaluated_positions(good), native_positions(good, 0.6), "the readable object")
    bpy.ops.wm.save_as_mainfile(filepath=str(tmp_path / "again.blend"))
    out = capfd.readouterr()
    assert "Traceback" not in out.err + out.out


def test_a_tree_of_a_newer_build_is_left_alone_and_an_older_one_is_built_again(addon, capfd, tmp_path):
    arm, obj = rig()
    obj.modifiers["HybridSkin Mix"].node_group["hybrid_skin_tree_version"] = 999
    path = tmp_path / "newer.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(path))
    capfd.readouterr()
    bpy.ops.wm.open_mainfile(filepath=str(path))
    obj = bpy.data.objects["Cylinder"]
    assert capfd.readouterr().out.count("was set up by a newer Hybrid Skin") == 1
    assert obj.modifiers["HybridSkin Mix"].node_group["hybrid_skin_tree_version"] == 999
    obj.modifiers["HybridSkin Mix"].node_group["hybrid_skin_tree_version"] = 0  # as an earlier build's
    bpy.ops.wm.save_as_mainfile(filepath=str(path))
    bpy.ops.wm.open_mainfile(filepath=str(path))
    obj = bpy.data.objects["Cylinder"]
    version = obj.modifiers["HybridSkin Mix"].node_group["hybrid_skin_tree_version"]
    assert version == modules(addon).setup.stack_trees.TREE_VERSION, "built again on load"
    bpy.context.scene.frame_set(6)
    assert_close(evaluated_positions(obj), native_positions(obj, 0.6), "the rebuilt tree")


def test_remove_from_all_objects_hands_the_file_on_without_hybrid_skin(addon, tmp_path):
    arm, first = rig(add=False)
    before = snapshot()
    second = bpy.data.objects.new("Second", first.data.copy())
    bpy.context.scene.collection.objects.link(second)
    second.modifiers.new("Armature", "ARMATURE").object = arm
    for obj in (first, second):
        activate(obj)
        assert bpy.ops.hybrid_skin.add() == {"FINISHED"}
    second.hybrid_skin.factor_mode = "AUTO"
    assert bpy.ops.hybrid_skin.remove_all() == {"FINISHED"}
    for obj in (first, second):
        assert not obj.hybrid_skin.enabled and [m.name for m in obj.modifiers] == ["Armature"], obj.name
        assert not [a.name for a in obj.data.attributes if a.name.startswith(".hybrid_skin")]
    assert not [t.name for t in bpy.data.node_groups if t.name.startswith("HybridSkin")]
    mesh = second.data
    bpy.data.objects.remove(second)
    bpy.data.meshes.remove(mesh)
    same_as(before, what="after Remove Hybrid Skin from All Objects")
    assert not bpy.ops.hybrid_skin.remove_all.poll(), "nothing left to remove: greyed"


@pytest.mark.parametrize("invert", [False, True])
def test_a_masked_armature_modifier_is_blenders_own_masked_mix(addon, invert):
    """Both Armature parts mask with the user's group: (1 - f) LBS_m + f DQS_m, Blender's masked mix
    (it was 6-24% of the bounding box off when the DQS part ignored the mask)."""
    arm, obj = rig(add=False)
    mask = obj.vertex_groups.new(name="Mask")
    z = np.array([v.co.z for v in obj.data.vertices])
    for value in np.unique(np.round(np.clip(z - 0.5, 0.0, 1.0), 1)):
        mask.add(
            [int(i) for i in np.flatnonzero(np.round(np.clip(z - 0.5, 0.0, 1.0), 1) == value)],
            float(value),
            "REPLACE",
        )
    mod = obj.modifiers["Armature"]
    mod.vertex_group, mod.invert_vertex_group = "Mask", invert
    activate(obj)
    assert bpy.ops.hybrid_skin.add() == {"FINISHED"}
    obj.hybrid_skin.deform_factor = 0.6
    bpy.context.scene.frame_set(6)
    shown = evaluated_positions(obj)
    assert_close(shown, native_positions(obj, 0.6), "masked")
    assert_close(shown, obj and modules(addon).api.deformed_positions(obj), "the API agrees")
    assert np.abs(native_positions(obj, 0.0) - native_positions(obj, 1.0)).max() > 1e-2, "void otherwise"


def test_the_gpu_preview_steps_aside_for_a_viewport_render_animation(addon, monkeypatch):
    """Viewport Render Animation draws no add-on callback: while it runs Blender's stack draws (a render
    still cannot be told apart beforehand: the docs say so)."""
    hs = modules(addon)
    arm, obj = rig(display="GPU")
    bpy.context.scene.frame_set(3)
    assert hs.setup.gpu_draws(obj)
    monkeypatch.setattr(hs.handlers, "_viewport_rendering", lambda: True)
    bpy.context.scene.frame_set(4)
    assert not hs.setup.gpu_draws(obj) and hs.setup.load(obj).aside == hs.setup.RENDER
    assert_close(evaluated_positions(obj), native_positions(obj, 0.6), "what the viewport render draws")
    monkeypatch.setattr(hs.handlers, "_viewport_rendering", lambda: False)
    assert hs.handlers._after_viewport_render() is None  # the timer, as Blender would call it
    assert hs.setup.gpu_draws(obj), "the preview draws again"
