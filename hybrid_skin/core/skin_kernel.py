"""The per-chunk kernel of :func:`.skinning.skin`: hybrid matrices built component-major in numpy.

Per vertex the hybrid matrix ``M = (1 - f)·T + f·Q`` (see :mod:`.skinning`) is built as planes: every
quantity is a contiguous ``(m,)`` row per component (``(3, 3, m)`` for a 3x3), so each numpy call runs
one long SIMD loop instead of many 3- or 4-wide ones. Per chunk of ``m`` vertices:

1. Gather: one ``np.take`` of a per-frame bone table (:class:`.skin_plan.Frame`: LBS 3x4 | real | dual,
   and the scale pivots when most of the chunk touches a scaled bone) by the ``(m, K)`` bone indices (a
   wide row per influence is the cheapest gather numpy has), one ``einsum`` to blend the ``K`` rows, one
   transpose to planes.
2. Antipodality (:mod:`.skin_plan`): in most frames no sign can flip and nothing is done; otherwise the
   running-sum rule gives signed weights from the per-frame table of pair dot products, and the
   dual-quaternion columns are blended with them (the LBS columns with the plain weights).
3. Scale pivots (Blender's Preserve Volume with scaled bones): ``dual += F·p``, from the blended pivot
   planes or, when few vertices touch a scaled bone, for those vertices only.
4. Positions: ``T·p`` and the dual quaternion applied to ``p`` directly (:func:`positions`, no per-vertex
   matrix); normals: the rotation of the blended real part (Blender's ``mul_v3m3_dq``) mixed with ``T``
   and ``cofactor(M₃)·n`` (:func:`matrices`). Positions are computed the same way whether normals are
   asked for or not.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .skin_plan import Frame

__all__ = [
    "Blended",
    "apply_points",
    "blend",
    "cofactor_normals",
    "matrices",
    "positions",
    "positions_and_ends",
]

_LBS = slice(0, 12)
_YZX = np.array([1, 2, 0])
_ZXY = np.array([2, 0, 1])
# [v]ₓ in a row-major 3x3: entries (0,1) (0,2) (1,0) (1,2) (2,0) (2,1) are −z, +y, +z, −x, −y, +x.
_SKEW_ENTRY = np.array([1, 2, 3, 5, 6, 7])
_SKEW_AXIS = np.array([2, 1, 2, 0, 1, 0])
_SKEW_SIGN = np.array([-1.0, 1.0, 1.0, -1.0, -1.0, 1.0], dtype=np.float32)[:, None]


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


def _flipped_indices(idx: np.ndarray, w: np.ndarray, pair_dots: np.ndarray) -> np.ndarray:
    """Blender's running-sum rule for every vertex from the ``(B, B)`` pair table,
    ``dot(Σ_{j<k} ±w_j q_j, q_k) = Σ_{j<k} ±w_j·P[b_j, b_k]``, as row indices into the frame's doubled
    tables (``b + B`` for a flipped influence: the same row with its dual quaternion negated)."""
    bones = pair_dots.shape[0]
    flat = pair_dots.ravel()
    index = np.ascontiguousarray(idx.T)  # influence-major: every step below runs on contiguous rows
    signed = w.T.copy()  # always a copy: for one vertex ``w.T`` is already contiguous (the binding's own)
    rows = index * bones
    out = index.copy()
    for k in range(1, len(index)):
        dot = signed[0] * np.take(flat, rows[0] + index[k])
        for j in range(1, k):
            dot += signed[j] * np.take(flat, rows[j] + index[k])
        flip = dot < 0.0
        signed[k] = np.where(flip, -signed[k], signed[k])
        out[k] = np.where(flip, index[k] + bones, index[k])
    return out.T


def _dual_quaternion_planes(
    idx: np.ndarray,
    w: np.ndarray,
    g_dq: np.ndarray,
    planes: np.ndarray,
    p: np.ndarray,
    frame: Frame,
    hit: np.ndarray | None,
    wide: bool,
) -> tuple[np.ndarray, np.ndarray]:
    """Real ``(4, m)`` and dual ``(4, m)`` planes with Blender's signs and the scale pivots applied.
    ``idx`` are the rows gathered (flipped ones already point at negated rows)."""
    off = planes.shape[0] - (20 if wide else 8)  # dual quaternions (and pivots when wide) come last
    weights, pivots = w, frame.pivot_rows(flipped=frame.pair_dots is not None)
    if frame.suspect is not None and frame.pair_dots is None:  # a huge palette: the loop, where needed
        rows = np.flatnonzero(np.count_nonzero(frame.suspect[idx], axis=1) >= 2)
        if len(rows):
            sub = g_dq[rows]
            signed_rows = _running_sum_signs(w[rows], sub[:, :, :4])
            planes[off:, rows] = np.einsum("mk,mkc->cm", signed_rows, sub)
            weights = w.copy()
            weights[rows] = signed_rows
    real, dual = planes[off : off + 4], planes[off + 4 : off + 8]
    if wide:
        fold = planes[off + 8 : off + 20].reshape(4, 3, -1)
        dual += fold[:, 0] * p[0] + fold[:, 1] * p[1] + fold[:, 2] * p[2]
    elif hit is not None and hit.any():
        rows = np.flatnonzero(hit)
        fold = np.einsum("mk,mkc->cm", weights[rows], np.take(pivots, idx[rows], axis=0))
        fold = fold.reshape(4, 3, -1)
        pr = p[:, rows]
        dual[:, rows] += fold[:, 0] * pr[0] + fold[:, 1] * pr[1] + fold[:, 2] * pr[2]
    return real, dual


@dataclass(frozen=True)
class Blended:
    """One chunk's blended bone data as planes (armature space).

    lin, move: ``(3, 3, m)`` and ``(3, m)`` LBS matrix (weighted by ``1 − f`` when the frame folded a
    scalar factor in), or ``None`` for pure DQS. keep: ``1 − f`` still to apply to them (per-vertex
    factors), else ``None``. real, dual: ``(4, m)`` blended dual quaternions, ``None`` for pure LBS.
    twice: ``2·f/|r|²`` (``2/|r|²`` for pure DQS; 0 where ``r = 0``). f: the factor. infl: ``(m,)`` or
    ``None`` when all are 1.
    """

    lin: np.ndarray | None
    move: np.ndarray | None
    keep: np.ndarray | None
    real: np.ndarray | None
    dual: np.ndarray | None
    norm_sq: np.ndarray | None
    twice: np.ndarray | None
    f: float | np.ndarray
    infl: np.ndarray | None


def blend(
    p: np.ndarray,
    idx: np.ndarray,
    w: np.ndarray,
    infl: np.ndarray | None,
    frame: Frame,
    f: float | np.ndarray,
    both: bool = False,
) -> Blended:
    """Blend one chunk: ``p`` ``(3, m)`` armature-space positions (planes; the scale pivots need them),
    ``idx``, ``w``: ``(m, K)``, ``infl``: ``(m,)`` or ``None`` when all are 1, ``f``: a float or ``(m,)``.
    ``both``: blend LBS and DQS whatever ``f`` (a frame prepared with ``both``)."""
    scalar = isinstance(f, float)
    lbs = both or not (scalar and f >= 1.0)
    dqs = both or not (scalar and f <= 0.0)
    hit, wide = None, False
    if dqs and frame.scaled is not None:
        hit = np.any(frame.scaled[idx], axis=1)
        wide = 3 * np.count_nonzero(hit) > len(hit)  # most of the chunk touches a scaled bone: blend pivots
    flipped = dqs and frame.pair_dots is not None
    rows = _flipped_indices(idx, w, frame.pair_dots) if flipped else idx
    g = np.take(frame.table(lbs, dqs, wide, flipped=flipped), rows, axis=0, mode="clip")  # valid: no checks
    planes = np.ascontiguousarray(np.einsum("mk,mkc->mc", w, g).T)
    m = planes.shape[1]
    lin = move = keep = real = dual = norm_sq = twice = None
    if lbs:
        matrix = planes[_LBS].reshape(3, 4, m)
        lin, move = matrix[:, :3], matrix[:, 3]
        keep = 1.0 - f if dqs and frame.keep is None else None
    if dqs:
        real, dual = _dual_quaternion_planes(rows, w, g[:, :, 12:] if lbs else g, planes, p, frame, hit, wide)
        norm_sq = np.einsum("cm,cm->m", real, real)
        twice = np.divide(2.0, norm_sq, out=np.zeros_like(norm_sq), where=norm_sq > 0)
        if lbs:
            twice *= f
    return Blended(lin, move, keep, real, dual, norm_sq, twice, f, infl)


def _turn(b: Blended, p: np.ndarray) -> np.ndarray:
    """``v × e + r_w·t_v − t_w·v`` with ``e = v × p + r_w·p + t_v``: the blended dual quaternion's move
    of ``p`` before the ``2/|r|²`` scale (``Q·p = p + 2·turn/|r|²``)."""
    rw, v, tw, tv = b.real[0], b.real[1:], b.dual[0], b.dual[1:]
    e = _cross(v, p)
    e += rw * p
    e += tv
    out = _cross(v, e)
    out += rw * tv
    out -= tw * v
    return out


def positions(b: Blended, p: np.ndarray) -> np.ndarray:
    """``M·p`` without building ``M``: LBS ``T·p``, and the dual quaternion applied as
    ``Q·p = p + 2·(v × e + r_w·t_v − t_w·v)/|r|²`` with ``e = v × p + r_w·p + t_v``."""
    out = None
    if b.lin is not None:
        out = apply_points(b.lin, b.move, p)
        if b.keep is not None:
            out *= b.keep
    if b.real is not None:
        q = _turn(b, p)
        q *= b.twice
        q += p if out is None else b.f * p
        out = q if out is None else out + q
    if b.infl is not None:
        out -= p
        out *= b.infl
        out += p
    return out


def positions_and_ends(b: Blended, p: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``M·p`` and its two terms, the pure LBS ``T·p`` and pure DQS ``Q·p`` (deform factors 0 and 1),
    for a chunk blended with ``both`` (no factor folded into the tables); influence applied to each."""
    lbs = apply_points(b.lin, b.move, p)
    dqs = _turn(b, p)
    dqs *= np.divide(2.0, b.norm_sq, out=np.zeros_like(b.norm_sq), where=b.norm_sq > 0)
    dqs += p
    out = lbs * b.keep
    out += dqs * b.f
    if b.infl is not None:
        for term in (out, lbs, dqs):
            term -= p
            term *= b.infl
            term += p
    return out, lbs, dqs


def matrices(b: Blended) -> tuple[np.ndarray, np.ndarray]:
    """The hybrid matrices as planes, ``(3, 3, m)`` linear part and ``(3, m)`` translation, influence
    applied (for normals and :func:`.skinning.skin_matrices`)."""
    m3, t = b.lin, b.move
    if b.keep is not None:
        m3, t = m3 * b.keep, t * b.keep
    if b.real is not None:
        m = b.real.shape[1]
        rw, v, tw, tv = b.real[0], b.real[1:], b.dual[0], b.dual[1:]
        u = v * b.twice
        rot = u[:, None] * v[None]  # 2·v·vᵀ/|r|², then the skew part 2·r_w·[v]ₓ/|r|² and the diagonal
        entries = rot.reshape(9, m)
        entries[_SKEW_ENTRY] += _SKEW_SIGN * np.take(u * rw, _SKEW_AXIS, 0)
        diagonal = rw * rw
        diagonal *= 2.0
        diagonal -= b.norm_sq
        diagonal *= 0.5 * b.twice
        entries[::4] += diagonal
        shift = _cross(v, tv)
        shift += rw * tv
        shift -= tw * v
        shift *= b.twice
        if m3 is not None:
            rot += m3
            shift += t
        m3, t = rot, shift
    if b.infl is not None:
        m3 = m3 * b.infl
        m3.reshape(9, -1)[::4] += 1.0 - b.infl
        t = t * b.infl
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
