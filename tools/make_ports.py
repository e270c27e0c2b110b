"""Write the engine files of shaders/engines/ from their single sources (run after editing those).

    .venv/bin/python tools/make_ports.py          # rewrite the generated files (make tools)
    .venv/bin/python tools/make_ports.py --check  # exit 1 if any is stale (the tests do this)

* The HLSL port ``hlsl/hybrid_skin_animtex.hlsl`` is written by hand, except its part between the
  ``BEGIN``/``END shaders/hybrid_skin_round.glsl`` markers: Auto's round profiles, the one GLSL source the
  live display, the animation texture decoders and every port share, turned into HLSL mechanically
  (``vecN`` → ``floatN``; the GLSL file keeps to a subset both languages read alike, checked here).
* Unity (``unity/HybridSkinAnimtex.hlsl``) and Unreal (``unreal/HybridSkinAnimtex.ush``): the HLSL port
  plus each engine's entry points (below), one self-contained file each, since neither engine resolves
  includes relative to a Custom Function / Custom node file the same way.
* Godot (``godot/hybrid_skin_animtex.gdshaderinc``): ``shaders/animtex_vertex.glsl`` +
  ``shaders/dual_quaternion_lib.glsl`` + ``shaders/hybrid_skin_round.glsl`` + ``shaders/animtex_bone.glsl``
  translated mechanically: Godot's shading language takes these GLSL ES 3 functions as they are, except
  that its textures put row 0 at the top of the imported image, so every ``texelFetch`` goes through
  ``animtex_texel``, which flips the row.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

SHADERS = Path(__file__).resolve().parents[1] / "shaders"
ENGINES = SHADERS / "engines"
HLSL_CORE = ENGINES / "hlsl" / "hybrid_skin_animtex.hlsl"
ROUND_GLSL = SHADERS / "hybrid_skin_round.glsl"
ROUND_BEGIN = "/* BEGIN shaders/hybrid_skin_round.glsl (written by tools/make_ports.py: edit the GLSL) */"
ROUND_END = "/* END shaders/hybrid_skin_round.glsl */"
#: What the shared GLSL must not use: HLSL spells it differently (texel fetches, mix/fract/mod, vector
#: constructors from one scalar, matrices, samplers, globals).
_NOT_PORTABLE = re.compile(
    r"texelFetch|texture\(|\bmix\(|\bfract\(|\bmod\(|\bmat[234]|\bsampler|\buniform\b|\bconst\b"
    r"|\b[iu]?vec[234]\(\s*[^,()]*\)"
)

UNITY_ENTRY_POINTS = """
/* ---------------------------------------------------------------- Unity Shader Graph entry points
 * Custom Function node, Type File, Source this file, Name HybridSkinAnimtexVertex or
 * HybridSkinAnimtexBones (precision Float). Times are seconds since each clip started (multiply by the
 * instance's speed and add its offset before); Weight cross-fades clip A (0) to clip B (1). Positions
 * and normals are in the baked mesh's space (Blender's axes and units): see README.md. */
void HybridSkinAnimtexVertex_float(UnityTexture2D Animtex, float2 TexelUV, float3 RestPosition, float ClipA,
                                   float TimeA, float ClipB, float TimeB, float Weight, out float3 Position,
                                   out float3 Normal)
{
  AnimtexVertexInfo info = animtex_vertex_info(Animtex.tex);
  AnimtexClip a = animtex_clip(Animtex.tex, int(ClipA + 0.5));
  AnimtexClip b = animtex_clip(Animtex.tex, int(ClipB + 0.5));
  int item = animtex_item_from_uv(Animtex.tex, TexelUV, info.texels_per_item, info.items_per_row);
  animtex_vertex_crossfade(Animtex.tex, info, a, animtex_sample_at_time(a, TimeA), b,
                           animtex_sample_at_time(b, TimeB), Weight, item, RestPosition, Position, Normal);
}

void HybridSkinAnimtexBones_float(UnityTexture2D Animtex, float4 BoneIndices, float4 BoneWeights,
                                  float3 RestPosition, float3 RestNormal, float ClipA, float TimeA,
                                  float ClipB, float TimeB, float Weight, float DeformFactor,
                                  out float3 Position, out float3 Normal)
{
  AnimtexBoneInfo info = animtex_bone_info(Animtex.tex);
  AnimtexClip a = animtex_clip(Animtex.tex, int(ClipA + 0.5));
  AnimtexClip b = animtex_clip(Animtex.tex, int(ClipB + 0.5));
  animtex_bone_skin_crossfade(Animtex.tex, info, a, animtex_sample_at_time(a, TimeA), b,
                              animtex_sample_at_time(b, TimeB), Weight, int4(BoneIndices + 0.5), BoneWeights,
                              DeformFactor, RestPosition, RestNormal, Position, Normal);
}

/* Bone bakes that carry Auto: AutoRest is the mesh's auto_rest attribute (float4, e.g. from a UV channel
 * pair); DeformFactor < 0 plays each vertex's Auto factor, 0 ... 1 one factor as above. */
void HybridSkinAnimtexBonesAuto_float(UnityTexture2D Animtex, float4 BoneIndices, float4 BoneWeights,
                                      float4 AutoRest, float3 RestPosition, float3 RestNormal, float ClipA,
                                      float TimeA, float ClipB, float TimeB, float Weight, float DeformFactor,
                                      out float3 Position, out float3 Normal)
{
  AnimtexBoneInfo info = animtex_bone_info(Animtex.tex);
  AnimtexClip a = animtex_clip(Animtex.tex, int(ClipA + 0.5));
  AnimtexClip b = animtex_clip(Animtex.tex, int(ClipB + 0.5));
  animtex_bone_skin_crossfade_auto(Animtex.tex, info, a, animtex_sample_at_time(a, TimeA), b,
                                   animtex_sample_at_time(b, TimeB), Weight, int4(BoneIndices + 0.5),
                                   BoneWeights, AutoRest, DeformFactor, RestPosition, RestNormal, Position,
                                   Normal);
}

/* Instancing mesh (the bake's Instancing Mesh option: a static mesh, no skin): the bone data from its data
 * UV channels, UV_A ... UV_F = the channels after the mesh's own UV maps (the sidecar's
 * instancing.first_uv_channel; UV_E, UV_F: Auto rest data, zeros without Auto), as Unity imports them
 * (v flipped: undone here). DeformFactor < 0 plays Auto where the bake carries it. */
void HybridSkinAnimtexBonesInstancing_float(UnityTexture2D Animtex, float2 UV_A, float2 UV_B, float2 UV_C,
                                            float2 UV_D, float2 UV_E, float2 UV_F, float3 RestPosition,
                                            float3 RestNormal, float ClipA, float TimeA, float ClipB,
                                            float TimeB, float Weight, float DeformFactor,
                                            out float3 Position, out float3 Normal)
{
  int4 bones;
  float4 weights;
  animtex_instancing_influences(UV_A, UV_B, UV_C, UV_D, true, bones, weights);
  float4 auto_rest = animtex_instancing_auto_rest(UV_E, UV_F, true);
  AnimtexBoneInfo info = animtex_bone_info(Animtex.tex);
  AnimtexClip a = animtex_clip(Animtex.tex, int(ClipA + 0.5));
  AnimtexClip b = animtex_clip(Animtex.tex, int(ClipB + 0.5));
  animtex_bone_skin_crossfade_auto(Animtex.tex, info, a, animtex_sample_at_time(a, TimeA), b,
                                   animtex_sample_at_time(b, TimeB), Weight, bones, weights, auto_rest,
                                   DeformFactor, RestPosition, RestNormal, Position, Normal);
}

/* Normal maps: the same with the mesh's tangent, RestTangent (object space, bitangent sign in w) -> Tangent
 * (xyz, sign in w). VERTEX bakes that store tangents (their sidecar's tangents.stored = texture) decode
 * them; bone bakes turn RestTangent with the skin; a VERTEX bake without tangents gives RestTangent back. */
void HybridSkinAnimtexVertexTangent_float(UnityTexture2D Animtex, float2 TexelUV, float3 RestPosition,
                                          float4 RestTangent, float ClipA, float TimeA, float ClipB,
                                          float TimeB, float Weight, out float3 Position, out float3 Normal,
                                          out float4 Tangent)
{
  AnimtexVertexInfo info = animtex_vertex_info(Animtex.tex);
  AnimtexClip a = animtex_clip(Animtex.tex, int(ClipA + 0.5));
  AnimtexClip b = animtex_clip(Animtex.tex, int(ClipB + 0.5));
  int item = animtex_item_from_uv(Animtex.tex, TexelUV, info.texels_per_item, info.items_per_row);
  float sa = animtex_sample_at_time(a, TimeA), sb = animtex_sample_at_time(b, TimeB);
  animtex_vertex_crossfade(Animtex.tex, info, a, sa, b, sb, Weight, item, RestPosition, Position, Normal);
  Tangent = animtex_vertex_tangent_crossfade(Animtex.tex, info, a, sa, b, sb, Weight, item, Normal,
                                             RestTangent);
}

void HybridSkinAnimtexBonesTangent_float(UnityTexture2D Animtex, float4 BoneIndices, float4 BoneWeights,
                                         float4 AutoRest, float3 RestPosition, float3 RestNormal,
                                         float4 RestTangent, float ClipA, float TimeA, float ClipB,
                                         float TimeB, float Weight, float DeformFactor, out float3 Position,
                                         out float3 Normal, out float4 Tangent)
{
  AnimtexBoneInfo info = animtex_bone_info(Animtex.tex);
  AnimtexClip a = animtex_clip(Animtex.tex, int(ClipA + 0.5));
  AnimtexClip b = animtex_clip(Animtex.tex, int(ClipB + 0.5));
  animtex_bone_skin_crossfade_auto_tangent(Animtex.tex, info, a, animtex_sample_at_time(a, TimeA), b,
                                           animtex_sample_at_time(b, TimeB), Weight, int4(BoneIndices + 0.5),
                                           BoneWeights, AutoRest, DeformFactor, RestPosition, RestNormal,
                                           RestTangent, Position, Normal, Tangent);
}
"""

UNREAL_ENTRY_POINTS = """
/* --------------------------------------------------------------------- Unreal Custom node entry points
 * Put this file in a shader folder your project maps (e.g. a plugin's Shaders/, virtual path
 * /Plugin/<Name>/), add it to the Custom node's Include File Paths and call e.g.
 *   float3 n;
 *   return HybridSkinAnimtexVertex(Animtex, TexelUV, RestPosition, ClipA, TimeA, ClipB, TimeB, Weight, n);
 * with Animtex a Texture Object input. Unreal imports images top row first and flips V on import, which
 * ANIMTEX_FLIP_Y (above) and the 1 - v below undo. Results are in the baked mesh's space (Blender's axes
 * and units): see README.md. */
float3 HybridSkinAnimtexVertex(Texture2D Animtex, float2 TexelUV, float3 RestPosition, float ClipA,
                               float TimeA, float ClipB, float TimeB, float Weight, out float3 Normal)
{
  AnimtexVertexInfo info = animtex_vertex_info(Animtex);
  AnimtexClip a = animtex_clip(Animtex, int(ClipA + 0.5));
  AnimtexClip b = animtex_clip(Animtex, int(ClipB + 0.5));
  int item = animtex_item_from_uv(Animtex, float2(TexelUV.x, 1.0 - TexelUV.y), info.texels_per_item,
                                  info.items_per_row);
  float3 position;
  animtex_vertex_crossfade(Animtex, info, a, animtex_sample_at_time(a, TimeA), b,
                           animtex_sample_at_time(b, TimeB), Weight, item, RestPosition, position, Normal);
  return position;
}

float3 HybridSkinAnimtexBones(Texture2D Animtex, float4 BoneIndices, float4 BoneWeights,
                              float3 RestPosition, float3 RestNormal, float ClipA, float TimeA, float ClipB,
                              float TimeB, float Weight, float DeformFactor, out float3 Normal)
{
  AnimtexBoneInfo info = animtex_bone_info(Animtex);
  AnimtexClip a = animtex_clip(Animtex, int(ClipA + 0.5));
  AnimtexClip b = animtex_clip(Animtex, int(ClipB + 0.5));
  float3 position;
  animtex_bone_skin_crossfade(Animtex, info, a, animtex_sample_at_time(a, TimeA), b,
                              animtex_sample_at_time(b, TimeB), Weight, int4(BoneIndices + 0.5), BoneWeights,
                              DeformFactor, RestPosition, RestNormal, position, Normal);
  return position;
}

/* Bone bakes that carry Auto: AutoRest is the mesh's auto_rest attribute; DeformFactor < 0 plays each
 * vertex's Auto factor, 0 ... 1 one factor as above. */
float3 HybridSkinAnimtexBonesAuto(Texture2D Animtex, float4 BoneIndices, float4 BoneWeights, float4 AutoRest,
                                  float3 RestPosition, float3 RestNormal, float ClipA, float TimeA,
                                  float ClipB, float TimeB, float Weight, float DeformFactor,
                                  out float3 Normal)
{
  AnimtexBoneInfo info = animtex_bone_info(Animtex);
  AnimtexClip a = animtex_clip(Animtex, int(ClipA + 0.5));
  AnimtexClip b = animtex_clip(Animtex, int(ClipB + 0.5));
  float3 position;
  animtex_bone_skin_crossfade_auto(Animtex, info, a, animtex_sample_at_time(a, TimeA), b,
                                   animtex_sample_at_time(b, TimeB), Weight, int4(BoneIndices + 0.5),
                                   BoneWeights, AutoRest, DeformFactor, RestPosition, RestNormal, position,
                                   Normal);
  return position;
}

/* Instancing mesh (a static mesh, no skin): the bone data from its data UV channels, UV_A ... UV_F = the
 * channels after the mesh's own UV maps (the sidecar's instancing.first_uv_channel; UV_E, UV_F: Auto rest
 * data, zeros without Auto), as Unreal imports them (v flipped: undone here). Enable the static mesh's
 * "Use Full Precision UVs" (Unreal stores half floats otherwise: weights to about 1e-3). */
float3 HybridSkinAnimtexBonesInstancing(Texture2D Animtex, float2 UV_A, float2 UV_B, float2 UV_C, float2 UV_D,
                                        float2 UV_E, float2 UV_F, float3 RestPosition, float3 RestNormal,
                                        float ClipA, float TimeA, float ClipB, float TimeB, float Weight,
                                        float DeformFactor, out float3 Normal)
{
  int4 bones;
  float4 weights;
  animtex_instancing_influences(UV_A, UV_B, UV_C, UV_D, true, bones, weights);
  float4 auto_rest = animtex_instancing_auto_rest(UV_E, UV_F, true);
  AnimtexBoneInfo info = animtex_bone_info(Animtex);
  AnimtexClip a = animtex_clip(Animtex, int(ClipA + 0.5));
  AnimtexClip b = animtex_clip(Animtex, int(ClipB + 0.5));
  float3 position;
  animtex_bone_skin_crossfade_auto(Animtex, info, a, animtex_sample_at_time(a, TimeA), b,
                                   animtex_sample_at_time(b, TimeB), Weight, bones, weights, auto_rest,
                                   DeformFactor, RestPosition, RestNormal, position, Normal);
  return position;
}

/* Normal maps: the same with the mesh's tangent, RestTangent (object space, bitangent sign in w) -> Tangent.
 * VERTEX bakes that store tangents decode them; bone bakes turn RestTangent with the skin. */
float3 HybridSkinAnimtexVertexTangent(Texture2D Animtex, float2 TexelUV, float3 RestPosition,
                                      float4 RestTangent, float ClipA, float TimeA, float ClipB, float TimeB,
                                      float Weight, out float3 Normal, out float4 Tangent)
{
  AnimtexVertexInfo info = animtex_vertex_info(Animtex);
  AnimtexClip a = animtex_clip(Animtex, int(ClipA + 0.5));
  AnimtexClip b = animtex_clip(Animtex, int(ClipB + 0.5));
  int item = animtex_item_from_uv(Animtex, float2(TexelUV.x, 1.0 - TexelUV.y), info.texels_per_item,
                                  info.items_per_row);
  float sa = animtex_sample_at_time(a, TimeA), sb = animtex_sample_at_time(b, TimeB);
  float3 position;
  animtex_vertex_crossfade(Animtex, info, a, sa, b, sb, Weight, item, RestPosition, position, Normal);
  Tangent = animtex_vertex_tangent_crossfade(Animtex, info, a, sa, b, sb, Weight, item, Normal,
                                             RestTangent);
  return position;
}

float3 HybridSkinAnimtexBonesTangent(Texture2D Animtex, float4 BoneIndices, float4 BoneWeights,
                                     float4 AutoRest, float3 RestPosition, float3 RestNormal,
                                     float4 RestTangent, float ClipA, float TimeA, float ClipB, float TimeB,
                                     float Weight, float DeformFactor, out float3 Normal, out float4 Tangent)
{
  AnimtexBoneInfo info = animtex_bone_info(Animtex);
  AnimtexClip a = animtex_clip(Animtex, int(ClipA + 0.5));
  AnimtexClip b = animtex_clip(Animtex, int(ClipB + 0.5));
  float3 position;
  animtex_bone_skin_crossfade_auto_tangent(Animtex, info, a, animtex_sample_at_time(a, TimeA), b,
                                           animtex_sample_at_time(b, TimeB), Weight, int4(BoneIndices + 0.5),
                                           BoneWeights, AutoRest, DeformFactor, RestPosition, RestNormal,
                                           RestTangent, position, Normal, Tangent);
  return position;
}
"""

GODOT_TEXEL = """
/* texelFetch in the format's row convention: Godot's textures put row 0 at the top of the image as
 * imported, the format at the bottom (Blender's and OpenGL's), so rows are flipped here. */
vec4 animtex_texel(sampler2D tex, ivec2 p)
{
  return texelFetch(tex, ivec2(p.x, textureSize(tex, 0).y - 1 - p.y), 0);
}
"""


def _banner(comment: str, sources: list[Path]) -> str:
    names = ", ".join(p.relative_to(SHADERS.parent).as_posix() for p in sources)
    return f"{comment} Generated by tools/make_ports.py from {names}: edit those, not this file.\n"


def round_hlsl() -> str:
    """``shaders/hybrid_skin_round.glsl`` as HLSL: its declarations (after the leading comment) with
    ``vecN``/``ivecN`` as ``floatN``/``intN``; refuses GLSL that would not mean the same in HLSL."""
    text = ROUND_GLSL.read_text(encoding="utf-8")
    body = text[text.index("*/") + 2 :].strip("\n")
    code = re.sub(r"/\*.*?\*/", "", body, flags=re.DOTALL)
    bad = _NOT_PORTABLE.search(code)
    if bad:
        raise SystemExit(f"make_ports.py: {ROUND_GLSL.name} uses {bad.group(0)!r}: HLSL reads it otherwise")
    body = re.sub(r"\bivec([234])\b", r"int\1", body)
    body = re.sub(r"\bvec([234])\b", r"float\1", body)
    return body + "\n"


def hlsl_core() -> str:
    """The HLSL port with its Auto part regenerated from the GLSL (the rest is as written by hand)."""
    text = HLSL_CORE.read_text(encoding="utf-8")
    start, end = text.index(ROUND_BEGIN) + len(ROUND_BEGIN), text.index(ROUND_END)
    return text[:start] + "\n" + round_hlsl() + text[end:]


def unity() -> str:
    return _banner("//", [HLSL_CORE, ROUND_GLSL]) + hlsl_core() + UNITY_ENTRY_POINTS


def unreal() -> str:
    return (
        _banner("//", [HLSL_CORE, ROUND_GLSL])
        + "#pragma once\n#define ANIMTEX_FLIP_Y 1\n\n"
        + hlsl_core()
        + UNREAL_ENTRY_POINTS
    )


def godot() -> str:
    names = ("animtex_vertex.glsl", "dual_quaternion_lib.glsl", "hybrid_skin_round.glsl", "animtex_bone.glsl")
    sources = [SHADERS / name for name in names]
    text = "\n".join(p.read_text(encoding="utf-8") for p in sources)
    fetch = re.compile(r"texelFetch\((\w+), (.+?), 0\)")
    text, count = fetch.subn(r"animtex_texel(\1, \2)", text)
    if count == 0 or "texelFetch(" in text:
        raise SystemExit("make_ports.py: the GLSL's texelFetch calls no longer have the expected form")
    # animtex_texel must come before its first use: after the file's leading comment block.
    head_end = text.index("*/") + 2
    return _banner("//", sources) + text[:head_end] + "\n" + GODOT_TEXEL + text[head_end:]


OUTPUTS = {
    HLSL_CORE: hlsl_core,
    ENGINES / "unity" / "HybridSkinAnimtex.hlsl": unity,
    ENGINES / "unreal" / "HybridSkinAnimtex.ush": unreal,
    ENGINES / "godot" / "hybrid_skin_animtex.gdshaderinc": godot,
}


def stale() -> list[Path]:
    return [p for p, make in OUTPUTS.items() if not p.is_file() or p.read_text(encoding="utf-8") != make()]


def main(argv: list[str]) -> int:
    if "--check" in argv:
        old = stale()
        for path in old:
            print(f"{path} is stale: run tools/make_ports.py", file=sys.stderr)
        return 1 if old else 0
    for path, make in OUTPUTS.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(make(), encoding="utf-8")
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
