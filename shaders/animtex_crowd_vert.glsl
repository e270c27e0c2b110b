/* Crowd preview vertex shader: one instanced draw call of a baked character (hybrid_skin/animtex/crowd.py).
 *
 * The vertex stage is animtex_vertex.glsl (+ animtex_bone.glsl for bone kinds, with CROWD_BONES defined)
 * followed by this file, so the preview plays exactly what the decoders (and an engine) compute.
 * Inputs per vertex: rest_position / rest_normal (mesh space), item (VERTEX: texel index of the vertex),
 * part (which mesh of the character), bones / weights (bone kinds: 4 bone indices and weights), auto_rest
 * (bone bakes that carry Auto: the vertex's Auto rest data; deform_factor < 0 plays Auto).
 * The crowd texture holds per instance (column gl_InstanceID) the grid offset and time offset (row 0)
 * and the clip (row 1), and per part (row 2 + part) the top three rows of its object matrix.
 * output_mode (hybrid_skin/animtex/crowd.py): 0 lit colour, 1 scene position and instance number per
 * pixel, 2 / 3 one point per vertex and instance with its scene position / unit normal (readback).
 */

void main()
{
  vec4 place = texelFetch(crowd, ivec2(gl_InstanceID, 0), 0); /* xyz grid offset, time offset */
  int clip_index = int(texelFetch(crowd, ivec2(gl_InstanceID, 1), 0).x);
  AnimtexClip clip = animtex_clip(animation, clip_index);
  float seconds = time + place.w;
  float period = float(clip.frame_count - 1) / clip.sample_rate;
  if (!clip.loop && period > 0.0) {
    seconds -= period * floor(seconds / period); /* the preview replays clips that do not loop */
  }
  float clip_sample = animtex_sample_at_time(clip, seconds);
  vec3 p, n;
#ifdef CROWD_BONES
  AnimtexBoneInfo info = animtex_bone_info(animation);
  animtex_bone_skin_crossfade_auto(animation, info, clip, clip_sample, clip, clip_sample, 0.0, bones, weights,
                                   auto_rest, deform_factor, rest_position, rest_normal, p, n);
#else
  AnimtexVertexInfo info = animtex_vertex_info(animation);
  animtex_vertex_sample(animation, info, clip, item, clip_sample, rest_position, p, n);
#endif
  vec4 r0 = texelFetch(crowd, ivec2(0, 2 + part), 0);
  vec4 r1 = texelFetch(crowd, ivec2(1, 2 + part), 0);
  vec4 r2 = texelFetch(crowd, ivec2(2, 2 + part), 0);
  vec4 p1 = vec4(p, 1.0);
  world_position = vec3(dot(r0, p1), dot(r1, p1), dot(r2, p1)) + place.xyz;
  /* Normal by the cofactor matrix of the part's 3x3 (right under non-uniform scale); the fragment normalises. */
  world_normal = vec3(dot(cross(r1.xyz, r2.xyz), n), dot(cross(r2.xyz, r0.xyz), n),
                      dot(cross(r0.xyz, r1.xyz), n));
  instance_id = gl_InstanceID;
  if (output_mode >= 2) {
    /* Per-vertex readback (tests): vertex v of instance i to pixel (v, i); view_projection maps pixel
     * coordinates to clip space here. */
    gl_Position = view_projection * vec4(float(gl_VertexID) + 0.5, float(gl_InstanceID) + 0.5, 0.0, 1.0);
    gl_PointSize = 1.0;
  }
  else {
    gl_Position = view_projection * vec4(world_position, 1.0);
  }
}
