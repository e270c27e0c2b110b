/* Uniform block of every Hybrid Skin shader (std140; packed by hybrid_skin/draw/shaders.py::pack_params).
 * One block instead of push constants: the set is larger than the 128 bytes Vulkan guarantees. */
struct HybridSkinParams {
  mat4 target_to_armature; /* mesh object space -> armature object space (Blender's premat) */
  mat4 armature_to_output; /* viewport: object_matrix @ armature_to_target; readback: armature_to_target */
  mat4 view_projection;    /* viewport only */
  vec4 color;              /* viewport only: scene-linear RGBA */
  vec4 eye;                /* viewport only: camera position (w = 1) or direction towards it (w = 0) */
  vec4 factors;            /* x: deform_factor, y: factor_map_mix (0 = ignore the per-vertex map),
                            * z: width of Auto's round profile */
  ivec4 flags;             /* x: use_pivot, y: encode_srgb, z: readback output (0 position, 1 unit normal,
                            * 2 deform factor), w: factor mode (0 factors.x/y, HS_FACTOR_MODE_AUTO_JOINT,
                            * HS_FACTOR_MODE_AUTO_ROUND) */
  ivec4 target;            /* readback only: x: width, y: height of the RGBA32F target */
};
