"""The README quality table's Rigify row: a human arm bent at the elbow and twisted through its FK controls.

A Rigify human rig is generated, a closed tube (shoulder to wrist, along the arm's bones) is parented with
automatic weights (DEF bones are B-bones, so the palette holds their segment joints), the elbow is bent
about its hinge and the forearm twisted about its own axis with ``forearm_fk.L``, and the add-on's
``analyze`` measures LBS, DQS, f = 0.5, the best global factor and every Auto profile. Prints a markdown
table and, with ``--picture``, renders LBS | Auto | DQS with ``render_comparison`` (and, with
``--picture-joint``, the same with Auto 0.1, profile "JOINT").

Run from the repository root:  .venv/bin/python tests/media/quality_rigify.py [--bend 110] [--twist 150]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

import bpy  # noqa: E402
import numpy as np  # noqa: E402
from mathutils import Matrix  # noqa: E402

import hybrid_skin  # noqa: E402
from hybrid_skin.analyze import operators as analyze_ops  # noqa: E402
from hybrid_skin.core.analysis import Analysis  # noqa: E402
from hybrid_skin.draw import ensure_gpu_context  # noqa: E402

ARM = ("DEF-upper_arm.L", "DEF-upper_arm.L.001", "DEF-forearm.L", "DEF-forearm.L.001")
#: Joints whose child belongs to these bones make up the elbow (the B-bones on both sides of it bend).
ELBOW = ("DEF-upper_arm.L.001", "DEF-forearm.L")
#: Joints whose child belongs to these bones make up the forearm (the elbow joint included).
FOREARM = ("DEF-forearm.L", "DEF-forearm.L.001")
#: The elbow's joint between two bones (upper arm → forearm): its shrink is the table's. The B-bone segment
#: joints around it are one segment long, so their "convex side" is mostly limb far from both segments.
ELBOW_HEAD = "DEF-forearm.L"
RADIUS = 0.045
SEGMENTS = 32
RING_SPACING = 0.25 * RADIUS


def rigify_human() -> bpy.types.Object:
    bpy.ops.preferences.addon_enable(module="rigify")
    bpy.ops.object.armature_human_metarig_add()
    metarig = bpy.context.object
    bpy.ops.pose.rigify_generate()
    metarig.hide_set(True)
    return next(o for o in bpy.data.objects if o.type == "ARMATURE" and o is not metarig)


def _ring_frames(points: np.ndarray, step: float) -> tuple[np.ndarray, np.ndarray]:
    """Centres and tangents of rings every ``step`` along a polyline; tangents turn smoothly over
    3 radii around each corner so neighbouring rings never cross."""
    seg = np.diff(points, axis=0)
    seg_len = np.linalg.norm(seg, axis=1)
    direction = seg / seg_len[:, None]
    ends = np.concatenate([[0.0], np.cumsum(seg_len)])
    s = np.linspace(0.0, ends[-1], int(round(ends[-1] / step)) + 1)
    k = np.clip(np.searchsorted(ends, s, side="right") - 1, 0, len(seg) - 1)
    centres = points[k] + (s - ends[k])[:, None] * direction[k]
    tangent = direction[k].copy()
    for corner in range(1, len(points) - 1):
        t = np.clip((s - ends[corner]) / (3.0 * RADIUS) + 0.5, 0.0, 1.0)
        near = np.abs(s - ends[corner]) < 1.5 * RADIUS
        smooth = t * t * (3.0 - 2.0 * t)
        mix = (1.0 - smooth)[:, None] * direction[corner - 1] + smooth[:, None] * direction[corner]
        tangent[near] = mix[near]
    return centres, tangent / np.linalg.norm(tangent, axis=1, keepdims=True)


def arm_tube(rig: bpy.types.Object) -> bpy.types.Object:
    """A closed tube of radius :data:`RADIUS` following the arm's DEF bones from shoulder to wrist."""
    bones = rig.data.bones
    points = np.array([bones[ARM[0]].head_local] + [bones[name].tail_local for name in ARM[1::2]])
    points = (np.array(rig.matrix_world) @ np.c_[points, np.ones(len(points))].T).T[:, :3]
    centres, tangent = _ring_frames(points, RING_SPACING)
    side = np.cross(points[1] - points[0], points[2] - points[1])
    u = np.cross(tangent, side / np.linalg.norm(side))
    u /= np.linalg.norm(u, axis=1, keepdims=True)
    v = np.cross(tangent, u)
    phi = 2.0 * np.pi * np.arange(SEGMENTS) / SEGMENTS
    rings = centres[:, None] + RADIUS * (
        np.cos(phi)[:, None] * u[:, None] + np.sin(phi)[:, None] * v[:, None]
    )
    verts = np.concatenate([rings.reshape(-1, 3), centres[[0, -1]]])
    n_rings = len(centres)
    ring = np.arange(n_rings - 1)[:, None] * SEGMENTS
    a, b = np.arange(SEGMENTS), (np.arange(SEGMENTS) + 1) % SEGMENTS
    quads = np.stack([ring + a, ring + b, ring + SEGMENTS + b, ring + SEGMENTS + a], -1).reshape(-1, 4)
    start, end = len(verts) - 2, len(verts) - 1
    last = (n_rings - 1) * SEGMENTS
    caps = [(start, int(j), int(i)) for i, j in zip(a, b, strict=True)]
    caps += [(end, last + int(i), last + int(j)) for i, j in zip(a, b, strict=True)]
    mesh = bpy.data.meshes.new("Arm")
    mesh.from_pydata(verts.tolist(), [], quads.tolist() + caps)
    mesh.update()
    obj = bpy.data.objects.new("Arm", mesh)
    bpy.context.scene.collection.objects.link(obj)
    bpy.ops.object.select_all(action="DESELECT")
    obj.select_set(True)
    rig.select_set(True)
    bpy.context.view_layer.objects.active = rig
    bpy.ops.object.parent_set(type="ARMATURE_AUTO")
    return obj


def pose_arm(
    rig: bpy.types.Object, bend_deg: float, twist_deg: float, twist_bone: str = "forearm_fk.L"
) -> None:
    """FK: the elbow bends about ``forearm_fk.L``'s X (its hinge; positive flexes the arm forward), and
    ``twist_bone`` turns about its own Y axis: ``forearm_fk.L`` twists the forearm against the upper arm,
    ``hand_fk.L`` turns the hand against the forearm (pronation)."""
    pose = rig.pose.bones
    pose["upper_arm_parent.L"]["IK_FK"] = 1.0
    for name in {"forearm_fk.L", twist_bone}:
        pose[name].rotation_mode = "QUATERNION"
    bend = Matrix.Rotation(np.radians(bend_deg), 4, "X")
    twist = Matrix.Rotation(np.radians(twist_deg), 4, "Y")
    if twist_bone == "forearm_fk.L":
        pose[twist_bone].rotation_quaternion = (bend @ twist).to_quaternion()
    else:
        pose["forearm_fk.L"].rotation_quaternion = bend.to_quaternion()
        pose[twist_bone].rotation_quaternion = twist.to_quaternion()
    bpy.context.view_layer.update()


def arm_rows(result: Analysis) -> dict[str, tuple[str, float | None, float, float, float]]:
    """Per method: (factor, volume change, worst elbow bulge, elbow joint shrink, worst forearm collapse)."""
    rows = {}
    for name, (factor, measure) in result.comparison.rows.items():
        elbow = [j.bulge for j in measure.joints if result.bones[j.joint] in ELBOW]
        shrink = [j.shrink for j in measure.joints if result.labels[j.joint] == ELBOW_HEAD]
        forearm = [j.collapse for j in measure.joints if result.bones[j.joint] in FOREARM]
        shown = "auto" if factor is None else f"{factor:.2f}"
        rows[name] = (
            shown, measure.volume_change, max(elbow, default=0.0), max(shrink, default=0.0),
            max(forearm, default=0.0),
        )
    return rows


def _percent(value: float | None, sign: str = "") -> str:
    return "—" if value is None else f"{100 * value:{sign}.2f}%".replace("-", "−")


def markdown(bend: float, twist: float, rows: dict, twisted: str = "forearm") -> str:
    """One line per method, the quality tables' layout."""
    lines = [
        "| pose | method | f | volume | bulge (elbow) | shrink (elbow joint) | collapse (forearm) |",
        "|---|---|---|---|---|---|---|",
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
        measures = [_percent(row[k], sign) for k, sign in ((1, "+"), (2, ""), (3, ""), (4, ""))]
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
        rig = rigify_human()
        arm = arm_tube(rig)
        pose_arm(rig, args.bend, args.twist, args.twist_bone)
        bpy.context.view_layer.objects.active = arm
        bpy.ops.hybrid_skin.add()
        arm.hybrid_skin.deform_factor = 0.5
        assert bpy.ops.hybrid_skin.analyze() == {"FINISHED"}
        result = analyze_ops._state().analyses[arm.session_uid]
        if args.details:
            print(result.table())
        print(markdown(args.bend, args.twist, arm_rows(result), args.twist_bone.split("_")[0]))
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
