"""A texture's plan (core.animtex.plan) from counts alone, against the textures the encoders make, and the
streamed error report against the report of every sample at hand."""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest

from hybrid_skin.core.animtex import (
    Clip,
    Precision,
    encode_bone_dq_animation,
    encode_vertex_animation,
)
from hybrid_skin.core.animtex.layout import MAX_TEXTURE_SIZE
from hybrid_skin.core.animtex.plan import clips_at, fitting_step, plan_texture, samples_that_fit
from hybrid_skin.core.animtex.samples import FrameSample, clip_frames, frame_key
from hybrid_skin.core.animtex.verify import HALVES, ReportStream, bake_report, scene_diagonal
from hybrid_skin.core.budget import MIB, bytes_text, memory_budget

RNG = np.random.default_rng(7)
CLIPS = (Clip("walk", 1, 30, 24.0, loop=True), Clip("wave", 5, 17.5, 24.0, frame_step=0.5))


@pytest.mark.parametrize("precision", ["PNG8", "PNG16", "EXR16", "EXR32"])
@pytest.mark.parametrize(("power_of_two", "embed"), [(False, True), (True, False)])
def test_the_plan_is_the_layout_the_vertex_encoder_makes(precision, power_of_two, embed):
    n = 3000
    rest = RNG.normal(size=(n, 3)).astype(np.float32)
    positions = [rest + RNG.normal(size=(c.frame_count, n, 3)).astype(np.float32) for c in CLIPS]
    normals = [np.broadcast_to(np.float32([0, 0, 1]), p.shape) for p in positions]
    texture = encode_vertex_animation(
        rest, positions, normals, CLIPS, precision=Precision(precision), max_width=512,
        power_of_two=power_of_two, embed_metadata=embed,
    )  # fmt: skip
    plan = plan_texture("VERTEX", precision, item_count=n, vertex_count=n, part_count=1, clips=CLIPS,
                        max_width=512, power_of_two=power_of_two, embed_metadata=embed)  # fmt: skip
    assert plan.layout == texture.layout and plan.fits
    assert plan.image_bytes == texture.pixels.nbytes
    assert plan.kept_bytes >= sum(p.nbytes + q.nbytes for p, q in zip(positions, normals))


def test_the_plan_is_the_layout_the_bone_encoder_makes():
    bones = 40
    mats = [np.tile(np.eye(4), (c.frame_count, bones, 1, 1)) for c in CLIPS]
    names = [f"b{i}" for i in range(bones)]
    texture = encode_bone_dq_animation(mats, CLIPS, names, precision=Precision.EXR16, max_width=64)
    plan = plan_texture("BONE_DQ", "EXR16", item_count=bones, vertex_count=5000, part_count=2, clips=CLIPS,
                        max_width=64)  # fmt: skip
    assert plan.layout == texture.layout and plan.image_bytes == texture.pixels.nbytes


def test_a_texture_too_tall_is_planned_not_built():
    """400,000 frames of 30,000 items: the plan is counts only (no pixel, nothing allocated)."""
    tracemalloc.start()
    plan = plan_texture("VERTEX", "EXR32", item_count=30_000, vertex_count=30_000, part_count=1,
                        clips=[Clip("stray", 1, 400_000, 24.0)])  # fmt: skip
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert not plan.fits and plan.layout.height > 1_000_000
    assert plan.image_bytes > 4e11 and plan.kept_bytes > 2e11 and peak < 1 << 20


@pytest.mark.parametrize("max_width", [16, 4096])
def test_the_fitting_step_is_the_smallest_that_fits(max_width):
    clips = [Clip("a", 1, 1200, 24.0), Clip("b", 1, 60_000, 24.0, loop=True), Clip("c", 3, 3, 24.0)]

    def plan(step):
        return plan_texture("VERTEX", "PNG16", item_count=900, vertex_count=900, part_count=1,
                            clips=clips_at(clips, step), max_width=max_width)  # fmt: skip

    step = fitting_step(plan(1))
    assert plan(step).fits and not plan(step - 0.01).fits, step
    assert plan(step).stored_samples <= samples_that_fit(plan(1)) < plan(step - 0.01).stored_samples
    assert plan(step).layout.height <= MAX_TEXTURE_SIZE


def test_no_step_fits_more_clips_than_rows():
    clips = [Clip(f"c{i}", 1, 1, 24.0) for i in range(200)]
    plan = plan_texture("VERTEX", "PNG8", item_count=16_384 * 100, vertex_count=1, part_count=1, clips=clips,
                        max_width=16_384)  # fmt: skip
    assert plan.layout.rows_per_frame == 200 and samples_that_fit(plan) < len(clips)
    assert fitting_step(plan) is None


def test_memory_budget_words():
    assert memory_budget(3).bytes == 3 * MIB and "asked for" in memory_budget(3).origin
    default = memory_budget()
    assert default.bytes > 0 and default.origin
    assert bytes_text(1_500_000_000) == "1.5 GB" and bytes_text(640) == "640 bytes"
    assert bytes_text(123_456_789) == "123 MB"


@pytest.mark.parametrize("precision", ["PNG8", "EXR32"])
def test_the_streamed_report_is_the_report_of_every_sample(precision):
    """Samples fed one at a time, in time order (stored and halfway interleaved), give the report that
    every sample at hand gives, number for number."""
    n = 50
    rest = RNG.normal(size=(n, 3)).astype(np.float32)
    normals = np.tile(np.float32([0, 0, 1]), (n, 1))
    world = np.diag([2.0, 2.0, 2.0, 1.0])[None]

    class Part:
        base, start, stop, bone_indices, bone_weights, auto_rest = rest, 0, n, None, None, None

    Part.normals = normals

    def truth(frame):
        wave = np.sin(0.3 * frame + rest[:, :1])
        return FrameSample((rest + 0.1 * wave).astype(np.float32), normals, None, world)

    samples = {
        (ci, frame_key(f)): truth(f) for ci, c in enumerate(CLIPS) for f in np.concatenate(clip_frames(c))
    }
    positions = [np.stack([samples[(ci, frame_key(f))].positions for f in c.sample_frames()])
                 for ci, c in enumerate(CLIPS)]  # fmt: skip
    texture = encode_vertex_animation(rest, positions, [np.broadcast_to(normals, p.shape) for p in positions],
                                      CLIPS, precision=Precision(precision))  # fmt: skip
    diagonal = scene_diagonal([Part], samples)
    expected = bake_report(texture, [Part], samples, diagonal=diagonal, bone_factor=0.5)
    stream = ReportStream(texture, [Part], bone_factor=0.5)
    for ci, clip in enumerate(CLIPS):
        halves = zip(HALVES, clip_frames(clip))
        order = sorted((f, half, j) for half, frames in halves for j, f in enumerate(frames))
        for frame, half, j in order:
            stream.add(ci, half, j, samples[(ci, frame_key(frame))])
    assert stream.diagonal == pytest.approx(diagonal, rel=1e-12)
    assert stream.report() == expected
