"""Skinning artifact metrics against closed forms on the canonical limb.

Closed forms used (limb radius r = 0.5, two bones of length 2, blend zone 1.0 wide, joint ring at w = 0.5):

* LBS of a twist by 180° maps a ring with child weight w to radius |1 - 2w| r (the blended matrix is
  ``diag(1 - 2w, 1, 1 - 2w)``); the hybrid's joint ring has radius f r (LBS part 0, DQS part rigid).
* A bend by θ about the joint: DQS rotates every vertex about the joint, keeping its distance to the joint;
  LBS puts the convex joint-ring vertex at ``r cos(θ/2)`` from the joint, the hybrid at
  ``r ((1 - f) cos(θ/2) + f)``.
"""

from __future__ import annotations

import numpy as np
import pytest

from hybrid_skin.core.metrics import (
    MeasureSetup,
    PoseMeasure,
    compare_factors,
    cross_section_radii,
    is_closed,
    measure_pose,
    prepare_measures,
    segment_distance,
    signed_volume,
    volume_change,
)
from hybrid_skin.core.primitives import CanonicalPose, Limb, canonical_pose, make_limb, rotation_matrix
from hybrid_skin.core.skinning import bone_palette, skin

# Skinning runs in float32: positions carry ~1e-7 relative error, volumes and ratios ~1e-6.
F32_ATOL = 2e-5


def _setup(limb: Limb, triangles: np.ndarray | None = None) -> MeasureSetup:
    chain = limb.chain
    tri = limb.mesh.triangles if triangles is None else triangles
    return prepare_measures(
        limb.mesh.positions, tri, chain.rest, chain.parents, chain.lengths, limb.bone_indices, limb.weights
    )


def _skin(limb: Limb, deform: np.ndarray, factor: float | np.ndarray) -> np.ndarray:
    palette = bone_palette(deform, limb.chain.rest)
    return skin(limb.mesh.positions, limb.binding(), palette, factor)[0].astype(np.float64)


def _measure(cp: CanonicalPose, factor: float) -> PoseMeasure:
    return measure_pose(_setup(cp.limb), _skin(cp.limb, cp.deform, factor), cp.deform)


def test_signed_volume_of_a_tetrahedron_and_orientation() -> None:
    p = np.array([[0.0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1]])
    tri = np.array([[0, 2, 1], [0, 1, 3], [0, 3, 2], [1, 2, 3]])  # outward, counter-clockwise
    assert is_closed(tri)
    np.testing.assert_allclose(signed_volume(p, tri), 1.0 / 6.0, rtol=1e-14)
    np.testing.assert_allclose(signed_volume(p, tri[:, ::-1]), -1.0 / 6.0, rtol=1e-14)
    np.testing.assert_allclose(signed_volume(p, tri, apex=np.array([3.0, -2.0, 7.0])), 1.0 / 6.0, rtol=1e-13)
    np.testing.assert_allclose(volume_change(p, 2.0 * p, tri), 7.0, rtol=1e-13)  # scale 2 → volume × 8
    assert not is_closed(tri[:3])


def test_segment_distance_closed_form() -> None:
    heads = np.array([[0.0, 0, 0], [0, 2, 0]])
    tails = np.array([[0.0, 2, 0], [0, 2, 2]])
    points = np.array([[3.0, 1, 0], [0, -4, 0], [0, 3, 1], [1, 2, 1], [0, 1, 0]])
    np.testing.assert_allclose(segment_distance(points, heads, tails), [3, 4, 1, 1, 0], atol=1e-15)


def test_cross_section_radius_of_rings() -> None:
    phi = 2 * np.pi * np.arange(16) / 16
    ring = np.column_stack([0.7 * np.cos(phi), np.full(16, 3.0), 0.7 * np.sin(phi)])
    points = np.concatenate([ring + [5.0, 0, 0], np.tile([1.0, 2, 3], (16, 1))])
    ids = np.repeat([1, 0], 16)
    np.testing.assert_allclose(cross_section_radii(points, ids, 3), [0.0, 0.7, 0.0], atol=1e-14)


def test_rigid_motion_changes_nothing() -> None:
    limb = make_limb(2)
    rigid = np.eye(4)
    rigid[:3, :3] = rotation_matrix((1.0, 2.0, -0.5), 1.1)
    rigid[:3, 3] = (0.3, -1.0, 2.0)
    deform = np.stack([rigid, rigid])
    setup = _setup(limb)
    for factor in (0.0, 0.5, 1.0):
        m = measure_pose(setup, _skin(limb, deform, factor), deform)
        j = m.joint(1)
        values = [m.volume_change, j.volume_change, j.bulge, j.shrink, j.contour_change, j.collapse]
        np.testing.assert_allclose(values, 0.0, atol=F32_ATOL)


def test_lbs_twist_180_closed_forms() -> None:
    cp = canonical_pose("twist_180")
    m = _measure(cp, 0.0)
    j = m.joint(1)
    # The blend zone (width 1 of a length-4 limb) keeps mean((1 - 2w)^2) = 1/3 of its volume.
    np.testing.assert_allclose(m.volume_change, -(2.0 / 3.0) * 1.0 / 4.0, atol=F32_ATOL)
    # The measured region is the rings with 0 < w < 1, i.e. w in [0.1, 0.9]: mean((1 - 2w)^2) = 0.8^2 / 3.
    np.testing.assert_allclose(j.volume_change, 0.64 / 3.0 - 1.0, atol=F32_ATOL)
    np.testing.assert_allclose([j.collapse, j.shrink, j.bulge], [1.0, 1.0, 0.0], atol=F32_ATOL)


@pytest.mark.parametrize("factor", [0.0, 0.25, 0.5, 0.9, 1.0])
def test_hybrid_twist_180_collapse_is_one_minus_factor(factor: float) -> None:
    j = _measure(canonical_pose("twist_180"), factor).joint(1)
    np.testing.assert_allclose(j.collapse, 1.0 - factor, atol=F32_ATOL)
    np.testing.assert_allclose(j.bulge, 0.0, atol=F32_ATOL)  # no blend pushes a twisted ring outwards


@pytest.mark.parametrize("degrees", [90.0, 120.0])
@pytest.mark.parametrize("factor", [0.0, 0.5, 1.0])
def test_bend_shrink_closed_form(degrees: float, factor: float) -> None:
    j = _measure(canonical_pose(f"bend_{degrees:.0f}"), factor).joint(1)
    expected = (1.0 - factor) * (1.0 - np.cos(np.radians(degrees) / 2.0))
    np.testing.assert_allclose(j.shrink, expected, atol=F32_ATOL)


def test_dqs_bend_bulge_matches_an_independent_rotation_model() -> None:
    # DQS of a two-bone bend rotates each vertex about the joint's X axis by the blended angle
    # alpha(w) = 2 atan2(w sin(θ/2), 1 - w + w cos(θ/2)); the bulge is its largest distance to the bent
    # skeleton (two half-lines from the joint for the blend zone) relative to the rest radius.
    theta = np.radians(120.0)
    cp = canonical_pose("bend_120")
    limb = cp.limb
    w = limb.weights[:, 1]
    region = (w > 1e-3) & (w < 1 - 1e-3)
    rel = limb.mesh.positions[region] - [0.0, 2.0, 0.0]
    alpha = 2.0 * np.arctan2(w[region] * np.sin(theta / 2), 1 - w[region] + w[region] * np.cos(theta / 2))
    c, s = np.cos(alpha), np.sin(alpha)
    y, z = c * rel[:, 1] - s * rel[:, 2], s * rel[:, 1] + c * rel[:, 2]
    np.testing.assert_allclose(
        _skin(limb, cp.deform, 1.0)[region, 1:] - [2.0, 0.0], np.column_stack([y, z]), atol=1e-5
    )
    to_joint = np.linalg.norm(np.column_stack([rel[:, 0], y, z]), axis=1)
    along_parent = -y  # the parent bone runs from the joint towards -Y, the child towards (cos θ, sin θ)
    along_child = y * np.cos(theta) + z * np.sin(theta)
    dist_parent = np.where(along_parent > 0, np.hypot(rel[:, 0], z), to_joint)
    dist_child = np.where(
        along_child > 0, np.hypot(rel[:, 0], -y * np.sin(theta) + z * np.cos(theta)), to_joint
    )
    expected = np.minimum(dist_parent, dist_child).max() / 0.5 - 1.0
    j = _measure(cp, 1.0).joint(1)
    np.testing.assert_allclose(j.bulge, expected, atol=F32_ATOL)
    assert j.bulge > 0.1, "DQS must balloon the convex side of a 120° bend"


def test_bulge_grows_and_shrink_falls_with_the_factor() -> None:
    cp = canonical_pose("bend_120")
    setup = _setup(cp.limb)
    factors = np.linspace(0.0, 1.0, 11)
    measures = [measure_pose(setup, _skin(cp.limb, cp.deform, float(f)), cp.deform).joint(1) for f in factors]
    assert np.all(np.diff([m.bulge for m in measures]) > 0)
    assert np.all(np.diff([m.shrink for m in measures]) < 0)
    assert np.all(np.diff([m.contour_change for m in measures]) > 0)
    assert measures[0].contour_change < 0 < measures[-1].contour_change  # LBS deflates, DQS balloons


def test_open_mesh_gets_the_same_joint_measures() -> None:
    cp = canonical_pose("bend_90")
    limb = cp.limb
    tube = limb.mesh.triangles[: -2 * 32]  # drop both cap fans (32 segments each)
    closed_setup, open_setup = _setup(limb), _setup(limb, tube)
    assert closed_setup.closed and not open_setup.closed
    positions = _skin(limb, cp.deform, 0.3)
    closed, opened = (
        measure_pose(closed_setup, positions, cp.deform),
        measure_pose(open_setup, positions, cp.deform),
    )
    assert opened.volume_change is None
    np.testing.assert_allclose(
        list(vars(opened.joint(1)).values()), list(vars(closed.joint(1)).values()), rtol=1e-12
    )


def test_compare_factors_rows_and_best_factor() -> None:
    for name, low, high in (("bend_90", 0.50, 0.60), ("twist_180", 1.0, 1.0)):
        cp = canonical_pose(name)
        result = compare_factors(
            _setup(cp.limb),
            cp.deform,
            lambda f, cp=cp: _skin(cp.limb, cp.deform, f),
            current=0.5,
            auto=np.full(cp.limb.weights.shape[0], 0.5, np.float32),
        )
        assert list(result.rows) == ["LBS", "DQS", "current", "best", "AUTO"]
        best, best_measure = result.rows["best"]
        assert low <= best <= high, f"{name}: best global factor {best}"
        assert best_measure.score <= min(m.score for _, m in result.rows.values()) + 1e-12
        np.testing.assert_allclose(
            result.rows["AUTO"][1].joint(1).bulge, result.rows["current"][1].joint(1).bulge
        )
        assert len(result.table().splitlines()) == 1 + len(result.rows)

