/* Animation texture playback, part 1: shared readers and vertex animation textures (VERTEX).
 *
 * The GLSL twin of hybrid_skin/core/animtex (sidecar format version 1); each function mirrors the numpy
 * reference so that readback tests can hold the GPU to it at float32 precision:
 *   animtex_read_float      <-> metadata.read_embedded      (one float32 of the embedded metadata block)
 *   animtex_frame_rows      <-> layout.frame_pair           (wrap or clamp, guard band, blend weight)
 *   animtex_item_texel      <-> TextureLayout.item_texels
 *   animtex_vertex_sample   <-> decode.decode_vertex_frames
 *
 * Plain GLSL 330 functions: no #version, no layout qualifiers, texelFetch only (nearest, no mipmaps;
 * neighbouring texels hold other vertices). The caller declares the sampler for the texture as loaded
 * (Non-Color, alpha CHANNEL_PACKED): PNG channels arrive as stored / 255 or / 65535, EXR as floats.
 * animtex_bone.glsl needs this file prepended.
 *
 * Texture layout: texel k of item i at clip frame f is at
 *   x = (i % items_per_row) * texels_per_item + k
 *   y = clip.first_row + f * rows_per_frame + i / items_per_row
 * and every channel decodes as value = offset + scale * channel. VERTEX items are vertices with two
 * texels: (position offset from rest, 1) and (unit normal, 1), and a third, (tangent, bitangent sign),
 * where the texture stores tangents (texels_per_item 3).
 *
 * The metadata either comes from uniforms filled from the JSON sidecar, or from the embedded block
 * (rows 0.. of the texture, one float32 per texel as 4 bytes): animtex_clip / animtex_vertex_info read it.
 */

/* Float indices in the embedded block's header (metadata.embedded_floats). */
const int ANIMTEX_KIND = 1;
const int ANIMTEX_TEXELS_PER_ITEM = 3;
const int ANIMTEX_ITEMS_PER_ROW = 5;
const int ANIMTEX_ROWS_PER_FRAME = 6;
const int ANIMTEX_CLIP_COUNT = 7;
const int ANIMTEX_DEFORM_FACTOR = 9;
const int ANIMTEX_GLOBALS_START = 10;
const int ANIMTEX_CLIPS_START = 11;
const int ANIMTEX_BONES_START = 12;

struct AnimtexClip {
  int first_row;   /* row of frame 0's band */
  int frame_count; /* stored frames; band frame_count is the guard band */
  float sample_rate;
  bool loop;
};

struct AnimtexVertexInfo {
  int texels_per_item; /* 2, or 3 where the texture stores tangents */
  int items_per_row;
  int rows_per_frame;
  vec3 position_offset;
  vec3 position_scale;
  float normal_offset;
  float normal_scale;
};

/* Float `index` of the embedded block: its 4 little-endian bytes are the channels, each byte / 255. */
float animtex_read_float(sampler2D tex, int index)
{
  int width = textureSize(tex, 0).x;
  vec4 c = texelFetch(tex, ivec2(index % width, index / width), 0);
  uvec4 b = uvec4(clamp(round(c * 255.0), 0.0, 255.0));
  return uintBitsToFloat(b.x | (b.y << 8u) | (b.z << 16u) | (b.w << 24u));
}

int animtex_read_int(sampler2D tex, int index)
{
  return int(animtex_read_float(tex, index));
}

AnimtexClip animtex_clip(sampler2D tex, int clip)
{
  int base = animtex_read_int(tex, ANIMTEX_CLIPS_START) + 4 * clip;
  AnimtexClip c;
  c.first_row = animtex_read_int(tex, base);
  c.frame_count = animtex_read_int(tex, base + 1);
  c.sample_rate = animtex_read_float(tex, base + 2);
  c.loop = animtex_read_float(tex, base + 3) != 0.0;
  return c;
}

/* The deform factor the texture was baked with (VERTEX) or the rig's default (bone kinds); NaN if unset. */
float animtex_default_deform_factor(sampler2D tex)
{
  return animtex_read_float(tex, ANIMTEX_DEFORM_FACTOR);
}

/* Seconds since the instance started its clip -> fractional sample index (Clip.sample_at_time). */
float animtex_sample_at_time(AnimtexClip clip, float seconds)
{
  return seconds * clip.sample_rate;
}

/* Fractional sample index -> first rows of the two frame bands to blend, and the weight of the second.
 * Loops wrap with period frame_count, other clips clamp; frame f0 + 1 may be the guard band (frame 0
 * again for loops, the last frame otherwise), so the fetch never leaves the clip and needs no modulo. */
void animtex_frame_rows(AnimtexClip clip, int rows_per_frame, float clip_sample, out int row0, out int row1,
                        out float alpha)
{
  float n = float(clip.frame_count);
  float s = clip.loop ? clip_sample - n * floor(clip_sample / n) : clamp(clip_sample, 0.0, n - 1.0);
  int f0 = min(int(floor(s)), clip.frame_count - 1);
  alpha = s - float(f0);
  row0 = clip.first_row + f0 * rows_per_frame;
  row1 = row0 + rows_per_frame;
}

/* (first column, row inside a frame band) of an item: vertices or bones wrap every items_per_row. */
ivec2 animtex_item_texel(int item_index, int texels_per_item, int items_per_row)
{
  return ivec2((item_index % items_per_row) * texels_per_item, item_index / items_per_row);
}

AnimtexVertexInfo animtex_vertex_info(sampler2D tex)
{
  AnimtexVertexInfo info;
  info.texels_per_item = animtex_read_int(tex, ANIMTEX_TEXELS_PER_ITEM);
  info.items_per_row = animtex_read_int(tex, ANIMTEX_ITEMS_PER_ROW);
  info.rows_per_frame = animtex_read_int(tex, ANIMTEX_ROWS_PER_FRAME);
  int g = animtex_read_int(tex, ANIMTEX_GLOBALS_START);
  info.position_offset = vec3(animtex_read_float(tex, g), animtex_read_float(tex, g + 1),
                              animtex_read_float(tex, g + 2));
  info.position_scale = vec3(animtex_read_float(tex, g + 3), animtex_read_float(tex, g + 4),
                             animtex_read_float(tex, g + 5));
  info.normal_offset = animtex_read_float(tex, g + 6);
  info.normal_scale = animtex_read_float(tex, g + 7);
  return info;
}

/* Position and unit normal of vertex `vertex_index` (the mesh's texel-index attribute) at `clip_sample`. */
void animtex_vertex_sample(sampler2D tex, AnimtexVertexInfo info, AnimtexClip clip, int vertex_index,
                           float clip_sample, vec3 rest_point, out vec3 position, out vec3 normal)
{
  int row0, row1;
  float alpha;
  animtex_frame_rows(clip, info.rows_per_frame, clip_sample, row0, row1, alpha);
  ivec2 t = animtex_item_texel(vertex_index, info.texels_per_item, info.items_per_row);
  vec3 p0 = info.position_offset + info.position_scale * texelFetch(tex, ivec2(t.x, row0 + t.y), 0).xyz;
  vec3 p1 = info.position_offset + info.position_scale * texelFetch(tex, ivec2(t.x, row1 + t.y), 0).xyz;
  vec3 n0 = info.normal_offset + info.normal_scale * texelFetch(tex, ivec2(t.x + 1, row0 + t.y), 0).xyz;
  vec3 n1 = info.normal_offset + info.normal_scale * texelFetch(tex, ivec2(t.x + 1, row1 + t.y), 0).xyz;
  position = rest_point + (p0 + alpha * (p1 - p0));
  /* A lerp of unit vectors is shorter than one: renormalise (zero stays zero, like the numpy side). */
  vec3 n = n0 + alpha * (n1 - n0);
  float len = length(n);
  normal = len > 0.0 ? n / len : vec3(0.0);
}

/* A tangent (xyz) and bitangent sign (w) as decoded and interpolated -> the tangent made perpendicular to
 * the decoded `normal` and unit (zero stays zero), the sign +-1 (decode.tangents_from_values). */
vec4 animtex_tangent_finish(vec4 v, vec3 normal)
{
  vec3 t = v.xyz - dot(v.xyz, normal) * normal;
  float len = length(t);
  return vec4(len > 0.0 ? t / len : vec3(0.0), v.w < 0.0 ? -1.0 : 1.0);
}

/* The tangent texel (slot 2; textures with texels_per_item 3) of item `vertex_index` at `clip_sample`,
 * decoded with the normal's terms and interpolated, not yet made perpendicular (animtex_tangent_finish). */
vec4 animtex_vertex_tangent_value(sampler2D tex, AnimtexVertexInfo info, AnimtexClip clip, int vertex_index,
                                  float clip_sample)
{
  int row0, row1;
  float alpha;
  animtex_frame_rows(clip, info.rows_per_frame, clip_sample, row0, row1, alpha);
  ivec2 t = animtex_item_texel(vertex_index, info.texels_per_item, info.items_per_row);
  vec4 a = info.normal_offset + info.normal_scale * texelFetch(tex, ivec2(t.x + 2, row0 + t.y), 0);
  vec4 b = info.normal_offset + info.normal_scale * texelFetch(tex, ivec2(t.x + 2, row1 + t.y), 0);
  return a + alpha * (b - a);
}

/* Tangent and bitangent sign of item `vertex_index` cross-faded like its normal (values lerped, then made
 * perpendicular to `normal`, the cross-faded normal animtex_vertex_crossfade gives), for normal maps. A
 * texture that stores no tangents (texels_per_item 2) gives `rest_tangent` back, unturned. */
vec4 animtex_vertex_tangent_crossfade(sampler2D tex, AnimtexVertexInfo info, AnimtexClip from_clip,
                                      float from_sample, AnimtexClip to_clip, float to_sample, float to_weight,
                                      int vertex_index, vec3 normal, vec4 rest_tangent)
{
  if (info.texels_per_item < 3) {
    return rest_tangent;
  }
  vec4 ta = animtex_vertex_tangent_value(tex, info, from_clip, vertex_index, from_sample);
  if (to_weight > 0.0) {
    vec4 tb = animtex_vertex_tangent_value(tex, info, to_clip, vertex_index, to_sample);
    ta = to_weight >= 1.0 ? tb : ta + to_weight * (tb - ta);
  }
  return animtex_tangent_finish(ta, normal);
}

/* Item (vertex) index from the mesh's texel UV map (sidecar mesh_attributes.texel_uv), for engines
 * whose importers keep UV channels but drop integer attributes. The UV is Blender's, v from the bottom:
 * u = (first column + 0.5) / width, v = (row inside the frame band + 0.5) / height (TextureLayout.item_uv).
 * Importers that flip v (glTF, Unreal) must pass (u, 1 - v). */
int animtex_item_from_uv(sampler2D tex, vec2 uv, int texels_per_item, int items_per_row)
{
  ivec2 size = textureSize(tex, 0);
  int column = int(floor(uv.x * float(size.x)));
  int row = int(floor(uv.y * float(size.y)));
  return row * items_per_row + column / texels_per_item;
}

/* Cross-fade (core/animtex/crossfade.py): from_clip at from_sample blended towards to_clip at to_sample by
 * to_weight; positions lerp, normals lerp and renormalise. to_weight <= 0 is from_clip exactly, >= 1 to_clip. */
void animtex_vertex_crossfade(sampler2D tex, AnimtexVertexInfo info, AnimtexClip from_clip, float from_sample,
                              AnimtexClip to_clip, float to_sample, float to_weight, int vertex_index,
                              vec3 rest_point, out vec3 position, out vec3 normal)
{
  vec3 pa, na;
  animtex_vertex_sample(tex, info, from_clip, vertex_index, from_sample, rest_point, pa, na);
  if (to_weight <= 0.0) {
    position = pa;
    normal = na;
    return;
  }
  vec3 pb, nb;
  animtex_vertex_sample(tex, info, to_clip, vertex_index, to_sample, rest_point, pb, nb);
  if (to_weight >= 1.0) {
    position = pb;
    normal = nb;
    return;
  }
  position = pa + to_weight * (pb - pa);
  vec3 n = na + to_weight * (nb - na);
  float len = length(n);
  normal = len > 0.0 ? n / len : vec3(0.0);
}
