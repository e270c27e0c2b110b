/* Hybrid LBS/DQS skinning: the GLSL twin of hybrid_skin/core/skinning.py and core/autofactor.py.
 *
 * Every function here mirrors a numpy function of the core, formula for formula, so that the
 * readback tests can hold the GPU to the CPU reference at float32 precision:
 *   hs_blend                   <-> _linear_blend and _dual_quaternion_blend (Blender's sign rule + pivot)
 *   dq_to_rows                 <-> _dq_rows_to_matrices   (dual_quaternion_lib.glsl, prepended)
 *   hs_hybrid_rows             <-> _chunk_matrices        (factor mix, then the influence blend)
 *   hs_cofactor_apply          <-> cofactor_apply
 *   hs_auto_factor             <-> autofactor.joint_vertex_factors   (Auto profile "JOINT")
 *   hs_round_factor            <-> autofactor.round_factors          (Auto profiles "ROUND", "KEEP_VOLUME";
 *                                                                     hybrid_skin_round.glsl, prepended)
 * A 3x4 matrix is three vec4 rows r0, r1, r2 (p' = (dot(r0, p1), dot(r1, p1), dot(r2, p1)), p1 = (p, 1)),
 * the layout of the bone texture, so no transposes hide between the texture and the maths.
 *
 * Resources (declared by hybrid_skin/draw/shaders.py, layout in hybrid_skin/core/gpu_layout.py):
 *   bone_texture       RGBA32F, 10 texels per bone row: matrix rows 0-2, real, dual, pivot columns 0-2,
 *                      Auto data (tau, sigma_xyz), (A, H_xyz)
 *   influence_texture  RG32F, HS_INFLUENCE_WIDTH texels per row: (bone index, weight) in stored order
 *   params             the HybridSkinParams block of hybrid_skin_params.glsl (flags.x = 0 when every bone
 *                      is rigid: skips three fetches per influence; flags.w selects the factor:
 *                      HS_FACTOR_MODE_AUTO_JOINT or HS_FACTOR_MODE_AUTO_ROUND (width factors.z) for Auto)
 *   auto_rest          per vertex (x, y, z, r^2): rest position in armature space and squared rest distance
 *                      to its nearest bone (autofactor.vertex_geometry), for the round profiles
 * Defines: HS_DQS_ONLY / HS_LBS_ONLY compile single-method variants (benchmarks, A/B comparisons);
 * HS_AUTO_SWING, HS_AUTO_RANGE, HS_AUTO_EPSILON_SQ, HS_ROUND_SWING_EXPONENT, HS_ROUND_TWIST_WEIGHT,
 * HS_ROUND_PRESENCE, HS_QUARTER_TURN_SQ, HS_AUTO_TEXEL and HS_FACTOR_MODE_AUTO_* come from the Python modules
 * that own them (core/autofactor.py, core/gpu_layout.py, draw/shaders.py).
 */

vec4 hs_bone_texel(int bone, int texel)
{
  return texelFetch(bone_texture, ivec2(texel, bone), 0);
}

/* (bone index, weight) of influence entry `entry`; the texture wraps every HS_INFLUENCE_WIDTH entries. */
vec2 hs_influence_entry(int entry)
{
  return texelFetch(influence_texture, ivec2(entry % HS_INFLUENCE_WIDTH, entry / HS_INFLUENCE_WIDTH), 0).xy;
}

/* One influence into a running dual quaternion sum with Blender's sign rule: the influence is negated when
 * its real part points away from the running sum, in stored order (entry 0 never is). Scaled bones also
 * sum their pivot columns (signed weight * pivot), applied to the rest point by hs_dq_finish. */
void hs_dq_add(int e, int bone, float weight, inout vec4 real, inout vec4 dual,
               inout vec4 pivot0, inout vec4 pivot1, inout vec4 pivot2)
{
  vec4 bone_real = hs_bone_texel(bone, 3);
  float w = (e > 0 && dot(real, bone_real) < 0.0) ? -weight : weight;
  real += w * bone_real;
  dual += w * hs_bone_texel(bone, 4);
  if (params.flags.x != 0) {
    pivot0 += w * hs_bone_texel(bone, 5);
    pivot1 += w * hs_bone_texel(bone, 6);
    pivot2 += w * hs_bone_texel(bone, 7);
  }
}

void hs_dq_finish(vec3 p, vec4 real, vec4 dual, vec4 pivot0, vec4 pivot1, vec4 pivot2,
                  out vec4 r0, out vec4 r1, out vec4 r2)
{
  if (params.flags.x != 0) {
    dual += pivot0 * p.x + pivot1 * p.y + pivot2 * p.z;
  }
  dq_to_rows(real, dual, r0, r1, r2);
}

/* The influence blends in one walk over the vertex's influences: the LBS rows l (= _linear_blend) when
 * use_lbs, the rigid rows q of the blended dual quaternion (= _dual_quaternion_blend) when use_dqs. Each
 * (bone, weight) entry is fetched once, so the hybrid costs DQS plus three texel fetches and twelve
 * multiply-adds per influence; blends not asked for stay zero. One code path for every factor (no
 * per-method copies): a software rasteriser runs untaken branches masked, so copies would cost there. */
void hs_blend(ivec2 span, vec3 p, bool use_lbs, bool use_dqs, out vec4 l0, out vec4 l1, out vec4 l2,
              out vec4 q0, out vec4 q1, out vec4 q2)
{
  l0 = vec4(0.0);
  l1 = vec4(0.0);
  l2 = vec4(0.0);
  vec4 real = vec4(0.0), dual = vec4(0.0);
  vec4 pivot0 = vec4(0.0), pivot1 = vec4(0.0), pivot2 = vec4(0.0);
  for (int e = 0; e < span.y; e++) {
    vec2 bw = hs_influence_entry(span.x + e);
    int bone = int(bw.x);
    if (use_lbs) {
      l0 += bw.y * hs_bone_texel(bone, 0);
      l1 += bw.y * hs_bone_texel(bone, 1);
      l2 += bw.y * hs_bone_texel(bone, 2);
    }
    if (use_dqs) {
      hs_dq_add(e, bone, bw.y, real, dual, pivot0, pivot1, pivot2);
    }
  }
  q0 = vec4(0.0);
  q1 = vec4(0.0);
  q2 = vec4(0.0);
  if (use_dqs) {
    hs_dq_finish(p, real, dual, pivot0, pivot1, pivot2, q0, q1, q2);
  }
}

/* Per-vertex hybrid matrix M = (1 - f) LBS + f DQS (LBS alone for f <= 0, DQS alone for f >= 1, as
 * _chunk_matrices), then M <- I + influence (M - I) (armature space). */
void hs_hybrid_rows(ivec2 span, float influence, float f, vec3 p, out vec4 r0, out vec4 r1, out vec4 r2)
{
#if defined(HS_DQS_ONLY)
  f = 1.0;
#elif defined(HS_LBS_ONLY)
  f = 0.0;
#endif
  vec4 q0, q1, q2;
  hs_blend(span, p, f < 1.0, f > 0.0, r0, r1, r2, q0, q1, q2);
  if (f >= 1.0) {
    r0 = q0;
    r1 = q1;
    r2 = q2;
  }
  else if (f > 0.0) {
    float g = 1.0 - f;
    r0 = r0 * g + f * q0;
    r1 = r1 * g + f * q1;
    r2 = r2 * g + f * q2;
  }
  if (influence != 1.0) {
    float rest = 1.0 - influence;
    r0 = r0 * influence + vec4(rest, 0.0, 0.0, 0.0);
    r1 = r1 * influence + vec4(0.0, rest, 0.0, 0.0);
    r2 = r2 * influence + vec4(0.0, 0.0, rest, 0.0);
  }
}

vec3 hs_transform_point(vec4 r0, vec4 r1, vec4 r2, vec3 p)
{
  vec4 p1 = vec4(p, 1.0);
  return vec3(dot(r0, p1), dot(r1, p1), dot(r2, p1));
}

/* cofactor(M3) n, with rows r*.xyz: transforms normals like inverse-transpose, without a division,
 * so a degenerate (collapsed) matrix still gives a finite normal. */
vec3 hs_cofactor_apply(vec3 r0, vec3 r1, vec3 r2, vec3 n)
{
  return vec3(dot(cross(r1, r2), n), dot(cross(r2, r0), n), dot(cross(r0, r1), n));
}

/* cofactor of a mat4's upper 3x3 (GLSL matrices are column-major: m[c][r]). */
vec3 hs_cofactor_apply(mat4 m, vec3 n)
{
  vec3 row0 = vec3(m[0][0], m[1][0], m[2][0]);
  vec3 row1 = vec3(m[0][1], m[1][1], m[2][1]);
  vec3 row2 = vec3(m[0][2], m[1][2], m[2][2]);
  return hs_cofactor_apply(row0, row1, row2, n);
}

/* Auto profile "JOINT" (core/autofactor.py::joint_vertex_factors) from the per-bone (tau, sigma) of bone texel
 * HS_AUTO_TEXEL over the vertex's influences:
 *   P = sum_{i<j} w_i w_j   T = sum_{i<j} w_i w_j (tau_i - tau_j)^2   S = sum_{i<j} w_i w_j |sigma_i - sigma_j|^2
 *   f = HS_AUTO_SWING + HS_AUTO_RANGE * T / (T + S + HS_AUTO_EPSILON_SQ * P)   (HS_AUTO_SWING when no pairs)
 * The pair sums are accumulated in one pass: entry k (weight w, data x) adds, against the entries before it
 * (total weight W, weighted mean m, weighted squared deviations M2),
 *   sum_{i<k} w_i w (x - x_i)^2 = w (W (x - m)^2 + M2)   to T and S, and w W to P.
 * That identity is exact and has no cancellation (unlike W sum w x^2 - (sum w x)^2): float32 here keeps
 * the numpy pair loop's precision at O(K) instead of O(K^2) fetches. */
float hs_auto_factor(ivec2 span)
{
  float total = 0.0, pairs = 0.0;
  vec4 mean = vec4(0.0), deviations = vec4(0.0), pair_sums = vec4(0.0);
  for (int e = 0; e < span.y; e++) {
    vec2 bw = hs_influence_entry(span.x + e);
    vec4 x = hs_bone_texel(int(bw.x), HS_AUTO_TEXEL);
    vec4 d = x - mean;
    pair_sums += bw.y * (total * d * d + deviations);
    pairs += bw.y * total;
    total += bw.y;
    mean += total > 0.0 ? (bw.y / total) * d : vec4(0.0);
    deviations += bw.y * d * (x - mean); /* West's weighted update: both factors share a sign */
  }
  float t = pair_sums.x;
  float s = pair_sums.y + pair_sums.z + pair_sums.w;
  float denom = t + s + HS_AUTO_EPSILON_SQ * pairs;
  return HS_AUTO_SWING + HS_AUTO_RANGE * (denom > 0.0 ? t / denom : 0.0);
}

/* Auto profiles "ROUND" and "KEEP_VOLUME" (core/autofactor.py::round_factors; their width is params.factors.z):
 * hybrid_skin_round.glsl's one formula (prepended) over the vertex's influences, with both Auto texels
 * x1 = (tau, sigma_xyz), x2 = (A, H_xyz) of each bone, and rest_data = (x, r^2): the pair sums in one pass, the
 * swing vectors' spread for the presence in a second (one more texel per influence); 1 without pairs. */
float hs_round_factor(ivec2 span, vec4 rest_data, float width)
{
  int first = span.y > 0 ? int(hs_influence_entry(span.x).x) : 0;
  HsRoundSums sums = hs_round_begin(hs_bone_texel(first, HS_AUTO_TEXEL), hs_bone_texel(first, HS_AUTO_TEXEL + 1));
  for (int e = 0; e < span.y; e++) {
    vec2 bw = hs_influence_entry(span.x + e);
    int bone = int(bw.x);
    sums = hs_round_add(sums, bw.y, hs_bone_texel(bone, HS_AUTO_TEXEL), hs_bone_texel(bone, HS_AUTO_TEXEL + 1));
  }
  for (int e = 0; e < span.y; e++) {
    vec2 bw = hs_influence_entry(span.x + e);
    sums = hs_round_spread(sums, bw.y, hs_bone_texel(int(bw.x), HS_AUTO_TEXEL));
  }
  HsRoundShape shape;
  shape.width = width;
  shape.swing_exponent = HS_ROUND_SWING_EXPONENT;
  shape.twist_weight = HS_ROUND_TWIST_WEIGHT;
  shape.epsilon_sq = HS_AUTO_EPSILON_SQ;
  shape.quarter_turn_sq = HS_QUARTER_TURN_SQ;
  shape.presence = HS_ROUND_PRESENCE;
  return hs_round_finish(sums, rest_data, shape);
}

/* The per-vertex deform factor: Auto (from the pose, flags.w), else the global slider times the (optional)
 * per-vertex map, in [0, 1]. */
float hs_vertex_factor(ivec2 span, float map_value, vec4 rest_data)
{
  if (params.flags.w == HS_FACTOR_MODE_AUTO_JOINT) {
    return hs_auto_factor(span);
  }
  if (params.flags.w == HS_FACTOR_MODE_AUTO_ROUND) {
    return hs_round_factor(span, rest_data, params.factors.z);
  }
  return clamp(params.factors.x * mix(1.0, map_value, params.factors.y), 0.0, 1.0);
}

/* Skin a mesh-space rest point and normal: into armature space (params.target_to_armature), through
 * the hybrid matrix, out through params.armature_to_output. The normal is not normalised (callers do it once). */
void hs_skin(ivec2 span, float influence, float f, vec3 rest_p, vec3 rest_n, out vec3 out_p, out vec3 out_n)
{
  vec3 p = (params.target_to_armature * vec4(rest_p, 1.0)).xyz;
  vec3 n = hs_cofactor_apply(params.target_to_armature, rest_n);
  vec4 r0, r1, r2;
  hs_hybrid_rows(span, influence, f, p, r0, r1, r2);
  out_p = (params.armature_to_output * vec4(hs_transform_point(r0, r1, r2, p), 1.0)).xyz;
  out_n = hs_cofactor_apply(params.armature_to_output, hs_cofactor_apply(r0.xyz, r1.xyz, r2.xyz, n));
}
