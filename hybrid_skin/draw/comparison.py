"""LBS | hybrid | DQS side by side, rendered with the viewport's own shaders and draw code, into a PNG.

Three draws of one :class:`~.resources.GpuSkin` with factor overrides 0, the object's factor and 1, into
three viewports of one offscreen target (supersampled, then averaged down for clean silhouettes), framed
by the scene camera when there is one and otherwise by the deformed mesh's bounds. Labels are drawn with
``blf`` into the same target; the PNG is written through a temporary Blender image, removed afterwards.
Works headless (it creates the GPU context when needed).
"""

from __future__ import annotations

import math
from pathlib import Path

import bpy
import gpu
import numpy as np
from mathutils import Matrix

from .. import bridge
from ..core.skinning import skin
from ..factor import vertex_factors
from ..skin import bind as rig_module
from . import ensure_gpu_context
from .resources import GpuSkin

__all__ = ["display_color", "frame_bounds", "render_comparison"]

BACKGROUND = (0.19, 0.19, 0.2, 1.0)  # display sRGB: the offscreen is plain RGBA8
SEPARATOR = (0.32, 0.32, 0.34, 1.0)
LABEL_COLOR = (0.95, 0.95, 0.95, 1.0)
#: Default framing: from the front (-Y), a little right and above, like Blender's front-right 3/4 view.
VIEW_DIRECTION = (0.45, -1.0, 0.35)
FIELD_OF_VIEW = math.radians(30.0)


def display_color(obj: bpy.types.Object) -> tuple[float, float, float, float]:
    """Scene-linear colour the viewport shows: the material's viewport colour, else the object colour."""
    material = obj.active_material
    rgba = material.diffuse_color if material is not None else obj.color
    return (float(rgba[0]), float(rgba[1]), float(rgba[2]), 1.0)


def _look_at(eye: np.ndarray, target: np.ndarray) -> np.ndarray:
    forward = (target - eye) / np.linalg.norm(target - eye)
    up = np.array([0.0, 0.0, 1.0]) if abs(forward[2]) < 0.999 else np.array([0.0, 1.0, 0.0])
    right = np.cross(forward, up)
    right /= np.linalg.norm(right)
    true_up = np.cross(right, forward)
    view = np.eye(4)
    view[0, :3], view[1, :3], view[2, :3] = right, true_up, -forward
    view[:3, 3] = -view[:3, :3] @ eye
    return view


def _perspective(fov_y: float, aspect: float, near: float, far: float) -> np.ndarray:
    f = 1.0 / math.tan(fov_y / 2.0)
    return np.array([
        [f / aspect, 0.0, 0.0, 0.0],
        [0.0, f, 0.0, 0.0],
        [0.0, 0.0, (far + near) / (near - far), 2.0 * far * near / (near - far)],
        [0.0, 0.0, -1.0, 0.0],
    ])


def frame_bounds(points_world: np.ndarray, aspect: float) -> np.ndarray:
    """World → clip matrix that fits the bounding sphere of ``points_world`` ``(M, 3)`` into the view."""
    lo, hi = points_world.min(axis=0), points_world.max(axis=0)
    centre = (lo + hi) / 2.0
    radius = max(float(np.linalg.norm(points_world - centre, axis=1).max()), 1e-6)
    fov_x = 2.0 * math.atan(math.tan(FIELD_OF_VIEW / 2.0) * aspect)
    distance = 1.08 * radius / math.sin(min(FIELD_OF_VIEW, fov_x) / 2.0)
    direction = np.asarray(VIEW_DIRECTION) / np.linalg.norm(VIEW_DIRECTION)
    view = _look_at(centre + distance * direction, centre)
    near = max(distance - 2.0 * radius, distance * 1e-3)
    return _perspective(FIELD_OF_VIEW, aspect, near, distance + 2.0 * radius) @ view


def _scene_and_depsgraph(context_or_scene) -> tuple[bpy.types.Scene, bpy.types.Depsgraph]:
    if isinstance(context_or_scene, bpy.types.Scene):
        scene = context_or_scene
        if bpy.context.scene == scene:
            return scene, bpy.context.evaluated_depsgraph_get()
        depsgraph = scene.view_layers[0].depsgraph
        depsgraph.update()
        return scene, depsgraph
    return context_or_scene.scene, context_or_scene.evaluated_depsgraph_get()


def _posed_rig(obj: bpy.types.Object, depsgraph: bpy.types.Depsgraph):
    """The object's rig, this frame's palette and mesh→armature matrix, its factors and their label,
    prepared the way ``SkinRig.evaluate`` prepares them (fresh rest input and binding, AUTO resolved)."""
    settings = getattr(obj, "hybrid_skin", None)
    modifier = settings.modifier_name if settings is not None else ""
    by_group = settings is not None and settings.factor_mode == "VERTEX_GROUP"
    rig = rig_module.cached_rig(obj, depsgraph, modifier, (settings.factor_vertex_group,) if by_group else ())
    arm_eval = bpy.data.objects[rig.armature_name].evaluated_get(depsgraph)
    target_to_armature = rig.target_to_armature(obj.evaluated_get(depsgraph), arm_eval)
    moved = rig.refresh_rest(obj, depsgraph)
    if moved or not np.allclose(target_to_armature, rig.bound_target_to_armature, rtol=0.0, atol=1e-9):
        rig.rebuild_binding(target_to_armature, arm_eval)
    deform = rig.deform_matrices(arm_eval)
    factors = vertex_factors(obj, rig)
    if isinstance(factors, str):  # "AUTO": per vertex, from this pose
        factors, label = rig.auto_factors(deform), "Hybrid f=auto"
    elif np.ndim(factors) == 0:
        label = f"Hybrid f={float(factors):.2f}"
    else:
        label = f"Hybrid f=group (mean {float(np.mean(factors)):.2f})"
    return rig, rig.palette(arm_eval, deform), target_to_armature, factors, label


def _draw_labels(texts: list[str], panel_width: int, height: int, scale: int) -> None:
    import blf

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
        image.pixels.foreach_set(np.ascontiguousarray(pixels, dtype=np.float32).reshape(-1))
        image.filepath_raw = str(filepath)
        image.file_format = "PNG"
        image.save()
    finally:
        bpy.data.images.remove(image)


def render_comparison(context_or_scene, obj: bpy.types.Object, filepath: str | Path, width: int = 512,
                      height: int = 512, *, supersample: int = 2) -> Path:
    """Render LBS | hybrid (the object's own factor) | DQS of ``obj`` at the current frame into a PNG.

    ``context_or_scene``: a ``bpy.types.Context`` or a ``Scene``. ``width`` × ``height`` is one panel;
    the image is ``3 * width`` × ``height``. Returns the absolute path written. Raises
    ``bridge.HybridSkinError`` for an object Hybrid Skin cannot skin.
    """
    ensure_gpu_context()
    scene, depsgraph = _scene_and_depsgraph(context_or_scene)
    rig, palette, target_to_armature, factors, label = _posed_rig(obj, depsgraph)
    object_matrix = bridge.object_matrix(obj.evaluated_get(depsgraph))

    panel_w, full_h = width * supersample, height * supersample
    aspect = panel_w / full_h
    if scene.camera is not None:
        camera = scene.camera.evaluated_get(depsgraph)
        projection = np.array(camera.calc_matrix_camera(depsgraph, x=panel_w, y=full_h))
        view_projection = projection @ np.linalg.inv(bridge.object_matrix(camera))
    else:
        t2a = target_to_armature
        lbs_dqs = [skin(rig.rest_positions, rig.binding, palette, f, None, t2a)[0] for f in (0.0, 1.0)]
        local = np.concatenate(lbs_dqs).astype(np.float64)
        view_projection = frame_bounds(local @ object_matrix[:3, :3].T + object_matrix[:3, 3], aspect)

    gpu_skin = GpuSkin(rig, bridge.surface(obj.data), factors)
    offscreen = gpu.types.GPUOffScreen(panel_w * 3, full_h, format="RGBA8")
    try:
        gpu_skin.update_pose(palette, target_to_armature)
        color = display_color(obj)
        with offscreen.bind():
            framebuffer = gpu.state.active_framebuffer_get()
            framebuffer.clear(color=BACKGROUND, depth=1.0)
            for i, override in enumerate((0.0, None, 1.0)):
                gpu.state.viewport_set(i * panel_w, 0, panel_w, full_h)
                gpu_skin.draw(view_projection, object_matrix, color, deform_factor=override, encode_srgb=True)
            gpu.state.viewport_set(0, 0, panel_w * 3, full_h)
            gpu.state.scissor_test_set(True)
            for i in (1, 2):
                gpu.state.scissor_set(i * panel_w - supersample, 0, 2 * supersample, full_h)
                framebuffer.clear(color=SEPARATOR)
            gpu.state.scissor_test_set(False)
            _draw_labels(["LBS", label, "DQS"], panel_w, full_h, supersample)
            # Read as FLOAT into numpy-owned memory: numpy views of a "UBYTE" Buffer come out garbled.
            raw = np.zeros((full_h, panel_w * 3, 4), dtype=np.float32)
            framebuffer.read_color(0, 0, panel_w * 3, full_h, 4, 0, "FLOAT",
                                   data=gpu.types.Buffer("FLOAT", raw.shape, raw))
    finally:
        offscreen.free()
        gpu_skin.free()
    s = supersample
    pixels = raw.reshape(full_h // s, s, panel_w * 3 // s, s, 4).mean(axis=(1, 3))
    pixels[..., 3] = 1.0
    path = Path(bpy.path.abspath(str(filepath))).resolve()
    path.parent.mkdir(parents=True, exist_ok=True)
    _save_png(pixels, path)
    return path
