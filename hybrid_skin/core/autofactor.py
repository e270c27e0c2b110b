"""``factor_mode = 'AUTO'``: a per-vertex deform factor derived from the pose, every frame.

Seed 000 §5.3: a bent elbow looks best near f ≈ 0.55, a twisted one needs f ≥ 0.8, and one global factor
can only compromise; §6.2 asks for a factor set automatically per joint. Here:

1. **Per bone, O(B) on the CPU.** The rotation of bone ``b`` relative to its parent, ``Q_b = rot(inv(D_p) @
   D_b)`` (``D`` = deform matrices, ``D_p = I`` for a root), is exactly the transform a vertex shared by
   ``p`` and ``b`` blends across. It is split about the bone's rest Y axis ``a`` (armature space) into
   *swing* (the shortest rotation taking ``a`` to ``Q a``; a vector ``angle * unit axis``) and *twist*
   (the signed angle about ``a``: ``2 atan2(q.xyz · a, q.w)`` with ``q.w >= 0``). Both are accumulated down
   the chain, ``tau_b = tau_p + twist_b`` and ``sigma_b = sigma_p + swing_b``, so that the *difference*
   between a parent and a child is exactly the child's own twist and swing (and, between more distant
   bones, the sum of the joints in between).
2. **Per vertex, a weighted sum over influence pairs** (GLSL-friendly, only per-bone data)::

       P = sum_{i<j} w_i w_j                    T = sum_{i<j} w_i w_j (tau_i - tau_j)^2
       S = sum_{i<j} w_i w_j |sigma_i - sigma_j|^2
       f = SWING_FACTOR + (TWIST_FACTOR - SWING_FACTOR) * T / (T + S + ANGLE_EPSILON^2 * P)

   ``T / P`` and ``S / P`` are the weighted mean squared twist and swing between the bones the vertex
   blends, so a vertex on the elbow ring reads the elbow's rotation whatever its weights, while a vertex
   that follows one bone gets ``SWING_FACTOR`` (its factor cannot matter: LBS and DQS agree there). One-pass
   form for a shader: ``T = W sum w tau^2 - (sum w tau)^2`` (likewise ``S``), ``P = (W^2 - sum w^2) / 2``,
   ``W = sum w``; it loses float32 precision only for near-rigid vertices, where the factor does not matter.

Why this mapping: twist is the one rotation DQS blends perfectly (the candy wrapper vanishes), so its
target is ``TWIST_FACTOR = 1``; for swing DQS balloons the convex side of the joint and LBS deflates it,
and seed 000 found the best mix at 0.55 (on the canonical cylinder the convex side keeps its mean
thickness at f = 0.54 for a 90° bend, 0.68 for 120°; wider weight falloffs balloon more under DQS and move
the balance lower, so 0.55 is kept as the seed's value). For a joint that does both, the factor minimising
``(1 - f)^2 T + (f - SWING_FACTOR)^2 (S + ANGLE_EPSILON^2 P)`` is the formula above: LBS artifacts grow
with the square of the angle (the candy-wrapper ring keeps ``cos(twist/2) ≈ 1 - twist^2/8`` of its
radius), so each target is weighted by its squared angle. ``ANGLE_EPSILON`` keeps the factor defined and
smooth in time at the rest pose, where all factors give the same result.

A weighted average of one scalar factor per bone cannot do this: the forearm bone sits between a bent
elbow and a twisted wrist, and averaging its one factor into both joints pulls them towards each other.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from .dualquat import quaternion_from_matrix, quaternion_to_matrix
from .small_linalg import inverse3

__all__ = [
    "ANGLE_EPSILON",
    "SWING_FACTOR",
    "TWIST_FACTOR",
    "BoneTwistSwing",
    "auto_factors",
    "bone_factor_data",
    "joint_factors",
    "relative_rotations",
    "swing_twist",
    "vertex_factors",
]

#: Factor for a pure twist: DQS removes the candy wrapper exactly and costs nothing there.
TWIST_FACTOR = 1.0
#: Factor for a pure bend (swing): seed 000 §5.3's best-looking mix for a bent elbow.
SWING_FACTOR = 0.55
#: Twist (radians, 10°) that, with no swing, sets the factor halfway between the two targets.
ANGLE_EPSILON = float(np.radians(10.0))


class BoneTwistSwing(NamedTuple):
    """Per bone, relative to its parent: ``twist`` ``(B,)`` signed radians about the rest bone axis,
    ``swing`` ``(B, 3)`` rotation vector (angle × unit axis ⟂ the bone axis) in armature rest space."""

    twist: np.ndarray
    swing: np.ndarray


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
    turned = axis + 2.0 * np.cross(v, np.cross(v, axis) + w * axis)  # q rotating the axis
    normal = np.cross(axis, turned)
    sin, cos = np.linalg.norm(normal, axis=1), np.einsum("bc,bc->b", axis, turned)
    angle = np.arctan2(sin, cos)
    unit = np.divide(normal, sin[:, None], out=np.zeros_like(normal), where=sin[:, None] > 1e-12)
    return BoneTwistSwing(twist, angle[:, None] * unit)


def _bone_axes(rest: np.ndarray) -> np.ndarray:
    y = np.asarray(rest, dtype=np.float64)[:, :3, 1]
    return y / np.linalg.norm(y, axis=1, keepdims=True)


def joint_factors(deform: np.ndarray, rest: np.ndarray, parents: np.ndarray) -> np.ndarray:
    """``(B,)`` AUTO factor of each bone's head joint: the factor of a vertex blending that bone and its
    parent only (for display and tests; skinning uses :func:`vertex_factors`)."""
    ts = swing_twist(relative_rotations(deform, parents), _bone_axes(rest))
    t, s = ts.twist**2, np.einsum("bc,bc->b", ts.swing, ts.swing)
    return SWING_FACTOR + (TWIST_FACTOR - SWING_FACTOR) * t / (t + s + ANGLE_EPSILON**2)


def bone_factor_data(deform: np.ndarray, rest: np.ndarray, parents: np.ndarray) -> np.ndarray:
    """Per-bone ``(B, 4)`` float32 ``(tau, sigma_x, sigma_y, sigma_z)``: accumulated twist and swing.

    O(B): one decomposition per bone, then one vectorised pass per chain depth level (no vertex work).
    """
    par = np.asarray(parents)
    ts = swing_twist(relative_rotations(deform, par), _bone_axes(rest))
    local = np.column_stack([ts.twist, ts.swing])
    acc = local.copy()
    has_parent = par >= 0
    for _ in range(par.shape[0]):  # at most the chain depth; stops when every bone reached its root
        updated = local + np.where(has_parent[:, None], acc[np.maximum(par, 0)], 0.0)
        if np.array_equal(updated, acc):
            break
        acc = updated
    return acc.astype(np.float32)


def vertex_factors(bone_data: np.ndarray, bone_indices: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """``(N,)`` float32 AUTO factors from :func:`bone_factor_data` and ``(N, K)`` influences.

    Vertices with no pair of influences (one bone, or weights summing to 0) get ``SWING_FACTOR``. The loop
    runs over the K(K-1)/2 influence pairs, each step vectorised over all vertices, in float32 (the pair
    form has no cancellation, so float32 is as exact as the shader).
    """
    data = np.asarray(bone_data, dtype=np.float32)
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


def auto_factors(
    deform: np.ndarray, rest: np.ndarray, parents: np.ndarray, bone_indices: np.ndarray, weights: np.ndarray
) -> np.ndarray:
    """``(N,)`` AUTO deform factors for one frame: :func:`bone_factor_data` then :func:`vertex_factors`."""
    return vertex_factors(bone_factor_data(deform, rest, parents), bone_indices, weights)
