"""Per-frame cost of Auto's round profile ÷ the Auto of version 0.1 (profile "JOINT"), same mesh, one run.

Issue 29's cost target: the round Auto costs at most 1.2× the old one per frame. Measured on the bench's
rig (``scene.bench_rig``: a grid cylinder on a bone chain, 4 random influences per vertex, a random pose)
through the add-on's own per-frame paths, the two profiles interleaved round by round:

    A1  CPU frame: ``PosedBind.auto_factors`` then ``PosedBind.skin`` with them (the API, the bakes and the
        Evaluated display's factor group); the vertices' rest data is the bind's cached array, as in use
    A2  the factors alone (``PosedBind.auto_factors``), informative
    A3  GPU draw with the shader's Auto (llvmpipe here: a software rasteriser), as make bench's P4
    A4  the round profiles' rest data, computed once per bind (ms per 100k vertices), informative

Run from the repository root:  .venv/bin/python tests/bench/auto_figures.py
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parents[1]), str(HERE)]

import bpy  # noqa: E402
import numpy as np  # noqa: E402
import scene  # noqa: E402
from measure import Figure, interleaved, machine  # noqa: E402

import hybrid_skin  # noqa: E402
from hybrid_skin import bridge  # noqa: E402
from hybrid_skin.rig import bind as rig  # noqa: E402
from hybrid_skin.rig.factor import DeformFactor  # noqa: E402

VERTICES = 100_000
BONES = 48
ROUNDS = 15
DRAW_TARGET = 64


def cpu_figures() -> list[Figure]:
    scene.clear_scene()
    arm, obj, _ = scene.bench_rig("Auto", VERTICES, BONES)
    scene.set_pose(arm, scene.random_pose(arm, 29, max_degrees=40.0))
    bpy.context.view_layer.update()
    dg = bpy.context.evaluated_depsgraph_get()
    bound = rig.bind(obj, dg, "Armature")
    posed = bound.posed(dg)
    placement = posed.target_to_armature

    def frame(profile: str):
        return lambda: posed.skin(posed.auto_factors(profile))

    def factors(profile: str):
        return lambda: posed.auto_factors(profile)

    posed.auto_factors("ROUND")  # the rest data, once per bind (not per frame)
    whole = interleaved({"round": frame("ROUND"), "joint": frame("JOINT")}, ROUNDS)
    alone = interleaved({"round": factors("ROUND"), "joint": factors("JOINT")}, ROUNDS)

    def rest_data() -> None:
        bound._auto_rest = None
        bound.auto_rest(placement)

    once = interleaved({"rest": rest_data}, 3)["rest"]
    n = len(obj.data.vertices)
    return [
        Figure("A1", f"CPU frame (Auto factors + skin), round ÷ Auto 0.1, {n // 1000}k vertices",
               whole["round"], whole["joint"], whole["round"].best / whole["joint"].best, 1.2,
               "a frame of the round Auto costs this many frames of Auto 0.1"),
        Figure("A2", "Auto factors alone, round ÷ Auto 0.1", alone["round"], alone["joint"],
               alone["round"].best / alone["joint"].best, None, "informative"),
        Figure("A4", f"round profile's rest data, once per bind, ms per {n // 1000}k vertices", once, None,
               once.best * 1e3, None, "informative", unit="ms"),
    ]


def gpu_figure() -> Figure:
    import gpu  # noqa: PLC0415

    from hybrid_skin.draw import ensure_gpu_context  # noqa: PLC0415
    from hybrid_skin.draw.framing import frame_bounds  # noqa: PLC0415
    from hybrid_skin.draw.resources import GpuSkin  # noqa: PLC0415

    ensure_gpu_context()
    scene.clear_scene()
    arm, obj, _ = scene.bench_rig("Draw", VERTICES, BONES)
    scene.set_pose(arm, scene.random_pose(arm, 31, max_degrees=40.0))
    bpy.context.view_layer.update()
    dg = bpy.context.evaluated_depsgraph_get()
    bound = rig.bind(obj, dg, "Armature")
    posed = bound.posed(dg)
    skins = {}
    for profile in ("ROUND", "JOINT"):
        skins[profile] = GpuSkin(bound, bridge.surface(obj.data), DeformFactor.automatic())
        skins[profile].update_pose(posed.palette, posed.target_to_armature,
                                   auto_bone_data=posed.auto_bone_data(profile))
    matrix = np.array(obj.matrix_world)
    corners = np.array(obj.bound_box, dtype=np.float64) @ matrix[:3, :3].T + matrix[:3, 3]
    view_projection = np.diag([0.1, 0.1, 1.0, 1.0]) @ frame_bounds(corners, 1.0)
    offscreen = gpu.types.GPUOffScreen(DRAW_TARGET, DRAW_TARGET, format="RGBA8")
    pixel = np.zeros(4, dtype=np.float32)

    def drawer(profile: str):
        def draw() -> None:
            with offscreen.bind():
                framebuffer = gpu.state.active_framebuffer_get()
                framebuffer.clear(color=(0.0, 0.0, 0.0, 0.0), depth=1.0)
                skins[profile].draw(view_projection, matrix)
                framebuffer.read_color(0, 0, 1, 1, 4, 0, "FLOAT", data=gpu.types.Buffer("FLOAT", 4, pixel))

        return draw

    try:
        times = interleaved({"round": drawer("ROUND"), "joint": drawer("JOINT")}, ROUNDS)
    finally:
        offscreen.free()
        for skin in skins.values():
            skin.free()
    return Figure("A3", f"GPU draw with the shader's Auto, round ÷ Auto 0.1 ({gpu.platform.renderer_get()})",
                  times["round"], times["joint"], times["round"].best / times["joint"].best, 1.2,
                  "drawing with the round Auto costs this many draws with Auto 0.1")


def main() -> None:
    header = machine()
    print(f"{header['date']}: Blender {bpy.app.version_string}, numpy {header['numpy']}, {header['cpu']}, "
          f"load average {header['load']}")
    bpy.ops.wm.read_factory_settings(use_empty=True)
    hybrid_skin.register()
    try:
        figures = [*cpu_figures(), gpu_figure()]
    finally:
        hybrid_skin.unregister()
    print("| figure | what | round (ms, min/median/max) | Auto 0.1 (ms) | ratio | target | verdict |")
    print("|---|---|---|---|---|---|---|")
    for f in figures:
        base = f.blender.spread() if f.blender is not None else "—"
        target = "—" if f.target is None else f"≤ {f.target:g}"
        cells = [f.key, f.name, f.ours.spread(), base, f"{f.ratio:.3g}", target, f.verdict()]
        print("| " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
