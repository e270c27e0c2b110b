"""Auto at runtime in bone textures (core/animtex/auto.py): the layout, the embedded table, the sidecar, and
what the decoded data gives against the core evaluated on the rig itself, at stored frames and between."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import jsonschema
import numpy as np
import pytest

from hybrid_skin.core import animtex, autofactor
from hybrid_skin.core.animtex import auto as texture_auto
from hybrid_skin.core.animtex import png
from hybrid_skin.core.animtex.crossfade import crossfade_bone_frames
from hybrid_skin.core.animtex.decode import skin_with_bone_frames
from hybrid_skin.core.animtex.header import EMBED_AUTO_INDEX, read_embedded
from hybrid_skin.core.animtex.layout import Region
from hybrid_skin.core.animtex.samples import FrameSample, clip_frames, frame_key
from hybrid_skin.core.animtex.verify import bake_report, scene_diagonal
from hybrid_skin.core.skinning import SkinBinding, bone_palette, skin, skin_with_ends
from tests.engines import synthetic
from tests.support.auto_rig import CLIPS, auto_rig

RIG = auto_rig()
KINDS = ("BONE_MATRIX", "BONE_DQ")


def clips() -> list[animtex.Clip]:
    return [animtex.Clip(name, start, end, loop=loop) for name, start, end, loop in CLIPS]


def encode(kind: str, precision: str, *, auto: bool = True, profile: str = "ROUND", **kwargs):
    cs = clips()
    frames = [np.arange(c.frame_count, dtype=np.float64) for c in cs]
    matrices = [RIG.deform(i, f) for i, f in enumerate(frames)]
    bake = None
    if auto:
        bones = [RIG.bone_data(i, f) for i, f in enumerate(frames)]
        bake = texture_auto.AutoBake(profile, bones, RIG.vertex_rest().shape[1])
    encoder = animtex.encode_bone_dq_animation if kind == "BONE_DQ" else animtex.encode_bone_matrix_animation
    names = [f"b{i}" for i in range(len(RIG.rest))]
    return encoder(
        matrices, cs, names, bone_pivots=RIG.pivots, precision=animtex.Precision(precision), auto=bake,
        **kwargs,
    )  # fmt: skip


def core_factors(clip: int, frame: float, profile: str = "ROUND") -> np.ndarray:
    """The core's own Auto factors of the rig at a (fractional) frame: the truth."""
    data = RIG.bone_data(clip, frame)[0]
    shape = autofactor.ROUND_SHAPES[profile]
    return autofactor.round_factors(data, RIG.bone_indices, RIG.weights, RIG.vertex_rest(), shape)


def core_positions(clip: int, frame: float, factors: np.ndarray) -> np.ndarray:
    deform = RIG.deform(clip, frame)[0]
    binding = SkinBinding(RIG.bone_indices, RIG.weights, np.ones(len(RIG.positions), np.float32))
    return skin(RIG.positions, binding, bone_palette(deform, RIG.rest), factors)[0]


@pytest.mark.parametrize("kind", KINDS)
def test_auto_rows_leave_every_bone_texel_where_a_reader_finds_it(kind):
    plain, with_auto = encode(kind, "PNG16", auto=False), encode(kind, "PNG16")
    lay, lay_auto = plain.layout, with_auto.layout
    assert plain.auto is None and lay.auto_row_offset == 0
    assert (
        lay_auto.auto_row_offset == lay.rows_per_frame and lay_auto.rows_per_frame == 2 * lay.rows_per_frame
    )
    assert (lay_auto.width, lay_auto.texels_per_item, lay_auto.items_per_row) == (
        lay.width, lay.texels_per_item, lay.items_per_row
    )  # fmt: skip
    for c in range(len(plain.clips)):  # every band's bone rows hold the same codes as without Auto
        for f in range(plain.clips[c].frame_count + 1):
            a, b = lay.frame_rows(c, f), lay_auto.frame_rows(c, f)
            np.testing.assert_array_equal(
                plain.pixels[a : a + lay.rows_per_frame], with_auto.pixels[b : b + lay.rows_per_frame]
            )
        np.testing.assert_array_equal(
            animtex.decode_values(plain, c, [0.0, 2.5]), animtex.decode_values(with_auto, c, [0.0, 2.5])
        )
    owner = lay_auto.locate(*np.meshgrid(np.arange(lay_auto.width), np.arange(lay_auto.height)))
    auto_texels = owner.region == Region.AUTO
    assert auto_texels.sum() == len(RIG.rest) * 2 * sum(c.frame_count + 1 for c in plain.clips)
    assert set(np.unique(owner.slot[auto_texels])) == {0, 1}


@pytest.mark.parametrize("kind", KINDS)
def test_embedded_table_and_sidecar_describe_the_auto_data(kind):
    tex = encode(kind, "PNG16", profile="KEEP_VOLUME")
    block = read_embedded(tex.channels())
    assert block["globals"][EMBED_AUTO_INDEX - 16] > 0
    shape = autofactor.ROUND_SHAPES["KEEP_VOLUME"]
    expected = [shape.width, shape.swing_exponent, shape.twist_weight, autofactor.ANGLE_EPSILON**2,
                autofactor.QUARTER_TURN_SQ, tex.layout.auto_row_offset, 2, 4, autofactor.PRESENCE_WEIGHT,
                0, 0, 0]  # fmt: skip
    np.testing.assert_array_equal(block["auto"], np.float32(expected))
    b = len(RIG.rest)
    np.testing.assert_array_equal(block["auto_bones"][:, :8], tex.auto.decode_offset.reshape(b, 8))
    np.testing.assert_array_equal(block["auto_bones"][:, 8:], tex.auto.decode_scale.reshape(b, 8))
    assert read_embedded(encode(kind, "PNG16", auto=False).channels())["auto"] is None
    meta = json.loads(animtex.dumps(animtex.build_metadata(tex)))
    jsonschema.validate(meta, animtex.load_schema())
    assert (
        meta["auto"]["profile"] == "KEEP_VOLUME" and meta["auto"]["row_offset"] == tex.layout.auto_row_offset
    )
    assert meta["auto"]["presence"] == float(np.float32(autofactor.PRESENCE_WEIGHT))
    assert meta["mesh_attributes"]["auto_rest"] == "animtex_auto_rest"
    back = animtex.texture_from_metadata(meta, tex.pixels)
    assert back.layout == tex.layout and back.auto.presence == tex.auto.presence
    for name in ("value_min", "value_max", "decode_offset", "decode_scale"):
        np.testing.assert_array_equal(getattr(back.auto, name), getattr(tex.auto, name))
    np.testing.assert_array_equal(
        texture_auto.decode_auto(back, 0, [3.5]), texture_auto.decode_auto(tex, 0, [3.5])
    )
    plain = json.loads(animtex.dumps(animtex.build_metadata(encode(kind, "PNG16", auto=False))))
    assert "auto" not in plain and "auto_rest" not in plain["mesh_attributes"]
    assert animtex.texture_from_metadata(plain, encode(kind, "PNG16", auto=False).pixels).auto is None


def test_auto_needs_a_round_profile_and_a_bone_kind():
    with pytest.raises(ValueError, match="round Auto profiles"):
        texture_auto.AutoBake("JOINT", [RIG.bone_data(0, [0.0])], 4)
    with pytest.raises(ValueError, match="carries no Auto"):
        texture_auto.decode_auto(encode("BONE_DQ", "PNG16", auto=False), 0, [0.0])


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("precision", ["PNG8", "PNG16", "EXR16", "EXR32"])
def test_the_rest_pose_gives_factor_one(kind, precision):
    """A clip holding the rest pose beside a moving one: twist and swing are stored with the signed mapping,
    so in PNG zero decodes to zero and f = 1 exactly, as the core has it at rest; EXR centres each range, so
    zero is within its error bound."""
    cs = [clips()[0], animtex.Clip("rest", 1, 1)]
    frames = np.arange(cs[0].frame_count, dtype=np.float64)
    matrices = [RIG.deform(0, frames), np.tile(np.eye(4), (1, len(RIG.rest), 1, 1))]
    bones = [RIG.bone_data(0, frames), np.zeros((1, len(RIG.rest), autofactor.BONE_DATA_WIDTH))]
    bake = texture_auto.AutoBake("ROUND", bones, 4)
    encoder = animtex.encode_bone_dq_animation if kind == "BONE_DQ" else animtex.encode_bone_matrix_animation
    names = [f"b{i}" for i in range(len(RIG.rest))]
    tex = encoder(
        matrices, cs, names, bone_pivots=RIG.pivots, precision=animtex.Precision(precision), auto=bake
    )
    data = texture_auto.decode_auto(tex, 1, [0.0])
    factors = texture_auto.texture_factors(tex, data, RIG.bone_indices, RIG.weights, RIG.vertex_rest())
    if precision.startswith("PNG"):
        np.testing.assert_array_equal(data[..., :4], 0.0)
        np.testing.assert_array_equal(factors, 1.0)
    else:
        np.testing.assert_allclose(factors, 1.0, rtol=0, atol=1e-5)


#: Largest |f_runtime - f_core| at stored frames per precision (float32 and quantisation of the data).
STORED_TOL = {"PNG8": 0.2, "PNG16": 2e-3, "EXR16": 2e-2, "EXR32": 2e-5}


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("precision", list(STORED_TOL))
def test_decoded_auto_gives_the_core_factors(kind, precision):
    tex = encode(kind, precision)
    rest = RIG.vertex_rest()
    worst = {"frames": 0.0, "mid_frames": 0.0}
    for c, clip in enumerate(tex.clips):
        data = texture_auto.decode_auto(tex, c, np.arange(clip.frame_count, dtype=np.float64))
        truth = RIG.bone_data(c, np.arange(clip.frame_count))
        bound = animtex.error_bound(
            tex.auto.value_min,
            tex.auto.value_max,
            tex.auto.decode_offset,
            tex.auto.decode_scale,
            tex.precision,
        ).reshape(-1, 8)
        assert np.all(np.abs(data - truth) <= bound[None] * 1.001 + 1e-7)
        mids = animtex.mid_samples(clip.frame_count, clip.loop)
        for name, samples in (
            ("frames", np.arange(clip.frame_count, dtype=np.float64)),
            ("mid_frames", mids),
        ):
            got = texture_auto.texture_factors(
                tex, texture_auto.decode_auto(tex, c, samples), RIG.bone_indices, RIG.weights, rest
            )
            want = np.stack([core_factors(c, s % clip.frame_count if clip.loop else s) for s in samples])
            worst[name] = max(worst[name], float(np.abs(got - want).max()))
    print(f"{kind} {precision}: |f - f_core| stored {worst['frames']:.3g}, halfway {worst['mid_frames']:.3g}")
    assert worst["frames"] <= STORED_TOL[precision]
    assert worst["mid_frames"] <= 0.25  # interpolation of the data, not of the pose: measured, bounded


@pytest.mark.parametrize("kind", KINDS)
def test_auto_skins_like_the_core_at_stored_frames(kind):
    """EXR32: the decoded bones and Auto data skin as the core skins the rig with its own Auto factors."""
    tex = encode(kind, "EXR32")
    extent = np.abs(RIG.positions).max()
    for c, clip in enumerate(tex.clips):
        samples = np.arange(clip.frame_count, dtype=np.float64)
        frames = animtex.decode_bone_frames(tex, c, samples)
        factors = texture_auto.texture_factors(
            tex, texture_auto.decode_auto(tex, c, samples), RIG.bone_indices, RIG.weights, RIG.vertex_rest()
        )
        got, _ = skin_with_bone_frames(frames, RIG.positions, RIG.bone_indices, RIG.weights, factors)
        for s in range(len(samples)):
            want = core_positions(c, s, core_factors(c, s))
            np.testing.assert_allclose(got[s], want, rtol=0, atol=2e-5 * extent)


def test_crossfade_lerps_the_auto_data_with_exact_ends():
    tex = encode("BONE_DQ", "PNG16")
    a, b = texture_auto.decode_auto(tex, 0, [3.5]), texture_auto.decode_auto(tex, 1, [2.0])
    for w, want in ((0.0, a), (1.0, b), (0.25, a + np.float32(0.25) * (b - a))):
        np.testing.assert_array_equal(texture_auto.crossfade_auto(tex, 0, 3.5, 1, 2.0, w), want)
    frames = crossfade_bone_frames(tex, 0, [3.5], 1, [2.0], 0.25)  # the bones fade the same way
    assert frames.matrices.shape[:2] == (1, len(RIG.rest))


@dataclass
class Part:
    base: np.ndarray
    normals: np.ndarray
    start: int
    stop: int
    bone_indices: np.ndarray
    bone_weights: np.ndarray
    auto_rest: np.ndarray


def rig_samples() -> dict:
    """The truth a bake samples: every stored and halfway frame of both clips, skinned with the core's Auto
    factors of the pose at that (fractional) frame, and at factors 0 and 1."""
    out = {}
    binding = SkinBinding(RIG.bone_indices, RIG.weights, np.ones(len(RIG.positions), np.float32))
    for c, clip in enumerate(clips()):
        for frame in np.concatenate(clip_frames(clip)):
            local = frame - clip.frame_start
            factors = core_factors(c, local)
            palette = bone_palette(RIG.deform(c, local)[0], RIG.rest)
            p, n, ends = skin_with_ends(RIG.positions, binding, palette, factors, RIG.normals)
            out[(c, frame_key(frame))] = FrameSample(
                p, n, None, np.eye(4)[None], ends, auto_bones=RIG.bone_data(c, local)[0], auto_factors=factors
            )
    return out


def test_the_error_report_measures_auto_against_the_core():
    """EXR32: at stored frames the runtime's Auto is the core's to float32; halfway, the report's factor
    figure is exactly the largest distance between the runtime's factors (lerped data) and the core's at
    the pose of that sub-frame time — the runtime's evaluated without rounding (float64) plus float32's
    rounding of them, a bound for a float32 runtime whatever its order of operations — and the positions'
    figures include what that distance moves."""
    tex = encode("BONE_DQ", "EXR32")
    part = Part(
        RIG.positions, RIG.normals, 0, len(RIG.positions), RIG.bone_indices, RIG.weights, RIG.vertex_rest()
    )
    samples = rig_samples()
    report = bake_report(tex, [part], samples, diagonal=scene_diagonal([part], samples), bone_factor=0.5)
    schema = animtex.load_schema()
    jsonschema.validate(report, {"$ref": "#/$defs/errorReport", "$defs": schema["$defs"]})
    auto = report["auto"]
    assert auto["profile"] == "ROUND" and auto["factor"]["frames"]["max"] < 2e-5
    halfway = 0.0
    for c, clip in enumerate(tex.clips):
        mids = animtex.mid_samples(clip.frame_count, clip.loop)
        data = texture_auto.decode_auto(tex, c, mids)
        got = texture_auto.texture_factors(tex, data, RIG.bone_indices, RIG.weights, RIG.vertex_rest())
        exact = texture_auto.texture_factors(
            tex, data.astype(np.float64), RIG.bone_indices, RIG.weights, RIG.vertex_rest(), np.float64
        )
        want = np.stack([core_factors(c, s) for s in mids])
        halfway = max(halfway, float((np.abs(exact - want) + np.abs(got - exact)).max()))
        assert np.abs(got - want).max() <= halfway  # what a float32 runtime like the reference shows
    assert auto["factor"]["mid_frames"]["max"] == pytest.approx(halfway, rel=1e-6)
    assert auto["factor"]["mid_frames"]["max"] > 1e-3  # this rig moves fast: the lerp is measured, not zero
    extent = np.abs(RIG.positions).max()
    assert report["frames"]["max"] < 2e-5 * extent
    assert report["any_deform_factor_max"] >= report["overall"]["max"]
    assert [e["deform_factor"] for e in report["by_deform_factor"]] == [0.0, 1.0]


DATA = Path(__file__).with_name("data")


def _rounding_as_zero(value):
    """The sidecar with numbers at float64 rounding level (|x| < 1e-12, e.g. a rigid rig's
    ``non_rigid_residual``: 8.9e-16 from numpy 1.26, 7.2e-16 from numpy 2) read as 0; every other value
    compares exactly."""
    if isinstance(value, dict):
        return {k: _rounding_as_zero(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_rounding_as_zero(v) for v in value]
    if isinstance(value, float) and abs(value) < 1e-12:
        return 0.0
    return value


@pytest.mark.parametrize("kind", KINDS)
def test_bakes_from_before_auto_load_play_and_are_what_the_encoder_writes(kind):
    """``data/before_auto_*`` were written by the encoder as it was before Auto existed (the engine ports'
    synthetic rig, PNG16): they load (schema, sidecar, embedded block: no Auto table), decode as before, and
    a bake without Auto today is the same file: same pixels, same sidecar."""
    name = f"before_auto_{kind.lower()}"
    meta = animtex.loads((DATA / f"{name}.json").read_text(encoding="utf-8"))
    jsonschema.validate(meta, animtex.load_schema())
    pixels = png.decode_png((DATA / f"{name}.png").read_bytes())
    old = animtex.texture_from_metadata(meta, pixels)
    assert old.auto is None and old.layout.auto_row_offset == 0
    assert read_embedded(old.channels())["auto"] is None
    today = synthetic.scene(kind, "PNG16").texture
    np.testing.assert_array_equal(old.pixels, today.pixels)
    written = json.loads(animtex.dumps(animtex.build_metadata(today, image=f"{name}.png")))
    assert _rounding_as_zero(written) == _rounding_as_zero(meta)
    frames = animtex.decode_bone_frames(old, 0, [3.25])
    np.testing.assert_array_equal(frames.matrices, animtex.decode_bone_frames(today, 0, [3.25]).matrices)
    with pytest.raises(ValueError, match="carries no Auto"):
        texture_auto.decode_auto(old, 0, [0.0])
