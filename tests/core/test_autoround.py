"""Auto deform factor, part 2: the round profiles ("ROUND", the default, and "KEEP_VOLUME").

Closed forms on the canonical limb (two bones along +Y, radius r = 0.5, joint at y = 2, linear weights over
a zone one diameter wide): every vertex of the zone blends the parent (0) and the child (1) only, so its
joint J is the child's head (0, 2, 0) whatever its weights, its rest distance to its bones is r, and
``z^2 = |x - J|^2 / r^2 - 1 = ((y - 2) / r)^2``. For a bend by theta (no twist) S = P theta^2 and T = 0::

    f = (theta^2 exp(-k z^2) + eps^2) / (theta^2 + eps^2),   k = width (theta / 90°)^swing_exponent

and a pure twist (S = 0) gives exactly 1. The profile's depth fades in with the vertex's swinging weight:
for child weight ``w`` that weight is ``a = w (1 - w) / (1 - 3 w (1 - w))`` and the profile term above is
multiplied by ``pi = a^3 / (a^3 + kappa^3)`` (kappa = 0.05; ``pi > 0.99`` from ``w = 0.17`` on, so only the
zone's ends change). The acceptance tests hold the issue's targets on the README's limbs (which the fit in
tools/fit_auto.py never saw) and pin the quality table's numbers.
"""

from __future__ import annotations

import numpy as np
import pytest

from hybrid_skin.core import metrics
from hybrid_skin.core.autofactor import (
    ANGLE_EPSILON,
    PRESENCE_WEIGHT,
    ROUND_SHAPES,
    AutoPose,
    auto_factors,
    bone_factor_data,
    round_factors,
    vertex_factors,
    vertex_geometry,
)
from hybrid_skin.core.primitives import (
    CanonicalPose,
    bend,
    bone_chain,
    canonical_pose,
    chain_deform_matrices,
    make_limb,
    rotation_matrix,
    twist,
)
from hybrid_skin.core.skinning import bone_palette, skin

RNG = np.random.default_rng(11)
PROFILES = ("ROUND", "KEEP_VOLUME")


def _factors(cp: CanonicalPose, profile: str = "ROUND") -> np.ndarray:
    limb, chain = cp.limb, cp.limb.chain
    return auto_factors(
        cp.deform, chain.rest, chain.parents, limb.bone_indices, limb.weights, profile=profile,
        positions=limb.mesh.positions, bone_lengths=chain.lengths,
    )


def _blended(limb) -> np.ndarray:
    return (limb.weights > 0.0).sum(axis=1) == 2


def _presence(w: np.ndarray) -> np.ndarray:
    """pi of a vertex whose weight ``w`` swings against the rest of its weight (two groups of bones)."""
    spread = w * (1.0 - w)
    a = np.divide(spread, 1.0 - 3.0 * spread, out=np.zeros_like(spread), where=spread > 0.0)
    return a**3 / (a**3 + PRESENCE_WEIGHT**3)


def test_vertex_geometry_closed_forms() -> None:
    limb = make_limb(2)
    chain = limb.chain
    mesh = limb.mesh
    geometry = vertex_geometry(mesh.positions, limb.bone_indices, limb.weights, chain.rest, chain.lengths)
    assert geometry.dtype == np.float32 and geometry.shape == (len(limb.mesh.positions), 4)
    np.testing.assert_array_equal(geometry[:, :3], limb.mesh.positions.astype(np.float32))
    side = limb.mesh.ring >= 0
    np.testing.assert_allclose(geometry[side, 3], 0.25, rtol=1e-6)  # r^2 on the cylinder
    np.testing.assert_allclose(geometry[~side, 3], 0.0, atol=1e-12)  # cap centres lie on the bones
    # A bone's segment ends at its tail: past it the distance is to the tail point; a zero weight is no bone.
    far = vertex_geometry(
        np.array([[0.0, 5.0, 0.0], [3.0, 1.0, 0.0]]), np.array([[0, 1], [1, 0]]),
        np.array([[0.0, 1.0], [1.0, 0.0]]), chain.rest, chain.lengths,
    )
    np.testing.assert_allclose(far[:, 3], [1.0, 3.0**2 + 1.0], rtol=1e-6)


@pytest.mark.parametrize("degrees", [30.0, 90.0, 150.0])
@pytest.mark.parametrize("profile", PROFILES)
def test_a_bend_gives_the_closed_form(degrees: float, profile: str) -> None:
    limb = make_limb(2)
    theta = np.radians(degrees)
    deform = chain_deform_matrices(limb.chain, np.stack([np.eye(3), bend(theta, (1.0, 0.0, 0.3))]))
    f = _factors(CanonicalPose("bend", limb, deform, (1,), ()), profile)
    shape = ROUND_SHAPES[profile]
    z2 = ((limb.mesh.positions[:, 1] - 2.0) / 0.5) ** 2
    k = shape.width * (theta / (np.pi / 2)) ** shape.swing_exponent
    depth = theta**2 / (theta**2 + ANGLE_EPSILON**2)
    expected = 1.0 - _presence(limb.weights[:, 1]) * depth * (1.0 - np.exp(-k * z2))
    blended = _blended(limb)
    np.testing.assert_allclose(f[blended], expected[blended], rtol=2e-5, atol=1e-6)
    np.testing.assert_array_equal(f[~blended], 1.0)  # one bone: LBS and DQS agree, DQS it is
    assert np.ptp(f[blended]) > 0.2  # really a profile across the zone (Keep Volume at 150°: 0.23)


@pytest.mark.parametrize("profile", PROFILES)
def test_a_pure_twist_and_the_rest_pose_give_dqs_exactly(profile: str) -> None:
    for name in ("twist_180",):
        np.testing.assert_array_equal(_factors(canonical_pose(name), profile), 1.0)
    limb = make_limb(2)
    rest = CanonicalPose("rest", limb, chain_deform_matrices(limb.chain, np.stack([np.eye(3)] * 2)), (), ())
    np.testing.assert_array_equal(_factors(rest, profile), 1.0)


def test_twist_pulls_a_bent_joint_towards_dqs() -> None:
    limb = make_limb(2)
    blended = _blended(limb)
    low = []
    for degrees in (0.0, 30.0, 90.0):
        basis = np.stack([np.eye(3), bend(np.radians(100.0)) @ twist(np.radians(degrees))])
        f = _factors(CanonicalPose("both", limb, chain_deform_matrices(limb.chain, basis), (1,), ()))
        low.append(f[blended].min())
    assert low[0] < low[1] < low[2] <= 1.0


def test_factors_ignore_roll_and_where_the_whole_rig_stands() -> None:
    basis = np.stack([np.eye(3), bend(np.radians(70.0), (1.0, 0.0, 0.5)) @ twist(0.4), twist(-1.0)])
    plain = make_limb(3)
    rolled = make_limb(3, roll=0.9)

    def factors(limb, moved=None):
        moved = np.eye(4) if moved is None else moved
        chain = limb.chain
        rest = moved @ chain.rest
        deform = moved @ chain_deform_matrices(chain, basis) @ np.linalg.inv(moved)
        points = limb.mesh.positions @ moved[:3, :3].T + moved[:3, 3]
        return auto_factors(deform, rest, chain.parents, limb.bone_indices, limb.weights,
                            positions=points, bone_lengths=chain.lengths)

    g = np.eye(4)
    g[:3, :3] = rotation_matrix((0.3, -1.0, 2.0), 2.2)
    g[:3, 3] = (4.0, -1.0, 0.5)
    f = factors(plain)
    np.testing.assert_allclose(factors(rolled), f, atol=2e-6)
    np.testing.assert_allclose(factors(plain, g), f, atol=2e-5)


def _pair_loop(data, idx, w, geometry, shape, presence=PRESENCE_WEIGHT) -> np.ndarray:
    """The round factor written out as plainly as possible, in float64: pair by pair, vertex by vertex."""
    d = data.astype(np.float64)
    out = np.ones(len(w))
    for v in range(len(w)):
        t = s = aa = pairs = 0.0
        ah = np.zeros(3)
        for i in range(w.shape[1]):
            for j in range(i + 1, w.shape[1]):
                ww = float(w[v, i]) * float(w[v, j])
                diff = d[idx[v, i]] - d[idx[v, j]]
                t += ww * diff[0] ** 2
                s += ww * diff[1:4] @ diff[1:4]
                aa += ww * diff[4] ** 2
                ah += ww * diff[4] * diff[5:8]
                pairs += ww
        joint = ah / aa if aa > 0 else np.zeros(3)
        x, r2 = geometry[v, :3].astype(np.float64), float(geometry[v, 3])
        along = max((x - joint) @ (x - joint) / r2 - 1.0, 0.0) if aa > 0 and r2 > 0 else 0.0
        swing = s / pairs / (np.pi / 2) ** 2 if pairs > 0 else 0.0
        k = shape.width * max(swing, 1e-12) ** (0.5 * shape.swing_exponent)
        # The presence, from the swing vectors' weighted mean and deviations, influence by influence.
        ww = w[v].astype(np.float64)
        sigma = d[idx[v], 1:4]
        dev = sigma - ww @ sigma / ww.sum() if ww.sum() > 0 else sigma
        sq = np.einsum("kc,kc->k", dev, dev)
        m2, m4 = ww @ sq, ww @ sq**2
        a = m2 * m2 / (ww.sum() * m4) if m4 > 0 else 0.0
        fade = a**3 / (a**3 + presence**3) if presence > 0 else 1.0
        den = shape.twist_weight * t + s + ANGLE_EPSILON**2 * pairs
        out[v] = 1.0 - fade * s / den * (1.0 - np.exp(-k * along)) if den > 0 else 1.0
    return out


def test_the_vectorised_chunks_equal_the_pair_loop_on_hard_influences() -> None:
    """Eight influences, near-rigid vertices (one weight ~1), two-bone vertices, an undeformed one, random
    bone data with large, nearly equal values: the two-pass moments keep the pair loop's precision."""
    n, k, b = 300, 8, 24
    weights = RNG.random((n, k)).astype(np.float32) ** 3
    weights[: n // 4, 1:] *= np.float32(1e-4)
    weights[: n // 8] = np.roll(weights[: n // 8], 1, axis=1)  # the tiny weight first: the origin
    weights[n // 4 : n // 2, 2:] = 0.0
    weights[n // 4 : n // 4 + 10, 0] *= np.float32(1e-6)
    weights /= weights.sum(axis=1, keepdims=True)
    weights[7] = 0.0
    idx = RNG.integers(0, b, (n, k)).astype(np.int32)
    data = RNG.normal(size=(b, 8)).astype(np.float32)
    data[:, 4] = np.abs(data[:, 4]) + np.arange(b)  # A grows down a chain
    data[: b // 2, :4] = np.float32(3.0) + np.float32(1e-3) * data[: b // 2, :4]
    geometry = np.column_stack([RNG.normal(size=(n, 3)), RNG.uniform(0.1, 1.0, n)]).astype(np.float32)
    for profile in PROFILES:
        shape = ROUND_SHAPES[profile]
        got = round_factors(data, idx, weights, geometry, shape)
        np.testing.assert_allclose(got, _pair_loop(data, idx, weights, geometry, shape), rtol=1e-5, atol=1e-6)
        assert got[7] == 1.0 and np.ptp(got) > 0.5
    padded = round_factors(
        data, np.column_stack([idx, np.zeros((n, 1), np.int32)]),
        np.column_stack([weights, np.zeros((n, 1), np.float32)]), geometry,
    )
    np.testing.assert_allclose(padded, round_factors(data, idx, weights, geometry), rtol=1e-6, atol=1e-7)


def _bent_closed_form(theta2: float, z2: float, w: float, shape=ROUND_SHAPES["ROUND"]) -> float:
    """f of a pure bend: mean squared swing ``theta2`` between the vertex's bones, ``z2`` from its joint,
    weight ``w`` on the bones that swing against the rest."""
    k = shape.width * (theta2 / (np.pi / 2) ** 2) ** (0.5 * shape.swing_exponent)
    depth = theta2 / (theta2 + ANGLE_EPSILON**2)
    return 1.0 - float(_presence(np.array([w]))[0]) * depth * (1.0 - np.exp(-k * z2))


def test_the_joint_is_where_the_swing_happens_along_a_chain() -> None:
    """A vertex blending a bone, its child and its grandchild when only the grandchild's joint (head at
    y = 2) bends by 90°: its joint is that head, not the chain's middle. Its mean squared swing counts the
    unbent pair too: S = (0.3 + 0.3) 0.4 theta^2 over P = 0.3 0.3 + 2 (0.3 0.4)."""
    chain = bone_chain(3, 3.0)
    deform = chain_deform_matrices(chain, np.stack([np.eye(3), np.eye(3), bend(np.radians(90.0))]))
    data = bone_factor_data(deform, chain.rest, chain.parents)
    x = np.array([[0.5, 2.2, 0.0]])
    geometry = np.column_stack([x, [[0.25]]]).astype(np.float32)
    three = round_factors(data, np.array([[0, 1, 2]]), np.array([[0.3, 0.3, 0.4]], np.float32), geometry)
    two = round_factors(data, np.array([[1, 2]]), np.array([[0.6, 0.4]], np.float32), geometry)
    theta2, z2 = (np.pi / 2) ** 2, (0.2 / 0.5) ** 2
    np.testing.assert_allclose(two[0], _bent_closed_form(theta2, z2, 0.4), rtol=1e-5)
    np.testing.assert_allclose(three[0], _bent_closed_form(theta2 * 0.24 / 0.33, z2, 0.4), rtol=1e-5)


def test_a_swinging_weight_that_ends_leaves_no_step() -> None:
    """The presence, in closed form: a vertex 1.67 radii from its joint blends two bones that do not swing
    against each other (B-bone segments, weights 0.4 : 0.6 of ``1 - w``) and, with weight ``w``, a bone
    swung by 149° against them (the Rigify arm's elbow). Its two groups give
    ``a = w (1 - w) / (1 - 3 w (1 - w))``, ``S = w (1 - w) Θ^2``, ``P = w (1 - w) + 0.24 (1 - w)^2`` and
    ``f = 1 - pi S (1 - F) / (S + eps^2 P)``. Where ``w`` ends (``w`` = 0 on the next vertex, ``f = 1``), a
    weight up to 0.04 (the arm's is 0.038) steps the factor by at most 1/2; without the presence the same
    vertex steps by 0.94."""
    theta = np.radians(149.0)
    head = np.array([0.0, 2.0, 0.0])
    swung = np.concatenate([[0.0, theta, 0.0, 0.0, theta], theta * head])
    data = np.stack([np.zeros(8), swung, swung]).astype(np.float32)  # (tau, sigma, A, H) per bone
    geometry = np.array([[0.5, 2.0 + 0.5 * np.sqrt(1.67**2 - 1.0), 0.0, 0.25]], np.float32)
    z2 = 1.67**2 - 1.0
    shape = ROUND_SHAPES["ROUND"]
    w = np.array([0.0, 0.005, 0.01, 0.02, 0.03, 0.038, 0.05, 0.08, 0.12, 0.2, 0.3])
    weights = np.column_stack([w, 0.4 * (1.0 - w), 0.6 * (1.0 - w)]).astype(np.float32)
    idx = np.tile(np.arange(3), (len(w), 1))
    got = round_factors(data, idx, weights, np.repeat(geometry, len(w), axis=0), shape)
    pair = w * (1.0 - w)
    s, p = pair * theta**2, pair + 0.24 * (1.0 - w) ** 2
    swing = np.where(s > 0.0, s / p, 1.0) / (np.pi / 2) ** 2
    k = shape.width * swing ** (0.5 * shape.swing_exponent)
    bare = s / (s + ANGLE_EPSILON**2 * p) * (1.0 - np.exp(-k * z2))
    np.testing.assert_allclose(got, 1.0 - _presence(w) * bare, rtol=2e-5, atol=1e-6)
    assert got[0] == 1.0  # no swinging weight: the segments' f, LBS and DQS agree there
    assert np.all(1.0 - got[w <= 0.04] <= 0.5)  # the step to the vertex where w has ended
    assert np.all(np.diff(got[w <= 0.12]) <= 0.0)  # f falls as the swinging weight grows ...
    np.testing.assert_allclose(got[w >= 0.2], 1.0 - bare[w >= 0.2], atol=0.02)  # ... to the whole profile
    without = round_factors(data, idx[5:6], weights[5:6], geometry, shape, presence=0.0)
    np.testing.assert_allclose(without, 1.0 - bare[5], rtol=2e-5)
    assert 1.0 - without[0] > 0.9  # the step the presence removes (w = 0.038, the arm's own)


def test_vertex_factors_needs_the_rest_data_for_a_round_profile() -> None:
    cp = canonical_pose("bend_90")
    data = bone_factor_data(cp.deform, cp.limb.chain.rest, cp.limb.chain.parents)
    with pytest.raises(ValueError, match="rest data"):
        vertex_factors(AutoPose("ROUND", data), cp.limb.bone_indices, cp.limb.weights)
    with pytest.raises(ValueError, match="unknown Auto profile"):
        _factors(cp, "SQUARE")


# -- acceptance on the README's limbs (never in the fit's sweep) ------------------------------------------


def _measures(name: str) -> tuple[CanonicalPose, dict, callable, metrics.MeasureSetup]:
    cp = canonical_pose(name)
    limb, chain = cp.limb, cp.limb.chain
    setup = metrics.prepare_measures(
        limb.mesh.positions, limb.mesh.triangles, chain.rest, chain.parents, chain.lengths,
        limb.bone_indices, limb.weights,
    )
    palette, binding = bone_palette(cp.deform, chain.rest), limb.binding()

    def skin_with(factor):
        return skin(limb.mesh.positions, binding, palette, factor)[0].astype(np.float64)

    fields = {p: _factors(cp, p) for p in ("JOINT", *PROFILES)}
    return cp, fields, skin_with, setup


def _summary(cp: CanonicalPose, m: metrics.PoseMeasure) -> np.ndarray:
    """(|volume|, bulge and shrink at the bent joints, collapse at the twisted ones), worst of each."""
    bent = [m.joint(j) for j in cp.bent_joints] or [None]
    twisted = [m.joint(j).collapse for j in cp.twisted_joints] or [0.0]
    return np.array([
        abs(m.volume_change),
        max(j.bulge if j else 0.0 for j in bent),
        max(j.shrink if j else 0.0 for j in bent),
        max(twisted),
    ])


#: The README table's numbers (tests/media/quality_limbs.py prints them): (volume, bulge, shrink, collapse).
PINNED = {
    ("bend_90", "ROUND"): (-1.36, 4.39, 0.36, 0.0),
    ("bend_120", "ROUND"): (-1.86, 4.53, 2.12, 0.0),
    ("twist_180", "ROUND"): (-0.68, 0.0, 0.0, 0.0),
    ("bend_120_twist_170", "ROUND"): (-1.65, 4.53, 2.12, 0.0),
    ("bend_90", "KEEP_VOLUME"): (-0.68, 8.34, 0.0, 0.0),
    ("bend_120", "KEEP_VOLUME"): (-0.94, 9.11, 0.0, 0.0),
    ("twist_180", "KEEP_VOLUME"): (-0.68, 0.0, 0.0, 0.0),
    ("bend_120_twist_170", "KEEP_VOLUME"): (-1.03, 9.11, 0.0, 0.0),
}
#: Where Round is not at least as good as Auto 0.1: the bulge of a 120° bend, 4.53 % against 4.36 % (while
#: the convex side thins by 2.12 % against 22.5 %). Index 1 of :func:`_summary`.
BULGE_ABOVE_JOINT = {"bend_120": 0.0018, "bend_120_twist_170": 0.0018}
#: Le & Hodgins' optimized centres of rotation on these limbs (issue 29's measurement with these metrics):
#: KEEP_VOLUME's volume should lie within 0.3 percentage points (bend 90°: -0.68 %, the closest).
COR_VOLUME = {"bend_90": -0.0041, "bend_120": -0.0102, "twist_180": -0.0068, "bend_120_twist_170": -0.0109}


@pytest.mark.parametrize("name", ["bend_90", "bend_120", "twist_180", "bend_120_twist_170"])
def test_round_meets_the_targets_and_beats_the_joint_profile(name: str) -> None:
    """Issue 29's targets: bulge <= 5.5 %, shrink <= 5 %, collapse <= 0.5 %, |volume| <= 2.5 %; at least
    as good as Auto 0.1 ("JOINT") on every measure (the one exception pinned); no single factor at least as
    good on every measure; no factor step above 0.5 across an edge of the blend zones. KEEP_VOLUME: shrink
    <= 1 %, volume within 0.3 percentage points of CoR's."""
    cp, fields, skin_with, setup = _measures(name)
    measured = {p: metrics.measure_pose(setup, skin_with(f), cp.deform) for p, f in fields.items()}
    ours, old = _summary(cp, measured["ROUND"]), _summary(cp, measured["JOINT"])
    assert np.all(ours <= [0.025, 0.055, 0.05, 0.005]), ours
    slack = np.array([0.0, BULGE_ABOVE_JOINT.get(name, 0.0), 0.0, 0.0])
    assert np.all(ours <= old + slack + 1e-5), (ours, old)
    if name in BULGE_ABOVE_JOINT:
        assert ours[1] > old[1] + BULGE_ABOVE_JOINT[name] - 0.001  # the exception is real, and this size
    joint_flat = [measured["JOINT"].joint(j).collapse for j in cp.bent_joints]
    round_flat = [measured["ROUND"].joint(j).collapse for j in cp.bent_joints]
    assert all(r <= j for r, j in zip(round_flat, joint_flat))  # the bend's own flattening too
    keep = _summary(cp, measured["KEEP_VOLUME"])
    assert keep[2] <= 0.01
    cor_gap = abs(measured["KEEP_VOLUME"].volume_change - COR_VOLUME[name])
    assert cor_gap <= 0.003, cor_gap
    for profile in PROFILES:
        assert metrics.dominating_factors(setup, cp.deform, skin_with, fields[profile]) == []
        step = metrics.largest_factor_step(fields[profile], cp.limb.mesh.triangles, _blended(cp.limb))
        assert step <= 0.5
        volume, bulge, shrink, collapse = PINNED[name, profile]
        got = _summary(cp, measured[profile]) * 100.0
        np.testing.assert_allclose(got, [abs(volume), bulge, shrink, collapse], atol=0.006)


def test_a_single_factor_dominates_the_joint_profile_on_a_pure_twist() -> None:
    """Why the round profiles give exactly 1 to a pure twist: "JOINT"'s 0.9986 leaves a 0.14 % collapse
    that DQS (f = 1) does not have, with everything else equal."""
    cp, fields, skin_with, setup = _measures("twist_180")
    assert metrics.dominating_factors(setup, cp.deform, skin_with, fields["JOINT"]) == [1.0]
