"""The per-chunk kernel of :func:`.skinning.skin`: hybrid matrices built component-major in numpy.

Per vertex the hybrid matrix ``M = (1 - f)·T + f·Q`` (see :mod:`.skinning`) is built as planes: every
quantity is a contiguous ``(m,)`` row per component (``(3, 3, m)`` for a 3x3), so each numpy call runs
one long SIMD loop instead of many 3- or 4-wide ones. Per chunk of ``m`` vertices:

1. Gather: one ``np.take`` of a per-frame ``(B, 20)`` bone table (LBS 3x4 | real | dual) by the
   ``(m, K)`` bone indices (a wide row per influence is the cheapest gather numpy has), one ``einsum``
   to blend the ``K`` rows, one transpose to ``(20, m)`` planes.
2. Antipodality (Blender's running-sum rule): a bone's dual quaternion is negated when its real part
   points away from the running sum. If every pair of bones that share a vertex (with positive weights)
   has ``dot(q_a, q_b) ≥`` :data:`PAIR_MARGIN` no sign can flip: the running sum's dot with the next bone
   is a positive combination of such dots (float32 rounding is far below the margin). Per frame that is
   one dot per co-occurring bone pair (:class:`BindingPlan`, cached per binding); only vertices with
   two bones of a pair below the margin go through the exact running-sum loop, and only their
   dual-quaternion planes are re-blended with the signed weights.
3. Scale pivots (Blender's Preserve Volume with scaled bones): ``dual += F·p`` only for vertices that
   touch a bone with a pivot term (a scaled bone; see :func:`.dualquat.bone_dual_quaternions`).
4. ``Q``: rotation of the blended real part ``r`` and translation ``2·(r_w·t_v − t_w·v + v × t_v)/|r|²``
   (Blender's ``mul_v3m3_dq``), mixed with ``T``, the influence applied, then positions ``M·p`` and
   normals ``cofactor(M₃)·n`` from the same planes (so positions do not depend on asking for normals).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = [
    "PAIR_MARGIN",
    "BindingPlan",
    "Frame",
    "apply_points",
    "chunk_matrices",
    "cofactor_normals",
    "normalise",
    "plan_binding",
    "prepare",
]

#: Bone pairs whose real parts have a dot product at least this large cannot flip in the running sum;
#: float32 rounding of a running sum of unit quaternions is below 1e-6.
PAIR_MARGIN = 1e-4

_LBS, _REAL, _DUAL, _WIDTH = slice(0, 12), slice(12, 16), slice(16, 20), 20
_YZX = np.array([1, 2, 0])
_ZXY = np.array([2, 0, 1])


@dataclass(frozen=True)
class BindingPlan:
    """What the kernel derives once per binding.

    pairs: ``(U, 2)`` distinct bone pairs that share a vertex with positive weights on both.
    full_influence: every vertex has influence 1 (no identity blend needed).
    """

    pairs: np.ndarray
    full_influence: bool


def plan_binding(bone_indices: np.ndarray, weights: np.ndarray, influence: np.ndarray) -> BindingPlan:
    n, k = weights.shape
    bones = int(bone_indices.max(initial=0)) + 1
    keys = []
    for a in range(k):
        for b in range(a + 1, k):
            both = (weights[:, a] > 0) & (weights[:, b] > 0)
            lo = np.minimum(bone_indices[:, a], bone_indices[:, b]).astype(np.int64)
            hi = np.maximum(bone_indices[:, a], bone_indices[:, b]).astype(np.int64)
            keys.append((lo * bones + hi)[both & (lo != hi)])
    flat = np.concatenate(keys) if keys else np.zeros(0, np.int64)
    if bones * bones <= 1 << 24:  # a bitmap is O(entries); np.unique would sort them
        seen = np.zeros(bones * bones, dtype=bool)
        seen[flat] = True
        unique = np.flatnonzero(seen)
    else:
        unique = np.unique(flat)
    pairs = np.stack(np.divmod(unique, bones), 1) if len(unique) else np.zeros((0, 2), np.int64)
    return BindingPlan(pairs, bool(np.all(influence == 1.0)))


@dataclass(frozen=True)
class Frame:
    """Per-frame bone data (O(bones)).

    table: ``(B, 20)`` float32 rows ``[LBS 3x4 | real | dual]``; lbs / dq: its column blocks, contiguous.
    keep: the LBS columns of ``table`` are already multiplied by this ``1 − f`` (a scalar factor strictly
    between 0 and 1; ``None`` otherwise): one multiply per bone instead of one per vertex.
    pivot: ``(B, 12)`` pivot terms (4x3 row-major), or ``None`` when no bone is scaled.
    scaled: ``(B,)`` bool, bones with a pivot term. suspect: ``(B,)`` bool, bones in a co-occurring pair
    below :data:`PAIR_MARGIN`, or ``None`` when no vertex can flip a sign.
    """

    table: np.ndarray
    lbs: np.ndarray
    dq: np.ndarray
    keep: float | None
    pivot: np.ndarray | None
    scaled: np.ndarray | None
    suspect: np.ndarray | None


def prepare(
    matrices: np.ndarray,
    real: np.ndarray,
    dual: np.ndarray,
    pivot: np.ndarray | None,
    plan: BindingPlan,
    factor: float | np.ndarray,
) -> Frame:
    b = matrices.shape[0]
    table = np.empty((b, _WIDTH), dtype=np.float32)
    table[:, _LBS] = matrices.reshape(b, 12)
    lbs = np.ascontiguousarray(table[:, _LBS])
    keep = None
    if isinstance(factor, float) and 0.0 < factor < 1.0:
        keep = 1.0 - factor
        table[:, _LBS] *= np.float32(keep)
    table[:, _REAL] = real
    table[:, _DUAL] = dual
    piv = scaled = suspect = None
    if pivot is not None:
        flat = np.asarray(pivot, dtype=np.float32).reshape(b, 12)
        scaled = np.any(flat != 0.0, axis=1)
        if scaled.any():
            piv = np.ascontiguousarray(flat)
        else:
            scaled = None
    if len(plan.pairs):
        q = np.asarray(real, dtype=np.float64)
        low = np.einsum("pc,pc->p", q[plan.pairs[:, 0]], q[plan.pairs[:, 1]]) < PAIR_MARGIN
        if low.any():
            suspect = np.zeros(b, dtype=bool)
            suspect[plan.pairs[low].ravel()] = True
    dq = np.ascontiguousarray(table[:, 12:_WIDTH])
    return Frame(table, lbs, dq, keep, piv, scaled, suspect)


def _running_sum_signs(w: np.ndarray, real: np.ndarray) -> np.ndarray:
    """Blender's rule on ``(r, K)`` weights and gathered real parts ``(r, K, 4)`` → signed weights."""
    acc = w[:, 0, None] * real[:, 0]
    signed = w.copy()
    for k in range(1, w.shape[1]):
        bone = real[:, k]
        flip = np.einsum("nc,nc->n", acc, bone) < 0.0
        # Not ``np.negative(signed[:, k], out=signed[:, k], where=flip)``: numpy 2.x can mis-mask an
        # in-place ufunc on a strided column (wrong signs on real rigs, seen with numpy 2.4).
        signed[:, k] = np.where(flip, -signed[:, k], signed[:, k])
        acc += signed[:, k, None] * bone
    return signed


def _cross(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Row-wise cross product of ``(3, m)`` planes."""
    out = np.take(a, _YZX, 0) * np.take(b, _ZXY, 0)
    out -= np.take(a, _ZXY, 0) * np.take(b, _YZX, 0)
    return out


def _dual_quaternion_planes(
    idx: np.ndarray, w: np.ndarray, g: np.ndarray, planes: np.ndarray, p: np.ndarray, frame: Frame
) -> tuple[np.ndarray, np.ndarray]:
    """Real ``(4, m)`` and dual ``(4, m)`` planes with Blender's signs and the scale pivots applied."""
    off = planes.shape[0] - 8  # the dual-quaternion planes are the last eight
    signed = w
    if frame.suspect is not None:
        rows = np.flatnonzero(np.count_nonzero(frame.suspect[idx], axis=1) >= 2)
        if len(rows):
            sub = g[rows, :, off : off + 8]
            signed_rows = _running_sum_signs(w[rows], sub[:, :, :4])
            planes[off : off + 8, rows] = np.einsum("mk,mkc->cm", signed_rows, sub)
            signed = w.copy()
            signed[rows] = signed_rows
    real, dual = planes[off : off + 4], planes[off + 4 : off + 8]
    if frame.scaled is not None:
        hit = np.any(frame.scaled[idx], axis=1)
        if hit.all():
            fold = np.einsum("mk,mkc->cm", signed, np.take(frame.pivot, idx, axis=0)).reshape(4, 3, -1)
            dual += fold[:, 0] * p[0] + fold[:, 1] * p[1] + fold[:, 2] * p[2]
        elif hit.any():
            rows = np.flatnonzero(hit)
            fold = np.einsum("mk,mkc->cm", signed[rows], np.take(frame.pivot, idx[rows], axis=0))
            fold = fold.reshape(4, 3, -1)
            pr = p[:, rows]
            dual[:, rows] += fold[:, 0] * pr[0] + fold[:, 1] * pr[1] + fold[:, 2] * pr[2]
    return real, dual


def chunk_matrices(
    p: np.ndarray,
    idx: np.ndarray,
    w: np.ndarray,
    infl: np.ndarray | None,
    frame: Frame,
    f: float | np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """Hybrid matrices of one chunk as planes: ``(3, 3, m)`` linear part and ``(3, m)`` translation.

    ``p``: ``(3, m)`` armature-space positions (planes); ``idx``, ``w``: ``(m, K)``; ``infl``: ``(m,)`` or
    ``None`` when all are 1; ``f``: a float or ``(m,)`` float32 factors.
    """
    scalar = isinstance(f, float)
    lbs = not (scalar and f >= 1.0)
    dqs = not (scalar and f <= 0.0)
    table = frame.table if lbs and dqs else frame.lbs if lbs else frame.dq
    g = np.take(table, idx, axis=0)
    planes = np.ascontiguousarray(np.einsum("mk,mkc->mc", w, g).T)
    m = planes.shape[1]
    if lbs:
        lin = planes[_LBS].reshape(3, 4, m)
        m3, t = lin[:, :3], lin[:, 3]
        if dqs and frame.keep is None:
            keep = 1.0 - f
            m3, t = m3 * keep, t * keep
    if dqs:
        real, dual = _dual_quaternion_planes(idx, w, g, planes, p, frame)
        norm_sq = np.einsum("cm,cm->m", real, real)
        inv = np.divide(1.0, norm_sq, out=np.zeros_like(norm_sq), where=norm_sq > 0)
        if lbs:
            inv *= f
        rw, v, tw, tv = real[0], real[1:], dual[0], dual[1:]
        u = v * (2 * inv)
        rot = u[:, None] * v[None]  # 2·v·vᵀ/|r|², then the skew part and the diagonal
        wu = u * rw
        rot[0, 1] -= wu[2]
        rot[1, 0] += wu[2]
        rot[0, 2] += wu[1]
        rot[2, 0] -= wu[1]
        rot[1, 2] -= wu[0]
        rot[2, 1] += wu[0]
        rot.reshape(9, m)[::4] += (2 * rw * rw - norm_sq) * inv
        move = _cross(v, tv)
        move += rw * tv
        move -= tw * v
        move *= 2 * inv
        if lbs:
            rot += m3
            move += t
        m3, t = rot, move
    if infl is not None:
        m3 = m3 * infl
        m3.reshape(9, m)[::4] += 1.0 - infl
        t = t * infl
    return m3, t


def apply_points(m3: np.ndarray, t: np.ndarray, p: np.ndarray) -> np.ndarray:
    """``m3 @ p + t`` for ``(3, 3, m)``, ``(3, m)`` and ``(3, m)`` planes."""
    out = m3[:, 0] * p[0]
    out += m3[:, 1] * p[1]
    out += m3[:, 2] * p[2]
    out += t
    return out


def cofactor_normals(m3: np.ndarray, n: np.ndarray) -> np.ndarray:
    """``cofactor(m3) @ n`` (un-normalised) for ``(3, 3, m)`` and ``(3, m)`` planes: with rows ``a, b, c``,
    ``((b × c)·n, (c × a)·n, (a × b)·n) = (b·(c × n), −a·(c × n), −b·(a × n))``."""
    cn = _cross(m3[2], n)
    an = _cross(m3[0], n)
    out = np.empty_like(n)
    np.einsum("cm,cm->m", m3[1], cn, out=out[0])
    np.einsum("cm,cm->m", m3[0], cn, out=out[1])
    np.einsum("cm,cm->m", m3[1], an, out=out[2])
    out[1:] *= -1.0
    return out


def normalise(n: np.ndarray) -> np.ndarray:
    """Unit ``(3, m)`` planes (zero where the length is zero)."""
    length = np.sqrt(np.einsum("cm,cm->m", n, n))
    return np.divide(n, length, out=np.zeros_like(n), where=length > 0)
