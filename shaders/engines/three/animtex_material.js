/**
 * The vertex-stage GLSL of the three.js runtime and the patch that makes a three material play a bake.
 * Part of the three.js runtime; import everything from hybrid_skin_animtex.js.
 */
import { AnimtexError } from './animtex_bake.js';

// ------------------------------------------------------------------------------------------- GLSL
/**
 * The vertex-stage GLSL that decodes this bake: declarations, the shipped decoders and
 * `void animtex_decode(vec3 rest_position, vec3 rest_normal, out vec3 position, out vec3 normal)`,
 * reading the instance attributes animtexPlay / animtexFade / animtexFadeTime and the uniforms
 * animtexTexture / animtexTime. Bone kinds: animtexPlay.w is the deform factor, negative for Auto (each
 * vertex's factor from the bake's Auto data and its animtexAutoRest, the sidecar's auto_rest attribute). `itemFromUv`: find each vertex's texels through the attribute animtexUv
 * (the sidecar's texel UV after a glTF round trip, v = 1 - Blender's v) instead of animtexIndex (the
 * texel index attribute). VERTEX only; bone kinds read animtexBoneIndices / animtexBoneWeights.
 * `yUp`: the geometry is in glTF's Y-up axes (Blender's glTF exporter with its default "+Y Up"); the
 * textures are in the baked mesh's own (Blender, Z-up) axes, so rest data is turned into those before
 * decoding and the results back: Blender (x, y, z) is glTF (x, z, -y).
 */
export function animtexVertexChunk(bake, { itemFromUv = false, yUp = false } = {}) {
  let inputs, body;
  if (bake.bones) {
    inputs = 'attribute vec4 animtexBoneIndices;\nattribute vec4 animtexBoneWeights;\nattribute vec4 animtexAutoRest;';
    body = `
  AnimtexBoneInfo info = animtex_bone_info(animtexTexture);
  animtex_bone_skin_crossfade_auto_tangent(animtexTexture, info, clip_a, sample_a, clip_b, sample_b, weight,
                                           ivec4(animtexBoneIndices + 0.5), animtexBoneWeights, animtexAutoRest,
                                           animtexPlay.w, rest, rest_n, rest_t, position, normal, tangent);`;
  } else {
    inputs = itemFromUv ? 'attribute vec2 animtexUv;' : 'attribute float animtexIndex;';
    const item = itemFromUv
      ? 'animtex_item_from_uv(animtexTexture, vec2(animtexUv.x, 1.0 - animtexUv.y), info.texels_per_item, info.items_per_row)'
      : 'int(animtexIndex + 0.5)';
    body = `
  AnimtexVertexInfo info = animtex_vertex_info(animtexTexture);
  int item = ${item};
  animtex_vertex_crossfade(animtexTexture, info, clip_a, sample_a, clip_b, sample_b, weight, item,
                           rest, position, normal);
  tangent = animtex_vertex_tangent_crossfade(animtexTexture, info, clip_a, sample_a, clip_b, sample_b, weight, item,
                                             normal, rest_t);`;
  }
  const [toBake, fromBake] = yUp
    ? ['vec3 rest = vec3(rest_position.x, -rest_position.z, rest_position.y);\n  vec3 rest_n = vec3(rest_normal.x, -rest_normal.z, rest_normal.y);'
      + '\n  vec4 rest_t = vec4(rest_tangent.x, -rest_tangent.z, rest_tangent.y, rest_tangent.w);',
    '\n  position = vec3(position.x, position.z, -position.y);\n  normal = vec3(normal.x, normal.z, -normal.y);'
      + '\n  tangent = vec4(tangent.x, tangent.z, -tangent.y, tangent.w);']
    : ['vec3 rest = rest_position;\n  vec3 rest_n = rest_normal;\n  vec4 rest_t = rest_tangent;', ''];
  return `
uniform sampler2D animtexTexture;
uniform float animtexTime;
attribute vec4 animtexPlay;     /* clip, time offset (s), speed, deform factor (bone kinds; < 0: Auto) */
attribute vec4 animtexFade;     /* clip faded to (-1: none), its time offset (s), its speed, unused */
attribute vec2 animtexFadeTime; /* fade start (s of animtexTime), duration (s) */
${inputs}
${bake.glsl}
/* Position, normal and (normal maps) tangent with its bitangent sign: VERTEX bakes that store tangents
 * decode them, bone kinds turn rest_tangent as they turn the normal; a VERTEX bake without tangents gives
 * rest_tangent back. */
void animtex_decode_tangent(vec3 rest_position, vec3 rest_normal, vec4 rest_tangent, out vec3 position,
                            out vec3 normal, out vec4 tangent)
{
  ${toBake}
  AnimtexClip clip_a = animtex_clip(animtexTexture, int(animtexPlay.x + 0.5));
  float sample_a = animtex_sample_at_time(clip_a, animtexTime * animtexPlay.z + animtexPlay.y);
  AnimtexClip clip_b = clip_a;
  float sample_b = sample_a;
  float weight = 0.0;
  if (animtexFade.x >= 0.0) {
    clip_b = animtex_clip(animtexTexture, int(animtexFade.x + 0.5));
    sample_b = animtex_sample_at_time(clip_b, animtexTime * animtexFade.z + animtexFade.y);
    float since = animtexTime - animtexFadeTime.x;
    weight = animtexFadeTime.y > 0.0 ? clamp(since / animtexFadeTime.y, 0.0, 1.0) : step(0.0, since);
  }${body}${fromBake}
}
void animtex_decode(vec3 rest_position, vec3 rest_normal, out vec3 position, out vec3 normal)
{
  vec4 tangent;
  animtex_decode_tangent(rest_position, rest_normal, vec4(0.0), position, normal, tangent);
}
`;
}

/**
 * Make `material` (any built-in three material, or a ShaderMaterial using three's vertex chunks) play
 * the bake: position and normal come from animtex_decode before three's own vertex chunks run.
 * Returns the same material. `uniforms` are shared (one time for the whole crowd).
 */
export function patchMaterial(material, bake, uniforms, chunkOptions = {}) {
  const chunk = animtexVertexChunk(bake, chunkOptions);
  const previous = material.onBeforeCompile;
  material.onBeforeCompile = (shader, renderer) => {
    previous?.call(material, shader, renderer);
    Object.assign(shader.uniforms, uniforms);
    const main = 'void main() {';
    if (!shader.vertexShader.includes(main) || !shader.vertexShader.includes('#include <begin_vertex>')) {
      throw new AnimtexError(`material ${material.type} has no three.js vertex chunks to patch`);
    }
    // With a normal map three declares `tangent` (USE_TANGENT): the decoded tangent replaces it too.
    const decode = '\n\tvec3 animtexPosition, animtexNormal;\n\tvec4 animtexTangent;\n#ifdef USE_TANGENT\n'
      + '\tanimtex_decode_tangent(position, normal, tangent, animtexPosition, animtexNormal, animtexTangent);\n#else\n'
      + '\tanimtex_decode(position, normal, animtexPosition, animtexNormal);\n#endif';
    shader.vertexShader = shader.vertexShader
      .replace('#include <common>', `#include <common>\n${chunk}`)
      .replace(main, `${main}${decode}`)
      .replace('#include <beginnormal_vertex>', '#include <beginnormal_vertex>\n\tobjectNormal = animtexNormal;'
        + '\n#ifdef USE_TANGENT\n\tobjectTangent = animtexTangent.xyz;\n#endif')
      .replace('#include <begin_vertex>', '#include <begin_vertex>\n\ttransformed = animtexPosition;');
  };
  const key = `hybrid_skin_animtex:${bake.kind}:${chunkOptions.itemFromUv ? 'uv' : 'index'}:${chunkOptions.yUp ? 'y' : 'z'}`;
  const previousKey = material.customProgramCacheKey.bind(material);
  material.customProgramCacheKey = () => `${previousKey()}|${key}`;
  material.needsUpdate = true;
  return material;
}

