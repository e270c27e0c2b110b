"""What each display costs the CPU per frame, against Blender's own Armature modifier (D1).

A frame here is what playback does: the pose changes and the scene is evaluated (``view_layer.update()``,
which runs the add-on's handlers), then, for the GPU preview, the draw callback's pose upload
(``viewport.update_pose``). Blocks of rounds per setup, at 100k and 1M vertices: Blender, Evaluated
(Global), Evaluated (Auto), GPU, GPU Auto (1M only), Blender again (the two Blender blocks show the drift).
The Evaluated display is Blender's own stack (the hybrid's Geometry Nodes and two Armature modifiers):
Auto is computed by Blender from Bone Info nodes on 5.2+, and written by the add-on at every frame before
(no Bone Info node). The add-on's own Python time per frame of the Evaluated display is measured apart,
by timing its handlers. The GPU preview is measured during playback, when it leaves Auto's attribute to a
timer after it (``auto_follow._busy`` reports playback, as the UI's screen does).
"""

from __future__ import annotations

import time

import bpy
import gpu_figures
import scene
from measure import Figure, Timing

from hybrid_skin.rig import auto_follow
from hybrid_skin.skin import viewport

BONES = 48
SIZES = (100_000, 1_000_000)
ROUNDS = 7


class _HandlerClock:
    """Seconds spent in the add-on's application handlers while it is entered (wraps them in place)."""

    LISTS = ("depsgraph_update_post", "frame_change_post")

    def __init__(self) -> None:
        self.seconds = 0.0
        self._swapped: list[tuple[list, object, object]] = []

    def __enter__(self) -> _HandlerClock:
        for name in self.LISTS:
            handlers = getattr(bpy.app.handlers, name)
            for i, func in enumerate(list(handlers)):
                if "hybrid_skin" in getattr(func, "__module__", ""):
                    timed = self._timed(func)
                    handlers[i] = timed
                    self._swapped.append((handlers, func, timed))
        return self

    def _timed(self, func):
        def timed(*args):
            t0 = time.perf_counter()
            try:
                return func(*args)
            finally:
                self.seconds += time.perf_counter() - t0

        return timed

    def __exit__(self, *_exc) -> None:
        for handlers, func, timed in self._swapped:
            handlers[handlers.index(timed)] = func


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


def _python(arm: bpy.types.Object, rounds: int) -> Timing:
    """The add-on's handlers' seconds in each frame."""
    poses = [scene.random_pose(arm, seed) for seed in (43, 44)]
    out = []
    for r in range(rounds + 1):
        scene.set_pose(arm, poses[r % 2])
        with _HandlerClock() as clock:
            bpy.context.view_layer.update()
        if r:
            out.append(clock.seconds)
    return Timing(out)


def displays(rounds: int = ROUNDS) -> list[Figure]:
    gpu_figures.renderer()
    figures = []
    for size in SIZES:
        figures += _at(size, rounds, gpu=size == SIZES[-1])
    return figures


def _at(vertices: int, rounds: int, gpu: bool) -> list[Figure]:
    label = f"{vertices // 1000}k" if vertices < 1_000_000 else f"{vertices // 1_000_000}M"
    scene.clear_scene()
    arm, obj, _ = scene.bench_rig("Display", vertices, BONES)
    bpy.context.view_layer.update()
    bpy.context.view_layer.objects.active = obj
    timings: dict[str, Timing] = {"blender": _frames(arm, rounds)}
    assert bpy.ops.hybrid_skin.add(display="EVALUATED") == {"FINISHED"}
    settings = obj.hybrid_skin
    timings["evaluated"] = _frames(arm, rounds)
    python = {"GLOBAL": _python(arm, rounds)}
    settings.factor_mode = "AUTO"
    timings["evaluated_auto"] = _frames(arm, rounds)
    python["AUTO"] = _python(arm, rounds)
    if gpu:
        settings.factor_mode = "GLOBAL"
        settings.display = "GPU"
        bpy.context.view_layer.update()
        assert viewport.setup.gpu_draws(obj), "the preview must draw for this figure"

        def draw() -> None:
            depsgraph = bpy.context.evaluated_depsgraph_get()
            viewport.update_pose(viewport.skin_for(obj, depsgraph).skin, obj, depsgraph)

        busy, auto_follow._busy = auto_follow._busy, lambda: True  # playback
        try:
            timings["gpu"] = _frames(arm, rounds, draw)
            settings.factor_mode = "AUTO"
            timings["gpu_auto"] = _frames(arm, rounds, draw)
        finally:
            auto_follow._busy = busy
            viewport.forget()
    assert bpy.ops.hybrid_skin.remove() == {"FINISHED"}
    timings["blender_again"] = _frames(arm, rounds)
    native = min(timings["blender"], timings["blender_again"], key=lambda t: t.best)
    drift = f"Blender before / after: {timings['blender'].spread()} / {timings['blender_again'].spread()} ms"
    rows = [
        (
            "evaluated",
            f"Evaluated display (Global), CPU per frame ÷ Blender's Armature modifier, {label}",
            2.5,
        ),
        (
            "evaluated_auto",
            f"Evaluated display (Auto), CPU per frame ÷ Blender's Armature modifier, {label}",
            None,
        ),
    ]
    if gpu:
        rows += [
            (
                "gpu",
                f"GPU preview during playback (Global), CPU per frame ÷ Blender's modifier, {label}",
                0.1,
            ),
            (
                "gpu_auto",
                f"GPU preview during playback (Auto), CPU per frame ÷ Blender's modifier, {label}",
                0.1,
            ),
        ]
    figures = [
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
    auto, plain = timings["evaluated_auto"], timings["evaluated"]
    figures.append(
        Figure(
            "D1",
            f"Evaluated display, Auto ÷ Global, CPU per frame, {label}",
            auto,
            plain,
            auto.best / plain.best,
            1.5,
            f"Auto {auto.best * 1e3:.0f} ms, Global {plain.best * 1e3:.0f} ms a frame",
        )
    )
    for mode, timing in python.items():
        figures.append(
            Figure(
                "D1",
                f"Evaluated display ({mode.title()}): the add-on's Python per frame, ms, {label}",
                timing,
                None,
                timing.best * 1e3,
                0.5,
                f"{timing.spread()} ms (min / median / max) in its handlers",
                unit="ms",
                value_label="ms",
            )
        )
    return figures
