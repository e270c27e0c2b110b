/* Dual quaternions shared by the skinning (hybrid_skin_lib.glsl) and bone animation texture
 * (animtex_bone.glsl) shaders; the loader (hybrid_skin/draw/shaders.py) prepends this file to both.
 *
 *   dq_to_rows  <-> core/skinning.py _dq_rows_to_matrices  (Blender's mul_v3m3_dq)
 *
 * A quaternion is vec4(w, x, y, z); a 3x4 matrix is three vec4 rows r0, r1, r2
 * (p' = (dot(r0, p1), dot(r1, p1), dot(r2, p1)), p1 = (p, 1)).
 */

/* Un-normalised dual quaternion (real, dual) -> rigid 3x4 rows, divided by |real|^2 (0 for a zero real). */
void dq_to_rows(vec4 real, vec4 dual, out vec4 r0, out vec4 r1, out vec4 r2)
{
  float w = real.x, x = real.y, y = real.z, z = real.w;
  float t0 = dual.x, t1 = dual.y, t2 = dual.z, t3 = dual.w;
  float norm_sq = dot(real, real);
  float inv = norm_sq > 0.0 ? 1.0 / norm_sq : 0.0;
  float ww = w * w, xx = x * x, yy = y * y, zz = z * z;
  float xy = x * y, xz = x * z, yz = y * z, wx = w * x, wy = w * y, wz = w * z;
  r0 = inv * vec4(ww + xx - yy - zz,
                  2.0 * (xy - wz),
                  2.0 * (xz + wy),
                  2.0 * (-t0 * x + w * t1 - t2 * z + y * t3));
  r1 = inv * vec4(2.0 * (xy + wz),
                  ww + yy - xx - zz,
                  2.0 * (yz - wx),
                  2.0 * (-t0 * y + t1 * z - x * t3 + w * t2));
  r2 = inv * vec4(2.0 * (xz - wy),
                  2.0 * (yz + wx),
                  ww + zz - xx - yy,
                  2.0 * (-t0 * z + x * t2 + w * t3 - t1 * y));
}
