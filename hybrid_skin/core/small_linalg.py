"""Small linear algebra in closed form, for code that runs every frame: inverses and unit vectors.

``numpy.linalg`` hands even a 3×3 to LAPACK, which Blender's numpy runs on OpenBLAS threads: inside
Blender, with its own threads busy, one such call on a handful of matrices took 70–170 ms where the
arithmetic takes microseconds (measured in ``make bench``: the GPU preview's Auto frame). These are
elementwise numpy, vectorised over any leading dimensions, and exact to rounding for well-conditioned
input (singular input gives inf/nan, as a division by a zero determinant does; callers that may meet it
handle it before).
"""

from __future__ import annotations

import numpy as np

__all__ = ["cross3", "inverse3", "inverse_affine", "per_vector", "squared_lengths", "unit"]


def cross3(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``np.cross`` over the last axis of ``(..., 3)`` arrays (the same products in the same order, so the
    same bits) without its axis bookkeeping: per-frame paths take it on a palette of bones, where numpy's
    per-call overhead is what costs."""
    out = np.empty(np.broadcast_shapes(np.shape(a), np.shape(b)), dtype=np.result_type(a, b))
    out[..., 0] = a[..., 1] * b[..., 2] - a[..., 2] * b[..., 1]
    out[..., 1] = a[..., 2] * b[..., 0] - a[..., 0] * b[..., 2]
    out[..., 2] = a[..., 0] * b[..., 1] - a[..., 1] * b[..., 0]
    return out


def inverse3(a: np.ndarray) -> np.ndarray:
    """Inverse of ``(..., 3, 3)`` matrices: the adjugate (cross products of the columns) over the
    determinant."""
    a = np.asarray(a, dtype=np.float64)
    c0, c1, c2 = a[..., :, 0], a[..., :, 1], a[..., :, 2]
    rows = np.stack([cross3(c1, c2), cross3(c2, c0), cross3(c0, c1)], axis=-2)
    det = np.einsum("...i,...i->...", c0, rows[..., 0, :])
    return rows / det[..., None, None]


def inverse_affine(m: np.ndarray) -> np.ndarray:
    """Inverse of ``(..., 4, 4)`` affine matrices (last row 0, 0, 0, 1): ``[R⁻¹, -R⁻¹ t]``."""
    m = np.asarray(m, dtype=np.float64)
    out = np.zeros(m.shape, dtype=np.float64)
    r = inverse3(m[..., :3, :3])
    out[..., :3, :3] = r
    out[..., :3, 3] = -np.einsum("...ij,...j->...i", r, m[..., :3, 3])
    out[..., 3, 3] = 1.0
    return out



def squared_lengths(v: np.ndarray, *, axis: int = -1) -> np.ndarray:
    """``x*x + y*y + z*z`` of the vectors along ``axis``, summed left to right.

    The same numbers as ``np.linalg.norm(v, axis=axis) ** 2`` before its square root, and for float32
    as ``einsum("...i,...i->...", v, v)`` (float64 einsum pairs its terms differently), at a third
    to a fifth of their cost: one long loop per component instead of numpy's innermost loop over three.
    """
    parts = np.moveaxis(np.asarray(v), axis, 0)
    out = np.multiply(parts[0], parts[0])
    for c in parts[1:]:
        out += c * c
    return out


def per_vector(op: np.ufunc, v: np.ndarray, s: np.ndarray) -> np.ndarray:
    """``op(v, s[..., None])`` for ``(..., 3)`` vectors and per-vector scalars ``s``, one component at
    a time: numpy's innermost loop would otherwise run over the 3 components, and its overhead then
    costs about as much as the arithmetic (the values are the same)."""
    out = np.empty(np.broadcast(v, s[..., None]).shape, dtype=np.result_type(v, s))
    for c in range(v.shape[-1]):
        op(v[..., c], s, out=out[..., c])
    return out


def unit(v: np.ndarray, *, axis: int = -1, tiny: float = 0.0) -> np.ndarray:
    """``v`` over its length along ``axis`` (the last, or 0 for ``(3, m)`` column layouts).

    The one zero rule of the add-on: a vector whose squared length is ``<= tiny`` comes out zero (signed
    zeros), never NaN. ``tiny=0`` keeps every non-zero vector; Blender's ``normalize_v3`` treats squared
    lengths up to ``1e-35`` as zero, and code that must match it passes that. Dividing by an infinite
    length instead of masking the division keeps it a plain (fast) divide, one component at a time.
    """
    v = np.asarray(v)
    squared = squared_lengths(v, axis=axis)
    length = np.sqrt(squared)
    length[squared <= tiny] = np.inf
    out = np.empty_like(v)
    parts, out_parts = np.moveaxis(v, axis, 0), np.moveaxis(out, axis, 0)
    for c in range(parts.shape[0]):
        np.divide(parts[c], length, out=out_parts[c])
    return out
