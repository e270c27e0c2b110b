"""Crowd preview: the real crowd shader (the animation texture GLSL decoders inside one instanced draw
call), read back one point per vertex and instance and held to the numpy decoders number for number,
as the skinning shader is; plus the preview's toggling, cleanup and compile errors.
"""

from __future__ import annotations

import importlib
import json
import math

import bpy
import numpy as np
import pytest
from mathutils import Euler, Matrix

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


def second_part(arm, name: str, matrix: Matrix):
    """A thin cylinder beside the first, with its own object transform, skinned to the same chain."""
    obj = make_cylinder(name, radius=0.1, height=1.6, rings=6, segments=8)
    obj.data.transform(Matrix.Translation((0.6, 0.0, 0.2)))
    obj.matrix_world = matrix
    bpy.context.view_layer.update()
    skin_to_chain(obj, arm)
    return obj


def vertex_data(obj) -> tuple[np.ndarray, np.ndarray]:
    """The mesh's own coordinates and vertex normals, read independently of the add-on."""
    n = len(obj.data.vertices)
    co, normals = np.empty(n * 3, np.float32), np.empty(n * 3, np.float32)
    obj.data.vertices.foreach_get("co", co)
    obj.data.vertex_normals.foreach_get("vector", normals)
    return co.reshape(n, 3), normals.reshape(n, 3)


def decoded_crowd(core, crowd_core, texture, meta, parts, layout, seconds, factor):
    """``(instances, vertices, 3)`` scene positions and unit normals from the numpy decoders: each
    instance at its own clip and sample, each part placed by its object matrix, the instance offset added."""
    samples = crowd_core.instance_samples(layout, meta["clips"], seconds)
    decode = importlib.import_module(core.__name__ + ".decode")
    positions, normals = [], []
    for i, sample in enumerate(samples):
        clip = int(layout.clips[i])
        at = np.array([sample])
        placed_p, placed_n = [], []
        local = []
        if meta["kind"] == "VERTEX":
            base = np.concatenate([vertex_data(obj)[0] for obj in parts])
            # the decoder takes every item's rest; items past the vertices (further corner normal
            # groups of flat or sharp faces) are not drawn by the preview, so theirs is left at 0
            rest = np.zeros((texture.layout.item_count, 3), np.float32)
            rest[: len(base)] = base
            p, n = core.decode_vertex_frames(texture, rest, clip, at)
            start = 0
            for obj in parts:
                count = len(obj.data.vertices)
                local.append((p[0, start : start + count], n[0, start : start + count]))
                start += count
        else:
            frames = core.decode_bone_frames(texture, clip, at)
            for obj in parts:
                rest, rest_n = vertex_data(obj)
                idx, w = (
                    point_colors(obj, name) for name in ("animtex_bone_indices", "animtex_bone_weights")
                )
                f = factor
                if factor < 0:  # Auto: the core's factors of the decoded Auto data (core/animtex/auto.py)
                    auto = importlib.import_module(core.__name__ + ".auto")
                    data = auto.decode_auto(texture, clip, at)
                    rest_data = point_colors(obj, "animtex_auto_rest")
                    f = auto.texture_factors(texture, data, idx.astype(np.int32), w, rest_data)
                p, n = decode.skin_with_bone_frames(frames, rest, idx.astype(int), w, f, rest_n)
                local.append((p[0], n[0]))
        for obj, (p, n) in zip(parts, local):
            m = np.array(obj.matrix_world)
            placed_p.append(p.astype(np.float64) @ m[:3, :3].T + m[:3, 3] + layout.offsets[i])
            cofactor = np.linalg.det(m[:3, :3]) * np.linalg.inv(m[:3, :3]).T
            world_n = n.astype(np.float64) @ cofactor.T
            placed_n.append(world_n / np.linalg.norm(world_n, axis=1, keepdims=True))
        positions.append(np.concatenate(placed_p))
        normals.append(np.concatenate(placed_n))
    return np.array(positions), np.array(normals)


def point_colors(obj, name: str) -> np.ndarray:
    values = np.empty(len(obj.data.vertices) * 4, np.float32)
    obj.data.attributes[name].data.foreach_get("color", values)
    return values.reshape(-1, 4)


POSITION_TOL = 1e-5  # x the crowd's extent: float32 on the GPU against float64 decoders
NORMAL_TOL = 1e-5  # unit normals, absolute


@pytest.mark.parametrize(
    ("kind", "precision", "auto"),
    [("VERTEX", "PNG16", False), ("BONE_DQ", "PNG16", False), ("BONE_MATRIX", "EXR16", False),
     ("BONE_DQ", "EXR16", True)],  # fmt: skip
)
def test_the_crowd_shader_plays_what_the_numpy_decoders_decode(
    gpu_context, modules, tmp_path, kind, precision, auto
):
    """Every vertex of every instance, read back from the crowd shader (one point each into an RGBA32F
    target), equals the numpy decoders' value at that instance's clip and time: two parts with their own
    object transforms, clips of different lengths, looping and not; ``auto``: the meshes in factor mode
    Auto, so the bake carries Auto and the preview plays each vertex's Auto factor."""
    crowd, core = modules
    crowd_core = importlib.import_module(core.__name__ + ".crowd")
    arm, body = swinging_character("Crowd")
    body.matrix_world = Matrix.LocRotScale((0.2, -0.1, 0.3), Euler((0.2, -0.3, 0.5)), (1.1, 0.9, 1.2))
    bpy.context.view_layer.update()
    # Bone textures hold one palette in mesh space: every part must sit alike relative to the armature.
    other = Matrix.LocRotScale((1.0, 0.5, 0.0), Euler((0.0, 0.4, -0.2)), (0.8, 0.8, 1.3))
    part = second_part(arm, "CrowdThin", body.matrix_world.copy() if kind != "VERTEX" else other)
    bpy.data.actions["Left"].use_frame_range = bpy.data.actions["Left"].use_cyclic = True  # one loop
    for obj in (body, part) if auto else ():
        obj.hybrid_skin.factor_mode = "AUTO"
    assert bpy.ops.hybrid_skin.bake_animation_texture(
        directory=str(tmp_path), kind=kind, precision=precision, action_source="ALL"
    ) == {"FINISHED"}
    meta = core.loads((tmp_path / f"{arm.name}_{kind.lower()}.json").read_text())
    texture = core.texture_from_metadata(meta, crowd.read_image(str(tmp_path / meta["image"])))
    assert bool(meta.get("auto")) == auto
    preview = crowd.preview_for(arm, bpy.context.scene, count=7, spacing=3.0, seed=3)
    assert (preview.deform_factor < 0) == auto  # Auto: each vertex's own factor
    parts = sorted([body, part], key=lambda o: o.name)
    try:
        for seconds in (0.0, 0.21, 1.37):  # 1.37 s wraps the loop and replays the other clip
            want_p, want_n = decoded_crowd(
                core, crowd_core, texture, meta, parts, preview.layout, seconds, preview.deform_factor
            )
            got_p = preview.readback_vertices(seconds)
            got_n = preview.readback_vertices(seconds, normals=True)
            np.testing.assert_allclose(got_p, want_p, rtol=0, atol=POSITION_TOL * np.abs(want_p).max())
            np.testing.assert_allclose(got_n, want_n, rtol=0, atol=NORMAL_TOL)
        # the time matters (else a decoder ignoring it would pass): the same crowd a moment later
        later = decoded_crowd(
            core, crowd_core, texture, meta, parts, preview.layout, 0.5, preview.deform_factor
        )
        assert np.abs(later[0] - want_p).max() > 0.05
        # The lit draw call itself shows every instance (ids of the pick mode, seen from above).
        ids = preview.readback(top_view(8.0), 0.21, size=128)[..., 3].astype(int)
        assert set(np.unique(ids)) == set(range(8))
    finally:
        preview.free()


def test_the_vertex_columns_are_the_shader_inputs(modules):
    """The crowd's vertex buffer (numpy, core) carries exactly the inputs the shader declares, integers as
    integers: Blender binds them by name, so a renamed or mistyped column would draw garbage."""
    crowd, core = modules
    shaders = crowd.shaders
    crowd_core = importlib.import_module(core.__name__ + ".crowd")
    part = {
        "positions": np.zeros((3, 3)),
        "normals": np.zeros((3, 3)),
        "triangles": [[0, 1, 2]],
        "items": [0, 1, 2],
    }
    columns, _ = crowd_core.crowd_vertices([part])
    assert list(columns) == [name for _kind, name in shaders.CROWD_VERTEX_INPUTS]
    for kind, name in shaders.CROWD_VERTEX_INPUTS:
        assert (columns[name].dtype == np.int32) == kind.startswith(("INT", "IVEC")), name


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
    assert bpy.ops.hybrid_skin.crowd_preview(count=1000) == {"FINISHED"}
    state = crowd._state()
    assert crowd.is_active() and len(state.crowd_handles) == 2
    handles = list(state.crowd_handles)
    preview = state.crowd
    preview.draw(top_view(80.0), 0.0)
    assert preview.count == 1000 and "1,000 instances" in crowd.stats_line()
    assert bpy.ops.hybrid_skin.crowd_preview() == {"FINISHED"}  # toggles off
    assert not crowd.is_active() and state.crowd_handles == [] and preview.batch is None  # GPU objects freed
    for handle in handles:  # both draw callbacks are gone: removing them again fails
        with pytest.raises(ValueError):
            bpy.types.SpaceView3D.draw_handler_remove(handle, "WINDOW")
    with pytest.raises(RuntimeError, match="no animation texture bake"):
        bpy.context.view_layer.objects.active = make_chain_armature("Unbaked", [1.0])
        bpy.ops.hybrid_skin.crowd_preview()


@pytest.mark.parametrize("gone", ["folder moved", "texture deleted", "sidecar damaged"])
def test_a_bake_whose_files_are_gone_is_one_sentence_naming_them(gpu_context, modules, tmp_path, gone):
    """The folder moved after the bake was told "has no animation texture bake: bake one first" (false);
    a deleted texture reached the catch-all ("please report this") with a traceback; so would a sidecar
    overwritten by something else."""
    arm, _obj = swinging_character("Gone")
    folder = tmp_path / "bake"
    folder.mkdir()
    bpy.ops.hybrid_skin.bake_animation_texture(directory=str(folder), kind="VERTEX", precision="PNG8")
    image = folder / f"{arm.name}_vertex.png"
    assert image.is_file()
    if gone == "folder moved":
        folder.rename(tmp_path / "elsewhere")
        missing, message = folder / f"{arm.name}_vertex.json", "is not where it was written"
    elif gone == "texture deleted":
        image.unlink()
        missing, message = image, "The texture of the last bake"
    else:
        missing = folder / f"{arm.name}_vertex.json"
        missing.write_text('{"format": "something else"}', encoding="utf-8")
        message = "is not a sidecar this add-on can read"
    with pytest.raises(RuntimeError) as info:
        bpy.ops.hybrid_skin.crowd_preview()
    text = str(info.value)
    assert message.lower() in text.lower() and str(missing) in text, text
    assert "report" not in text and text.strip().count("\n") == 0, text
    assert not modules[0].is_active()


@pytest.mark.parametrize("where", ["parent folder", "absolute path", "link out of the folder", "subfolder"])
def test_the_preview_reads_only_files_beside_the_sidecar(gpu_context, modules, tmp_path, where):
    """A sidecar names its texture; one that names a file elsewhere (damaged, or not the add-on's) is
    refused in one sentence, although a readable texture is there, and nothing is shown."""
    arm, _obj = swinging_character("Beside")
    folder = tmp_path / "bake"
    folder.mkdir()
    bpy.ops.hybrid_skin.bake_animation_texture(directory=str(folder), kind="VERTEX", precision="PNG8")
    sidecar, image = folder / f"{arm.name}_vertex.json", folder / f"{arm.name}_vertex.png"
    outside = tmp_path / "outside.png"
    outside.write_bytes(image.read_bytes())  # a texture the preview could read, were it allowed to
    names = {
        "parent folder": "../outside.png",
        "absolute path": str(outside),
        "link out of the folder": "link.png",
        "subfolder": "sub/outside.png",
    }
    if where == "link out of the folder":
        (folder / "link.png").symlink_to(outside)
    if where == "subfolder":
        (folder / "sub").mkdir()
        (folder / "sub" / "outside.png").write_bytes(image.read_bytes())
    meta = json.loads(sidecar.read_text(encoding="utf-8"))
    meta["image"] = names[where]
    sidecar.write_text(json.dumps(meta), encoding="utf-8")
    with pytest.raises(RuntimeError) as info:
        bpy.ops.hybrid_skin.crowd_preview()
    text = str(info.value)
    sentence = f"{sidecar} names its texture {names[where]!r}, which is not a file in its own folder"
    assert sentence in text, text
    assert text.strip().count("\n") == 0 and "report" not in text
    assert not modules[0].is_active()


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
