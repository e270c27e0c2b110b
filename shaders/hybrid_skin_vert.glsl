/* Viewport vertex shader: one vertex per face corner (hard edges and custom normals survive).
 *
 * Inputs per corner: rest_position / rest_normal (mesh space, at bind), skin_span = (offset, count) of the
 * corner's vertex in the influence texture, skin_influence (mask x deformed), factor_map (per-vertex factor
 * map) and auto_rest (the vertex's rest data for Auto's round profiles), in a second vertex buffer so that
 * changing them never touches the static data.
 * params.armature_to_output is object_matrix @ armature_to_target, so out positions are world space.
 */

void main()
{
  vec3 skinned_p, skinned_n;
  float f = hs_vertex_factor(skin_span, factor_map, auto_rest);
  hs_skin(skin_span, skin_influence, f, rest_position, rest_normal, skinned_p, skinned_n);
  world_position = skinned_p;
  world_normal = skinned_n;
  gl_Position = params.view_projection * vec4(skinned_p, 1.0);
}
