"""Linear blend, dual quaternion and hybrid skinning (seed 000, Algorithm 1), vectorised.

Per vertex with normalised weights ``w_k`` on bones ``b_k`` and deform factor ``f``::

    T = sum_k w_k * A[b_k]                  (linear blend of 3x4 bone matrices)
    Q = matrix(normalise(sum_k ±w_k * dq[b_k]))   (dual quaternion linear blending)
    M = (1 - f) * T + f * Q
    position = M @ v,   normal = normalise(cofactor(M[:3, :3]) @ n)

The sign ``±`` follows Blender's armature deform: each bone's dual quaternion is negated when its
real part points away from the *running* sum, in the vertex's stored influence order. Scaled bones
use Blender's pivot form (see :mod:`.dualquat`). An ``influence`` per vertex (the Armature
modifier's mask vertex group, 0 for vertices whose weights sum to ≤ 1e-4) blends with the identity:
``M ← I + influence * (M - I)``, which is exactly what Blender does to positions.

Everything runs in armature space; :func:`skin` optionally maps mesh-local positions in and out,
as Blender's ``premat``/``postmat`` do, so non-rigid object transforms are handled exactly.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from .dualquat import bone_dual_quaternions

__all__ = [
    "BonePalette",
    "SkinBinding",
    "bone_palette",
    "cofactor_apply",
    "shutdown",
    "skin",
    "skin_matrices",
]

#: Vertices per chunk: keeps the per-chunk working set in the CPU cache.
CHUNK = 16384

#: Chunks run on this many threads (numpy releases the GIL in take/einsum/ufuncs), as Blender's own
#: Armature modifier uses every core.
THREADS = max(1, min(8, os.cpu_count() or 1))
_POOL: ThreadPoolExecutor | None = None


def shutdown() -> None:
    """Stop the worker threads (the add-on's unregister calls this; the pool restarts on demand)."""
    global _POOL
    if _POOL is not None:
        _POOL.shutdown(wait=True)
        _POOL = None


def _map_chunks(job, n: int) -> None:
    """Run ``job(start, end)`` over all chunks, on the thread pool when there is more than one."""
    global _POOL
    starts = range(0, n, CHUNK)
    if THREADS == 1 or len(starts) == 1:
        for s in starts:
            job(s, min(s + CHUNK, n))
        return
    if _POOL is None:
        _POOL = ThreadPoolExecutor(THREADS, thread_name_prefix="hybrid_skin")
    for _ in _POOL.map(lambda s: job(s, min(s + CHUNK, n)), starts):
        pass


@dataclass(frozen=True)
class SkinBinding:
    """Per-vertex influences, fixed at bind time.

    bone_indices: ``(N, K)`` int32 indices into the :class:`BonePalette` (padding entries have
        weight 0 and any valid index).
    weights: ``(N, K)`` float32, normalised to sum 1 per deformed vertex, in Blender's stored order.
    influence: ``(N,)`` float32 in [0, 1]: how much of the skinning applies (mask group × deformed).
    """

    bone_indices: np.ndarray
    weights: np.ndarray
    influence: np.ndarray

    def __post_init__(self) -> None:
        n, k = self.weights.shape
        if self.bone_indices.shape != (n, k) or self.influence.shape != (n,):
            raise ValueError(
                f"binding shapes disagree: indices {self.bone_indices.shape}, weights {self.weights.shape}, "
                f"influence {self.influence.shape}"
            )

    @property
    def vertex_count(self) -> int:
        return int(self.weights.shape[0])

    @property
    def max_influences(self) -> int:
        return int(self.weights.shape[1])


class BonePalette(NamedTuple):
    """Per-bone data for one frame, O(bones) to build.

    matrices: ``(B, 3, 4)`` float32 LBS deform matrices. real, dual: ``(B, 4)`` float32 dual quaternions.
    pivot: ``(B, 4, 3)`` float32 scale-pivot terms, or ``None`` if all bones are rigid.
    """

    matrices: np.ndarray
    real: np.ndarray
    dual: np.ndarray
    pivot: np.ndarray | None

    @property
    def bone_count(self) -> int:
        return int(self.matrices.shape[0])


def bone_palette(deform: np.ndarray, rest: np.ndarray) -> BonePalette:
    """Bone deform matrices ``(B, 4, 4)`` and rest frames ``(B, 4, 4)`` → palette for :func:`skin`."""
    deform = np.asarray(deform, dtype=np.float64)
    dq = bone_dual_quaternions(deform, rest)
    f32 = np.float32
    return BonePalette(
        np.ascontiguousarray(deform[:, :3, :], dtype=f32),
        np.ascontiguousarray(dq.real, dtype=f32),
        np.ascontiguousarray(dq.dual, dtype=f32),
        None if dq.pivot is None else np.ascontiguousarray(dq.pivot, dtype=f32),
    )


def _linear_blend(idx: np.ndarray, w: np.ndarray, pal: BonePalette) -> np.ndarray:
    """``(n, 3, 4)`` weighted sum of bone matrices."""
    out = w[:, 0, None, None] * pal.matrices[idx[:, 0]]
    for k in range(1, idx.shape[1]):
        out += w[:, k, None, None] * pal.matrices[idx[:, k]]
    return out


def _dual_quaternion_blend(idx: np.ndarray, w: np.ndarray, p: np.ndarray, pal: BonePalette) -> np.ndarray:
    """``(n, 3, 4)`` rigid matrices of the blended, normalised dual quaternions (Blender's sign rule)."""
    real = w[:, 0, None] * pal.real[idx[:, 0]]
    dual = w[:, 0, None] * pal.dual[idx[:, 0]]
    pivot = None if pal.pivot is None else w[:, 0, None, None] * pal.pivot[idx[:, 0]]
    for k in range(1, idx.shape[1]):
        bone_real = pal.real[idx[:, k]]
        flip = np.einsum("nc,nc->n", real, bone_real) < 0.0
        wk = np.where(flip, -w[:, k], w[:, k])
        real += wk[:, None] * bone_real
        dual += wk[:, None] * pal.dual[idx[:, k]]
        if pivot is not None:
            pivot += wk[:, None, None] * pal.pivot[idx[:, k]]
    if pivot is not None:
        dual += np.einsum("nij,nj->ni", pivot, p)
    return _dq_rows_to_matrices(real, dual)


def _dq_rows_to_matrices(real: np.ndarray, dual: np.ndarray) -> np.ndarray:
    """Un-normalised dual quaternions ``(n, 4)`` → ``(n, 3, 4)`` rigid matrices (Blender's mul_v3m3_dq)."""
    w, x, y, z = real.T
    t0, t1, t2, t3 = dual.T
    norm_sq = np.einsum("nc,nc->n", real, real)
    inv = np.divide(1.0, norm_sq, out=np.zeros_like(norm_sq), where=norm_sq > 0)
    out = np.empty((real.shape[0], 3, 4), dtype=real.dtype)
    out[:, :, :3] = _rotation_matrices(real, inv)
    out[:, 0, 3] = 2 * (-t0 * x + w * t1 - t2 * z + y * t3) * inv
    out[:, 1, 3] = 2 * (-t0 * y + t1 * z - x * t3 + w * t2) * inv
    out[:, 2, 3] = 2 * (-t0 * z + x * t2 + w * t3 - t1 * y) * inv
    return out


def _rotation_matrices(real: np.ndarray, inv_norm_sq: np.ndarray) -> np.ndarray:
    """``(n, 3, 3)`` rotations of un-normalised quaternions ``(w, x, y, z)`` given ``1 / |q|²``."""
    w, x, y, z = real.T
    ww, xx, yy, zz = w * w, x * x, y * y, z * z
    xy, xz, yz, wx, wy, wz = x * y, x * z, y * z, w * x, w * y, w * z
    r = np.empty((real.shape[0], 3, 3), dtype=real.dtype)
    r[:, 0, 0] = ww + xx - yy - zz
    r[:, 0, 1] = 2 * (xy - wz)
    r[:, 0, 2] = 2 * (xz + wy)
    r[:, 1, 0] = 2 * (xy + wz)
    r[:, 1, 1] = ww + yy - xx - zz
    r[:, 1, 2] = 2 * (yz - wx)
    r[:, 2, 0] = 2 * (xz - wy)
    r[:, 2, 1] = 2 * (yz + wx)
    r[:, 2, 2] = ww + zz - xx - yy
    r *= inv_norm_sq[:, None, None]
    return r


def _as_vertex_array(value: float | np.ndarray, n: int, name: str) -> np.ndarray | float:
    if np.ndim(value) == 0:
        return float(value)
    arr = np.asarray(value, dtype=np.float32)
    if arr.shape != (n,):
        raise ValueError(f"{name} must be a scalar or have shape ({n},), got {arr.shape}")
    return arr


def _chunk_matrices(
    p: np.ndarray, idx: np.ndarray, w: np.ndarray, infl: np.ndarray, pal: BonePalette, f: float | np.ndarray
) -> np.ndarray:
    """Per-vertex hybrid matrices for one chunk (armature space), influence applied."""
    scalar_f = isinstance(f, float)
    if scalar_f and f <= 0.0:
        m = _linear_blend(idx, w, pal)
    elif scalar_f and f >= 1.0:
        m = _dual_quaternion_blend(idx, w, p, pal)
    else:
        fv = f if scalar_f else f[:, None, None]
        m = _linear_blend(idx, w, pal)
        m *= 1.0 - fv
        m += fv * _dual_quaternion_blend(idx, w, p, pal)
    if not np.all(infl == 1.0):
        a = infl[:, None, None]
        m *= a
        m[:, 0, 0] += 1.0 - infl
        m[:, 1, 1] += 1.0 - infl
        m[:, 2, 2] += 1.0 - infl
    return m


def _bone_table(pal: BonePalette) -> np.ndarray:
    """``(B, 20)`` rows ``[LBS matrix (12) | real (4) | dual (4)]``, plus ``pivot (12)`` when some bone
    is scaled: one gather for all per-bone data."""
    b = pal.bone_count
    parts = [pal.matrices.reshape(b, 12), pal.real, pal.dual]
    return np.ascontiguousarray(np.concatenate(parts, 1))


def _chunk_skin(
    p: np.ndarray,
    idx: np.ndarray,
    w: np.ndarray,
    infl: np.ndarray,
    pal: BonePalette,
    table: np.ndarray,
    f: float | np.ndarray,
    nrm: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray | None]:
    """Hybrid positions (and un-normalised normals) of one chunk without building per-vertex 3x4
    matrices: the hot path of :func:`skin`, same formulas as :func:`_chunk_matrices`.

    Positions use ``M @ p = (1-f)·T @ p + f·Q @ p``. Normals need only the 3x3 part of ``M``: the
    blended LBS 3x3 and the rotation of the blended dual quaternion's real part (the dual part and
    the scale pivots move positions only), mixed, influence applied, then ``cofactor(M3) @ n``.
    """
    n, k_count = idx.shape
    scalar_f = isinstance(f, float)
    g = np.take(table, idx, axis=0)  # (n, K, 20), far faster than fancy indexing
    out = lin = rot = None
    if not (scalar_f and f >= 1.0):
        lin = np.einsum("nk,nkc->nc", w, g[:, :, :12]).reshape(n, 3, 4)
        out = np.einsum("nij,nj->ni", lin[:, :, :3], p)
        out += lin[:, :, 3]
    if not (scalar_f and f <= 0.0):
        q, real, scale = _dual_quaternion_positions(p, idx, w, g, pal)
        if nrm is not None:
            rot = _rotation_matrices(real, 0.5 * scale)
        if out is None:
            out = q
        else:
            q -= out
            q *= f if scalar_f else f[:, None]
            out += q
    partial = not np.all(infl == 1.0)
    if partial:
        out -= p
        out *= infl[:, None]
        out += p
    if nrm is None:
        return out, None
    if rot is None:
        m3 = lin[:, :, :3]
    elif lin is None:
        m3 = rot
    else:
        m3 = lin[:, :, :3] * ((1.0 - f) if scalar_f else (1.0 - f)[:, None, None])
        rot *= f if scalar_f else f[:, None, None]
        m3 += rot
    if partial:
        m3 *= infl[:, None, None]
        for i in range(3):
            m3[:, i, i] += 1.0 - infl
    return out, _cofactor_times(m3, nrm)


def _cofactor_times(m3: np.ndarray, nrm: np.ndarray) -> np.ndarray:
    """``cofactor(m3) @ n`` per vertex: rows ``(r1 × r2, r2 × r0, r0 × r1) · n``, written out per
    component (``np.cross`` and ``np.stack`` cost more than the arithmetic at this size)."""
    a0, a1, a2 = m3[:, 0, 0], m3[:, 0, 1], m3[:, 0, 2]
    b0, b1, b2 = m3[:, 1, 0], m3[:, 1, 1], m3[:, 1, 2]
    c0, c1, c2 = m3[:, 2, 0], m3[:, 2, 1], m3[:, 2, 2]
    nx, ny, nz = nrm[:, 0], nrm[:, 1], nrm[:, 2]
    out = np.empty_like(nrm)
    out[:, 0] = (b1 * c2 - b2 * c1) * nx + (b2 * c0 - b0 * c2) * ny + (b0 * c1 - b1 * c0) * nz
    out[:, 1] = (c1 * a2 - c2 * a1) * nx + (c2 * a0 - c0 * a2) * ny + (c0 * a1 - c1 * a0) * nz
    out[:, 2] = (a1 * b2 - a2 * b1) * nx + (a2 * b0 - a0 * b2) * ny + (a0 * b1 - a1 * b0) * nz
    return out


def _dual_quaternion_positions(
    p: np.ndarray, idx: np.ndarray, w: np.ndarray, g: np.ndarray, pal: BonePalette
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``Q @ p`` of the blended dual quaternions (Blender's sign rule), applied without a matrix:
    ``p + 2·(v × e + r_w·t_v − t_w·v) / |r|²`` with ``e = v × p + r_w·p + t_v``.
    Also returns the blended real part ``r`` and ``2 / |r|²`` (0 where ``r = 0``) for the normals."""
    real = w[:, 0, None] * g[:, 0, 12:16]
    signed = w.copy()
    for k in range(1, idx.shape[1]):
        bone = g[:, k, 12:16]
        flip = np.einsum("nc,nc->n", real, bone) < 0.0
        # Not ``np.negative(signed[:, k], out=signed[:, k], where=flip)``: numpy 2.x can mis-mask an
        # in-place ufunc on a strided column (wrong signs on real rigs, seen with numpy 2.4).
        signed[:, k] = np.where(flip, -signed[:, k], signed[:, k])
        real += signed[:, k, None] * bone
    dual = np.einsum("nk,nkc->nc", signed, g[:, :, 16:20])
    if pal.pivot is not None:
        pivot = np.einsum("nk,nkij->nij", signed, np.take(pal.pivot, idx, axis=0))
        dual += np.einsum("nij,nj->ni", pivot, p)
    norm_sq = np.einsum("nc,nc->n", real, real)
    scale = np.divide(2.0, norm_sq, out=np.zeros_like(norm_sq), where=norm_sq > 0)
    rw, x, y, z = real.T
    tw, tx, ty, tz = dual.T
    px, py, pz = p.T
    ex = y * pz - z * py + rw * px + tx
    ey = z * px - x * pz + rw * py + ty
    ez = x * py - y * px + rw * pz + tz
    out = np.empty_like(p)
    out[:, 0] = (y * ez - z * ey + rw * tx - tw * x) * scale + px
    out[:, 1] = (z * ex - x * ez + rw * ty - tw * y) * scale + py
    out[:, 2] = (x * ey - y * ex + rw * tz - tw * z) * scale + pz
    return out, real, scale


def cofactor_apply(m: np.ndarray, n: np.ndarray) -> np.ndarray:
    """``cofactor(m) @ n`` for ``(n, 3, ≥3)`` matrices: the normal transform without an inverse."""
    r0, r1, r2 = m[:, 0, :3], m[:, 1, :3], m[:, 2, :3]
    return np.stack(
        [
            np.einsum("nc,nc->n", np.cross(r1, r2), n),
            np.einsum("nc,nc->n", np.cross(r2, r0), n),
            np.einsum("nc,nc->n", np.cross(r0, r1), n),
        ],
        -1,
    )


def _normalise(v: np.ndarray) -> np.ndarray:
    length = np.sqrt(np.einsum("ni,ni->n", v, v))[:, None]
    return np.divide(v, length, out=np.zeros_like(v), where=length > 0)


def _cofactor(m3: np.ndarray) -> np.ndarray:
    return np.stack([np.cross(m3[1], m3[2]), np.cross(m3[2], m3[0]), np.cross(m3[0], m3[1])])


def skin_matrices(
    positions: np.ndarray,
    binding: SkinBinding,
    palette: BonePalette,
    deform_factor: float | np.ndarray,
) -> np.ndarray:
    """Per-vertex hybrid matrices ``(N, 3, 4)`` in armature space (positions in armature space)."""
    p = np.ascontiguousarray(positions, dtype=np.float32)
    n = p.shape[0]
    f = _as_vertex_array(deform_factor, n, "deform_factor")
    out = np.empty((n, 3, 4), dtype=np.float32)
    for s in range(0, n, CHUNK):
        e = min(s + CHUNK, n)
        fc = f if isinstance(f, float) else f[s:e]
        out[s:e] = _chunk_matrices(
            p[s:e], binding.bone_indices[s:e], binding.weights[s:e], binding.influence[s:e], palette, fc
        )
    return out


def skin(
    positions: np.ndarray,
    binding: SkinBinding,
    palette: BonePalette,
    deform_factor: float | np.ndarray,
    normals: np.ndarray | None = None,
    target_to_armature: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray | None]:
    """Skin rest ``positions`` ``(N, 3)`` (and optional unit ``normals``) → ``(positions, normals)``.

    ``target_to_armature`` maps the mesh object's local space into the armature object's space
    (Blender's premat); results are returned in the mesh's local space. ``deform_factor`` is a scalar
    or ``(N,)`` array in [0, 1]. Output is float32.
    """
    p = np.ascontiguousarray(positions, dtype=np.float32)
    n = p.shape[0]
    if p.shape != (n, 3) or binding.vertex_count != n:
        raise ValueError(f"positions {p.shape} do not match a binding of {binding.vertex_count} vertices")
    f = _as_vertex_array(deform_factor, n, "deform_factor")
    pre = post = None
    if target_to_armature is not None:
        pre = np.asarray(target_to_armature, dtype=np.float64)
        if not np.allclose(pre, np.eye(4), atol=0.0, rtol=0.0):
            post = np.linalg.inv(pre)
            p = (p @ pre[:3, :3].T.astype(np.float32)) + pre[:3, 3].astype(np.float32)
        else:
            pre = None
    nrm = None if normals is None else np.ascontiguousarray(normals, dtype=np.float32)
    if nrm is not None and pre is not None:
        nrm = nrm @ _cofactor(pre[:3, :3]).T.astype(np.float32)

    out_p = np.empty((n, 3), dtype=np.float32)
    out_n = None if nrm is None else np.empty((n, 3), dtype=np.float32)
    table = _bone_table(palette)

    def job(s: int, e: int) -> None:
        fc = f if isinstance(f, float) else f[s:e]
        idx, w, infl = binding.bone_indices[s:e], binding.weights[s:e], binding.influence[s:e]
        chunk_n = None if nrm is None else nrm[s:e]
        out_p[s:e], normal = _chunk_skin(p[s:e], idx, w, infl, palette, table, fc, chunk_n)
        if normal is not None:  # normalised here (in cache, on the pool) unless postmat follows
            out_n[s:e] = normal if post is not None else _normalise(normal)

    _map_chunks(job, n)
    if post is not None:
        out_p = (out_p @ post[:3, :3].T.astype(np.float32)) + post[:3, 3].astype(np.float32)
        if out_n is not None:
            out_n = _normalise(out_n @ _cofactor(post[:3, :3]).T.astype(np.float32))
    return out_p, out_n
