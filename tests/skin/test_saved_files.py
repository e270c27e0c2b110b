"""Files saved by earlier versions of the add-on keep working: settings, display and bakes.

``data/saved_before_rename.blend`` was saved by the add-on at commit 300681a, when the Display value
"Evaluated" was stored as the identifier "CPU" (``data/make_saved_file.py`` shows how). Blender stores
enum properties by number, and every item keeps its number, so the file loads with "EVALUATED".

``data/saved_with_auto_0_1.blend`` was saved by the add-on at commit 29abbf6, before Auto had profiles
(``data/make_saved_auto_file.py``): its objects in Auto store no profile, and read "JOINT", the Auto they
were saved with; an object that takes Auto now gets today's, "ROUND".
"""

from __future__ import annotations

import importlib
import shutil
from pathlib import Path

import bpy
import numpy as np
import pytest

from tests.support.scenes import bbox_diagonal, evaluated_positions, native_positions

SAVED = Path(__file__).resolve().parent / "data" / "saved_before_rename.blend"


@pytest.fixture
def saved(tmp_path):
    """The old file, opened from a copy (the repository's file is never written)."""
    path = tmp_path / SAVED.name
    shutil.copyfile(SAVED, path)
    bpy.ops.wm.open_mainfile(filepath=str(path))
    return bpy.data.objects["Evaluated"], bpy.data.objects["Baked"]


def test_settings_of_an_old_file_load_with_the_new_identifiers(addon, saved):
    evaluated, baked = saved
    settings = evaluated.hybrid_skin
    assert settings.enabled and settings.display == "EVALUATED"
    assert settings.factor_mode == "VERTEX_GROUP" and settings.factor_vertex_group == "Twisty"
    assert settings.deform_factor == pytest.approx(0.7)
    # "Baked" kept the Display default of its day (GPU), which a file does not store: it opens with
    # today's default, Evaluated (issue 26: the display that every consumer sees).
    assert baked.hybrid_skin.enabled and baked.hybrid_skin.display == "EVALUATED"
    assert baked.hybrid_skin.factor_mode == "AUTO" and baked.hybrid_skin.bake_state


def test_an_old_evaluated_display_is_re_armed_and_shows_the_hybrid(addon, saved):
    evaluated, _baked = saved
    assert evaluated.modifiers.get("HybridSkin DQS") is not None  # re-applied by the load handler
    scene = bpy.context.scene
    for frame in (1, 2, 3):
        scene.frame_set(frame)
        ours = addon.api.deformed_positions(evaluated)
        shown = evaluated_positions(evaluated)
        np.testing.assert_allclose(shown, ours, atol=1e-5 * bbox_diagonal(ours))
    lbs = addon.api.deformed_positions(evaluated, 0.0)
    assert np.abs(lbs - ours).max() > 1e-3  # the factor group really mixes in DQS at the bent frame


def test_an_old_bake_plays_clears_and_removes_cleanly(addon, saved):
    evaluated, baked = saved
    scene = bpy.context.scene
    keys = [kb.name for kb in baked.data.shape_keys.key_blocks]
    assert keys == ["Basis", "HS Bake 0001", "HS Bake 0002", "HS Bake 0003"]
    for frame in (1, 2, 3):
        scene.frame_set(frame)
        ours = addon.api.deformed_positions(baked)  # the Auto factor, from the add-on's own skinning
        np.testing.assert_allclose(evaluated_positions(baked), ours, atol=1e-5 * bbox_diagonal(ours))

    bpy.context.view_layer.objects.active = baked
    assert bpy.ops.hybrid_skin.clear_bake() == {"FINISHED"}
    assert baked.data.shape_keys is None and not baked.hybrid_skin.bake_state
    armature = baked.modifiers["Armature"]
    assert armature.show_render and armature.show_viewport  # the (Evaluated) display is set up again
    assert baked.modifiers.get("HybridSkin DQS") is not None
    bpy.context.view_layer.objects.active = evaluated
    assert bpy.ops.hybrid_skin.remove() == {"FINISHED"}
    assert evaluated.modifiers.get("HybridSkin DQS") is None
    assert evaluated.vertex_groups.get("HybridSkin Factor") is None
    assert [m.name for m in evaluated.modifiers] == ["Armature"] and evaluated.modifiers[0].show_viewport


# -- files saved with the Auto of version 0.1 keep it ----------------------------------------------------

SAVED_AUTO = Path(__file__).resolve().parent / "data" / "saved_with_auto_0_1.blend"


@pytest.fixture
def saved_auto(tmp_path):
    """``data/saved_with_auto_0_1.blend`` (saved by the add-on before Auto had profiles, see
    ``data/make_saved_auto_file.py``), opened from a copy."""
    path = tmp_path / SAVED_AUTO.name
    shutil.copyfile(SAVED_AUTO, path)
    bpy.ops.wm.open_mainfile(filepath=str(path))
    return path


def _posed(addon, obj):
    bind = importlib.import_module(addon.__name__ + ".rig.bind")
    dg = bpy.context.evaluated_depsgraph_get()
    return bind.cached_bind(obj, dg).posed(dg)


def test_objects_saved_in_auto_keep_the_auto_they_were_saved_with(addon, saved_auto):
    objects = bpy.data.objects
    for name in ("AutoEvaluated", "AutoGPU"):
        settings = objects[name].hybrid_skin
        assert settings.factor_mode == "AUTO" and settings.auto_profile == "JOINT", name
    assert objects["Global"].hybrid_skin.auto_profile == "ROUND"  # never in Auto: the default
    scene = bpy.context.scene
    for frame in (2, 3):
        scene.frame_set(frame)
        for name in ("AutoEvaluated", "AutoGPU"):
            obj = objects[name]
            posed = _posed(addon, obj)
            joint, new = posed.auto_factors("JOINT"), posed.auto_factors("ROUND")
            np.testing.assert_array_equal(posed.auto_factors(), joint)
            ours = addon.api.deformed_positions(obj)
            assert np.abs(ours - addon.api.deformed_positions(obj, new)).max() > 1e-3 * bbox_diagonal(ours)
        # The GPU display's object: its factors are Blender's own mix's (the Armature modifier alone below).
        gpu_object = objects["AutoGPU"]
        ours = addon.api.deformed_positions(gpu_object)
        joint = _posed(addon, gpu_object).auto_factors("JOINT")
        reference = native_positions(gpu_object, np.round(joint, 6))
        np.testing.assert_allclose(ours, reference, atol=1e-5 * bbox_diagonal(ours))
        # The Evaluated display re-armed on load shows the same Auto (its group holds 1/1024 steps).
        shown = evaluated_positions(objects["AutoEvaluated"])
        ours = addon.api.deformed_positions(objects["AutoEvaluated"])
        np.testing.assert_allclose(shown, ours, atol=1e-3 * bbox_diagonal(ours))


def test_saving_again_keeps_old_auto_and_records_a_new_choice(addon, saved_auto, tmp_path):
    objects = bpy.data.objects
    objects["Global"].hybrid_skin.factor_mode = "AUTO"  # chosen now: today's Auto
    assert objects["Global"].hybrid_skin.auto_profile == "ROUND"
    again = tmp_path / "saved_again.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(again))
    bpy.ops.wm.open_mainfile(filepath=str(again))
    objects = bpy.data.objects
    assert objects["AutoEvaluated"].hybrid_skin.auto_profile == "JOINT"
    assert objects["AutoGPU"].hybrid_skin.auto_profile == "JOINT"
    assert objects["Global"].hybrid_skin.auto_profile == "ROUND"
    objects["AutoGPU"].hybrid_skin.auto_profile = "ROUND"  # an old object can take today's Auto too
    assert objects["AutoGPU"].hybrid_skin.auto_profile == "ROUND"
