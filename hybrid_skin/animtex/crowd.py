"""Crowd preview: N instances of a baked character drawn from its animation texture in ONE draw call.

``hybrid_skin.crowd_preview`` toggles it for the active object's last animation texture bake (off by
default). All meshes of the character share one vertex buffer (rest position, normal, texel index, part,
4 bone indices and weights); a small float texture holds per instance its grid offset, time offset and
clip, and each part's object matrix. The vertex shader is the decoders of ``shaders/animtex_*.glsl``
(reading layout, clip table and decode terms from the texture's embedded metadata block), so the preview
plays exactly what an engine would. Non-looping clips replay from the start in the preview. The GLSL is
``shaders/animtex_crowd_{vert,frag}.glsl``, built and cached by the add-on's one shader loader
(``draw.shaders.get("crowd", "vertex" | "bone")``). The grid, the per-instance data and the vertex
columns are numpy (:mod:`..core.animtex.crowd`).

A stats line in the viewport gives the instance count and the CPU time of the draw call.
Unregister removes both draw handlers and frees every GPU object.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import blf
import bpy
import gpu
import numpy as np

from .. import bridge, runtime
from ..core.animtex import Kind, texture_from_metadata
from ..core.animtex.crowd import CrowdLayout, crowd_layout, crowd_texels, crowd_vertices
from ..core.animtex.sidecar import loads as load_sidecar
from ..draw import shaders
from ..draw.buffers import float_texture, vertex_buffer
from ..draw.readback import draw_points, render_rgba
from ..errors import HybridSkinError
from ..rig.factor import DEFAULT_FACTOR
from .files import read_image
from .scene import find_target
from .summary import last_summary

#: The runtime factor that plays Auto (``animtex_bone_skin_crossfade_auto``: a negative factor).
AUTO_FACTOR = -1.0

__all__ = ["CrowdPreview", "hide", "is_active", "preview_for", "show", "stats_line"]

#: ``output_mode`` of the crowd shader (``shaders/animtex_crowd_*.glsl``): lit colour, scene position and
#: instance number per pixel, and the per-vertex readback of positions or unit normals.
OUTPUT_COLOR, OUTPUT_PICK, OUTPUT_POSITIONS, OUTPUT_NORMALS = 0, 1, 2, 3



@dataclass
class CrowdState:
    """The crowd preview being drawn, and its two draw handlers (:meth:`..runtime.Runtime.state`)."""

    crowd: CrowdPreview | None = None
    crowd_handles: list[Any] = field(default_factory=list)


def _state() -> CrowdState:
    return runtime.get().state(CrowdState)


class CrowdPreview:
    """GPU resources for one baked character: the animation texture, the crowd texture and one batch.

    ``parts``: per mesh a dict with ``positions``, ``normals`` ``(N, 3)``, ``triangles`` ``(T, 3)``,
    ``items`` ``(N,)`` texel indices, ``bones``/``weights`` ``(N, 4)`` (bone kinds), ``auto_rest``
    ``(N, 4)`` (bone kinds that carry Auto) and ``matrix`` (4, 4). A bake that carries Auto plays Auto
    (``deform_factor`` -1, the decoders' convention), any other its sidecar's factor.
    """

    def __init__(self, meta: dict, channels: np.ndarray, parts: list[dict], layout: CrowdLayout):
        if meta.get("embedded_metadata") is None:
            raise HybridSkinError(
                "The crowd preview reads the texture's metadata block: bake with Embed Metadata"
            )
        self.kind = Kind(meta["kind"])
        variant = "vertex" if self.kind is Kind.VERTEX else "bone"
        self.program = shaders.get("crowd", variant)  # compile now: errors reach the operator
        baked = meta["deform_factor"]["value"]  # None when the bake had no single factor
        self.deform_factor = DEFAULT_FACTOR if baked is None else float(baked)
        if meta.get("auto") and self.kind is not Kind.VERTEX:
            self.deform_factor = AUTO_FACTOR
        self.count = len(layout.clips)
        self.layout = layout
        self.animation = float_texture(channels)  # float32: PNG codes / Q and EXR values exactly
        self.crowd = float_texture(crowd_texels(layout, [part["matrix"] for part in parts]))
        columns, triangles = crowd_vertices(parts)
        self.vertex_count = len(columns["item"])
        self._vertices = vertex_buffer(columns, self.vertex_count)
        self.batch = gpu.types.GPUBatch(
            type="TRIS", buf=self._vertices, elem=gpu.types.GPUIndexBuf(type="TRIS", seq=triangles)
        )
        self._points: gpu.types.GPUBatch | None = None  # one point per vertex, for readback_vertices
        self.draw_ms = 0.0

    def draw(
        self, view_projection: np.ndarray, seconds: float, *, color=(0.8, 0.8, 0.8, 1.0), output_mode: int = 0
    ) -> None:
        """Every instance at playback time ``seconds``, depth-tested, in ONE instanced draw call."""
        program = self.program
        saved = (gpu.state.depth_test_get(), gpu.state.depth_mask_get())
        start = time.perf_counter()
        try:
            gpu.state.depth_test_set("LESS_EQUAL")
            gpu.state.depth_mask_set(True)
            program.bind(
                self.animation,
                self.crowd,
                view_projection=view_projection,
                seconds=seconds,
                deform_factor=self.deform_factor,
                color=color,
                output_mode=output_mode,
            )
            self.batch.draw_instanced(program.shader, instance_start=0, instance_count=self.count)
        finally:
            gpu.state.depth_test_set(saved[0])
            gpu.state.depth_mask_set(saved[1])
        self.draw_ms = (time.perf_counter() - start) * 1e3

    def readback(self, view_projection: np.ndarray, seconds: float, size: int = 256) -> np.ndarray:
        """``(size, size, 4)``: scene position and instance number + 1 per pixel (0: nothing drawn)."""
        return render_rgba(size, size, lambda _framebuffer: self.draw(view_projection, seconds,
                                                                   output_mode=OUTPUT_PICK), depth=True)

    def readback_vertices(self, seconds: float, *, normals: bool = False) -> np.ndarray:
        """``(instances, vertices, 3)`` float32 scene positions (or unit normals) of every vertex of every
        instance at playback time ``seconds``, as the crowd shader computes them: one point per vertex
        and instance into an RGBA32F target (vertex = column, instance = row), read back."""
        width, height = self.vertex_count, self.count
        if self._points is None:
            self._points = gpu.types.GPUBatch(type="POINTS", buf=self._vertices)
        # In the readback modes the shader places vertex v of instance i at pixel (v, i) through this
        # matrix (pixel coordinates → clip space) instead of the view.
        to_clip = np.array([[2 / width, 0, 0, -1], [0, 2 / height, 0, -1], [0, 0, 1, 0], [0, 0, 0, 1]])

        def draw() -> None:
            self.program.bind(
                self.animation,
                self.crowd,
                view_projection=to_clip,
                seconds=seconds,
                deform_factor=self.deform_factor,
                color=(1.0, 1.0, 1.0, 1.0),
                output_mode=OUTPUT_NORMALS if normals else OUTPUT_POSITIONS,
            )
            self._points.draw_instanced(self.program.shader, instance_start=0, instance_count=height)

        flat = draw_points(width, height, width * height, draw, what="crowd vertices")
        return np.ascontiguousarray(flat.reshape(height, width, 4)[..., :3])

    def free(self) -> None:
        self.batch = self._points = self._vertices = self.animation = self.crowd = self.program = None


def _mesh_parts(meta: dict, obj: bpy.types.Object, scene: bpy.types.Scene) -> list[dict]:
    """The baked meshes as the engine sees them: coordinates, triangles and the bake's per-vertex data."""
    _arm, meshes = find_target(obj, scene)
    names = meta["mesh_attributes"]
    parts = []
    for mesh_obj in meshes:
        mesh = mesh_obj.data
        part = {
            "positions": bridge.vertex_positions(mesh),
            "normals": bridge.vertex_normals(mesh),
            "matrix": np.array(mesh_obj.matrix_world),
            "triangles": bridge.triangle_vertices(mesh),
        }
        wanted = ["texel_index"] if meta["kind"] == "VERTEX" else ["bone_indices", "bone_weights"]
        auto = meta["kind"] != "VERTEX" and bool(meta.get("auto"))
        wanted += ["auto_rest"] if auto else []
        missing = [names[k] for k in wanted if names.get(k) not in mesh.attributes]
        if missing:
            raise HybridSkinError(f"'{mesh_obj.name}' lacks {missing}: bake again with Mesh Data on")
        if meta["kind"] == "VERTEX":
            part["items"] = bridge.point_attribute(mesh, names["texel_index"], "value", 1, np.int32)[:, 0]
        else:
            part["items"] = np.zeros(len(mesh.vertices), np.int32)
            part["bones"] = bridge.point_attribute(mesh, names["bone_indices"], "color", 4)
            part["weights"] = bridge.point_attribute(mesh, names["bone_weights"], "color", 4)
            if auto:
                part["auto_rest"] = bridge.point_attribute(mesh, names["auto_rest"], "color", 4)
        parts.append(part)
    return parts


def file_beside(sidecar: Path, name: object) -> Path:
    """The file ``name`` that a sidecar names beside itself, refused in one sentence when the name would
    lead anywhere else (a folder, ``..``, an absolute path, a link out of the folder): the preview reads
    only the bake's own files, never what a damaged or foreign sidecar points at."""
    folder = sidecar.resolve().parent
    text = name if isinstance(name, str) else ""
    candidate = folder / text
    inside = (
        text not in ("", ".", "..")
        and Path(text).name == text
        and "\\" not in text
        and candidate.resolve().parent == folder
    )
    if not inside:
        raise HybridSkinError(
            f"{sidecar} names its texture {name!r}, which is not a file in its own folder: the crowd "
            "preview reads only the files beside the sidecar; bake again"
        )
    return candidate


def preview_for(
    obj: bpy.types.Object, scene: bpy.types.Scene, count: int, spacing: float = 0.0, seed: int = 0
) -> CrowdPreview:
    """A crowd of the active object's last bake (its sidecar and texture are read from disk)."""
    summary = last_summary(obj)
    if summary is None:
        raise HybridSkinError(f"'{obj.name}' has no animation texture bake: bake one first")
    sidecar = Path(summary.sidecar)
    if not sidecar.is_file():
        raise HybridSkinError(
            f"the last bake of '{obj.name}' is not where it was written ({sidecar} is missing): move its "
            "files back or bake again"
        )
    try:
        meta = load_sidecar(sidecar.read_text(encoding="utf-8"))
        image_name = meta["image"]
    except (ValueError, KeyError, TypeError) as error:  # a damaged or foreign file where the sidecar was
        raise HybridSkinError(
            f"{sidecar} is not a sidecar this add-on can read ({type(error).__name__}: {error}): bake again"
        ) from None
    image = file_beside(sidecar, image_name)
    if not image.is_file():
        raise HybridSkinError(
            f"the texture of the last bake of '{obj.name}' is missing ({image}): move it back beside "
            f"{sidecar.name} or bake again"
        )
    channels = read_image(str(image))
    try:  # checks the image matches the sidecar; a damaged sidecar's fields are named, never a traceback
        texture_from_metadata(meta, channels)
        parts = _mesh_parts(meta, obj, scene)
    except (KeyError, TypeError, IndexError, ValueError) as error:
        raise HybridSkinError(
            f"{sidecar} is damaged or does not match its texture ({type(error).__name__}: {error}): "
            "bake again"
        ) from None
    if spacing <= 0.0:
        points = np.concatenate([p["positions"] @ p["matrix"][:3, :3].T for p in parts])
        spacing = 1.5 * float(np.linalg.norm(points.max(0)[:2] - points.min(0)[:2]) or 1.0)
    durations = [c["duration"] for c in meta["clips"]]
    return CrowdPreview(meta, channels, parts, crowd_layout(count, spacing, durations, seed))


# ------------------------------------------------------------------------------ viewport drawing
def is_active() -> bool:
    return runtime.current() is not None and _state().crowd is not None


def _seconds(scene: bpy.types.Scene) -> float:
    return (scene.frame_current_final - scene.frame_start) * scene.render.fps_base / scene.render.fps


def _draw_view() -> None:
    preview, context = _state().crowd, bpy.context
    if preview is None or context.region_data is None:
        return
    try:
        preview.draw(np.array(context.region_data.perspective_matrix), _seconds(context.scene))
    except Exception as err:  # never raise in a draw callback: report once and switch the preview off
        print(f"Hybrid Skin crowd preview stopped: {err}")
        bpy.app.timers.register(hide, first_interval=0.0)


def _draw_stats() -> None:
    if _state().crowd is None:
        return
    blf.position(0, 20, 30, 0)
    blf.size(0, 13)
    blf.color(0, 1.0, 1.0, 1.0, 1.0)
    blf.draw(0, stats_line())


def stats_line() -> str:
    preview = _state().crowd
    if preview is None:
        return "Crowd preview off"
    return f"Crowd: {preview.count:,} instances, 1 draw call, {preview.draw_ms:.2f} ms (CPU submit)"


def show(preview: CrowdPreview) -> None:
    """Draw ``preview`` in every 3D viewport (replacing the one shown), with a statistics line."""
    hide()
    state = _state()
    state.crowd = preview
    space = bpy.types.SpaceView3D
    state.crowd_handles = [
        space.draw_handler_add(_draw_view, (), "WINDOW", "POST_VIEW"),
        space.draw_handler_add(_draw_stats, (), "WINDOW", "POST_PIXEL"),
    ]
    _redraw()


def hide() -> None:
    """Stop drawing the crowd and free its GPU objects."""
    state = _state()
    for handle in state.crowd_handles:
        bpy.types.SpaceView3D.draw_handler_remove(handle, "WINDOW")
    state.crowd_handles = []
    if state.crowd is not None:
        state.crowd.free()
        state.crowd = None
    _redraw()


def _redraw() -> None:
    for window in getattr(bpy.context.window_manager, "windows", ()):
        for area in window.screen.areas:
            if area.type == "VIEW_3D":
                area.tag_redraw()


def register() -> None:
    """Nothing to register: the preview starts from its operator (:mod:`.operators`)."""


def unregister() -> None:
    if bpy.app.timers.is_registered(hide):
        bpy.app.timers.unregister(hide)
    hide()
    shaders.clear_cache("crowd")
