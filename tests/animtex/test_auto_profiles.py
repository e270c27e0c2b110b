"""Bakes of an object in factor mode Auto follow its Auto profile: a VERTEX animation texture, shape keys
and a point cache hold Blender's own mix with the profile's factors (written as the Preserve Volume
modifier's group), and the profiles give different bakes. Bone kinds do not play Auto (their runtime
chooses one factor, see shaders/FORMAT.md section 9)."""

from __future__ import annotations

import importlib
import math

import bpy
import numpy as np
import pytest

from tests.support.animtex import bake, coordinates, decode, load_bake, vertex_bound
from tests.support.assets import play
from tests.support.scenes import (
    bbox_diagonal,
    make_chain_armature,
    make_cylinder,
    native_positions,
    skin_to_chain,
)

FRAMES = np.arange(1.0, 4.0)


def auto_limb(profile: str):
    """A two-bone cylinder bent to 120° over frames 1-3, in factor mode Auto with ``profile``."""
    arm = make_chain_armature("AutoRig", [1.0, 1.0])
    obj = make_cylinder("AutoLimb", rings=24, segments=16)
    skin_to_chain(obj, arm, blend=0.5)
    obj.data.shade_smooth()  # one texture item per vertex
    pb = arm.pose.bones["Bone1"]
    pb.rotation_mode = "XYZ"
    for frame, angle in ((1, 10.0), (3, 120.0)):
        pb.rotation_euler = (math.radians(angle), 0.0, 0.0)
        pb.keyframe_insert("rotation_euler", frame=frame)
    bpy.context.view_layer.objects.active = obj
    assert bpy.ops.hybrid_skin.add() == {"FINISHED"}
    obj.hybrid_skin.factor_mode = "AUTO"
    obj.hybrid_skin.auto_profile = profile
    return arm, obj


def blender_truth(addon, arm, obj, profile: str) -> np.ndarray:
    """``(S, N, 3)``: Blender's own LBS + Preserve Volume mix with the profile's factors at each frame."""
    bind = importlib.import_module(addon.__name__ + ".rig.bind")
    action, out = arm.animation_data.action, []
    for frame in FRAMES:
        play(arm, action, float(frame))
        dg = bpy.context.evaluated_depsgraph_get()
        factors = bind.cached_bind(obj, dg).posed(dg).auto_factors(profile)
        out.append(native_positions(obj, np.round(factors, 6)))
    return np.array(out)


@pytest.mark.parametrize("profile", ["ROUND", "JOINT"])
def test_a_vertex_texture_bakes_the_objects_auto_profile(addon, core, tmp_path, profile):
    arm, obj = auto_limb(profile)
    expected = blender_truth(addon, arm, obj, profile)
    other = blender_truth(addon, arm, obj, "JOINT" if profile == "ROUND" else "ROUND")
    bpy.context.view_layer.objects.active = arm
    bake(directory=str(tmp_path), kind="VERTEX", precision="EXR32", file_name="auto")
    meta, texture = load_bake(core, tmp_path / "auto.json")
    assert meta["deform_factor"]["baked"] and meta["deform_factor"]["mode"] == "AUTO"
    (got,) = decode(core, meta, texture, [obj], 0, np.arange(len(FRAMES), dtype=float))
    bound = vertex_bound(expected, coordinates(obj), "EXR32")
    assert np.all(np.abs(got - expected).reshape(-1, 3).max(0) <= bound + 1e-5 * bbox_diagonal(expected[-1]))
    assert np.abs(other - expected).max() > 1e-2 * bbox_diagonal(expected[-1])  # the profile shows


def test_shape_keys_and_a_point_cache_bake_the_objects_auto_profile(addon, tmp_path):
    arm, obj = auto_limb("KEEP_VOLUME")
    expected = blender_truth(addon, arm, obj, "KEEP_VOLUME")
    diag = bbox_diagonal(expected[-1])
    bpy.context.view_layer.objects.active = obj
    assert bpy.ops.hybrid_skin.bake_deformation(frame_start=1, frame_end=3) == {"FINISHED"}
    keys = obj.data.shape_keys.key_blocks
    for i, frame in enumerate(FRAMES):
        co = np.empty(len(obj.data.vertices) * 3, dtype=np.float32)
        keys[f"HS Bake {int(frame):04d}"].data.foreach_get("co", co)
        np.testing.assert_allclose(co.reshape(-1, 3), expected[i], atol=1e-5 * diag)
    assert bpy.ops.hybrid_skin.clear_bake() == {"FINISHED"}
    path = tmp_path / "auto.pc2"
    assert bpy.ops.hybrid_skin.bake_deformation(
        target="PC2", frame_start=1, frame_end=3, filepath=str(path)
    ) == {"FINISHED"}
    pointcache = importlib.import_module(addon.__name__ + ".core.pointcache")
    np.testing.assert_allclose(pointcache.read_pc2(path)[0], expected, atol=1e-5 * diag)
