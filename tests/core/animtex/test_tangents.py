"""Tangents for normal maps in VERTEX textures (a third texel per item) and in the corner split.

The synthetic rig's VERTEX poses (``tests/engines/synthetic.py``) with tangents perpendicular to their
normals and random bitangent signs, encoded at every precision: decoded at stored frames the tangents are
the stored ones within the precision's bound, perpendicular to the decoded normals, unit, with their signs;
positions and normals decode exactly as from the same texture without tangents; the sidecar and the
embedded block say 3 texels per item. The corner split keeps corners apart where their tangents differ.
"""

from __future__ import annotations

import jsonschema
import numpy as np
import pytest

from hybrid_skin.core.animtex import (
    Precision,
    build_metadata,
    decode_vertex_frames,
    encode_vertex_animation,
    load_schema,
    read_embedded,
)
from hybrid_skin.core.animtex.decode import decode_vertex_tangents
from hybrid_skin.core.animtex.split import split_corners
from hybrid_skin.core.small_linalg import unit
from tests.engines import synthetic

#: Largest angle (degrees) between a decoded and a stored tangent, per precision: quantisation of the
#: three components within [-1, 1] (PNG: 1/255 or 1/65535 of the range; half floats: 2^-11), made
#: perpendicular again.
ANGLE_DEG = {"PNG8": 0.7, "PNG16": 0.003, "EXR16": 0.05, "EXR32": 1e-3}


def poses_with_tangents(precision: str, seed: int = 3):
    s = synthetic.scene("VERTEX", precision)
    tex = s.texture
    rng = np.random.default_rng(seed)
    clips, positions, normals, tangents = tex.clips, [], [], []
    for ci, clip in enumerate(clips):
        frames = np.arange(clip.frame_count, dtype=np.float64)
        p, n = decode_vertex_frames(tex, s.rest, ci, frames)
        t = rng.normal(size=n.shape)
        t = unit(t - np.sum(t * n, -1, keepdims=True) * n)
        sign = rng.choice([-1.0, 1.0], size=n.shape[:-1] + (1,))
        positions.append(p), normals.append(n), tangents.append(np.concatenate([t, sign], -1))
    return s.rest, clips, positions, normals, tangents


@pytest.mark.parametrize("precision", ["PNG8", "PNG16", "EXR16", "EXR32"])
def test_vertex_texture_stores_tangents(precision):
    rest, clips, positions, normals, tangents = poses_with_tangents(precision)
    plain = encode_vertex_animation(rest, positions, normals, clips, precision=Precision(precision))
    tex = encode_vertex_animation(
        rest, positions, normals, clips, precision=Precision(precision), tangents=tangents
    )
    assert (plain.layout.texels_per_item, tex.layout.texels_per_item) == (2, 3)
    # decoded with the normal's term
    np.testing.assert_array_equal(tex.decode_offset[0, 2], [tex.decode_offset[0, 1, 0]] * 4)
    np.testing.assert_array_equal(tex.decode_scale[0, 2], [tex.decode_scale[0, 1, 0]] * 4)
    worst = 0.0
    for ci, clip in enumerate(clips):
        frames = np.arange(clip.frame_count, dtype=np.float64)
        p, n = decode_vertex_frames(tex, rest, ci, frames)
        p0, n0 = decode_vertex_frames(plain, rest, ci, frames)
        np.testing.assert_array_equal(p, p0)
        np.testing.assert_array_equal(n, n0)
        got = decode_vertex_tangents(tex, ci, frames)
        np.testing.assert_array_equal(got[..., 3], tangents[ci][..., 3])
        np.testing.assert_allclose(np.linalg.norm(got[..., :3], axis=-1), 1.0, atol=1e-6)
        np.testing.assert_allclose(np.sum(got[..., :3] * n, -1), 0.0, atol=1e-6)
        a, b = got[..., :3].astype(np.float64), tangents[ci][..., :3]  # atan2: exact near 0° (arccos is not)
        angle = np.arctan2(np.linalg.norm(np.cross(a, b), axis=-1), np.sum(a * b, -1))
        worst = max(worst, float(np.degrees(angle).max()))
        if clip.frame_count < 2:
            continue
        # between frames (the rig turns up to 45° a frame: lerped vectors get short, float32 shows): still
        # perpendicular to the normal there
        halfway = decode_vertex_tangents(tex, ci, frames[:-1] + 0.5)
        _, n_half = decode_vertex_frames(tex, rest, ci, frames[:-1] + 0.5)
        np.testing.assert_allclose(np.sum(halfway[..., :3] * n_half, -1), 0.0, atol=1e-4)
    print(f"{precision}: tangents within {worst:.3g} degrees")
    assert worst <= ANGLE_DEG[precision]
    meta = build_metadata(tex, tangent_uv_maps=["UVMap"])
    jsonschema.validate(meta, load_schema())
    assert [s["name"] for s in meta["slots"]] == ["position_offset", "normal", "tangent"]
    assert meta["layout"]["texels_per_item"] == 3 and meta["tangents"]["stored"] == "texture"
    assert read_embedded(tex.channels())["texels_per_item"] == 3
    with pytest.raises(ValueError, match="third texel"):
        build_metadata(plain, tangent_uv_maps=["UVMap"])
    bones = synthetic.scene("BONE_MATRIX", precision).texture  # 3 texels per item, none of them a tangent
    assert build_metadata(bones, tangent_uv_maps=["UVMap"])["tangents"]["stored"] == "mesh"


def test_corner_split_keeps_tangent_groups_apart():
    """Vertex 0's four corners share one normal: two with one tangent, one with another direction (a UV
    seam) and one mirrored (the other sign): three items; vertex 1's corners agree: its own item."""
    normal = np.array([0.0, 0.0, 1.0])
    corner_vertex = np.array([0, 0, 0, 0, 1, 1])
    corner_normals = np.tile(normal, (6, 1))
    x, y = [1.0, 0.0, 0.0], [0.0, 1.0, 0.0]
    corner_tangents = np.array([[*x, 1], [*x, 1], [*y, 1], [*x, -1], [*y, 1], [*y, 1]], dtype=np.float64)
    plain = split_corners(corner_vertex, corner_normals, np.tile(normal, (2, 1)))
    assert plain.item_count == 2 and plain.item_tangents is None
    split = split_corners(
        corner_vertex, corner_normals, np.tile(normal, (2, 1)), corner_tangents=corner_tangents
    )
    assert split.item_count == 4
    assert split.corner_item[0] == split.corner_item[1] == 0
    assert split.corner_item[4] == split.corner_item[5] == 1
    assert len({int(split.corner_item[k]) for k in (0, 2, 3)}) == 3
    np.testing.assert_allclose(split.item_tangents[split.corner_item], corner_tangents, atol=1e-6)
