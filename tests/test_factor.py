"""The deform factor's one resolver: every feature reads an object's factor settings the same way.

A factor vertex group that does not exist is the same clear error (naming the object and the group) for
the scripting API, the GPU display, the Evaluated display, the bake and the analysis; none of them falls
back to the global factor on its own.
"""

from __future__ import annotations

import importlib

import bpy
import numpy as np
import pytest

from tests.support.scenes import (
    evaluated_positions,
    make_chain_armature,
    make_cylinder,
    native_positions,
    pose_bone,
    skin_to_chain,
)

MESSAGE = "'Cylinder': factor vertex group 'Missing' does not exist"


@pytest.fixture
def cylinder():
    arm = make_chain_armature("Rig", [1.0, 1.0])
    cyl = make_cylinder("Cylinder")
    skin_to_chain(cyl, arm)
    pose_bone(arm, "Bone1", (90, 0, 40))
    bpy.context.view_layer.objects.active = cyl
    assert bpy.ops.hybrid_skin.add() == {"FINISHED"}
    return cyl


def test_a_missing_factor_group_is_one_error_for_every_feature(addon, cylinder, capsys):
    settings = cylinder.hybrid_skin
    settings.display = "EVALUATED"  # the Evaluated display: Blender's Mix reads the group by its name
    settings.deform_factor = 0.8
    capsys.readouterr()

    settings.factor_vertex_group = "Missing"
    settings.factor_mode = "VERTEX_GROUP"
    settings.deform_factor = 0.3
    # The Evaluated display says so once (a property update cannot report) and falls back to no global
    # factor: Blender reads no weights from a group that is not there, so it shows its own LBS.
    assert capsys.readouterr().out.count(MESSAGE) == 1
    np.testing.assert_allclose(evaluated_positions(cylinder), native_positions(cylinder, 0.0), atol=1e-5)

    with pytest.raises(addon.api.HybridSkinError, match=MESSAGE):
        addon.api.deformed_positions(cylinder)
    lbs, dqs = (addon.api.deformed_positions(cylinder, f) for f in (0.0, 1.0))  # a script's factor needs
    mixed = addon.api.deformed_positions(cylinder, 0.3)  # no group; positions are linear in f
    assert np.abs(lbs - dqs).max() > 0.01
    np.testing.assert_allclose(mixed, 0.7 * lbs + 0.3 * dqs, atol=1e-5)
    with pytest.raises(RuntimeError, match=MESSAGE):
        bpy.ops.hybrid_skin.analyze()


@pytest.mark.gpu
def test_a_missing_factor_group_is_the_same_error_in_the_viewport(addon, gpu_context, cylinder):
    settings = cylinder.hybrid_skin
    settings.factor_vertex_group, settings.factor_mode = "Missing", "VERTEX_GROUP"
    viewport = importlib.import_module(addon.__name__ + ".skin.viewport")
    with pytest.raises(addon.api.HybridSkinError, match=MESSAGE):
        viewport.skin_for(cylinder, bpy.context.evaluated_depsgraph_get())
    viewport.forget(cylinder)


def test_factor_group_weights_scale_the_slider_everywhere(addon, cylinder):
    """With the group present, the API and the Evaluated display agree: f = slider × weight."""
    group = cylinder.vertex_groups.new(name="Twisty")
    z = np.array([v.co.z for v in cylinder.data.vertices])
    weights = np.clip(z / 2.0, 0.0, 1.0)
    for i, w in enumerate(weights):
        group.add([i], float(w), "REPLACE")
    settings = cylinder.hybrid_skin
    settings.factor_vertex_group, settings.factor_mode, settings.deform_factor = "Twisty", "VERTEX_GROUP", 0.6
    settings.display = "EVALUATED"
    expected = addon.api.deformed_positions(cylinder, (0.6 * weights).astype(np.float32))
    np.testing.assert_allclose(addon.api.deformed_positions(cylinder), expected, atol=1e-6)
    np.testing.assert_allclose(evaluated_positions(cylinder), expected, atol=1e-5)
    native = native_positions(cylinder, 0.6 * weights)
    np.testing.assert_allclose(evaluated_positions(cylinder), native, atol=1e-5)
