"""Drawing with the GPU: the GLSL shaders in ``shaders/``, their loader and per-object GPU resources.

* :mod:`.shaders`    — the one loader: GLSL files → ``GPUShaderCreateInfo`` → cached shaders.
* :mod:`.resources`  — :class:`~.resources.GpuSkin`, the per-object buffers/textures, draw and readback.
* :mod:`.buffers`    — numpy arrays → GPU textures and vertex buffers.
* :mod:`.readback`   — the one offscreen round trip: draw, read the floats back into numpy.
* :mod:`.colors`     — the colour an object is drawn with.
* :mod:`.framing`    — a camera that fits a set of points (offscreen pictures, tests, benchmarks).

This layer knows GPU drawing only: it imports no rig or feature module (the deform factor it draws is
the core's :class:`~..core.deform_factor.DeformFactor`), so every feature can draw with it.

(Named ``draw``, not ``gpu``: a package of that name would shadow Blender's own ``gpu`` module for
anything importing relative to it.) Nothing here registers anything: the viewport (``skin/viewport.py``)
and the crowd preview own their GPU objects, and compiled shaders live in the add-on's runtime. Using the
GPU needs a GPU context: any draw callback in the UI, or, in background mode, :func:`ensure_gpu_context`
first.
"""

from __future__ import annotations

import bpy
import gpu

__all__ = ["ensure_gpu_context"]


def ensure_gpu_context() -> None:
    """Make Blender's ``gpu`` module usable, also in background mode (``blender -b``, the bpy module).

    Background Blender creates its GPU context lazily, on the first render; until then every ``gpu`` call
    raises "not available in background mode". One 8×8 Workbench render of a throwaway scene creates it
    (Mesa's llvmpipe is enough). With a UI the context always exists and this costs one tiny allocation.
    """
    try:
        gpu.types.GPUOffScreen(1, 1).free()
        return
    except SystemError:
        pass
    scene = bpy.data.scenes.new("hybrid_skin_gpu_init")
    camera_data = bpy.data.cameras.new("hybrid_skin_gpu_init")
    camera = bpy.data.objects.new("hybrid_skin_gpu_init", camera_data)
    try:
        scene.collection.objects.link(camera)
        scene.camera = camera
        scene.render.engine = "BLENDER_WORKBENCH"
        scene.render.resolution_x = scene.render.resolution_y = 8
        scene.render.resolution_percentage = 100
        bpy.ops.render.render(scene=scene.name)
    finally:
        bpy.data.objects.remove(camera)
        bpy.data.cameras.remove(camera_data)
        bpy.data.scenes.remove(scene)
    gpu.types.GPUOffScreen(1, 1).free()  # raises if the render did not create a context
