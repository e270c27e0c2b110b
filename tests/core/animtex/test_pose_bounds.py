"""Culling bounds (:mod:`hybrid_skin.core.animtex.pose_bounds`) hold every pose a runtime decodes.

The synthetic rig of ``tests/engines/synthetic.py`` (bones swinging up to ~45° a frame with some uniform
scale, four influences a vertex, a loop, a clamp and a one-frame pose; and the Auto limb carrying Auto),
encoded as every kind, split into two meshes. Truth: the core's decoders (what the shaders compute) at 8
samples in every interval between stored frames, the wrap of a loop and the hold of a clamp included,
at runtime factors 0, 0.37 and 1 and, for the Auto rig, the per-vertex Auto factors. Every decoded
position lies inside its interval's box and its clip's box, per mesh; and the boxes are tight: each side
within a few percent of the decoded extent beyond it (the smooth limb; the random rig's jumps need more).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest

from hybrid_skin.core.animtex import verify
from hybrid_skin.core.animtex.pose_bounds import pose_bounds
from tests.engines import synthetic

FACTORS = (0.0, 0.37, 1.0)
SUBSAMPLES = 8


@dataclass
class Part:
    base: np.ndarray
    normals: np.ndarray
    start: int
    stop: int
    bone_indices: np.ndarray | None
    bone_weights: np.ndarray | None
    auto_rest: np.ndarray | None = None


def parts_of(scene, bones: bool) -> list[Part]:
    """The rig as two meshes (the first 120 vertices, the rest)."""
    cut = 120
    out = []
    for start, stop in ((0, cut), (cut, len(scene.rest))):
        keep = slice(start, stop)
        out.append(Part(
            scene.rest[keep], scene.normals[keep], start, stop,
            scene.bones[keep] if bones else None, scene.weights[keep] if bones else None,
            None if scene.auto_rest is None else scene.auto_rest[keep],
        ))  # fmt: skip
    return out


def decoded(texture, parts, clip: int, samples: np.ndarray):
    """Positions ``(factor, S, N, 3)`` as the runtimes play them at ``samples``."""
    if texture.kind.value == "VERTEX":
        return [verify.decode(texture, parts, clip, samples, 0.0)[0]]
    if texture.auto is not None:  # Auto factors per vertex, and one runtime factor
        return [
            verify.decode(texture, parts, clip, samples, 0.5)[0],
            *(verify.decode(_without_auto(texture), parts, clip, samples, f)[0] for f in FACTORS),
        ]
    return [verify.decode(texture, parts, clip, samples, f)[0] for f in FACTORS]


def _without_auto(texture):
    from dataclasses import replace

    return replace(texture, auto=None)


CASES = [
    ("VERTEX", "PNG8", False), ("VERTEX", "EXR32", False),
    ("BONE_MATRIX", "PNG16", False), ("BONE_MATRIX", "EXR16", False),
    ("BONE_DQ", "PNG8", False), ("BONE_DQ", "EXR32", False),
    ("BONE_DQ", "PNG16", True), ("BONE_MATRIX", "EXR32", True),
]  # fmt: skip


@pytest.mark.parametrize(("kind", "precision", "auto"), CASES)
def test_bounds_hold_every_decoded_pose(kind, precision, auto):
    scene = synthetic.scene(kind, precision, auto=auto)
    texture = scene.texture
    parts = parts_of(scene, kind != "VERTEX")
    bounds = pose_bounds(texture, parts)
    assert len(bounds) == len(texture.clips)
    slack = []
    for ci, clip in enumerate(texture.clips):
        count = clip.frame_count
        got = bounds[ci]
        assert got.lo.shape == got.hi.shape == (count, 2, 3) and got.lo.dtype == np.float32
        intervals = count if clip.loop else max(count - 1, 1)
        samples = (np.arange(intervals)[:, None] + np.arange(SUBSAMPLES)[None] / SUBSAMPLES).ravel()
        if not clip.loop:
            samples = np.append(samples, [count - 1, count + 2.5])  # the last frame, and held past the end
        interval = np.minimum(np.floor(samples).astype(int), count - 1)
        played = decoded(texture, parts, ci, samples)
        for positions in played:
            for m, part in enumerate(parts):
                p = positions[:, part.start : part.stop].astype(np.float64)
                lo, hi = got.lo[interval, m][:, None], got.hi[interval, m][:, None]
                assert (p >= lo).all() and (p <= hi).all(), (clip.name, m)
                assert (p >= got.clip_lo[m]).all() and (p <= got.clip_hi[m]).all()
        # tight: no side of a clip's box is further beyond the decoded poses than a few % of their extent
        for m, part in enumerate(parts):
            every = np.concatenate([d[:, part.start : part.stop].reshape(-1, 3) for d in played])
            extent = np.ptp(every, axis=0).max()
            slack.append(
                max((every.min(0) - got.clip_lo[m]).max(), (got.clip_hi[m] - every.max(0)).max()) / extent
            )
    print(
        f"{kind} {precision} auto={auto}: boxes beyond the decoded poses by {max(slack):.2%} of the extent"
    )
    if kind == "VERTEX":  # linear between frames: the frames' own boxes and float32's allowance
        assert max(slack) < 1e-5
    elif auto:  # a smooth limb: the arc allowance costs a few % (measured: 2.7 %, 3.6 %)
        assert max(slack) < 0.05
    # (the random rig's four random bones per vertex flip dual quaternion signs between frames: a jump, so
    # a large second difference, and boxes 43 % of the extent wider: held, not tight)


def test_sidecar_carries_the_boxes_as_float32():
    """``build_metadata`` writes them as the schema says: the clip's boxes read back as the float32 boxes
    exactly; the per-frame boxes, rounded outward to 4 significant digits of the clip's extent (a third of
    the text), read back as float32 enclose the computed ones, within 2e-3 of the extent."""
    import json

    import jsonschema

    from hybrid_skin.core.animtex import build_metadata, dumps, load_schema

    scene = synthetic.scene("BONE_DQ", "PNG16")
    parts = parts_of(scene, True)
    bounds = pose_bounds(scene.texture, parts)
    meta = json.loads(dumps(build_metadata(scene.texture, pose_bounds=(["Body", "Head"], bounds))))
    jsonschema.validate(meta, load_schema())
    assert meta["pose_bounds"]["meshes"] == ["Body", "Head"]
    for entry, want in zip(meta["clips"], bounds):
        got = entry["pose_bounds"]
        lo, hi = np.asarray(got["frames"]["min"], np.float32), np.asarray(got["frames"]["max"], np.float32)
        assert (lo <= want.lo).all() and (hi >= want.hi).all()
        extent = (want.clip_hi - want.clip_lo).max(axis=1)[None, :, None]
        assert (want.lo - lo <= 2e-3 * extent).all() and (hi - want.hi <= 2e-3 * extent).all()
        np.testing.assert_array_equal(np.asarray(got["min"], np.float32), want.clip_lo)
        np.testing.assert_array_equal(np.asarray(got["max"], np.float32), want.clip_hi)
        assert len(got["frames"]["min"]) == entry["frame_count"]
    with pytest.raises(ValueError, match="not this texture.s"):
        build_metadata(scene.texture, pose_bounds=(["Body"], bounds))
