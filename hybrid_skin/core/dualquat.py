"""Quaternions and unit dual quaternions, vectorised over bones.

Conventions used everywhere in ``hybrid_skin.core``:

* Matrices act on column vectors, ``p' = M @ p`` (Blender's mathutils convention); arrays of matrices
  have shape ``(..., 4, 4)`` or ``(..., 3, 4)``.
* Quaternions are ``(w, x, y, z)``.
* A dual quaternion is a pair ``(real, dual)`` of quaternions with ``dual = 0.5 * (0, t) * real``.

Bones that are not rigid (scaled or sheared) cannot be a dual quaternion. Blender's Preserve Volume
splits such a deform matrix into a rotation about the bone's rest frame and a *scale matrix*, and at
skinning time folds the scale's effect at the vertex (the "pivot") into the translation. We reproduce
that split exactly (see :func:`bone_dual_quaternions`), so our DQS equals Blender's for scaled bones too.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from .small_linalg import cross3, unit

#: Blender's ``normalize_v3`` leaves a vector whose squared length is at most this unchanged (zero).
BLENDER_TINY_SQUARED = 1e-35

__all__ = [
    "BoneDualQuaternions",
    "bone_dual_quaternions",
    "dual_quaternion_to_matrix",
    "quaternion_from_matrix",
    "quaternion_multiply",
    "quaternion_to_matrix",
    "rigid_to_dual_quaternion",
]

# Blender's ``is_orthonormal_m3`` tolerances: 1e-5 on the off-diagonal and on the diagonal of the Gram
# matrix (Blender 2.7x used 1.5·FLT_EPSILON for the diagonal; 4.x and 5.x use 1e-5, so float32 rounding of
# a pose matrix, or a scale of 1 + 3e-6, leaves a bone rigid).
_ORTHOGONAL_EPS = 1e-5
_UNIT_EPS = 1e-5
_SCALE_EPS_SQ = 1e-4**2


def quaternion_from_matrix(m: np.ndarray, *, blender_branch: bool = False) -> np.ndarray:
    """Rotation matrices ``(..., 3, 3)`` → unit quaternions ``(..., 4)`` with ``w >= 0``.

    Columns are normalised first and a negative determinant is negated, as Blender's
    ``mat4_to_quat`` does; the canonical sign (``w >= 0``) matters because dual quaternion
    blending decides antipodality from signs. A zero matrix is no rotation.

    The formula is chosen from the largest of the four diagonal combinations (Shepperd), which is the
    most accurate for a matrix that is not quite a rotation (what the texture formats and their shaders
    use). ``blender_branch`` chooses it by signs instead, as Blender's ``mat3_normalized_to_quat_fast``
    does: the same quaternion for a rotation, and Blender's own for a degenerate matrix (the
    orthogonalised axes of a bone scaled to 0 on some axes).
    """
    m = np.asarray(m, dtype=np.float64)
    m = m / np.maximum(np.linalg.norm(m, axis=-2, keepdims=True), 1e-30)
    det = np.linalg.det(m)
    m = np.where((det < 0)[..., None, None], -m, m)
    m00, m11, m22 = m[..., 0, 0], m[..., 1, 1], m[..., 2, 2]
    cand = np.stack([1 + m00 + m11 + m22, 1 + m00 - m11 - m22, 1 - m00 + m11 - m22, 1 - m00 - m11 + m22], -1)
    if blender_branch:  # Mike Day's choice; a zero matrix takes the W branch: no rotation (Blender #101848)
        best = np.where(m22 < 0, np.where(m00 > m11, 1, 2), np.where(m00 < -m11, 3, 0))
    else:
        best = np.argmax(cand, axis=-1)
    s = 2.0 * np.sqrt(np.maximum(np.take_along_axis(cand, best[..., None], -1)[..., 0], 1e-30))
    r21, r12 = m[..., 2, 1], m[..., 1, 2]
    r02, r20 = m[..., 0, 2], m[..., 2, 0]
    r10, r01 = m[..., 1, 0], m[..., 0, 1]
    w_case = np.stack([0.25 * s, (r21 - r12) / s, (r02 - r20) / s, (r10 - r01) / s], -1)
    x_case = np.stack([(r21 - r12) / s, 0.25 * s, (r01 + r10) / s, (r02 + r20) / s], -1)
    y_case = np.stack([(r02 - r20) / s, (r01 + r10) / s, 0.25 * s, (r12 + r21) / s], -1)
    z_case = np.stack([(r10 - r01) / s, (r02 + r20) / s, (r12 + r21) / s, 0.25 * s], -1)
    cases = np.stack([w_case, x_case, y_case, z_case], -2)
    q = np.take_along_axis(cases, best[..., None, None], -2)[..., 0, :]
    q = np.where((q[..., :1] < 0), -q, q)
    length = np.linalg.norm(q, axis=-1, keepdims=True)
    identity = np.array([1.0, 0.0, 0.0, 0.0])
    return np.divide(q, length, out=np.broadcast_to(identity, q.shape).copy(), where=length > 1e-30)


def quaternion_to_matrix(q: np.ndarray) -> np.ndarray:
    """Quaternions ``(..., 4)`` (any length) → rotation matrices ``(..., 3, 3)`` of the normalised q."""
    q = np.asarray(q, dtype=np.float64)
    q = q / np.linalg.norm(q, axis=-1, keepdims=True)
    w, x, y, z = np.moveaxis(q, -1, 0)
    return np.stack(
        [
            np.stack([1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)], -1),
            np.stack([2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)], -1),
            np.stack([2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)], -1),
        ],
        -2,
    )


def quaternion_multiply(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Hamilton product ``a * b`` of quaternion arrays (broadcasting)."""
    aw, ax, ay, az = np.moveaxis(np.asarray(a), -1, 0)
    bw, bx, by, bz = np.moveaxis(np.asarray(b), -1, 0)
    return np.stack(
        [
            aw * bw - ax * bx - ay * by - az * bz,
            aw * bx + ax * bw + ay * bz - az * by,
            aw * by - ax * bz + ay * bw + az * bx,
            aw * bz + ax * by - ay * bx + az * bw,
        ],
        -1,
    )


def _translation_dual(real: np.ndarray, t: np.ndarray) -> np.ndarray:
    """Dual part ``0.5 * (0, t) * real`` for translation ``t`` applied after rotation ``real``."""
    zeros = np.zeros(t.shape[:-1] + (1,), dtype=t.dtype)
    return 0.5 * quaternion_multiply(np.concatenate([zeros, t], -1), real)


def rigid_to_dual_quaternion(m: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Rigid matrices ``(..., 4, 4)`` → ``(real, dual)`` unit dual quaternions (real part ``w >= 0``)."""
    m = np.asarray(m, dtype=np.float64)
    real = quaternion_from_matrix(m[..., :3, :3])
    return real, _translation_dual(real, m[..., :3, 3])


def dual_quaternion_to_matrix(real: np.ndarray, dual: np.ndarray) -> np.ndarray:
    """Dual quaternions (any non-zero length) → rigid ``(..., 4, 4)`` matrices of the normalised DQ.

    Only the part of ``dual`` orthogonal to ``real`` contributes to the translation, which is what
    normalising a blended dual quaternion requires (Kavan et al. 2008, §3).
    """
    real = np.asarray(real, dtype=np.float64)
    dual = np.asarray(dual, dtype=np.float64)
    norm_sq = np.sum(real * real, axis=-1)
    conj = real * np.array([1.0, -1.0, -1.0, -1.0])
    t = 2.0 * quaternion_multiply(dual, conj)[..., 1:] / norm_sq[..., None]
    out = np.zeros(real.shape[:-1] + (4, 4), dtype=np.float64)
    out[..., :3, :3] = quaternion_to_matrix(real)
    out[..., :3, 3] = t
    out[..., 3, 3] = 1.0
    return out


def _left_multiply_matrix(q: np.ndarray) -> np.ndarray:
    """``(..., 4, 3)`` matrix ``L`` with ``q * (0, d) == L @ d`` (used to fold a translation into a DQ)."""
    w, x, y, z = np.moveaxis(q, -1, 0)
    return np.stack(
        [
            np.stack([-x, -y, -z], -1),
            np.stack([w, -z, y], -1),
            np.stack([z, w, -x], -1),
            np.stack([-y, x, w], -1),
        ],
        -2,
    )


def _is_rigid(deform: np.ndarray, rest: np.ndarray) -> np.ndarray:
    """Blender's test in ``mat4_to_dquat`` for "this deform matrix carries no scale"."""
    m3 = deform[..., :3, :3]
    gram = np.swapaxes(m3, -1, -2) @ m3
    off = np.abs(gram[..., [0, 0, 1], [1, 2, 2]]).max(-1)
    unit = np.abs(np.diagonal(gram, axis1=-2, axis2=-1) - 1.0).max(-1)
    orthonormal = (off <= _ORTHOGONAL_EPS) & (unit <= _UNIT_EPS)
    size = np.linalg.norm((deform @ rest)[..., :3, :3], axis=-2)
    unscaled = np.sum((size - 1.0) ** 2, axis=-1) <= _SCALE_EPS_SQ
    return orthonormal & (np.linalg.det(deform) >= 0.0) & unscaled


def _affine_inverse(m: np.ndarray) -> np.ndarray:
    """Inverse of affine ``(..., 4, 4)`` matrices (last row ``0 0 0 1``) from the 3x3 adjugate: a few
    vectorised products instead of one LAPACK solve per matrix (which costs ~10 µs a bone)."""
    a = m[..., :3, :3]
    adj = np.stack(
        [
            cross3(a[..., 1, :], a[..., 2, :]),
            cross3(a[..., 2, :], a[..., 0, :]),
            cross3(a[..., 0, :], a[..., 1, :]),
        ],
        -1,
    )  # columns are the cross products of rows: adj(a) = cofactor(a)ᵀ
    det = np.einsum("...i,...i->...", a[..., 0, :], adj[..., :, 0])
    inv = np.zeros_like(m)
    inv[..., :3, :3] = adj / det[..., None, None]
    inv[..., :3, 3] = -np.einsum("...ij,...j->...i", inv[..., :3, :3], m[..., :3, 3])
    inv[..., 3, 3] = 1.0
    return inv


def _unit(v: np.ndarray) -> np.ndarray:
    """Unit vectors as Blender's ``normalize_v3`` makes them: a (near) zero vector stays zero (a bone
    scaled to 0 has zero axes: its rotation then comes out as none, never NaN)."""
    return unit(v, tiny=BLENDER_TINY_SQUARED)


def _orthogonalize_around_y(m: np.ndarray) -> np.ndarray:
    """Blender's ``orthogonalize_m4(m, 1)`` without the size: keep the Y axis, rebuild X and Z from the
    first of its three cases whose test holds. The tests compare the unit Y with the *unscaled* X (and X
    with Z), so a strongly sheared, stretched matrix takes the second or third case."""
    col_x, col_z = m[..., :, 0], m[..., :, 2]
    with np.errstate(invalid="ignore", divide="ignore"):  # a case not taken may be degenerate
        y = _unit(m[..., :, 1])
        z_a = _unit(cross3(col_x, y))  # case 1: keep the XY plane
        x_a = cross3(y, z_a)
        x_b = _unit(cross3(y, col_z))  # case 2: keep the YZ plane
        z_b = cross3(x_b, y)
        x_c = _unit(cross3(y, y[..., [1, 2, 0]]))  # case 3: any axis orthogonal to Y
        z_c = cross3(x_c, y)
    first = (np.einsum("...i,...i->...", y, col_x) < 1.0)[..., None]
    second = (np.einsum("...i,...i->...", col_x, col_z) < 1.0)[..., None]
    x = np.where(first, x_a, np.where(second, x_b, x_c))
    z = np.where(first, z_a, np.where(second, z_b, z_c))
    return np.stack([x, y, z], -1)


class BoneDualQuaternions(NamedTuple):
    """Per-bone dual quaternions in Blender's Preserve Volume form.

    ``real``, ``dual``: ``(B, 4)``. ``pivot``: ``(B, 4, 3)`` or ``None`` when every bone is rigid.
    For a vertex ``p`` a bone contributes ``(real, dual + pivot @ p)``: the pivot term is Blender's
    "translation induced by scale at the pivot point", linear in ``p`` (the constant part is
    already folded into ``dual``).
    """

    real: np.ndarray
    dual: np.ndarray
    pivot: np.ndarray | None


def bone_dual_quaternions(deform: np.ndarray, rest: np.ndarray) -> BoneDualQuaternions:
    """Deform matrices ``(B, 4, 4)`` and bone rest matrices ``(B, 4, 4)`` → Blender-exact DQs.

    ``deform`` is the bone's skinning matrix (``PoseBone.matrix_channel``, rest → pose in armature
    space); ``rest`` its orthonormal rest frame (``Bone.matrix_local``). Scaled bones are split the
    way ``mat4_to_dquat`` does: the rotation keeps the posed bone's Y axis (Y-preserving
    orthogonalisation, not a polar decomposition) and the rest is a scale matrix in rest space.
    """
    deform = np.asarray(deform, dtype=np.float64)
    rest = np.asarray(rest, dtype=np.float64)
    rigid = _is_rigid(deform, rest)

    base_rs = deform @ rest
    base_quat = quaternion_from_matrix(_orthogonalize_around_y(base_rs[..., :3, :3]), blender_branch=True)
    base_r = np.zeros_like(deform)
    base_r[..., :3, :3] = quaternion_to_matrix(base_quat)
    base_r[..., :, 3] = base_rs[..., :, 3]
    rest_inv = _affine_inverse(rest)
    rotation = np.where(rigid[..., None, None], deform, base_r @ rest_inv)
    scale = rest @ (_affine_inverse(base_r) @ base_rs) @ rest_inv

    real = quaternion_from_matrix(rotation[..., :3, :3])
    dual = _translation_dual(real, rotation[..., :3, 3])
    if rigid.all():
        return BoneDualQuaternions(real, dual, None)
    # dual(p) = dual + 0.5 * real * (0, (S - I) p): affine in p.
    fold = 0.5 * _left_multiply_matrix(real) @ (scale - np.eye(4))[..., :3, :]
    fold[rigid] = 0.0
    dual = dual + fold[..., :, 3]
    return BoneDualQuaternions(real, dual, np.ascontiguousarray(fold[..., :, :3]))
