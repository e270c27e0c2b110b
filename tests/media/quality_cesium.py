"""The quality tables' real-character rows: CesiumMan's knees and elbows through its walk.

``assets/CesiumMan.gltf`` (licence beside it) is imported as a user would, Hybrid Skin added, and the
walk sampled every other frame; at each frame the add-on's ``analyze`` measures LBS, DQS, the best single
factor and every Auto profile. Nothing here was seen by ``tools/fit_auto.py``. Per joint and method the
table gives bulge, shrink and the local volume change at the frame where the joint bends most; then, over
the frames where it bends at least 30°, how often Auto (round) is at least as good as Auto 0.1; then each Auto
profile's largest factor step across an edge whose vertices blend, over the whole mesh and walk; then what
those steps do to the surface: how much the dihedral angle across each edge of the blended regions changes
from rest (a *fold*, ``core.folds``) under LBS, DQS, single factors and each Auto profile, and how often each
folds an edge by more than 10° and 30° beyond what both LBS and DQS do there, and beyond the uniform hybrid
at the edge's own factor too (the fold a factor's variation adds, which no single factor makes).
CesiumMan's knee and elbow regions are no tubes around the bones (the weights reach far into the thigh,
the mesh has clothing folds), so even LBS shows a large "bulge": compare the methods with each other, not
with the canonical limbs.

Run from the repository root:  .venv/bin/python tests/media/quality_cesium.py
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

import bpy  # noqa: E402
import numpy as np  # noqa: E402

import hybrid_skin  # noqa: E402
from hybrid_skin import bridge  # noqa: E402
from hybrid_skin.analyze import operators as analyze_ops  # noqa: E402
from hybrid_skin.core import autofactor, folds, metrics  # noqa: E402
from hybrid_skin.rig import bind  # noqa: E402
from tests.support.assets import import_gltf, play  # noqa: E402

#: CesiumMan's glTF nodes have no names: the joints by their child bone (the shin's and forearm's heads).
JOINTS = {"knee L": "Node_4", "knee R": "Node_8", "elbow L": "Node_14", "elbow R": "Node_17"}
METHODS = {
    "LBS": "LBS",
    "DQS": "DQS",
    "best": "best single f (per frame)",
    "AUTO_JOINT": "Auto 0.1 (per joint)",
    "AUTO": "**Auto (round)**",
    "AUTO_KEEP_VOLUME": "Auto, keep volume",
}
FRAME_STEP = 2.0
#: Single factors whose folds are measured next to the Auto profiles'.
CONSTANTS = (0.1, 0.3, 0.5, 0.7, 0.9)


def walk() -> tuple[dict[str, list[tuple[float, float, dict]]], FoldTally]:
    """Per joint: (frame, bend in degrees, method → JointMeasure) at every sampled frame; the folds and
    factor steps of every sampled frame (:class:`FoldTally`, poses named "frame n")."""
    arm, (man,) = import_gltf(ROOT / "assets" / "CesiumMan.gltf")
    bpy.context.view_layer.objects.active = man
    assert bpy.ops.hybrid_skin.add() == {"FINISHED"}
    action = next(iter(bpy.data.actions))
    start, end = action.frame_range
    out: dict[str, list] = {name: [] for name in JOINTS}
    triangles = bridge.triangle_vertices(man.data)
    tally = FoldTally()
    for frame in np.arange(start, end + 1e-6, FRAME_STEP):
        play(arm, action, float(frame))
        bpy.context.view_layer.objects.active = man
        assert bpy.ops.hybrid_skin.analyze() == {"FINISHED"}
        result = analyze_ops._state().analyses[man.session_uid]
        angles = bend_angles(man)
        tally.add(man, triangles, f"frame {frame:g}")
        for name, node in JOINTS.items():
            child = next((c for c, label in result.labels.items() if label == node), None)
            if child is None:  # the joint did not move at this frame
                continue
            measures = {m: result.comparison.rows[m][1].joint(child) for m in METHODS}
            out[name].append((float(frame), angles[node], measures))
    return out, tally


def surface(
    man: bpy.types.Object, triangles: np.ndarray, frame: int
) -> tuple[dict[str, float], dict[str, tuple]]:
    """At this frame: each Auto profile's largest factor step across an edge whose two vertices blend, and
    per method (LBS, DQS, single factors, each Auto profile) over the interior edges whose two vertices
    blend: the folds (``core.folds.fold_angles``), the summary beyond both LBS and DQS, and beyond the uniform
    hybrid at each edge's factor too."""
    dg = bpy.context.evaluated_depsgraph_get()
    posed = bind.cached_bind(man, dg).posed(dg)
    blended = metrics.blended_vertices(posed.bind.binding.weights)
    factors = {p: posed.auto_factors(p) for p in autofactor.PROFILES}
    steps = {p: metrics.largest_factor_step(f, triangles, blended) for p, f in factors.items()}
    setup = folds.prepare_folds(posed.bind.rest_positions, triangles, blended)
    lbs, dqs = posed.skin(0.0)[0], posed.skin(1.0)[0]
    fields = {"LBS": 0.0, "DQS": 1.0, **{f"f = {c:g}": c for c in CONSTANTS}, **factors}
    out = {}
    for method, field in fields.items():
        angles = folds.fold_angles(setup, posed.skin(field)[0])
        beyond = folds.summarize(setup, folds.folds_beyond(setup, lbs, dqs, field), frame)
        hybrid = folds.summarize(setup, folds.folds_beyond(setup, lbs, dqs, field, uniform=True), frame)
        out[method] = (angles, beyond, hybrid)
    return steps, out


class FoldTally:
    """Each method's folds (:func:`surface`) and each Auto profile's largest factor step, added up over the
    meshes and poses given to :meth:`add`, each pose named by a label."""

    def __init__(self) -> None:
        self.summaries: dict[str, list] = {}
        self.labels: list[str] = []
        self.steps: dict[str, tuple[float, str]] = {}

    def add(self, obj: bpy.types.Object, triangles: np.ndarray, label: str) -> None:
        self.labels.append(label)
        frame_steps, found = surface(obj, triangles, len(self.labels) - 1)
        for profile, step in frame_steps.items():
            if step > self.steps.get(profile, (-1.0, ""))[0]:
                self.steps[profile] = (step, label)
        for method, result in found.items():
            self.summaries.setdefault(method, []).append(result)

    def steps_line(self) -> str:
        shown = ", ".join(f"{p} {s:.3f} ({where})" for p, (s, where) in self.steps.items())
        return f"largest factor step across an edge: {shown}"

    def table(self, over: str) -> str:
        """Per method over the poses: the folds' 99th percentile and largest, then the edge-poses folded
        more than 10° and 30° beyond both LBS and DQS (and the worst, where), and more than 10° beyond the
        uniform hybrid at the edge's factor too."""
        lines = [
            "| method | 99th percentile | largest | > 10° beyond both | > 30° beyond both "
            "| worst beyond both (pose, edge) | > 10° beyond the uniform hybrid too |",
            "|---|---|---|---|---|---|---|",
        ]
        measured = 0
        for method, results in self.summaries.items():
            angles = np.concatenate([a for a, _b, _h in results])
            beyond = sum((b for _a, b, _h in results[1:]), results[0][1])
            hybrid = sum((h for _a, _b, h in results[1:]), results[0][2])
            measured = beyond.measured
            cells = [f"{np.percentile(angles, 99):.1f}°", f"{angles.max():.1f}°"]
            if method in ("LBS", "DQS"):
                cells += ["—"] * 4
            else:
                where = f"{beyond.worst:.0f}° ({self.labels[beyond.worst_pose]}, {beyond.worst_edge})"
                cells += [str(beyond.over_limit), str(beyond.over_30), where, str(hybrid.over_limit)]
            lines.append("| " + " | ".join([method, *cells]) + " |")
        return f"folds at blended interior edges over {over} ({measured} edge-frames)\n" + "\n".join(lines)


def bend_angles(man: bpy.types.Object) -> dict[str, float]:
    """Degrees each joint's child turns relative to its parent at this frame (twist and swing)."""
    dg = bpy.context.evaluated_depsgraph_get()
    bound = bind.cached_bind(man, dg)
    posed = bound.posed(dg)
    q = autofactor.relative_rotations(posed.deform, bound.bones.virtual_parents())
    labels = list(bound.bones.names)
    return {node: float(np.degrees(2.0 * np.arccos(min(1.0, abs(q[labels.index(node), 0]))))) for node in
            JOINTS.values()}


def markdown(samples: dict[str, list]) -> str:
    lines = [
        "| joint (largest bend of the walk) | method | bulge | shrink | local volume |",
        "|---|---|---|---|---|",
    ]
    for name, rows in samples.items():
        frame, angle, at_bend = max(rows, key=lambda r: r[1])
        for i, (method, label) in enumerate(METHODS.items()):
            m = at_bend[method]
            joint = f"{name} ({angle:.0f}° at frame {frame:g})" if i == 0 else ""
            cells = [f"{100 * m.bulge:.1f}%", f"{100 * m.shrink:.1f}%", f"{100 * m.volume_change:+.1f}%"]
            lines.append("| " + " | ".join([joint, label, *cells]).replace("-", "−") + " |")
    return "\n".join(lines)


def comparison(samples: dict[str, list], min_bend: float = 30.0) -> str:
    """How often, where the joint bends at least ``min_bend`` degrees, Auto (round) is at least as good
    as Auto 0.1 on bulge and on shrink (0.01 percentage points of slack)."""
    out = []
    for name, rows in samples.items():
        bent = [r[2] for r in rows if r[1] >= min_bend]
        if not bent:
            out.append(f"{name}: never bends {min_bend:g}° in the walk")
            continue
        new, old = [m["AUTO"] for m in bent], [m["AUTO_JOINT"] for m in bent]
        both = sum(n.bulge <= o.bulge + 1e-4 and n.shrink <= o.shrink + 1e-4 for n, o in zip(new, old))
        out.append(f"{name}: bent {min_bend:g}° or more at {len(bent)} sampled frames; Auto (round) at least "
                   f"as good as Auto 0.1 on both bulge and shrink at {both}")
    return "\n".join(out)


def main() -> None:
    bpy.ops.wm.read_factory_settings(use_empty=True)
    hybrid_skin.register()
    try:
        samples, tally = walk()
        print(markdown(samples))
        print()
        print(comparison(samples))
        print()
        print(tally.steps_line())
        print(tally.table("the walk"))
    finally:
        hybrid_skin.unregister()


if __name__ == "__main__":
    main()
