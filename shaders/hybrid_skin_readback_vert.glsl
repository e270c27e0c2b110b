/* Readback vertex shader (tests and debugging): one POINT per mesh vertex, drawn to pixel
 * (id % width, id / width) of an RGBA32F target of params.target.xy, carrying as its colour the skinned
 * position in mesh space - or, with params.flags.z = 1, the unit normal; with 2, the deform factor in x.
 * Same library, same formulas as the viewport; params.armature_to_output is armature_to_target here. */

void main()
{
  vec3 skinned_p, skinned_n;
  float f = hs_vertex_factor(skin_span, factor_map, auto_rest);
  hs_skin(skin_span, skin_influence, f, rest_position, rest_normal, skinned_p, skinned_n);
  float len = length(skinned_n);
  vec3 unit_n = len > 0.0 ? skinned_n / len : vec3(0.0);
  vec3 value = params.flags.z == 2 ? vec3(f, 0.0, 0.0) : (params.flags.z == 1 ? unit_n : skinned_p);
  readback_value = vec4(value, 1.0);

  int id = gl_VertexID;
  ivec2 pixel = ivec2(id % params.target.x, id / params.target.x);
  vec2 size = vec2(params.target.xy);
  gl_Position = vec4((vec2(pixel) + 0.5) / size * 2.0 - 1.0, 0.0, 1.0);
  gl_PointSize = 1.0;
}
