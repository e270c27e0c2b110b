"""The Evaluated display (Blender's own stack, the render path) mixes by the factor Blender evaluates in the
Mix modifier: it follows whatever changes without a property update — a keyframed or driven Deform
Factor during playback and renders, a factor group painted in Weight Paint or set by a script, an undo
step — in the same evaluation that shows it, with nothing written by the add-on. Truth: Blender's own LBS
+ Preserve Volume mix at the factor the settings give, on a plain copy of the object
(``native_positions``).
"""

from __future__ import annotations

import bpy
import numpy as np
import pytest

from tests.robustness.helpers import activate, assert_close, modules, three_bone_cylinder
from tests.support.scenes import evaluated_positions, group_weights, native_positions, pose_bone


def _bent(display_factor_mode: str = "GLOBAL"):
    arm, cyl = three_bone_cylinder()
    pose_bone(arm, "Bone1", (70, 0, 30))
    cyl.hybrid_skin.display = "EVALUATED"
    cyl.hybrid_skin.factor_mode = display_factor_mode
    activate(cyl)
    return arm, cyl


def _twist_group(addon):
    """The bent cylinder in Vertex Group factor mode (group 'Twist' at 0.2, slider 1) with Hybrid Skin on;
    ``ring``: the vertices around the first joint, which the tests paint."""
    arm, cyl = _bent("VERTEX_GROUP")
    twist = cyl.vertex_groups.new(name="Twist")
    twist.add(list(range(len(cyl.data.vertices))), 0.2, "REPLACE")
    cyl.hybrid_skin.factor_vertex_group = "Twist"
    cyl.hybrid_skin.deform_factor = 1.0
    assert bpy.ops.hybrid_skin.add() == {"FINISHED"}
    ring = [v.index for v in cyl.data.vertices if abs(v.co.z - 1.0) < 0.35]
    return cyl, twist, ring, modules(addon)


def _shown_equals_blender(hs, cyl: bpy.types.Object, factor, what: str) -> np.ndarray:
    """What the Evaluated display shows equals Blender's own mix at ``factor``."""
    shown = evaluated_positions(cyl)
    assert_close(shown, native_positions(cyl, factor), what)
    return shown


def test_a_keyframed_deform_factor_drives_the_evaluated_display(addon):
    arm, cyl = _bent()
    assert bpy.ops.hybrid_skin.add() == {"FINISHED"}
    hs = modules(addon)
    settings = cyl.hybrid_skin
    for frame, value in ((1, 0.1), (11, 0.9)):
        settings.deform_factor = value
        cyl.keyframe_insert("hybrid_skin.deform_factor", frame=frame)
    shown = []
    for frame, value in ((1, 0.1), (6, 0.5), (11, 0.9), (6, 0.5)):
        bpy.context.scene.frame_set(frame)
        assert abs(settings.deform_factor - value) < 1e-6
        shown.append(_shown_equals_blender(hs, cyl, value, f"frame {frame}"))
    assert np.abs(shown[0] - shown[2]).max() > 1e-2, "the factor must matter (or this test is void)"


def test_a_painted_factor_group_reaches_the_evaluated_display(addon):
    cyl, twist, ring, hs = _twist_group(addon)
    before = _shown_equals_blender(hs, cyl, group_weights(cyl, "Twist"), "before painting")

    assert bpy.ops.object.mode_set(mode="WEIGHT_PAINT") == {"FINISHED"}
    twist.add(ring, 1.0, "REPLACE")  # as a stroke writes the group
    assert bpy.ops.object.mode_set(mode="OBJECT") == {"FINISHED"}
    painted = _shown_equals_blender(hs, cyl, group_weights(cyl, "Twist"), "after Weight Paint")
    assert np.abs(painted - before).max() > 1e-3, "the paint must change the mix (or this test is void)"

    twist.add(ring, 0.6, "REPLACE")  # a script, in Object Mode: shown at the next frame change
    bpy.context.scene.frame_set(bpy.context.scene.frame_current)
    _shown_equals_blender(hs, cyl, group_weights(cyl, "Twist"), "after a script's edit and a frame change")


def test_a_factor_group_set_by_a_script_is_shown_by_the_next_evaluation_with_no_handler(addon):
    """Blender reads the group itself: the evaluation that follows the edit shows it, even with the
    add-on's handlers away (as on a machine without the add-on)."""
    cyl, twist, ring, hs = _twist_group(addon)
    before = _shown_equals_blender(hs, cyl, group_weights(cyl, "Twist"), "before the edit")
    handlers = bpy.app.handlers.depsgraph_update_post
    ours = [h for h in handlers if h.__module__.endswith("rig.handlers")]
    for handler in ours:
        handlers.remove(handler)
    try:
        twist.add(ring, 1.0, "REPLACE")
        edited = _shown_equals_blender(hs, cyl, group_weights(cyl, "Twist"), "after the script's edit")
    finally:
        handlers.extend(ours)
    assert np.abs(edited - before).max() > 1e-3, "the edit must change the mix (or this test is void)"


def test_painting_the_factor_group_shows_lbs_where_the_brush_paints_then_the_hybrid(addon):
    """In Weight Paint the user's Armature modifier alone is shown (brushes land on what the deform-only
    top of the stack shows: see test_modes); back in Object Mode the painted factors are in the mix."""
    cyl, twist, ring, hs = _twist_group(addon)
    before = _shown_equals_blender(hs, cyl, group_weights(cyl, "Twist"), "before painting")
    assert bpy.ops.object.mode_set(mode="WEIGHT_PAINT") == {"FINISHED"}
    twist.add(ring, 1.0, "REPLACE")  # as a stroke writes the group
    assert cyl.vertex_groups.active.name == "Twist", "the user's group stays the one painted"
    assert_close(evaluated_positions(cyl), native_positions(cyl, 0.0), "shown while painting: LBS")
    assert bpy.ops.object.mode_set(mode="OBJECT") == {"FINISHED"}
    painted = _shown_equals_blender(hs, cyl, group_weights(cyl, "Twist"), "after Weight Paint")
    assert np.abs(painted - before).max() > 1e-3, "the paint must change the mix (or this test is void)"


def test_undo_of_a_paint_shows_the_factor_group_it_brings_back(addon):
    cyl, twist, ring, hs = _twist_group(addon)
    bpy.ops.ed.undo_push(message="before")
    for weight in (1.0, 0.6):  # two strokes
        twist.add(ring, weight, "REPLACE")
        bpy.ops.ed.undo_push(message=f"paint {weight}")
        evaluated_positions(cyl)
    name = cyl.name
    assert bpy.ops.ed.undo() == {"FINISHED"}
    cyl = bpy.data.objects[name]
    assert abs(group_weights(cyl, "Twist")[ring[0]] - 1.0) < 1e-6
    _shown_equals_blender(hs, cyl, group_weights(cyl, "Twist"), "after undo")


PARTS = ["HybridSkin Rest", "HybridSkin Keep LBS", "HybridSkin DQS", "HybridSkin Mix"]


@pytest.mark.parametrize("part", PARTS)
def test_a_removed_display_modifier_is_set_up_again(addon, part, capfd):
    """The user deletes one of Hybrid Skin's modifiers: the mesh showed something else while the panel
    said Evaluated, with no word. It is set up again at the next evaluation, said once, and shows
    Blender's mix again."""
    arm, cyl = _bent()
    cyl.hybrid_skin.deform_factor = 0.7
    assert bpy.ops.hybrid_skin.add() == {"FINISHED"}
    hs = modules(addon)
    _shown_equals_blender(hs, cyl, 0.7, "before")
    cyl.modifiers.remove(cyl.modifiers[part])
    bpy.context.view_layer.update()  # the update that reports the removal sets the part up again
    assert cyl.modifiers.get(part) is not None
    assert capfd.readouterr().out.count("was removed or moved, so it is set up again") == 1
    _shown_equals_blender(hs, cyl, 0.7, f"after the {part} was removed")
