"""Root motion tracks: closed-form motions give the exact track, constant matrices give none, and the
sidecar carries the track per clip (validated by the shipped schema, ignored by the texture loader)."""

from __future__ import annotations

import copy
import json

import numpy as np
import pytest

from hybrid_skin.core.animtex import (
    Clip,
    Precision,
    build_metadata,
    dumps,
    encode_bone_matrix_animation,
    load_schema,
    loads,
    root_motion_matrices,
    root_motion_track,
    texture_from_metadata,
)

RNG = np.random.default_rng(11)
CLIPS = [Clip("walk", 1, 12, fps=24), Clip("idle", 1, 9, fps=24, loop=True)]  # 12 and 8 samples
ATOL = 2e-6  # the track is rounded to float32: values of size ~10 keep ~1e-6


def rotation_z(angle: np.ndarray) -> np.ndarray:
    c, s = np.cos(angle), np.sin(angle)
    out = np.tile(np.eye(4), (len(angle), 1, 1))
    out[:, 0, 0], out[:, 0, 1], out[:, 1, 0], out[:, 1, 1] = c, -s, s, c
    return out


def translation(offsets: np.ndarray) -> np.ndarray:
    out = np.tile(np.eye(4), (len(offsets), 1, 1))
    out[:, :3, 3] = offsets
    return out


def base_matrix() -> np.ndarray:
    """A mesh's world matrix at the clip start: rotated about a tilted axis, scaled by 2, moved."""
    axis = np.array([1.0, 2.0, 2.0]) / 3.0
    k = np.array([[0, -axis[2], axis[1]], [axis[2], 0, -axis[0]], [-axis[1], axis[0], 0]])
    angle = 0.7
    base = np.eye(4)
    base[:3, :3] = 2.0 * (np.eye(3) + np.sin(angle) * k + (1 - np.cos(angle)) * k @ k)
    base[:3, 3] = [3.0, -1.0, 0.5]
    return base


def test_translation_and_z_rotation_give_the_exact_track() -> None:
    frames = np.arange(40, dtype=np.float64)
    offsets = np.stack([0.25 * frames, 0.1 * frames, 0.02 * frames**1.5], axis=1)  # mesh units
    angles = 0.2 * frames  # 7.8 rad: past a full turn, so the quaternion must stay continuous
    world = base_matrix() @ translation(offsets) @ rotation_z(angles)
    track = root_motion_track(world)
    assert track is not None and set(track) == {"rule", "space", "translation", "rotation", "scale"}
    np.testing.assert_allclose(track["translation"], offsets, atol=ATOL)
    half = angles / 2  # continuous hemisphere: the unwrapped half angle, not folded back to w >= 0
    expected = np.stack([np.cos(half), 0 * half, 0 * half, np.sin(half)], axis=1)
    np.testing.assert_allclose(track["rotation"], expected, atol=ATOL)
    np.testing.assert_allclose(track["scale"], np.ones((40, 3)), atol=ATOL)
    assert track["rotation"][0] == [1.0, 0.0, 0.0, 0.0] and track["translation"][0] == [0.0, 0.0, 0.0]
    # an engine applying it gets the world matrices back
    np.testing.assert_allclose(world[0] @ root_motion_matrices(track), world, atol=1e-5)
    assert json.loads(json.dumps(track)) == track
    assert np.array_equal(np.float32(track["translation"]), np.float64(track["translation"]))


def test_world_space_motion_is_expressed_in_mesh_space() -> None:
    base = base_matrix()
    steps = np.linspace(0.0, 4.0, 9)[:, None] * np.array([1.0, 0.0, 0.0])  # along world X
    world = translation(steps) @ base
    track = root_motion_track(world)
    local = steps @ np.linalg.inv(base[:3, :3]).T  # inv(R S) d: scale 2 halves the distance
    np.testing.assert_allclose(track["translation"], local, atol=ATOL)
    np.testing.assert_allclose(np.linalg.norm(track["translation"][-1]), 2.0, atol=ATOL)
    np.testing.assert_allclose(track["rotation"], np.tile([1.0, 0, 0, 0], (9, 1)), atol=ATOL)


def test_scale_and_mirror_are_decomposed_like_blender() -> None:
    scales = np.array([[1, 1, 1], [1, 2, 0.5], [-1.5, -1.5, -1.5], [-2, -1, -3]], dtype=np.float64)
    angles = np.array([0.0, 0.5, -2.0, 3.0])
    world = base_matrix() @ rotation_z(angles) @ np.stack([np.diag([*s, 1]) for s in scales])
    track = root_motion_track(world)
    det_sign = np.sign(np.prod(scales, axis=1))
    expected = np.abs(scales) * det_sign[:, None]  # all three negative where the matrix mirrors
    np.testing.assert_allclose(track["scale"], expected, atol=ATOL)
    np.testing.assert_allclose(world[0] @ root_motion_matrices(track), world, atol=1e-5)


def test_constant_matrices_give_no_track() -> None:
    base = base_matrix()
    base[:3, 3] = [1000.0, 0, 0]  # tolerance is relative to the matrix's size
    world = np.tile(base, (10, 1, 1))
    assert root_motion_track(world) is None
    assert root_motion_track(world[:1]) is None  # one-sample clip
    assert root_motion_track(world + 1e-4 * (RNG.random((10, 4, 4)) - 0.5)) is None  # float32 noise
    moved = world.copy()
    moved[-1, 0, 3] += 0.01
    assert root_motion_track(moved) is not None
    with pytest.raises(ValueError, match="4, 4"):
        root_motion_track(np.zeros((3, 3, 3)))
    grows = np.tile(np.eye(4), (3, 1, 1)) * np.array([0.0, 0.5, 1.0])[:, None, None]
    grows[:, 3, 3] = 1.0
    with pytest.raises(ValueError, match="zero scale"):  # no matrix M with 0 @ M = W_t
        root_motion_track(grows)


# ------------------------------------------------------------------------------------- sidecar
def texture():
    mats = [np.tile(np.eye(4), (c.frame_count, 2, 1, 1)) for c in CLIPS]
    for m in mats:
        m[..., :3, 3] = RNG.normal(size=m.shape[:2] + (3,))
    return encode_bone_matrix_animation(
        mats, CLIPS, ["root", "tip"], bone_pivots=np.zeros((2, 3)), precision=Precision.EXR32
    )


@pytest.fixture(scope="module")
def validator():
    jsonschema = pytest.importorskip("jsonschema")
    return jsonschema.Draft202012Validator(load_schema())


def walk_track() -> dict:
    frames = np.arange(CLIPS[0].frame_count, dtype=np.float64)
    world = translation(np.stack([0.5 * frames, 0 * frames, 0 * frames], axis=1)) @ rotation_z(0.1 * frames)
    return root_motion_track(world)


def test_sidecar_carries_root_motion_per_clip(validator) -> None:
    tex = texture()
    track = walk_track()
    meta = loads(dumps(build_metadata(tex, root_motion=[track, None])))
    validator.validate(meta)
    walk, idle = meta["clips"]
    assert walk["root_motion"] == track and "root_motion" not in idle
    assert len(walk["root_motion"]["translation"]) == walk["frame_count"] == 12
    # the field is optional: files with or without it load the same texture
    plain = loads(dumps(build_metadata(tex)))
    validator.validate(plain)
    assert all("root_motion" not in c for c in plain["clips"])
    for m in (meta, plain):
        back = texture_from_metadata(m, tex.pixels)
        np.testing.assert_array_equal(back.pixels, tex.pixels)
        assert back.clips == tex.clips


def test_root_motion_must_match_the_clips(validator) -> None:
    tex = texture()
    with pytest.raises(ValueError, match="2 clips"):
        build_metadata(tex, root_motion=[walk_track()])
    with pytest.raises(ValueError, match="'idle'.*12 samples"):
        build_metadata(tex, root_motion=[None, walk_track()])
    meta = json.loads(dumps(build_metadata(tex, root_motion=[walk_track(), None])))
    for breakage in (
        lambda rm: rm["rotation"][3].pop(),
        lambda rm: rm.update(translation=[]),
        lambda rm: rm.pop("scale"),
        lambda rm: rm.update(rule="world = M"),
    ):
        broken = copy.deepcopy(meta)
        breakage(broken["clips"][0]["root_motion"])
        assert not validator.is_valid(broken)


def test_a_loop_gets_its_whole_cycle() -> None:
    # A walk cycle: 24 samples of a 24-frame loop move 0.1 per frame; the wrap (frame 25, not a sample)
    # is 2.4 ahead and turned by 24 × 0.01 rad. A loop that only moves between its samples and the
    # wrap still moves: the cycle alone makes the track.
    frames = np.arange(25, dtype=np.float64)
    world = base_matrix() @ translation(np.stack([0.1 * frames, 0 * frames, 0 * frames], 1))
    world = world @ rotation_z(0.01 * frames)
    track = root_motion_track(world[:24], cycle_end=world[24])
    cycle = track["cycle"]
    expected = np.linalg.inv(world[0]) @ world[24]
    got = root_motion_matrices({k: [cycle[k]] for k in ("translation", "rotation", "scale")})[0]
    np.testing.assert_allclose(got, expected, atol=ATOL)
    assert len(track["translation"]) == 24  # the samples only; the wrap is apart
    still = np.repeat(base_matrix()[None], 24, axis=0)
    assert root_motion_track(still) is None
    jump = root_motion_track(still, cycle_end=world[24])
    assert jump is not None and not np.any(jump["translation"]) and jump["cycle"]["translation"][0] > 2.3


def test_playback_between_samples_and_over_many_cycles() -> None:
    """``root_motion_at``: at stored samples the track's matrices; halfway, the spec's lerp (translation,
    scale) and nlerp (rotation) of the two around it; a walk that repeats one step ``D`` per frame
    (``W_f = W_0 D^f``, a turning walk) ``n`` cycles on, and before its start, is ``D^s`` itself; a clip
    that does not loop holds its ends."""
    from hybrid_skin.core.animtex import root_motion_at
    from hybrid_skin.core.dualquat import quaternion_from_matrix

    step = translation(np.array([[0.1, 0.02, 0.0]]))[0] @ rotation_z(np.array([0.01]))[0]
    world = lambda f: base_matrix() @ np.linalg.matrix_power(step, int(f))  # noqa: E731
    frames = np.arange(24, dtype=np.float64)
    track = root_motion_track(np.stack([world(f) for f in frames]), cycle_end=world(24))
    stored = root_motion_matrices(track)
    np.testing.assert_allclose(root_motion_at(track, 24, True, frames), stored, atol=0)
    for s in (24, 50, 24 * 7 + 3, -5, -24):
        np.testing.assert_allclose(root_motion_at(track, 24, True, [s])[0], np.linalg.matrix_power(step, s),
                                   atol=1e-4)  # fmt: skip
    half = root_motion_at(track, 24, True, frames[:-1] + 0.5)
    np.testing.assert_allclose(half[:, :3, 3], 0.5 * (stored[:-1, :3, 3] + stored[1:, :3, 3]), atol=1e-12)
    q = np.asarray(track["rotation"])
    mid = q[:-1] + q[1:]
    mid /= np.linalg.norm(mid, axis=1)[:, None]
    np.testing.assert_allclose(quaternion_from_matrix(half[:, :3, :3]), mid, atol=1e-9)
    held = root_motion_track(np.stack([world(f) for f in frames]))
    got = root_motion_at(held, 24, False, np.array([-3.0, 30.0, 23.0]))
    np.testing.assert_allclose(got, root_motion_matrices(held)[[0, 23, 23]], atol=1e-12)
