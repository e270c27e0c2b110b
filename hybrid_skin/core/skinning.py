"""Linear blend, dual quaternion and hybrid skinning (Yin 2019, Algorithm 1), vectorised.

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

The arithmetic lives in :mod:`.skin_kernel` (component-major planes, the running-sum rule only where
a sign can flip, scale pivots only where a bone is scaled); this module splits a mesh into chunks and
runs them on a small thread pool.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import cached_property
from typing import NamedTuple

import numpy as np

from . import skin_kernel, skin_plan
from .dualquat import bone_dual_quaternions
from .small_linalg import inverse_affine, unit

__all__ = [
    "BonePalette",
    "SkinBinding",
    "bone_palette",
    "cofactor_apply",
    "map_chunks",
    "shutdown",
    "skin",
    "skin_matrices",
    "skin_with_ends",
]

#: Most vertices per chunk: a chunk's planes stay in the CPU's L2 cache.
CHUNK = 16384

#: Fewer vertices than this per chunk cost more in numpy's per-call overhead and in waking a pool thread
#: (right after Blender's own evaluation, as in use) than a second core gains: measured on 2 cores, a
#: 10k mesh takes 0.56 ms on one thread and 0.69 ms on two; 20k breaks even; 100k 5.7 ms vs 3.9 ms.
MIN_SPLIT = 8192

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


def chunk_bounds(n: int) -> list[tuple[int, int]]:
    """Equal chunks of at most :data:`CHUNK` vertices, a multiple of :data:`THREADS` of them once a
    mesh is big enough to split (small meshes use every core too)."""
    count = max(1, -(-n // CHUNK))
    if THREADS > 1 and n >= 2 * MIN_SPLIT:
        per_thread = max(1, -(-count // THREADS))
        count = min(THREADS * per_thread, n // MIN_SPLIT)
    size = -(-n // count) if n else 0
    return [(s, min(s + size, n)) for s in range(0, n, size)] if n else []


def map_chunks(job, n: int) -> None:
    """Run ``job(start, end)`` over all chunks, on the thread pool when there is more than one."""
    global _POOL
    bounds = chunk_bounds(n)
    if THREADS == 1 or len(bounds) <= 1:
        for s, e in bounds:
            job(s, e)
        return
    if _POOL is None:
        _POOL = ThreadPoolExecutor(THREADS, thread_name_prefix="hybrid_skin")
    for _ in _POOL.map(lambda bound: job(*bound), bounds):
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

    @cached_property
    def kernel_plan(self) -> skin_plan.BindingPlan:
        """Bone pairs that share a vertex, and whether every influence is 1 (computed on first use)."""
        return skin_plan.plan_binding(self.bone_indices, self.weights, self.influence)


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


def _cofactor(m3: np.ndarray) -> np.ndarray:
    return np.stack([np.cross(m3[1], m3[2]), np.cross(m3[2], m3[0]), np.cross(m3[0], m3[1])])


def _as_vertex_array(value: float | np.ndarray, n: int, name: str) -> np.ndarray | float:
    if np.ndim(value) == 0:
        return float(value)
    arr = np.ascontiguousarray(value, dtype=np.float32)
    if arr.shape != (n,):
        raise ValueError(f"{name} must be a scalar or have shape ({n},), got {arr.shape}")
    return arr


def _affine(matrix: np.ndarray, planes: np.ndarray) -> np.ndarray:
    """``matrix[:3, :3] @ planes + matrix[:3, 3]`` for a constant ``(3, 4)`` float32 matrix and ``(3, m)``
    planes."""
    out = matrix[:, 0, None] * planes[0]
    out += matrix[:, 1, None] * planes[1]
    out += matrix[:, 2, None] * planes[2]
    out += matrix[:, 3, None]
    return out


def _frame(
    binding: SkinBinding, palette: BonePalette, factor: float | np.ndarray, both: bool = False
) -> skin_plan.Frame:
    plan = binding.kernel_plan
    m, real, dual, pivot = palette.matrices, palette.real, palette.dual, palette.pivot
    return skin_plan.prepare(m, real, dual, pivot, plan, factor, both=both)


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
    frame = _frame(binding, palette, f)
    full = binding.kernel_plan.full_influence

    def job(s: int, e: int) -> None:
        fc = f if isinstance(f, float) else f[s:e]
        infl = None if full else binding.influence[s:e]
        planes = np.ascontiguousarray(p[s:e].T)
        blended = skin_kernel.blend(planes, binding.bone_indices[s:e], binding.weights[s:e], infl, frame, fc)
        m3, t = skin_kernel.matrices(blended)
        out[s:e, :, :3] = m3.transpose(2, 0, 1)
        out[s:e, :, 3] = t.T

    map_chunks(job, n)
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
    moved, turned, _ = _skin(positions, binding, palette, deform_factor, normals, target_to_armature, False)
    return moved, turned


def skin_with_ends(
    positions: np.ndarray,
    binding: SkinBinding,
    palette: BonePalette,
    deform_factor: float | np.ndarray,
    normals: np.ndarray | None = None,
    target_to_armature: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray | None, np.ndarray]:
    """:func:`skin`, and the positions at deform factors 0 and 1 ``(2, N, 3)`` from the same blend.

    Positions are affine in the factor: ``M·v = (1 − f)·T·v + f·Q·v``, so the pure LBS and pure DQS
    positions are the two terms a hybrid skin computes anyway (one gather and blend instead of three
    skins). They equal :func:`skin` at 0 and 1, and the positions returned here equal :func:`skin` at
    ``deform_factor``, to float32 rounding (the terms are mixed per vertex rather than folding ``1 − f``
    into the bone table).
    """
    return _skin(positions, binding, palette, deform_factor, normals, target_to_armature, True)


def _skin(positions, binding, palette, deform_factor, normals, target_to_armature, ends: bool):
    p = np.ascontiguousarray(positions, dtype=np.float32)
    n = p.shape[0]
    if p.shape != (n, 3) or binding.vertex_count != n:
        raise ValueError(f"positions {p.shape} do not match a binding of {binding.vertex_count} vertices")
    f = _as_vertex_array(deform_factor, n, "deform_factor")
    pre = post = cof_pre = cof_post = None
    if target_to_armature is not None:
        t2a = np.asarray(target_to_armature, dtype=np.float64)
        if not np.array_equal(t2a, np.eye(4)):
            inv = inverse_affine(t2a)
            pre, post = t2a[:3].astype(np.float32), inv[:3].astype(np.float32)
            no_shift = np.zeros((3, 1))
            cof_pre = np.hstack([_cofactor(t2a[:3, :3]), no_shift]).astype(np.float32)
            cof_post = np.hstack([_cofactor(inv[:3, :3]), no_shift]).astype(np.float32)
    nrm = None if normals is None else np.ascontiguousarray(normals, dtype=np.float32)
    if nrm is not None and nrm.shape != (n, 3):
        raise ValueError(f"normals {nrm.shape} do not match {n} positions")

    out_p = np.empty((n, 3), dtype=np.float32)
    out_n = None if nrm is None else np.empty((n, 3), dtype=np.float32)
    out_ends = np.empty((2, n, 3), dtype=np.float32) if ends else None
    frame = _frame(binding, palette, f, both=ends)
    full = binding.kernel_plan.full_influence

    def back(planes: np.ndarray) -> np.ndarray:
        return (planes if post is None else _affine(post, planes)).T

    def job(s: int, e: int) -> None:
        fc = f if isinstance(f, float) else f[s:e]
        infl = None if full else binding.influence[s:e]
        planes = np.ascontiguousarray(p[s:e].T) if pre is None else _affine(pre, p[s:e].T)
        blended = skin_kernel.blend(
            planes, binding.bone_indices[s:e], binding.weights[s:e], infl, frame, fc, both=ends
        )
        if ends:
            moved, lbs, dqs = skin_kernel.positions_and_ends(blended, planes)
            out_ends[0, s:e], out_ends[1, s:e] = back(lbs), back(dqs)
        else:
            moved = skin_kernel.positions(blended, planes)
        out_p[s:e] = back(moved)
        if out_n is not None:
            rest = np.ascontiguousarray(nrm[s:e].T) if cof_pre is None else _affine(cof_pre, nrm[s:e].T)
            turned = skin_kernel.cofactor_normals(skin_kernel.matrices(blended)[0], rest)
            if cof_post is not None:
                turned = _affine(cof_post, turned)
            out_n[s:e] = unit(turned, axis=0).T

    map_chunks(job, n)
    return out_p, out_n, out_ends
