"""Canonical test, bench and demo geometry: a capped cylinder "limb" skinned to a straight bone chain.

Everything follows Blender's conventions so the same arrays can be fed to the skinning kernels, the
metrics and (through the bridge) to a real armature:

* armature space, column vectors (``p' = M @ p``);
* a bone's rest matrix (``Bone.matrix_local``) has columns X, Y (the bone axis, head → tail), Z, head;
* a bone's pose is composed like ``PoseBone.matrix``:
  ``posed[b] = posed[parent] @ inv(rest[parent]) @ rest[b] @ basis[b]`` (``basis`` = ``matrix_basis``);
* the skinning (deform) matrix of a bone is ``posed[b] @ inv(rest[b])`` (``PoseBone.matrix_channel``).

The limb lies along +Y from ``y = 0`` to ``y = length``. Its joints (the heads of bones 1..B-1) lie on
rings, and every vertex is influenced by at most the two bones of its nearest joint, with a linear
weight ramp across a blend zone centred on the joint. That is the textbook set-up in which the
"candy-wrapper" and "joint bulge" artifacts (Yin 2019, §5.3) have closed forms: the joint ring carries
weights exactly 0.5 / 0.5.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .skinning import SkinBinding

__all__ = [
    "CANONICAL_POSES",
    "BoneChain",
    "CanonicalPose",
    "Limb",
    "LimbMesh",
    "bend",
    "bone_chain",
    "canonical_pose",
    "capped_cylinder",
    "chain_deform_matrices",
    "joint_blend_weights",
    "make_limb",
    "pose_chain",
    "rotation_matrix",
    "twist",
    "vertex_normals",
]


@dataclass(frozen=True)
class LimbMesh:
    """A closed triangle mesh.

    positions, normals: ``(N, 3)`` float64 (normals unit length). triangles: ``(T, 3)`` int32,
    counter-clockwise seen from outside, so the signed volume is positive. ring: ``(N,)`` int32 ring
    number along the axis (0 at ``y = 0``), ``-1`` for the two cap centres.
    """

    positions: np.ndarray
    normals: np.ndarray
    triangles: np.ndarray
    ring: np.ndarray


@dataclass(frozen=True)
class BoneChain:
    """A straight chain of bones in rest pose.

    rest: ``(B, 4, 4)`` float64 rest matrices. parents: ``(B,)`` int32, ``-1`` for the root.
    lengths: ``(B,)`` float64 head-to-tail lengths.
    """

    rest: np.ndarray
    parents: np.ndarray
    lengths: np.ndarray

    @property
    def bone_count(self) -> int:
        return int(self.rest.shape[0])

    @property
    def heads(self) -> np.ndarray:
        """``(B, 3)`` rest head positions."""
        return self.rest[:, :3, 3]

    @property
    def tails(self) -> np.ndarray:
        """``(B, 3)`` rest tail positions (head + length · bone Y axis)."""
        return self.rest[:, :3, 3] + self.lengths[:, None] * self.rest[:, :3, 1]


@dataclass(frozen=True)
class Limb:
    """Mesh + bone chain + skinning weights: everything a skinning call needs except the pose."""

    mesh: LimbMesh
    chain: BoneChain
    bone_indices: np.ndarray
    weights: np.ndarray
    blend_width: float

    def binding(self) -> SkinBinding:
        """The weights as a :class:`~.skinning.SkinBinding` (int32 / float32, full influence)."""
        n = self.weights.shape[0]
        return SkinBinding(
            np.ascontiguousarray(self.bone_indices, dtype=np.int32),
            np.ascontiguousarray(self.weights, dtype=np.float32),
            np.ones(n, dtype=np.float32),
        )


def vertex_normals(positions: np.ndarray, triangles: np.ndarray) -> np.ndarray:
    """Smooth vertex normals ``(N, 3)``: area-weighted sum of the adjacent face normals, normalised.

    The un-normalised cross product is twice the face area times its normal, so summing it weights each
    face by its area; vertices with no faces get a zero normal instead of NaN.
    """
    p = np.asarray(positions, dtype=np.float64)
    tri = np.asarray(triangles)
    face = np.cross(p[tri[:, 1]] - p[tri[:, 0]], p[tri[:, 2]] - p[tri[:, 0]])
    acc = np.zeros_like(p)
    for corner in range(3):
        np.add.at(acc, tri[:, corner], face)
    length = np.linalg.norm(acc, axis=1, keepdims=True)
    return np.divide(acc, length, out=np.zeros_like(acc), where=length > 0)


def capped_cylinder(radius: float, length: float, rings: int, segments: int) -> LimbMesh:
    """Closed cylinder along +Y from ``y = 0`` to ``y = length``: ``rings`` rings of ``segments`` vertices.

    Ring ``i`` lies at ``y = i * length / (rings - 1)``; vertex ``j`` of a ring at angle
    ``2π j / segments`` from +X towards -Z, which makes every triangle face outwards. Each end is closed
    by a fan around one centre vertex (appended last: bottom, then top).
    """
    if rings < 2 or segments < 3:
        raise ValueError(f"need rings >= 2 and segments >= 3, got {rings}, {segments}")
    phi = 2.0 * np.pi * np.arange(segments) / segments
    y = np.linspace(0.0, length, rings)
    side = np.empty((rings, segments, 3))
    side[..., 0] = radius * np.cos(phi)
    side[..., 1] = y[:, None]
    side[..., 2] = -radius * np.sin(phi)
    bottom, top = rings * segments, rings * segments + 1
    positions = np.concatenate([side.reshape(-1, 3), [[0.0, 0.0, 0.0], [0.0, length, 0.0]]])

    i, j = np.meshgrid(np.arange(rings - 1), np.arange(segments), indexing="ij")
    a = i * segments + j
    b = i * segments + (j + 1) % segments
    c, d = a + segments, b + segments
    quads = np.stack([np.stack([a, b, d], -1), np.stack([a, d, c], -1)], -2).reshape(-1, 3)
    ring0, ring_last = np.arange(segments), (rings - 1) * segments + np.arange(segments)
    cap_bottom = np.stack([np.full(segments, bottom), np.roll(ring0, -1), ring0], -1)
    cap_top = np.stack([np.full(segments, top), ring_last, np.roll(ring_last, -1)], -1)
    triangles = np.concatenate([quads, cap_bottom, cap_top]).astype(np.int32)

    ring = np.concatenate([np.repeat(np.arange(rings), segments), [-1, -1]]).astype(np.int32)
    return LimbMesh(positions, vertex_normals(positions, triangles), triangles, ring)


def bone_chain(bone_count: int, length: float, roll: float = 0.0) -> BoneChain:
    """``bone_count`` equal bones end to end along +Y, from ``y = 0`` to ``y = length``.

    ``roll`` turns every bone's X/Z axes about its Y axis (Blender's bone roll); it changes no geometry,
    only the frame in which ``bend`` axes are read, which makes it useful for invariance tests.
    """
    bone_length = length / bone_count
    rest = np.tile(np.eye(4), (bone_count, 1, 1))
    rest[:, :3, :3] = rotation_matrix((0.0, 1.0, 0.0), roll)
    rest[:, 1, 3] = bone_length * np.arange(bone_count)
    parents = np.arange(bone_count, dtype=np.int32) - 1
    return BoneChain(rest, parents, np.full(bone_count, bone_length))


def joint_blend_weights(
    positions: np.ndarray, chain: BoneChain, blend_width: float
) -> tuple[np.ndarray, np.ndarray]:
    """Linear-ramp weights ``(N, 2)`` and bone indices ``(N, 2)`` for a straight chain along +Y.

    Each vertex belongs to its nearest joint ``j`` (head of bone ``j``, parent ``j - 1``): the child
    weight ramps linearly from 0 to 1 across ``[y_j - blend_width/2, y_j + blend_width/2]``, so the joint
    ring gets exactly 0.5 / 0.5 and the weights always sum to 1. A one-bone chain gets weight 1 on bone 0.
    ``blend_width`` must not exceed a bone's length, so that blend zones never overlap.
    """
    y = np.asarray(positions, dtype=np.float64)[:, 1]
    n, bone_count = y.shape[0], chain.bone_count
    if bone_count == 1:
        return np.zeros((n, 2), dtype=np.int32), np.column_stack([np.ones(n), np.zeros(n)])
    if not 0.0 < blend_width <= chain.lengths.min():
        raise ValueError(f"blend_width must be in (0, bone length], got {blend_width}")
    joints_y = chain.heads[1:, 1]
    nearest = np.argmin(np.abs(y[:, None] - joints_y[None, :]), axis=1)
    t = np.clip((y - joints_y[nearest]) / blend_width + 0.5, 0.0, 1.0)
    indices = np.column_stack([nearest, nearest + 1]).astype(np.int32)
    return indices, np.column_stack([1.0 - t, t])


def make_limb(
    bone_count: int = 2,
    *,
    radius: float = 0.5,
    bone_length: float = 2.0,
    rings_per_bone: int = 20,
    segments: int = 32,
    blend_width: float = 1.0,
    roll: float = 0.0,
) -> Limb:
    """The canonical limb: a cylinder of ``radius`` over ``bone_count`` bones of ``bone_length``.

    ``rings_per_bone`` ring intervals per bone put every joint exactly on a ring. The default blend zone
    is one limb diameter wide, a typical artist's weight falloff around an elbow.
    """
    length = bone_count * bone_length
    mesh = capped_cylinder(radius, length, bone_count * rings_per_bone + 1, segments)
    chain = bone_chain(bone_count, length, roll)
    indices, weights = joint_blend_weights(mesh.positions, chain, blend_width)
    return Limb(mesh, chain, indices, weights, blend_width)


def rotation_matrix(axis: np.ndarray | tuple[float, float, float], angle: float) -> np.ndarray:
    """``(3, 3)`` rotation by ``angle`` radians about ``axis`` (right-handed, Rodrigues)."""
    a = np.asarray(axis, dtype=np.float64)
    x, y, z = a / np.linalg.norm(a)
    c, s = np.cos(angle), np.sin(angle)
    k = np.array([[0.0, -z, y], [z, 0.0, -x], [-y, x, 0.0]])
    return c * np.eye(3) + s * k + (1.0 - c) * np.outer((x, y, z), (x, y, z))


_LOCAL_AXES = {"X": (1.0, 0.0, 0.0), "Z": (0.0, 0.0, 1.0)}


def bend(angle: float, axis: str | tuple[float, float, float] = "X") -> np.ndarray:
    """Bone-local ``(3, 3)`` basis rotation bending a bone about its head: ``axis`` is ``"X"``, ``"Z"`` or
    any vector in the bone's frame (a component along Y adds twist)."""
    return rotation_matrix(_LOCAL_AXES[axis] if isinstance(axis, str) else axis, angle)


def twist(angle: float) -> np.ndarray:
    """Bone-local ``(3, 3)`` basis rotation about the bone's own Y axis (head → tail)."""
    return rotation_matrix((0.0, 1.0, 0.0), angle)


def pose_chain(rest: np.ndarray, parents: np.ndarray, basis: np.ndarray) -> np.ndarray:
    """Posed bone matrices ``(B, 4, 4)`` from rest matrices and per-bone ``basis`` rotations ``(B, 3, 3)``.

    Bones are composed root to tip in the order given, so parents must precede their children (as in
    Blender's bone lists). This loop is over bones, O(B), never over vertices.
    """
    rest = np.asarray(rest, dtype=np.float64)
    local = np.tile(np.eye(4), (rest.shape[0], 1, 1))
    local[:, :3, :3] = basis
    posed = np.empty_like(rest)
    for b, p in enumerate(np.asarray(parents)):
        if p < 0:
            posed[b] = rest[b] @ local[b]
        elif p >= b:
            raise ValueError(f"bone {b} has parent {p}: parents must come first")
        else:
            posed[b] = posed[p] @ np.linalg.solve(rest[p], rest[b]) @ local[b]
    return posed


def chain_deform_matrices(chain: BoneChain, basis: np.ndarray, dtype: type = np.float64) -> np.ndarray:
    """Deform (skinning) matrices ``posed @ inv(rest)``, ``(B, 4, 4)``, for per-bone ``basis`` rotations."""
    posed = pose_chain(chain.rest, chain.parents, basis)
    return (posed @ np.linalg.inv(chain.rest)).astype(dtype)


#: The evidence poses of the AUTO factor issue: name → per-bone basis rotations (root first).
CANONICAL_POSES: dict[str, tuple[np.ndarray, ...]] = {
    "bend_90": (np.eye(3), bend(np.radians(90.0))),
    "bend_120": (np.eye(3), bend(np.radians(120.0))),
    "twist_180": (np.eye(3), twist(np.radians(180.0))),
    "bend_120_twist_170": (np.eye(3), bend(np.radians(120.0)), twist(np.radians(170.0))),
}


@dataclass(frozen=True)
class CanonicalPose:
    """A named pose of :func:`make_limb`: the limb, its deform matrices and which joints bend or twist.

    A joint is named by its child bone index (joint ``j`` = head of bone ``j``).
    """

    name: str
    limb: Limb
    deform: np.ndarray
    bent_joints: tuple[int, ...]
    twisted_joints: tuple[int, ...]


def canonical_pose(name: str, **limb_options: float) -> CanonicalPose:
    """Build one of :data:`CANONICAL_POSES` on a :func:`make_limb` limb with as many bones as it needs."""
    basis = np.stack(CANONICAL_POSES[name])
    limb = make_limb(basis.shape[0], **limb_options)
    rotated = [j for j in range(1, basis.shape[0]) if not np.allclose(basis[j], np.eye(3))]
    twisted = tuple(j for j in rotated if np.allclose(basis[j][:, 1], (0.0, 1.0, 0.0)))
    bent = tuple(j for j in rotated if j not in twisted)
    return CanonicalPose(name, limb, chain_deform_matrices(limb.chain, basis), bent, twisted)
