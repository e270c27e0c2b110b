"""Modifiers above the Armature modifier that change vertex-group weights (Vertex Weight Mix, Edit and
Proximity): Blender deforms with the weights they produce, so the API, the bakes and the Evaluated display
must too, at every frame (a Proximity target that moves changes the weights without any edit of the
mesh). The GPU display cannot follow such weights: Add warns and shows Blender's own stack instead.

Every number is checked against Blender's own evaluation (``native_positions``) taken before Hybrid Skin
is added, on the keyed two-bone cylinder of :mod:`tests.robustness.bake_scene` (frame 1 is the rest
pose, frames 6 and 12 bend and twist the joint).
"""

from __future__ import annotations

import re

import bpy
import numpy as np
import pytest

from tests.robustness.bake_scene import refused, rig, same_as, snapshot
from tests.robustness.helpers import assert_close, modules
from tests.support import animtex
from tests.support.scenes import evaluated_positions, native_positions

FRAMES = (6, 12)
FACTOR = 0.6


def add_weight_modifier(obj: bpy.types.Object, how: str) -> bpy.types.Modifier:
    """A modifier that changes Bone1's weights, moved above the Armature modifier."""
    if how == "MIX":  # Bone1's weights set from Bone0's: a common rig trick
        mod = obj.modifiers.new("Weight Mix", "VERTEX_WEIGHT_MIX")
        mod.vertex_group_a, mod.vertex_group_b = "Bone1", "Bone0"
        mod.mix_mode, mod.mix_set = "SET", "ALL"
    elif how == "EDIT":
        mod = obj.modifiers.new("Weight Edit", "VERTEX_WEIGHT_EDIT")
        mod.vertex_group, mod.falloff_type = "Bone1", "SHARP"
    elif how == "PROXIMITY":  # Bone1's weights from the distance to an empty that moves between frames
        target = bpy.data.objects.new("Target", None)
        bpy.context.scene.collection.objects.link(target)
        for frame, z in ((1, 1.0), (6, 2.5), (12, 0.6)):
            target.location = (0.0, 0.0, z)
            target.keyframe_insert("location", frame=frame)
        mod = obj.modifiers.new("Weight Proximity", "VERTEX_WEIGHT_PROXIMITY")
        mod.vertex_group, mod.target, mod.proximity_mode = "Bone1", target, "OBJECT"
        mod.min_dist, mod.max_dist = 1.5, 0.0
    elif how == "NODES":  # Geometry Nodes storing a float named like the group: Bone1's weights
        tree = bpy.data.node_groups.new("Set Bone1", "GeometryNodeTree")
        tree.interface.new_socket("Geometry", in_out="INPUT", socket_type="NodeSocketGeometry")
        tree.interface.new_socket("Geometry", in_out="OUTPUT", socket_type="NodeSocketGeometry")
        store = tree.nodes.new("GeometryNodeStoreNamedAttribute")
        store.data_type, store.domain = "FLOAT", "POINT"
        store.inputs["Name"].default_value, store.inputs["Value"].default_value = "Bone1", 0.3
        tree.links.new(tree.nodes.new("NodeGroupInput").outputs[0], store.inputs["Geometry"])
        tree.links.new(store.outputs["Geometry"], tree.nodes.new("NodeGroupOutput").inputs[0])
        mod = obj.modifiers.new("Geometry Nodes", "NODES")
        mod.node_group = tree
    else:
        raise AssertionError(how)
    with bpy.context.temp_override(object=obj):
        bpy.ops.object.modifier_move_to_index(modifier=mod.name, index=0)
    parts = r"HybridSkin (Rest|Keep LBS|DQS|Mix)(\.\d+)?"
    users = [m for m in obj.modifiers if not re.fullmatch(parts, m.name)]
    assert obj.modifiers[0] == mod and users[1].type == "ARMATURE"
    bpy.context.scene.frame_set(bpy.context.scene.frame_current)
    return mod


def blender(obj: bpy.types.Object, factor: float = FACTOR, frames=FRAMES) -> dict[int, np.ndarray]:
    """Blender's own hybrid at each frame (taken before Hybrid Skin changes the stack)."""
    out = {}
    for frame in frames:
        bpy.context.scene.frame_set(frame)
        out[frame] = native_positions(obj, factor).copy()
    return out


def armature_input_weights(obj: bpy.types.Object, group: str) -> np.ndarray:
    """The weights of ``group`` that Blender's Armature modifier receives (the stack above it evaluated)."""
    arm_mod = next(m for m in obj.modifiers if m.type == "ARMATURE")
    shown, arm_mod.show_viewport = arm_mod.show_viewport, False
    try:
        mesh = obj.evaluated_get(bpy.context.evaluated_depsgraph_get()).data
        index = obj.vertex_groups[group].index
        return np.array([sum(g.weight for g in v.groups if g.group == index) for v in mesh.vertices])
    finally:
        arm_mod.show_viewport = shown
        bpy.context.view_layer.update()


def assert_modifier_matters(obj: bpy.types.Object, mod: bpy.types.Modifier, frame: int) -> None:
    """Blender's result with the modifier differs from the one without it (else a test is void)."""
    bpy.context.scene.frame_set(frame)
    with_it = native_positions(obj, FACTOR).copy()
    mod.show_viewport = False
    without = native_positions(obj, FACTOR).copy()
    mod.show_viewport = True
    bpy.context.view_layer.update()
    assert np.abs(with_it - without).max() > 1e-2, f"{mod.name} does not change Blender's result"


@pytest.mark.parametrize("how", ["MIX", "EDIT", "NODES"])
def test_api_skins_with_the_weights_a_modifier_above_produces(addon, how):
    arm, obj = rig(add=False)
    api = modules(addon).api
    bpy.context.scene.frame_set(6)
    api.deformed_positions(obj)  # a bind made before the modifier exists: it must not be kept
    mod = add_weight_modifier(obj, how)
    assert_modifier_matters(obj, mod, 6)
    for frame in FRAMES:
        bpy.context.scene.frame_set(frame)
        for factor in (0.0, FACTOR, 1.0):
            expected = native_positions(obj, factor)
            assert_close(api.deformed_positions(obj, factor), expected, f"{how}, frame {frame}, f={factor}")


def test_api_follows_proximity_weights_that_change_between_frames(addon):
    """The target moves: the weights change from frame 6 to frame 12 with no edit of the mesh (no
    depsgraph report of one), so a bind made at frame 6 must not be used at frame 12."""
    arm, obj = rig(add=False)
    api = modules(addon).api
    mod = add_weight_modifier(obj, "PROXIMITY")
    assert_modifier_matters(obj, mod, 12)
    weights = {}
    for frame in FRAMES:
        bpy.context.scene.frame_set(frame)
        weights[frame] = armature_input_weights(obj, "Bone1")
    assert np.abs(weights[6] - weights[12]).max() > 0.1, "the weights do not change between the frames"
    expected = blender(obj)
    for frame in (*FRAMES, 6):
        bpy.context.scene.frame_set(frame)
        assert_close(api.deformed_positions(obj, FACTOR), expected[frame], f"Proximity, frame {frame}")


@pytest.mark.parametrize(
    ("how", "target"),
    [("MIX", "SHAPE_KEYS"), ("EDIT", "PC2"), ("PROXIMITY", "SHAPE_KEYS"), ("PROXIMITY", "PC2")],
)
def test_bakes_play_back_blenders_result(addon, tmp_path, how, target):
    arm, obj = rig(add=False)
    add_weight_modifier(obj, how)
    expected = blender(obj)
    assert bpy.ops.hybrid_skin.add() == {"FINISHED"}
    obj.hybrid_skin.deform_factor = FACTOR
    assert bpy.ops.hybrid_skin.bake_deformation(
        target=target,
        frame_start=FRAMES[0],
        frame_end=FRAMES[1],
        frame_step=FRAMES[1] - FRAMES[0],
        filepath=str(tmp_path / "cache.pc2"),
    ) == {"FINISHED"}
    for frame in FRAMES:
        bpy.context.scene.frame_set(frame)
        assert_close(evaluated_positions(obj), expected[frame], f"{how} {target} bake, frame {frame}")


def test_vertex_texture_bake_decodes_to_blenders_result(addon, tmp_path):
    """A VERTEX animation texture of the keyed clip (every frame 1-12), the Proximity weights changing
    at every frame, decoded at each stored frame."""
    core = __import__(addon.__name__ + ".core.animtex", fromlist=["animtex"])
    arm, obj = rig(add=False)
    add_weight_modifier(obj, "PROXIMITY")
    obj.hybrid_skin.deform_factor = FACTOR
    bpy.context.view_layer.objects.active = arm
    animtex.bake(directory=str(tmp_path), kind="VERTEX", precision="EXR32", file_name="prox")
    meta, texture = animtex.load_bake(core, tmp_path / "prox.json")
    frames, _ = animtex.clip_frames(meta["clips"][0])
    assert list(frames) == list(range(1, 13))
    expected = blender(obj, frames=[int(f) for f in frames])
    (got,) = animtex.decode(core, meta, texture, [obj], 0, np.arange(len(frames), dtype=float))
    truth = np.stack([expected[int(f)] for f in frames])
    bound = animtex.vertex_bound(truth, animtex.coordinates(obj), "EXR32")
    error = np.abs(got - truth).reshape(-1, 3).max(0)
    assert np.all(error <= bound), f"decoded texture off Blender's result by {error} (bound {bound})"


@pytest.mark.parametrize("how", ["MIX", "PROXIMITY"])
def test_add_warns_and_shows_blenders_own_stack(addon, capfd, how):
    arm, obj = rig(add=False)
    add_weight_modifier(obj, how)
    expected = blender(obj, 0.5)
    assert bpy.ops.hybrid_skin.add(display="GPU") == {"FINISHED"}
    out = capfd.readouterr().out
    assert "can change its weights at any frame, which the GPU display cannot follow" in out
    hs = modules(addon)
    assert not hs.viewport.shows_on_gpu(obj, bpy.context.view_layer)
    assert all(m.show_viewport for m in obj.modifiers) and obj.display_type != "BOUNDS"
    obj.hybrid_skin.display = "EVALUATED"
    obj.hybrid_skin.display = "GPU"  # asked for again: Blender's stack stays
    assert not hs.viewport.shows_on_gpu(obj, bpy.context.view_layer)
    for frame in FRAMES:
        bpy.context.scene.frame_set(frame)
        assert_close(evaluated_positions(obj), expected[frame], f"Evaluated display, frame {frame}")


def test_a_weight_modifier_added_later_falls_back_too(addon):
    """Added while the GPU display draws: the update that reports it hands the object to Blender's exact
    stack (the display only shows what it hid: nothing is set up or taken down)."""
    arm, obj = rig(display="GPU")
    hs = modules(addon)
    assert hs.viewport.shows_on_gpu(obj, bpy.context.view_layer)
    add_weight_modifier(obj, "MIX")
    obj.hybrid_skin.deform_factor = 0.5
    shown = evaluated_positions(obj)
    assert not hs.viewport.shows_on_gpu(obj, bpy.context.view_layer)
    assert obj.display_type != "BOUNDS"
    assert all(m.show_viewport for m in obj.modifiers)
    assert_close(shown, native_positions(obj, 0.5), "Blender's stack, mixed")


def test_remove_restores_everything(addon, tmp_path):
    arm, obj = rig(add=False)
    add_weight_modifier(obj, "PROXIMITY")
    before = snapshot()
    assert bpy.ops.hybrid_skin.add() == {"FINISHED"}
    modules(addon).api.deformed_positions(obj)
    assert bpy.ops.hybrid_skin.bake_deformation(target="SHAPE_KEYS", frame_start=1, frame_end=12) == {
        "FINISHED"
    }
    assert bpy.ops.hybrid_skin.remove() == {"FINISHED"}
    same_as(before, what="after Add, a bake and Remove")


def test_shape_key_bakes_still_refuse_a_modifier_above_that_moves_vertices(addon):
    """Only modifiers that change weights alone are let through: baked keys would be moved by the others."""
    arm, obj = rig()
    add_weight_modifier(obj, "MIX")
    displace = obj.modifiers.new("Displace", "DISPLACE")
    with bpy.context.temp_override(object=obj):
        bpy.ops.object.modifier_move_to_index(modifier=displace.name, index=0)
    before = snapshot()
    refused(
        bpy.ops.hybrid_skin.bake_deformation,
        "Modifiers ['Displace'] sit above 'Armature'",
        target="SHAPE_KEYS",
    )
    same_as(before, what="after a refused bake")
