"""How far the add-on's skinning (a bake's truth) is from Blender's own evaluation, at the sampled frames.

The error report compares the decoded texture with the add-on's skinning, which matches Blender's Armature
modifier to float32 rounding. At EXR32 that rounding is most of what a user measures against Blender (issue
28 §3: a claim of 3.4e-7 against 2.4e-6 from Blender). So at the frames it samples, the bake also lets
Blender deform the meshes: the baked meshes' Armature modifiers (hidden while sampling) are shown for a
moment, once plain (LBS) and once with Preserve Volume (DQS), and their results read. Blender's result at
a factor ``f`` between is the per-vertex mix ``(1 - f)·LBS + f·DQS`` of the two, which is what Blender's
two-modifier mix (a Preserve Volume modifier with Multi Modifier over a plain one) computes.

:class:`OracleGap` keeps the sampling cheap: every sample is measured while the vertices times the samples
planned stay within :data:`BUDGET` evaluations; beyond, every k-th sample (at least one per
:data:`BUDGET`). The report (:func:`..core.animtex.report.add_oracle_gap`) adds the largest gap to every
``max`` it states and records how many samples were measured.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import bpy
import numpy as np

from .. import bridge
from ..core.animtex.report import add_oracle_gap, position_errors
from ..core.animtex.samples import FrameSample, clip_frames, frame_key
from ..core.animtex.texture import AnimationTexture
from ..rig import bind, stack
from .scene import MeshPart

__all__ = ["BUDGET", "OracleGap", "blender_skins", "with_oracle_gap"]

#: Vertex evaluations by Blender (vertices x samples x 2: LBS and DQS) a bake spends on the gap. Measured
#: on this project's 2-core machine with 96,600 vertices: ~18 ms a measured sample (Blender's two
#: evaluations and the bookkeeping), so all 49 samples of a 25-frame clip would add ~0.9 s (about +20% of
#: a VERTEX bake, +40% of a BONE_DQ one); within 4 M, 17 of them are: +0.3 s (+2-4%). A small rig
#: (RobotExpressive: 1,108 vertices) is measured at every sample of every clip.
BUDGET = 4_000_000


def blender_skins(parts: Sequence[MeshPart]) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """Blender's own LBS and DQS positions (mesh-local, float32) of each part at the current frame: its
    Armature modifier shown, without and with Preserve Volume; the modifier is put back as it was."""
    mods = [stack.armature_modifier(p.obj, p.modifier) for p in parts]
    saved = [(m.use_deform_preserve_volume, m.show_viewport) for m in mods]
    out: dict[bool, list[np.ndarray]] = {}
    with bind.own_edits(p.obj for p in parts):  # showing a modifier is not an edit of what a bind read
        try:
            for m in mods:
                m.show_viewport = True
            for preserve_volume in (False, True):
                for m in mods:
                    m.use_deform_preserve_volume = preserve_volume
                depsgraph = bpy.context.evaluated_depsgraph_get()
                out[preserve_volume] = [bridge.evaluated_positions(p.obj, depsgraph) for p in parts]
        finally:
            for m, (preserve_volume, shown) in zip(mods, saved):
                m.use_deform_preserve_volume, m.show_viewport = preserve_volume, shown
    return out[False], out[True]


class OracleGap:
    """Measures the gap at the samples a bake takes (see the module)."""

    def __init__(self, parts: Sequence[MeshPart], planned: int, bones: bool, skip: Sequence[int] = ()):
        self.parts, self.bones = list(parts), bones
        #: Meshes whose truth includes their own modifiers after the Armature modifier (:mod:`.tail`):
        #: Blender's skinning alone is not what they are compared with.
        self.skip = set(skip)
        vertices = sum(len(p.base) for p in self.parts)
        self.stride = max(1, math.ceil(2 * vertices * max(planned, 1) / BUDGET))
        self.taken = 0

    def due(self) -> bool:
        """Whether the next sample is one to measure (every :attr:`stride`-th, the first included)."""
        due = self.taken % self.stride == 0
        self.taken += 1
        return due

    def measure(
        self, sample: FrameSample, factors: Sequence[float | np.ndarray], bone_factor: float | None
    ) -> np.ndarray:
        """The gap at this sample (scene units), Blender evaluated now: ``[at the report's factor]``
        (VERTEX: each mesh's baked factors) or, bone kinds, ``[at bone_factor, at 0, at 1]``; a bone bake
        carrying Auto passes ``bone_factor`` ``None``: its report's factor is each mesh's Auto ``factors``."""
        lbs, dqs = blender_skins(self.parts)
        worst = np.zeros(3 if self.bones else 1)
        for i, part in enumerate(self.parts):
            if i in self.skip:
                continue
            span = slice(part.start, part.stop)
            linear = sample.world[i, :3, :3]
            if lbs[i].shape != (part.stop - part.start, 3):  # Blender's output is not vertex for vertex
                continue
            lo, hi = lbs[i].astype(np.float64), dqs[i].astype(np.float64)
            own = not self.bones or bone_factor is None
            f = np.asarray(factors[i], dtype=np.float64) if own else bone_factor
            f = np.reshape(f, (-1, 1)) if np.ndim(f) else float(f)
            truths = [(sample.positions[span], lo + f * (hi - lo))]
            if self.bones:
                truths += [(sample.extremes[0][span], lo), (sample.extremes[1][span], hi)]
            for k, (ours, blender) in enumerate(truths):
                worst[k] = max(worst[k], float(position_errors(ours, blender, linear).max(initial=0.0)))
        return worst


def with_oracle_gap(
    report: dict, texture: AnimationTexture, gaps: Mapping[tuple[int, float], np.ndarray]
) -> dict:
    """``report`` with the gap to Blender's own evaluation added to its maxima
    (:func:`..core.animtex.report.add_oracle_gap`), measured at this texture's samples (``gaps``, keyed by
    ``(clip, frame_key)``; or, where none of them was measured, at every sample that was); unchanged when
    the bake measured none."""
    keys = {(ci, frame_key(f)) for ci, c in enumerate(texture.clips) for f in np.concatenate(clip_frames(c))}
    measured = [gap for key, gap in gaps.items() if key in keys] or list(gaps.values())
    if not measured:
        return report
    gap = np.max(measured, axis=0)
    by_factor = {0.0: gap[1], 1.0: gap[2]} if len(gap) == 3 else None
    return add_oracle_gap(report, gap[0], by_factor=by_factor, samples=len(measured), of=len(keys))
