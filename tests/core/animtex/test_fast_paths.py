"""The bake's fast paths (in place, tiled, per component, each frame decoded once) give exactly the
numbers of the plain numpy expressions they replace: textures bit for bit, decoded values and error
statistics to the last bit."""

from __future__ import annotations

import numpy as np
import pytest

from hybrid_skin.core.animtex import (
    Clip,
    Precision,
    decode_values,
    decode_vertex_frames,
    encode_vertex_animation,
)
from hybrid_skin.core.animtex.decode import (
    frame_values,
    lerp_values,
    stream_vertex_frames,
)
from hybrid_skin.core.animtex.layout import GUARD_FRAMES, frame_pair
from hybrid_skin.core.animtex.quantize import (
    channel_values,
    decode_channels,
    decode_terms,
    encode_channels,
    per_channel,
)
from hybrid_skin.core.animtex.report import ErrorAccumulator, normal_angles, position_errors
from hybrid_skin.core.small_linalg import cross3, per_vector, squared_lengths, unit

RNG = np.random.default_rng(23)


def _plain_encode(
    values: np.ndarray, offset: np.ndarray, scale: np.ndarray, precision: Precision
) -> np.ndarray:
    """The quantiser written as plain expressions (what ``encode_channels`` must equal)."""
    v, off, sc = (np.asarray(x, dtype=np.float64) for x in (values, offset, scale))
    if precision.normalized:
        unit = np.where(sc != 0, (v - off) / np.where(sc != 0, sc, 1.0), 1.0)
        return np.clip(np.rint(unit * precision.max_code), 0, precision.max_code).astype(precision.dtype)
    return np.where(sc != 0, v - off, 1.0).astype(precision.dtype)


def _vectors(shape: tuple[int, ...]) -> np.ndarray:
    v = (RNG.normal(size=shape) * np.exp(RNG.uniform(-4, 4, size=shape[:-1] + (1,)))).astype(np.float32)
    v.reshape(-1, 3)[:3] = [[0, 0, 0], [1e-30, 0, 0], [0, -2e-23, 1e-23]]  # zero and underflowing lengths
    return v


@pytest.mark.parametrize(
    ("work_shape", "term_shape"),
    [((5, 1001, 3), (3,)), ((5, 1001, 3), (1, 3)), ((3, 52, 2, 4), (52, 2, 4)), ((4, 2, 7, 3), (2, 1, 3)),
     ((2, 3), ()), ((0, 3), (3,)), ((1, 4096 // 3 + 1, 3), (1, 1, 3))],
)  # fmt: skip
def test_per_channel_is_broadcasting(work_shape: tuple[int, ...], term_shape: tuple[int, ...]) -> None:
    work = RNG.normal(size=work_shape)
    term = RNG.uniform(0.5, 2.0, size=term_shape)
    for op in (np.subtract, np.true_divide, np.multiply, np.add):
        got = work.copy()
        per_channel(op, got, term)
        np.testing.assert_array_equal(got, op(work, term))
    mask = RNG.random(term_shape) < 0.5
    got = work.copy()
    per_channel(np.copyto, got, mask)
    np.testing.assert_array_equal(got, np.where(mask, 1.0, work))
    wide = np.zeros(work_shape[:-1] + (2 * work_shape[-1],))
    strided = wide[..., ::2]  # not C-contiguous: plain broadcasting, still in place
    strided[...] = work
    per_channel(np.subtract, strided, term)
    np.testing.assert_array_equal(strided, work - term)


@pytest.mark.parametrize("precision", list(Precision))
def test_encode_and_decode_channels_equal_the_plain_expressions(precision: Precision) -> None:
    lo = np.array([[-0.4, 2.5, -1.0, 1.0], [-1.0, -1.0, -1.0, 0.0]])
    hi = np.array([[0.9, 2.5, 1.0, 1.0], [1.0, 1.0, 1.0, 1e-3]])  # constant channels: scale 0
    offset, scale = decode_terms(lo, hi, precision, np.array([[0, 0, 1, 0], [1, 1, 1, 0]], bool))
    values = lo + (hi - lo) * RNG.random((3, 999, 2, 4))
    values[0, 0], values[0, 1] = lo - 1e-3, hi + 1e-3  # out of range: clamped (normalised formats)
    expected = _plain_encode(values, offset, scale, precision)
    np.testing.assert_array_equal(encode_channels(values, offset, scale, precision), expected)
    texels = np.zeros((3, 999, 2, 4), dtype=precision.dtype)
    encode_channels(values[..., :3], offset[..., :3], scale[..., :3], precision, out=texels[..., :3])
    np.testing.assert_array_equal(texels[..., :3], expected[..., :3])
    kept = values.copy()
    encode_channels(values, offset, scale, precision, out=np.empty_like(expected))
    np.testing.assert_array_equal(values, kept)  # not the encoder's scratch unless the caller says so
    scratch = values.copy()
    in_place = encode_channels(scratch, offset, scale, precision, overwrite=True)
    np.testing.assert_array_equal(in_place, expected)
    assert not np.array_equal(scratch, kept)  # worked on in place: no copy was made
    with pytest.raises(ValueError, match="out must be"):
        encode_channels(values, offset, scale, precision, out=np.zeros(values.shape, np.int32))
    channels = channel_values(expected, precision)
    if precision.normalized:
        np.testing.assert_array_equal(channels, expected.astype(np.float32) / np.float32(precision.max_code))
    np.testing.assert_array_equal(
        decode_channels(channels, offset, scale), (offset + scale * channels).astype(np.float32)
    )


def test_vector_helpers_equal_einsum_and_masked_divide() -> None:
    v = _vectors((3, 20011, 3))
    np.testing.assert_array_equal(squared_lengths(v), np.einsum("...i,...i->...", v, v))
    length = np.sqrt(np.einsum("...i,...i->...", v, v))[..., None]
    masked = np.divide(v, length, out=np.zeros_like(v), where=length > 0)
    np.testing.assert_array_equal(unit(v), masked)  # zero lengths give (signed) zeros
    columns = np.ascontiguousarray(np.moveaxis(v, -1, 0)).reshape(3, -1).astype(np.float64)
    by_column = np.sqrt(np.einsum("cm,cm->m", columns, columns))
    expected = np.divide(columns, by_column, out=np.zeros_like(columns), where=by_column > 0)
    np.testing.assert_allclose(unit(columns, axis=0), expected, rtol=1e-15, atol=0)
    tiny = np.array([[1e-18, 0.0, 0.0], [1e-17, 0.0, 0.0]])  # squared 1e-36 (zero for Blender), 1e-34
    np.testing.assert_array_equal(unit(tiny, tiny=1e-35), [[0.0, 0.0, 0.0], [1.0, 0.0, 0.0]])
    s = RNG.uniform(0.5, 2.0, size=v.shape[:-1]).astype(np.float32)
    np.testing.assert_array_equal(per_vector(np.multiply, v, s), v * s[..., None])
    wide = v.astype(np.float64)
    np.testing.assert_array_equal(np.sqrt(squared_lengths(wide)), np.linalg.norm(wide, axis=-1))
    np.testing.assert_array_equal(cross3(v, v[::-1]), np.cross(v, v[::-1]))  # the same bits, float32
    np.testing.assert_array_equal(cross3(wide, wide[:1]), np.cross(wide, wide[:1]))  # broadcast, float64
    assert cross3(v, v).dtype == np.float32


def test_error_helpers_equal_their_einsum_forms() -> None:
    t, d = _vectors((40000, 3)), _vectors((40000, 3))
    d[::7] = t[::7] * np.float32(1.5)  # equal directions: angle 0
    lt, ld = np.einsum("...i,...i->...", t, t), np.einsum("...i,...i->...", d, d)
    valid = (lt > 0) & (ld > 0)
    inv_t = np.divide(1.0, np.sqrt(lt), out=np.zeros_like(lt), where=valid)
    inv_d = np.divide(1.0, np.sqrt(ld), out=np.zeros_like(ld), where=valid)
    diff = t * inv_t[..., None] - d * inv_d[..., None]
    half = np.minimum(0.5 * np.sqrt(np.einsum("...i,...i->...", diff, diff)), 1.0)
    np.testing.assert_array_equal(normal_angles(t, d), np.degrees(2.0 * np.arcsin(half)))
    linear = np.array([[0.0, -1.5, 0.0], [1.5, 0.0, 0.0], [0.0, 0.0, 1.5]])
    moved = (d - t) @ linear.astype(np.float32).T
    np.testing.assert_array_equal(position_errors(t, d, linear), np.sqrt(np.einsum("ni,ni->n", moved, moved)))


def test_chained_accumulators_add_in_the_same_order() -> None:
    batches = [RNG.random(RNG.integers(1, 5000)).astype(np.float32) for _ in range(30)]
    direct = ErrorAccumulator()
    for b in batches:
        direct.add(b)
    first, second = ErrorAccumulator(keep_batches=True), ErrorAccumulator(keep_batches=True)
    for i in (*range(20, 30), *range(20)):  # filled out of order, chained in order
        (first if i < 20 else second).add(batches[i])
    chained = ErrorAccumulator.chain(first, second)
    assert (chained.max, chained.total, chained.count) == (direct.max, direct.total, direct.count)
    first = ErrorAccumulator(keep_batches=True)
    for b in batches[:20]:
        first.add(b)
    chained = ErrorAccumulator.chain(first, second)
    assert (chained.max, chained.total, chained.count) == (direct.max, direct.total, direct.count)


def _spinning(n: int, frames: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rest = RNG.normal(size=(n, 3)).astype(np.float32)
    theta = np.linspace(0.0, 2.5, frames)[:, None]
    c, s = np.cos(theta), np.sin(theta)
    x, y, z = rest[:, 0], rest[:, 1], rest[:, 2]
    pos = np.stack([c * x - s * y, s * x + c * y, z + 0.1 * theta], -1)
    nrm = pos / np.linalg.norm(pos, axis=-1, keepdims=True)
    nrm[:, 0] = 0.0  # a zero normal stays zero
    return rest, pos.astype(np.float32), nrm.astype(np.float32)


@pytest.mark.parametrize("precision", list(Precision))
def test_vertex_pixels_equal_a_plain_encoding(precision: Precision) -> None:
    rest, pos, nrm = _spinning(301, 6)
    clips = [Clip("once", 0, 5), Clip("loop", 0, 5, loop=True)]  # 6 and 5 samples
    positions, normals = [pos, pos[:5][::-1]], [nrm, nrm[:5][::-1]]
    tex = encode_vertex_animation(rest, positions, normals, clips, precision=precision, max_width=64)
    lay = tex.layout
    x0, row = lay.item_texels()
    for ci, (clip, p, n) in enumerate(zip(clips, positions, normals)):
        frames = np.r_[np.arange(clip.frame_count), 0 if clip.loop else clip.frame_count - 1]
        values = np.ones((len(frames), len(rest), 2, 4))
        values[:, :, 0, :3] = p[frames].astype(np.float64) - rest
        unit = n[frames].astype(np.float64)
        length = np.sqrt(np.einsum("fni,fni->fn", unit, unit))
        values[:, :, 1, :3] = unit / np.where(length > 0, length, 1.0)[..., None]
        expected = _plain_encode(values, tex.decode_offset, tex.decode_scale, precision)
        for f in range(clip.frame_count + GUARD_FRAMES):
            y = lay.frame_rows(ci, f) + row
            for slot in range(2):
                np.testing.assert_array_equal(tex.pixels[y, x0 + slot], expected[f, :, slot])


@pytest.mark.parametrize("loop", [False, True])
def test_streamed_vertex_frames_equal_decode_vertex_frames(loop: bool) -> None:
    rest, pos, nrm = _spinning(257, 7)
    clip = Clip("a", 0, 7 if loop else 6, loop=loop)  # 7 samples either way
    tex = encode_vertex_animation(rest, [pos], [nrm], [clip], max_width=64)
    mids = np.arange(7 if loop else 6) + 0.5
    for samples in (mids, np.array([0.0, 2.25, 6.0, 9.5, -1.0, 3.0])):  # halfway; any order, on frames too
        seen: list[tuple[str, int]] = []
        for kind, j, positions, normals in stream_vertex_frames(tex, rest, 0, samples):
            at = float(j) if kind == "frame" else samples[j]
            want_p, want_n = decode_vertex_frames(tex, rest, 0, np.array([at]))
            np.testing.assert_array_equal(positions, want_p[0])
            np.testing.assert_array_equal(normals, want_n[0])
            seen.append((kind, j))
        assert [j for kind, j in seen if kind == "frame"] == list(range(7))
        assert [j for kind, j in seen if kind == "sample"] == list(range(len(samples)))
    # Halfway samples come right after the second of their frames: two bands held at a time.
    order = [(kind, j) for kind, j, _, _ in stream_vertex_frames(tex, rest, 0, mids)]
    assert order.index(("sample", 2)) == order.index(("frame", 3)) + 1


def test_frame_values_and_lerp_equal_decode_values() -> None:
    rest, pos, nrm = _spinning(99, 5)
    tex = encode_vertex_animation(rest, [pos], [nrm], [Clip("a", 0, 5, loop=True)], precision=Precision.PNG8)
    samples = np.array([0.0, 0.5, 3.75, 4.5])
    f0, f1, alpha = frame_pair(5, True, samples)
    v = lerp_values(frame_values(tex, 0, f0), frame_values(tex, 0, f1), alpha)
    np.testing.assert_array_equal(v, decode_values(tex, 0, samples))
    np.testing.assert_array_equal(frame_values(tex, 0, f0, count=3), decode_values(tex, 0, f0)[..., :3])
