"""What an animation texture bake samples: the encoder's input at the stored frames, and the truth.

The Blender side fills a :class:`StoredFrames` while it plays the clips (what the encoder needs, in arrays
allocated once at their final size), encodes it, then plays the clips again feeding the truth at every
stored and halfway frame (:class:`FrameSample`) to the error report (:class:`.verify.ReportStream`) one
sample at a time. ``Samples`` (truth keyed by scene frame) is for callers that have every sample at hand.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from .layout import Clip
from .report import mid_samples

__all__ = ["EXTREME_FACTORS", "FrameSample", "Samples", "StoredFrames", "clip_frames", "frame_key"]


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


class StoredFrames:
    """The encoder's input at the stored frames of every clip at one frame step: per field, one array per
    clip ``(frame_count, *shape)`` allocated once (what the bake keeps, :data:`.plan.KEPT_BYTES`), filled
    one frame at a time by :meth:`put`."""

    def __init__(self, clips: Sequence[Clip], fields: dict[str, tuple[tuple[int, ...], type]]):
        self.clips = tuple(clips)
        self.fields = {
            name: [np.empty((c.frame_count, *shape), dtype) for c in self.clips]
            for name, (shape, dtype) in fields.items()
        }

    @property
    def step(self) -> float:
        return self.clips[0].frame_step

    def put(self, clip: int, index: int, **values: np.ndarray) -> None:
        for name, value in values.items():
            self.fields[name][clip][index] = value

    def __getitem__(self, name: str) -> list[np.ndarray]:
        """One field's arrays, one per clip."""
        return self.fields[name]

    def truth(self, clip: int, index: int) -> FrameSample:
        """The truth at stored frame ``index`` of ``clip`` (VERTEX: the positions and normals kept)."""
        f = self.fields
        positions, normals = f["positions"][clip][index], f["normals"][clip][index]
        return FrameSample(positions, normals, None, f["world"][clip][index])
