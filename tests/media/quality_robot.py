"""The fold table's second real character: RobotExpressive through every one of its animations.

``assets/RobotExpressive.glb`` (licence beside it) is imported as a user would and Hybrid Skin added to each
of its skinned meshes (the hands and forearms; the rest of the robot is rigid parts, which fold nothing).
Every clip is sampled every other frame and each method's folds measured as ``quality_cesium.py`` does
(``core.folds``: the change of the dihedral angle across each interior edge whose two vertices blend), then
added over meshes, clips and frames. The worst edge is named by mesh, clip and frame.

Run from the repository root:  .venv/bin/python tests/media/quality_robot.py
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
from tests.media.quality_cesium import surface  # noqa: E402
from tests.support.assets import armature_actions, give_hybrid_skin, import_gltf, play  # noqa: E402

FRAME_STEP = 2.0


def measure() -> tuple[dict[str, list], list[str], dict[str, tuple[float, str]]]:
    """Per method, one ``surface`` result per mesh and sampled frame; the labels of the pose numbers the
    summaries carry ("mesh, clip frame"); per Auto profile, the largest factor step and where."""
    arm, meshes = import_gltf(ROOT / "assets" / "RobotExpressive.glb")
    give_hybrid_skin(meshes)
    triangles = {m.name: bridge.triangle_vertices(m.data) for m in meshes}
    summaries: dict[str, list] = {}
    labels: list[str] = []
    steps: dict[str, tuple[float, str]] = {}
    for action in armature_actions():
        start, end = action.frame_range
        for frame in np.arange(start, end + 1e-6, FRAME_STEP):
            play(arm, action, float(frame))
            for mesh in meshes:
                labels.append(f"{mesh.name}, {action.name} {frame:g}")
                frame_steps, found = surface(mesh, triangles[mesh.name], len(labels) - 1)
                for profile, step in frame_steps.items():
                    if step > steps.get(profile, (-1.0, ""))[0]:
                        steps[profile] = (step, labels[-1])
                for method, result in found.items():
                    summaries.setdefault(method, []).append(result)
    return summaries, labels, steps


def fold_table(summaries: dict[str, list], labels: list[str]) -> str:
    """As ``quality_cesium.fold_table``, the worst edge-pose named by its label."""
    lines = [
        "| method | 99th percentile | largest | > 10° beyond both | > 30° beyond both | worst beyond both "
        "(mesh, clip frame, edge) | > 10° beyond the uniform hybrid too |",
        "|---|---|---|---|---|---|---|",
    ]
    measured = 0
    for method, results in summaries.items():
        angles = np.concatenate([a for a, _b, _h in results])
        beyond = sum((b for _a, b, _h in results[1:]), results[0][1])
        hybrid = sum((h for _a, _b, h in results[1:]), results[0][2])
        measured = beyond.measured
        cells = [f"{np.percentile(angles, 99):.1f}°", f"{angles.max():.1f}°"]
        if method in ("LBS", "DQS"):
            cells += ["—"] * 4
        else:
            where = f"{beyond.worst:.0f}° ({labels[beyond.worst_pose]}, {beyond.worst_edge})"
            cells += [str(beyond.over_limit), str(beyond.over_30), where, str(hybrid.over_limit)]
        lines.append("| " + " | ".join([method, *cells]) + " |")
    return f"folds at blended interior edges over every clip ({measured} edge-frames)\n" + "\n".join(lines)


def main() -> None:
    bpy.ops.wm.read_factory_settings(use_empty=True)
    hybrid_skin.register()
    try:
        summaries, labels, steps = measure()
        clips = len({label.split(", ")[1].rsplit(" ", 1)[0] for label in labels})
        print(f"{clips} clips, {len(labels)} mesh-frames")
        shown = ", ".join(f"{p} {s:.3f} ({where})" for p, (s, where) in steps.items())
        print(f"largest factor step across an edge: {shown}")
        print(fold_table(summaries, labels))
    finally:
        hybrid_skin.unregister()


if __name__ == "__main__":
    main()
