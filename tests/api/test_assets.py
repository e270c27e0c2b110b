"""Real third-party rigs: the installed add-on equals Blender's deformation on every skinned part."""

from __future__ import annotations

import bpy
import numpy as np
import pytest

from tests.support.assets import clip_action, import_gltf, play
from tests.support.scenes import bbox_diagonal, native_positions

TOL = 1e-5


def compare_all(api, meshes, label: str) -> float:
    worst = 0.0
    for obj in meshes:
        lbs = native_positions(obj, 0.0)
        diag = bbox_diagonal(lbs)
        per_vertex = np.round(np.random.default_rng(len(obj.data.vertices)).random(len(lbs)), 3).astype(
            np.float32
        )
        for f in (0.0, 1.0, 0.5, per_vertex):
            err = np.abs(api.deformed_positions(obj, f) - native_positions(obj, f)).max() / diag
            assert err <= TOL, f"{label} {obj.name} f={'map' if np.ndim(f) else f}: {err:.2e} × diagonal"
            worst = max(worst, err)
    return worst


@pytest.mark.parametrize("action", ["Dance", "Punch", "Running", "Wave", "Death", "ThumbsUp"])
def test_robot_expressive_every_skinned_part(addon, assets, action):
    arm, skinned = import_gltf(assets / "RobotExpressive.glb")
    assert len(skinned) == 4 and sum(len(o.data.vertices) for o in skinned) > 1000
    act = clip_action(action)
    start, end = act.frame_range
    moved = 0.0
    for frame in np.linspace(start, end, 4)[1:]:
        play(arm, act, float(frame))
        compare_all(addon.api, skinned, f"{action}@{frame:.1f}")
        rest = np.array([v.co[:] for v in skinned[0].data.vertices])
        moved = max(moved, float(np.abs(addon.api.deformed_positions(skinned[0], 0.5) - rest).max()))
    assert moved > 1e-3, "the action did not move the mesh: the comparison would be vacuous"


def test_cesium_man_normalises_partial_weights(addon, assets):
    arm, skinned = import_gltf(assets / "CesiumMan.gltf")
    (man,) = skinned
    sums = np.zeros(len(man.data.vertices))
    for v in man.data.vertices:
        sums[v.index] = sum(g.weight for g in v.groups)
    assert (sums < 0.99).sum() >= 200  # real data with weights summing below one
    act = next(a for a in bpy.data.actions)
    for frame in (5.0, 17.5, 31.0):
        play(arm, act, frame)
        compare_all(addon.api, [man], f"CesiumMan@{frame}")
