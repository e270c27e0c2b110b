"""Figures through the add-on's Blender glue: bind, shape-key bake, animation-texture bake, GPU display.

Each needs the add-on registered (operators); :func:`registered` does that around them. Rigs compared
with each other live in their own collections and the one not being timed is excluded from the view
layer, so a frame change evaluates only the rig being timed.
"""

from __future__ import annotations

import contextlib
import tempfile

import bpy
import numpy as np
import scene
from measure import Figure, Timing, interleaved, peak_bytes

import hybrid_skin
from hybrid_skin import bridge
from hybrid_skin.bake import baker as bake
from hybrid_skin.rig import baked
from hybrid_skin.rig import bind as rig

BONES = 48
FACTOR = 0.5


@contextlib.contextmanager
def registered():
    hybrid_skin.register()
    try:
        yield
    finally:
        hybrid_skin.unregister()


# ------------------------------------------------------------------------------------------- bind
def bind(obj: bpy.types.Object, entries: int, rounds: int) -> Figure:
    """Whole ``rig.bind`` (bridge reads, weights, binding) in seconds per million weight entries."""
    dg = bpy.context.evaluated_depsgraph_get()
    times = interleaved(
        {"bind": lambda: rig.bind(obj, dg), "read": lambda: bridge.read_vertex_group_entries(obj.data)},
        rounds,
        warmup=0,
    )
    per_m = 1e6 / entries
    value = times["bind"].best * per_m
    n = len(obj.data.vertices)
    size = f"{n // 1000}k" if n < 1_000_000 else f"{n / 1e6:.0f}M"
    return Figure(
        "P3",
        f"bind, seconds per million weight entries ({size} vertices, {entries / 1e6:.1f}M entries)",
        times["bind"],
        None,
        value,
        0.3,
        f"binding a mesh with {entries / 1e6:.1f}M weight entries takes {times['bind'].best:.2f} s",
        value_label="s per M entries",
        notes=[f"of which reading the vertex groups: {times['read'].best * per_m:.3f} s per M entries"],
    )


# ---------------------------------------------------------------------------------- shape-key bake
def _animate(arm: bpy.types.Object, frames: int, seeds: tuple[int, int]) -> None:
    arm.animation_data_create()
    for frame, seed in ((1, seeds[0]), (frames, seeds[1])):
        scene.set_pose(arm, scene.random_pose(arm, seed))
        for pb in arm.pose.bones:
            pb.keyframe_insert("rotation_quaternion", frame=frame)


def _native_shape_key_bake(obj: bpy.types.Object, frames: int) -> None:
    """What a script does with Blender's own hybrid: per frame, the frame change (the modifiers
    evaluate), the evaluated positions, a new shape key written with them, keyed 0 → 1 → 0 linearly."""
    bpy_scene = bpy.context.scene
    basis = obj.shape_key_add(name="Basis", from_mix=False)
    keys = []
    for frame in range(1, frames + 1):
        bpy_scene.frame_set(frame)
        positions = scene.evaluated_positions(obj)
        kb = obj.shape_key_add(name=f"Native {frame:04d}", from_mix=False)
        kb.points.foreach_set("co", positions.ravel())
        kb.relative_key = basis
        kb.value = 0.0  # a new key starts at 1 and would deform the next frames
        keys.append(kb)
    fcurves = None
    for i, kb in enumerate(keys, start=1):
        for frame, value in ((i - 1, 0.0), (i, 1.0), (i + 1, 0.0)):
            if 1 <= frame <= frames:
                kb.value = value
                kb.keyframe_insert("value", frame=frame)
        fcurves = fcurves or _fcurves(obj.data.shape_keys)
        for point in fcurves.find(f'key_blocks["{kb.name}"].value').keyframe_points:
            point.interpolation = "LINEAR"


def _fcurves(key: bpy.types.Key):
    action = key.animation_data.action
    if hasattr(action, "layers") and action.layers:  # slotted actions (Blender ≥ 4.4)
        return action.layers[0].strips[0].channelbag(key.animation_data.action_slot).fcurves
    return action.fcurves


def _clear_native_keys(obj: bpy.types.Object) -> None:
    key = obj.data.shape_keys
    if key is not None:
        action = key.animation_data.action if key.animation_data else None
        obj.shape_key_clear()
        if action is not None:
            bpy.data.actions.remove(action)


def shape_key_bake(n: int = 100_000, frames: int = 10) -> Figure:
    """Bake to shape keys per frame (operator) ÷ the same job done with Blender's own hybrid."""
    scene.clear_scene()
    ours_coll, native_coll = scene.collection("Ours"), scene.collection("Native")
    arm_o, obj_o, _ = scene.bench_rig("Ours", n, BONES, ours_coll)
    arm_n, obj_n, _ = scene.bench_rig("Native", n, BONES, native_coll)
    scene.add_native_mix(obj_n, arm_n, FACTOR)
    for arm in (arm_o, arm_n):
        _animate(arm, frames, (21, 22))
    bpy.context.view_layer.objects.active = obj_o
    bpy.ops.hybrid_skin.add()
    obj_o.hybrid_skin.deform_factor = FACTOR

    def before_native() -> None:
        _clear_native_keys(obj_n)
        scene.exclude(ours_coll, True)
        scene.exclude(native_coll, False)

    def before_ours() -> None:
        baked.clear(obj_o)
        scene.exclude(native_coll, True)
        scene.exclude(ours_coll, False)
        bpy.context.view_layer.objects.active = obj_o

    def ours() -> None:
        assert bpy.ops.hybrid_skin.bake_deformation(frame_start=1, frame_end=frames) == {"FINISHED"}

    times = interleaved(
        {"native": lambda: _native_shape_key_bake(obj_n, frames), "ours": ours},
        7,
        before={"native": before_native, "ours": before_ours},
    )
    check = _shape_key_check(obj_o, obj_n, frames)
    peak = peak_bytes(ours, before_ours)
    before_native()  # leave both excluded states consistent for the next figure
    per = {k: Timing([s / frames for s in t.seconds]) for k, t in times.items()}
    ratio = per["ours"].best / per["native"].best
    return Figure(
        "BAKE",
        f"bake to shape keys per frame ÷ Blender's own (frame change, positions, write), {n // 1000}k",
        per["ours"],
        per["native"],
        ratio,
        1.0,
        f"baking {n // 1000}k vertices to shape keys costs {ratio:.2f}× of scripting it on Blender's mix",
        notes=[f"{frames} frames per bake, keys keyed 0 → 1 → 0 on both sides", check],
        peak=peak,
    )


def _shape_key_check(obj_o: bpy.types.Object, obj_n: bpy.types.Object, frames: int) -> str:
    ours = obj_o.data.shape_keys.key_blocks
    native = obj_n.data.shape_keys.key_blocks
    n = len(obj_o.data.vertices)
    a, b = np.empty(n * 3, np.float32), np.empty(n * 3, np.float32)
    worst = 0.0
    for frame in range(1, frames + 1):
        ours[f"{bake.KEY_PREFIX}{frame:04d}"].points.foreach_get("co", a)
        native[f"Native {frame:04d}"].points.foreach_get("co", b)
        worst = max(worst, float(np.abs(a - b).max()))
    return f"check: max |ours − Blender| over the baked keys = {worst / 4.0:.1e} × mesh height"


# ----------------------------------------------------------------------------- texture bake (P5)
def texture_bake(frames: int = 24, n: int = 100_000, bones: int = 52) -> list[Figure]:
    """Animation-texture bake per frame ÷ one native evaluation of that frame (Blender's Armature modifier
    on the same mesh): the whole bake as a user runs it (sampling, the error report over every stored and
    halfway frame, files, mesh data), and the part that makes the texture (``sample`` + ``encode``)."""
    from hybrid_skin.animtex import summary as animtex_bake  # noqa: PLC0415

    scene.clear_scene()
    arm, obj, _ = scene.bench_rig("P5", n, bones)
    _animate(arm, frames, (31, 32))
    bpy_scene = bpy.context.scene
    bpy_scene.frame_start, bpy_scene.frame_end = 1, frames
    bpy.context.view_layer.objects.active = arm

    def native() -> None:
        for frame in range(1, frames + 1):
            bpy_scene.frame_set(frame)

    figures = []
    with tempfile.TemporaryDirectory() as folder:
        for kind, precision in (("VERTEX", "PNG16"), ("BONE_DQ", "EXR16")):
            splits: list[dict[str, float]] = []

            def ours(kind=kind, precision=precision, splits=splits) -> None:
                result = bpy.ops.hybrid_skin.bake_animation_texture(
                    directory=folder, kind=kind, precision=precision, action_source="ACTIVE"
                )
                assert result == {"FINISHED"}, result
                splits.append(dict(animtex_bake.last_summary(arm).seconds))

            times = interleaved({"native": native, "ours": ours}, 7)
            splits = splits[1:]  # the warm-up run binds the rig and starts the thread pool
            made = Timing([s["sample"] + s["encode"] for s in splits])
            per = {k: Timing([s / frames for s in t.seconds]) for k, t in times.items()}
            made = Timing([s / frames for s in made.seconds])
            best = min(range(len(splits)), key=lambda i: times["ours"].seconds[i])
            split = ", ".join(f"{k} {1e3 * v / frames:.1f}" for k, v in splits[best].items())
            peak = peak_bytes(ours)
            whole = per["ours"].best / per["native"].best
            only = made.best / per["native"].best
            size = f"{n // 1000}k"
            figures += [
                Figure(
                    "P5",
                    f"texture bake {kind} {precision}, texture only (sample + encode) ÷ native, {size}",
                    made,
                    per["native"],
                    only,
                    1.0,
                    f"making a {kind} texture costs {only:.2f}× of Blender evaluating the same frames",
                    notes=[f"{frames} frames, {bones} bones"],
                ),
                Figure(
                    "P5",
                    f"texture bake {kind} {precision}, whole (report, files, mesh data) ÷ native, {size}",
                    per["ours"],
                    per["native"],
                    whole,
                    3.0,
                    f"the whole verified {kind} bake costs {whole:.1f}× of Blender evaluating the frames",
                    notes=[f"ms per frame in the fastest bake: {split}"],
                    peak=peak,
                ),
            ]
    return figures
