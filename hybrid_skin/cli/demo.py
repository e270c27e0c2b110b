"""``python -m hybrid_skin demo``: hybrid skinning of a real rigged glTF against Blender's own result.

Imports the asset with Blender's bundled glTF importer, plays an action, and for every mesh deformed
by an Armature modifier compares :func:`hybrid_skin.api.deformed_positions` at f = 0, 0.5, 1 with
Blender's LBS, Preserve Volume and two-modifier mix (:mod:`hybrid_skin.native`). Steps are separate
functions so later ones (render comparison, texture bakes) slot in after :func:`compare`.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

DEFAULT_ASSET = "RobotExpressive.glb"
FACTORS = (0.0, 0.5, 1.0)
FRAME_COUNT = 4
PREFERRED_ACTIONS = ("Walking", "Dance", "Running")


def default_asset() -> Path:
    folder = os.environ.get("HYBRID_SKIN_ASSETS")
    root = Path(folder) if folder else Path(__file__).resolve().parents[2] / "assets"
    return root / DEFAULT_ASSET


def add_arguments(parser: argparse.ArgumentParser) -> None:
    default = f"$HYBRID_SKIN_ASSETS or <repo>/assets/{DEFAULT_ASSET}"
    parser.add_argument("--asset", type=Path, default=None, help=f"rigged .glb/.gltf (default: {default})")
    preferred = ", ".join(PREFERRED_ACTIONS)
    parser.add_argument("--action", default="",
                        help=f"action to play (default: one of {preferred}, else the first)")
    parser.add_argument("--frames", type=int, default=FRAME_COUNT,
                        help="frames to compare, spread over the action")


@dataclass
class Comparison:
    object_name: str
    vertices: int
    frame: int
    relative_error: dict[float, float]  # deform factor → max |ours - Blender| / bbox diagonal


@dataclass
class Timing:
    object_name: str
    vertices: int
    bind_ms: float
    ours_ms: list[float] = field(default_factory=list)
    native_ms: list[float] = field(default_factory=list)


# ------------------------------------------------------------------------------------------ scene
def import_asset(path: Path) -> None:
    """Empty scene, then Blender's glTF importer; its INFO log is kept out of the report unless it fails."""
    import tempfile

    import bpy

    bpy.ops.wm.read_factory_settings(use_empty=True)
    sys.stdout.flush()
    saved = os.dup(1)
    with tempfile.TemporaryFile(mode="w+") as log:
        os.dup2(log.fileno(), 1)
        try:
            bpy.ops.import_scene.gltf(filepath=str(path))
        except Exception:
            os.dup2(saved, 1)
            log.seek(0)
            sys.stderr.write(log.read())
            raise
        finally:
            sys.stdout.flush()
            os.dup2(saved, 1)
            os.close(saved)


def skinned_objects() -> list:
    import bpy

    return sorted(
        (o for o in bpy.data.objects
         if o.type == "MESH" and any(m.type == "ARMATURE" and m.object is not None for m in o.modifiers)),
        key=lambda o: o.name,
    )


def assign_action(armature, name: str = ""):
    """Play ``name`` (or a preferred / the first action) on ``armature``; slotted actions in Blender ≥ 4.4."""
    import bpy

    from ..animtex.scene import compatible_actions

    actions = compatible_actions(armature) or list(bpy.data.actions)
    if not actions:
        return None
    by_name = {a.name: a for a in actions}
    for a in actions:  # Blender 4.2's glTF importer names it "<animation>_<armature object>"
        by_name.setdefault(a.name.removesuffix(f"_{armature.name}"), a)
    wanted = [name] if name else [*PREFERRED_ACTIONS]
    action = next((by_name[n] for n in wanted if n in by_name), None)
    if action is None and name:
        raise SystemExit(f"error: no action named '{name}'; the file has: {', '.join(sorted(by_name))}")
    action = action or actions[0]
    data = armature.animation_data or armature.animation_data_create()
    data.action = action
    slots = getattr(action, "slots", None)
    if slots is not None and hasattr(data, "action_slot"):
        slot = next((s for s in slots if s.target_id_type == "OBJECT"), None)
        if slot is not None:
            data.action_slot = slot
    return action


def frames_of(action, count: int) -> list[int]:
    start, end = (1, 1) if action is None else (int(action.frame_range[0]), int(action.frame_range[1]))
    if count <= 1 or end <= start:
        return [start]
    return sorted({round(start + (end - start) * i / (count - 1)) for i in range(count)})


# ----------------------------------------------------------------------------------------- compare
def _median_ms(fn, repeats: int = 5) -> float:
    fn()
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return 1e3 * statistics.median(times)


def compare(objects, frames: list[int]) -> tuple[list[Comparison], list[Timing]]:
    import bpy
    import numpy as np

    from .. import api
    from ..skin import bind as rig_module
    from ..skin import native

    scene = bpy.context.scene
    view_layer = bpy.context.view_layer
    scene.frame_set(frames[0])
    timings = []
    for obj in objects:
        t0 = time.perf_counter()
        rig_module.bind(obj, bpy.context.evaluated_depsgraph_get())
        timings.append(Timing(obj.name, len(obj.data.vertices), 1e3 * (time.perf_counter() - t0)))
    results = []
    for frame in frames:
        scene.frame_set(frame)
        for obj, timing in zip(objects, timings):
            errors = {}
            for f in FACTORS:
                ours = api.deformed_positions(obj, deform_factor=f)
                theirs = native.native_positions(obj, f)
                diagonal = float(np.linalg.norm(theirs.max(0) - theirs.min(0))) or 1.0
                errors[f] = float(np.linalg.norm(ours - theirs, axis=1).max()) / diagonal
            results.append(Comparison(obj.name, timing.vertices, frame, errors))
            timing.ours_ms.append(_median_ms(lambda o=obj: api.deformed_positions(o, deform_factor=0.5)))
            with native.native_mix(obj, 0.5):

                def native_frame(o=obj):
                    o.update_tag(refresh={"DATA"})
                    view_layer.update()

                timing.native_ms.append(_median_ms(native_frame))
    return results, timings


# ------------------------------------------------------------------------------------------ report
def print_comparisons(results: list[Comparison]) -> None:
    head = f"{'object':<28} {'verts':>6} {'frame':>5}  " + "  ".join(f"err/diag f={f:<3g}" for f in FACTORS)
    print(head)
    print("-" * len(head))
    for r in results:
        cells = "  ".join(f"{r.relative_error[f]:>14.2e}" for f in FACTORS)
        print(f"{r.object_name:<28} {r.vertices:>6} {r.frame:>5}  {cells}")
    worst = max(max(r.relative_error.values()) for r in results)
    print(f"worst max error ÷ bbox diagonal: {worst:.2e}")


def print_timings(timings: list[Timing]) -> None:
    head = f"{'object':<28} {'verts':>6} {'bind ms':>8} {'ours ms/frame':>14} {'native ms/frame':>16}"
    print(head)
    print("-" * len(head))
    for t in timings:
        print(f"{t.object_name:<28} {t.vertices:>6} {t.bind_ms:>8.2f} {statistics.median(t.ours_ms):>14.3f}"
              f" {statistics.median(t.native_ms):>16.3f}")
    print("ours: api.deformed_positions at f=0.5 (cached bind, palette + numpy core); native: one depsgraph"
          " re-evaluation of the object with Blender's LBS + Preserve Volume mix modifiers")


def run(args: argparse.Namespace) -> int:
    asset = (args.asset or default_asset()).expanduser()
    if not asset.is_file():
        print(f"error: demo asset not found: {asset}\n"
              "  pass --asset PATH, or set HYBRID_SKIN_ASSETS to the folder holding "
              f"{DEFAULT_ASSET}", file=sys.stderr)
        return 2
    import bpy

    t_start = time.perf_counter()
    print(f"Hybrid Skin demo: Blender {bpy.app.version_string}, asset {asset}")
    import_asset(asset)
    objects = skinned_objects()
    if not objects:
        print(f"error: {asset.name} has no mesh deformed by an Armature modifier", file=sys.stderr)
        return 3
    armatures = {m.object for o in objects for m in o.modifiers if m.type == "ARMATURE" and m.object}
    actions = {arm.name: assign_action(arm, args.action) for arm in armatures}
    action = next(iter(actions.values()), None)
    frames = frames_of(action, args.frames)
    print(f"{len(objects)} skinned meshes, action '{action.name if action else '-'}', frames {frames}\n")
    results, timings = compare(objects, frames)
    print_comparisons(results)
    print()
    print_timings(timings)
    print(f"\ndemo took {time.perf_counter() - t_start:.1f} s")
    return 0
