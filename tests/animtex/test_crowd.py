"""Crowd preview: one instanced draw call of the real crowd shader, read back and held to the numpy decoders.

Each instance's pixels (scene position + instance number, from a float offscreen target seen from above)
must lie on that instance's mesh as the core decoders place it at its own clip and time offset.
"""

from __future__ import annotations

import importlib
import math

import bpy
import numpy as np
import pytest

from tests.support.scenes import make_chain_armature, make_cylinder, skin_to_chain

pytestmark = pytest.mark.gpu


@pytest.fixture(scope="module")
def modules(addon):
    """The installed crowd preview module and the core's animation textures."""
    return (
        importlib.import_module(addon.__name__ + ".animtex.crowd"),
        importlib.import_module(addon.__name__ + ".core.animtex"),
    )


def swinging_character(name: str):
    """A bent cylinder with two clips (swing left, swing right) of different lengths."""
    arm = make_chain_armature(f"{name}Rig", [1.0, 1.0])
    obj = make_cylinder(name, rings=8, segments=12)
    skin_to_chain(obj, arm)
    pb = arm.pose.bones["Bone1"]
    pb.rotation_mode = "XYZ"
    arm.animation_data_create()
    for action_name, keys in (("Left", {1: 0, 9: 90}), ("Right", {1: 0, 5: -80, 13: 0})):
        action = bpy.data.actions.new(action_name)
        arm.animation_data.action = action
        for frame, angle in keys.items():
            pb.rotation_euler = (math.radians(angle), 0.0, 0.0)
            pb.keyframe_insert("rotation_euler", frame=frame)
    bpy.context.view_layer.objects.active = arm
    return arm, obj


def top_view(half: float) -> np.ndarray:
    """Orthographic camera looking down -Z at the square [-half, half]²; higher z is nearer."""
    return np.diag([1.0 / half, 1.0 / half, -1.0 / 50.0, 1.0])


@pytest.mark.parametrize("kind", ["VERTEX", "BONE_DQ"])
def test_one_instanced_draw_matches_the_decoders(gpu_context, modules, tmp_path, kind):
    crowd, core = modules
    arm, obj = swinging_character("Crowd")
    assert bpy.ops.hybrid_skin.bake_animation_texture(
        directory=str(tmp_path), kind=kind, precision="PNG16", action_source="ALL"
    ) == {"FINISHED"}
    preview = crowd.preview_for(arm, bpy.context.scene, count=9, spacing=5.0, seed=3)
    seconds = 0.21
    image = preview.readback(top_view(8.0), seconds, size=192)
    ids = image[..., 3].astype(int)
    assert set(np.unique(ids)) == set(range(10))  # background + all 9 instances visible
    meta_path = tmp_path / f"{arm.name}_{kind.lower()}.json"
    meta = core.loads(meta_path.read_text())
    texture = core.texture_from_metadata(meta, crowd.read_image(str(tmp_path / meta["image"])))
    rest = np.array([v.co[:] for v in obj.data.vertices], np.float32)
    world = np.array(obj.matrix_world)
    layout = preview.layout
    for i in range(9):
        clip = texture.clips[layout.clips[i]]
        t = seconds + layout.time_offsets[i]
        period = (clip.frame_count - 1) / clip.sample_rate
        sample = (t % period) * clip.sample_rate
        if kind == "VERTEX":
            positions, _ = core.decode_vertex_frames(texture, rest, int(layout.clips[i]), np.array([sample]))
        else:
            skin = importlib.import_module(core.__name__ + ".decode").skin_with_bone_frames
            frames = core.decode_bone_frames(texture, int(layout.clips[i]), np.array([sample]))
            idx = np.empty(len(rest) * 4, np.float32)
            w = np.empty(len(rest) * 4, np.float32)
            obj.data.attributes["animtex_bone_indices"].data.foreach_get("color", idx)
            obj.data.attributes["animtex_bone_weights"].data.foreach_get("color", w)
            positions, _ = skin(frames, rest, idx.reshape(-1, 4).astype(int), w.reshape(-1, 4), 0.5)
        expected = positions[0] @ world[:3, :3].T + world[:3, 3] + layout.offsets[i]
        drawn = image[ids == i + 1][:, :3]
        # Every pixel lies on this instance's decoded mesh (within the facet size), and it is drawn where it
        # should be: the drawn extent matches the decoded one seen from above.
        lo, hi = expected.min(0), expected.max(0)
        assert np.all(drawn >= lo - 0.05) and np.all(drawn <= hi + 0.05), i
        pixel = 16.0 / 192
        np.testing.assert_allclose(drawn[:, :2].min(0), lo[:2], atol=2 * pixel)
        np.testing.assert_allclose(drawn[:, :2].max(0), hi[:2], atol=2 * pixel)


def test_a_bake_at_deform_factor_zero_plays_lbs(gpu_context, modules, tmp_path):
    """The preview took the sidecar's factor with ``value or 0.5``, turning an LBS bake (f = 0) into 0.5."""
    crowd, core = modules
    arm, obj = swinging_character("Lbs")
    obj.hybrid_skin.deform_factor = 0.0
    bpy.ops.hybrid_skin.bake_animation_texture(directory=str(tmp_path), kind="BONE_DQ", precision="EXR32")
    meta = core.loads((tmp_path / f"{arm.name}_bone_dq.json").read_text())
    assert meta["deform_factor"]["value"] == 0.0
    preview = crowd.preview_for(arm, bpy.context.scene, count=4)
    try:
        assert preview.deform_factor == 0.0
    finally:
        preview.free()


def test_toggle_and_clean_removal(gpu_context, modules, tmp_path):
    crowd, _core = modules
    arm, _obj = swinging_character("Toggle")
    assert not crowd.is_active() and crowd.stats_line() == "Crowd preview off"  # off by default
    bpy.ops.hybrid_skin.bake_animation_texture(directory=str(tmp_path), kind="VERTEX", precision="PNG8")
    handlers = bpy.types.SpaceView3D
    assert bpy.ops.hybrid_skin.crowd_preview(count=1000) == {"FINISHED"}
    state = crowd.runtime.get()
    assert crowd.is_active() and len(state.crowd_handles) == 2
    preview = state.crowd
    preview.draw(top_view(80.0), 0.0)
    assert preview.count == 1000 and "1,000 instances" in crowd.stats_line()
    assert bpy.ops.hybrid_skin.crowd_preview() == {"FINISHED"}  # toggles off
    assert not crowd.is_active() and state.crowd_handles == [] and handlers is bpy.types.SpaceView3D
    with pytest.raises(RuntimeError, match="no animation texture bake"):
        bpy.context.view_layer.objects.active = make_chain_armature("Unbaked", [1.0])
        bpy.ops.hybrid_skin.crowd_preview()


@pytest.mark.parametrize(
    ("variant", "broken_file", "line"),
    [
        ("vertex", "animtex_crowd_frag.glsl", "FragColor = "),
        ("bone", "animtex_crowd_vert.glsl", "instance_id = "),
    ],
)
def test_compile_error_names_the_crowd_files_and_carries_the_log(
    gpu_context, modules, monkeypatch, variant, broken_file, line
):
    crowd, _core = modules
    shaders = crowd.shaders
    real_read = shaders._read

    def broken(name: str) -> str:
        source = real_read(name)
        if name != broken_file:
            return source
        return source.replace(line, f"{line}crowd_no_such_function() + ", 1)

    shaders.clear_cache("crowd")
    monkeypatch.setattr(shaders, "_read", broken)
    with pytest.raises(shaders.ShaderCompileError) as error:
        shaders.get("crowd", variant)
    message = str(error.value)
    assert f"hybrid_skin crowd/{variant}" in message and broken_file in message
    assert "animtex_vertex.glsl (lines 1-" in message and "animtex_crowd_vert.glsl (from line" in message
    assert ("animtex_bone.glsl" in message) == (variant == "bone")
    assert "crowd_no_such_function" in message  # Blender's compiler log, not just "see console"
    monkeypatch.undo()
    shaders.clear_cache("crowd")
    assert shaders.get("crowd", variant) is shaders.get("crowd", variant)  # compiles, then cached


def test_clear_cache_frees_the_crowd_programs(gpu_context, modules):
    shaders = modules[0].shaders
    programs = {variant: shaders.get("crowd", variant) for variant in shaders.CROWD_VARIANTS}
    assert all(isinstance(p, shaders.CrowdProgram) for p in programs.values())
    viewport = shaders.get("viewport", "hybrid")
    shaders.clear_cache("viewport")  # one kind at a time ...
    assert shaders.get("crowd", "vertex") is programs["vertex"]
    shaders.clear_cache("crowd")
    assert all(shaders.get("crowd", v) is not p for v, p in programs.items())
    assert shaders.get("viewport", "hybrid") is not viewport
    cached = shaders.get("crowd", "bone")
    shaders.clear_cache()  # ... or all of them (unregister)
    assert shaders.get("crowd", "bone") is not cached
    with pytest.raises(ValueError, match="unknown crowd shader variant 'hybrid'"):
        shaders.get("crowd", "hybrid")
