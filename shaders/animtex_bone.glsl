/* Animation texture playback, part 2: bone textures (BONE_MATRIX, BONE_DQ) with the hybrid deform factor.
 *
 * Prepend animtex_vertex.glsl (shared readers, frame rows, item texels), dual_quaternion_lib.glsl
 * (dq_to_rows) and hybrid_skin_round.glsl (Auto's round profiles). Numpy reference:
 *   animtex_bone_at             <-> decode.decode_bone_frames     (one bone at one fractional sample)
 *   animtex_skin_rows           <-> decode.skin_with_bone_frames  (hybrid of LBS and DQS by the deform factor)
 *   animtex_bone_blend          <-> crossfade.blend_bone_frames   (two clips' bones by a weight)
 *   animtex_bone_skin_crossfade <-> crossfade.crossfade_bone_frames + decode.skin_with_bone_frames
 *   animtex_auto_at             <-> auto.decode_auto              (a bone's Auto data at one fractional sample)
 *   animtex_auto_factor         <-> auto.crossfade_auto + auto.texture_factors (autofactor.round_factors)
 *   animtex_bone_skin_crossfade_auto: the same with the vertex's Auto factor where the runtime factor is < 0
 *
 * Texels per bone and frame: BONE_MATRIX 3, row r = (A[r][0], A[r][1], A[r][2], u[r]); BONE_DQ 2,
 * (rotation w, x, y, z) and (u.x, u.y, u.z, uniform scale s). u is where the bone's pivot c goes, so
 * the skinning matrix is [A | u - A c]. Per-bone constants (pivot c, translation offset and scale)
 * live in the embedded metadata block: bake bone textures with the block (the default) to use this file.
 * A texture that carries Auto (FORMAT.md sections 3, 9, 11) also has each bone's Auto data, two texels
 * (tau, sigma_xyz) and (A, H_xyz) auto row offset rows above its own, decoded per bone by its Auto table.
 *
 * A 3x4 matrix is three vec4 rows m0, m1, m2: p' = (dot(m0, p1), dot(m1, p1), dot(m2, p1)), p1 = (p, 1),
 * as in hybrid_skin_lib.glsl. Quaternions are vec4(w, x, y, z).
 */

struct AnimtexBoneInfo {
  int kind; /* 1 = BONE_MATRIX, 2 = BONE_DQ */
  int items_per_row;
  int rows_per_frame;
  int bones_start;       /* first float of the per-bone constants in the embedded block */
  float rotation_offset; /* linear-part (matrix) or quaternion (DQ) channels */
  float rotation_scale;
  float scale_offset; /* DQ uniform-scale channel */
  float scale_scale;
};

struct AnimtexBone {
  vec4 m0, m1, m2; /* skinning matrix rows [A | t] */
  vec4 real;       /* unit quaternion of the rigid part */
  vec4 dual;       /* dual part of [R | u - R c] */
  float scale;     /* uniform scale about the pivot */
  vec3 pivot;
};

AnimtexBoneInfo animtex_bone_info(sampler2D tex)
{
  AnimtexBoneInfo info;
  info.kind = animtex_read_int(tex, ANIMTEX_KIND);
  info.items_per_row = animtex_read_int(tex, ANIMTEX_ITEMS_PER_ROW);
  info.rows_per_frame = animtex_read_int(tex, ANIMTEX_ROWS_PER_FRAME);
  info.bones_start = animtex_read_int(tex, ANIMTEX_BONES_START);
  int g = animtex_read_int(tex, ANIMTEX_GLOBALS_START);
  info.rotation_offset = animtex_read_float(tex, g);
  info.rotation_scale = animtex_read_float(tex, g + 1);
  info.scale_offset = animtex_read_float(tex, g + 2);
  info.scale_scale = animtex_read_float(tex, g + 3);
  return info;
}

vec4 animtex_quat_multiply(vec4 a, vec4 b)
{
  return vec4(a.x * b.x - a.y * b.y - a.z * b.z - a.w * b.w,
              a.x * b.y + a.y * b.x + a.z * b.w - a.w * b.z,
              a.x * b.z - a.y * b.w + a.z * b.x + a.w * b.y,
              a.x * b.w + a.y * b.z - a.z * b.y + a.w * b.x);
}

/* Rows of the rotation matrix of a unit quaternion. */
void animtex_quat_rows(vec4 q, out vec3 a0, out vec3 a1, out vec3 a2)
{
  float w = q.x, x = q.y, y = q.z, z = q.w;
  a0 = vec3(1.0 - 2.0 * (y * y + z * z), 2.0 * (x * y - w * z), 2.0 * (x * z + w * y));
  a1 = vec3(2.0 * (x * y + w * z), 1.0 - 2.0 * (x * x + z * z), 2.0 * (y * z - w * x));
  a2 = vec3(2.0 * (x * z - w * y), 2.0 * (y * z + w * x), 1.0 - 2.0 * (x * x + y * y));
}

/* Quaternion (w >= 0) of a linear part given by rows: columns normalised, the matrix negated if its
 * determinant is negative, then Shepperd's method (the largest of the four diagonal combinations, the
 * first on ties), as dualquat.quaternion_from_matrix does and FORMAT.md section 5 spells out. */
vec4 animtex_quat_from_rows(vec3 a0, vec3 a1, vec3 a2)
{
  vec3 len = max(vec3(length(vec3(a0.x, a1.x, a2.x)), length(vec3(a0.y, a1.y, a2.y)),
                      length(vec3(a0.z, a1.z, a2.z))), vec3(1e-30));
  vec3 r0 = a0 / len, r1 = a1 / len, r2 = a2 / len;
  if (dot(r0, cross(r1, r2)) < 0.0) { /* a mirror (negative determinant): the rotation of -A */
    r0 = -r0;
    r1 = -r1;
    r2 = -r2;
  }
  vec4 cand = vec4(1.0 + r0.x + r1.y + r2.z, 1.0 + r0.x - r1.y - r2.z, 1.0 - r0.x + r1.y - r2.z,
                   1.0 - r0.x - r1.y + r2.z);
  int best = 0;
  for (int i = 1; i < 4; i++) {
    if (cand[i] > cand[best]) {
      best = i;
    }
  }
  float s = 2.0 * sqrt(max(cand[best], 1e-30));
  vec4 q;
  if (best == 0) {
    q = vec4(0.25 * s, (r2.y - r1.z) / s, (r0.z - r2.x) / s, (r1.x - r0.y) / s);
  }
  else if (best == 1) {
    q = vec4((r2.y - r1.z) / s, 0.25 * s, (r0.y + r1.x) / s, (r0.z + r2.x) / s);
  }
  else if (best == 2) {
    q = vec4((r0.z - r2.x) / s, (r0.y + r1.x) / s, 0.25 * s, (r1.z + r2.y) / s);
  }
  else {
    q = vec4((r1.x - r0.y) / s, (r0.z + r2.x) / s, (r1.z + r2.y) / s, 0.25 * s);
  }
  q = q.x < 0.0 ? -q : q;
  return normalize(q);
}

/* Bone `bone` blended between the frame bands at row0 and row1 (from animtex_frame_rows). */
AnimtexBone animtex_bone_at(sampler2D tex, AnimtexBoneInfo info, int bone, int row0, int row1, float alpha)
{
  int texels = info.kind == 1 ? 3 : 2;
  ivec2 t = animtex_item_texel(bone, texels, info.items_per_row);
  int base = info.bones_start + 9 * bone;
  AnimtexBone b;
  b.pivot = vec3(animtex_read_float(tex, base), animtex_read_float(tex, base + 1),
                 animtex_read_float(tex, base + 2));
  vec3 t_offset = vec3(animtex_read_float(tex, base + 3), animtex_read_float(tex, base + 4),
                       animtex_read_float(tex, base + 5));
  vec3 t_scale = vec3(animtex_read_float(tex, base + 6), animtex_read_float(tex, base + 7),
                      animtex_read_float(tex, base + 8));
  vec3 a0, a1, a2, r0, r1, r2, moved;
  if (info.kind == 1) {
    vec4 rows[3];
    for (int r = 0; r < 3; r++) {
      vec4 c0 = texelFetch(tex, ivec2(t.x + r, row0 + t.y), 0);
      vec4 c1 = texelFetch(tex, ivec2(t.x + r, row1 + t.y), 0);
      vec4 v0 = vec4(info.rotation_offset + info.rotation_scale * c0.xyz, t_offset[r] + t_scale[r] * c0.w);
      vec4 v1 = vec4(info.rotation_offset + info.rotation_scale * c1.xyz, t_offset[r] + t_scale[r] * c1.w);
      rows[r] = v0 + alpha * (v1 - v0);
    }
    a0 = rows[0].xyz;
    a1 = rows[1].xyz;
    a2 = rows[2].xyz;
    moved = vec3(rows[0].w, rows[1].w, rows[2].w);
    b.real = animtex_quat_from_rows(a0, a1, a2);
    b.scale = (length(vec3(a0.x, a1.x, a2.x)) + length(vec3(a0.y, a1.y, a2.y)) +
               length(vec3(a0.z, a1.z, a2.z))) / 3.0;
    animtex_quat_rows(b.real, r0, r1, r2);
  }
  else {
    vec4 q0 = info.rotation_offset + info.rotation_scale * texelFetch(tex, ivec2(t.x, row0 + t.y), 0);
    vec4 q1 = info.rotation_offset + info.rotation_scale * texelFetch(tex, ivec2(t.x, row1 + t.y), 0);
    vec4 c0 = texelFetch(tex, ivec2(t.x + 1, row0 + t.y), 0);
    vec4 c1 = texelFetch(tex, ivec2(t.x + 1, row1 + t.y), 0);
    vec4 u0 = vec4(t_offset + t_scale * c0.xyz, info.scale_offset + info.scale_scale * c0.w);
    vec4 u1 = vec4(t_offset + t_scale * c1.xyz, info.scale_offset + info.scale_scale * c1.w);
    /* The encoder keeps neighbouring frames in one hemisphere, so a plain lerp never collapses. */
    vec4 q = q0 + alpha * (q1 - q0);
    float len = length(q);
    b.real = len > 0.0 ? q / len : vec4(1.0, 0.0, 0.0, 0.0);
    vec4 u = u0 + alpha * (u1 - u0);
    moved = u.xyz;
    b.scale = u.w;
    animtex_quat_rows(b.real, r0, r1, r2);
    a0 = b.scale * r0;
    a1 = b.scale * r1;
    a2 = b.scale * r2;
  }
  b.m0 = vec4(a0, moved.x - dot(a0, b.pivot));
  b.m1 = vec4(a1, moved.y - dot(a1, b.pivot));
  b.m2 = vec4(a2, moved.z - dot(a2, b.pivot));
  vec3 rigid_t = moved - vec3(dot(r0, b.pivot), dot(r1, b.pivot), dot(r2, b.pivot));
  b.dual = 0.5 * animtex_quat_multiply(vec4(0.0, rigid_t), b.real);
  return b;
}

/* Bone a blended towards bone b by to_weight (core/animtex/crossfade.py blend_bone_frames): BONE_MATRIX
 * lerps the matrix rows and derives the rigid part as animtex_bone_at does; BONE_DQ blends the unit
 * dual quaternions along the shortest arc (b negated when its rotation points away from a's), makes
 * the sum unit again and lerps the uniform scale, so a transition stays rigid and keeps volume.
 * Weight <= 0 returns a and >= 1 returns b unchanged. */
AnimtexBone animtex_bone_blend(AnimtexBoneInfo info, AnimtexBone a, AnimtexBone b, float to_weight)
{
  if (to_weight <= 0.0) {
    return a;
  }
  if (to_weight >= 1.0) {
    return b;
  }
  AnimtexBone o;
  o.pivot = a.pivot;
  vec3 r0, r1, r2, moved;
  if (info.kind == 1) {
    o.m0 = a.m0 + to_weight * (b.m0 - a.m0);
    o.m1 = a.m1 + to_weight * (b.m1 - a.m1);
    o.m2 = a.m2 + to_weight * (b.m2 - a.m2);
    vec3 a0 = o.m0.xyz, a1 = o.m1.xyz, a2 = o.m2.xyz;
    moved = vec3(o.m0.w + dot(a0, o.pivot), o.m1.w + dot(a1, o.pivot), o.m2.w + dot(a2, o.pivot));
    o.real = animtex_quat_from_rows(a0, a1, a2);
    o.scale = (length(vec3(a0.x, a1.x, a2.x)) + length(vec3(a0.y, a1.y, a2.y)) +
               length(vec3(a0.z, a1.z, a2.z))) / 3.0;
    animtex_quat_rows(o.real, r0, r1, r2);
    vec3 rigid_t = moved - vec3(dot(r0, o.pivot), dot(r1, o.pivot), dot(r2, o.pivot));
    o.dual = 0.5 * animtex_quat_multiply(vec4(0.0, rigid_t), o.real);
    return o;
  }
  float wb = dot(a.real, b.real) < 0.0 ? -to_weight : to_weight;
  float wa = 1.0 - to_weight;
  vec4 real = wa * a.real + wb * b.real;
  vec4 dual = wa * a.dual + wb * b.dual;
  float len = length(real);
  o.real = real / len;
  dual /= len;
  o.dual = dual - o.real * dot(o.real, dual); /* unit: real . dual = 0 */
  o.scale = a.scale + to_weight * (b.scale - a.scale);
  vec3 rigid_t = 2.0 * animtex_quat_multiply(o.dual, vec4(o.real.x, -o.real.yzw)).yzw;
  animtex_quat_rows(o.real, r0, r1, r2);
  moved = rigid_t + vec3(dot(r0, o.pivot), dot(r1, o.pivot), dot(r2, o.pivot));
  vec3 a0 = o.scale * r0, a1 = o.scale * r1, a2 = o.scale * r2;
  o.m0 = vec4(a0, moved.x - dot(a0, o.pivot));
  o.m1 = vec4(a1, moved.y - dot(a1, o.pivot));
  o.m2 = vec4(a2, moved.z - dot(a2, o.pivot));
  return o;
}

/* Per-vertex hybrid matrix M = (1 - f) LBS + f DQS for up to four influences in stored order, of the
 * bones at frame rows (a_row0, a_row1, a_alpha) blended towards those at (b_row*, b_alpha) by to_weight
 * (to_weight 0: the b rows are never read). Scaled bones fold (s - 1)(p - c) into their dual part at the
 * vertex, Blender's Preserve Volume way; an influence is negated when its real part points away from
 * the running sum (Blender's sign rule). */
void animtex_skin_rows_crossfade(sampler2D tex, AnimtexBoneInfo info, int a_row0, int a_row1, float a_alpha,
                                 int b_row0, int b_row1, float b_alpha, float to_weight, ivec4 bone_ids,
                                 vec4 bone_weights, float hybrid_factor, vec3 p, out vec4 m0, out vec4 m1,
                                 out vec4 m2)
{
  vec4 l0 = vec4(0.0), l1 = vec4(0.0), l2 = vec4(0.0);
  vec4 real = vec4(0.0), dual = vec4(0.0);
  for (int k = 0; k < 4; k++) {
    float w = bone_weights[k];
    if (w == 0.0) {
      continue;
    }
    AnimtexBone b = animtex_bone_at(tex, info, bone_ids[k], a_row0, a_row1, a_alpha);
    if (to_weight > 0.0) {
      AnimtexBone to_bone = animtex_bone_at(tex, info, bone_ids[k], b_row0, b_row1, b_alpha);
      b = animtex_bone_blend(info, b, to_bone, to_weight);
    }
    l0 += w * b.m0;
    l1 += w * b.m1;
    l2 += w * b.m2;
    vec4 bone_dual = b.dual + 0.5 * animtex_quat_multiply(b.real, vec4(0.0, (b.scale - 1.0) * (p - b.pivot)));
    float ws = dot(real, b.real) < 0.0 ? -w : w;
    real += ws * b.real;
    dual += ws * bone_dual;
  }
  vec4 q0, q1, q2;
  dq_to_rows(real, dual, q0, q1, q2);
  float g = 1.0 - hybrid_factor;
  m0 = g * l0 + hybrid_factor * q0;
  m1 = g * l1 + hybrid_factor * q1;
  m2 = g * l2 + hybrid_factor * q2;
}

/* The hybrid matrix of one clip's bones (animtex_skin_rows_crossfade with to_weight 0). */
void animtex_skin_rows(sampler2D tex, AnimtexBoneInfo info, int row0, int row1, float alpha, ivec4 bone_ids,
                       vec4 bone_weights, float hybrid_factor, vec3 p, out vec4 m0, out vec4 m1, out vec4 m2)
{
  animtex_skin_rows_crossfade(tex, info, row0, row1, alpha, row0, row1, alpha, 0.0, bone_ids, bone_weights,
                              hybrid_factor, p, m0, m1, m2);
}

/* Position and unit normal through the hybrid matrix rows: M p and normalise(cofactor(M) n). */
void animtex_apply_rows(vec4 m0, vec4 m1, vec4 m2, vec3 p, vec3 n, out vec3 position, out vec3 normal)
{
  vec4 p1 = vec4(p, 1.0);
  position = vec3(dot(m0, p1), dot(m1, p1), dot(m2, p1));
  vec3 c = vec3(dot(cross(m1.xyz, m2.xyz), n), dot(cross(m2.xyz, m0.xyz), n), dot(cross(m0.xyz, m1.xyz), n));
  float len = length(c);
  normal = len > 0.0 ? c / len : vec3(0.0);
}

/* A rest tangent (xyz) and bitangent sign (w) through the hybrid matrix rows, for normal maps: the linear
 * part turns it (M t, as the cofactor turns the normal, so the two stay perpendicular), then it is made
 * perpendicular to the skinned `normal` and unit; the sign is kept. */
vec4 animtex_apply_tangent(vec4 m0, vec4 m1, vec4 m2, vec4 t, vec3 normal)
{
  return animtex_tangent_finish(vec4(dot(m0.xyz, t.xyz), dot(m1.xyz, t.xyz), dot(m2.xyz, t.xyz), t.w), normal);
}

/* Skinned position and unit normal of rest point p / normal n at `clip_sample` of `clip`. hybrid_factor
 * is the runtime deform factor (0 = LBS, 1 = DQS): a uniform, or animtex_default_deform_factor(tex).
 * Parameters and locals never take the name of a uniform, push constant or vertex input: Blender's Vulkan
 * and Metal backends declare push constants as macros (#define deform_factor (PushConstants.pc_...)), which
 * turn such a declaration into a syntax error there (tests/shaders/test_shader_rules.py checks it). */
void animtex_bone_skin(sampler2D tex, AnimtexBoneInfo info, AnimtexClip clip, float clip_sample, ivec4 bone_ids,
                       vec4 bone_weights, float hybrid_factor, vec3 p, vec3 n, out vec3 position, out vec3 normal)
{
  int row0, row1;
  float alpha;
  animtex_frame_rows(clip, info.rows_per_frame, clip_sample, row0, row1, alpha);
  vec4 m0, m1, m2;
  animtex_skin_rows(tex, info, row0, row1, alpha, bone_ids, bone_weights, hybrid_factor, p, m0, m1, m2);
  animtex_apply_rows(m0, m1, m2, p, n, position, normal);
}

/* Cross-fade (core/animtex/crossfade.py): the bones of from_clip at from_sample blended towards to_clip at
 * to_sample by to_weight (animtex_bone_blend), then skinned with the runtime deform factor. */
void animtex_bone_skin_crossfade(sampler2D tex, AnimtexBoneInfo info, AnimtexClip from_clip, float from_sample,
                                 AnimtexClip to_clip, float to_sample, float to_weight, ivec4 bone_ids,
                                 vec4 bone_weights,
                                 float hybrid_factor, vec3 p, vec3 n, out vec3 position, out vec3 normal)
{
  int a0, a1, b0, b1;
  float a_alpha, b_alpha;
  animtex_frame_rows(from_clip, info.rows_per_frame, from_sample, a0, a1, a_alpha);
  animtex_frame_rows(to_clip, info.rows_per_frame, to_sample, b0, b1, b_alpha);
  vec4 m0, m1, m2;
  animtex_skin_rows_crossfade(tex, info, a0, a1, a_alpha, b0, b1, b_alpha, to_weight, bone_ids, bone_weights,
                              hybrid_factor, p, m0, m1, m2);
  animtex_apply_rows(m0, m1, m2, p, n, position, normal);
}

/* ---------------------------------------------------------------------------------------------- Auto */
struct AnimtexAutoInfo {
  int table;      /* first float of the embedded Auto table; 0: the texture carries no Auto */
  int row_offset; /* rows from a frame band's first row to its Auto rows */
  HsRoundShape shape;
};

/* The texture's Auto: the table's index is global 4 of a bone texture's block (0 in bakes without Auto). */
AnimtexAutoInfo animtex_auto_info(sampler2D tex, AnimtexBoneInfo info)
{
  AnimtexAutoInfo a;
  a.table = info.kind == 0 ? 0 : animtex_read_int(tex, animtex_read_int(tex, ANIMTEX_GLOBALS_START) + 4);
  a.row_offset = a.table > 0 ? animtex_read_int(tex, a.table + 5) : 0;
  a.shape.width = a.table > 0 ? animtex_read_float(tex, a.table) : 0.0;
  a.shape.swing_exponent = a.table > 0 ? animtex_read_float(tex, a.table + 1) : 0.0;
  a.shape.twist_weight = a.table > 0 ? animtex_read_float(tex, a.table + 2) : 0.0;
  a.shape.epsilon_sq = a.table > 0 ? animtex_read_float(tex, a.table + 3) : 0.0;
  a.shape.quarter_turn_sq = a.table > 0 ? animtex_read_float(tex, a.table + 4) : 1.0;
  a.shape.presence = a.table > 0 ? animtex_read_float(tex, a.table + 8) : 0.0;
  return a;
}

/* Bone `bone`'s Auto data data1 = (tau, sigma_xyz), data2 = (A, H_xyz), decoded and blended between the frame
 * bands at row0 and row1 (its Auto texels sit row_offset rows above its own, at its own columns). */
void animtex_auto_at(sampler2D tex, AnimtexBoneInfo info, AnimtexAutoInfo auto_info, int bone, int row0, int row1,
                     float alpha, out vec4 data1, out vec4 data2)
{
  ivec2 t = animtex_item_texel(bone, info.kind == 1 ? 3 : 2, info.items_per_row);
  int base = auto_info.table + 12 + 16 * bone;
  vec4 off1 = vec4(animtex_read_float(tex, base), animtex_read_float(tex, base + 1),
                   animtex_read_float(tex, base + 2), animtex_read_float(tex, base + 3));
  vec4 off2 = vec4(animtex_read_float(tex, base + 4), animtex_read_float(tex, base + 5),
                   animtex_read_float(tex, base + 6), animtex_read_float(tex, base + 7));
  vec4 scale1 = vec4(animtex_read_float(tex, base + 8), animtex_read_float(tex, base + 9),
                     animtex_read_float(tex, base + 10), animtex_read_float(tex, base + 11));
  vec4 scale2 = vec4(animtex_read_float(tex, base + 12), animtex_read_float(tex, base + 13),
                     animtex_read_float(tex, base + 14), animtex_read_float(tex, base + 15));
  int y0 = row0 + auto_info.row_offset + t.y;
  int y1 = row1 + auto_info.row_offset + t.y;
  vec4 a0 = off1 + scale1 * texelFetch(tex, ivec2(t.x, y0), 0);
  vec4 a1 = off1 + scale1 * texelFetch(tex, ivec2(t.x, y1), 0);
  vec4 b0 = off2 + scale2 * texelFetch(tex, ivec2(t.x + 1, y0), 0);
  vec4 b1 = off2 + scale2 * texelFetch(tex, ivec2(t.x + 1, y1), 0);
  data1 = a0 + alpha * (a1 - a0);
  data2 = b0 + alpha * (b1 - b0);
}

/* The vertex's Auto factor (hybrid_skin_round.glsl) from its influences' Auto data at the frame rows a,
 * blended towards those at the frame rows b by to_weight (0: a exactly, 1: b exactly; the b rows are read only
 * in between or at 1), and its rest data (x, r^2) (the mesh's auto_rest attribute). */
float animtex_auto_factor(sampler2D tex, AnimtexBoneInfo info, AnimtexAutoInfo auto_info, int a_row0, int a_row1,
                          float a_alpha, int b_row0, int b_row1, float b_alpha, float to_weight, ivec4 bone_ids,
                          vec4 bone_weights, vec4 rest_data)
{
  HsRoundSums sums = hs_round_begin(vec4(0.0, 0.0, 0.0, 0.0), vec4(0.0, 0.0, 0.0, 0.0));
  vec4 swings[4]; /* each influence's (tau, sigma_xyz), kept for the second pass */
  bool first = true;
  for (int k = 0; k < 4; k++) {
    swings[k] = vec4(0.0, 0.0, 0.0, 0.0);
    float w = bone_weights[k];
    if (w == 0.0) {
      continue;
    }
    vec4 x1, x2;
    animtex_auto_at(tex, info, auto_info, bone_ids[k], a_row0, a_row1, a_alpha, x1, x2);
    if (to_weight > 0.0) {
      vec4 y1, y2;
      animtex_auto_at(tex, info, auto_info, bone_ids[k], b_row0, b_row1, b_alpha, y1, y2);
      x1 = to_weight >= 1.0 ? y1 : x1 + to_weight * (y1 - x1);
      x2 = to_weight >= 1.0 ? y2 : x2 + to_weight * (y2 - x2);
    }
    if (first) {
      sums = hs_round_begin(x1, x2); /* relative to the first influence, as the numpy twin */
      first = false;
    }
    sums = hs_round_add(sums, w, x1, x2);
    swings[k] = x1;
  }
  for (int k = 0; k < 4; k++) {
    if (bone_weights[k] != 0.0) {
      sums = hs_round_spread(sums, bone_weights[k], swings[k]);
    }
  }
  return hs_round_finish(sums, rest_data, auto_info.shape);
}

/* The factor a vertex plays: hybrid_factor in [0, 1] as given; a negative one asks for Auto: the vertex's
 * own factor from rest_data where the texture carries Auto, else the texture's default factor (0.5 where
 * it has none). */
float animtex_runtime_factor(sampler2D tex, AnimtexBoneInfo info, int a0, int a1, float a_alpha, int b0, int b1,
                             float b_alpha, float to_weight, ivec4 bone_ids, vec4 bone_weights, vec4 rest_data,
                             float hybrid_factor)
{
  if (hybrid_factor >= 0.0) {
    return hybrid_factor;
  }
  AnimtexAutoInfo auto_info = animtex_auto_info(tex, info);
  if (auto_info.table > 0) {
    return animtex_auto_factor(tex, info, auto_info, a0, a1, a_alpha, b0, b1, b_alpha, to_weight, bone_ids,
                               bone_weights, rest_data);
  }
  float given = animtex_default_deform_factor(tex);
  return given >= 0.0 && given <= 1.0 ? given : 0.5; /* NaN (no factor recorded) fails both */
}

/* animtex_bone_skin_crossfade with Auto: hybrid_factor in [0, 1] is the runtime's one factor as there; a
 * negative hybrid_factor asks for Auto: each vertex's own factor from rest_data (its auto_rest attribute)
 * when the texture carries Auto, else the texture's default factor (0.5 where it has none). */
void animtex_bone_skin_crossfade_auto(sampler2D tex, AnimtexBoneInfo info, AnimtexClip from_clip,
                                      float from_sample, AnimtexClip to_clip, float to_sample, float to_weight,
                                      ivec4 bone_ids, vec4 bone_weights, vec4 rest_data,
                                      float hybrid_factor, vec3 p, vec3 n, out vec3 position, out vec3 normal)
{
  int a0, a1, b0, b1;
  float a_alpha, b_alpha;
  animtex_frame_rows(from_clip, info.rows_per_frame, from_sample, a0, a1, a_alpha);
  animtex_frame_rows(to_clip, info.rows_per_frame, to_sample, b0, b1, b_alpha);
  float f = animtex_runtime_factor(tex, info, a0, a1, a_alpha, b0, b1, b_alpha, to_weight, bone_ids, bone_weights,
                                   rest_data, hybrid_factor);
  vec4 m0, m1, m2;
  animtex_skin_rows_crossfade(tex, info, a0, a1, a_alpha, b0, b1, b_alpha, to_weight, bone_ids, bone_weights, f,
                              p, m0, m1, m2);
  animtex_apply_rows(m0, m1, m2, p, n, position, normal);
}

/* animtex_bone_skin_crossfade_auto with the rest tangent and bitangent sign `t` turned too
 * (animtex_apply_tangent), for normal maps. */
void animtex_bone_skin_crossfade_auto_tangent(sampler2D tex, AnimtexBoneInfo info, AnimtexClip from_clip,
                                              float from_sample, AnimtexClip to_clip, float to_sample,
                                              float to_weight, ivec4 bone_ids, vec4 bone_weights, vec4 rest_data,
                                              float hybrid_factor, vec3 p, vec3 n, vec4 t, out vec3 position,
                                              out vec3 normal, out vec4 tangent)
{
  int a0, a1, b0, b1;
  float a_alpha, b_alpha;
  animtex_frame_rows(from_clip, info.rows_per_frame, from_sample, a0, a1, a_alpha);
  animtex_frame_rows(to_clip, info.rows_per_frame, to_sample, b0, b1, b_alpha);
  float f = animtex_runtime_factor(tex, info, a0, a1, a_alpha, b0, b1, b_alpha, to_weight, bone_ids, bone_weights,
                                   rest_data, hybrid_factor);
  vec4 m0, m1, m2;
  animtex_skin_rows_crossfade(tex, info, a0, a1, a_alpha, b0, b1, b_alpha, to_weight, bone_ids, bone_weights, f,
                              p, m0, m1, m2);
  animtex_apply_rows(m0, m1, m2, p, n, position, normal);
  tangent = animtex_apply_tangent(m0, m1, m2, t, normal);
}
