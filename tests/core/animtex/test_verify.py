"""The bake's error report (core.animtex.verify) against closed forms, without Blender.

A mesh drifts linearly along x over a 5-frame clip, stored as VERTEX EXR32 (exact to float32): the
decoders' lerp is exact, so every error is rounding, except where a halfway sample's truth is moved by a
known amount; the report must find exactly that amount, scaled into scene units by the mesh's object
matrix (scale 2), and the bounding-box diagonal must be the scene-space one.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest

from hybrid_skin.core.animtex import Clip, Precision, encode_vertex_animation
from hybrid_skin.core.animtex.samples import FrameSample, clip_frames, frame_key
from hybrid_skin.core.animtex.verify import bake_report, encoding_bound, scene_diagonal

N = 12
SCALE = 2.0  # the mesh object's uniform scale: errors are reported in scene units


@dataclass
class Part:
    base: np.ndarray
    normals: np.ndarray
    start: int = 0
    stop: int = N
    bone_indices: np.ndarray | None = None
    bone_weights: np.ndarray | None = None


def truth(frame: float, rest: np.ndarray) -> np.ndarray:
    return (rest + [0.1 * frame, 0.0, 0.0]).astype(np.float32)


@pytest.fixture
def drifting():
    rng = np.random.default_rng(3)
    rest = rng.normal(size=(N, 3)).astype(np.float32)
    normals = np.tile(np.float32([0.0, 0.0, 1.0]), (N, 1))
    clip = Clip("drift", 1.0, 5.0, fps=24.0, loop=False, frame_step=1.0)
    stored, mids = clip_frames(clip)
    world = np.diag([SCALE, SCALE, SCALE, 1.0])[None]
    samples = {(0, frame_key(f)): FrameSample(truth(f, rest), normals, None, world) for f in (*stored, *mids)}
    frames = np.stack([truth(f, rest) for f in stored])
    texture = encode_vertex_animation(
        rest, [frames], [np.stack([normals] * len(stored))], [clip], precision=Precision.EXR32
    )
    return Part(rest, normals), texture, samples, mids


def test_an_exact_texture_reports_rounding_only(drifting):
    part, texture, samples, _mids = drifting
    report = bake_report(texture, [part], samples, diagonal=scene_diagonal([part], samples), bone_factor=0.5)
    assert report["frames"]["max"] < 1e-5 and report["mid_frames"]["max"] < 1e-5
    assert report["frames"]["count"] == 5 * N and report["mid_frames"]["count"] == 4 * N
    assert report["encoding_bound"] == pytest.approx(encoding_bound(texture, [part], samples))
    assert report["frames"]["max"] <= report["encoding_bound"]


def test_a_moved_halfway_truth_is_found_in_scene_units(drifting):
    part, texture, samples, mids = drifting
    moved = samples[(0, frame_key(mids[2]))]
    moved.positions = moved.positions.copy()
    moved.positions[3, 1] += 0.01  # vertex 3, 0.01 along y in mesh space
    diagonal = scene_diagonal([part], samples)
    points = SCALE * np.concatenate([s.positions for s in samples.values()]).astype(np.float64)
    assert diagonal == pytest.approx(np.linalg.norm(points.max(0) - points.min(0)))
    report = bake_report(texture, [part], samples, diagonal=diagonal, bone_factor=0.5)
    assert report["mid_frames"]["max"] == pytest.approx(SCALE * 0.01, rel=1e-4)
    assert report["mid_frames"]["max_percent"] == pytest.approx(100 * SCALE * 0.01 / diagonal, rel=1e-4)
    assert report["frames"]["max"] < 1e-5  # stored frames untouched
    assert report["overall"]["max"] == report["mid_frames"]["max"]
