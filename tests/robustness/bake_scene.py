"""Scenes and checks shared by the bake / Remove / operator robustness scenarios (trustA's files).

Each scenario builds its scene here (a two-bone cylinder with a keyed bend, the user's own shape keys
where asked), takes a :func:`tests.support.snapshot.snapshot` before, acts, and compares after.
"""

from __future__ import annotations

import math
from pathlib import Path

import bpy
import numpy as np
import pytest

from tests.support import snapshot as snap
from tests.support.scenes import make_chain_armature, make_cylinder, skin_to_chain

FRAMES = (1, 12)


def rig(name: str = "Cylinder", *, keys: bool = False, add: bool = True, display: str = "EVALUATED") -> tuple:
    """``(armature, mesh)``: a keyed bend+twist over frames 1–12; ``keys`` adds the user's Basis and
    'Bulge'; ``add`` turns Hybrid Skin on (factor 0.6) with ``display``. The mesh is active."""
    arm = make_chain_armature("Rig", [1.0, 1.0])
    obj = make_cylinder(name, rings=8, segments=12)
    skin_to_chain(obj, arm)
    pb = arm.pose.bones["Bone1"]
    pb.rotation_mode = "XYZ"
    for frame, angles in ((1, (0, 0, 0)), (6, (100, 0, 90)), (12, (40, 0, 170))):
        pb.rotation_euler = [math.radians(a) for a in angles]
        pb.keyframe_insert("rotation_euler", frame=frame)
    if keys:
        obj.shape_key_add(name="Basis")
        bulge = obj.shape_key_add(name="Bulge")
        co = np.array([v.co[:] for v in obj.data.vertices])
        co[:, :2] *= 1.0 + 0.3 * np.exp(-((co[:, 2] - 0.5) ** 2) / 0.05)[:, None]
        bulge.data.foreach_set("co", co.ravel())
        bulge.value = 0.4
    bpy.context.scene.frame_start, bpy.context.scene.frame_end = FRAMES
    bpy.context.scene.frame_set(1)
    activate(obj)
    if add:
        assert bpy.ops.hybrid_skin.add(display=display) == {"FINISHED"}
        obj.hybrid_skin.deform_factor = 0.6
    return arm, obj


def unsaved_file() -> None:
    """A new, never saved file (an earlier test may have left a saved one open: ``//`` would resolve)."""
    bpy.ops.wm.read_homefile(use_empty=True)
    assert not bpy.data.filepath


def activate(obj: bpy.types.Object) -> None:
    bpy.context.view_layer.objects.active = obj
    for other in bpy.context.view_layer.objects:
        other.select_set(other == obj)


def refused(operator, message: str, **kwargs) -> str:
    """Run ``operator`` and assert it refused with one sentence containing ``message`` (an ERROR report,
    which bpy.ops raises as RuntimeError), never a Python traceback. Returns the report."""
    with pytest.raises(RuntimeError) as error:
        operator(**kwargs)
    text = str(error.value)
    assert message in text, text
    assert "Traceback" not in text and "File \"" not in text, text
    assert text.count("\n") <= 1, text  # one report, one line
    return text


def snapshot(folders=()) -> dict:
    return snap.snapshot(folders=[Path(f) for f in folders])


def same_as(before: dict, folders=(), what: str = "") -> None:
    """Assert the scene (and files under ``folders``) equals the snapshot ``before``."""
    snap.assert_same(before, snapshot(folders), what)


def evaluated(obj: bpy.types.Object) -> np.ndarray:
    dg = bpy.context.evaluated_depsgraph_get()
    me = obj.evaluated_get(dg).data
    out = np.empty(len(me.vertices) * 3, np.float32)
    me.vertices.foreach_get("co", out)
    return out.reshape(-1, 3)


def diagonal(points: np.ndarray) -> float:
    return float(np.linalg.norm(points.max(0) - points.min(0)))
