"""Inverses of small matrices in closed form, for code that runs every frame.

``numpy.linalg`` hands even a 3×3 to LAPACK, which Blender's numpy runs on OpenBLAS threads: inside
Blender, with its own threads busy, one such call on a handful of matrices took 70–170 ms where the
arithmetic takes microseconds (measured in ``make bench``: the GPU preview's Auto frame). These are
elementwise numpy, vectorised over any leading dimensions, and exact to rounding for well-conditioned
input (singular input gives inf/nan, as a division by a zero determinant does; callers that may meet it
handle it before).
"""

from __future__ import annotations

import numpy as np

__all__ = ["inverse3", "inverse_affine"]


def inverse3(a: np.ndarray) -> np.ndarray:
    """Inverse of ``(..., 3, 3)`` matrices: the adjugate (cross products of the columns) over the
    determinant."""
    a = np.asarray(a, dtype=np.float64)
    c0, c1, c2 = a[..., :, 0], a[..., :, 1], a[..., :, 2]
    rows = np.stack([np.cross(c1, c2), np.cross(c2, c0), np.cross(c0, c1)], axis=-2)
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
