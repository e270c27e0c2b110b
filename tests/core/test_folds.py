"""The fold measure (``hybrid_skin.core.folds``) against closed forms on a hinge of two triangles.

The hinge: the edge from (0, 0, 0) to (1, 0, 0), triangle A's third corner at (0.5, 1, 0) and triangle B's
at (0.5, -1, 0), flat at rest. Turning A's corner about the x axis by ``a`` and B's by ``b`` (each lifting
out of the plane the same way) turns the normals apart by ``a + b``: the fold is ``a + b``. A corner moved to
the mid-point of its chord between two angles lies at their mean angle, so a factor of 1/2 on one corner
folds by exactly half its two ends' difference.
"""

from __future__ import annotations

import numpy as np
import pytest

from hybrid_skin.core import folds

TRIANGLES = np.array([[0, 1, 2], [1, 0, 3]])


def hinge(a_deg: float = 0.0, b_deg: float = 0.0) -> np.ndarray:
    a, b = np.radians(a_deg), np.radians(b_deg)
    return np.array(
        [[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [0.5, np.cos(a), np.sin(a)], [0.5, -np.cos(b), np.sin(b)]]
    )


def test_the_interior_edge_and_its_two_triangles() -> None:
    edges, faces = folds.interior_edges(TRIANGLES)
    np.testing.assert_array_equal(edges, [[0, 1]])
    np.testing.assert_array_equal(np.sort(faces, axis=1), [[0, 1]])


@pytest.mark.parametrize(("a", "b"), [(30.0, 0.0), (0.0, 75.0), (40.0, 50.0), (100.0, 60.0)])
def test_a_hinge_folds_by_its_two_turns(a: float, b: float) -> None:
    setup = folds.prepare_folds(hinge(), TRIANGLES)
    np.testing.assert_allclose(setup.rest_angles, [0.0], atol=1e-12)
    np.testing.assert_allclose(folds.fold_angles(setup, hinge(a, b)), [a + b], rtol=1e-12)
    # a rigid motion of the whole hinge changes nothing
    turn = np.array([[0.0, -1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 1.0]])
    np.testing.assert_allclose(folds.fold_angles(setup, hinge(a, b) @ turn.T + 3.0), [a + b], rtol=1e-12)


def test_the_fold_is_measured_from_the_rest_angle() -> None:
    setup = folds.prepare_folds(hinge(20.0, 10.0), TRIANGLES)
    np.testing.assert_allclose(folds.fold_angles(setup, hinge(20.0, 10.0)), [0.0], atol=1e-12)
    np.testing.assert_allclose(folds.fold_angles(setup, hinge(50.0, 10.0)), [30.0], rtol=1e-12)
    np.testing.assert_allclose(folds.fold_angles(setup, hinge(0.0, 0.0)), [30.0], rtol=1e-12)


def test_a_field_that_takes_each_corner_from_another_end_folds_beyond_both() -> None:
    """LBS turns A's corner by a, DQS turns B's by b; the field takes A's corner from LBS and B's from DQS
    and folds a + b, min(a, b) beyond the larger end. The uniform hybrid at the edge's factor (1/2) folds
    (a + b) / 2, so beyond it too the field adds min(a, b) when a = b."""
    a, b = 40.0, 25.0
    setup = folds.prepare_folds(hinge(), TRIANGLES)
    lbs, dqs = hinge(a, 0.0), hinge(0.0, b)
    field = np.array([0.5, 0.5, 0.0, 1.0])
    np.testing.assert_allclose(folds.folds_beyond(setup, lbs, dqs, field), [min(a, b)], rtol=1e-12)
    np.testing.assert_allclose(
        folds.folds_beyond(setup, lbs, dqs, field, uniform=True), [min(a, b)], rtol=1e-12
    )
    # the larger end's fold computed once for the pose: the same numbers
    ends = folds.larger_end_folds(setup, lbs, dqs)
    np.testing.assert_allclose(ends, [max(a, b)], rtol=1e-12)
    np.testing.assert_array_equal(
        folds.folds_beyond(setup, lbs, dqs, field, ends=ends), folds.folds_beyond(setup, lbs, dqs, field)
    )
    same = 30.0
    lbs, dqs = hinge(same, 0.0), hinge(0.0, same)
    np.testing.assert_allclose(folds.folds_beyond(setup, lbs, dqs, field, uniform=True), [same], rtol=1e-12)


def test_a_blend_of_one_corner_folds_half_way_and_never_beyond() -> None:
    """DQS turns B's corner by 2b, LBS leaves the hinge flat: factor 1/2 on that corner puts it on the chord's
    mid-point, at angle b: the fold is b, below DQS's 2b (beyond both: -b)."""
    b = 35.0
    setup = folds.prepare_folds(hinge(), TRIANGLES)
    lbs, dqs = hinge(), hinge(0.0, 2.0 * b)
    for factors in (0.5, np.array([0.0, 0.0, 0.0, 0.5])):
        hybrid = lbs + np.reshape(factors, (-1, 1)) * (dqs - lbs)
        np.testing.assert_allclose(folds.fold_angles(setup, hybrid), [b], rtol=1e-12)
        np.testing.assert_allclose(folds.folds_beyond(setup, lbs, dqs, factors), [-b], rtol=1e-12)


def test_only_blended_edges_are_measured_and_summaries_add_up() -> None:
    setup = folds.prepare_folds(hinge(), TRIANGLES, blended=np.array([True, False, True, True]))
    assert setup.edges.shape == (0, 2)
    setup = folds.prepare_folds(hinge(), TRIANGLES)
    lbs, dqs = hinge(40.0, 0.0), hinge(0.0, 25.0)
    beyond = folds.folds_beyond(setup, lbs, dqs, np.array([0.5, 0.5, 0.0, 1.0]))
    one = folds.summarize(setup, beyond, pose=3)
    assert (one.over_limit, one.over_30, one.worst_pose, one.worst_edge, one.measured) == (1, 0, 3, (0, 1), 1)
    np.testing.assert_allclose(one.worst, 25.0)
    both = one + folds.summarize(setup, beyond - 20.0, pose=4)
    assert (both.over_limit, both.measured, both.worst_pose) == (1, 2, 3)


def test_a_degenerate_triangle_counts_as_flat() -> None:
    setup = folds.prepare_folds(hinge(), TRIANGLES)
    squashed = hinge()
    squashed[2] = [0.5, 0.0, 0.0]  # A's corner on the edge: no normal
    np.testing.assert_allclose(folds.fold_angles(setup, squashed), [0.0])


def test_a_rigid_motion_of_a_folded_hinge_keeps_its_fold() -> None:
    """One triangle turned by 135° about the shared edge, then the whole pair moved by a random rotation and
    a shift: the fold is still 135°."""
    setup = folds.prepare_folds(hinge(), TRIANGLES)
    rotation = np.linalg.qr(np.random.default_rng(3).normal(size=(3, 3)))[0]
    moved = hinge(0.0, 135.0) @ rotation.T + [2.0, -1.0, 0.5]
    np.testing.assert_allclose(folds.fold_angles(setup, moved), [135.0], atol=1e-9)


def test_interior_edges_leave_out_open_and_non_manifold_edges() -> None:
    """Only edges with exactly two triangles: a fan of three triangles around one edge has none there."""
    triangles = np.array([[0, 1, 2], [1, 0, 3], [0, 1, 4], [2, 1, 5]])
    edges, faces = folds.interior_edges(triangles)
    np.testing.assert_array_equal(edges, [[1, 2]])
    assert sorted(faces[0]) == [0, 3]
