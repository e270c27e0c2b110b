"""The deform factor as one small type: a number, a number times per-vertex weights, or Auto.

Per vertex ``f`` (0 = LBS, 1 = DQS). The rig layer resolves an object's settings into one
(:func:`hybrid_skin.rig.factor.resolve`); the GPU layer and the kernels only read it, so it lives here,
below both, with numpy alone.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import numpy as np

__all__ = ["DEFAULT_FACTOR", "DeformFactor", "PosedFrame"]

#: The property's default: an even blend of LBS and DQS, about what Yin (2019) recommends for bending
#: joints (see docs/quality.md).
DEFAULT_FACTOR = 0.5


class PosedFrame(Protocol):
    """What Auto needs of a bind posed at one frame (the rig layer's ``PosedBind``)."""

    def auto_factors(self) -> np.ndarray: ...


@dataclass(frozen=True, eq=False)
class DeformFactor:
    """``value`` everywhere; ``value * weights`` per vertex when ``weights`` ``(N,)`` is given; computed
    from the pose when ``auto`` (then ``value`` is only the slider's setting, which Auto ignores)."""

    value: float = DEFAULT_FACTOR
    weights: np.ndarray | None = None
    auto: bool = False

    @classmethod
    def per_vertex(cls, factors: np.ndarray) -> DeformFactor:
        """Exactly these per-vertex factors (weights with number 1)."""
        return cls(1.0, np.asarray(factors, dtype=np.float32))

    @classmethod
    def automatic(cls, value: float = DEFAULT_FACTOR) -> DeformFactor:
        return cls(float(value), None, True)

    @property
    def label(self) -> str:
        """How the panels name it: ``"auto"``, ``"group"`` or the number (``"0.50"``)."""
        if self.auto:
            return "auto"
        return "group" if self.weights is not None else f"{self.value:.2f}"

    def values(self, posed: PosedFrame | None = None) -> float | np.ndarray:
        """What the skinning kernels take: one number, or ``(N,)`` float32 per vertex. Auto needs the
        ``posed`` bind of the frame."""
        if self.auto:
            if posed is None:
                raise ValueError("the Auto factor is computed from a pose: pass the posed bind")
            return posed.auto_factors()
        if self.weights is None:
            return float(self.value)
        return (self.value * self.weights).astype(np.float32)
