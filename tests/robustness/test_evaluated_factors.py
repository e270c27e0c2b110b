"""The Evaluated display (Blender's own stack, the render path) mixes by a vertex group the add-on writes.
That group must follow the factor the panel shows whenever it changes without a property update: a
keyframed or driven Deform Factor during playback and renders, and a factor group painted in Weight Paint
or set by a script — in the same evaluation that shows it (Blender's second pass of an update evaluates
what the handlers wrote). Truth: Blender's own LBS + Preserve Volume mix at the factor the settings give,
on a plain copy of the object (``native_positions``).
"""

from __future__ import annotations

import json

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


def test_a_factor_group_painted_in_weight_paint_is_shown_by_the_update_that_reports_it(addon):
    """Not only at the next frame change or back in Object Mode: the update that reports the weight edit
    writes the factors, and Blender's second pass of that update shows them."""
    cyl, twist, ring, hs = _twist_group(addon)
    before = _shown_equals_blender(hs, cyl, group_weights(cyl, "Twist"), "before painting")
    assert bpy.ops.object.mode_set(mode="WEIGHT_PAINT") == {"FINISHED"}
    twist.add(ring, 1.0, "REPLACE")  # as a stroke writes the group
    painted = evaluated_positions(cyl)
    assert np.abs(painted - before).max() > 1e-3, "the paint must change the mix (or this test is void)"
    assert cyl.vertex_groups.active.name == "Twist", "the user's group stays the one painted"
    assert_close(painted, native_positions(cyl, group_weights(cyl, "Twist")), "shown while painting")


def test_a_factor_group_painted_during_a_stroke_is_written_once_the_stroke_is_over(addon, monkeypatch):
    """While a paint stroke runs it may hold the mesh's weight arrays: a timer writes after it."""
    cyl, twist, ring, hs = _twist_group(addon)
    refresh = hs.factor_group.write_queued
    before = _shown_equals_blender(hs, cyl, group_weights(cyl, "Twist"), "before painting")
    assert bpy.ops.object.mode_set(mode="WEIGHT_PAINT") == {"FINISHED"}
    monkeypatch.setattr(hs.factor_group, "_stroke_running", lambda: True)
    twist.add(ring, 1.0, "REPLACE")  # as a stroke writes the group
    stale = evaluated_positions(cyl)  # the update that reports the edit: the write is queued, not done
    assert np.abs(stale - before).max() == 0.0
    try:
        assert bpy.app.timers.is_registered(refresh), "a painted factor group must queue its write"
        # The bpy module runs no timers: called as Blender would call it.
        assert refresh() == hs.factor_group.WRITE_DELAY_S, "it waits for the stroke to end"
        assert np.abs(evaluated_positions(cyl) - before).max() == 0.0
        monkeypatch.setattr(hs.factor_group, "_stroke_running", lambda: False)
        assert refresh() is None, "one write, and its own update queues nothing more"
    finally:
        if bpy.app.timers.is_registered(refresh):
            bpy.app.timers.unregister(refresh)
    painted = evaluated_positions(cyl)
    assert np.abs(painted - before).max() > 1e-3, "the paint must change the mix (or this test is void)"
    assert_close(painted, native_positions(cyl, group_weights(cyl, "Twist")), "shown after the stroke")


def test_undo_of_a_paint_shows_the_factor_group_it_brings_back(addon):
    """An undo step stores the add-on's factor group as it was when the step was pushed (a stroke's step is
    pushed before its factors are written): after an undo the factors are written again."""
    cyl, twist, ring, hs = _twist_group(addon)
    monkeypatch_stroke = pytest.MonkeyPatch()
    monkeypatch_stroke.setattr(hs.factor_group, "_stroke_running", lambda: True)  # steps pushed mid-stroke
    refresh = hs.factor_group.write_queued
    try:
        bpy.ops.ed.undo_push(message="before")
        group = json.loads(cyl.hybrid_skin.saved_state)["factor_group"]
        stored = []
        for weight in (1.0, 0.6):  # two strokes, each pushed before its factors are written
            twist.add(ring, weight, "REPLACE")
            bpy.ops.ed.undo_push(message=f"paint {weight}")
            stored.append(group_weights(cyl, group))  # what the step holds of the add-on's group
            evaluated_positions(cyl)
        monkeypatch_stroke.undo()
        refresh()
        assert bpy.ops.ed.undo() == {"FINISHED"}
        cyl = bpy.data.objects[cyl.name]
        assert abs(group_weights(cyl, "Twist")[ring[0]] - 1.0) < 1e-6
        shown = evaluated_positions(cyl)
        lagging = native_positions(cyl, stored[0])  # what the step's own factor group would show
        assert np.abs(shown - lagging).max() > 1e-3, "the step's factor group lagged (or this test is void)"
    finally:
        monkeypatch_stroke.undo()
        if bpy.app.timers.is_registered(refresh):
            bpy.app.timers.unregister(refresh)
    assert_close(shown, native_positions(cyl, group_weights(cyl, "Twist")), "after undo")


@pytest.mark.parametrize("part", ["modifier", "group"])
def test_a_removed_display_modifier_or_group_is_set_up_again(addon, part):
    """The user deletes the Evaluated display's Preserve Volume modifier or its factor group: the mesh
    showed plain LBS (or mixed by nothing) while the panel said Evaluated, with no word. It is set up
    again at the next evaluation, said once, and shows Blender's mix again."""
    arm, cyl = _bent()
    cyl.hybrid_skin.deform_factor = 0.7
    assert bpy.ops.hybrid_skin.add() == {"FINISHED"}
    hs = modules(addon)
    _shown_equals_blender(hs, cyl, 0.7, "before")
    record = json.loads(cyl.hybrid_skin.saved_state)
    if part == "modifier":
        cyl.modifiers.remove(next(m for m in cyl.modifiers if hs.setup.stack.is_mix_modifier(m)))
    else:
        cyl.vertex_groups.remove(cyl.vertex_groups[record["factor_group"]])
    bpy.context.view_layer.update()  # the update that reports the removal sets the part up again
    assert any(hs.setup.stack.is_mix_modifier(m) for m in cyl.modifiers)
    _shown_equals_blender(hs, cyl, 0.7, f"after the {part} was removed")
