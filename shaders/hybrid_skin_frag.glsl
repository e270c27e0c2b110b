/* Viewport fragment shader: a small studio rig, cheap enough for any mesh and readable on any colour.
 *
 * Two-sided Lambert from a key light riding with the view (above and to the left of the eye), a soft
 * sky/ground hemisphere, and a rim term that outlines the silhouette - the part of the picture where
 * LBS and DQS differ most. params.color is scene-linear (object colour / material base colour) and
 * shading is done in linear light. params.flags.y = 1 encodes display sRGB for plain RGBA8 targets
 * (PNG export); Blender's viewport framebuffer encodes by itself, so the viewport draws with 0.
 */

vec3 hs_linear_to_srgb(vec3 c)
{
  c = max(c, vec3(0.0));
  vec3 lo = c * 12.92;
  vec3 hi = 1.055 * pow(c, vec3(1.0 / 2.4)) - 0.055;
  return mix(hi, lo, vec3(lessThanEqual(c, vec3(0.0031308))));
}

void main()
{
  vec3 n = normalize(world_normal);
  vec3 to_eye = params.eye.w != 0.0 ? normalize(params.eye.xyz / params.eye.w - world_position)
                                    : normalize(params.eye.xyz);
  /* Two-sided: light the side that faces the viewer (open meshes, flipped normals, mirrored objects). */
  if (dot(n, to_eye) < 0.0) {
    n = -n;
  }
  vec3 up = vec3(0.0, 0.0, 1.0);
  vec3 side = cross(to_eye, up);
  side = dot(side, side) > 1e-8 ? normalize(side) : vec3(1.0, 0.0, 0.0);
  vec3 key = normalize(to_eye + 0.6 * up + 0.5 * side);

  float lambert = max(dot(n, key), 0.0);
  float hemisphere = 0.5 + 0.5 * n.z;
  float rim = pow(1.0 - max(dot(n, to_eye), 0.0), 3.0);

  vec3 base = params.color.rgb;
  /* Key + ambient peak just below 1 on a white surface, so light colours keep their shading. */
  vec3 sky = vec3(0.26, 0.28, 0.31), ground = vec3(0.07, 0.065, 0.06);
  vec3 lit = base * (0.66 * lambert + mix(ground, sky, hemisphere)) + 0.16 * rim * vec3(0.9, 0.95, 1.0);
  FragColor = vec4(params.flags.y != 0 ? hs_linear_to_srgb(lit) : lit, params.color.a);
}
