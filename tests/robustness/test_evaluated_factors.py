"""The Evaluated display (Blender's own stack, the render path) mixes by a vertex group the add-on writes.
That group must follow the factor the panel shows whenever it changes without a property update: a
keyframed or driven Deform Factor during playback and renders, and a factor group painted in Weight Paint
or set by a script. Truth: Blender's own LBS + Preserve Volume mix at the factor the settings give.
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
    """What the Evaluated display shows equals Blender's own mix at ``factor`` (the display is taken down
    to measure Blender's mix on the user's own modifier, then put back)."""
    shown = evaluated_positions(cyl)
    hs.display.restore(cyl)
    assert_close(shown, native_positions(cyl, factor), what)
    hs.display.apply(cyl)
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


def test_a_factor_group_painted_in_weight_paint_is_shown_once_the_stroke_is_over(addon, monkeypatch):
    """Not only at the next frame change or back in Object Mode: a weight edit queues the write for a
    timer, which waits while a paint stroke runs (the stroke may hold the mesh's weight arrays)."""
    cyl, twist, ring, hs = _twist_group(addon)
    refresh = hs.display.write_queued_factors
    before = _shown_equals_blender(hs, cyl, group_weights(cyl, "Twist"), "before painting")

    assert bpy.ops.object.mode_set(mode="WEIGHT_PAINT") == {"FINISHED"}
    twist.add(ring, 1.0, "REPLACE")  # as a stroke writes the group
    stale = evaluated_positions(cyl)  # the update that reports the edit: the write is queued, not done
    assert np.abs(stale - before).max() == 0.0
    try:
        assert bpy.app.timers.is_registered(refresh), "a painted factor group must queue its write"
        # The bpy module runs no timers: called as Blender would call it.
        monkeypatch.setattr(hs.display, "_stroke_running", lambda: True)
        assert refresh() == hs.display.FACTOR_WRITE_DELAY_S, "it waits for the stroke to end"
        assert np.abs(evaluated_positions(cyl) - before).max() == 0.0
        monkeypatch.setattr(hs.display, "_stroke_running", lambda: False)
        assert refresh() is None, "one write, and its own update queues nothing more"
    finally:
        if bpy.app.timers.is_registered(refresh):
            bpy.app.timers.unregister(refresh)
    assert cyl.mode == "WEIGHT_PAINT"
    painted = evaluated_positions(cyl)
    assert np.abs(painted - before).max() > 1e-3, "the paint must change the mix (or this test is void)"
    assert cyl.vertex_groups.active.name == "Twist", "the user's group stays the one painted"
    hs.display.restore(cyl)
    assert_close(painted, native_positions(cyl, group_weights(cyl, "Twist")), "shown while painting")
    hs.display.apply(cyl)


def test_undo_of_a_paint_shows_the_factor_group_it_brings_back(addon):
    """An undo step stores the add-on's factor group as it was when the step was pushed (the write comes
    after a stroke's push): the update after an undo queues the write again."""
    cyl, twist, ring, hs = _twist_group(addon)
    refresh = hs.display.write_queued_factors
    try:
        bpy.ops.ed.undo_push(message="before")
        for weight in (1.0, 0.6):  # two strokes, each pushed before its factors are written
            twist.add(ring, weight, "REPLACE")
            bpy.ops.ed.undo_push(message=f"paint {weight}")
            evaluated_positions(cyl)
            refresh()
        assert bpy.ops.ed.undo() == {"FINISHED"}
        cyl = bpy.data.objects[cyl.name]
        assert abs(group_weights(cyl, "Twist")[ring[0]] - 1.0) < 1e-6
        stale = evaluated_positions(cyl)
        assert bpy.app.timers.is_registered(refresh), "undo must queue the factor write"
        refresh()
        shown = evaluated_positions(cyl)
        assert np.abs(shown - stale).max() > 1e-3, "the step's factor group lagged (or this test is void)"
    finally:
        if bpy.app.timers.is_registered(refresh):
            bpy.app.timers.unregister(refresh)
    hs.display.restore(cyl)
    assert_close(shown, native_positions(cyl, group_weights(cyl, "Twist")), "after undo")
    hs.display.apply(cyl)


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
        cyl.modifiers.remove(next(m for m in cyl.modifiers if hs.display.bridge.is_mix_modifier(m)))
    else:
        cyl.vertex_groups.remove(cyl.vertex_groups[record["factor_group"]])
    bpy.context.view_layer.update()
    timer = hs.display.write_queued_factors
    try:
        assert bpy.app.timers.is_registered(timer)
        timer()  # the bpy module runs no timers: called as Blender would
    finally:
        if bpy.app.timers.is_registered(timer):
            bpy.app.timers.unregister(timer)
    assert any(hs.display.bridge.is_mix_modifier(m) for m in cyl.modifiers)
    _shown_equals_blender(hs, cyl, 0.7, f"after the {part} was removed")
