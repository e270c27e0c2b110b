"""The crowd preview's data, numpy only: where each instance stands and what its shader reads.

A crowd is ``count`` instances of one baked character on a square grid, each playing a clip from its own
time offset. The vertex shader (``shaders/animtex_crowd_vert.glsl``) reads per instance its grid offset,
time offset and clip, and per part (mesh of the character) its object matrix, from one small float
texture (:func:`crowd_texels`); the vertices of every part share one vertex buffer
(:func:`crowd_vertices`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

__all__ = ["CrowdLayout", "crowd_layout", "crowd_texels", "crowd_vertices", "instance_samples"]


@dataclass(frozen=True)
class CrowdLayout:
    """Per instance: grid offset ``(N, 3)``, time offset in seconds ``(N,)`` and clip ``(N,)``."""

    offsets: np.ndarray
    time_offsets: np.ndarray
    clips: np.ndarray


def crowd_layout(count: int, spacing: float, durations: list[float], seed: int = 0) -> CrowdLayout:
    """``count`` instances on a square grid centred on the origin (XY plane), clips cycling, random times."""
    side = max(1, math.ceil(math.sqrt(count)))
    i = np.arange(count)
    offsets = np.stack(
        [(i % side - (side - 1) / 2) * spacing, (i // side - (side - 1) / 2) * spacing, np.zeros(count)], -1
    )
    clips = i % len(durations)
    rng = np.random.default_rng(seed)
    times = rng.random(count) * np.maximum(np.asarray(durations)[clips], 1e-6)
    return CrowdLayout(offsets.astype(np.float32), times.astype(np.float32), clips.astype(np.int32))


def crowd_texels(layout: CrowdLayout, part_matrices: list[np.ndarray]) -> np.ndarray:
    """``(2 + P, max(N, 3), 4)`` float32: row 0 per instance (grid offset xyz, time offset), row 1 per
    instance (clip, 0, 0, 0), row ``2 + p`` the top three rows of part ``p``'s object matrix."""
    count = len(layout.clips)
    texels = np.zeros((2 + len(part_matrices), max(count, 3), 4), np.float32)
    texels[0, :count, :3] = layout.offsets  # added to each part's world matrix
    texels[0, :count, 3] = layout.time_offsets
    texels[1, :count, 0] = layout.clips
    for p, matrix in enumerate(part_matrices):
        texels[2 + p, :3] = np.asarray(matrix, dtype=np.float32)[:3]
    return texels


def crowd_vertices(parts: list[dict]) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """The character's vertex columns (the crowd shader's inputs) and ``(T, 3)`` int32 triangles.

    ``parts``: per mesh ``positions``, ``normals`` ``(N, 3)``, ``triangles`` ``(T, 3)``, ``items``
    ``(N,)`` texel indices and, for bone kinds, ``bones``/``weights`` ``(N, 4)`` and, where the bake carries
    Auto, ``auto_rest`` ``(N, 4)`` (zeros otherwise). Integer columns (``item``, ``part``, ``bones``) are
    int32, the others float32.
    """
    columns: dict[str, list[np.ndarray]] = {
        name: [] for name in ("rest_position", "rest_normal", "item", "part", "bones", "weights", "auto_rest")
    }
    triangles, start = [], 0
    for p, part in enumerate(parts):
        n = len(part["positions"])
        columns["rest_position"].append(part["positions"])
        columns["rest_normal"].append(part["normals"])
        columns["item"].append(part["items"])
        columns["part"].append(np.full(n, p))
        columns["bones"].append(part.get("bones", np.zeros((n, 4))))
        columns["weights"].append(part.get("weights", np.zeros((n, 4))))
        columns["auto_rest"].append(part.get("auto_rest", np.zeros((n, 4))))
        triangles.append(np.asarray(part["triangles"]) + start)
        start += n
    integer = {"item", "part", "bones"}
    data = {
        name: np.ascontiguousarray(np.concatenate(values), dtype=np.int32 if name in integer else np.float32)
        for name, values in columns.items()
    }
    return data, np.ascontiguousarray(np.concatenate(triangles), dtype=np.int32)


def instance_samples(layout: CrowdLayout, clips: list[dict], seconds: float) -> np.ndarray:
    """``(N,)`` fractional sample index each instance plays at playback time ``seconds``, as the crowd
    shader computes it: time plus the instance's offset, times the clip's sample rate; clips that do not
    loop replay from the start in the preview. ``clips``: the sidecar's clip entries."""
    out = np.empty(len(layout.clips))
    for i, clip_index in enumerate(layout.clips):
        clip = clips[int(clip_index)]
        t = float(np.float32(seconds) + layout.time_offsets[i])
        period = (clip["frame_count"] - 1) / clip["sample_rate"]
        if not clip["loop"] and period > 0.0:
            t -= period * math.floor(t / period)
        out[i] = t * clip["sample_rate"]
    return out
