"""``factor_mode = 'AUTO'``: a per-vertex deform factor derived from the pose, every frame.

A single factor for a whole mesh must compromise: a bent elbow looks best near f ≈ 0.55 and a twisted one
needs f ≥ 0.8 (Hao Yin, *Improved Vertex Skinning Algorithm based on Dual Quaternions*, MSc thesis,
University of Canterbury, 2019, §5.3). Auto sets it per vertex, from quantities of each bone in this frame
and of each vertex at rest; nothing is solved per mesh and nothing is stored per frame. Three *profiles*:

* ``"ROUND"`` (the default, :func:`round_factors`): the factor falls from DQS at the joint to LBS away
  from it, as far out as the joint's swing needs, so that a bent joint stays round: its convex side
  neither thins (LBS) nor balloons (DQS). Twist pulls every vertex of the joint towards DQS, which
  removes it exactly.
* ``"KEEP_VOLUME"``: the same shape, wider, so that the convex side never thins (it bulges a little more).
* ``"JOINT"``: the Auto of version 0.1, kept for files saved with it (:func:`joint_vertex_factors`): one
  factor per joint, 0.55 for swing and 1 for twist, mixed by their squared angles.

**Per bone, O(B).** The rotation of bone ``b`` relative to its parent, ``Q_b = rot(inv(D_p) @ D_b)``
(``D`` = deform matrices, ``D_p = I`` for a root), is exactly the transform a vertex shared by ``p`` and
``b`` blends across. It is split about the bone's rest Y axis ``a`` (armature space) into *swing* (the
shortest rotation taking ``a`` to ``Q a``; a vector ``angle * unit axis``) and *twist* (the signed angle
about ``a``). :func:`bone_factor_data` accumulates per bone, down the chain: twist ``tau``, swing vector
``sigma``, swing angle ``A`` (a path length) and ``H``, the swing angle times the rest head of each joint.
Differences between two bones are then exactly the joints between them: the twist and swing a vertex
blending the two sees, and (``dH / dA``) where along the skeleton that swing happens.

**Per vertex, weighted pair sums** over the vertex's influences (GLSL-friendly, one pass)::

    P = sum_{i<j} w_i w_j      T = sum w_i w_j (tau_i - tau_j)^2      S = sum w_i w_j |sigma_i - sigma_j|^2

``T / P`` and ``S / P`` are the mean squared twist and swing between the bones the vertex blends, whatever
its weights. A vertex with one influence (``P = 0``) gets 1: LBS and DQS agree there.

**Round** (:func:`round_factors`). The same sums over ``A`` and ``H`` give the vertex's joint ``J``, the
swing-weighted place where the rotation between its bones happens (a regression of ``H`` on ``A``)::

    J = sum w_i w_j (A_i - A_j)(H_i - H_j) / sum w_i w_j (A_i - A_j)^2

With ``x`` the vertex's rest position and ``r`` its rest distance to the nearest of its bones (a segment
head to tail; both per vertex, at rest: :func:`vertex_geometry`), ``z^2 = |x - J|^2 / r^2 - 1`` is the
squared tangent of the angle between ``x - J`` and the joint's cross-section: 0 on the ring through the
joint, growing along the limb in units of its own thickness. Then::

    F = exp(-k z^2),   k = WIDTH * (theta / 90°)^SWING_EXPONENT,   theta^2 = S / P
    f = 1 - pi S (1 - F) / (TWIST_WEIGHT T + S + eps^2 P)

On the cross-section through a bent joint LBS pulls the convex side in by ``1 - cos(theta / 2)`` and DQS
keeps it, so F = 1 there; further along the limb DQS swings vertices about the joint and balloons the convex
side while LBS stays close to the bent pipe, so F falls, the later the larger the swing (a 150° knee needs
DQS further out than a 60° one). Twist is the one rotation DQS blends exactly, at every vertex of the
joint, so it pulls ``f`` towards 1 with ``TWIST_WEIGHT`` times its squared angle; at rest every profile
gives 1. ``WIDTH``, ``SWING_EXPONENT`` and ``TWIST_WEIGHT`` were fitted by ``tools/fit_auto.py`` on a sweep of
limbs the quality tables never use (see ``docs/quality.md``).

**Presence** ``pi``: how much of the vertex's weight swings. ``S / P`` is a mean over the vertex's pairs,
blind to how much weight they carry, so a vertex whose swinging bone has a weight of 0.03 would get the
profile's full depth while its neighbour, where that weight has ended (Blender's automatic weights end near
0.05; B-bone segments change from one vertex to the next), gets 1: a step of up to 1 across one edge. With
``d_k`` the deviation of influence ``k``'s swing vector from the weighted mean, ``M2 = sum w_k |d_k|^2`` and
``M4 = sum w_k |d_k|^4``, the *swinging weight* is ``a = M2^2 / (W M4)`` (``W = sum w_k``): for two groups
of bones of weights ``w`` and ``1 - w`` that swing against each other, ``a = w (1 - w) / (1 - 3 w (1 - w))``,
about ``w`` for a small ``w`` and 1 at ``w = 1/2``, whatever the angle. Then::

    pi = a^3 / (a^3 + PRESENCE_WEIGHT^3)

fades the profile in over weights up to about ``PRESENCE_WEIGHT`` (0.05, Blender's automatic-weight cut-off)
and leaves it whole above (0.89 at ``a = 0.1``), so ``f`` is continuous where a swinging weight ends.
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import numpy as np

from .dualquat import quaternion_from_matrix, quaternion_to_matrix
from .skinning import map_chunks
from .small_linalg import cross3, inverse3

__all__ = [
    "ANGLE_EPSILON",
    "BONE_DATA_WIDTH",
    "PRESENCE_WEIGHT",
    "DEFAULT_PROFILE",
    "PROFILES",
    "QUARTER_TURN_SQ",
    "SWING_FACTOR",
    "ROUND_SHAPES",
    "TWIST_FACTOR",
    "AutoPose",
    "BoneTwistSwing",
    "auto_factors",
    "bone_factor_data",
    "chain_sums",
    "joint_factors",
    "joint_vertex_factors",
    "relative_rotations",
    "swing_twist",
    "RoundShape",
    "round_factors",
    "vertex_factors",
    "vertex_geometry",
    "weight_sums",
]

#: The profiles, as ``Object.hybrid_skin.auto_profile`` names them.
PROFILES = ("ROUND", "KEEP_VOLUME", "JOINT")
DEFAULT_PROFILE = "ROUND"
#: Per-bone data columns: twist, swing (3), swing angle, angle-weighted rest head (3).
BONE_DATA_WIDTH = 8
#: Twist (radians, 10°) under which a joint counts as at rest: every profile is continuous there.
ANGLE_EPSILON = float(np.radians(10.0))
#: ``"JOINT"``: the factor for a pure twist (DQS removes the candy wrapper exactly) ...
TWIST_FACTOR = 1.0
#: ... and for a pure bend (the thesis' best-looking mix for a bent elbow).
SWING_FACTOR = 0.55


class RoundShape(NamedTuple):
    """Constants of a ``"ROUND"``-like profile (module docstring): ``width``, ``k`` at a 90° swing;
    ``swing_exponent``, how ``k`` changes with the swing; ``twist_weight``, twist's weight against swing."""

    width: float
    swing_exponent: float
    twist_weight: float


#: The fitted profiles: ``tools/fit_auto.py`` prints these numbers (``KEEP_VOLUME`` is ``ROUND`` widened
#: until the bends of the fit's sweep lose on average at most 0.5 points of volume more than DQS, and none
#: thins its convex side by more than 0.5 %).
ROUND_SHAPES = {
    "ROUND": RoundShape(width=2.17, swing_exponent=-0.97, twist_weight=0.48),
    "KEEP_VOLUME": RoundShape(width=0.74, swing_exponent=-0.97, twist_weight=0.48),
}
#: theta^2 of a 90° swing, where ``k = width``.
QUARTER_TURN_SQ = (np.pi / 2.0) ** 2
#: The round profiles' depth fades in with the vertex's swinging weight ``a`` as ``a^3 / (a^3 + this^3)``
#: (module docstring): Blender's automatic weights end at 0.05 (``heat_limit_weight``, weights below 0.025
#: removed, 0.025-0.05 ramped down to 0), so where one ends the factor no longer steps.
PRESENCE_WEIGHT = 0.05


class BoneTwistSwing(NamedTuple):
    """Per bone, relative to its parent: ``twist`` ``(B,)`` signed radians about the rest bone axis,
    ``swing`` ``(B, 3)`` rotation vector (angle × unit axis ⟂ the bone axis) in armature rest space."""

    twist: np.ndarray
    swing: np.ndarray


class AutoPose(NamedTuple):
    """What an Auto factor needs for one frame: the ``profile``, the per-bone ``bones`` data
    ``(B, BONE_DATA_WIDTH)`` float32 of :func:`bone_factor_data`, and, for ``"ROUND"`` and
    ``"KEEP_VOLUME"``, the per-vertex ``vertices`` ``(N, 4)`` float32 of
    :func:`vertex_geometry` (rest data, the same array object from frame to frame until the
    rest input or the binding changes); ``None`` for ``"JOINT"``."""

    profile: str
    bones: np.ndarray
    vertices: np.ndarray | None = None


def relative_rotations(deform: np.ndarray, parents: np.ndarray) -> np.ndarray:
    """``(B, 4)`` unit quaternions (w >= 0) of ``inv(D_parent) @ D_bone``, rotation part; a root uses ``D``.

    ``parents`` must name the nearest *deforming* ancestor in the same bone array (-1 for none).
    """
    d = np.asarray(deform, dtype=np.float64)[:, :3, :3]
    par = np.asarray(parents)
    parent_d = np.where((par >= 0)[:, None, None], d[np.maximum(par, 0)], np.eye(3))
    # A parent scaled to 0 (game rigs hide parts that way) has no inverse: relate to its rotation alone,
    # which for a zero matrix is none (its children, scaled to 0 with it, then read no rotation either).
    singular = np.abs(np.linalg.det(parent_d)) <= 1e-12
    if singular.any():
        parent_d = np.where(
            singular[:, None, None], quaternion_to_matrix(quaternion_from_matrix(parent_d)), parent_d
        )
    return quaternion_from_matrix(inverse3(parent_d) @ d)


def swing_twist(q: np.ndarray, axis: np.ndarray) -> BoneTwistSwing:
    """Split unit quaternions ``(B, 4)`` about unit ``axis`` ``(B, 3)``: ``q = swing * twist``."""
    q = np.where(q[:, :1] < 0.0, -q, q)
    twist = 2.0 * np.arctan2(np.einsum("bc,bc->b", q[:, 1:], axis), q[:, 0])
    w, v = q[:, :1], q[:, 1:]
    turned = axis + 2.0 * cross3(v, cross3(v, axis) + w * axis)  # q rotating the axis
    normal = cross3(axis, turned)
    sin, cos = np.linalg.norm(normal, axis=1), np.einsum("bc,bc->b", axis, turned)
    angle = np.arctan2(sin, cos)
    unit = np.divide(normal, sin[:, None], out=np.zeros_like(normal), where=sin[:, None] > 1e-12)
    return BoneTwistSwing(twist, angle[:, None] * unit)


def _bone_axes(rest: np.ndarray) -> np.ndarray:
    y = np.asarray(rest, dtype=np.float64)[:, :3, 1]
    return y / np.linalg.norm(y, axis=1, keepdims=True)


def joint_factors(deform: np.ndarray, rest: np.ndarray, parents: np.ndarray) -> np.ndarray:
    """``(B,)`` ``"JOINT"`` factor of each bone's head joint: the factor of a vertex blending that bone
    and its parent only (for display and tests; skinning uses :func:`vertex_factors`)."""
    ts = swing_twist(relative_rotations(deform, parents), _bone_axes(rest))
    t, s = ts.twist**2, np.einsum("bc,bc->b", ts.swing, ts.swing)
    return SWING_FACTOR + (TWIST_FACTOR - SWING_FACTOR) * t / (t + s + ANGLE_EPSILON**2)


def bone_factor_data(deform: np.ndarray, rest: np.ndarray, parents: np.ndarray) -> np.ndarray:
    """Per bone ``(B, 8)`` float32 ``(tau, sigma_xyz, A, H_xyz)`` accumulated from the root down.

    ``tau``: twist; ``sigma``: swing vector; ``A``: swing angle ``|sigma_b|`` of each joint, summed;
    ``H``: that angle times the joint's rest head (armature space), summed. Between a bone and its
    ancestor, ``dH / dA`` is the swing-weighted position of the joints in between (the joint itself for a
    parent and its child). O(B): one decomposition per bone, then one vectorised pass per chain depth.
    """
    par = np.asarray(parents)
    rest = np.asarray(rest, dtype=np.float64)
    ts = swing_twist(relative_rotations(deform, par), _bone_axes(rest))
    angle = np.linalg.norm(ts.swing, axis=1)
    local = np.column_stack([ts.twist, ts.swing, angle, angle[:, None] * rest[:, :3, 3]])
    return chain_sums(local, par).astype(np.float32)


def chain_sums(values: np.ndarray, parents: np.ndarray) -> np.ndarray:
    """``(B, C)``: each bone's ``values`` plus those of all its ancestors (``parents``: -1 for a root).

    Pointer jumping: after step ``s`` each bone holds the sum over itself and its ``2^s - 1`` nearest
    ancestors, and points ``2^s`` up its chain, so a chain of depth ``d`` takes ``log2 d`` steps (a
    48-bone chain 6 rather than 48); the steps depend only on ``parents`` and are kept
    (:func:`_jumps`)."""
    acc = np.array(values, dtype=np.float64)
    for has, up in _jumps(np.asarray(parents, dtype=np.int64).tobytes()):
        acc[has] += acc[up]  # acc[up] is gathered before the sum is written: the previous step's sums
    return acc


@functools.lru_cache(maxsize=64)
def _jumps(parents: bytes) -> tuple[tuple[np.ndarray, np.ndarray], ...]:
    """The pointer-jumping steps of :func:`chain_sums` for ``parents`` (int64 bytes): per step, the bones
    that still point at an ancestor and that ancestor."""
    anc = np.frombuffer(parents, dtype=np.int64).copy()
    steps = []
    while (anc >= 0).any():
        has = np.flatnonzero(anc >= 0)
        steps.append((has, anc[has]))
        anc[has] = anc[anc[has]]
    return tuple(steps)


def joint_vertex_factors(bone_data: np.ndarray, bone_indices: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """``(N,)`` float32 ``"JOINT"`` factors (the Auto of version 0.1) from :func:`bone_factor_data`::

        f = SWING_FACTOR + (TWIST_FACTOR - SWING_FACTOR) * T / (T + S + ANGLE_EPSILON^2 * P)

    the factor minimising ``(1 - f)^2 T + (f - SWING_FACTOR)^2 (S + ANGLE_EPSILON^2 P)``: each target
    weighted by its squared angle, as LBS artifacts grow with it. Vertices with no pair of influences get
    ``SWING_FACTOR``. The pair loop (K(K-1)/2 steps, vectorised over vertices) has no cancellation, so
    float32 is as exact as the shader's one-pass form.
    """
    data = np.asarray(bone_data, dtype=np.float32)[:, :4]
    idx = np.asarray(bone_indices)
    w = np.asarray(weights, dtype=np.float32)
    gathered = [data[idx[:, k]] for k in range(w.shape[1])]  # K × (N, 4)
    t, s, pairs = (np.zeros(w.shape[0], dtype=np.float32) for _ in range(3))
    for i in range(w.shape[1]):
        for j in range(i + 1, w.shape[1]):
            ww = w[:, i] * w[:, j]
            diff = gathered[i] - gathered[j]
            diff *= diff
            t += ww * diff[:, 0]
            s += ww * (diff[:, 1] + diff[:, 2] + diff[:, 3])
            pairs += ww
    denom = t + s + np.float32(ANGLE_EPSILON**2) * pairs
    share = np.divide(t, denom, out=np.zeros_like(t), where=denom > 0.0)
    return np.float32(SWING_FACTOR) + np.float32(TWIST_FACTOR - SWING_FACTOR) * share


def vertex_factors(pose: AutoPose, bone_indices: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """``(N,)`` float32 Auto factors of one frame's :class:`AutoPose` and ``(N, K)`` influences."""
    if pose.profile == "JOINT":
        return joint_vertex_factors(pose.bones, bone_indices, weights)
    if pose.vertices is None:
        raise ValueError(f"the {pose.profile} profile needs the vertices' rest data (AutoPose.vertices)")
    return round_factors(pose.bones, bone_indices, weights, pose.vertices, ROUND_SHAPES[pose.profile])


def auto_factors(
    deform: np.ndarray,
    rest: np.ndarray,
    parents: np.ndarray,
    bone_indices: np.ndarray,
    weights: np.ndarray,
    *,
    profile: str = DEFAULT_PROFILE,
    positions: np.ndarray | None = None,
    bone_lengths: np.ndarray | None = None,
) -> np.ndarray:
    """``(N,)`` Auto factors for one frame, from scratch. ``"ROUND"`` and ``"KEEP_VOLUME"`` need the rest
    ``positions`` ``(N, 3)`` in armature space and the bones' ``bone_lengths`` ``(B,)``."""
    if profile not in PROFILES:
        raise ValueError(f"unknown Auto profile {profile!r}: use one of {PROFILES}")
    vertices = None
    if profile != "JOINT":
        if positions is None or bone_lengths is None:
            raise ValueError(f"the {profile} profile needs the rest positions and the bone lengths")
        vertices = vertex_geometry(positions, bone_indices, weights, rest, bone_lengths)
    pose = AutoPose(profile, bone_factor_data(deform, rest, parents), vertices)
    return vertex_factors(pose, bone_indices, weights)


def vertex_geometry(
    positions: np.ndarray,
    bone_indices: np.ndarray,
    weights: np.ndarray,
    bone_rest: np.ndarray,
    bone_lengths: np.ndarray,
) -> np.ndarray:
    """Per vertex ``(N, 4)`` float32 ``(x, y, z, r^2)``: the rest position in armature space and its squared
    distance to the nearest bone it is weighted to (each bone the segment from its rest head along its Y
    axis by ``bone_lengths``; a negative length points back). Rest data: computed once per bind, O(N·K)."""
    x = np.asarray(positions, dtype=np.float64)
    idx = np.asarray(bone_indices)
    w = np.asarray(weights)
    rest = np.asarray(bone_rest, dtype=np.float64)
    heads = rest[:, :3, 3]
    segments = np.asarray(bone_lengths, dtype=np.float64)[:, None] * rest[:, :3, 1]
    nearest = np.full(x.shape[0], np.inf)
    for k in range(idx.shape[1]):  # O(K) passes, each vectorised over vertices
        head, segment = heads[idx[:, k]], segments[idx[:, k]]
        rel = x - head
        length_sq = np.einsum("nc,nc->n", segment, segment)
        along = np.einsum("nc,nc->n", rel, segment)
        t = np.clip(np.divide(along, length_sq, out=np.zeros_like(along), where=length_sq > 0.0), 0.0, 1.0)
        off = rel - t[:, None] * segment
        nearest = np.where(w[:, k] > 0.0, np.minimum(nearest, np.einsum("nc,nc->n", off, off)), nearest)
    nearest[~np.isfinite(nearest)] = 0.0  # no influence: the factor is 1 whatever this is
    return np.ascontiguousarray(np.column_stack([x, nearest]), dtype=np.float32)


def round_factors(
    bone_data: np.ndarray,
    bone_indices: np.ndarray,
    weights: np.ndarray,
    vertices: np.ndarray,
    shape: RoundShape = ROUND_SHAPES["ROUND"],
    *,
    presence: float = PRESENCE_WEIGHT,
    dtype: type = np.float32,
) -> np.ndarray:
    """``(N,)`` float32 ``"ROUND"``-like factors (module docstring) from :func:`bone_factor_data`,
    ``(N, K)`` influences and :func:`vertex_geometry`. ``presence``: the swinging weight over which the
    profile fades in (:data:`PRESENCE_WEIGHT`; 0 gives the profile without it, for comparisons).
    ``dtype``: the arithmetic (float32 as the shaders; ``np.float64`` measures what float32 rounding costs,
    for the animation textures' error report). Chunks run on the core's threads."""
    table = np.ascontiguousarray(np.asarray(bone_data, dtype=dtype).T)  # (8, B)
    idx = np.asarray(bone_indices)
    w = np.asarray(weights, dtype=dtype)
    geometry = np.asarray(vertices, dtype=dtype)
    out = np.empty(w.shape[0], dtype=dtype)

    def job(s: int, e: int) -> None:
        out[s:e] = _round_chunk(table, idx[s:e], w[s:e], geometry[s:e], shape, presence, dtype)

    map_chunks(job, w.shape[0])
    return out


def weight_sums(weights_t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(W, P)`` per vertex from ``(K, m)`` weights (influence-major, any float type): the total weight
    and the sum over influence pairs ``sum_{i<j} w_i w_j``, without cancellation (each weight times the
    weight of the influences before it). Rest data: the node tree reads them stored at bind, the same
    numbers as here."""
    v = np.asarray(weights_t)
    total = v.sum(axis=0)
    before = np.zeros_like(v)
    np.cumsum(v[:-1], axis=0, out=before[1:])
    return total, np.einsum("kn,kn->n", v, before)


def _round_chunk(
    table: np.ndarray, idx: np.ndarray, w: np.ndarray, geometry: np.ndarray, shape: RoundShape,
    presence: float, dtype: type = np.float32,
) -> np.ndarray:
    """One chunk of :func:`round_factors`, component-major (one gather of the ``(8, B)`` bone table, then
    long contiguous rows). The pair sums are ``W`` times the weighted central moments over the influences,
    ``sum_{i<j} w_i w_j (x_i - x_j)(y_i - y_j) = W sum_k w_k (x_k - m_x)(y_k - m_y)``, two-pass (mean, then
    deviations) so that nothing cancels; the shader computes the same in one pass (West's update), then a
    second pass over the swing deviations for the presence's ``M4``. ``dtype``: every operation's type."""
    f32 = dtype
    v = np.ascontiguousarray(w.T)  # (K, m)
    x = np.take(table, idx.T, axis=1)  # (8, K, m)
    x -= x[:, :1, :].copy()  # relative to the first influence: nearby values subtract exactly (Sterbenz)
    total, pairs = weight_sums(v)
    scale = np.divide(f32(1.0), total, out=np.zeros_like(total), where=total > 0.0)
    mean = np.einsum("kn,ckn->cn", v, x) * scale
    x -= mean[:, None, :]
    vz = v * x[4]  # weighted deviations of A
    aa = np.einsum("kn,kn->n", vz, x[4]) * total
    ah = np.einsum("kn,ckn->cn", vz, x[5:8]) * total
    t = np.einsum("kn,kn->n", v * x[0], x[0]) * total
    swing_sq = np.einsum("ckn,ckn->kn", x[1:4], x[1:4])  # |d_k|^2 of the swing vectors
    m2 = np.einsum("kn,kn->n", v, swing_sq)
    m4 = np.einsum("kn,kn,kn->n", v, swing_sq, swing_sq)
    s = m2 * total
    n = total.shape[0]
    joint = np.divide(ah, aa, out=np.zeros_like(ah), where=aa > 0.0)  # (3, m)
    off = geometry[:, :3].T - joint
    ratio = np.divide(np.einsum("cn,cn->n", off, off), geometry[:, 3], out=np.zeros(n, f32),
                      where=geometry[:, 3] > 0.0)
    along = np.where(aa > 0.0, np.maximum(ratio - f32(1.0), f32(0.0)), f32(0.0))  # aa = 0: S = 0 too
    swing = np.divide(s, pairs, out=np.zeros_like(s), where=pairs > 0.0) / f32(QUARTER_TURN_SQ)
    k = f32(shape.width) * np.exp(f32(0.5 * shape.swing_exponent) * np.log(np.maximum(swing, f32(1e-12))))
    profile = np.exp(-k * along)
    # The swinging weight a = (M2 / M4) (M2 / W), in that order so that tiny weights neither underflow nor
    # overflow; no deviation (M4 = 0) means no swing (S = 0), where the depth is 0 whatever this is.
    spread = np.divide(m2, m4, out=np.zeros(n, f32), where=m4 > 0.0)
    scaled = total * f32(presence)
    q = spread * np.divide(m2, scaled, out=np.full(n, f32(1e6)), where=scaled > 0.0)
    q = np.minimum(q, f32(1e6))  # a^3 / (a^3 + kappa^3) = q^3 / (q^3 + 1), q = a / kappa: 1 well before
    cube = q * q * q
    fade = cube / (cube + f32(1.0))
    twist = f32(shape.twist_weight) * t
    rest = f32(ANGLE_EPSILON**2) * pairs
    denom = twist + s + rest
    depth = np.divide(s, denom, out=np.zeros(n, f32), where=denom > 0.0)
    return f32(1.0) - fade * depth * (f32(1.0) - profile)
