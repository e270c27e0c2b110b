"""The engine ports play an instancing mesh: the bone data from its UV channels, as through the skin.

The instancing mesh (the bake's Instancing Mesh option) carries each vertex's palette indices, weights and
Auto rest data in UV channels, two values a channel (the sidecar's ``instancing``). On the synthetic rig
(BONE_MATRIX, and BONE_DQ carrying Auto), the HLSL port's ``animtex_instancing_influences`` /
``animtex_instancing_auto_rest`` fed the channels as the file holds them play **bit for bit** what
``animtex_bone_skin_crossfade_auto`` plays from the skin's attributes (both run in one kernel); Unity's and
Unreal's ``HybridSkinAnimtexBonesInstancing`` fed the channels as their importers give them (v turned to
1 - v) match the numpy core within :data:`tests.engines.test_ports.TOL` (1 - v rounds the weights by up
to half a float32 step).
"""

from __future__ import annotations

import re

import numpy as np
import pytest

from tests.engines.browser import floats
from tests.engines.synthetic import VERTICES, scene
from tests.engines.test_ports import PORTS, TOL, b64, bone_reference, cross_compile

KINDS = (("BONE_MATRIX", "PNG16", False), ("BONE_DQ", "PNG16", True))

HLSL_MAIN = """
Texture2D<float4> animtex : register(t0);
struct VSIn {
  float4 play : PLAY;
  float4 mix : MIX;
  float3 rest : REST;
  float3 normal : RESTNORMAL;
  float4 bones : BONES;
  float4 weights : WEIGHTS;
  float4 autorest : AUTOREST;
  float4 c01 : CHANNELS01;
  float4 c23 : CHANNELS23;
  float4 c45 : CHANNELS45;
};
struct VSOut {
  float4 pos : SV_Position; float3 p : OUTP; float3 n : OUTN; float3 q : OUTQ; float3 m : OUTM;
};
VSOut main(VSIn i)
{
  VSOut o;
  float3 p, n, q, m;
  CALL
  o.p = p;
  o.n = n;
  o.q = q;
  o.m = m;
  o.pos = float4(0.0, 0.0, 0.0, 1.0);
  return o;
}
"""
#: The core port: the instancing channels (as in the file) and the skin's attributes, side by side.
CORE_CALL = """
  AnimtexClip ca = animtex_clip(animtex, int(i.play.x));
  AnimtexClip cb = animtex_clip(animtex, int(i.play.z));
  AnimtexBoneInfo info = animtex_bone_info(animtex);
  int4 bones;
  float4 weights;
  animtex_instancing_influences(i.c01.xy, i.c01.zw, i.c23.xy, i.c23.zw, false, bones, weights);
  float4 rest_data = animtex_instancing_auto_rest(i.c45.xy, i.c45.zw, false);
  animtex_bone_skin_crossfade_auto(animtex, info, ca, i.play.y, cb, i.play.w, i.mix.x, bones, weights,
                                   rest_data, i.mix.y, i.rest, i.normal, p, n);
  animtex_bone_skin_crossfade_auto(animtex, info, ca, i.play.y, cb, i.play.w, i.mix.x, int4(i.bones + 0.5),
                                   i.weights, i.autorest, i.mix.y, i.rest, i.normal, q, m);"""
ENGINE_CALLS = {
    "unity": """
  UnityTexture2D u;
  u.tex = animtex;
  HybridSkinAnimtexBonesInstancing_float(u, i.c01.xy, i.c01.zw, i.c23.xy, i.c23.zw, i.c45.xy, i.c45.zw,
                                         i.rest, i.normal, i.play.x, i.play.y, i.play.z, i.play.w, i.mix.x,
                                         i.mix.y, p, n);
  q = p;
  m = n;""",
    "unreal": """
  p = HybridSkinAnimtexBonesInstancing(animtex, i.c01.xy, i.c01.zw, i.c23.xy, i.c23.zw, i.c45.xy, i.c45.zw,
                                       i.rest, i.normal, i.play.x, i.play.y, i.play.z, i.play.w, i.mix.x,
                                       i.mix.y, n);
  q = p;
  m = n;""",
}


def channels(s, flipped: bool) -> np.ndarray:
    """``(N, 12)`` the six data channels' (u, v) of every vertex, as the file holds them or (``flipped``) as
    an importer that turns v to 1 - v gives them."""
    auto = s.auto_rest if s.auto_rest is not None else np.zeros((VERTICES, 4), np.float32)
    pairs = [s.bones[:, :2], s.bones[:, 2:], s.weights[:, :2], s.weights[:, 2:], auto[:, :2], auto[:, 2:]]
    out = np.concatenate([np.asarray(p, np.float32) for p in pairs], axis=1)
    if flipped:
        out[:, 1::2] = np.float32(1.0) - out[:, 1::2]
    return out


def kernel(port: str, kind: str, precision: str, auto: bool, folder):
    path, _, flip_rows, _, seconds = PORTS[port]
    s = scene(kind, precision, auto=auto)
    tex = s.texture
    call = CORE_CALL if port == "hlsl" else ENGINE_CALLS[port]
    source = cross_compile(path, call, f"instancing_{kind.lower()}", folder, main=HLSL_MAIN)
    outputs = re.findall(r"^out vec3 (\w+);", source, re.MULTILINE)
    samplers = re.findall(r"uniform highp sampler2D (\w+);", source)
    rows, want = [], []
    for ca, sa, cb, sb, w, factor in s.cases:
        rate_a, rate_b = tex.clips[ca].sample_rate, tex.clips[cb].sample_rate
        play = (ca, sa / rate_a, cb, sb / rate_b) if seconds else (ca, sa, cb, sb)
        rows.append((play, (w, factor, 0.0, 0.0)))
        want.append(bone_reference(s, ca, sa, cb, sb, w, factor)[0][0])
    c = channels(s, flipped=port != "hlsl")
    per_case = {k: np.repeat(np.array([r[i] for r in rows], np.float32), VERTICES, axis=0)
                for i, k in enumerate(("play", "mix"))}  # fmt: skip
    auto_rest = s.auto_rest if auto else np.zeros((VERTICES, 4), np.float32)
    per_vertex = {"rest": s.rest, "normal": s.normals, "bones": s.bones.astype(np.float32),
                  "weights": s.weights, "autorest": auto_rest, "c01": c[:, 0:4], "c23": c[:, 4:8],
                  "c45": c[:, 8:12]}  # fmt: skip
    count = len(s.cases)
    inputs = {f"i_{k}": {"data": b64(v), "size": v.shape[1]} for k, v in per_case.items()}
    inputs.update({f"i_{k}": {"data": b64(np.tile(v, (count, 1))), "size": v.shape[1]}
                   for k, v in per_vertex.items()})  # fmt: skip
    texture = tex.channels()[::-1] if flip_rows else tex.channels()
    job = {"vertex": source, "count": count * VERTICES, "inputs": inputs, "samplers": samplers,
           "outputs": [{"name": o, "size": 3} for o in outputs],
           "texture": {"width": texture.shape[1], "height": texture.shape[0],
                       "data": b64(texture)}}  # fmt: skip
    return job, {"positions": np.stack(want), "outputs": outputs, "extent": float(np.abs(s.rest).max()),
                 "count": count}  # fmt: skip


@pytest.fixture(scope="module")
def results(page_server, tmp_path_factory):
    folder = tmp_path_factory.mktemp("ports_instancing")
    jobs, expected = [], []
    for port in ("hlsl", "unity", "unreal"):
        for kind, precision, auto in KINDS:
            job, want = kernel(port, kind, precision, auto, folder)
            jobs.append(job)
            expected.append((port, kind, want))
    got = page_server.run_page("kernel.html", {"kernels": jobs}, timeout=600)["kernels"]
    return list(zip(expected, got))


@pytest.mark.parametrize("port", ["hlsl", "unity", "unreal"])
def test_instancing_channels_play_as_the_skin(results, port):
    checked = 0
    for (name, kind, want), got in results:
        if name != port:
            continue
        shape = (want["count"], VERTICES, 3)
        p, n, q, m = (floats(got["outputs"][o], shape) for o in want["outputs"])
        if port == "hlsl":  # the same numbers as through the skin's attributes, bit for bit
            np.testing.assert_array_equal(p, q)
            np.testing.assert_array_equal(n, m)
        tolerance = TOL * want["extent"]
        np.testing.assert_allclose(p, want["positions"], rtol=0, atol=tolerance, err_msg=f"{port} {kind}")
        checked += 1
    assert checked == len(KINDS)
