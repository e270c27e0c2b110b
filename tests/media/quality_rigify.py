"""The README quality table's Rigify row: a human arm bent at the elbow and twisted through its FK controls.

A Rigify human rig is generated, a closed tube (shoulder to wrist, along the arm's bones) is parented with
automatic weights (DEF bones are B-bones, so the palette holds their segment joints), the elbow is bent
about its hinge and the forearm twisted about its own axis with ``forearm_fk.L``, and the add-on's
``analyze`` measures LBS, DQS, f = 0.5, the best global factor and every Auto profile. Prints a markdown
table, then each Auto profile's largest factor step across an edge whose vertices blend, and, with
``--picture``, renders LBS | Auto | DQS with ``render_comparison`` (and, with ``--picture-joint``, the same
with Auto 0.1, profile "JOINT"). The arm is ``tests/support/rigify_arm.py``'s.

Run from the repository root:  .venv/bin/python tests/media/quality_rigify.py [--bend 110] [--twist 150]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

import bpy  # noqa: E402

import hybrid_skin  # noqa: E402
from hybrid_skin import bridge  # noqa: E402
from hybrid_skin.analyze import operators as analyze_ops  # noqa: E402
from hybrid_skin.core import metrics  # noqa: E402
from hybrid_skin.core.analysis import Analysis  # noqa: E402
from hybrid_skin.core.autofactor import PROFILES  # noqa: E402
from hybrid_skin.draw import ensure_gpu_context  # noqa: E402
from hybrid_skin.rig import bind  # noqa: E402
from tests.support.rigify_arm import (  # noqa: E402
    ELBOW,
    ELBOW_HEAD,
    FOREARM,
    arm_tube,
    pose_arm,
    rigify_human,
)


def arm_rows(result: Analysis, bent: Analysis) -> dict[str, tuple]:
    """Per method: (factor, volume change, worst elbow bulge, elbow joint shrink, worst forearm collapse,
    the twist's own collapse, the edges' folds beyond both LBS and DQS). The twist's own collapse is the
    largest, over the forearm's joints, of the collapse with the twist minus the collapse of the same
    bend without it (``bent``): the candy wrapper apart from the bend's flattening."""
    rows = {}
    for name, (factor, measure) in result.comparison.rows.items():
        elbow = [j.bulge for j in measure.joints if result.bones[j.joint] in ELBOW]
        shrink = [j.shrink for j in measure.joints if result.labels[j.joint] == ELBOW_HEAD]
        forearm = [j.collapse for j in measure.joints if result.bones[j.joint] in FOREARM]
        alone = {j.joint: j.collapse for j in bent.comparison.rows[name][1].joints}
        twist = [
            j.collapse - alone.get(j.joint, 0.0) for j in measure.joints if result.bones[j.joint] in FOREARM
        ]
        shown = "auto" if factor is None else f"{factor:.2f}"
        rows[name] = (
            shown, measure.volume_change, max(elbow, default=0.0), max(shrink, default=0.0),
            max(forearm, default=0.0), max(max(twist, default=0.0), 0.0), result.fold_rows[name],
        )
    return rows


def factor_steps(obj: bpy.types.Object) -> str:
    """Each Auto profile's largest factor step across an edge whose two vertices blend."""
    dg = bpy.context.evaluated_depsgraph_get()
    posed = bind.cached_bind(obj, dg).posed(dg)
    triangles = bridge.triangle_vertices(obj.data)
    blended = metrics.blended_vertices(posed.bind.binding.weights)
    steps = {p: metrics.largest_factor_step(posed.auto_factors(p), triangles, blended) for p in PROFILES}
    return ", ".join(f"{p} {s:.3f}" for p, s in steps.items())


def _percent(value: float | None, sign: str = "") -> str:
    return "—" if value is None else f"{100 * value:{sign}.2f}%".replace("-", "−")


def markdown(bend: float, twist: float, rows: dict, twisted: str = "forearm") -> str:
    """One line per method, the quality tables' layout."""
    lines = [
        "| pose | method | f | volume | bulge (elbow) | shrink (elbow joint) | collapse (forearm) "
        "| the twist's collapse (forearm) | folds > 10° beyond both (worst) |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    labels = {
        "LBS": "LBS", "DQS": "DQS", "current": "f = 0.5", "best": "best single f",
        "AUTO_JOINT": "Auto 0.1 (per joint)", "AUTO": "**Auto (round)**",
        "AUTO_KEEP_VOLUME": "Auto, keep volume",
    }
    for i, (name, label) in enumerate(labels.items()):
        row = rows[name]
        pose = f"Rigify arm: elbow {bend:g}° + {twisted} twist {twist:g}°" if i == 0 else ""
        factor = "per vertex" if row[0] == "auto" else row[0]
        measures = [_percent(row[k], sign) for k, sign in ((1, "+"), (2, ""), (3, ""), (4, ""), (5, ""))]
        folds = row[6]
        measures.append("—" if name in ("LBS", "DQS") else f"{folds.over_limit} ({folds.worst:.0f}°)")
        lines.append("| " + " | ".join([pose, label, factor, *measures]) + " |")
    return "\n".join(lines)


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bend", type=float, default=110.0, help="elbow bend, degrees")
    parser.add_argument("--twist", type=float, default=150.0, help="forearm twist, degrees")
    parser.add_argument(
        "--twist-bone",
        default="forearm_fk.L",
        choices=("forearm_fk.L", "hand_fk.L"),
        help="FK control to twist",
    )
    parser.add_argument("--picture", type=Path, help="also render LBS | Auto | DQS here (a .png path)")
    parser.add_argument("--picture-joint", type=Path, help="also render LBS | Auto 0.1 | DQS here")
    parser.add_argument("--details", action="store_true", help="also print every measured joint")
    args = parser.parse_args(argv)

    bpy.ops.wm.read_factory_settings(use_empty=True)
    hybrid_skin.register()
    try:
        bpy.ops.preferences.addon_enable(module="rigify")
        rig = rigify_human()
        arm = arm_tube(rig)
        pose_arm(rig, args.bend, 0.0, args.twist_bone)
        bpy.context.view_layer.objects.active = arm
        bpy.ops.hybrid_skin.add()
        arm.hybrid_skin.deform_factor = 0.5
        assert bpy.ops.hybrid_skin.analyze() == {"FINISHED"}
        bent = analyze_ops._state().analyses[arm.session_uid]
        pose_arm(rig, args.bend, args.twist, args.twist_bone)
        bpy.context.view_layer.update()
        assert bpy.ops.hybrid_skin.analyze() == {"FINISHED"}
        result = analyze_ops._state().analyses[arm.session_uid]
        if args.details:
            print(result.table())
        print(markdown(args.bend, args.twist, arm_rows(result, bent), args.twist_bone.split("_")[0]))
        print()
        print(f"largest factor step across an edge: {factor_steps(arm)}")
        for picture, profile in ((args.picture, "ROUND"), (args.picture_joint, "JOINT")):
            if picture:
                ensure_gpu_context()
                arm.hybrid_skin.factor_mode = "AUTO"
                arm.hybrid_skin.auto_profile = profile
                bpy.ops.hybrid_skin.render_comparison(filepath=str(picture.resolve()), width=360, height=360)
    finally:
        hybrid_skin.unregister()


if __name__ == "__main__":
    main(sys.argv[1:])
