"""Bake to shape keys / point caches: the baked result plays the hybrid, and nothing of the user's is lost."""

from __future__ import annotations

import math

import bpy
import numpy as np
import pytest
from mathutils.kdtree import KDTree

from tests.skin.test_operators import snapshot
from tests.support.assets import clip_action, import_gltf, play
from tests.support.scenes import (
    bbox_diagonal,
    evaluated_positions,
    make_chain_armature,
    make_cylinder,
    native_positions,
    skin_to_chain,
)

FRAMES = list(range(1, 13, 1))


def key_arrays(obj) -> dict:
    """Every user shape key's data, value, mute, relative key and vertex group, bit for bit."""
    key = obj.data.shape_keys
    if key is None:
        return {}
    out = {}
    for kb in key.key_blocks:
        co = np.empty(len(kb.data) * 3, np.float32)
        kb.data.foreach_get("co", co)
        out[kb.name] = (co.tobytes(), kb.value, kb.mute, kb.relative_key.name, kb.vertex_group, kb.slider_max)
    return out


def fcurve_dump(id_data) -> dict:
    from bl_ext.user_default.hybrid_skin.rig.baked import fcurves as _fcurves

    curves = _fcurves(id_data)
    if curves is None:
        return {}
    return {fc.data_path: [tuple(p.co) + (p.interpolation,) for p in fc.keyframe_points] for fc in curves}


@pytest.fixture
def animated():
    """Two-bone cylinder with a bend+twist animation and the user's own animated shape key and driver."""
    arm = make_chain_armature("Rig", [1.0, 1.0])
    cyl = make_cylinder("Cylinder")
    skin_to_chain(cyl, arm)
    pb = arm.pose.bones["Bone1"]
    pb.rotation_mode = "XYZ"
    for frame, angles in ((1, (0, 0, 0)), (6, (100, 0, 90)), (12, (40, 0, 170))):
        pb.rotation_euler = [math.radians(a) for a in angles]
        pb.keyframe_insert("rotation_euler", frame=frame)
    cyl.shape_key_add(name="Basis")
    bulge = cyl.shape_key_add(name="Bulge")
    co = np.array([v.co[:] for v in cyl.data.vertices])
    co[:, :2] *= 1.0 + 0.3 * np.exp(-((co[:, 2] - 0.5) ** 2) / 0.05)[:, None]
    bulge.data.foreach_set("co", co.ravel())
    bulge.value = 0.0
    bulge.keyframe_insert("value", frame=1)
    bulge.value = 1.0
    bulge.keyframe_insert("value", frame=12)
    driven = cyl.shape_key_add(name="Driven")
    fcurve = driven.driver_add("value")
    fcurve.driver.expression = "0.25"
    bpy.context.view_layer.objects.active = cyl
    bpy.ops.hybrid_skin.add()
    cyl.hybrid_skin.deform_factor = 0.6
    return arm, cyl


def truth(api, obj, frames) -> dict[int, tuple[np.ndarray, np.ndarray]]:
    """Core and Blender-native hybrid positions per frame, taken before anything is baked."""
    out = {}
    f = obj.hybrid_skin.deform_factor
    for frame in frames:
        bpy.context.scene.frame_set(frame)
        out[frame] = (api.deformed_positions(obj), native_positions(obj, f))
    return out


def test_shape_key_bake_plays_the_hybrid_and_keeps_user_data(addon, animated):
    arm, cyl = animated
    expected = truth(addon.api, cyl, FRAMES)
    diag = bbox_diagonal(expected[1][0])
    user_keys, user_curves = key_arrays(cyl), fcurve_dump(cyl.data.shape_keys)
    assert bpy.ops.hybrid_skin.bake_deformation(frame_start=1, frame_end=12) == {"FINISHED"}
    baked_names = [k for k in cyl.data.shape_keys.key_blocks.keys() if k.startswith("HS Bake")]
    assert len(baked_names) == len(FRAMES)
    assert not cyl.modifiers["Armature"].show_viewport and not cyl.modifiers["Armature"].show_render
    for frame in FRAMES:
        bpy.context.scene.frame_set(frame)
        shown = evaluated_positions(cyl)
        core, native = expected[frame]
        assert np.abs(shown - core).max() <= 1e-5 * diag, f"frame {frame} vs core"
        assert np.abs(shown - native).max() <= 1e-5 * diag, f"frame {frame} vs Blender's mix"
    # Between baked frames the keys blend linearly.
    bpy.context.scene.frame_set(3, subframe=0.5)
    mid = evaluated_positions(cyl)
    assert np.isfinite(mid).all()
    # The user's keys, values, driver and keyframes are untouched, bit for bit.
    bpy.context.scene.frame_set(FRAMES[-1])
    now = key_arrays(cyl)
    assert {k: v for k, v in now.items() if not k.startswith("HS Bake")} == user_keys
    curves = fcurve_dump(cyl.data.shape_keys)
    assert {k: v for k, v in curves.items() if "HS Bake" not in k} == user_curves
    assert cyl.data.shape_keys.animation_data.drivers[0].driver.expression == "0.25"

    # Baking again replaces only our keys.
    bpy.ops.hybrid_skin.bake_deformation(frame_start=1, frame_end=12, frame_step=3)
    assert [k for k in cyl.data.shape_keys.key_blocks.keys() if k.startswith("HS Bake")] == [
        f"HS Bake {f:04d}" for f in (1, 4, 7, 10)
    ]
    bpy.context.scene.frame_set(7)
    assert np.abs(evaluated_positions(cyl) - expected[7][0]).max() <= 1e-5 * diag

    # Clearing restores the stack and the keys exactly; the (Evaluated) display comes back.
    bpy.ops.hybrid_skin.clear_bake()
    bpy.context.scene.frame_set(FRAMES[-1])  # user_keys was read there (its Bulge value is animated)
    assert key_arrays(cyl) == user_keys
    assert fcurve_dump(cyl.data.shape_keys) == user_curves
    assert cyl.modifiers["Armature"].show_render and cyl.modifiers["Armature"].show_viewport
    assert cyl.modifiers.get("HybridSkin DQS") is not None
    assert np.abs(evaluated_positions(cyl) - addon.api.deformed_positions(cyl)).max() <= 1e-5 * diag
    bpy.ops.hybrid_skin.remove()
    assert cyl.modifiers["Armature"].show_viewport and cyl.display_type == "TEXTURED"


def test_current_frame_bake_and_api_ignores_its_own_keys(addon, animated):
    arm, cyl = animated
    bpy.context.scene.frame_set(6)
    expected = addon.api.deformed_positions(cyl)
    bpy.ops.hybrid_skin.bake_deformation(target="CURRENT")
    assert cyl.data.shape_keys.key_blocks["HS Bake Frame 6"].value == 1.0
    np.testing.assert_allclose(evaluated_positions(cyl), expected, atol=1e-5)
    # The API still skins the rest input (not our baked key on top of it).
    np.testing.assert_allclose(addon.api.deformed_positions(cyl), expected, atol=1e-5)


@pytest.mark.parametrize("fmt", ["PC2", "MDD"])
def test_point_cache_bake(addon, animated, tmp_path, fmt):
    arm, cyl = animated
    from bl_ext.user_default.hybrid_skin.core import pointcache

    expected = truth(addon.api, cyl, FRAMES)
    diag = bbox_diagonal(expected[1][0])
    before = snapshot(cyl)
    path = tmp_path / f"cyl.{fmt.lower()}"
    bpy.ops.hybrid_skin.bake_deformation(
        target=fmt, frame_start=1, frame_end=12, frame_step=1, filepath=str(path)
    )
    data = pointcache.read_pc2(path)[0] if fmt == "PC2" else pointcache.read_mdd(path)[0]
    np.testing.assert_allclose(data, np.stack([expected[f][0] for f in FRAMES]), atol=1e-6)
    for frame in FRAMES:
        bpy.context.scene.frame_set(frame)
        assert np.abs(evaluated_positions(cyl) - expected[frame][1]).max() <= 1e-5 * diag
    bpy.ops.hybrid_skin.clear_bake()
    assert snapshot(cyl) == before
    assert path.exists()  # the user's file stays


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"frame_start": 10, "frame_end": 2}, "reversed"),
        ({"frame_step": 0}, "at least 1"),
        ({"target": "PC2", "filepath": "/proc/version/x.pc2"}, "Cannot write"),
    ],
)
def test_bake_bad_input_changes_nothing(addon, animated, kwargs, message):
    arm, cyl = animated
    before, keys = snapshot(cyl), key_arrays(cyl)
    with pytest.raises(RuntimeError, match=message):
        bpy.ops.hybrid_skin.bake_deformation(**kwargs)
    assert snapshot(cyl) == before and key_arrays(cyl) == keys


@pytest.mark.parametrize("target", ["SHAPE_KEYS", "CURRENT"])
def test_bake_with_a_missing_factor_group_reports_and_changes_nothing(addon, animated, target):
    """The scene fails mid-bake (here: each frame resolves the object's factor): one clear message, the
    scene and frame as before, no traceback."""
    arm, cyl = animated
    bpy.context.scene.frame_set(4)
    settings = cyl.hybrid_skin
    settings.factor_vertex_group, settings.factor_mode = "Missing", "VERTEX_GROUP"
    before, keys = snapshot(cyl), key_arrays(cyl)
    message = "'Cylinder': factor vertex group 'Missing' does not exist"
    with pytest.raises(RuntimeError, match=message) as error:
        bpy.ops.hybrid_skin.bake_deformation(target=target)
    assert "Traceback" not in str(error.value)  # an operator report, not a Python exception
    assert snapshot(cyl) == before and key_arrays(cyl) == keys
    assert not settings.bake_state and bpy.context.scene.frame_current == 4
    assert cyl.modifiers.get("HybridSkin DQS") is not None  # the display is set up again


def test_bake_needs_hybrid_skin(addon):
    arm = make_chain_armature("Rig", [1.0, 1.0])
    cyl = make_cylinder("Plain")
    skin_to_chain(cyl, arm)
    bpy.context.view_layer.objects.active = cyl
    with pytest.raises(RuntimeError, match="does not use Hybrid Skin"):
        bpy.ops.hybrid_skin.bake_deformation()
    assert cyl.data.shape_keys is None


def test_robot_expressive_bake(addon, assets):
    arm, skinned = import_gltf(assets / "RobotExpressive.glb")
    play(arm, clip_action("Punch"), 1)
    frames = [2, 5, 9]
    for obj in skinned:
        bpy.context.view_layer.objects.active = obj
        bpy.ops.hybrid_skin.add()
        obj.hybrid_skin.deform_factor = 0.7
        expected = truth(addon.api, obj, frames)
        bpy.ops.hybrid_skin.bake_deformation(frame_start=2, frame_end=9)
        diag = bbox_diagonal(expected[2][0])
        for frame in frames:
            bpy.context.scene.frame_set(frame)
            shown = evaluated_positions(obj)
            assert np.abs(shown - expected[frame][1]).max() <= 1e-5 * diag, f"{obj.name} frame {frame}"


def test_undo_after_bake_restores_the_mesh(addon, animated):
    arm, cyl = animated
    bpy.context.scene.frame_set(1)
    before, keys = snapshot(cyl), key_arrays(cyl)
    bpy.ops.ed.undo_push(message="before bake")
    assert bpy.ops.hybrid_skin.bake_deformation("EXEC_DEFAULT", True, frame_start=1, frame_end=4) == {
        "FINISHED"
    }
    assert any(
        k.startswith("HS Bake") for k in bpy.data.objects["Cylinder"].data.shape_keys.key_blocks.keys()
    )
    bpy.ops.ed.undo()
    cyl = bpy.data.objects["Cylinder"]  # undo reloads data: old references are invalid
    bpy.context.scene.frame_set(1)
    assert key_arrays(cyl) == keys
    assert snapshot(cyl) == before
    assert not cyl.hybrid_skin.bake_state


def render_png(path) -> np.ndarray:
    scene = bpy.context.scene
    scene.render.filepath = str(path)
    bpy.ops.render.render(write_still=True)
    image = bpy.data.images.load(str(path))
    pixels = np.empty(len(image.pixels), np.float32)
    image.pixels.foreach_get(pixels)
    bpy.data.images.remove(image)
    return pixels.reshape(scene.render.resolution_y, scene.render.resolution_x, 4)


def test_final_render_of_bake_matches_render_of_native_mix(addon, animated, tmp_path):
    arm, cyl = animated
    scene = bpy.context.scene
    scene.render.engine = "BLENDER_WORKBENCH"
    scene.render.resolution_x = scene.render.resolution_y = 96
    scene.render.image_settings.file_format = "PNG"
    cam = bpy.data.objects.new("Cam", bpy.data.cameras.new("Cam"))
    scene.collection.objects.link(cam)
    cam.location = (4.5, -4.5, 2.5)
    cam.rotation_euler = (math.radians(70), 0, math.radians(45))
    scene.camera = cam
    scene.frame_set(6)
    cyl.hybrid_skin.display = "EVALUATED"  # Blender's own two-modifier hybrid: the reference render
    native = render_png(tmp_path / "native.png")
    bpy.ops.hybrid_skin.bake_deformation(frame_start=1, frame_end=12)
    scene.frame_set(6)
    baked = render_png(tmp_path / "baked.png")
    cyl.hybrid_skin.deform_factor = 0.0  # sanity: a different factor renders visibly differently
    bpy.ops.hybrid_skin.clear_bake()
    scene.frame_set(6)
    lbs = render_png(tmp_path / "lbs.png")
    diff = np.abs(baked[..., :3] - native[..., :3])
    assert diff.max() <= 2 / 255 and diff.mean() <= 1e-4, (diff.max(), diff.mean())
    assert np.abs(lbs[..., :3] - native[..., :3]).max() > 0.1  # the comparison can fail


def test_gltf_export_of_baked_animation_replays_the_same_positions(addon, animated, tmp_path):
    arm, cyl = animated
    frames = [1, 4, 8, 12]
    expected = truth(addon.api, cyl, frames)
    bpy.ops.hybrid_skin.bake_deformation(frame_start=1, frame_end=12)
    world = np.array(cyl.matrix_world)
    bpy.ops.object.select_all(action="DESELECT")
    cyl.select_set(True)
    path = tmp_path / "baked.glb"
    bpy.ops.export_scene.gltf(
        filepath=str(path),
        use_selection=True,
        export_skins=False,
        export_morph=True,
        export_animations=True,
        export_animation_mode="SCENE",
        export_force_sampling=True,
    )
    before = set(bpy.data.objects)
    bpy.ops.import_scene.gltf(filepath=str(path))
    imported = next(o for o in bpy.data.objects if o not in before and o.type == "MESH")
    assert len(imported.data.shape_keys.key_blocks) >= len(FRAMES)
    mapping = None
    for frame in frames:
        bpy.context.scene.frame_set(frame)
        got = evaluated_positions(imported) @ np.array(imported.matrix_world)[:3, :3].T
        got += np.array(imported.matrix_world)[:3, 3]
        want = expected[frame][0] @ world[:3, :3].T + world[:3, 3]
        if mapping is None:  # glTF splits vertices at sharp edges: map each back to its original
            tree = KDTree(len(want))
            for i, co in enumerate(want):
                tree.insert(co, i)
            tree.balance()
            mapping = np.array([tree.find(co)[1] for co in got])
        assert np.abs(got - want[mapping]).max() <= 1e-4 * bbox_diagonal(want), f"frame {frame}"


def test_remove_clears_a_bake_and_restores_everything(addon, animated):
    arm, cyl = animated
    bpy.ops.hybrid_skin.remove()
    bpy.context.scene.frame_set(1)
    before, keys = snapshot(cyl), key_arrays(cyl)
    bpy.ops.hybrid_skin.add()
    bpy.ops.hybrid_skin.bake_deformation(frame_start=1, frame_end=4)
    bpy.ops.hybrid_skin.remove()
    bpy.context.scene.frame_set(1)
    assert snapshot(cyl) == before and key_arrays(cyl) == keys
    assert cyl.modifiers["Armature"].show_viewport and cyl.modifiers["Armature"].show_render
