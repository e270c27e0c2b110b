"""Error report numbers and the tolerance-driven choice of sample rate and precision."""

from __future__ import annotations

import numpy as np
import pytest

from hybrid_skin.core.animtex import (
    Clip,
    EncodingChoice,
    Precision,
    choose_encoding,
    clip_errors,
    decode_vertex_frames,
    encode_vertex_animation,
    encoding_candidates,
    error_report,
    mid_samples,
    pick_encoding,
)
from hybrid_skin.core.animtex.report import (
    ErrorAccumulator,
    bbox_diagonal,
    error_stats,
    normal_angles,
    position_errors,
)
from hybrid_skin.core.dualquat import quaternion_to_matrix


def test_error_stats_against_hand_computed_distances() -> None:
    truth = np.zeros((2, 2, 3))
    decoded = truth.copy()
    decoded[0, 0] = [3.0, 4.0, 0.0]  # distance 5
    decoded[1, 1] = [0.0, 0.0, 1.0]  # distance 1
    stats = error_stats(truth, decoded, diagonal=50.0)
    assert stats == {"max": 5.0, "mean": 1.5, "max_percent": 10.0, "mean_percent": 3.0, "count": 4}
    with pytest.raises(ValueError):
        error_stats(truth, decoded[:1], diagonal=1.0)


def test_bbox_diagonal_and_mid_samples() -> None:
    pts = np.array([[[0.0, 0, 0], [1, 2, 2]], [[-1, 0, 0], [0, 0, 0]]])
    assert bbox_diagonal(pts) == pytest.approx(np.sqrt(4 + 4 + 4))
    np.testing.assert_array_equal(mid_samples(4, loop=False), [0.5, 1.5, 2.5])
    np.testing.assert_array_equal(mid_samples(4, loop=True), [0.5, 1.5, 2.5, 3.5])
    assert mid_samples(1, loop=False).size == 0


def test_report_combines_clips_weighted_by_samples() -> None:
    z = np.zeros((1, 3, 3))
    a = clip_errors("a", z, z + [0.0, 0.0, 2.0], diagonal=10.0)  # 3 errors of 2
    b = clip_errors("b", np.zeros((3, 3, 3)), np.zeros((3, 3, 3)), z, z + [1.0, 0, 0], diagonal=10.0)
    report = error_report([a, b], diagonal=10.0)
    assert report["frames"]["max"] == 2.0
    assert report["frames"]["mean"] == pytest.approx(2.0 * 3 / 12)  # 3 of 12 frame samples err by 2
    assert report["mid_frames"] == {
        "max": 1.0,
        "mean": 1.0,
        "count": 3,
        "max_percent": 10.0,
        "mean_percent": 10.0,
    }
    assert report["overall"]["mean"] == pytest.approx((6.0 + 3.0) / 15)
    assert report["overall"]["max_percent"] == pytest.approx(20.0)


def test_choose_encoding_prefers_the_smallest_texture_that_meets_tolerance() -> None:
    # Synthetic errors: sampling error grows with step, quantisation error shrinks with precision.
    sampling = {8: 0.5, 4: 0.08, 3: 0.04, 2: 0.02, 1: 0.0}
    quant = {Precision.PNG8: 0.03, Precision.PNG16: 0.001, Precision.EXR16: 0.002, Precision.EXR32: 0.0}
    calls = []

    def evaluate(step: int, precision: Precision) -> float:
        calls.append((step, precision))
        return sampling[step] + quant[precision]

    choice = choose_encoding(0.051, evaluate)
    # Size ∝ bytes/step, ties → larger step first: (8, PNG8) 0.5; (8, PNG16), (8, EXR16), (4, PNG8) 1;
    # (3, PNG8) 1.33; (8, EXR32), (4, PNG16), (4, EXR16), (2, PNG8) 2 - the first that meets 0.051.
    assert (choice.step, choice.precision, choice.met) == (2, Precision.PNG8, True)
    assert choice.max_error == pytest.approx(0.05)
    p8, p16, h16, f32 = Precision
    assert calls == [(8, p8), (8, p16), (8, h16), (4, p8), (3, p8), (8, f32), (4, p16), (4, h16), (2, p8)]
    assert [t[:2] for t in choice.tried] == calls

    calls.clear()
    strict = choose_encoding(-0.0, lambda s, p: evaluate(s, p) + 1e-3)
    assert not strict.met and len(calls) == 20  # every candidate tried once
    assert (strict.step, strict.precision) == (1, Precision.EXR32)  # the most accurate one tried
    with pytest.raises(ValueError):
        choose_encoding(-1.0, evaluate)


def test_sub_frame_steps_are_candidates_ordered_by_texture_size() -> None:
    p8, p16, h16, f32 = Precision
    order = encoding_candidates((1.0, 0.5), (p8, p16, h16, f32))
    # bytes/step: (1, PNG8) 4; (1, PNG16), (1, EXR16), (0.5, PNG8) 8 - the larger step first on a tie.
    assert order[:4] == [(1, p8), (1, p16), (1, h16), (0.5, p8)]
    assert isinstance(order[0][0], int) and len(order) == 8  # whole steps stay ints (8, not 8.0)
    with pytest.raises(ValueError):
        encoding_candidates((1, 0))
    tried = [(1, p8, 0.4), (1, p16, 0.3), (0.5, p8, 0.2)]
    assert pick_encoding(0.25, tried) == EncodingChoice(0.5, p8, 0.2, True, tuple(tried))
    assert pick_encoding(0.1, tried).met is False and pick_encoding(0.1, tried).step == 0.5


def test_choose_encoding_on_a_real_bake() -> None:
    # A point circling at 1 unit radius, 8 scene frames per quarter turn: lerp between samples cuts the
    # arc, so halfway errors are 1 - cos(θ/2) for samples θ apart.
    rest = np.array([[1.0, 0.0, 0.0]], np.float32)
    scene_frames = np.arange(0, 33)

    def circle(frames: np.ndarray) -> np.ndarray:
        theta = np.pi / 2 * frames / 8.0
        return np.stack([np.cos(theta), np.sin(theta), 0 * theta], -1)[:, None, :].astype(np.float32)

    def evaluate(step: int, precision: Precision) -> float:
        clip = Clip("circle", 0, 32, fps=24, frame_step=step)
        frames = clip.sample_frames()
        tex = encode_vertex_animation(
            rest, [circle(frames)], [circle(frames)], [clip], precision=precision, embed_metadata=False
        )
        samples = (scene_frames - clip.frame_start) / step  # every scene frame, incl. between samples
        got, _ = decode_vertex_frames(tex, rest, 0, samples)
        return float(np.linalg.norm(got - circle(scene_frames), axis=-1).max())

    # Evaluated at every scene frame. Step s puts samples θ = 11.25° × s apart, and halfway between
    # them the chord misses the arc by 1 - cos(θ/2): 0.019 (step 2), 0.076 (step 4); at step 1 every
    # evaluated frame is a sample and only quantisation is left. PNG8 adds ≤ √2 · 2/510 ≈ 0.0055
    # (offsets span 2 units in x and y), PNG16 ≈ 2e-5.
    sagitta = 1 - np.cos(np.radians(11.25))
    choice = choose_encoding(0.03, evaluate, steps=(8, 4, 2, 1))
    assert (choice.step, choice.precision, choice.met) == (2, Precision.PNG8, True)
    assert sagitta - 0.0056 <= choice.max_error <= sagitta + 0.0056
    # Just above the step-2 sagitta: 8 bits no longer fit on top of it, 16 bits do.
    choice = choose_encoding(sagitta + 2e-4, evaluate, steps=(8, 4, 2, 1))
    assert (choice.step, choice.precision) == (2, Precision.PNG16)
    choice = choose_encoding(0.01, evaluate, steps=(8, 4, 2, 1))
    assert (choice.step, choice.precision) == (1, Precision.PNG8)
    choice = choose_encoding(0.003, evaluate, steps=(8, 4, 2, 1))  # below PNG8's reach
    assert (choice.step, choice.precision, choice.met) == (1, Precision.PNG16, True)


def test_normal_angles_match_atan2_from_tiny_to_wide_angles() -> None:
    rng = np.random.default_rng(5)
    axis = rng.normal(size=(200, 3))
    axis /= np.linalg.norm(axis, axis=1, keepdims=True)
    other = np.cross(axis, rng.normal(size=(200, 3)))
    other /= np.linalg.norm(other, axis=1, keepdims=True)
    degrees = np.geomspace(1e-3, 179.0, 200)
    rad = np.radians(degrees)[:, None]
    tilted = np.cos(rad) * axis + np.sin(rad) * other
    scale = rng.uniform(0.5, 2.0, size=(200, 1))  # lengths do not matter
    got = normal_angles((axis * scale).astype(np.float32), tilted.astype(np.float32))
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, degrees, rtol=1e-3, atol=2e-4)
    zero = normal_angles(np.zeros((2, 3)), np.array([[0.0, 0, 1], [0, 0, 0]]))
    np.testing.assert_array_equal(zero, [0.0, 0.0])  # degenerate normals are not counted as errors


def test_streamed_position_errors_equal_one_batch() -> None:
    rng = np.random.default_rng(6)
    truth = rng.normal(size=(4, 50, 3)).astype(np.float32)
    decoded = truth + rng.normal(scale=1e-3, size=truth.shape).astype(np.float32)
    q = np.array([0.9, 0.1, 0.3, 0.2])
    linear = np.diag([2.0, 1.0, 0.5]) @ quaternion_to_matrix(q / np.linalg.norm(q))
    acc = ErrorAccumulator()
    for t, d in zip(truth, decoded):
        acc.add(position_errors(t, d, linear))
    ref = np.linalg.norm((decoded.astype(np.float64) - truth) @ linear.T, axis=-1)
    stats = acc.stats(diagonal=4.0)
    np.testing.assert_allclose([stats["max"], stats["mean"]], [ref.max(), ref.mean()], rtol=1e-5)
    assert stats["count"] == ref.size and stats["max_percent"] == pytest.approx(25.0 * stats["max"])
    whole = error_stats(truth, decoded, diagonal=4.0)
    plain = np.linalg.norm(decoded - truth.astype(np.float64), axis=-1)
    np.testing.assert_allclose(whole["mean"], plain.mean())
    assert ErrorAccumulator().stats(1.0) == {
        "max": 0.0, "mean": 0.0, "max_percent": 0.0, "mean_percent": 0.0, "count": 0
    }  # fmt: skip
