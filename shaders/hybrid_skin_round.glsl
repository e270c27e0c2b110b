/* Auto's round profiles ("ROUND", "KEEP_VOLUME"): the GLSL twin of hybrid_skin/core/autofactor.py::round_factors,
 * written once. The live display (hybrid_skin_lib.glsl, bone data from its bone texture), the animation
 * texture decoders (animtex_bone.glsl, bone data decoded from a bake that carries Auto) and, through
 * tools/make_ports.py, the engine ports (HLSL: Unity, Unreal; Godot) all compute the factor with these four
 * functions, so a change of the profile is made here and regenerated, never rewritten per port:
 *
 *   HsRoundSums s = hs_round_begin(x1 of the first influence, x2 of the first influence);
 *   for each influence (bone data x1 = (tau, sigma_xyz), x2 = (A, H_xyz), weight w): s = hs_round_add(s, w, x1, x2);
 *   for each influence again:                                                         s = hs_round_spread(s, w, x1);
 *   f = hs_round_finish(s, rest_data, shape);
 *
 * Over the vertex's influences the pair sums P = sum_{i<j} w_i w_j, T = sum w_i w_j dtau^2,
 * S = sum w_i w_j |dsigma|^2, sum w_i w_j dA^2 and sum w_i w_j dA dH are accumulated in one pass (West's
 * weighted update: entry k adds w (W (x - m)^2 + M2) against the entries before it, exact and without the
 * cancellation of W sum w x^2 - (sum w x)^2), relative to the first influence's data as the numpy twin does
 * (nearby values subtract exactly). Then the vertex's joint J = (sum dA dH) / (sum dA^2),
 * z^2 = |x - J|^2 / r^2 - 1 from rest_data = (x, r^2) (autofactor.vertex_geometry), F = exp(-k z^2) with
 * k = width (theta / 90 deg)^swing_exponent, theta^2 = S / P. The second pass takes the deviations d of the
 * swing vectors from their weighted mean (known only after the first): M2 = sum w |d|^2, M4 = sum w |d|^4,
 * the swinging weight a = (M2 / M4) (M2 / W) (that order: tiny weights neither underflow nor overflow) and
 * the presence pi = a^3 / (a^3 + presence^3), which fades the profile in where a swinging weight ends; then
 *   f = 1 - pi S (1 - F) / (twist_weight T + S + epsilon_sq P),   1 without pairs.
 *
 * The subset every port takes as it is: vecN types (make_ports.py writes floatN for HLSL), constructors with
 * every component, no struct constructors, structs passed by value and returned, no globals, no built-ins
 * beyond dot, min, max, exp and log. Names are long enough not to meet a caller's resources (Blender's Vulkan
 * and Metal backends declare push constants as macros: a parameter `weight` broke a test shader with a
 * `weight` push constant).
 */

struct HsRoundShape {
  float width;           /* k at a 90 degree swing (ROUND 2.17, KEEP_VOLUME 0.74) */
  float swing_exponent;  /* how k changes with the swing */
  float twist_weight;    /* twist's weight against swing */
  float epsilon_sq;      /* the squared rest angle (10 degrees) */
  float quarter_turn_sq; /* (pi / 2)^2: theta at which k = width */
  float presence;        /* the swinging weight over which the profile fades in (0.05; 0: no fade) */
};

struct HsRoundSums {
  vec4 origin1; /* the first influence's (tau, sigma_xyz) ... */
  vec4 origin2; /* ... and (A, H_xyz): every datum is taken relative to them */
  float total;  /* the weight so far */
  float pairs;  /* P */
  vec4 mean1;
  vec4 mean2;
  vec4 dev1;    /* weighted squared deviations of (tau, sigma) */
  float dev_a;  /* ... of A */
  vec3 co_ah;   /* weighted co-deviations of A and H */
  float sum_t;
  float sum_s;
  float sum_aa;
  vec3 sum_ah;
  float spread2; /* M2 = sum w |d|^2 of the swing vectors' deviations (second pass) */
  float spread4; /* M4 = sum w |d|^4 */
};

HsRoundSums hs_round_begin(vec4 origin1, vec4 origin2)
{
  HsRoundSums s;
  s.origin1 = origin1;
  s.origin2 = origin2;
  s.total = 0.0;
  s.pairs = 0.0;
  s.mean1 = vec4(0.0, 0.0, 0.0, 0.0);
  s.mean2 = vec4(0.0, 0.0, 0.0, 0.0);
  s.dev1 = vec4(0.0, 0.0, 0.0, 0.0);
  s.dev_a = 0.0;
  s.co_ah = vec3(0.0, 0.0, 0.0);
  s.sum_t = 0.0;
  s.sum_s = 0.0;
  s.sum_aa = 0.0;
  s.sum_ah = vec3(0.0, 0.0, 0.0);
  s.spread2 = 0.0;
  s.spread4 = 0.0;
  return s;
}

/* The sums with one more influence, of weight `influence_weight`, whose bone has the Auto data
 * data1 = (tau, sigma_xyz), data2 = (A, H_xyz). */
HsRoundSums hs_round_add(HsRoundSums s, float influence_weight, vec4 data1, vec4 data2)
{
  float w = influence_weight;
  vec4 x1 = data1 - s.origin1;
  vec4 x2 = data2 - s.origin2;
  vec4 d1 = x1 - s.mean1;
  vec4 d2 = x2 - s.mean2;
  s.sum_t += w * (s.total * d1.x * d1.x + s.dev1.x);
  s.sum_s += w * (s.total * dot(d1.yzw, d1.yzw) + s.dev1.y + s.dev1.z + s.dev1.w);
  s.sum_aa += w * (s.total * d2.x * d2.x + s.dev_a);
  s.sum_ah += w * (s.total * d2.x * d2.yzw + s.co_ah);
  s.pairs += w * s.total;
  s.total += w;
  float r = s.total > 0.0 ? w / s.total : 0.0;
  s.mean1 += r * d1;
  s.mean2 += r * d2;
  vec4 e1 = x1 - s.mean1;
  vec4 e2 = x2 - s.mean2;
  s.dev1 += w * d1 * e1; /* West's weighted update: both factors share a sign */
  s.dev_a += w * d2.x * e2.x;
  s.co_ah += w * d2.x * e2.yzw;
  return s;
}

/* The second pass: the sums with the swing deviation of one influence (every influence once, after every
 * hs_round_add), of weight `influence_weight` and Auto data data1 = (tau, sigma_xyz). */
HsRoundSums hs_round_spread(HsRoundSums s, float influence_weight, vec4 data1)
{
  vec3 d = data1.yzw - s.origin1.yzw - s.mean1.yzw;
  float dd = dot(d, d);
  s.spread2 += influence_weight * dd;
  s.spread4 += influence_weight * dd * dd;
  return s;
}

/* The factor from the sums, the vertex's rest data (x, y, z, r^2) and the profile's constants. */
float hs_round_finish(HsRoundSums s, vec4 rest_data, HsRoundShape shape)
{
  vec3 joint = s.sum_aa > 0.0 ? s.sum_ah / s.sum_aa : vec3(0.0, 0.0, 0.0);
  vec3 off = rest_data.xyz - joint;
  float ratio = rest_data.w > 0.0 ? dot(off, off) / rest_data.w : 0.0;
  float along = s.sum_aa > 0.0 ? max(ratio - 1.0, 0.0) : 0.0;
  float swing = (s.pairs > 0.0 ? s.sum_s / s.pairs : 0.0) / shape.quarter_turn_sq;
  float k = shape.width * exp(0.5 * shape.swing_exponent * log(max(swing, 1e-12)));
  float profile = exp(-k * along);
  float spread = s.spread4 > 0.0 ? s.spread2 / s.spread4 : 0.0;
  float scaled = s.total * shape.presence;
  float q = min(spread * (scaled > 0.0 ? s.spread2 / scaled : 1e6), 1e6); /* a / presence */
  float cube = q * q * q;
  float fade = cube / (cube + 1.0);
  float twist = shape.twist_weight * s.sum_t;
  float rest = shape.epsilon_sq * s.pairs;
  float denom = twist + s.sum_s + rest;
  float depth = denom > 0.0 ? s.sum_s / denom : 0.0;
  return 1.0 - fade * depth * (1.0 - profile);
}
