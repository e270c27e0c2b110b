"""Weights edited without Rebind (by a script, or painted) are used at once: the API, the bakes and the GPU
display never skin with the weights of the last bind. A bind's fingerprint cannot see weights (reading
them costs most of a bind); Blender tags the mesh on every weight edit, the depsgraph handlers make its
binds suspect at the next evaluation or frame change (in background mode too: a batch script has no UI),
and the next use compares the weights. Every cached bind counts (the API binds objects that never had
Hybrid Skin added).

Changes that leave what a bind read as it was (a bake hiding the Armature modifier, a texture bake's
texel data, the Evaluated display's Auto factors at every frame) keep the same bind.
"""

from __future__ import annotations

import bpy
import numpy as np
import pytest

from tests.robustness.bake_scene import rig as keyed_rig
from tests.robustness.helpers import activate, assert_close, gpu_positions, modules, three_bone_cylinder
from tests.support.scenes import evaluated_positions, native_positions, pose_bone


def _ring(obj: bpy.types.Object, z: float) -> list[int]:
    co = np.array([v.co[:] for v in obj.data.vertices])
    return np.flatnonzero(np.abs(co[:, 2] - z) < 0.35).tolist()


def _edit(obj: bpy.types.Object, how: str) -> None:
    """Change some weights the ways a script does."""
    ring = _ring(obj, 1.0)  # around the first joint (the chain starts at z = 0, bones 1 long)
    if how == "VertexGroup.add":
        obj.vertex_groups["Bone1"].add(ring, 1.0, "REPLACE")
    elif how == "VertexGroupElement.weight":
        for i in ring:
            for element in obj.data.vertices[i].groups:
                element.weight = 0.5 * element.weight + 0.25
    elif how == "VertexGroup.remove":
        obj.vertex_groups["Bone0"].remove(ring)
    else:
        raise AssertionError(how)


@pytest.fixture
def bent(addon):
    """``(modules, cylinder)``: the three-bone cylinder bent at its first joint, Hybrid Skin added."""
    arm, cyl = three_bone_cylinder()
    pose_bone(arm, "Bone1", (70, 0, 30))
    activate(cyl)
    assert bpy.ops.hybrid_skin.add() == {"FINISHED"}
    return modules(addon), cyl


@pytest.mark.parametrize("how", ["VertexGroup.add", "VertexGroupElement.weight", "VertexGroup.remove"])
def test_api_uses_weights_a_script_edited_without_rebind(addon, how):
    arm, cyl = three_bone_cylinder()
    pose_bone(arm, "Bone1", (70, 0, 30))  # the joint at z = 1 bends: weights there matter
    api = modules(addon).api
    before = api.deformed_positions(cyl, deform_factor=0.5)  # bound (no Hybrid Skin added: the API's own)
    _edit(cyl, how)
    after = api.deformed_positions(cyl, deform_factor=0.5)
    assert np.abs(after - before).max() > 1e-3, "the edit must change the result (or this test is void)"
    assert_close(after, native_positions(cyl, 0.5), f"after {how}")


@pytest.mark.parametrize("animated_keys", [False, True])
def test_a_bake_after_weights_edited_by_script_is_not_stale(addon, animated_keys):
    """Also when the mesh's shape keys are animated (every frame change then updates the mesh, so the
    edit is told apart only by the bake's evaluation before its first frame change)."""
    arm, cyl = three_bone_cylinder()
    pose_bone(arm, "Bone1", (70, 0, 30))
    if animated_keys:
        cyl.shape_key_add(name="Basis")
        key = cyl.shape_key_add(name="Grow")
        key.data.foreach_set("co", (np.array([v.co[:] for v in cyl.data.vertices]) * 1.1).ravel())
        for frame, value in ((1, 0.0), (20, 1.0)):
            key.value = value
            key.keyframe_insert("value", frame=frame)
        bpy.context.scene.frame_set(1)
    assert bpy.ops.hybrid_skin.add() == {"FINISHED"}
    api = modules(addon).api
    api.deformed_positions(cyl)  # bound
    _edit(cyl, "VertexGroup.add")
    # the bake straight after the edit (no evaluation between: the bake's own frame change sees it)
    assert bpy.ops.hybrid_skin.bake_deformation(target="CURRENT") == {"FINISHED"}
    baked = evaluated_positions(cyl)
    assert bpy.ops.hybrid_skin.clear_bake() == {"FINISHED"}
    expected = native_positions(cyl, cyl.hybrid_skin.deform_factor)
    assert_close(baked, expected, "bake after a scripted weight edit")


def test_texture_bakes_keep_the_bind_and_a_weight_edit_binds_again(addon, tmp_path):
    """A bake hides the Armature modifier and shows it again, and writes texel data: none of that is an
    edit of what the bind read, so a second bake uses the same bind; a weight edit does not."""
    hs = modules(addon)
    arm, obj = keyed_rig()
    bake = dict(kind="VERTEX", precision="PNG16", directory=str(tmp_path), action_source="ACTIVE")
    bpy.context.view_layer.objects.active = arm
    assert bpy.ops.hybrid_skin.bake_animation_texture(**bake) == {"FINISHED"}
    assert "animtex_index" in obj.data.attributes  # the bake wrote texel data into the mesh
    bound = hs.bind.peek(obj)
    assert bound is not None
    assert bpy.ops.hybrid_skin.bake_animation_texture(**bake) == {"FINISHED"}  # writes it again
    hs.api.deformed_positions(obj)
    assert hs.bind.peek(obj) is bound and not bound.suspect, "the bake's own changes bound again"
    _edit(obj, "VertexGroup.add")
    bpy.context.evaluated_depsgraph_get()
    assert bound.suspect, "a weight edit left the bind trusted"
    assert bpy.ops.hybrid_skin.bake_animation_texture(**bake) == {"FINISHED"}
    assert hs.bind.peek(obj) is not bound


def test_unused_group_edits_keep_the_bind(addon):
    """A group no bind reads (not a bone's, not the mask or factor group) edited: compared, the same bind."""
    hs = modules(addon)
    arm, cyl = three_bone_cylinder()
    hs.api.deformed_positions(cyl)
    bound = hs.bind.peek(cyl)
    cyl.vertex_groups.new(name="Painted for something else").add(_ring(cyl, 1.0), 0.7, "REPLACE")
    bpy.context.evaluated_depsgraph_get()
    assert bound.suspect
    hs.api.deformed_positions(cyl)
    assert hs.bind.peek(cyl) is not bound  # a new group: the fingerprint holds the group names
    bound = hs.bind.peek(cyl)
    cyl.vertex_groups["Painted for something else"].add(_ring(cyl, 2.0), 0.3, "REPLACE")
    bpy.context.evaluated_depsgraph_get()
    assert bound.suspect
    hs.api.deformed_positions(cyl)
    assert hs.bind.peek(cyl) is bound and not bound.suspect


@pytest.mark.gpu
def test_gpu_display_follows_painted_weights(bent, gpu_context):
    """What the GPU display draws (read back from its shader) follows weights changed and updated as a
    paint stroke does: Blender's own result with the new weights, not the last bind's."""
    hs, cyl = bent
    factor = cyl.hybrid_skin.deform_factor
    before = gpu_positions(hs, cyl)
    assert_close(before, native_positions(cyl, factor), "GPU display before the edit")
    _edit(cyl, "VertexGroup.add")
    bpy.context.evaluated_depsgraph_get()  # the update a stroke makes
    after = gpu_positions(hs, cyl)
    assert np.abs(after - before).max() > 1e-3, "the display kept the weights of the last bind"
    assert_close(after, native_positions(cyl, factor), "GPU display after a weight edit")


def test_evaluated_auto_playback_keeps_the_bind(addon):
    """Playback of the Evaluated display with Auto is no edit of what the bind read (Blender evaluates
    Auto; before Blender 5.2 the add-on writes its factors at every frame): the bind stays, and a weight
    edit made between frames is still seen."""
    hs = modules(addon)
    arm, obj = keyed_rig()
    obj.hybrid_skin.factor_mode = "AUTO"
    obj.hybrid_skin.display = "EVALUATED"
    scene = bpy.context.scene
    hs.api.deformed_positions(obj)
    bound = hs.bind.peek(obj)
    assert bound is not None
    for frame in (6, 9):  # each frame change rewrites the display's factor group
        scene.frame_set(frame)
        bpy.context.evaluated_depsgraph_get()
        assert hs.bind.peek(obj) is bound and not bound.suspect, f"frame {frame}: own write taken for an edit"
        hs.api.deformed_positions(obj)
        assert hs.bind.peek(obj) is bound
    _edit(obj, "VertexGroup.add")
    scene.frame_set(10)  # straight after the edit
    ours = hs.api.deformed_positions(obj)  # binds again: the edited weights
    assert hs.bind.peek(obj) is not bound
    bound = hs.bind.peek(obj)
    # an edit straight after the frame change's own write (no evaluation between) is not taken for it
    obj.vertex_groups["Bone0"].add(_ring(obj, 1.0), 0.2, "REPLACE")
    hs.api.deformed_positions(obj)
    assert hs.bind.peek(obj) is not bound, "a weight edit after the display's write was taken for it"
    scene.frame_set(11)  # the display's factors from the new bind
    ours = hs.api.deformed_positions(obj)
    gap = np.abs(hs.api.deformed_positions(obj, 0.0) - hs.api.deformed_positions(obj, 1.0)).max()
    assert np.abs(evaluated_positions(obj) - ours).max() <= 0.5 / 1024 * gap + 1e-5


@pytest.mark.gpu
def test_gpu_display_follows_vertices_moved_by_a_script(bent, gpu_context):
    """Vertices moved and the mesh updated (as leaving Edit Mode does): the display draws the new rest."""
    hs, cyl = bent
    factor = cyl.hybrid_skin.deform_factor
    before = gpu_positions(hs, cyl)
    co = np.array([v.co[:] for v in cyl.data.vertices], dtype=np.float32)
    co[:, :2] *= 1.3
    cyl.data.vertices.foreach_set("co", co.ravel())
    cyl.data.update()
    bpy.context.evaluated_depsgraph_get()
    after = gpu_positions(hs, cyl)
    assert np.abs(after - before).max() > 1e-2, "the display kept the rest mesh of the last bind"
    assert_close(after, native_positions(cyl, factor), "GPU display after vertices moved")


def test_dragging_the_factor_does_not_read_weights(bent):
    """Setting a Hybrid Skin property makes Blender report the mesh's data changed, like a weight edit; the
    object's transform is reported with it, which a weight edit never is: such an update leaves the bind
    trusted (a slider drag on a big mesh must not read every weight per step). A weight edit in the next
    evaluation is still seen."""
    hs, cyl = bent
    hs.api.deformed_positions(cyl)
    bound = hs.bind.peek(cyl)
    for value in (0.2, 0.4, 0.9):
        cyl.hybrid_skin.deform_factor = value
        bpy.context.evaluated_depsgraph_get()
        assert not bound.suspect, f"factor {value}: taken for an edit"
    _edit(cyl, "VertexGroup.add")
    ours = hs.api.deformed_positions(cyl)
    assert hs.bind.peek(cyl) is not bound
    assert_close(ours, native_positions(cyl, 0.9), "after the factor drag and a weight edit")


@pytest.mark.gpu
def test_weight_paint_tools_reach_the_display_and_the_api(bent, gpu_context):
    """Weight Paint mode's own tools (Smooth, Clean, Limit Total) change weights as a user does:
    the GPU display and the API follow each one without Rebind."""
    hs, cyl = bent
    factor = cyl.hybrid_skin.deform_factor
    drawn = gpu_positions(hs, cyl)
    bpy.ops.object.mode_set(mode="WEIGHT_PAINT")
    try:
        for tool, options in (
            (bpy.ops.object.vertex_group_smooth, dict(group_select_mode="ALL", factor=1.0, repeat=4)),
            (bpy.ops.object.vertex_group_clean, dict(group_select_mode="ALL", limit=0.3)),
            (bpy.ops.object.vertex_group_limit_total, dict(limit=1)),
        ):
            assert tool(**options) == {"FINISHED"}
            bpy.context.evaluated_depsgraph_get()
            now = gpu_positions(hs, cyl)
            assert np.abs(now - drawn).max() > 1e-4, f"{tool.idname()}: the display did not change"
            assert_close(now, native_positions(cyl, factor), f"GPU display after {tool.idname()}")
            assert_close(hs.api.deformed_positions(cyl), native_positions(cyl, factor), tool.idname())
            drawn = now
    finally:
        bpy.ops.object.mode_set(mode="OBJECT")
