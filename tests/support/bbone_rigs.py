"""B-bone rigs for the tests of the Auto tree's B-bone part, and a probe that evaluates the tree's palette.

:func:`handle_rig` builds a chain of three B-bones with control bones for custom handles and random (seeded)
Bone and PoseBone settings, in one of :data:`CONFIGURATIONS`; :class:`PaletteProbe` puts the add-on's
palette (``rig/trees/palette.py``, as the Auto tree builds it) on a point cloud object and reads its deform
matrices, rest frames and lengths back; :func:`truth_palette` is Blender's own (``bbone_segment_matrix``).
"""

from __future__ import annotations

import importlib

import bpy
import numpy as np

#: Handle types of the three B-bones (start, end) and the flags the chain uses.
CONFIGURATIONS = {
    "automatic": {"types": [("AUTO", "AUTO")] * 3},
    "custom handles": {"types": [("ABSOLUTE", "ABSOLUTE"), ("RELATIVE", "RELATIVE"), ("TANGENT", "TANGENT")]},
    "mixed, scale easing, end roll": {
        "types": [("TANGENT", "ABSOLUTE"), ("ABSOLUTE", "TANGENT"), ("RELATIVE", "AUTO")],
        "easing": True,
        "end_roll": True,
    },
    "scale and ease from handles": {
        "types": [("AUTO", "RELATIVE"), ("TANGENT", "AUTO"), ("ABSOLUTE", "RELATIVE")],
        "handle_scale": (True, True, True),
        "handle_ease": True,
    },
    "unconnected": {"types": [("AUTO", "AUTO")] * 3, "connect": False, "handle_scale": (True, False, True)},
}
#: Tolerances: a point a tenth of its bone's length from a joint (relative to the rig's size), and a
#: rest frame's axes. Blender's own float32 B-bone maths (its circle factor, acos near a straight bone)
#: moves with the last bit of its inputs by about 1e-5 of a radian.
POINT_TOL = 2e-6
AXIS_TOL = 5e-5


def handle_rig(config: dict, seed: int) -> bpy.types.Object:
    rng = np.random.default_rng(seed)
    data = bpy.data.armatures.new(f"Handles {seed}")
    arm = bpy.data.objects.new(data.name, data)
    bpy.context.scene.collection.objects.link(arm)
    bpy.context.view_layer.objects.active = arm
    bpy.ops.object.mode_set(mode="EDIT")
    edit = data.edit_bones
    root = edit.new("root")
    root.head, root.tail, root.use_deform = (0.0, 0.0, -0.5), (0.0, 0.3, -0.5), False
    chain, z = [], 0.0
    for i, segments in enumerate((4, 6, 3)):
        bone = edit.new(f"B{i}")
        bone.head = (0.1 * i, 0.05 * i, z)
        z += 0.7 + 0.2 * i
        bone.tail, bone.roll, bone.bbone_segments = (0.1 * i + 0.1, 0.05 * i - 0.05, z), 0.3 * i, segments
        bone.parent = chain[-1] if chain else root
        bone.use_connect = bool(chain) and config.get("connect", True)
        chain.append(bone)
    controls = []
    for i in range(4):
        control = edit.new(f"C{i}" if i != 1 else "Contrôle ① 1")  # names are read by characters
        control.head, control.tail = (0.4, 0.1 * i, 0.7 * i), (0.4, 0.1 * i + 0.2, 0.7 * i + 0.1)
        control.parent, control.use_deform = root, False
        controls.append(control)
    for i, bone in enumerate(chain):
        start, end = config["types"][i]
        bone.bbone_handle_type_start, bone.bbone_handle_type_end = start, end
        if start != "AUTO":
            bone.bbone_custom_handle_start = controls[i]
        if end != "AUTO":
            bone.bbone_custom_handle_end = controls[i + 1]
        _random_settings(bone, rng, ease=(0.3, 1.8), scale=(0.6, 1.5))
        bone.use_scale_easing = config.get("easing", False)
        bone.use_endroll_as_inroll = config.get("end_roll", False)
        for side in ("start", "end"):
            setattr(bone, f"bbone_handle_use_scale_{side}", config.get("handle_scale", (False, False, False)))
            setattr(bone, f"bbone_handle_use_ease_{side}", config.get("handle_ease", False))
    bpy.ops.object.mode_set(mode="OBJECT")
    for i in range(3):
        _random_settings(arm.pose.bones[f"B{i}"], rng, ease=(-0.3, 0.8), scale=(0.7, 1.3))
    return arm


def _random_settings(bone, rng, ease: tuple[float, float], scale: tuple[float, float]) -> None:
    bone.bbone_curveinx, bone.bbone_curveinz, bone.bbone_curveoutx, bone.bbone_curveoutz = rng.uniform(
        -0.2, 0.2, 4
    )
    bone.bbone_easein, bone.bbone_easeout = rng.uniform(*ease, 2)
    bone.bbone_rollin, bone.bbone_rollout = rng.uniform(-0.5, 0.5, 2)
    bone.bbone_scalein, bone.bbone_scaleout = rng.uniform(*scale, 3), rng.uniform(*scale, 3)


def pose_randomly(arm: bpy.types.Object, rng, uneven: bool) -> None:
    """Rotate every bone but the root, move the unconnected ones, scale them (non-uniformly if
    ``uneven``: Blender's B-bone maths then works in the bone's scaled space)."""
    for pb in arm.pose.bones:
        if pb.name == "root":
            continue
        pb.rotation_mode = "XYZ"
        pb.rotation_euler = rng.uniform(-0.8, 0.8, 3)
        if not pb.bone.use_connect:
            pb.location = rng.uniform(-0.2, 0.2, 3)
        pb.scale = rng.uniform(0.7, 1.4, 3) if uneven else np.full(3, rng.uniform(0.7, 1.4))
    bpy.context.view_layer.update()


def truth_palette(addon, arm: bpy.types.Object) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Blender's palette now: deform matrices, rest frames and lengths of every entry."""
    bridge = importlib.import_module(f"{addon.__name__}.bridge")
    binding = importlib.import_module(f"{addon.__name__}.core.binding")
    analysis = importlib.import_module(f"{addon.__name__}.core.analysis")
    evaluated = arm.evaluated_get(bpy.context.evaluated_depsgraph_get())
    bones = bridge.deform_bones(arm)
    order = {pb.name: i for i, pb in enumerate(evaluated.pose.bones)}
    channel = bridge.channel_matrices(evaluated, np.array([order[n] for n in bones.names]))
    rest_segments = bridge.segment_matrices(evaluated, bones, rest=True)
    pose_segments = bridge.segment_matrices(evaluated, bones, rest=False)
    deform = binding.virtual_deform_matrices(bones, channel, pose_segments, rest_segments)
    frames = binding.virtual_rest_matrices(bones, rest_segments)
    return deform, frames, analysis.palette_lengths(bones, frames)


class PaletteProbe:
    """The add-on's palette of ``arm`` on a point cloud (a Geometry Nodes object), read back."""

    def __init__(self, addon, arm: bpy.types.Object) -> None:
        def module(name):
            return importlib.import_module(f"{addon.__name__}.{name}")

        bridge, palette = module("bridge"), module("rig.trees.palette")
        stack_trees = module("rig.trees.stack_trees")
        bones = bridge.deform_bones(arm)
        segments = tuple(int(s) for s in bones.segments)
        self.bbones, reason = module("rig.bbone_settings").read(arm, bones.names, segments)
        assert reason is None, reason
        self.parents = tuple(int(p) for p in bones.virtual_parents())
        tree = palette.palette_tree(bones.names, self.parents, self.bbones, stack_trees.TREE_VERSION)
        self.obj = bpy.data.objects.new("Palette probe", bpy.data.meshes.new("Palette probe"))
        bpy.context.scene.collection.objects.link(self.obj)
        modifier = self.obj.modifiers.new("Palette", "NODES")
        modifier.node_group = tree
        bridge.set_modifier_input(modifier, "Armature", arm)

    def read(self, name: str, width: int) -> np.ndarray:
        evaluated = self.obj.evaluated_get(bpy.context.evaluated_depsgraph_get())
        geometry = evaluated.evaluated_geometry()  # kept while its point cloud is read
        attribute = geometry.pointcloud.attributes[name]
        out = np.empty(len(attribute.data) * width, np.int32 if attribute.data_type == "INT" else np.float32)
        attribute.data.foreach_get("value", out)
        return out.reshape(len(attribute.data), width)

    def assert_equal(self, truth, what: str) -> None:
        deform, frames, lengths = truth
        got = self.read("deform", 16).reshape(-1, 4, 4).transpose(0, 2, 1)  # stored column by column
        got_frames = self.read("rest", 16).reshape(-1, 4, 4).transpose(0, 2, 1)
        assert got.shape == deform.shape, (got.shape, deform.shape)
        assert (self.read("parent", 1).ravel() == np.asarray(self.parents)).all(), what
        size = float(np.ptp(frames[:, :3, 3], axis=0).max())
        reach = 0.1 * np.abs(lengths)[:, None]
        probes = [
            frames[:, :3, 3] + reach * frames[:, :3, axis] * sign for axis in (0, 2) for sign in (1, -1)
        ]
        for p in probes:
            ours = np.einsum("vij,vj->vi", got[:, :3, :3], p) + got[:, :3, 3]
            blender = np.einsum("vij,vj->vi", deform[:, :3, :3], p) + deform[:, :3, 3]
            err = float(np.abs(ours - blender).max()) / size
            assert err <= POINT_TOL, f"{what}: a point by a joint is {err:.2e} × the rig off Blender's"
        axes = float(np.abs(got_frames[:, :3, :3] - frames[:, :3, :3]).max())
        assert axes <= AXIS_TOL, f"{what}: rest frame axes {axes:.2e} off"
        places = float(np.abs(got_frames[:, :3, 3] - frames[:, :3, 3]).max()) / size
        assert places <= POINT_TOL, f"{what}: rest joints {places:.2e} × the rig off"
        off = float(np.abs(self.read("length", 1).ravel() - lengths).max()) / size
        assert off <= POINT_TOL, f"{what}: palette lengths {off:.2e} × the rig off"
