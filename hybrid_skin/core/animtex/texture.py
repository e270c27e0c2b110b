"""The encoded animation texture: pixels plus everything needed to decode them (numpy only)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .auto import TextureAuto
from .layout import Clip, Kind, TextureLayout
from .quantize import Precision, channel_values

__all__ = ["AnimationTexture"]


@dataclass(frozen=True)
class AnimationTexture:
    """An encoded texture and everything needed to decode it.

    pixels: ``(H, W, 4)`` in ``precision.dtype`` (uint8, uint16, float16, float32), row 0 first.
    value_min, value_max: ``(M, T, 4)`` float32 data ranges per texel slot and channel, ``M = 1`` for
        ``VERTEX`` (one AABB) and ``M = B`` for bone kinds (per-bone AABBs).
    decode_offset, decode_scale: same shape; ``value = offset + scale * channel``.
    bone_pivots: ``(B, 3)`` float32 or ``None`` (``VERTEX``).
    deform_factor: baked factor (``VERTEX``) or the default runtime factor (bone kinds), or ``None``.
    non_rigid_residual: ``max |A - s R|`` over all bone matrices, ``s R`` what the dual quaternions hold
        (``BONE_DQ``: the stored rotation and scale; ``BONE_MATRIX``: its DQS part's; 0 for ``VERTEX``).
    auto: the Auto data a bone texture carries (:mod:`.auto`; its rows: ``layout.auto_row_offset``), or
        ``None``.
    """

    kind: Kind
    precision: Precision
    layout: TextureLayout
    clips: tuple[Clip, ...]
    pixels: np.ndarray
    value_min: np.ndarray
    value_max: np.ndarray
    decode_offset: np.ndarray
    decode_scale: np.ndarray
    bone_names: tuple[str, ...] | None = None
    bone_pivots: np.ndarray | None = None
    deform_factor: float | None = None
    non_rigid_residual: float = 0.0
    embedded_metadata: bool = False
    auto: TextureAuto | None = None

    def channels(self) -> np.ndarray:
        """``(H, W, 4)`` float32 as a sampler (and Blender's ``Image.pixels``) sees the texture."""
        return channel_values(self.pixels, self.precision)
