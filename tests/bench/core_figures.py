"""P1 (the numpy core per frame against Blender's own hybrid) and the scripting API end to end.

Blender's hybrid is its own two-modifier setup: the Armature modifier (LBS) followed by a Preserve
Volume Armature modifier with Multi Modifier, mixed by a vertex group of weight ``f`` — exactly what
Hybrid Skin's *Evaluated* display builds. A native frame is a pose change and ``view_layer.update()``;
Blender's modifiers use every core, and so does the core's thread pool.
"""

from __future__ import annotations

import bpy
import numpy as np
import scene
from measure import Figure, interleaved, peak_bytes

from hybrid_skin import api
from hybrid_skin.core.skinning import skin
from hybrid_skin.rig import bind as rig

BONES = 48
FACTOR = 0.5
ROUNDS = {10_000: 60, 100_000: 20, 1_000_000: 7}


def _label(n: int) -> str:
    return f"{n // 1000}k" if n < 1_000_000 else f"{n // 1_000_000}M"


def _pose_flipper(arm: bpy.types.Object, poses: list, scales: list | None = None):
    """A native frame: the next pose, then the depsgraph update (the modifiers re-evaluate)."""
    state = {"i": 0}
    view_layer = bpy.context.view_layer

    def frame() -> None:
        state["i"] ^= 1
        scene.set_pose(arm, poses[state["i"]], None if scales is None else scales[state["i"]])
        view_layer.update()

    return frame


def _check_re_evaluates(obj: bpy.types.Object, frame) -> None:
    frame()
    first = scene.evaluated_positions(obj)
    frame()
    if np.allclose(first, scene.evaluated_positions(obj)):
        raise RuntimeError("native modifiers did not re-evaluate after a pose change: timing void")


def p1(n: int, arm: bpy.types.Object, obj: bpy.types.Object) -> list[Figure]:
    """Core ``skin()`` (palette already built: O(bones)) for positions, and positions + normals, against
    a native frame, and a native frame followed by reading the evaluated vertex normals. ``obj`` is a
    bench rig of about ``n`` vertices skinned to ``arm``."""
    scene.add_native_mix(obj, arm, FACTOR)
    bpy.context.view_layer.update()
    poses = [scene.random_pose(arm, seed) for seed in (11, 12)]
    native = _pose_flipper(arm, poses)
    _check_re_evaluates(obj, native)

    dg = bpy.context.evaluated_depsgraph_get()
    bound = rig.bind(obj, dg, "Armature")
    posed = bound.posed(dg)
    palette, t2a = posed.palette, posed.target_to_armature
    rest_p, rest_n = bound.rest_positions, bound.rest_normals

    def native_normals() -> None:
        native()
        scene.evaluated_normals(obj)

    times = interleaved(
        {
            "native": native,
            "ours": lambda: skin(rest_p, bound.binding, palette, FACTOR, None, t2a),
            "native_n": native_normals,
            "ours_n": lambda: skin(rest_p, bound.binding, palette, FACTOR, rest_n, t2a),
        },
        ROUNDS[n],
    )
    # Same pose on both sides now: our result must be Blender's.
    ours_p = bound.posed(bpy.context.evaluated_depsgraph_get()).skin(FACTOR)[0]
    ref = scene.evaluated_positions(obj)
    diag = float(np.linalg.norm(ref.max(0) - ref.min(0)))
    check = f"check: max |ours − Blender| = {np.abs(ours_p - ref).max() / diag:.1e} × bbox diagonal"
    size = _label(n)
    ratio = times["ours"].best / times["native"].best
    ratio_n = times["ours_n"].best / times["native_n"].best
    return [
        Figure(
            "P1",
            f"hybrid positions ÷ Blender's two-modifier mix, {size} vertices",
            times["ours"],
            times["native"],
            ratio,
            0.8,
            f"a {size}-vertex hybrid frame costs {ratio:.2f}× of Blender's own (LBS + Preserve Volume)",
            stretch=0.5,
            notes=[check],
            peak=peak_bytes(lambda: skin(rest_p, bound.binding, palette, FACTOR, None, t2a)),
        ),
        Figure(
            "P1n",
            f"hybrid positions + normals ÷ mix + reading its vertex normals, {size} vertices",
            times["ours_n"],
            times["native_n"],
            ratio_n,
            1.0,
            f"positions and normals of a {size}-vertex mesh cost {ratio_n:.2f}× of Blender's mix plus "
            "reading its vertex normals",
            peak=peak_bytes(lambda: skin(rest_p, bound.binding, palette, FACTOR, rest_n, t2a)),
        ),
    ]


def api_end_to_end(n: int = 110_000) -> Figure:
    """``api.deformed_positions`` after a pose change (pose read, bind check, palette, skin) with scaled
    bones, against a native frame plus reading the evaluated positions. Two identical rigs in their own
    collections; ours has its Armature modifier hidden in the viewport, as the GPU display leaves it."""
    scene.clear_scene()
    ours_coll, native_coll = scene.collection("Ours"), scene.collection("Native")
    arm_o, obj_o, _ = scene.bench_rig("Ours", n, BONES, ours_coll)
    obj_o.modifiers["Armature"].show_viewport = False
    arm_n, obj_n, _ = scene.bench_rig("Native", n, BONES, native_coll)
    scene.add_native_mix(obj_n, arm_n, FACTOR)
    poses = [scene.random_pose(arm_o, seed) for seed in (41, 42)]
    scales = [scene.random_scales(arm_o, seed) for seed in (43, 44)]
    bpy.context.view_layer.update()
    flip_native = _pose_flipper(arm_n, poses, scales)
    _check_re_evaluates(obj_n, flip_native)
    flip_ours = _pose_flipper(arm_o, poses, scales)

    def native() -> None:
        flip_native()
        scene.evaluated_positions(obj_n)

    def ours() -> None:
        flip_ours()
        api.deformed_positions(obj_o, FACTOR)

    times = interleaved({"native": native, "ours": ours}, 15)
    for arm in (arm_o, arm_n):  # the same pose on both rigs for the check
        scene.set_pose(arm, poses[0], scales[0])
    bpy.context.view_layer.update()
    ref = scene.evaluated_positions(obj_n)
    got = api.deformed_positions(obj_o, FACTOR)
    diag = float(np.linalg.norm(ref.max(0) - ref.min(0)))
    ratio = times["ours"].best / times["native"].best
    return Figure(
        "API",
        f"api.deformed_positions end to end ÷ native evaluated positions, {n // 1000}k, scaled bones",
        times["ours"],
        times["native"],
        ratio,
        1.0,
        f"reading the hybrid through the API after a pose change costs {ratio:.2f}× of reading Blender's own",
        notes=[f"check: max |ours − Blender| = {np.abs(got - ref).max() / diag:.1e} × bbox diagonal"],
        peak=peak_bytes(lambda: api.deformed_positions(obj_o, FACTOR)),
    )
