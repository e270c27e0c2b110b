"""GPU resources of one skinned object: static data once per bind, O(bones) per frame.

:class:`GpuSkin` owns, for one mesh object:

* per bind (O(N), :meth:`GpuSkin.__init__`): a vertex buffer with one vertex per face corner (rest
  position, corner normal, the vertex's ``(offset, count)`` span and influence), the triangle index
  buffer and the influence texture (:mod:`hybrid_skin.core.gpu_layout`);
* per frame (O(bones), :meth:`GpuSkin.update_pose`): the bone texture, re-created from the palette (and,
  for the Auto factor, each bone's accumulated twist and swing: the shader derives every vertex's factor
  from them, as ``core.autofactor.vertex_factors`` does);
* per factor map change (O(N), rare): a second small vertex buffer with the per-vertex factor map and, for
  Auto's round profiles, each vertex's rest data (uploaded when the bind's array is replaced). The global
  factor is a uniform, so dragging the slider re-uploads nothing.

Everything is drawn by the shaders of :mod:`.shaders`; :meth:`GpuSkin.readback` runs the very same
skinning code once per vertex into a float target, which is how the tests hold the GPU to the numpy core.
Create, update and draw with a GPU context active (a draw callback, or headless after one render).
"""

from __future__ import annotations

import math
from typing import Protocol

import gpu
import numpy as np

from ..core.autofactor import AutoPose
from ..core.deform_factor import DeformFactor
from ..core.gpu_layout import pack_bone_texture, pack_influences
from ..core.skinning import BonePalette, SkinBinding
from ..core.small_linalg import inverse_affine
from . import shaders
from .buffers import float_texture, vertex_buffer
from .readback import draw_points

__all__ = ["GpuSkin", "SkinSource", "eye_from_view_projection"]

#: Pixels per row of the readback target (one pixel per vertex).
READBACK_WIDTH = 1024


class SkinSource(Protocol):
    """What :class:`GpuSkin` needs from a bind (``hybrid_skin.rig.mesh_bind.MeshBind`` provides it)."""

    rest_positions: np.ndarray
    rest_normals: np.ndarray
    binding: SkinBinding


def _f32(array: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(array, dtype=np.float32)


def eye_from_view_projection(view_projection: np.ndarray) -> np.ndarray:
    """Camera position ``(x, y, z, 1)`` (perspective) or direction towards the camera ``(x, y, z, 0)``
    (orthographic), recovered from a view-projection matrix alone, so :meth:`GpuSkin.draw` needs nothing
    else. The camera centre is the point that projects to clip ``(0, 0, c, 0)``; an orthographic camera
    has none, and the direction that lowers clip depth at constant ``w`` points at the viewer."""
    inverse = np.linalg.inv(np.asarray(view_projection, dtype=np.float64))
    centre = inverse @ np.array([0.0, 0.0, 1.0, 0.0])
    if abs(centre[3]) > 1e-9 * max(np.linalg.norm(centre[:3]), 1e-30):
        return np.append(centre[:3] / centre[3], 1.0)
    towards = (inverse @ np.array([0.0, 0.0, -1.0, 0.0]))[:3]
    return np.append(towards / np.linalg.norm(towards), 0.0)


class GpuSkin:
    """GPU skinning of one mesh object (see the module docstring for what is uploaded when).

    ``source``: rest positions/normals ``(N, 3)`` in mesh space and the binding (a bind). ``surface``:
    ``(triangles (T, 3) corner indices, corner_vertex (C,), corner_normals (C, 3))`` from
    ``bridge.surface``. ``factor``: the deform factor to draw with (see :meth:`set_factor`).
    """

    def __init__(self, source: SkinSource, surface: tuple[np.ndarray, np.ndarray, np.ndarray],
                 factor: DeformFactor | None = None) -> None:
        n = source.binding.vertex_count
        self.source = source
        self.vertex_count = n
        triangles, corner_vertex, corner_normals = surface
        self._corner_vertex = np.ascontiguousarray(corner_vertex, dtype=np.int64)
        if self._corner_vertex.size and (self._corner_vertex.min() < 0 or self._corner_vertex.max() >= n):
            raise ValueError(f"corner_vertex indexes outside the {n} vertices of the binding")
        self._corner_normals = _f32(corner_normals).reshape(-1, 3)
        self.corner_count = int(self._corner_vertex.shape[0])
        self._triangles = np.ascontiguousarray(triangles, dtype=np.int32).reshape(-1, 3)
        self.triangle_count = int(self._triangles.shape[0])
        self._index_buffer = (
            gpu.types.GPUIndexBuf(type="TRIS", seq=self._triangles) if self.triangle_count else None
        )
        self._bones: gpu.types.GPUTexture | None = None
        self.bone_count = 0
        self._use_pivot = False
        self._target_to_armature = np.eye(4)
        self._armature_to_target = np.eye(4)
        self._freed = False
        self.deform_factor = 0.5
        #: True: the shader computes the Auto factor per vertex from the bones' twist and swing.
        self.auto_factor = False
        #: The Auto profile of the bone data :meth:`update_pose` received last (None: none received).
        self.auto_profile: str | None = None
        self._auto_rest = np.zeros((n, 4), dtype=np.float32)
        self._auto_rest_source: np.ndarray | None = None
        self._factor_map = np.ones(n, dtype=np.float32)
        self._factor_map_source: np.ndarray | None = None
        self._factor_map_mix = 0.0
        self._upload_static(source.binding, source.rest_positions, source.rest_normals)
        self.set_factor(DeformFactor() if factor is None else factor)

    # -- per bind ---------------------------------------------------------------------------------------

    def _upload_static(
        self, binding: SkinBinding, rest_positions: np.ndarray, rest_normals: np.ndarray
    ) -> None:
        """Pack and upload influences and the per-corner static buffer (O(N); once per bind)."""
        n = self.vertex_count
        if binding.vertex_count != n or np.shape(rest_positions) != (n, 3):
            raise ValueError(
                f"binding ({binding.vertex_count}) and rest positions {np.shape(rest_positions)} "
                f"do not match the mesh's {n} vertices"
            )
        self._rest_source = (rest_positions, rest_normals)  # identity, to notice a bind that re-read its rest
        self._rest_positions = _f32(rest_positions)
        self._rest_normals = _f32(rest_normals).reshape(n, 3)
        layout = pack_influences(binding)
        self.binding = binding
        self._span = layout.span
        self._influence = layout.influence
        used = binding.bone_indices[binding.weights != 0.0]
        self._bones_needed = int(used.max()) + 1 if used.size else 0
        self._influences = float_texture(layout.texels, "RG32F")
        cv = self._corner_vertex
        static = {
            "rest_position": self._rest_positions[cv],
            "rest_normal": self._corner_normals,
            "skin_span": np.ascontiguousarray(self._span[cv]),
            "skin_influence": np.ascontiguousarray(self._influence[cv]),
        }
        self._corner_buffer = vertex_buffer(static, self.corner_count)
        self._readback_buffer: gpu.types.GPUVertBuf | None = None
        self._upload_factor_map()

    def _upload_factor_map(self) -> None:
        """The second vertex buffer: factor map and Auto rest data per corner (O(N), rare)."""
        cv = self._corner_vertex
        self._corner_factors = vertex_buffer(
            {"factor_map": self._factor_map[cv], "auto_rest": self._auto_rest[cv]}, self.corner_count
        )
        self._batch = None
        if self._index_buffer is not None:
            self._batch = gpu.types.GPUBatch(type="TRIS", buf=self._corner_buffer, elem=self._index_buffer)
            self._batch.vertbuf_add(self._corner_factors)
        self._readback_batch: gpu.types.GPUBatch | None = None

    # -- factors ----------------------------------------------------------------------------------------

    def set_factor(self, factor: DeformFactor) -> None:
        """A global factor sets one uniform only (no upload: slider drags are free). Per-vertex weights
        become the factor map (one O(N) upload, see :meth:`set_factor_map`) scaled by the factor's number
        in the shader. Auto switches the shader to the per-vertex Auto factor, computed from the bone data
        :meth:`update_pose` receives (no upload; the number and the map are ignored)."""
        if factor.auto:
            self.auto_factor = True
            return
        self.set_factor_map(factor.weights)
        self.deform_factor = float(factor.value)

    def set_factor_map(self, factor_map: np.ndarray | None) -> None:
        """Per-vertex map multiplied by :attr:`deform_factor` in the shader (e.g. a vertex group's weights,
        so that the slider still scales it for free); ``None`` goes back to the global factor alone.

        Passing the array object uploaded last again only re-enables the map (no upload): callers hand in
        the bind's own weights array, which is replaced, not edited, when the weights change."""
        if factor_map is not None and factor_map is not self._factor_map_source:
            values = _f32(factor_map)
            if values.shape != (self.vertex_count,):
                raise ValueError(f"the factor map needs shape ({self.vertex_count},), not {values.shape}")
            self._factor_map = values.copy()
            self._factor_map_source = factor_map
            self._upload_factor_map()
        self.auto_factor = False
        self._factor_map_mix = 0.0 if factor_map is None else 1.0

    # -- per frame --------------------------------------------------------------------------------------

    def update_pose(self, palette: BonePalette, target_to_armature: np.ndarray,
                    binding: SkinBinding | None = None, *, auto_bone_data: AutoPose | None = None) -> None:
        """Upload this frame's bones (O(bones); no per-vertex work).

        ``auto_bone_data``: the Auto profile and per-bone data of this pose (``PosedBind.auto_bone_data``,
        O(bones)), needed to draw with the Auto factor. Its per-vertex rest data (round profiles) is
        uploaded when it is not the array uploaded last (the bind replaces it, never edits it).

        Static data is re-uploaded (O(N)) only when the source replaced it: ``binding`` if given, else
        ``source.binding`` (``MeshBind.posed`` rebuilds it when B-bone or envelope influences must follow
        a new object transform), and ``source.rest_positions``/``rest_normals`` (re-read when shape keys
        animate). These are identity checks, free on every other frame.
        """
        self._check_alive()
        binding = binding if binding is not None else getattr(self.source, "binding", self.binding)
        rest = (getattr(self.source, "rest_positions", None), getattr(self.source, "rest_normals", None))
        if rest[0] is None or rest[1] is None:
            rest = self._rest_source
        stale_rest = rest[0] is not self._rest_source[0] or rest[1] is not self._rest_source[1]
        if binding is not self.binding or stale_rest:
            self._upload_static(binding, *rest)
        if palette.bone_count < self._bones_needed:
            raise ValueError(f"palette has {palette.bone_count} bones, the binding uses {self._bones_needed}")
        auto = auto_bone_data
        auto_bones = None if auto is None else auto.bones
        self._bones = float_texture(pack_bone_texture(palette, auto_bones), "RGBA32F")
        self.auto_profile = None if auto is None else auto.profile
        if auto is not None and auto.vertices is not None and auto.vertices is not self._auto_rest_source:
            if np.shape(auto.vertices) != (self.vertex_count, 4):
                shape = np.shape(auto.vertices)
                raise ValueError(f"Auto rest data needs shape ({self.vertex_count}, 4), not {shape}")
            self._auto_rest = _f32(auto.vertices).copy()
            self._auto_rest_source = auto.vertices
            self._upload_factor_map()
        self.bone_count = palette.bone_count
        self._use_pivot = palette.pivot is not None
        self._target_to_armature = np.asarray(target_to_armature, dtype=np.float64).reshape(4, 4)
        self._armature_to_target = inverse_affine(self._target_to_armature)

    def _params(
        self, armature_to_output: np.ndarray, deform_factor: float | None, **extra
    ) -> gpu.types.GPUUniformBuf:
        """A fresh uniform block per draw: cheap (272 bytes) and never rewritten while a draw may read it."""
        override = deform_factor is not None
        auto = self.auto_factor and not override
        if auto and self.auto_profile is None:
            raise RuntimeError("the Auto factor needs the pose's bone data: update_pose(auto_bone_data=...)")
        round_profile = auto and self.auto_profile != "JOINT"
        if round_profile and self._auto_rest_source is None:
            raise RuntimeError(f"the {self.auto_profile} Auto profile needs the vertices' rest data")
        mode = shaders.FACTOR_MODE_UNIFORM
        if auto:
            mode = shaders.FACTOR_MODE_AUTO_ROUND if round_profile else shaders.FACTOR_MODE_AUTO_JOINT
        words = shaders.pack_params(
            self._target_to_armature,
            armature_to_output,
            deform_factor=float(deform_factor) if override else self.deform_factor,
            factor_map_mix=0.0 if override else self._factor_map_mix,
            factor_mode=mode,
            auto_width=shaders.round_width(self.auto_profile) if round_profile else 0.0,
            use_pivot=self._use_pivot,
            **extra,
        )
        return gpu.types.GPUUniformBuf(words)

    def _check_alive(self) -> None:
        if self._freed:
            raise RuntimeError("this GpuSkin was freed; build a new one")

    def _check_pose(self) -> None:
        self._check_alive()
        if self._bones is None:
            raise RuntimeError("GpuSkin.update_pose must run before the first draw or readback")

    # -- drawing ----------------------------------------------------------------------------------------

    def draw(self, view_projection: np.ndarray, object_matrix: np.ndarray,
             color: tuple[float, ...] = (0.8, 0.8, 0.8, 1.0), *, deform_factor: float | None = None,
             variant: str = "hybrid", encode_srgb: bool = False) -> None:
        """Draw the skinned mesh, depth-tested, into the bound framebuffer.

        ``view_projection`` (world → clip) and ``object_matrix`` (the mesh object's world matrix) are
        row-major ``(4, 4)``; ``color`` is scene-linear RGB(A). ``deform_factor`` overrides the object's
        factor (and ignores the per-vertex map): 0 draws LBS, 1 DQS. ``variant`` picks a single-method
        shader (``"dqs"``/``"lbs"``) for benchmarks. ``encode_srgb`` for plain RGBA8 offscreen targets.
        GPU state is restored afterwards.
        """
        self._check_pose()
        if self._batch is None:
            return
        rgba = tuple(color) + (1.0,) * (4 - len(color))
        world_from_armature = np.asarray(object_matrix, dtype=np.float64) @ self._armature_to_target
        params = self._params(
            world_from_armature, deform_factor,
            view_projection=np.asarray(view_projection, dtype=np.float64),
            color=rgba, eye=tuple(eye_from_view_projection(view_projection)), encode_srgb=encode_srgb,
        )
        program = shaders.get("viewport", variant)
        saved = (gpu.state.depth_test_get(), gpu.state.depth_mask_get(), gpu.state.blend_get())
        try:
            gpu.state.depth_test_set("LESS_EQUAL")
            gpu.state.depth_mask_set(True)
            gpu.state.face_culling_set("NONE")
            gpu.state.blend_set("ALPHA" if rgba[3] < 1.0 else "NONE")
            program.bind(params, self._bones, self._influences)
            self._batch.draw(program.shader)
        finally:
            gpu.state.depth_test_set(saved[0])
            gpu.state.depth_mask_set(saved[1])
            gpu.state.blend_set(saved[2])

    def readback(self, *, normals: bool = False, deform_factor: float | None = None,
                 variant: str = "hybrid") -> np.ndarray:
        """Skinned positions (or unit normals) ``(N, 3)`` float32 in mesh space, computed by the shader
        library on the GPU: one point per vertex into an RGBA32F offscreen target, read back."""
        output = "normals" if normals else "positions"
        return self._readback(output, deform_factor, variant)[:, :3]

    def readback_factors(self, *, deform_factor: float | None = None) -> np.ndarray:
        """The deform factor ``(N,)`` float32 each vertex is skinned with on the GPU (Auto: computed by
        the shader from the bone data)."""
        return np.ascontiguousarray(self._readback("factors", deform_factor, "hybrid")[:, 0])

    def _readback(self, output: str, deform_factor: float | None, variant: str) -> np.ndarray:
        """``(N, 4)`` float32: what the readback shader writes per vertex for ``output``."""
        self._check_pose()
        n = self.vertex_count
        width = min(n, READBACK_WIDTH)
        height = math.ceil(n / width)
        if self._readback_batch is None:
            if self._readback_buffer is None:
                self._readback_buffer = vertex_buffer({
                    "rest_position": self._rest_positions,
                    "rest_normal": self._rest_normals,
                    "skin_span": self._span,
                    "skin_influence": self._influence,
                }, n)
            self._readback_batch = gpu.types.GPUBatch(type="POINTS", buf=self._readback_buffer)
            self._readback_batch.vertbuf_add(
                vertex_buffer({"factor_map": self._factor_map, "auto_rest": self._auto_rest}, n)
            )
        params = self._params(self._armature_to_target, deform_factor,
                              readback=output, target_size=(width, height))
        program = shaders.get("readback", variant)

        def draw() -> None:
            program.bind(params, self._bones, self._influences)
            self._readback_batch.draw(program.shader)

        return draw_points(width, height, n, draw, what="vertices")

    def free(self) -> None:
        """Release every GPU object now (textures and buffers go with their last reference)."""
        self._bones = self._influences = None
        self._batch = self._readback_batch = None
        self._corner_buffer = self._corner_factors = self._readback_buffer = None
        self._index_buffer = None
        self._freed = True
