"""What each display costs the CPU per frame at 1M vertices, against Blender's own Armature modifier (D1).

A frame here is what playback does: the pose changes and the scene is evaluated (``view_layer.update()``,
which runs the add-on's handlers: the display's sync and the factor group's write), then, for the GPU
preview, the draw callback's pose upload (``viewport.update_pose``). Blocks of rounds per setup, in the
order Blender, Evaluated, Evaluated Auto, GPU, GPU Auto, Blender again (the two Blender blocks show the
drift). The GPU preview is measured during playback, when it leaves the factor group to a timer after it
(``factor_group._busy`` reports playback, as the UI's screen does).
"""

from __future__ import annotations

import time

import bpy
import gpu_figures
import scene
from measure import Figure, Timing

from hybrid_skin.rig import factor_group
from hybrid_skin.skin import viewport

BONES = 48
VERTICES = 1_000_000
ROUNDS = 7


def _frames(arm: bpy.types.Object, rounds: int, draw=None) -> Timing:
    poses = [scene.random_pose(arm, seed) for seed in (41, 42)]
    view_layer = bpy.context.view_layer
    times = []
    for r in range(rounds + 1):
        scene.set_pose(arm, poses[r % 2])
        t0 = time.perf_counter()
        view_layer.update()
        if draw is not None:
            draw()
        if r:  # the first round warms up
            times.append(time.perf_counter() - t0)
    return Timing(times)


def displays(rounds: int = ROUNDS) -> list[Figure]:
    gpu_figures.renderer()
    scene.clear_scene()
    arm, obj, _ = scene.bench_rig("Display", VERTICES, BONES)
    bpy.context.view_layer.update()
    bpy.context.view_layer.objects.active = obj
    timings: dict[str, Timing] = {"blender": _frames(arm, rounds)}
    assert bpy.ops.hybrid_skin.add(display="EVALUATED") == {"FINISHED"}
    settings = obj.hybrid_skin
    timings["evaluated"] = _frames(arm, rounds)
    settings.factor_mode = "AUTO"
    timings["evaluated_auto"] = _frames(arm, rounds)
    settings.factor_mode = "GLOBAL"
    settings.display = "GPU"
    bpy.context.view_layer.update()
    assert viewport.setup.gpu_draws(obj), "the preview must draw for this figure"

    def draw() -> None:
        depsgraph = bpy.context.evaluated_depsgraph_get()
        viewport.update_pose(viewport.skin_for(obj, depsgraph).skin, obj, depsgraph)

    busy, factor_group._busy = factor_group._busy, lambda: True  # playback
    try:
        timings["gpu"] = _frames(arm, rounds, draw)
        settings.factor_mode = "AUTO"
        timings["gpu_auto"] = _frames(arm, rounds, draw)
    finally:
        factor_group._busy = busy
        viewport.forget()
    assert bpy.ops.hybrid_skin.remove() == {"FINISHED"}
    timings["blender_again"] = _frames(arm, rounds)
    native = min(timings["blender"], timings["blender_again"], key=lambda t: t.best)
    drift = f"Blender before / after: {timings['blender'].spread()} / {timings['blender_again'].spread()} ms"
    rows = [
        ("evaluated", "Evaluated display (Global), CPU per frame ÷ Blender's Armature modifier, 1M", 2.5),
        ("evaluated_auto", "Evaluated display (Auto), CPU per frame ÷ Blender's Armature modifier, 1M", None),
        ("gpu", "GPU preview during playback (Global), CPU per frame ÷ Blender's modifier, 1M", 0.1),
        ("gpu_auto", "GPU preview during playback (Auto), CPU per frame ÷ Blender's modifier, 1M", 0.1),
    ]
    return [
        Figure(
            "D1",
            name,
            timings[key],
            native,
            timings[key].best / native.best,
            target,
            f"a frame costs {timings[key].best * 1e3:.0f} ms against Blender's {native.best * 1e3:.0f} ms",
            notes=[drift] if key == "evaluated" else [],
        )
        for key, name, target in rows
    ]
