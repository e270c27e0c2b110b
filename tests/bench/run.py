"""Hybrid Skin benchmarks: ratios against Blender's own deformation, measured in one run.

Run with ``make bench``. Prints a table (median of several repetitions) and whether each target is
met; never fails on a missed target (exit 0), only on errors.

P1  core hybrid ``skin()`` per frame ÷ Blender's two-modifier LBS + Preserve Volume mix per frame
P2  GPU path: CPU time of one pose update, 1M ÷ 10k vertices, and 1M ÷ native Armature modifier
P3  bind time per million weight entries (bridge read, whole ``rig.bind``), vs a plain Python loop
P4  GPU draw (slot)    P5  (slot)
"""

from __future__ import annotations

import importlib.util
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path[:0] = [str(REPO), str(HERE)]

import bpy  # noqa: E402
import numpy as np  # noqa: E402
import scene  # noqa: E402

from hybrid_skin import bridge, runtime  # noqa: E402
from hybrid_skin.core.skinning import THREADS, skin  # noqa: E402
from hybrid_skin.factor import DeformFactor  # noqa: E402
from hybrid_skin.skin import bind as rig  # noqa: E402

BONES = 48
FACTOR = 0.5
SIZES = (10_000, 100_000, 1_000_000)
REPEATS = {10_000: 40, 100_000: 20, 1_000_000: 5}
BIND_SIZES = (100_000, 1_000_000)


@dataclass
class Row:
    name: str
    ours_ms: float
    native_ms: float | None
    ratio: float | None
    target: float | None
    stretch: float | None = None
    note: str = ""

    def met(self) -> str:
        if self.ratio is None or self.target is None:
            return "-"
        if self.stretch is not None and self.ratio <= self.stretch:
            return "yes (stretch)"
        return "yes" if self.ratio <= self.target else "NO"


def median_ms(fn: Callable[[], object], repeats: int, warmup: int = 1) -> float:
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return 1e3 * statistics.median(times)


def interleaved_ms(fns: list[Callable[[], object]], repeats: int) -> list[float]:
    """Median ms of each function, run in alternating rounds so load drift hits all of them alike."""
    for fn in fns:
        fn()
    times: list[list[float]] = [[] for _ in fns]
    for _ in range(repeats):
        for fn, out in zip(fns, times):
            t0 = time.perf_counter()
            fn()
            out.append(time.perf_counter() - t0)
    return [1e3 * statistics.median(t) for t in times]


def hardware() -> str:
    model = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{model}, {os.cpu_count()} logical cores, numpy {np.__version__}"


def evaluated_positions(obj: bpy.types.Object) -> np.ndarray:
    me = obj.evaluated_get(bpy.context.evaluated_depsgraph_get()).data
    out = np.empty(len(me.vertices) * 3, np.float32)
    me.vertices.foreach_get("co", out)
    return out.reshape(-1, 3)


# --------------------------------------------------------------------------------------------- P3
def python_loop_entries(mesh: bpy.types.Mesh) -> int:
    """The baseline: iterate ``MeshVertex.groups`` in Python."""
    groups, weights = [], []
    for v in mesh.vertices:
        for g in v.groups:
            groups.append(g.group)
            weights.append(g.weight)
    np.asarray(groups, np.int32), np.asarray(weights, np.float32)
    return len(groups)


def bench_bind(obj: bpy.types.Object, entries: int, repeats: int, baseline: bool) -> list[Row]:
    per_million = 1e6 / entries
    dg = bpy.context.evaluated_depsgraph_get()
    n = round(len(obj.data.vertices), -3)
    read = median_ms(lambda: bridge.read_vertex_group_entries(obj.data), repeats, warmup=0)
    whole = median_ms(lambda: rig.bind(obj, dg), repeats, warmup=0)
    label = f"{n // 1000}k v, {entries / 1e6:.1f}M entries"
    rows = [
        Row(
            f"P3 read_vertex_group_entries /M ({label})",
            read * per_million,
            None,
            read * per_million / 1e3,
            0.3,
        ),
        Row(f"P3 rig.bind /M ({label})", whole * per_million, None, whole * per_million / 1e3, 0.3),
    ]
    if baseline:
        loop = median_ms(lambda: python_loop_entries(obj.data), 1, warmup=0)
        rows.append(
            Row(
                f"P3 baseline: Python loop over v.groups /M ({label})",
                loop * per_million,
                None,
                loop * per_million / 1e3,
                None,
                note="baseline, s per M entries",
            )
        )
    for r in rows:
        r.note = r.note or "ratio column = s per M entries"
    return rows


# --------------------------------------------------------------------------------------------- P1
def bench_frame(obj, arm, n: int, repeats: int) -> list[Row]:
    """``n`` is the nominal size (the generated grid has within 1% of it)."""
    poses = [scene.random_pose(arm, seed) for seed in (11, 12)]
    view_layer = bpy.context.view_layer

    # Native: prove that the modifiers really re-evaluate when the pose flips.
    scene.set_pose(arm, poses[0])
    view_layer.update()
    first = evaluated_positions(obj)
    scene.set_pose(arm, poses[1])
    view_layer.update()
    second = evaluated_positions(obj)
    if np.allclose(first, second):
        raise RuntimeError("native modifiers did not re-evaluate after a pose change: timing void")

    state = {"i": 0}

    def native_frame():
        state["i"] ^= 1
        scene.set_pose(arm, poses[state["i"]])
        view_layer.update()

    # Ours: the same poses, bound through the real bridge; core skin() only, then the whole evaluate.
    dg = bpy.context.evaluated_depsgraph_get()
    bound = rig.bind(obj, dg, "Armature")
    posed = bound.posed(dg)
    palette, t2a = posed.palette, posed.target_to_armature
    native, ours, evaluate = interleaved_ms(
        [
            native_frame,
            lambda: skin(bound.rest_positions, bound.binding, palette, FACTOR, None, t2a),
            lambda: bound.posed(dg).skin(FACTOR),
        ],
        repeats,
    )

    # Sanity: our result agrees with Blender's mix (same pose that is evaluated now).
    err = float(np.abs(bound.posed(dg).skin(FACTOR)[0] - evaluated_positions(obj)).max())
    label = f"{n // 1000}k v" if n < 1_000_000 else f"{n // 1_000_000}M v"
    target = 1.0 if n == 100_000 else None
    return [
        Row(
            f"P1 skin() f=0.5 ÷ native mix ({label})",
            ours,
            native,
            ours / native,
            target,
            0.7 if target else None,
            note=f"max |ours-native| {err:.1e}",
        ),
        Row(f"P1 SkinRig.evaluate f=0.5 ÷ native mix ({label})", evaluate, native, evaluate / native, None),
    ]


# --------------------------------------------------------------------------------------- P2/P4/P5
def gpu_available() -> bool:
    return importlib.util.find_spec("hybrid_skin.draw.resources") is not None


GPU_SIZES = (10_000, 1_000_000)
GPU_UPDATE_REPEATS = 200
NATIVE_LBS_REPEATS = 7
DRAW_VERTICES = 100_000
DRAW_REPEATS = 15
DRAW_TARGET = 64  # pixels per side of the offscreen target; the mesh covers about a tenth of it


def _gpu_scene(n: int) -> tuple[bpy.types.Object, bpy.types.Object]:
    """A fresh bench cylinder of about ``n`` vertices with only Blender's LBS Armature modifier."""
    scene.clear_scene()
    arm = scene.make_chain_armature("BenchRig", BONES, height=4.0)
    obj = scene.make_grid_cylinder("BenchMesh", n, height=4.0)
    scene.add_random_weights(obj, arm)
    scene.add_lbs_modifier(obj, arm)
    bpy.context.view_layer.update()
    return arm, obj


def _deform_factor(factors: float | str) -> DeformFactor:
    return DeformFactor.automatic() if factors == "AUTO" else DeformFactor(factors)


def _bind_gpu(obj: bpy.types.Object, factors: float | str = FACTOR):
    """The GPU display's per-bind work: rig, ``GpuSkin`` (static data uploaded), first pose."""
    from hybrid_skin.draw.resources import GpuSkin  # noqa: PLC0415
    from hybrid_skin.skin import viewport  # noqa: PLC0415

    dg = bpy.context.evaluated_depsgraph_get()
    bound = rig.bind(obj, dg, "Armature")
    gpu_skin = GpuSkin(bound, bridge.surface(obj.data), _deform_factor(factors))
    viewport.update_pose(gpu_skin, obj, dg)
    return bound, gpu_skin


def _native_lbs_ms(arm: bpy.types.Object, poses: list[np.ndarray]) -> float:
    """Blender's Armature modifier (LBS) re-evaluating the mesh after a pose change."""
    view_layer = bpy.context.view_layer
    state = {"i": 0}

    def native_frame() -> None:
        state["i"] ^= 1
        scene.set_pose(arm, poses[state["i"]])
        view_layer.update()

    return median_ms(native_frame, NATIVE_LBS_REPEATS)


def _gpu_update_ms(
    arm: bpy.types.Object, obj: bpy.types.Object, poses: list[np.ndarray]
) -> tuple[float, str]:
    """Median ms of ``viewport.update_pose`` right after each pose change (the pose evaluation itself, done
    by Blender for every display, is not timed), with the Armature modifier hidden as in GPU display."""
    from hybrid_skin.skin import viewport  # noqa: PLC0415

    bound, gpu_skin = _bind_gpu(obj)
    obj.modifiers["Armature"].show_viewport = False
    view_layer = bpy.context.view_layer
    dg = bpy.context.evaluated_depsgraph_get()
    times = []
    try:
        for i in range(GPU_UPDATE_REPEATS + 1):
            scene.set_pose(arm, poses[i % 2])
            view_layer.update()
            t0 = time.perf_counter()
            viewport.update_pose(gpu_skin, obj, dg)
            if i:  # the first one warms caches up
                times.append(time.perf_counter() - t0)
        # Sanity: the GPU shows what the core computes for this pose (readback: 1 point per vertex).
        ref = bound.posed(dg).skin(FACTOR)[0]
        error = float(np.abs(gpu_skin.readback() - ref).max()) if len(ref) <= 100_000 else None
    finally:
        gpu_skin.free()
    return 1e3 * statistics.median(times), "" if error is None else f"max |GPU-core| {error:.1e}"


def bench_gpu_update() -> list[Row]:
    """P2: CPU time of one frame of the GPU display (``viewport.update_pose``: pose → palette → bone
    texture), 1M ÷ 10k vertices, and ÷ Blender's Armature modifier (LBS) evaluating the same 1M mesh."""
    if not gpu_available():
        return [Row("P2 GPU update", float("nan"), None, None, 1.2, note="skipped: no hybrid_skin.draw")]
    from hybrid_skin.draw import ensure_gpu_context  # noqa: PLC0415

    ensure_gpu_context()
    update_ms: dict[int, float] = {}
    notes: dict[int, str] = {}
    native_ms = float("nan")
    for n in GPU_SIZES:
        arm, obj = _gpu_scene(n)
        poses = [scene.random_pose(arm, seed) for seed in (21, 22)]
        if n == GPU_SIZES[-1]:
            native_ms = _native_lbs_ms(arm, poses)
        update_ms[n], notes[n] = _gpu_update_ms(arm, obj, poses)
        print(f"  ... P2 {n:>9,} vertices: {update_ms[n]:.3f} ms per GPU frame update", flush=True)
    small, large = update_ms[GPU_SIZES[0]], update_ms[GPU_SIZES[-1]]
    return [
        Row(
            "P2 GPU frame update 1M ÷ 10k vertices",
            large,
            None,
            large / small,
            1.2,
            note=f"10k: {small:.3f} ms; {notes[GPU_SIZES[0]]} at 10k",
        ),
        Row("P2 GPU frame update ÷ native Armature LBS (1M v)", large, native_ms, large / native_ms, 0.05),
    ]


def _small_view(obj: bpy.types.Object) -> np.ndarray:
    """World → clip framing ``obj``'s bounds into about a tenth of the target: vertex work dominates."""
    from hybrid_skin.draw.comparison import frame_bounds  # noqa: PLC0415

    matrix = np.array(obj.matrix_world)
    corners = np.array(obj.bound_box, dtype=np.float64) @ matrix[:3, :3].T + matrix[:3, 3]
    return np.diag([0.1, 0.1, 1.0, 1.0]) @ frame_bounds(corners, 1.0)


def bench_gpu_draw() -> list[Row]:
    """P4: offscreen draw time of the hybrid shader ÷ the DQS-only variant, same mesh and pose, each draw
    synchronised by reading a pixel back (median of interleaved repeats). The mesh covers a few pixels, so
    the time is vertex work."""
    if not gpu_available():
        return [Row("P4 GPU draw", float("nan"), None, None, 1.1, note="skipped: no hybrid_skin.draw")]
    import gpu  # noqa: PLC0415

    from hybrid_skin.draw import ensure_gpu_context  # noqa: PLC0415
    from hybrid_skin.skin import viewport  # noqa: PLC0415

    ensure_gpu_context()
    arm, obj = _gpu_scene(DRAW_VERTICES)
    scene.set_pose(arm, scene.random_pose(arm, 31))
    bpy.context.view_layer.update()
    _, gpu_skin = _bind_gpu(obj, "AUTO")  # the pose upload then carries the AUTO bone data as well
    view_projection, object_matrix = _small_view(obj), np.array(obj.matrix_world)
    offscreen = gpu.types.GPUOffScreen(DRAW_TARGET, DRAW_TARGET, format="RGBA8")
    pixel = np.zeros(4, dtype=np.float32)

    def drawer(variant: str, factors: float | str) -> Callable[[], None]:
        def draw() -> None:
            gpu_skin.set_factor(_deform_factor(factors))
            with offscreen.bind():
                framebuffer = gpu.state.active_framebuffer_get()
                framebuffer.clear(color=(0.0, 0.0, 0.0, 0.0), depth=1.0)
                gpu_skin.draw(view_projection, object_matrix, variant=variant)
                framebuffer.read_color(0, 0, 1, 1, 4, 0, "FLOAT", data=gpu.types.Buffer("FLOAT", 4, pixel))

        return draw

    try:
        viewport.update_pose(gpu_skin, obj, bpy.context.evaluated_depsgraph_get())
        corners = gpu_skin.corner_count
        hybrid, auto, dqs, lbs = interleaved_ms(
            [drawer("hybrid", FACTOR), drawer("hybrid", "AUTO"), drawer("dqs", 1.0), drawer("lbs", 0.0)],
            DRAW_REPEATS,
        )
    finally:
        offscreen.free()
        gpu_skin.free()
    size = f"{DRAW_VERTICES // 1000}k v"
    note = f"{corners // 1000}k corners, {gpu.platform.renderer_get()}"
    return [
        Row(f"P4 GPU draw hybrid f={FACTOR} ÷ DQS-only ({size})", hybrid, dqs, hybrid / dqs, 1.1, note=note),
        Row(f"P4 GPU draw hybrid AUTO ÷ DQS-only ({size})", auto, dqs, auto / dqs, None, note="informative"),
        Row(f"P4 GPU draw LBS-only ÷ DQS-only ({size})", lbs, dqs, lbs / dqs, None, note="informative"),
    ]


def bench_bake(obj: bpy.types.Object, arm: bpy.types.Object, frames: int = 10) -> list[Row]:
    """Issue 4's P1 end to end: seconds per baked frame (shape keys) ÷ the native mix per frame."""
    import hybrid_skin  # noqa: PLC0415  (registered only for this benchmark)

    poses = [scene.random_pose(arm, seed) for seed in (21, 22)]
    arm.animation_data_create()
    for frame, pose in ((1, poses[0]), (frames, poses[1])):
        scene.set_pose(arm, pose)
        for pb in arm.pose.bones:
            pb.keyframe_insert("rotation_quaternion", frame=frame)
    bpy_scene = bpy.context.scene

    def native_frames():
        for frame in range(1, frames + 1):
            bpy_scene.frame_set(frame)

    native = median_ms(native_frames, repeats=3) / frames
    obj.modifiers.remove(obj.modifiers["Armature DQS"])
    obj.vertex_groups.remove(obj.vertex_groups[scene.FACTOR_GROUP])
    hybrid_skin.register()
    try:
        bpy.context.view_layer.objects.active = obj
        bpy.ops.hybrid_skin.add()
        obj.hybrid_skin.deform_factor = FACTOR

        def bake():
            assert bpy.ops.hybrid_skin.bake_deformation(frame_start=1, frame_end=frames) == {"FINISHED"}

        ours = median_ms(bake, repeats=3) / frames
    finally:
        hybrid_skin.unregister()
    n = len(obj.data.vertices)
    return [
        Row(
            f"P1 bake shape keys per frame ÷ native mix per frame ({n // 1000}k v)",
            ours,
            native,
            ours / native,
            1.5,
            note=f"{frames} frames per bake, includes writing keys and keyframes",
        )
    ]


#: Seed 002 Tables 3–8: (model, vertices, bones, frames, thesis DQ w×h, matrix w×h, vertex w×h) at 8 bits.
THESIS_MODELS = (
    ("Vampire", 45_066, 65, 85, "86×132", "86×197", "86×7,870"),
    ("X Bot", 99_796, 52, 153, "154×106", "154×158", "(154×2) × (14,232 + 10,514)"),
    ("Y Bot", 319_944, 67, 131, "132×136", "132×203", "failed (too tall)"),
)


def texture_sizes() -> list[str]:
    """Our layouts for models like the thesis's (one clip, one guard frame, no embedded metadata rows)."""
    from hybrid_skin.core.animtex.layout import plan_layout  # noqa: PLC0415

    lines = [
        "P5 texture sizes (w×h) next to seed 002's (its layout: x = frame, y = bone texel):",
        f"  {'model':<8} {'verts':>8} {'bones':>5} {'frames':>6}  {'BONE_DQ':>10} {'BONE_MATRIX':>12}"
        f" {'VERTEX':>13}   thesis DQ / matrix / vertex",
    ]
    for name, verts, bones, frames, t_dq, t_mat, t_vert in THESIS_MODELS:
        dq, mat, vert = (
            plan_layout(n, texels, [frames]) for n, texels in ((bones, 2), (bones, 3), (verts, 2))
        )
        lines.append(
            f"  {name:<8} {verts:>8,} {bones:>5} {frames:>6}  {dq.width:>4}×{dq.height:<5} "
            f"{mat.width:>5}×{mat.height:<6} {vert.width:>5}×{vert.height:<7}   {t_dq} / {t_mat} / {t_vert}"
        )
    return lines


def bench_p5(frames: int = 24, vertices: int = 100_000, bones: int = 52, repeats: int = 3) -> list[Row]:
    """Bake seconds per frame ÷ one native depsgraph evaluation of that frame (an X Bot-sized mesh).

    Two rows per kind: the whole bake as a user runs it (operator: sampling, the error report over
    every stored and halfway frame, file write and read-back check, mesh data), and the part that
    makes the texture (``sample`` + ``encode`` of :data:`hybrid_skin.animtex.bake.PHASES`). The bake
    times its own phases; the split of the median run is printed.
    """
    import tempfile  # noqa: PLC0415

    import hybrid_skin  # noqa: PLC0415
    from hybrid_skin.animtex.summary import last_summary  # noqa: PLC0415

    scene.clear_scene()
    arm = scene.make_chain_armature("P5Rig", bones, height=4.0)
    obj = scene.make_grid_cylinder("P5Mesh", vertices, height=4.0)
    scene.add_random_weights(obj, arm)
    scene.add_lbs_modifier(obj, arm)
    arm.animation_data_create()
    for frame, seed in ((1, 31), (frames, 32)):
        scene.set_pose(arm, scene.random_pose(arm, seed))
        for pb in arm.pose.bones:
            pb.keyframe_insert("rotation_quaternion", frame=frame)
    bpy_scene = bpy.context.scene
    bpy_scene.frame_start, bpy_scene.frame_end = 1, frames

    def native_frames():
        for frame in range(1, frames + 1):
            bpy_scene.frame_set(frame)

    native = median_ms(native_frames, repeats=3) / frames
    rows = []
    hybrid_skin.register()
    try:
        bpy.context.view_layer.objects.active = arm
        for kind, precision in (("VERTEX", "PNG16"), ("BONE_DQ", "EXR16")):
            runs = []  # (wall seconds, phase seconds)
            with tempfile.TemporaryDirectory() as folder:
                for i in range(repeats + 1):  # the first binds the rig and starts the thread pool
                    t0 = time.perf_counter()
                    result = bpy.ops.hybrid_skin.bake_animation_texture(
                        directory=folder, kind=kind, precision=precision, action_source="ACTIVE"
                    )
                    wall = time.perf_counter() - t0
                    assert result == {"FINISHED"}, result
                    if i:
                        runs.append((wall, last_summary(arm)["seconds"]))
            wall, split = sorted(runs, key=lambda r: r[0])[len(runs) // 2]
            per_frame = {k: 1e3 * v / frames for k, v in split.items()}
            ours, made = 1e3 * wall / frames, per_frame["sample"] + per_frame["encode"]
            print(
                f"  P5 {kind} {precision}: {ours:.1f} ms per frame = "
                + ", ".join(f"{k} {v:.1f}" for k, v in per_frame.items())
                + f", other {ours - sum(per_frame.values()):.1f}",
                flush=True,
            )
            size = f"({vertices // 1000}k v)"
            rows += [
                Row(
                    f"P5 bake {kind} {precision} per frame ÷ native evaluation {size}",
                    ours,
                    native,
                    ours / native,
                    1.5,
                    note=f"{frames} frames, {bones} bones; whole bake: truth, error report, files",
                ),
                Row(
                    f"P5 sample+encode {kind} {precision} per frame ÷ native {size}",
                    made,
                    native,
                    made / native,
                    1.5,
                    note="the texture alone: frame changes, skinning/palettes at stored frames, encoding",
                ),
            ]
    finally:
        hybrid_skin.unregister()
    return rows


# ------------------------------------------------------------------------------------------ report
def print_table(rows: list[Row]) -> None:
    head = (
        f"{'benchmark':<62} {'ours ms':>10} {'native ms':>10} {'ratio':>8} {'target':>7}"
        f" {'met?':>14}  note"
    )
    print(head)
    print("-" * len(head))
    for r in rows:
        native = "-" if r.native_ms is None else f"{r.native_ms:10.2f}"
        ratio = "-" if r.ratio is None else f"{r.ratio:8.3f}"
        target = "-" if r.target is None else f"≤{r.target:g}" + (f"/{r.stretch:g}" if r.stretch else "")
        print(
            f"{r.name:<62} {r.ours_ms:10.2f} {native:>10} {ratio:>8} {target:>7}" f" {r.met():>14}  {r.note}"
        )


def main() -> int:
    t_start = time.perf_counter()
    print(f"Blender {bpy.app.version_string} (bpy module), {hardware()}")
    print(
        f"{BONES} bones, {scene.INFLUENCES} influences per vertex, deform factor {FACTOR}, median of"
        f" interleaved repeats; Blender's modifiers and the numpy core (chunks on {THREADS} threads) both"
        " use every core\n"
    )
    rows: list[Row] = []
    for n in SIZES:
        scene.clear_scene()
        arm = scene.make_chain_armature("BenchRig", BONES, height=4.0)
        obj = scene.make_grid_cylinder("BenchMesh", n, height=4.0)
        entries = scene.add_random_weights(obj, arm)
        scene.add_lbs_modifier(obj, arm)
        bpy.context.view_layer.update()
        if n in BIND_SIZES:
            rows += bench_bind(obj, entries, repeats=3 if n < 1_000_000 else 1, baseline=n < 1_000_000)
        scene.add_native_mix(obj, arm, FACTOR)
        rows += bench_frame(obj, arm, n, REPEATS[n])
        if n == 100_000:
            rows += bench_bake(obj, arm)
        print(f"  ... {n:>9,} vertices done at {time.perf_counter() - t_start:5.1f} s", flush=True)
    with runtime.session():  # the GPU skin's shader cache lives in the add-on's runtime
        rows += bench_gpu_update()
        rows += bench_gpu_draw()
    rows += bench_p5()
    scene.clear_scene()
    print()
    print_table(sorted(rows, key=lambda r: r.name[:2]))
    print()
    print("\n".join(texture_sizes()))
    print(f"\ntotal {time.perf_counter() - t_start:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
