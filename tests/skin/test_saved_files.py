"""Files saved by earlier versions of the add-on keep working: settings, display and bakes.

``data/saved_before_rename.blend`` was saved by the add-on at commit 300681a, when the Display value
"Evaluated" was stored as the identifier "CPU" (``data/make_saved_file.py`` shows how). Blender stores
enum properties by number, and every item keeps its number, so the file loads with "EVALUATED".
"""

from __future__ import annotations

import shutil
from pathlib import Path

import bpy
import numpy as np
import pytest

from tests.support.scenes import bbox_diagonal, evaluated_positions

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
