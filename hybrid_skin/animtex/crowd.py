"""Crowd preview: N instances of a baked character drawn from its animation texture in ONE draw call.

``hybrid_skin.crowd_preview`` toggles it for the active object's last animation texture bake (off by
default). All meshes of the character share one vertex buffer (rest position, normal, texel index, part,
4 bone indices and weights); a small float texture holds per instance its grid offset, time offset and
clip, and each part's object matrix. The vertex shader is the decoders of ``shaders/animtex_*.glsl``
(reading layout, clip table and decode terms from the texture's embedded metadata block), so the preview
plays exactly what an engine would. Non-looping clips replay from the start in the preview. The GLSL is
``shaders/animtex_crowd_{vert,frag}.glsl``, built and cached by the add-on's one shader loader
(``gpu.shaders.get("crowd", "vertex" | "bone")``).

A stats line in the viewport gives the instance count and the CPU time of the draw call.
Unregister removes both draw handlers and frees every GPU object.
"""

from __future__ import annotations

import json
import math
import time
from dataclasses import dataclass
from pathlib import Path

import bpy
import gpu
import numpy as np
from bpy.props import FloatProperty, IntProperty

from .. import bridge
from ..core.animtex import Kind, texture_from_metadata
from ..draw import shaders
from . import bake as animtex_bake

__all__ = ["CrowdLayout", "CrowdPreview", "crowd_layout", "is_active"]

@dataclass(frozen=True)
class CrowdLayout:
    """Per instance: grid offset ``(N, 3)``, time offset in seconds ``(N,)`` and clip ``(N,)``."""

    offsets: np.ndarray
    time_offsets: np.ndarray
    clips: np.ndarray


def crowd_layout(count: int, spacing: float, durations: list[float], seed: int = 0) -> CrowdLayout:
    """``count`` instances on a square grid centred on the origin (XY plane), clips cycling, random times."""
    side = max(1, math.ceil(math.sqrt(count)))
    i = np.arange(count)
    offsets = np.stack(
        [(i % side - (side - 1) / 2) * spacing, (i // side - (side - 1) / 2) * spacing, np.zeros(count)], -1
    )
    clips = i % len(durations)
    rng = np.random.default_rng(seed)
    times = rng.random(count) * np.maximum(np.asarray(durations)[clips], 1e-6)
    return CrowdLayout(offsets.astype(np.float32), times.astype(np.float32), clips.astype(np.int32))


def _texture(data: np.ndarray) -> gpu.types.GPUTexture:
    data = np.ascontiguousarray(data, dtype=np.float32)
    height, width = data.shape[:2]
    buffer = gpu.types.Buffer("FLOAT", data.size, data.reshape(-1))
    return gpu.types.GPUTexture((width, height), format="RGBA32F", data=buffer)


class CrowdPreview:
    """GPU resources for one baked character: the animation texture, the crowd texture and one batch.

    ``parts``: per mesh a dict with ``positions``, ``normals`` ``(N, 3)``, ``triangles`` ``(T, 3)``,
    ``items`` ``(N,)`` texel indices, ``bones``/``weights`` ``(N, 4)`` (bone kinds) and ``matrix`` (4, 4).
    """

    def __init__(self, meta: dict, channels: np.ndarray, parts: list[dict], layout: CrowdLayout):
        if meta.get("embedded_metadata") is None:
            raise bridge.HybridSkinError(
                "The crowd preview reads the texture's metadata block: bake with Embed Metadata"
            )
        self.kind = Kind(meta["kind"])
        variant = "vertex" if self.kind is Kind.VERTEX else "bone"
        self.program = shaders.get("crowd", variant)  # compile now: errors reach the operator
        self.deform_factor = float(meta["deform_factor"]["value"] or 0.5)
        self.count = len(layout.clips)
        self.layout = layout
        self.animation = _texture(channels)  # float32: PNG codes / Q and EXR values exactly
        width = max(self.count, 3)
        crowd = np.zeros((2 + len(parts), width, 4), np.float32)
        crowd[0, : self.count, :3] = layout.offsets  # added to each part's world matrix
        crowd[0, : self.count, 3] = layout.time_offsets
        crowd[1, : self.count, 0] = layout.clips
        for p, part in enumerate(parts):
            crowd[2 + p, :3] = np.asarray(part["matrix"], dtype=np.float32)[:3]
        self.crowd = _texture(crowd)
        self.batch = self._batch(parts)
        self.draw_ms = 0.0

    def _batch(self, parts: list[dict]) -> gpu.types.GPUBatch:
        columns = {name: [] for _kind, name in shaders.CROWD_VERTEX_INPUTS}
        triangles, start = [], 0
        for p, part in enumerate(parts):
            n = len(part["positions"])
            columns["rest_position"].append(part["positions"])
            columns["rest_normal"].append(part["normals"])
            columns["item"].append(part["items"])
            columns["part"].append(np.full(n, p))
            columns["bones"].append(part.get("bones", np.zeros((n, 4))))
            columns["weights"].append(part.get("weights", np.zeros((n, 4))))
            triangles.append(np.asarray(part["triangles"]) + start)
            start += n
        fmt = gpu.types.GPUVertFormat()
        data = {}
        for kind, name in shaders.CROWD_VERTEX_INPUTS:
            integer = kind in ("INT", "IVEC4")
            values = np.concatenate(columns[name]).astype(np.int32 if integer else np.float32)
            data[name] = np.ascontiguousarray(values)
            width = 1 if values.ndim == 1 else values.shape[1]
            fmt.attr_add(
                id=name,
                comp_type="I32" if integer else "F32",
                len=width,
                fetch_mode="INT" if integer else "FLOAT",
            )
        vbo = gpu.types.GPUVertBuf(fmt, start)
        for name, values in data.items():
            vbo.attr_fill(name, values)
        index = gpu.types.GPUIndexBuf(
            type="TRIS", seq=np.ascontiguousarray(np.concatenate(triangles), np.int32)
        )
        return gpu.types.GPUBatch(type="TRIS", buf=vbo, elem=index)

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
        offscreen = gpu.types.GPUOffScreen(size, size, format="RGBA32F")
        try:
            with offscreen.bind():
                fb = gpu.state.active_framebuffer_get()
                fb.clear(color=(0.0, 0.0, 0.0, 0.0), depth=1.0)
                self.draw(view_projection, seconds, output_mode=1)
                pixels = fb.read_color(0, 0, size, size, 4, 0, "FLOAT")
            pixels.dimensions = size * size * 4
            return np.array(pixels, dtype=np.float32).reshape(size, size, 4)
        finally:
            offscreen.free()

    def free(self) -> None:
        self.batch = self.animation = self.crowd = self.program = None


def _mesh_parts(meta: dict, obj: bpy.types.Object, scene: bpy.types.Scene) -> list[dict]:
    """The baked meshes as the engine sees them: coordinates, triangles and the bake's per-vertex data."""
    _arm, meshes = animtex_bake.find_target(obj, scene)
    names = meta["mesh_attributes"]
    parts = []
    for mesh_obj in meshes:
        mesh = mesh_obj.data
        n = len(mesh.vertices)
        mesh.calc_loop_triangles()
        part = {
            "positions": animtex_bake.bulk_read(mesh.vertices, "co", n, 3),
            "normals": animtex_bake.bulk_read(mesh.vertex_normals, "vector", n, 3),
            "matrix": np.array(mesh_obj.matrix_world),
        }
        tri = np.empty(len(mesh.loop_triangles) * 3, np.int32)
        mesh.loop_triangles.foreach_get("vertices", tri)
        part["triangles"] = tri.reshape(-1, 3)
        wanted = ["texel_index"] if meta["kind"] == "VERTEX" else ["bone_indices", "bone_weights"]
        missing = [names[k] for k in wanted if names.get(k) not in mesh.attributes]
        if missing:
            raise bridge.HybridSkinError(f"'{mesh_obj.name}' lacks {missing}: bake again with Mesh Data on")
        if meta["kind"] == "VERTEX":
            items = np.empty(n, np.int32)
            mesh.attributes[names["texel_index"]].data.foreach_get("value", items)
            part["items"] = items
        else:
            part["items"] = np.zeros(n, np.int32)
            for key, out in (("bone_indices", "bones"), ("bone_weights", "weights")):
                values = np.empty(n * 4, np.float32)
                mesh.attributes[names[key]].data.foreach_get("color", values)
                part[out] = values.reshape(n, 4)
        parts.append(part)
    return parts


def preview_for(
    obj: bpy.types.Object, scene: bpy.types.Scene, count: int, spacing: float = 0.0, seed: int = 0
) -> CrowdPreview:
    """A crowd of the active object's last bake (its sidecar and texture are read from disk)."""
    summary = animtex_bake.last_summary(obj)
    if summary is None or not Path(summary["json"]).is_file():
        raise bridge.HybridSkinError(f"'{obj.name}' has no animation texture bake: bake one first")
    meta = json.loads(Path(summary["json"]).read_text(encoding="utf-8"))
    channels = animtex_bake.read_image(str(Path(summary["json"]).with_name(meta["image"])))
    texture_from_metadata(meta, channels)  # checks the image matches the sidecar
    parts = _mesh_parts(meta, obj, scene)
    if spacing <= 0.0:
        points = np.concatenate([p["positions"] @ p["matrix"][:3, :3].T for p in parts])
        spacing = 1.5 * float(np.linalg.norm(points.max(0)[:2] - points.min(0)[:2]) or 1.0)
    durations = [c["duration"] for c in meta["clips"]]
    return CrowdPreview(meta, channels, parts, crowd_layout(count, spacing, durations, seed))


# ------------------------------------------------------------------------------ viewport drawing
_state: dict = {"preview": None, "handles": []}


def is_active() -> bool:
    return _state["preview"] is not None


def _seconds(scene: bpy.types.Scene) -> float:
    return (scene.frame_current_final - scene.frame_start) * scene.render.fps_base / scene.render.fps


def _draw_view() -> None:
    preview, context = _state["preview"], bpy.context
    if preview is None or context.region_data is None:
        return
    try:
        preview.draw(np.array(context.region_data.perspective_matrix), _seconds(context.scene))
    except Exception as err:  # never raise in a draw callback: report once and switch the preview off
        print(f"Hybrid Skin crowd preview stopped: {err}")
        bpy.app.timers.register(hide, first_interval=0.0)


def _draw_stats() -> None:
    import blf

    preview = _state["preview"]
    if preview is None:
        return
    blf.position(0, 20, 30, 0)
    blf.size(0, 13)
    blf.color(0, 1.0, 1.0, 1.0, 1.0)
    blf.draw(0, stats_line())


def stats_line() -> str:
    preview = _state["preview"]
    if preview is None:
        return "Crowd preview off"
    return f"Crowd: {preview.count:,} instances, 1 draw call, {preview.draw_ms:.2f} ms (CPU submit)"


def show(preview: CrowdPreview) -> None:
    hide()
    _state["preview"] = preview
    space = bpy.types.SpaceView3D
    _state["handles"] = [
        space.draw_handler_add(_draw_view, (), "WINDOW", "POST_VIEW"),
        space.draw_handler_add(_draw_stats, (), "WINDOW", "POST_PIXEL"),
    ]
    _redraw()


def hide() -> None:
    for handle in _state["handles"]:
        bpy.types.SpaceView3D.draw_handler_remove(handle, "WINDOW")
    _state["handles"] = []
    if _state["preview"] is not None:
        _state["preview"].free()
        _state["preview"] = None
    _redraw()


def _redraw() -> None:
    for window in getattr(bpy.context.window_manager, "windows", ()):
        for area in window.screen.areas:
            if area.type == "VIEW_3D":
                area.tag_redraw()


class HYBRIDSKIN_OT_crowd_preview(bpy.types.Operator):
    """Show or hide a crowd of the last animation texture bake, drawn with one instanced draw call"""

    bl_idname = "hybrid_skin.crowd_preview"
    bl_label = "Crowd Preview"

    count: IntProperty(name="Instances", default=1000, min=1, soft_max=10000, max=100000)
    spacing: FloatProperty(
        name="Spacing",
        subtype="DISTANCE",
        default=0.0,
        min=0.0,
        description="Grid spacing (0: from the character's size)",
    )

    @classmethod
    def poll(cls, context):
        return is_active() or context.active_object is not None

    def execute(self, context):
        if is_active():
            hide()
            self.report({"INFO"}, "Crowd preview off")
            return {"FINISHED"}
        try:
            preview = preview_for(context.active_object, context.scene, self.count, self.spacing)
        except (bridge.HybridSkinError, shaders.ShaderCompileError, ValueError) as err:
            self.report({"ERROR"}, str(err))
            return {"CANCELLED"}
        show(preview)
        self.report({"INFO"}, f"Crowd preview: {preview.count:,} instances")
        return {"FINISHED"}


classes = (HYBRIDSKIN_OT_crowd_preview,)


def register() -> None:
    for cls in classes:
        bpy.utils.register_class(cls)


def unregister() -> None:
    if bpy.app.timers.is_registered(hide):
        bpy.app.timers.unregister(hide)
    hide()
    shaders.clear_cache("crowd")
    for cls in reversed(classes):
        bpy.utils.unregister_class(cls)
