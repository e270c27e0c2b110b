"""LBS | hybrid | (Auto |) DQS side by side, drawn with the viewport's own shaders and draw code, to a PNG.

Each mesh gets one :class:`~..draw.resources.GpuSkin`, drawn with factor overrides 0, the object's own factor,
(the pose's Auto factor,) and 1 into side-by-side viewports of one offscreen target (supersampled, then
averaged down for clean silhouettes), framed by the scene camera when there is one and otherwise by the
deformed meshes' bounds. Labels are drawn with ``blf`` into the same target. The picture goes to a PNG
(through a temporary Blender image, removed afterwards) and, from the operator, to an image datablock
to look at in Blender. Works headless (it creates the GPU context when needed).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import blf
import bpy
import gpu
import numpy as np
from mathutils import Matrix

from .. import bridge
from ..draw import ensure_gpu_context
from ..draw.colors import display_color
from ..draw.framing import frame_bounds
from ..draw.readback import render_rgba
from ..draw.resources import GpuSkin
from ..errors import HybridSkinError
from ..rig import bind, checks, factor, mesh_bind
from ..rig.factor import DeformFactor

__all__ = ["comparison_path", "render_comparison"]

BACKGROUND = (0.19, 0.19, 0.2, 1.0)  # display sRGB: the offscreen is plain RGBA8
SEPARATOR = (0.32, 0.32, 0.34, 1.0)
LABEL_COLOR = (0.95, 0.95, 0.95, 1.0)


def _scene_and_depsgraph(context_or_scene) -> tuple[bpy.types.Scene, bpy.types.Depsgraph]:
    if isinstance(context_or_scene, bpy.types.Scene):
        scene = context_or_scene
        if bpy.context.scene == scene:
            return scene, bpy.context.evaluated_depsgraph_get()
        depsgraph = scene.view_layers[0].depsgraph
        depsgraph.update()
        return scene, depsgraph
    return context_or_scene.scene, context_or_scene.evaluated_depsgraph_get()


def _posed_with_factor(obj: bpy.types.Object, depsgraph: bpy.types.Depsgraph):
    """The object's bind posed at this frame, its factor (Auto resolved from this pose) and its label."""
    bound = bind.cached_bind(obj, depsgraph)
    wanted = factor.resolve(obj, bound)
    posed = bound.posed(depsgraph)
    values = wanted.values(posed)
    if wanted.auto:
        profile = mesh_bind.auto_profile(obj)
        label = "Hybrid f=auto" + {"KEEP_VOLUME": " (keep volume)", "JOINT": " 0.1"}.get(profile, "")
    elif np.ndim(values) == 0:
        label = f"Hybrid f={float(values):.2f}"
    else:
        label = f"Hybrid f=group (mean {float(np.mean(values)):.2f})"
    return posed, values, label


def _draw_labels(texts: list[str], panel_width: int, height: int, scale: int) -> None:
    font = 0
    with gpu.matrix.push_pop(), gpu.matrix.push_pop_projection():
        gpu.matrix.load_identity()
        gpu.matrix.load_projection_matrix(Matrix.Identity(4))
        gpu.matrix.translate((-1.0, -1.0))
        gpu.matrix.scale((2.0 / (panel_width * len(texts)), 2.0 / height))
        blf.size(font, 18 * scale)
        blf.color(font, *LABEL_COLOR)
        for i, text in enumerate(texts):
            blf.position(font, i * panel_width + 14 * scale, height - 30 * scale, 0.0)
            blf.draw(font, text)


def _save_png(pixels: np.ndarray, filepath: Path) -> None:
    """``(H, W, 4)`` float display values, bottom row first (Blender's order) → PNG via a temporary image."""
    height, width = pixels.shape[:2]
    image = bpy.data.images.new("hybrid_skin_comparison", width, height, alpha=True)
    try:
        bridge.set_image_pixels(image, pixels)
        image.filepath_raw = str(filepath)
        image.file_format = "PNG"
        image.save()
    finally:
        bpy.data.images.remove(image)


def render_comparison(context_or_scene, obj: bpy.types.Object | Sequence[bpy.types.Object],
                      filepath: str | Path, width: int = 512, height: int = 512, **options) -> Path:
    """Render LBS | hybrid (the object's own factor) | DQS of ``obj`` at the current frame into a PNG
    (:func:`comparison_pixels` says what ``options`` are). Returns the absolute path written. Raises
    :class:`..errors.HybridSkinError` for an object Hybrid Skin cannot skin or a path it cannot write."""
    path = comparison_path(filepath)
    save_png(comparison_pixels(context_or_scene, obj, width, height, **options), path)
    return path


def comparison_pixels(
    context_or_scene, obj: bpy.types.Object | Sequence[bpy.types.Object], width: int = 512,
    height: int = 512, *, supersample: int = 2, auto_panel: bool = False,
    color: tuple[float, float, float] | None = None,
) -> np.ndarray:
    """LBS | hybrid (the object's own factor) | DQS of ``obj`` at the current frame: ``(H, W, 4)`` float
    display values, bottom row first (Blender's order).

    ``context_or_scene``: a ``bpy.types.Context`` or a ``Scene``. ``obj``: one mesh, or several drawn
    together (a character made of parts); the hybrid panel's label is the first one's. ``auto_panel``
    adds an Auto panel (the factor computed from this pose) before DQS. ``color`` (scene-linear RGB)
    replaces the solid-view colours (a dark material hides the shape). ``width`` × ``height`` is one
    panel; the image is ``panels * width`` × ``height``.
    """
    ensure_gpu_context()
    objects = [obj] if isinstance(obj, bpy.types.Object) else list(obj)
    scene, depsgraph = _scene_and_depsgraph(context_or_scene)
    parts = [_Part(o, depsgraph, color) for o in objects]
    label = parts[0].label
    # (label, factor override): None draws the object's own factor, AUTO the pose's own factor
    panels: list[tuple[str, float | str | None]] = [("LBS", 0.0), (label, None), ("DQS", 1.0)]
    if auto_panel:
        panels.insert(2, ("Auto", AUTO))

    panel_w, full_h = width * supersample, height * supersample
    aspect = panel_w / full_h
    if scene.camera is not None:
        camera = scene.camera.evaluated_get(depsgraph)
        projection = np.array(camera.calc_matrix_camera(depsgraph, x=panel_w, y=full_h))
        view_projection = projection @ np.linalg.inv(bridge.object_matrix(camera))
    else:
        world = np.concatenate([part.world_points() for part in parts])
        view_projection = frame_bounds(world, aspect)

    count = len(panels)

    def draw(framebuffer: gpu.types.GPUFrameBuffer) -> None:
        for i, (_text, override) in enumerate(panels):
            gpu.state.viewport_set(i * panel_w, 0, panel_w, full_h)
            for part in parts:
                part.draw(view_projection, override)
        gpu.state.viewport_set(0, 0, panel_w * count, full_h)
        gpu.state.scissor_test_set(True)
        for i in range(1, count):
            gpu.state.scissor_set(i * panel_w - supersample, 0, 2 * supersample, full_h)
            framebuffer.clear(color=SEPARATOR)
        gpu.state.scissor_test_set(False)
        _draw_labels([text for text, _override in panels], panel_w, full_h, supersample)

    try:
        for part in parts:
            part.upload()
        raw = render_rgba(panel_w * count, full_h, draw, depth=True, background=BACKGROUND, format="RGBA8")
    finally:
        for part in parts:
            part.free()
    s = supersample
    pixels = raw.reshape(full_h // s, s, panel_w * count // s, s, 4).mean(axis=(1, 3))
    pixels[..., 3] = 1.0
    return pixels


def save_png(pixels: np.ndarray, path: Path) -> None:
    """Write :func:`comparison_pixels` to ``path`` (checked by :func:`comparison_path`); a failure is one
    sentence with the system's reason (Blender's own message can run over several lines)."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        _save_png(pixels, path)
    except (OSError, RuntimeError) as err:  # image.save() raises RuntimeError when it cannot write
        reason = err.strerror if isinstance(err, OSError) and err.strerror else " ".join(str(err).split())
        reason = reason.removeprefix("Error:").strip().rstrip(".")
        raise HybridSkinError(f"Cannot write '{path}' ({reason}): choose a writable PNG file path") from None


#: The image datablock an unsaved comparison is shown in (a saved one is its PNG, loaded).
IMAGE_NAME = "Hybrid Skin Comparison"


def comparison_image(pixels: np.ndarray, path: Path | None) -> bpy.types.Image:
    """The comparison as an image datablock to look at in Blender: the PNG just written at ``path``
    (loaded once, reloaded on the next comparison to the same file), else an image of its own, generated
    in memory and replaced by the next unsaved comparison."""
    if path is not None:
        image = bpy.data.images.load(str(path), check_existing=True)
        image.reload()
        return image
    height, width = pixels.shape[:2]
    image = bpy.data.images.get(IMAGE_NAME)
    if image is None or image.source != "GENERATED" or image.library is not None:
        image = bpy.data.images.new(IMAGE_NAME, width, height, alpha=True)
    elif tuple(image.size) != (width, height):
        image.scale(width, height)
    bridge.set_image_pixels(image, pixels)
    return image


def comparison_path(filepath: str | Path) -> Path:
    """The absolute PNG path of a comparison; a clear error for a path that cannot be written."""
    text = str(filepath)
    if not text.lower().endswith(".png"):
        raise HybridSkinError(f"'{text}' is not a .png path: choose a PNG file name")
    path = Path(checks.absolute_path(text, "comparison image")).resolve()
    folder = next((p for p in (path.parent, *path.parent.parents) if p.exists()), path.parent)
    if path.is_dir() or not folder.is_dir() or not os.access(folder, os.W_OK):
        raise HybridSkinError(f"Cannot write '{path}': choose a PNG file in a writable folder")
    if path.exists() and not os.access(path, os.W_OK):
        raise HybridSkinError(f"'{path}' is read-only: choose another PNG file path")
    return path


#: Panel override meaning "the Auto factor of this pose".
AUTO = "AUTO"


class _Part:
    """One mesh of a comparison: its posed bind, factor and GPU skin (created by :meth:`upload`)."""

    def __init__(self, obj: bpy.types.Object, depsgraph: bpy.types.Depsgraph,
                 color: tuple[float, float, float] | None = None) -> None:
        self.obj = obj
        # opaque panels: the PNG has no transparency
        self.color = (*(display_color(obj)[:3] if color is None else color), 1.0)
        self.posed, self.factors, self.label = _posed_with_factor(obj, depsgraph)
        self.object_matrix = bridge.object_matrix(obj.evaluated_get(depsgraph))
        self.gpu_skin: GpuSkin | None = None

    def world_points(self) -> np.ndarray:
        local = np.concatenate([self.posed.skin(f)[0] for f in (0.0, 1.0)]).astype(np.float64)
        return local @ self.object_matrix[:3, :3].T + self.object_matrix[:3, 3]

    def _own_factor(self) -> DeformFactor:
        per_vertex = np.ndim(self.factors) > 0
        return DeformFactor.per_vertex(self.factors) if per_vertex else DeformFactor(float(self.factors))

    def upload(self) -> None:
        bound = self.posed.bind
        self.gpu_skin = GpuSkin(bound, bridge.surface(self.obj.data), self._own_factor())
        self.gpu_skin.update_pose(self.posed.palette, self.posed.target_to_armature,
                                  auto_bone_data=self.posed.auto_bone_data())  # O(bones): for an Auto panel

    def draw(self, view_projection: np.ndarray, override: float | str | None) -> None:
        color = self.color
        skin = self.gpu_skin
        if override == AUTO:
            skin.set_factor(DeformFactor.automatic())
            skin.draw(view_projection, self.object_matrix, color, encode_srgb=True)
            skin.set_factor(self._own_factor())
            return
        skin.draw(view_projection, self.object_matrix, color, deform_factor=override, encode_srgb=True)

    def free(self) -> None:
        if self.gpu_skin is not None:
            self.gpu_skin.free()
            self.gpu_skin = None
