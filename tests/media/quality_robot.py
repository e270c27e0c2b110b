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
from tests.media.quality_cesium import FoldTally  # noqa: E402
from tests.support.assets import armature_actions, give_hybrid_skin, import_gltf, play  # noqa: E402

FRAME_STEP = 2.0


def measure() -> FoldTally:
    """Every mesh at every sampled frame of every clip, each pose named "mesh, clip frame"."""
    arm, meshes = import_gltf(ROOT / "assets" / "RobotExpressive.glb")
    give_hybrid_skin(meshes)
    triangles = {m.name: bridge.triangle_vertices(m.data) for m in meshes}
    tally = FoldTally()
    for action in armature_actions():
        start, end = action.frame_range
        for frame in np.arange(start, end + 1e-6, FRAME_STEP):
            play(arm, action, float(frame))
            for mesh in meshes:
                tally.add(mesh, triangles[mesh.name], f"{mesh.name}, {action.name} {frame:g}")
    return tally


def main() -> None:
    bpy.ops.wm.read_factory_settings(use_empty=True)
    hybrid_skin.register()
    try:
        tally = measure()
        clips = len({label.split(", ")[1].rsplit(" ", 1)[0] for label in tally.labels})
        print(f"{clips} clips, {len(tally.labels)} mesh-frames")
        print(tally.steps_line())
        print(tally.table("every clip"))
    finally:
        hybrid_skin.unregister()


if __name__ == "__main__":
    main()
