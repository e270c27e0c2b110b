"""The engine shader ports output tangents for normal maps as the numpy core computes them.

Every port (HLSL, Unity, Unreal through their tangent entry points, Godot's include) runs in headless
Chromium as in ``test_ports.py`` (HLSL through glslang and spirv-cross) on the synthetic rig: a VERTEX
texture that stores tangents (the rig's poses with tangents perpendicular to their normals and random
bitangent signs; decoded, cross-faded, made perpendicular to the cross-faded normal) and BONE_MATRIX /
BONE_DQ textures turning rest tangents with the skin at runtime factors 0 … 1. Truth:
``crossfade_vertex_tangents`` and ``bone_tangents`` of :mod:`hybrid_skin.core.animtex` (the shaders' own
formulas in numpy): tangents within :data:`TOL`, signs exact; positions and normals as ``test_ports``.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

from hybrid_skin.core.animtex import Precision, decode_vertex_frames, encode_vertex_animation
from hybrid_skin.core.animtex.crossfade import crossfade_bone_frames, crossfade_vertex_tangents
from hybrid_skin.core.animtex.decode import bone_tangents
from hybrid_skin.core.small_linalg import unit
from tests.engines.browser import floats
from tests.engines.synthetic import CASES, VERTICES, scene
from tests.engines.test_ports import GODOT_PRELUDE, PORTS, b64, cross_compile

TOL = 5e-6
KINDS = (("VERTEX", "PNG16"), ("BONE_MATRIX", "PNG16"), ("BONE_DQ", "EXR16"))

HLSL_MAIN = """
Texture2D<float4> animtex : register(t0);
struct VSIn {
  float4 play : PLAY;
  float4 mix : MIX;
  float3 rest : REST;
  float3 normal : RESTNORMAL;
  float4 tangent : RESTTANGENT;
  float4 bones : BONES;
  float4 weights : WEIGHTS;
  float2 uv : TEXELUV;
};
struct VSOut { float4 pos : SV_Position; float3 p : OUTP; float3 n : OUTN; float4 t : OUTT; };
VSOut main(VSIn i)
{
  VSOut o;
  float3 p, n;
  float4 t;
  CALL
  o.p = p;
  o.n = n;
  o.t = t;
  o.pos = float4(0.0, 0.0, 0.0, 1.0);
  return o;
}
"""
CLIPS = """
  AnimtexClip ca = animtex_clip(animtex, int(i.play.x));
  AnimtexClip cb = animtex_clip(animtex, int(i.play.z));"""
CALLS = {
    "hlsl": {
        "VERTEX": CLIPS + """
  AnimtexVertexInfo info = animtex_vertex_info(animtex);
  int item = int(i.mix.z + 0.5);
  animtex_vertex_crossfade(animtex, info, ca, i.play.y, cb, i.play.w, i.mix.x, item, i.rest, p, n);
  t = animtex_vertex_tangent_crossfade(animtex, info, ca, i.play.y, cb, i.play.w, i.mix.x, item, n,
                                       i.tangent);""",
        "BONES": CLIPS + """
  AnimtexBoneInfo info = animtex_bone_info(animtex);
  animtex_bone_skin_crossfade_auto_tangent(animtex, info, ca, i.play.y, cb, i.play.w, i.mix.x,
                                           int4(i.bones + 0.5), i.weights, float4(0.0, 0.0, 0.0, 0.0),
                                           i.mix.y, i.rest, i.normal, i.tangent, p, n, t);""",
    },
    "unity": {
        "VERTEX": """
  UnityTexture2D u;
  u.tex = animtex;
  HybridSkinAnimtexVertexTangent_float(u, i.uv, i.rest, i.tangent, i.play.x, i.play.y, i.play.z, i.play.w,
                                       i.mix.x, p, n, t);""",
        "BONES": """
  UnityTexture2D u;
  u.tex = animtex;
  HybridSkinAnimtexBonesTangent_float(u, i.bones, i.weights, float4(0.0, 0.0, 0.0, 0.0), i.rest, i.normal,
                                      i.tangent, i.play.x, i.play.y, i.play.z, i.play.w, i.mix.x, i.mix.y,
                                      p, n, t);""",
    },
    "unreal": {
        "VERTEX": """
  p = HybridSkinAnimtexVertexTangent(animtex, i.uv, i.rest, i.tangent, i.play.x, i.play.y, i.play.z, i.play.w,
                                     i.mix.x, n, t);""",
        "BONES": """
  p = HybridSkinAnimtexBonesTangent(animtex, i.bones, i.weights, float4(0.0, 0.0, 0.0, 0.0), i.rest, i.normal,
                                    i.tangent, i.play.x, i.play.y, i.play.z, i.play.w, i.mix.x, i.mix.y, n,
                                    t);""",
    },
}
GODOT_MAIN = """
uniform sampler2D animtex;
in vec4 play;
in vec4 mix_;
in vec3 rest;
in vec3 rest_normal;
in vec4 rest_tangent;
in vec4 bones;
in vec4 weights;
out vec3 out_p;
out vec3 out_n;
out vec4 out_t;
void main()
{
  AnimtexClip ca = animtex_clip(animtex, int(play.x));
  AnimtexClip cb = animtex_clip(animtex, int(play.z));
#if defined(TEST_BONES)
  AnimtexBoneInfo info = animtex_bone_info(animtex);
  animtex_bone_skin_crossfade_auto_tangent(animtex, info, ca, play.y, cb, play.w, mix_.x, ivec4(bones + 0.5),
                                           weights, vec4(0.0), mix_.y, rest, rest_normal, rest_tangent, out_p,
                                           out_n, out_t);
#else
  AnimtexVertexInfo info = animtex_vertex_info(animtex);
  int item = int(mix_.z + 0.5);
  animtex_vertex_crossfade(animtex, info, ca, play.y, cb, play.w, mix_.x, item, rest, out_p, out_n);
  out_t = animtex_vertex_tangent_crossfade(animtex, info, ca, play.y, cb, play.w, mix_.x, item, out_n,
                                           rest_tangent);
#endif
  gl_Position = vec4(0.0);
}
"""


def random_tangents(normals: np.ndarray, rng) -> np.ndarray:
    """Unit tangents perpendicular to ``normals`` ``(..., 3)`` with random bitangent signs ``(..., 4)``."""
    t = rng.normal(size=normals.shape)
    t = unit(t - np.sum(t * normals, -1, keepdims=True) * normals)
    return np.concatenate([t, rng.choice([-1.0, 1.0], size=normals.shape[:-1] + (1,))], -1).astype(np.float32)


def tangent_scene(kind: str, precision: str):
    """The synthetic rig; VERTEX: its poses encoded again with tangents. Returns the scene, the texture and
    the rest tangents (the bone kinds' input; a VERTEX texture's fallback)."""
    s = scene(kind, precision)
    rng = np.random.default_rng(8)
    rest_tangents = random_tangents(s.normals.astype(np.float64), rng)
    if kind != "VERTEX":
        return s, s.texture, rest_tangents
    tex = s.texture
    positions, normals, tangents = [], [], []
    for ci, clip in enumerate(tex.clips):
        p, n = decode_vertex_frames(tex, s.rest, ci, np.arange(clip.frame_count, dtype=np.float64))
        positions.append(p), normals.append(n), tangents.append(random_tangents(n.astype(np.float64), rng))
    encoded = encode_vertex_animation(s.rest, positions, normals, tex.clips, precision=Precision(precision),
                                      tangents=tangents)  # fmt: skip
    return s, encoded, rest_tangents


def kernel(port: str, kind: str, precision: str, folder) -> tuple[dict, dict]:
    path, _calls, flip_rows, flip_v, seconds = PORTS[port]
    bones = kind != "VERTEX"
    s, tex, rest_tangents = tangent_scene(kind, precision)
    if port == "godot":
        define = "#define TEST_BONES 1\n" if bones else ""
        source = GODOT_PRELUDE + define + path.read_text(encoding="utf-8") + GODOT_MAIN
        names = {"play": "play", "mix": "mix_", "rest": "rest", "normal": "rest_normal", "bones": "bones",
                 "tangent": "rest_tangent", "weights": "weights", "uv": "texel_uv"}  # fmt: skip
        outputs, samplers = ["out_p", "out_n", "out_t"], ["animtex"]
    else:
        call = CALLS[port]["BONES" if bones else "VERTEX"]
        source = cross_compile(path, call, f"tangent_{kind.lower()}", folder, main=HLSL_MAIN)
        names = {k: f"i_{k}" for k in ("play", "mix", "rest", "normal", "tangent", "bones", "weights", "uv")}
        outputs = re.findall(r"^out vec[34] (\w+);", source, re.MULTILINE)
        samplers = re.findall(r"uniform highp sampler2D (\w+);", source)
        assert len(outputs) == 3 and len(samplers) == 1, (outputs, samplers)
    uv = tex.layout.item_uv() if not bones else np.zeros((VERTICES, 2), np.float32)
    if flip_v:
        uv = np.c_[uv[:, 0], 1.0 - uv[:, 1]]
    rows, want = [], []
    for ca, sa, cb, sb, w, factor in CASES:
        rate_a, rate_b = tex.clips[ca].sample_rate, tex.clips[cb].sample_rate
        play = (ca, sa / rate_a, cb, sb / rate_b) if seconds else (ca, sa, cb, sb)
        rows.append((play, (w, factor, 0.0, 0.0)))
        if bones:
            frames = crossfade_bone_frames(tex, ca, sa, cb, sb, w)
            t = bone_tangents(frames, s.rest, s.bones, s.weights, factor, s.normals, rest_tangents)
        else:
            t = crossfade_vertex_tangents(tex, s.rest, ca, sa, cb, sb, w)
        want.append(t[0])
    per_case = {k: np.repeat(np.array([r[i] for r in rows], np.float32), VERTICES, axis=0)
                for i, k in enumerate(("play", "mix"))}  # fmt: skip
    per_case["mix"][:, 2] = np.tile(np.arange(VERTICES), len(CASES))
    per_vertex = {"rest": s.rest, "normal": s.normals, "tangent": rest_tangents,
                  "bones": s.bones.astype(np.float32), "weights": s.weights, "uv": uv}  # fmt: skip
    inputs = {names[k]: {"data": b64(v), "size": v.shape[1]} for k, v in per_case.items()}
    inputs.update({names[k]: {"data": b64(np.tile(v, (len(CASES), 1))), "size": v.shape[1]}
                   for k, v in per_vertex.items()})  # fmt: skip
    channels = tex.channels()[::-1] if flip_rows else tex.channels()
    job = {
        "vertex": source, "count": len(CASES) * VERTICES, "inputs": inputs, "samplers": samplers,
        "outputs": [{"name": name, "size": size} for name, size in zip(outputs, (3, 3, 4))],
        "texture": {"width": channels.shape[1], "height": channels.shape[0], "data": b64(channels)},
    }  # fmt: skip
    return job, {"tangents": np.stack(want), "outputs": outputs}


@pytest.fixture(scope="module")
def results(page_server, tmp_path_factory):
    folder = tmp_path_factory.mktemp("ports_tangents")
    jobs, expected = [], []
    for port in PORTS:
        for kind, precision in KINDS:
            job, want = kernel(port, kind, precision, folder)
            jobs.append(job)
            expected.append((port, kind, want))
    got = page_server.run_page("kernel.html", {"kernels": jobs}, timeout=600)["kernels"]
    return list(zip(expected, got))


@pytest.mark.parametrize("port", list(PORTS))
def test_port_tangents_match_numpy(results, port):
    checked = 0
    for (name, kind, want), got in results:
        if name != port:
            continue
        t = floats(got["outputs"][want["outputs"][2]], (len(CASES), VERTICES, 4))
        np.testing.assert_array_equal(t[..., 3], want["tangents"][..., 3], err_msg=f"{port} {kind}: signs")
        label = f"{port} {kind}"
        np.testing.assert_allclose(t[..., :3], want["tangents"][..., :3], rtol=0, atol=TOL, err_msg=label)
        assert np.abs(t[..., :3]).max() > 0.5  # really tangents, not zeros
        print(f"{port} {kind}: tangents within {np.abs(t[..., :3] - want['tangents'][..., :3]).max():.2g}")
        checked += 1
    assert checked == len(KINDS)
