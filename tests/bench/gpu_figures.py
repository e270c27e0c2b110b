"""GPU display figures: the CPU cost of a displayed frame (P2) and the hybrid shader's draw cost (P4).

P4 runs on whatever OpenGL the machine has (Mesa's llvmpipe on the development machine, a software
rasteriser: there the hybrid's extra texel fetches cost full price); its target (≤ 1.1) predates issue 17.
"""

from __future__ import annotations

from collections.abc import Callable

import bpy
import numpy as np
import scene
from measure import Figure, interleaved

from hybrid_skin import bridge
from hybrid_skin.rig import bind as rig
from hybrid_skin.rig.factor import DeformFactor

BONES = 48
FACTOR = 0.5
DRAW_VERTICES = 100_000
DRAW_TARGET = 64  # pixels per side of the offscreen target; the mesh covers about a tenth of it


def renderer() -> str:
    import gpu  # noqa: PLC0415

    from hybrid_skin.draw import ensure_gpu_context  # noqa: PLC0415

    ensure_gpu_context()
    return gpu.platform.renderer_get()


# -------------------------------------------------------------------------------------- GPU display
def _gpu_rig(name: str, n: int, coll: bpy.types.Collection):
    from hybrid_skin.draw.resources import GpuSkin  # noqa: PLC0415
    from hybrid_skin.skin import viewport  # noqa: PLC0415

    arm, obj, _ = scene.bench_rig(name, n, BONES, coll)
    bpy.context.view_layer.update()
    dg = bpy.context.evaluated_depsgraph_get()
    bound = rig.bind(obj, dg, "Armature")
    gpu_skin = GpuSkin(bound, bridge.surface(obj.data), DeformFactor(FACTOR))
    viewport.update_pose(gpu_skin, obj, dg)
    return arm, obj, bound, gpu_skin


def gpu_display(sizes: tuple[int, int] = (10_000, 1_000_000), rounds: int = 60) -> list[Figure]:
    """CPU time of one frame of the GPU display (``viewport.update_pose``: pose → palette → bone texture)
    right after a pose change (Blender's pose evaluation, done for every display, is not timed), at two
    mesh sizes interleaved, and against Blender's Armature modifier (LBS) evaluating the large mesh."""
    from hybrid_skin.core.skinning import skin  # noqa: PLC0415
    from hybrid_skin.skin import viewport  # noqa: PLC0415

    renderer()
    scene.clear_scene()
    rigs = {n: _gpu_rig(f"G{n}", n, scene.collection(f"G{n}")) for n in sizes}
    small, large = sizes
    poses = [scene.random_pose(rigs[small][0], seed) for seed in (21, 22)]
    view_layer = bpy.context.view_layer
    state = {n: 0 for n in sizes}
    large_mod = rigs[large][1].modifiers["Armature"]

    def pose_change(n: int) -> None:
        state[n] ^= 1
        scene.set_pose(rigs[n][0], poses[state[n]])
        view_layer.update()

    def before(n: int, native: bool = False):
        def run() -> None:
            for m in sizes:
                rigs[m][1].modifiers["Armature"].show_viewport = native and m == large
            view_layer.update()
            if not native:
                pose_change(n)

        return run

    def update(n: int):
        return lambda: viewport.update_pose(rigs[n][3], rigs[n][1], bpy.context.evaluated_depsgraph_get())

    try:
        times = interleaved(
            {"small": update(small), "large": update(large), "native": lambda: pose_change(large)},
            rounds,
            before={"small": before(small), "large": before(large), "native": before(large, native=True)},
        )
        large_mod.show_viewport = False
        view_layer.update()
        _, obj, bound, gpu_skin = rigs[small]
        dg = bpy.context.evaluated_depsgraph_get()
        viewport.update_pose(gpu_skin, obj, dg)
        posed = bound.posed(dg)
        t2a = posed.target_to_armature
        ref = skin(bound.rest_positions, bound.binding, posed.palette, FACTOR, None, t2a)[0]
        error = float(np.abs(gpu_skin.readback() - ref).max())
    finally:
        for n in sizes:
            rigs[n][3].free()
    ratio = times["large"].best / times["small"].best
    vs_native = times["large"].best / times["native"].best
    return [
        Figure(
            "P2",
            "GPU display CPU per frame, 1M ÷ 10k vertices",
            times["large"],
            None,
            ratio,
            1.2,
            f"the GPU display costs ~{times['large'].best * 1e3:.1f} ms of CPU per frame at any mesh size",
            value_label="(1M ÷ 10k)",
            notes=[f"10k: {times['small'].spread()} ms; check: max |GPU − core| at 10k = {error:.1e}"],
        ),
        Figure(
            "P2",
            "GPU display CPU per frame ÷ Blender's Armature modifier (LBS), 1M vertices",
            times["large"],
            times["native"],
            vs_native,
            0.05,
            f"at 1M vertices the GPU display needs {vs_native:.3f}× of the CPU time Blender's modifier needs",
        ),
    ]


def _small_view(obj: bpy.types.Object) -> np.ndarray:
    """World → clip framing ``obj``'s bounds into about a tenth of the target: vertex work dominates."""
    from hybrid_skin.draw.framing import frame_bounds  # noqa: PLC0415

    matrix = np.array(obj.matrix_world)
    corners = np.array(obj.bound_box, dtype=np.float64) @ matrix[:3, :3].T + matrix[:3, 3]
    return np.diag([0.1, 0.1, 1.0, 1.0]) @ frame_bounds(corners, 1.0)


def gpu_draw(rounds: int = 15) -> list[Figure]:
    """Offscreen draw time of the hybrid shader ÷ the DQS-only variant, same mesh and pose, each draw
    synchronised by reading a pixel back. The mesh covers a few pixels, so the time is vertex work."""
    import gpu  # noqa: PLC0415

    from hybrid_skin.draw.resources import GpuSkin  # noqa: PLC0415
    from hybrid_skin.skin import viewport  # noqa: PLC0415

    renderer()
    scene.clear_scene()
    arm, obj, _ = scene.bench_rig("Draw", DRAW_VERTICES, BONES)
    scene.set_pose(arm, scene.random_pose(arm, 31))
    bpy.context.view_layer.update()
    dg = bpy.context.evaluated_depsgraph_get()
    gpu_skin = GpuSkin(rig.bind(obj, dg, "Armature"), bridge.surface(obj.data), DeformFactor.automatic())
    view_projection, object_matrix = _small_view(obj), np.array(obj.matrix_world)
    offscreen = gpu.types.GPUOffScreen(DRAW_TARGET, DRAW_TARGET, format="RGBA8")
    pixel = np.zeros(4, dtype=np.float32)

    def drawer(variant: str, factors: float | str) -> Callable[[], None]:
        def draw() -> None:
            gpu_skin.set_factor(DeformFactor.automatic() if factors == "AUTO" else DeformFactor(factors))
            with offscreen.bind():
                framebuffer = gpu.state.active_framebuffer_get()
                framebuffer.clear(color=(0.0, 0.0, 0.0, 0.0), depth=1.0)
                gpu_skin.draw(view_projection, object_matrix, variant=variant)
                framebuffer.read_color(0, 0, 1, 1, 4, 0, "FLOAT", data=gpu.types.Buffer("FLOAT", 4, pixel))

        return draw

    try:
        viewport.update_pose(gpu_skin, obj, dg)
        corners = gpu_skin.corner_count
        times = interleaved(
            {
                "hybrid": drawer("hybrid", FACTOR),
                "auto": drawer("hybrid", "AUTO"),
                "dqs": drawer("dqs", 1.0),
                "lbs": drawer("lbs", 0.0),
            },
            rounds,
        )
    finally:
        offscreen.free()
        gpu_skin.free()
    note = f"{corners // 1000}k corners, {gpu.platform.renderer_get()}"
    dqs = times["dqs"]
    auto, lbs = times["auto"].best / dqs.best, times["lbs"].best / dqs.best
    return [
        Figure(
            "P4",
            f"GPU draw, hybrid f={FACTOR} ÷ DQS-only shader ({DRAW_VERTICES // 1000}k vertices)",
            times["hybrid"],
            dqs,
            times["hybrid"].best / dqs.best,
            1.1,
            f"drawing the hybrid costs {times['hybrid'].best / dqs.best:.2f}× of plain DQS on this OpenGL",
            notes=[
                note,
                f"AUTO ÷ DQS {auto:.2f}, LBS-only ÷ DQS {lbs:.2f}",
            ],
        )
    ]
