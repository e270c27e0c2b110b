"""The cross-fade GLSL (``shaders/animtex_*.glsl`` of the installed zip) computes what the numpy core does.

A test vertex stage runs the shipped decoders for one point per vertex into an RGBA32F target on Blender's
GPU backend (llvmpipe); the read-back positions and normals are held to
:mod:`hybrid_skin.core.animtex.crossfade` + ``skin_with_bone_frames`` on the synthetic rig of
:mod:`tests.engines.synthetic` (the engine ports' test rig: several clips, loops and clamps, fractional
samples, weights between 0 and 1 and at both ends). Tolerances: positions 5e-6 of the
mesh extent, unit normals 5e-6 (measured: at most 4e-7 and 1.1e-6): float32 decode arithmetic on the GPU
against the float64 numpy reference of the bone kinds, far below what the blend moves (checked: > 1e-2).
Weight 0 must give the plain one-clip functions' result bit for bit, and the UV map must find every
vertex's texels. A BONE_MATRIX rig with mirrored bones (negative determinant) checks that the shader
negates such a matrix before taking its rotation, as FORMAT.md section 5 and the reference do.
"""

from __future__ import annotations

import importlib
import math

import bpy  # noqa: F401  (the gpu module needs Blender loaded)
import gpu
import numpy as np
import pytest

from tests.engines.synthetic import CASES, VERTICES, scene

pytestmark = pytest.mark.gpu

TOL = 5e-6
WIDTH = 64  # readback target width: vertex i -> pixel (i % WIDTH, i // WIDTH)

MAIN = """
void main()
{
  AnimtexClip ca = animtex_clip(animation, clip_a);
  AnimtexClip cb = animtex_clip(animation, clip_b);
  vec3 p, n;
#ifdef BONES
  AnimtexBoneInfo info = animtex_bone_info(animation);
  if (mode == 2) {
    animtex_bone_skin(animation, info, ca, sample_a, bones, weights, deform_factor, rest_position,
                      rest_normal, p, n);
  }
  else {
    animtex_bone_skin_crossfade(animation, info, ca, sample_a, cb, sample_b, weight, bones, weights,
                                deform_factor, rest_position, rest_normal, p, n);
  }
#else
  AnimtexVertexInfo info = animtex_vertex_info(animation);
  if (mode == 2) {
    animtex_vertex_sample(animation, info, ca, item, sample_a, rest_position, p, n);
  }
  else {
    animtex_vertex_crossfade(animation, info, ca, sample_a, cb, sample_b, weight, item, rest_position, p, n);
  }
  if (mode == 3) {
    p = vec3(float(animtex_item_from_uv(animation, texel_uv, 2, info.items_per_row)), float(item), 0.0);
  }
#endif
  value = vec4(mode == 1 ? n : p, 1.0);
  ivec2 pixel = ivec2(gl_VertexID % target_width, gl_VertexID / target_width);
  vec2 size = vec2(float(target_width), float(target_height));
  gl_Position = vec4((vec2(pixel) + 0.5) / size * 2.0 - 1.0, 0.0, 1.0);
  gl_PointSize = 1.0;
}
"""

PUSH = [("INT", "clip_a"), ("FLOAT", "sample_a"), ("INT", "clip_b"), ("FLOAT", "sample_b"),
        ("FLOAT", "weight"), ("FLOAT", "deform_factor"), ("INT", "mode"), ("INT", "target_width"),
        ("INT", "target_height")]  # fmt: skip
INPUTS = [("VEC3", "rest_position"), ("VEC3", "rest_normal"), ("INT", "item"), ("VEC2", "texel_uv"),
          ("IVEC4", "bones"), ("VEC4", "weights")]  # fmt: skip


@pytest.fixture(scope="module")
def hs(addon):
    class Modules:
        animtex = importlib.import_module(addon.__name__ + ".core.animtex")
        crossfade = importlib.import_module(addon.__name__ + ".core.animtex.crossfade")
        shaders = importlib.import_module(addon.__name__ + ".draw.shaders")

    return Modules


def compile_shader(hs, bones: bool):
    folder = hs.shaders.shader_dir()
    bone_files = ["dual_quaternion_lib.glsl", "hybrid_skin_round.glsl", "animtex_bone.glsl"]
    files = ["animtex_vertex.glsl"] + (bone_files if bones else [])
    info = gpu.types.GPUShaderCreateInfo()
    if bones:
        info.define("BONES", "1")
    for type_, name in PUSH:
        info.push_constant(type_, name)
    info.sampler(0, "FLOAT_2D", "animation")
    for slot, (type_, name) in enumerate(INPUTS):
        info.vertex_in(slot, type_, name)
    interface = gpu.types.GPUStageInterfaceInfo("crossfade_test_interface")
    interface.flat("VEC4", "value")
    info.vertex_out(interface)
    info.fragment_out(0, "VEC4", "FragColor")
    info.vertex_source("\n".join((folder / f).read_text(encoding="utf-8") for f in files) + MAIN)
    info.fragment_source("void main() { FragColor = value; }")
    return gpu.shader.create_from_info(info)


def vertex_buffer(columns: dict[str, np.ndarray]) -> gpu.types.GPUVertBuf:
    fmt = gpu.types.GPUVertFormat()
    for name, values in columns.items():
        width = 1 if values.ndim == 1 else values.shape[1]
        integer = values.dtype == np.int32
        fmt.attr_add(id=name, comp_type="I32" if integer else "F32", len=width,
                     fetch_mode="INT" if integer else "FLOAT")  # fmt: skip
    vbo = gpu.types.GPUVertBuf(fmt, len(next(iter(columns.values()))))
    for name, values in columns.items():
        vbo.attr_fill(name, values)
    return vbo


def run(shader, texture, batch, count: int, **push) -> np.ndarray:
    """One point per vertex; ``(count, 3)`` float32 read back."""
    height = math.ceil(count / WIDTH)
    pixels = np.zeros((height, WIDTH, 4), np.float32)
    offscreen = gpu.types.GPUOffScreen(WIDTH, height, format="RGBA32F")
    try:
        with offscreen.bind():
            fb = gpu.state.active_framebuffer_get()
            fb.clear(color=(0.0, 0.0, 0.0, 0.0))
            gpu.state.depth_test_set("NONE")
            gpu.state.blend_set("NONE")
            gpu.state.point_size_set(1.0)
            shader.bind()
            for name, value in {**push, "target_width": WIDTH, "target_height": height}.items():
                (shader.uniform_int if isinstance(value, int) else shader.uniform_float)(name, value)
            shader.uniform_sampler("animation", texture)
            batch.draw(shader)
            fb.read_color(
                0, 0, WIDTH, height, 4, 0, "FLOAT", data=gpu.types.Buffer("FLOAT", pixels.shape, pixels)
            )
    finally:
        offscreen.free()
    flat = pixels.reshape(-1, 4)[:count]
    assert np.all(flat[:, 3] == 1.0), "some vertex was not drawn"
    return flat[:, :3]


def gpu_texture(channels: np.ndarray) -> gpu.types.GPUTexture:
    data = np.ascontiguousarray(channels, np.float32)
    buffer = gpu.types.Buffer("FLOAT", data.size, data.reshape(-1))
    return gpu.types.GPUTexture((data.shape[1], data.shape[0]), format="RGBA32F", data=buffer)


@pytest.mark.parametrize(("kind", "precision", "mirrored"), [
    ("VERTEX", "PNG16", False), ("BONE_MATRIX", "PNG16", False), ("BONE_MATRIX", "PNG16", True),
    ("BONE_DQ", "EXR16", False), ("BONE_DQ", "PNG8", False)])  # fmt: skip
def test_crossfade_glsl_matches_numpy(gpu_context, hs, kind, precision, mirrored):
    rig = scene(kind, precision, hs.animtex, mirrored=mirrored)
    tex, rest, normals, bones, weights = rig.texture, rig.rest, rig.normals, rig.bones, rig.weights
    channels = tex.channels()
    item = np.arange(VERTICES, dtype=np.int32)
    uv = tex.layout.item_uv() if kind == "VERTEX" else np.zeros((VERTICES, 2), np.float32)  # items = bones
    batch = gpu.types.GPUBatch(type="POINTS", buf=vertex_buffer({
        "rest_position": rest, "rest_normal": normals, "item": item, "texel_uv": uv,
        "bones": bones, "weights": weights,
    }))  # fmt: skip
    shader = compile_shader(hs, kind != "VERTEX")
    texture = gpu_texture(channels)
    extent = float(np.abs(rest).max())
    cf = hs.crossfade
    skin = importlib.import_module(hs.animtex.__name__ + ".decode").skin_with_bone_frames
    for clip_a, sample_a, clip_b, sample_b, w, factor in CASES:
        push = dict(clip_a=clip_a, sample_a=sample_a, clip_b=clip_b, sample_b=sample_b, weight=w)
        if kind != "VERTEX":  # the VERTEX stage has no deform factor (the compiler drops the constant)
            push["deform_factor"] = factor
        got_p = run(shader, texture, batch, VERTICES, mode=0, **push)
        got_n = run(shader, texture, batch, VERTICES, mode=1, **push)
        if kind == "VERTEX":
            want_p, want_n = cf.crossfade_vertex_frames(tex, rest, clip_a, sample_a, clip_b, sample_b, w)
            only_a, _ = hs.animtex.decode_vertex_frames(tex, rest, clip_a, sample_a)
        else:
            frames = cf.crossfade_bone_frames(tex, clip_a, sample_a, clip_b, sample_b, w)
            want_p, want_n = skin(frames, rest, bones, weights, factor, normals)
            only_a, _ = skin(
                hs.animtex.decode_bone_frames(tex, clip_a, sample_a), rest, bones, weights, factor
            )
        if w > 0:  # the blend really moves the mesh away from clip a
            assert np.abs(want_p[0] - only_a[0]).max() > 1e-2 * extent
        np.testing.assert_allclose(got_p, want_p[0], rtol=0, atol=TOL * extent)
        np.testing.assert_allclose(got_n, want_n[0], rtol=0, atol=TOL)
        # weight 0: exactly the plain one-clip decoder's result on the GPU
        zero = dict(push, weight=0.0)
        plain = run(shader, texture, batch, VERTICES, mode=2, **zero)
        np.testing.assert_array_equal(run(shader, texture, batch, VERTICES, mode=0, **zero), plain)
    if kind == "VERTEX":  # the texel UV map leads to each vertex's own texels
        found = run(shader, texture, batch, VERTICES, mode=3, **dict(push, weight=0.0))
        np.testing.assert_array_equal(found[:, 0], found[:, 1])


AUTO_MAIN = """
void main()
{
  AnimtexClip ca = animtex_clip(animation, clip_a);
  AnimtexClip cb = animtex_clip(animation, clip_b);
  AnimtexBoneInfo info = animtex_bone_info(animation);
  vec3 p, n;
  animtex_bone_skin_crossfade_auto(animation, info, ca, sample_a, cb, sample_b, weight, bones, weights,
                                   auto_rest_data, deform_factor, rest_position, rest_normal, p, n);
  value = vec4(mode == 1 ? n : p, 1.0);
  ivec2 pixel = ivec2(gl_VertexID % target_width, gl_VertexID / target_width);
  vec2 size = vec2(float(target_width), float(target_height));
  gl_Position = vec4((vec2(pixel) + 0.5) / size * 2.0 - 1.0, 0.0, 1.0);
  gl_PointSize = 1.0;
}
"""


def compile_auto_shader(hs):
    folder = hs.shaders.shader_dir()
    files = ["animtex_vertex.glsl", "dual_quaternion_lib.glsl", "hybrid_skin_round.glsl", "animtex_bone.glsl"]
    info = gpu.types.GPUShaderCreateInfo()
    for type_, name in PUSH:
        info.push_constant(type_, name)
    info.sampler(0, "FLOAT_2D", "animation")
    for slot, (type_, name) in enumerate([*INPUTS, ("VEC4", "auto_rest_data")]):
        info.vertex_in(slot, type_, name)
    interface = gpu.types.GPUStageInterfaceInfo("crossfade_auto_test_interface")
    interface.flat("VEC4", "value")
    info.vertex_out(interface)
    info.fragment_out(0, "VEC4", "FragColor")
    info.vertex_source("\n".join((folder / f).read_text(encoding="utf-8") for f in files) + AUTO_MAIN)
    info.fragment_source("void main() { FragColor = value; }")
    return gpu.shader.create_from_info(info)


@pytest.mark.parametrize(("kind", "precision"), [("BONE_DQ", "PNG16"), ("BONE_MATRIX", "EXR32")])
def test_auto_glsl_matches_numpy(gpu_context, hs, kind, precision):
    """A texture that carries Auto, played with Auto (a negative factor) and with a runtime factor: the
    shipped GLSL (hybrid_skin_round.glsl through animtex_bone.glsl) against the core's Auto factors
    (decoded, cross-faded data; autofactor.round_factors) and skinning; a texture without Auto asked for
    Auto plays its default factor."""
    auto = importlib.import_module(hs.animtex.__name__ + ".auto")
    skin = importlib.import_module(hs.animtex.__name__ + ".decode").skin_with_bone_frames
    shader = compile_auto_shader(hs)
    for rig in (scene(kind, precision, hs.animtex, auto=True), scene(kind, precision, hs.animtex)):
        tex = rig.texture
        n = VERTICES
        rest_data = rig.auto_rest if rig.auto_rest is not None else np.zeros((n, 4), np.float32)
        batch = gpu.types.GPUBatch(type="POINTS", buf=vertex_buffer({
            "rest_position": rig.rest, "rest_normal": rig.normals, "item": np.arange(n, dtype=np.int32),
            "texel_uv": np.zeros((n, 2), np.float32), "bones": rig.bones, "weights": rig.weights,
            "auto_rest_data": rest_data,
        }))  # fmt: skip
        texture = gpu_texture(tex.channels())
        extent = float(np.abs(rig.rest).max())
        for clip_a, sample_a, clip_b, sample_b, w, factor in rig.cases[:4] + ((0, 2.5, 1, 1.0, 0.3, -1.0),):
            push = dict(clip_a=clip_a, sample_a=sample_a, clip_b=clip_b, sample_b=sample_b, weight=w)
            got_p = run(shader, texture, batch, n, mode=0, deform_factor=factor, **push)
            got_n = run(shader, texture, batch, n, mode=1, deform_factor=factor, **push)
            frames = hs.crossfade.crossfade_bone_frames(tex, clip_a, sample_a, clip_b, sample_b, w)
            default = tex.deform_factor if tex.deform_factor is not None else 0.5  # NaN in the block
            f = factor if factor >= 0 else default
            if factor < 0 and tex.auto is not None:
                data = auto.crossfade_auto(tex, clip_a, sample_a, clip_b, sample_b, w)
                f = auto.texture_factors(tex, data, rig.bones, rig.weights, rig.auto_rest)
                assert np.ptp(f) > 0.1  # a real per-vertex factor
            want_p, want_n = skin(frames, rig.rest, rig.bones, rig.weights, f, rig.normals)
            np.testing.assert_allclose(got_p, want_p[0], rtol=0, atol=TOL * extent)
            np.testing.assert_allclose(got_n, want_n[0], rtol=0, atol=TOL)
