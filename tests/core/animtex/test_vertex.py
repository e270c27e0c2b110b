"""VERTEX textures: round trip per precision, wrapping past 16,384 vertices, clips, loops, sidecar."""

from __future__ import annotations

import numpy as np
import pytest

from hybrid_skin.core.animtex import (
    Clip,
    Precision,
    build_metadata,
    decode_values,
    decode_vertex_frames,
    dumps,
    encode_vertex_animation,
    loads,
    texture_from_metadata,
)
from hybrid_skin.core.animtex.layout import Region

RNG = np.random.default_rng(11)


def _rz(theta: np.ndarray) -> np.ndarray:
    c, s = np.cos(theta), np.sin(theta)
    m = np.zeros(np.shape(theta) + (3, 3))
    m[..., 0, 0], m[..., 0, 1], m[..., 1, 0], m[..., 1, 1], m[..., 2, 2] = c, -s, s, c, 1.0
    return m


def random_rest(n: int) -> np.ndarray:
    return (RNG.normal(size=(n, 3)) * [1.0, 0.5, 2.0]).astype(np.float32)


def animate(rest: np.ndarray, samples: np.ndarray, period: float = 12.0) -> tuple[np.ndarray, np.ndarray]:
    """Analytic animation at fractional ``samples``: a twist about z (varying with z) plus a drift in x.

    Returns float32 ``positions (S, N, 3)`` and unit ``normals (S, N, 3)``; the normals are the rest
    directions carried along, which is all a texture test needs.
    """
    frac = np.asarray(samples, dtype=np.float64)[:, None] / period
    twist = np.pi * frac * (1 + 0.3 * np.sin(rest[None, :, 2]))
    rot = _rz(twist)  # (S, N, 3, 3)
    pos = np.einsum("snij,nj->sni", rot, rest) + 0.3 * frac[..., None] * [1.0, 0.0, 0.0]
    unit = rest / np.linalg.norm(rest, axis=1, keepdims=True)
    return pos.astype(np.float32), np.einsum("snij,nj->sni", rot, unit).astype(np.float32)


def spinning_mesh(n: int, samples: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rest = random_rest(n)
    return (rest, *animate(rest, samples))


def position_bound(truth: np.ndarray, rest: np.ndarray, precision: Precision) -> np.ndarray:
    """Per-axis decode error bound derived from the data's offset AABB (independent of the encoder)."""
    off = truth.astype(np.float64) - rest
    lo, hi = off.reshape(-1, 3).min(0), off.reshape(-1, 3).max(0)
    if precision.normalized:
        storage = (hi - lo) / (2 * precision.max_code)
    else:
        half_extent = np.maximum((hi - lo) / 2, 1e-300)  # a channel that never moves is stored exactly
        exponent = np.floor(np.log2(half_extent))
        storage = np.where(hi > lo, 2.0 ** (exponent - (11 if precision is Precision.EXR16 else 24)), 0.0)
    arithmetic = 2.0**-22 * np.maximum(np.abs(lo), np.abs(hi))  # offset + scale * c, and the lerp
    final_add = 2.0**-24 * np.abs(truth).max()  # rest + offset rounded to float32
    return storage + arithmetic + final_add


def normal_bound(precision: Precision) -> float:
    """|decoded - truth| for unit normals: per-component error δ, |e| ≤ √3 δ, renormalising doubles it."""
    delta = {
        Precision.PNG8: 1 / 254,
        Precision.PNG16: 1 / 65534,
        Precision.EXR16: 2.0**-11,
        Precision.EXR32: 2.0**-24,
    }[precision]
    return 2 * np.sqrt(3) * (delta + 2.0**-22)


@pytest.mark.parametrize("precision", list(Precision))
def test_vertex_round_trip_within_encoding_bound(precision: Precision) -> None:
    clips = [Clip("twist", 1, 9, loop=False), Clip("spin", 1, 13, loop=True)]
    rest = random_rest(500)
    data = [animate(rest, np.arange(c.frame_count, dtype=float) * (ci + 1)) for ci, c in enumerate(clips)]
    positions = [p for p, _ in data]
    normals = [n for _, n in data]
    tex = encode_vertex_animation(rest, positions, normals, clips, precision=precision, max_width=256)
    all_pos = np.concatenate(positions)
    bound = position_bound(all_pos, rest, precision)
    for ci, clip in enumerate(clips):
        frames = np.arange(clip.frame_count, dtype=float)
        pos, nrm = decode_vertex_frames(tex, rest, ci, frames)
        err = np.abs(pos - positions[ci]).reshape(-1, 3).max(0)
        assert np.all(err <= bound), (precision, err, bound)
        assert np.linalg.norm(nrm - normals[ci], axis=-1).max() <= normal_bound(precision)
        # Halfway between frames the decoder is the lerp of the stored frames: bound carries over.
        mid = frames[:-1] + 0.5
        pos_mid, _ = decode_vertex_frames(tex, rest, ci, mid)
        lerp = 0.5 * (positions[ci][:-1].astype(np.float64) + positions[ci][1:])
        assert np.all(np.abs(pos_mid - lerp).reshape(-1, 3).max(0) <= bound)
    if precision is Precision.PNG8:  # the bound is tight: 8 bits are visibly coarse
        assert err.max() > 0.5 * bound.max()


def test_more_than_16384_vertices_wrap_and_decode() -> None:
    n = 20_000
    rest, pos, nrm = spinning_mesh(n, np.arange(3, dtype=float))
    clip = Clip("a", 0, 2)
    narrow = encode_vertex_animation(rest, [pos], [nrm], [clip], precision=Precision.EXR32, max_width=8192)
    wide = encode_vertex_animation(rest, [pos], [nrm], [clip], precision=Precision.EXR32, max_width=16384)
    assert (narrow.layout.width, narrow.layout.rows_per_frame) == (8192, 5)  # 4096 vertices per row
    assert (wide.layout.width, wide.layout.rows_per_frame) == (16384, 3)
    bound = position_bound(pos, rest, Precision.EXR32)
    for tex in (narrow, wide):
        decoded, _ = decode_vertex_frames(tex, rest, 0, np.arange(3.0))
        assert np.all(np.abs(decoded - pos).reshape(-1, 3).max(0) <= bound)
    # The last vertex sits on the last row of each band, at column (19999 % 4096) * 2.
    x0, row = narrow.layout.item_texels(np.array([n - 1]))
    assert (x0[0], row[0]) == ((n - 1) % 4096 * 2, 4)


@pytest.mark.parametrize("loop", [False, True])
def test_one_frame_clip_plays_its_frame_at_any_time(loop: bool) -> None:
    rest, pos, nrm = spinning_mesh(50, np.array([2.0]))
    clip = Clip("pose", 5, 5, loop=loop)
    assert clip.frame_count == 1
    tex = encode_vertex_animation(rest, [pos], [nrm], [clip], precision=Precision.PNG16)
    decoded, _ = decode_vertex_frames(tex, rest, "pose", np.array([-3.0, 0.0, 0.4, 7.9]))
    bound = position_bound(pos, rest, Precision.PNG16)
    assert np.all(np.abs(decoded - pos).max(axis=1) <= bound)


def test_loop_interpolates_last_to_first_and_clamp_holds() -> None:
    rest, pos, nrm = spinning_mesh(40, np.arange(6, dtype=float))
    clips = [Clip("loop", 0, 6, loop=True), Clip("once", 0, 5)]
    tex = encode_vertex_animation(rest, [pos, pos], [nrm, nrm], clips, precision=Precision.EXR32)
    wrap, _ = decode_vertex_frames(tex, rest, "loop", np.array([5.5, 6.0, -0.5]))
    expect = 0.5 * (pos[5].astype(np.float64) + pos[0])
    np.testing.assert_allclose(wrap[0], expect, atol=1e-5)
    np.testing.assert_allclose(wrap[1], pos[0], atol=1e-5)
    np.testing.assert_allclose(wrap[2], expect, atol=1e-5)
    held, _ = decode_vertex_frames(tex, rest, "once", np.array([5.5, 100.0, -2.0]))
    np.testing.assert_allclose(held, pos[[5, 5, 0]], atol=1e-5)


def test_clips_do_not_bleed_into_each_other() -> None:
    rest = RNG.normal(size=(30, 3)).astype(np.float32)
    a = np.broadcast_to(rest + 1.0, (4, 30, 3)).astype(np.float32)
    b = np.broadcast_to(rest - 5.0, (3, 30, 3)).astype(np.float32)
    nrm = [np.broadcast_to([0.0, 0.0, 1.0], x.shape).astype(np.float32) for x in (a, b)]
    tex = encode_vertex_animation(
        rest, [a, b], nrm, [Clip("a", 0, 3), Clip("b", 0, 2)], precision=Precision.PNG8, max_width=16
    )
    # Past the end of clip "a" the next rows belong to "b": the guard band must stop the lerp.
    decoded, _ = decode_vertex_frames(tex, rest, "a", np.array([3.0, 3.5, 3.999]))
    step = 6.0 / 255  # AABB of offsets is [-5, 1] per axis
    assert np.abs(decoded - (rest + 1.0)).max() <= step / 2 + 1e-6


def test_pixels_hold_what_locate_says() -> None:
    rest, pos, nrm = spinning_mesh(37, np.arange(4, dtype=float))
    tex = encode_vertex_animation(
        rest, [pos], [nrm], [Clip("a", 0, 3)], precision=Precision.EXR32, max_width=16, power_of_two=True
    )
    ys, xs = np.nonzero(np.ones(tex.pixels.shape[:2], bool))
    owner = tex.layout.locate(xs, ys)
    frame = owner.region == Region.FRAME
    pos_texel = frame & (owner.slot == 0)
    channel = tex.pixels[ys[pos_texel], xs[pos_texel], :3].astype(np.float64)
    stored = tex.decode_offset[0, 0, :3] + tex.decode_scale[0, 0, :3] * channel  # z never moves: scale 0
    truth = pos[owner.frame[pos_texel], owner.item[pos_texel]] - rest[owner.item[pos_texel]]
    np.testing.assert_allclose(stored, truth, atol=1e-6)
    assert np.all(tex.pixels[ys[owner.region == Region.PADDING], xs[owner.region == Region.PADDING]] == 0)


@pytest.mark.parametrize("precision", list(Precision))
def test_sidecar_and_file_pixels_rebuild_an_identical_decoder(precision: Precision) -> None:
    rest, pos, nrm = spinning_mesh(64, np.arange(5, dtype=float))
    tex = encode_vertex_animation(
        rest, [pos], [nrm], [Clip("a", 1, 5)], precision=precision, deform_factor=0.4
    )
    meta = loads(dumps(build_metadata(tex, image="crowd.png")))
    # Blender hands back float pixels ([0, 1] for PNG): the decoder must rebuild the same codes.
    again = texture_from_metadata(meta, tex.channels())
    np.testing.assert_array_equal(again.pixels, tex.pixels)
    samples = np.array([0.0, 1.5, 3.25])
    np.testing.assert_array_equal(
        decode_vertex_frames(again, rest, 0, samples)[0], decode_vertex_frames(tex, rest, 0, samples)[0]
    )
    assert meta["deform_factor"] == {"value": 0.4, "baked": True}
    # Decoding straight from the stored codes (only the bands it needs) equals decoding the channels.
    for s in (samples, np.arange(5.0)):
        np.testing.assert_array_equal(decode_values(tex, 0, s), decode_values(tex, 0, s, tex.channels()))


def test_mismatched_inputs_are_rejected() -> None:
    rest, pos, nrm = spinning_mesh(10, np.arange(4, dtype=float))
    with pytest.raises(ValueError, match="samples"):
        encode_vertex_animation(rest, [pos], [nrm], [Clip("a", 0, 5)])
    bad = pos.copy()
    bad[1, 2, 0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        encode_vertex_animation(rest, [bad], [nrm], [Clip("a", 0, 3)])
