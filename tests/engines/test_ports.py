"""The engine shader ports compute what the numpy core computes, cross-fades and deform factors included.

HLSL (the engine-neutral port and the shipped Unity and Unreal files, entry points included) is compiled
the way a D3D-style toolchain would see it - ``glslangValidator -D -V -S vert -e main`` to SPIR-V - and
turned into GLSL ES 3.00 by ``spirv-cross``; the Godot include runs as GLSL ES 3.00 behind a three-line
prelude (Godot's shading language is GLSL ES 3 plus its own built-ins, which the include does not use).
Each runs in headless Chromium's WebGL2 as a vertex kernel (``pages/kernel.js``: transform feedback)
over a synthetic rig of every kind (:mod:`tests.engines.synthetic`; BONE_MATRIX also with mirrored bones,
which every port must negate before taking their rotation; and Auto rigs, whose textures carry Auto, played
through the ports' Auto entry points with Auto and with a runtime factor) and is held to
:mod:`hybrid_skin.core.animtex.crossfade` + ``skin_with_bone_frames`` (Auto: the factors of
:mod:`hybrid_skin.core.animtex.auto`, the core's own ``round_factors`` on the decoded data): positions
within :data:`TOL` of the mesh extent, unit normals within :data:`TOL`. Unreal and Godot read their texture
with the rows flipped (their importers put the image's top row first) and Unreal takes the UV map with v
flipped: the tests upload them that way, so those conventions are what is tested. The Godot example shader
(``godot/hybrid_skin_crowd.gdshader``) runs too, translated mechanically (its built-ins as plain globals):
instance custom data, TIME, Y-up rest data and glTF UVs in, the core decoders' result in Y-up out.
"""

from __future__ import annotations

import base64
import re
import subprocess
from pathlib import Path

import numpy as np
import pytest

from hybrid_skin.core.animtex import decode_vertex_frames, skin_with_bone_frames
from hybrid_skin.core.animtex.auto import crossfade_auto, texture_factors
from hybrid_skin.core.animtex.crossfade import crossfade_bone_frames, crossfade_vertex_frames
from tests.engines.browser import floats
from tests.engines.synthetic import VERTICES, scene
from tools import make_ports

ENGINES = make_ports.ENGINES
TOL = 5e-6
#: (kind, precision, rig: "" plain, "mirrored" bones, "auto" a texture that carries Auto)
KINDS = (("VERTEX", "PNG16", ""), ("BONE_MATRIX", "PNG16", ""), ("BONE_MATRIX", "PNG16", "mirrored"),
         ("BONE_DQ", "EXR16", ""), ("BONE_DQ", "PNG8", ""), ("BONE_DQ", "PNG16", "auto"),
         ("BONE_MATRIX", "EXR32", "auto"))  # fmt: skip

HLSL_MAIN = """
Texture2D<float4> animtex : register(t0);
struct VSIn {
  float4 play : PLAY;      /* clip a, sample (or seconds) a, clip b, sample (or seconds) b */
  float4 mix : MIX;        /* weight, deform factor, item, unused */
  float3 rest : REST;
  float3 normal : RESTNORMAL;
  float4 bones : BONES;
  float4 weights : WEIGHTS;
  float2 uv : TEXELUV;
  float4 autorest : AUTOREST;
};
struct VSOut { float4 pos : SV_Position; float3 p : OUTP; float3 n : OUTN; };
VSOut main(VSIn i)
{
  VSOut o;
  float3 p, n;
  CALL
  o.p = p;
  o.n = n;
  o.pos = float4(0.0, 0.0, 0.0, 1.0);
  return o;
}
"""

CORE_CALL = {
    "VERTEX": """
  AnimtexClip ca = animtex_clip(animtex, int(i.play.x));
  AnimtexClip cb = animtex_clip(animtex, int(i.play.z));
  AnimtexVertexInfo info = animtex_vertex_info(animtex);
  animtex_vertex_crossfade(animtex, info, ca, i.play.y, cb, i.play.w, i.mix.x, int(i.mix.z + 0.5), i.rest,
                           p, n);""",
    "BONES": """
  AnimtexClip ca = animtex_clip(animtex, int(i.play.x));
  AnimtexClip cb = animtex_clip(animtex, int(i.play.z));
  AnimtexBoneInfo info = animtex_bone_info(animtex);
  animtex_bone_skin_crossfade(animtex, info, ca, i.play.y, cb, i.play.w, i.mix.x, int4(i.bones + 0.5),
                              i.weights, i.mix.y, i.rest, i.normal, p, n);""",
    "AUTO": """
  AnimtexClip ca = animtex_clip(animtex, int(i.play.x));
  AnimtexClip cb = animtex_clip(animtex, int(i.play.z));
  AnimtexBoneInfo info = animtex_bone_info(animtex);
  animtex_bone_skin_crossfade_auto(animtex, info, ca, i.play.y, cb, i.play.w, i.mix.x, int4(i.bones + 0.5),
                                   i.weights, i.autorest, i.mix.y, i.rest, i.normal, p, n);""",
}
UNITY_CALL = {
    "VERTEX": """
  UnityTexture2D t;
  t.tex = animtex;
  HybridSkinAnimtexVertex_float(t, i.uv, i.rest, i.play.x, i.play.y, i.play.z, i.play.w, i.mix.x, p, n);""",
    "BONES": """
  UnityTexture2D t;
  t.tex = animtex;
  HybridSkinAnimtexBones_float(t, i.bones, i.weights, i.rest, i.normal, i.play.x, i.play.y, i.play.z,
                               i.play.w, i.mix.x, i.mix.y, p, n);""",
    "AUTO": """
  UnityTexture2D t;
  t.tex = animtex;
  HybridSkinAnimtexBonesAuto_float(t, i.bones, i.weights, i.autorest, i.rest, i.normal, i.play.x, i.play.y,
                                   i.play.z, i.play.w, i.mix.x, i.mix.y, p, n);""",
}
UNREAL_CALL = {
    "VERTEX": """
  p = HybridSkinAnimtexVertex(animtex, i.uv, i.rest, i.play.x, i.play.y, i.play.z, i.play.w, i.mix.x, n);""",
    "BONES": """
  p = HybridSkinAnimtexBones(animtex, i.bones, i.weights, i.rest, i.normal, i.play.x, i.play.y, i.play.z,
                             i.play.w, i.mix.x, i.mix.y, n);""",
    "AUTO": """
  p = HybridSkinAnimtexBonesAuto(animtex, i.bones, i.weights, i.autorest, i.rest, i.normal, i.play.x,
                                 i.play.y, i.play.z, i.play.w, i.mix.x, i.mix.y, n);""",
}
#: Unity's UnityTexture2D (com.unity.render-pipelines.core Texture.hlsl) reduced to what the file reads.
UNITY_STUB = "struct UnityTexture2D { Texture2D tex; };\n"

GODOT_PRELUDE = "#version 300 es\nprecision highp float;\nprecision highp int;\nprecision highp sampler2D;\n"
GODOT_MAIN = """
uniform sampler2D animtex;
in vec4 play;
in vec4 mix_;
in vec3 rest;
in vec3 rest_normal;
in vec4 bones;
in vec4 weights;
in vec4 auto_rest_data;
out vec3 out_p;
out vec3 out_n;
void main()
{
  AnimtexClip ca = animtex_clip(animtex, int(play.x));
  AnimtexClip cb = animtex_clip(animtex, int(play.z));
#if defined(TEST_AUTO)
  AnimtexBoneInfo info = animtex_bone_info(animtex);
  animtex_bone_skin_crossfade_auto(animtex, info, ca, play.y, cb, play.w, mix_.x, ivec4(bones + 0.5), weights,
                                   auto_rest_data, mix_.y, rest, rest_normal, out_p, out_n);
#elif defined(TEST_BONES)
  AnimtexBoneInfo info = animtex_bone_info(animtex);
  animtex_bone_skin_crossfade(animtex, info, ca, play.y, cb, play.w, mix_.x, ivec4(bones + 0.5), weights,
                              mix_.y, rest, rest_normal, out_p, out_n);
#else
  AnimtexVertexInfo info = animtex_vertex_info(animtex);
  animtex_vertex_crossfade(animtex, info, ca, play.y, cb, play.w, mix_.x, int(mix_.z + 0.5), rest, out_p,
                           out_n);
#endif
  gl_Position = vec4(0.0);
}
"""

GODOT_EXAMPLE = ENGINES / "godot" / "hybrid_skin_crowd.gdshader"
#: Godot's vertex() built-ins the example uses, as plain globals the harness fills from vertex inputs.
GODOT_BUILTINS = """
vec3 VERTEX;
vec3 NORMAL;
vec3 TANGENT;
vec3 BINORMAL;
vec2 UV2;
vec4 CUSTOM0;
vec4 CUSTOM1;
vec4 CUSTOM2;
vec4 INSTANCE_CUSTOM;
float TIME;
"""
GODOT_EXAMPLE_MAIN = """
in vec3 in_vertex;
in vec3 in_normal;
in vec2 in_uv2;
in vec4 in_custom0;
in vec4 in_custom1;
in vec4 in_custom2;
in vec4 in_instance_custom;
in float in_time;
out vec3 out_p;
out vec3 out_n;
void main()
{
  VERTEX = in_vertex;
  NORMAL = in_normal;
  UV2 = in_uv2;
  CUSTOM0 = in_custom0;
  CUSTOM1 = in_custom1;
  CUSTOM2 = in_custom2;
  INSTANCE_CUSTOM = in_instance_custom;
  TIME = in_time;
  vertex();
  out_p = VERTEX;
  out_n = NORMAL;
  gl_Position = vec4(0.0);
}
"""


def godot_example_glsl(bones: bool) -> str:
    """The example .gdshader as GLSL ES 3.00, mechanically: no shader_type line, the include inlined,
    uniform hints dropped, Godot's built-ins as globals set from vertex inputs around a call of vertex()."""
    text = GODOT_EXAMPLE.read_text(encoding="utf-8")
    text, lines = re.subn(r"^shader_type \w+;\n", "", text, flags=re.MULTILINE)
    include = '#include "hybrid_skin_animtex.gdshaderinc"'
    text = text.replace(include, PORTS["godot"][0].read_text(encoding="utf-8"))
    text, hints = re.subn(r"^(uniform \w+ \w+)\s*:[^;]*;", r"\1;", text, flags=re.MULTILINE)
    text, defines = re.subn(r"#define HYBRID_SKIN_BONES 0", f"#define HYBRID_SKIN_BONES {int(bones)}", text)
    assert (lines, hints, defines) == (1, 1, 1) and include not in text, "the example changed shape: update"
    return GODOT_PRELUDE + GODOT_BUILTINS + text + GODOT_EXAMPLE_MAIN


def to_y_up(v: np.ndarray) -> np.ndarray:
    """Blender's (x, y, z) in glTF's / Godot's Y-up axes: (x, z, -y)."""
    return np.stack([v[..., 0], v[..., 2], -v[..., 1]], -1).astype(np.float32)


def bone_reference(s, ca: int, sa: float, cb: int, sb: float, w: float, factor: float):
    """What the core gives for one case of a bone rig: the bones cross-faded, skinned at ``factor``, or,
    where it is negative, at the Auto factors of the cross-faded Auto data (the texture's default factor
    where it carries no Auto)."""
    tex = s.texture
    frames = crossfade_bone_frames(tex, ca, sa, cb, sb, w)
    if factor < 0:
        if tex.auto is None:
            factor = tex.deform_factor if tex.deform_factor is not None else 0.5
        else:
            data = crossfade_auto(tex, ca, sa, cb, sb, w)
            factor = texture_factors(tex, data, s.bones, s.weights, s.auto_rest)
    return skin_with_bone_frames(frames, s.rest, s.bones, s.weights, factor, s.normals)


def godot_example_kernel(kind: str, precision: str, auto: bool = False) -> tuple[dict, dict]:
    """The example shader on a MultiMesh-like input: instance custom data, TIME, Y-up rest data, glTF UVs,
    Godot's row order; expected: the core decoders' one-clip result in Y-up axes (``auto``: the Auto rig,
    its rest data in CUSTOM2, a negative factor playing Auto)."""
    bones = kind != "VERTEX"
    s = scene(kind, precision, auto=auto)
    tex = s.texture
    speed, offset = 1.25, 0.1
    uv = tex.layout.item_uv() if not bones else np.zeros((VERTICES, 2), np.float32)
    inputs, want_p, want_n = {k: [] for k in ("in_instance_custom", "in_time")}, [], []
    for clip, sample, *_, factor in s.cases:
        seconds = sample / tex.clips[clip].sample_rate
        inputs["in_instance_custom"].append(np.tile([clip, offset, speed, factor], (VERTICES, 1)))
        inputs["in_time"].append(np.full((VERTICES, 1), (seconds - offset) / speed))
        if bones:
            p, n = bone_reference(s, clip, sample, clip, sample, 0.0, factor)
        else:
            p, n = decode_vertex_frames(tex, s.rest, clip, sample)
        want_p.append(to_y_up(p[0]))
        want_n.append(to_y_up(n[0]))
    gltf_uv = np.c_[uv[:, 0], 1 - uv[:, 1]]
    per_vertex = {
        "in_vertex": to_y_up(s.rest), "in_normal": to_y_up(s.normals), "in_uv2": gltf_uv,
        "in_custom0": s.bones.astype(np.float32), "in_custom1": s.weights,
        "in_custom2": s.auto_rest if auto else np.zeros((VERTICES, 4), np.float32),
    }  # fmt: skip
    arrays = {k: np.concatenate(v).astype(np.float32) for k, v in inputs.items()}
    arrays.update({k: np.tile(v, (len(s.cases), 1)).astype(np.float32) for k, v in per_vertex.items()})
    channels = tex.channels()[::-1]  # Godot's row order
    job = {
        "vertex": godot_example_glsl(bones), "count": len(s.cases) * VERTICES, "samplers": ["animtex"],
        "inputs": {k: {"data": b64(v), "size": v.shape[1]} for k, v in arrays.items()},
        "outputs": [{"name": "out_p", "size": 3}, {"name": "out_n", "size": 3}],
        "texture": {"width": channels.shape[1], "height": channels.shape[0], "data": b64(channels)},
    }  # fmt: skip
    want = {"positions": np.stack(want_p), "normals": np.stack(want_n), "outputs": ["out_p", "out_n"],
            "extent": float(np.abs(s.rest).max()), "cases": s.cases}  # fmt: skip
    return job, want


#: port -> (file, HLSL entry-point calls (None: GLSL), texture rows flipped, UV v flipped, times in seconds)
PORTS = {
    "hlsl": (ENGINES / "hlsl" / "hybrid_skin_animtex.hlsl", CORE_CALL, False, False, False),
    "unity": (ENGINES / "unity" / "HybridSkinAnimtex.hlsl", UNITY_CALL, False, False, True),
    "unreal": (ENGINES / "unreal" / "HybridSkinAnimtex.ush", UNREAL_CALL, True, True, True),
    "godot": (ENGINES / "godot" / "hybrid_skin_animtex.gdshaderinc", None, True, False, False),
}


def b64(a: np.ndarray) -> str:
    return base64.b64encode(np.ascontiguousarray(a, dtype="<f4").tobytes()).decode("ascii")


def cross_compile(path: Path, call: str, label: str, folder: Path, main: str = HLSL_MAIN) -> str:
    """HLSL -> SPIR-V (glslang) -> GLSL ES 3.00 (spirv-cross); ``main``: the harness, ``CALL`` its call."""
    stub = UNITY_STUB if "Unity" in call else ""
    harness = folder / f"{path.stem}_{label}.hlsl"
    harness.write_text(f'{stub}#include "{path.name}"\n' + main.replace("CALL", call), encoding="utf-8")
    spv = harness.with_suffix(".spv")
    for args in (
        [
            "glslangValidator",
            "-D",
            "-V",
            "-S",
            "vert",
            "-e",
            "main",
            f"-I{path.parent}",
            str(harness),
            "-o",
            str(spv),
        ],
        ["spirv-cross", "--es", "--version", "300", str(spv), "--output", str(harness.with_suffix(".glsl"))],
    ):
        done = subprocess.run(args, capture_output=True, text=True, check=False)
        assert done.returncode == 0, f"{args[0]} failed on {path.name}:\n{done.stdout}\n{done.stderr}"
    return harness.with_suffix(".glsl").read_text(encoding="utf-8")


def kernel(
    port: str, kind: str, precision: str, folder: Path, flip_rows: bool | None = None, rig: str = ""
) -> tuple[dict, dict]:
    """The kernel job for one port and texture, and what numpy expects of it (``flip_rows`` overrides how
    the engine lays out the texture rows; ``rig``: "mirrored" bones or an "auto" rig, played through the
    Auto entry points)."""
    path, calls, engine_flips_rows, flip_v, seconds = PORTS[port]
    flip_rows = engine_flips_rows if flip_rows is None else flip_rows
    bones = kind != "VERTEX"
    auto = rig == "auto"
    s = scene(kind, precision, mirrored=rig == "mirrored", auto=auto)
    tex = s.texture
    if calls is None:
        define = ("#define TEST_AUTO 1\n" if auto else "") + ("#define TEST_BONES 1\n" if bones else "")
        source = GODOT_PRELUDE + define + path.read_text(encoding="utf-8") + GODOT_MAIN
        names = {"play": "play", "mix": "mix_", "rest": "rest", "normal": "rest_normal", "bones": "bones",
                 "weights": "weights", "uv": "texel_uv", "autorest": "auto_rest_data"}  # fmt: skip
        samplers, outputs = ["animtex"], ["out_p", "out_n"]
    else:
        call = calls["AUTO" if auto else "BONES" if bones else "VERTEX"]
        source = cross_compile(path, call, rig or ("bones" if bones else "vertex"), folder)
        keys = ("play", "mix", "rest", "normal", "bones", "weights", "uv", "autorest")
        names = {k: f"i_{k}" for k in keys}
        samplers = re.findall(r"uniform highp sampler2D (\w+);", source)
        outputs = re.findall(r"^out vec3 (\w+);", source, re.MULTILINE)
        assert len(samplers) == 1 and len(outputs) == 2, (samplers, outputs)
    rows = []
    want_p, want_n = [], []
    uv = tex.layout.item_uv() if not bones else np.zeros((VERTICES, 2), np.float32)
    if flip_v:
        uv = np.c_[uv[:, 0], 1.0 - uv[:, 1]]
    cases = s.cases
    for ca, sa, cb, sb, w, factor in cases:
        rate_a, rate_b = tex.clips[ca].sample_rate, tex.clips[cb].sample_rate
        play = (ca, sa / rate_a, cb, sb / rate_b) if seconds else (ca, sa, cb, sb)
        rows.append((play, (w, factor, 0.0, 0.0)))
        if bones:
            p, n = bone_reference(s, ca, sa, cb, sb, w, factor)
        else:
            p, n = crossfade_vertex_frames(tex, s.rest, ca, sa, cb, sb, w)
        want_p.append(p[0])
        want_n.append(n[0])
    count = len(cases) * VERTICES
    per_case = {
        k: np.repeat(np.array([r[i] for r in rows], np.float32), VERTICES, axis=0)
        for i, k in enumerate(("play", "mix"))
    }
    per_case["mix"][:, 2] = np.tile(np.arange(VERTICES), len(cases))  # item = vertex index
    per_vertex = {
        "rest": s.rest,
        "normal": s.normals,
        "bones": s.bones.astype(np.float32),
        "weights": s.weights,
        "uv": uv,
        "autorest": s.auto_rest if auto else np.zeros((VERTICES, 4), np.float32),
    }
    inputs = {names[k]: {"data": b64(v), "size": v.shape[1]} for k, v in per_case.items()}
    inputs.update(
        {
            names[k]: {"data": b64(np.tile(v, (len(cases), 1))), "size": v.shape[1]}
            for k, v in per_vertex.items()
        }
    )
    channels = tex.channels()
    if flip_rows:
        channels = channels[::-1]  # as the engine's importer lays the image out: top row first
    job = {
        "vertex": source, "count": count, "inputs": inputs, "samplers": samplers,
        "outputs": [{"name": outputs[0], "size": 3}, {"name": outputs[1], "size": 3}],
        "texture": {"width": channels.shape[1], "height": channels.shape[0], "data": b64(channels)},
    }  # fmt: skip
    extent = float(np.abs(s.rest).max())
    return job, {
        "positions": np.stack(want_p),
        "normals": np.stack(want_n),
        "extent": extent,
        "outputs": outputs,
        "cases": cases,
    }


def test_generated_engine_files_are_current():
    assert make_ports.stale() == [], "run make tools (tools/make_ports.py) and commit the result"


@pytest.fixture(scope="module")
def results(page_server, tmp_path_factory):
    folder = tmp_path_factory.mktemp("ports")
    jobs, expected = [], []
    for port in PORTS:
        for kind, precision, rig in KINDS:
            job, want = kernel(port, kind, precision, folder, rig=rig)
            jobs.append(job)
            expected.append((port, f"{kind} {rig}".strip(), precision, want))
    examples = (("VERTEX", "PNG16", False), ("BONE_DQ", "EXR16", False), ("BONE_DQ", "PNG16", True))
    for kind, precision, auto in examples:
        job, want = godot_example_kernel(kind, precision, auto)
        jobs.append(job)
        expected.append(("godot-example", kind + " auto" * auto, precision, want))
    job, want = kernel("godot", "VERTEX", "PNG16", folder, flip_rows=False)  # last: the negative control
    jobs.append(job)
    expected.append(("godot-unflipped", "VERTEX", "PNG16", want))
    got = page_server.run_page("kernel.html", {"kernels": jobs}, timeout=600)["kernels"]
    return list(zip(expected, got))


@pytest.mark.parametrize("port", [*PORTS, "godot-example"])
def test_port_matches_numpy(results, port):
    checked = 0
    for (name, kind, precision, want), got in results:
        if name != port:
            continue
        cases = want["cases"]
        shape = (len(cases), VERTICES, 3)
        p = floats(got["outputs"][want["outputs"][0]], shape)
        n = floats(got["outputs"][want["outputs"][1]], shape)
        for case in range(len(cases)):
            label = f"{port} {kind} {precision} case {cases[case]}"
            np.testing.assert_allclose(
                p[case], want["positions"][case], rtol=0, atol=TOL * want["extent"], err_msg=label
            )
            np.testing.assert_allclose(n[case], want["normals"][case], rtol=0, atol=TOL, err_msg=label)
        worst, worst_n = (
            np.abs(p - want["positions"]).max() / want["extent"],
            np.abs(n - want["normals"]).max(),
        )
        print(f"{port} {kind} {precision}: max {worst:.2g} of the extent, normals {worst_n:.2g}")
        checked += 1
    assert checked == (3 if port == "godot-example" else len(KINDS))


def test_the_row_flip_is_what_makes_godot_right(results):
    """Godot's include read with the rows as stored (not as Godot's importer lays them out) decodes
    something else: the flip the port tests rely on is real."""
    (_name, _kind, _precision, want), got = results[-1]
    p = floats(got["outputs"][want["outputs"][0]], (len(want["cases"]), VERTICES, 3))
    assert np.abs(p - want["positions"]).max() > 1e-2 * want["extent"]
