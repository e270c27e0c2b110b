"""What an animation texture bake samples: the truth at each frame of each clip, keyed by scene frame.

The Blender side fills a ``Samples`` dict while it plays the clips; the encoders read stored frames from
it (:func:`stack_samples`) and the error report (:mod:`.verify`) reads stored and halfway frames.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .layout import Clip
from .report import mid_samples

__all__ = ["EXTREME_FACTORS", "FrameSample", "Samples", "clip_frames", "frame_key", "stack_samples"]


@dataclass
class FrameSample:
    """The truth at one sampled frame of one clip."""

    positions: np.ndarray  # (N_total, 3) truth, mesh-local, all parts concatenated
    normals: np.ndarray
    matrices: np.ndarray | None  # (B, 4, 4) palette skinning matrices in mesh space (bone kinds)
    world: np.ndarray  # (P, 4, 4) each part's object matrix at this frame: errors are in scene units
    #: (2, N_total, 3) truth at deform factors 0 and 1 (:data:`EXTREME_FACTORS`; bone kinds): the
    #: runtime picks the factor, and the error at any factor in [0, 1] is at most the larger of these.
    extremes: np.ndarray | None = None
    #: Scene units between the truth and Blender's own evaluation at this frame, where the bake measured
    #: it (``[at the report's factor]``, bone kinds ``[at it, at 0, at 1]``); ``None`` where it did not.
    oracle: np.ndarray | None = None
    #: Bone kinds carrying Auto (:mod:`.auto`): ``(B, 8)`` the palette's Auto bone data at this frame
    #: (what the texture stores) and ``(N_total,)`` the core's Auto factors the truth was skinned with.
    auto_bones: np.ndarray | None = None
    auto_factors: np.ndarray | None = None


#: The deform factors at which the bone kinds' error is also measured: positions are affine in the
#: factor (truth and playback alike), so the error's length at any factor in [0, 1] is at most the
#: larger of its lengths at 0 and 1.
EXTREME_FACTORS = (0.0, 1.0)


#: ``(clip index, frame key)`` → the sample taken there.
Samples = dict[tuple[int, float], FrameSample]


def frame_key(frame: float) -> float:
    """The scene frame as a sample key: steps that land on the same frame share one sample."""
    return round(float(frame), 6)


def clip_frames(clip: Clip) -> tuple[np.ndarray, np.ndarray]:
    """Scene frames of the stored samples and of the halfway samples of ``clip``."""
    mids = clip.frame_start + clip.frame_step * mid_samples(clip.frame_count, clip.loop)
    return clip.sample_frames(), mids


def stack_samples(samples: Samples, clip_index: int, frames: np.ndarray, what: str) -> np.ndarray:
    """One field of the samples of clip ``clip_index`` at scene ``frames``, stacked on a new first axis."""
    return np.stack([getattr(samples[(clip_index, frame_key(f))], what) for f in frames])
