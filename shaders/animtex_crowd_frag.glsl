/* Crowd preview fragment shader: flat two-sided light, or (output_mode 1, readback into an RGBA32F
 * target) the scene position and the instance number + 1 (0 stays "nothing drawn"), or (output_mode
 * 2 / 3, one point per vertex) the vertex's scene position / unit normal, so tests can hold every
 * instance to the numpy decoders number for number.
 */

void main()
{
  if (output_mode == 1) { /* readback: scene position and instance number + 1 */
    FragColor = vec4(world_position, float(instance_id + 1));
    return;
  }
  float len = length(world_normal);
  if (output_mode == 2 || output_mode == 3) { /* per-vertex readback: position or unit normal */
    FragColor = vec4(output_mode == 2 ? world_position : (len > 0.0 ? world_normal / len : vec3(0.0)), 1.0);
    return;
  }
  vec3 n = len > 0.0 ? world_normal / len : vec3(0.0, 0.0, 1.0);
  float light = 0.35 + 0.65 * abs(dot(n, normalize(vec3(0.3, -0.5, 0.8))));
  FragColor = vec4(color.rgb * light, color.a);
}
