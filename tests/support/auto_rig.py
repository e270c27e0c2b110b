"""A limb that bends and twists over time, for Auto in bone textures (numpy only: core and engine tests).

Three bones along +Y (the canonical limb of :mod:`hybrid_skin.core.primitives`, coarser), each joint
bending and twisting by smooth functions of the frame, so any fractional frame has an exact pose (the
truth between stored samples). Vertices blend the bones around each joint; a third of them also take a
share of the far bone, so vertices have two or three influences, stored four wide with zero padding as a
bake stores them. Rest, mesh and armature space are one (no object transforms).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from hybrid_skin.core import autofactor
from hybrid_skin.core.primitives import bend, chain_deform_matrices, make_limb, twist

#: (name, frame_start, frame_end, loop): a loop and a clamp (and, for the engine ports' cases, a pose).
CLIPS = (("swing", 1, 13, True), ("reach", 1, 9, False))
POSE_CLIP = ("pose", 1, 1, False)


@dataclass(frozen=True)
class AutoRig:
    rest: np.ndarray  # (B, 4, 4) bone rest matrices
    parents: np.ndarray
    lengths: np.ndarray
    positions: np.ndarray  # (N, 3) float32 rest positions
    normals: np.ndarray  # (N, 3) float32
    bone_indices: np.ndarray  # (N, 4) int32, zero padded
    weights: np.ndarray  # (N, 4) float32, rows sum to 1

    @property
    def pivots(self) -> np.ndarray:
        return self.rest[:, :3, 3]

    def deform(self, clip: int, frame: float | np.ndarray) -> np.ndarray:
        """``(S, B, 4, 4)`` deform matrices at clip-local (fractional) frames."""
        frames = np.atleast_1d(np.asarray(frame, dtype=np.float64))
        phase = (0.0, 1.3, 2.2)[clip]
        period = (12.0, 16.0, 10.0)[clip]
        out = []
        for f in frames:
            t = 2 * np.pi * f / period + phase
            basis = np.stack(
                [
                    np.eye(3),
                    bend(np.radians(70.0) * (1 + np.sin(t)), "X") @ twist(np.radians(60.0) * np.sin(2 * t)),
                    bend(np.radians(50.0) * np.cos(t), "Z") @ twist(np.radians(40.0) * np.cos(t)),
                ]
            )
            out.append(chain_deform_matrices(self._chain, basis))
        return np.stack(out)

    def bone_data(self, clip: int, frame: float | np.ndarray) -> np.ndarray:
        """``(S, B, 8)`` Auto bone data (:func:`autofactor.bone_factor_data`) at clip-local frames."""
        return np.stack(
            [autofactor.bone_factor_data(d, self.rest, self.parents) for d in self.deform(clip, frame)]
        )

    def vertex_rest(self) -> np.ndarray:
        return autofactor.vertex_geometry(
            self.positions, self.bone_indices, self.weights, self.rest, self.lengths
        )

    @property
    def _chain(self):
        from hybrid_skin.core.primitives import BoneChain

        return BoneChain(self.rest, self.parents, self.lengths)


def auto_rig(rings_per_bone: int = 6, segments: int = 10) -> AutoRig:
    limb = make_limb(3, rings_per_bone=rings_per_bone, segments=segments)
    chain = limb.chain
    n = len(limb.mesh.positions)
    idx = np.zeros((n, 4), np.int32)
    w = np.zeros((n, 4), np.float64)
    idx[:, :2], w[:, :2] = limb.bone_indices, limb.weights
    third = np.arange(n) % 3 == 0  # a share of the bone neither of the joint's two is
    far = np.where(limb.bone_indices[:, 0] == 0, 2, 0)
    idx[third, 2], w[third, 2] = far[third], 0.15
    w /= w.sum(axis=1, keepdims=True)
    return AutoRig(
        chain.rest, chain.parents, chain.lengths, limb.mesh.positions.astype(np.float32),
        limb.mesh.normals.astype(np.float32), idx, w.astype(np.float32),
    )  # fmt: skip
