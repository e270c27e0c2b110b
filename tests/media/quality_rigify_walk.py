"""The fold table's third character: a Rigify human with automatic weights, walking.

Rigify's human metarig, generated; tubes along its spine, arms and legs (``tests/support/rigify_arm.py``'s
``body_tubes``: one mesh, automatic weights, the DEF bones' B-bones); a walk cycle keyed on the FK controls
(the legs and arms in FK): thighs swinging ±30° against each other, knees bending up to 60° in the swing,
arms swinging ±25° with elbows bent 20–45°, the chest turning ±8° against the hips. Every frame of the cycle
is measured as ``quality_cesium.py`` does (``core.folds``: the change of the dihedral angle across each
interior edge whose two vertices blend).

Run from the repository root:  timeout -s KILL 900 .venv-5.2.3/bin/python tests/media/quality_rigify_walk.py
(Blender 4.5's bpy module can hang at exit after Rigify: the timeout ends it.)
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

import bpy  # noqa: E402
import numpy as np  # noqa: E402
from mathutils import Euler  # noqa: E402

import hybrid_skin  # noqa: E402
from hybrid_skin import bridge  # noqa: E402
from tests.media.quality_cesium import FoldTally  # noqa: E402
from tests.support.rigify_arm import body_tubes, rigify_enabled, rigify_human  # noqa: E402

FRAMES = 24


def walk(rig: bpy.types.Object) -> None:
    """Key one walk cycle, frames 1 … FRAMES, on the FK controls."""
    pose = rig.pose.bones
    for side in ("L", "R"):
        pose[f"thigh_parent.{side}"]["IK_FK"] = 1.0
        pose[f"upper_arm_parent.{side}"]["IK_FK"] = 1.0
    for frame in range(1, FRAMES + 1):
        t = 2.0 * np.pi * (frame - 1) / FRAMES
        for side, phase in (("L", 0.0), ("R", np.pi)):
            swing = np.sin(t + phase)
            knee = 60.0 * max(0.0, np.sin(t + phase - 0.5 * np.pi)) + 5.0
            keyed = {
                f"thigh_fk.{side}": (np.radians(30.0 * swing), 0.0, 0.0),
                f"shin_fk.{side}": (np.radians(knee), 0.0, 0.0),
                f"upper_arm_fk.{side}": (np.radians(-25.0 * swing), 0.0, 0.0),
                f"forearm_fk.{side}": (np.radians(20.0 + 25.0 * max(0.0, swing)), 0.0, 0.0),
            }
            for name, angles in keyed.items():
                bone = pose[name]
                bone.rotation_mode = "XYZ"
                bone.rotation_euler = Euler(angles)
                bone.keyframe_insert("rotation_euler", frame=frame)
        chest = pose["chest"]
        chest.rotation_mode = "XYZ"
        chest.rotation_euler = Euler((0.0, np.radians(8.0 * np.sin(t)), 0.0))
        chest.keyframe_insert("rotation_euler", frame=frame)


def main() -> None:
    bpy.ops.wm.read_factory_settings(use_empty=True)
    hybrid_skin.register()
    enabled = rigify_enabled()
    next(enabled)
    try:
        rig = rigify_human()
        body = body_tubes(rig)
        walk(rig)
        bpy.context.view_layer.objects.active = body
        assert bpy.ops.hybrid_skin.add() == {"FINISHED"}
        triangles = bridge.triangle_vertices(body.data)
        tally = FoldTally()
        for frame in range(1, FRAMES + 1):
            bpy.context.scene.frame_set(frame)
            tally.add(body, triangles, f"walk {frame}")
        print(f"{len(body.data.vertices)} vertices, {FRAMES} frames")
        print(tally.steps_line())
        print(tally.table("the walk cycle"))
    finally:
        hybrid_skin.unregister()
        next(enabled, None)


if __name__ == "__main__":
    main()
