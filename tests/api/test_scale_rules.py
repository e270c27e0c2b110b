"""Blender's Preserve Volume rules for scaled bones, at their edges (``mat4_to_dquat``).

* A bone counts as rigid while its matrix is orthonormal within 1e-5 (``is_orthonormal_m3`` of Blender
  4.x/5.x), so a scale of 1 + 3e-6 is ignored by Blender's DQS; far from the origin that is visible.
* The rotation of a scaled bone comes from ``orthogonalize_m4(·, 1)``, whose first case is skipped when the
  unit Y axis and the *unscaled* X axis have a dot product ≥ 1: a stretched, sheared child bone (inherited
  non-uniform scale, turned 45°) takes its second case.
Both compare with Blender's own deformation at the tolerance of ``test_oracle`` and fail with either rule
done the other way.
"""

from __future__ import annotations

import bpy
import pytest

from tests.api.test_oracle import assert_matches_blender
from tests.support.scenes import make_chain_armature, make_cylinder, pose_bone, skin_to_chain


@pytest.fixture
def api(addon):
    return addon.api


def test_scale_within_blenders_orthonormal_tolerance_is_ignored(api):
    arm = make_chain_armature("Rig", [1.0, 1.0])
    cyl = make_cylinder("Cylinder")
    skin_to_chain(cyl, arm)
    arm.location = (-300.0, 0.0, 0.0)  # the mesh sits 300 units from the armature's origin
    s = 1.0 + 3e-6
    pose_bone(arm, "Bone1", (70, 0, 20), scale=(s, s, s))
    assert_matches_blender(api, cyl)


def test_sheared_stretched_child_uses_blenders_second_orthogonalisation_case(api):
    arm = make_chain_armature("Rig", [1.0, 1.0, 1.0])
    cyl = make_cylinder("Cylinder", height=3.0, rings=36)
    skin_to_chain(cyl, arm, blend=0.6)
    pose_bone(arm, "Bone0", (0, 10, 0), scale=(3.0, 0.4, 1.0))
    pose_bone(arm, "Bone1", (0, 0, -45))
    pose_bone(arm, "Bone2", (30, 0, 0))
    bpy.context.view_layer.update()
    assert_matches_blender(api, cyl)
