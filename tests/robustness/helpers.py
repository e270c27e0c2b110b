"""Shared scene and addon access for the robustness scenarios (imported as ``tests.robustness.helpers``)."""

from __future__ import annotations

import importlib
from types import SimpleNamespace

import bpy
import numpy as np

from tests.support.scenes import make_chain_armature, make_cylinder, pose_bone, skin_to_chain

#: Largest position error, as a fraction of the bounding-box diagonal (at least 1), that still counts as
#: Blender's number (float32 evaluation order differs between Blender's C++ and our numpy).
TOL = 2e-6


def modules(addon) -> SimpleNamespace:
    """The installed add-on's modules the scenarios reach into (API, bind, viewport, display, handlers)."""
    names = (
        "api", "rig.bind", "skin.viewport", "rig.setup", "rig.auto_follow", "rig.handlers", "runtime",
        "errors",
    )
    package = addon.__name__
    return SimpleNamespace(**{n.split(".")[-1]: importlib.import_module(f"{package}.{n}") for n in names})


def three_bone_cylinder(name: str = "Cylinder", rig: str = "Rig"):
    """A 3-bone chain along +Z with a 3-unit cylinder skinned to it, selected and active."""
    arm = make_chain_armature(rig, [1.0, 1.0, 1.0])
    cyl = make_cylinder(name, height=3.0, rings=36)
    skin_to_chain(cyl, arm)
    pose_bone(arm, "Bone2", (30, 10, 0))
    activate(cyl)
    return arm, cyl


def activate(obj: bpy.types.Object) -> None:
    for other in bpy.context.view_layer.objects:
        other.select_set(False)
    bpy.context.view_layer.objects.active = obj
    obj.select_set(True)


def assert_close(ours: np.ndarray, reference: np.ndarray, what: str = "") -> None:
    assert np.isfinite(reference).all(), f"{what}: Blender's own result is not finite"
    assert np.isfinite(ours).all(), f"{what}: {np.count_nonzero(~np.isfinite(ours))} non-finite values"
    # Relative to the result's size, but never below 1 (a mesh collapsed by a bone scaled to 0 has none).
    diag = max(1.0, float(np.linalg.norm(reference.max(0) - reference.min(0))))
    err = float(np.abs(ours - reference).max()) / diag
    assert err <= TOL, f"{what}: {err:.2e} × diagonal off Blender's own result"


def gpu_positions(hs, obj) -> np.ndarray:
    """What the GPU display draws for ``obj`` at this frame: its skin built and posed as the draw
    callback does it (``skin_for`` + ``update_pose``), read back from the shader."""
    depsgraph = bpy.context.evaluated_depsgraph_get()
    shown = hs.viewport.skin_for(obj, depsgraph)
    hs.viewport.update_pose(shown.skin, obj, depsgraph)
    return shown.skin.readback()
