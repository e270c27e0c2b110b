"""A bone bake for Babylon.js's own player: ``BakedVertexAnimationManager`` with a ``VertexAnimationBaker``
texture, written as the JSON that ``VertexAnimationBaker.loadBakedVertexDataFromJSON`` reads.

Babylon's layout (its ``VertexAnimationBaker.bakeVertexData``): one texture row per frame, the frames of
the animation ranges one after the other; in each row 4 RGBA float texels per bone (the columns of the
bone's 4x4 matrix, column-major), for ``B + 1`` bones (the last is Babylon's spare: the identity here);
``width = 4 (B + 1)``, ``height`` = the frames. The player (``bakedVertexAnimation.fx``) blends the 4
matrices of a vertex's joints by their weights (**linear blend skinning**: the deform factor does not
apply) and picks whole frames (no interpolation between them).

What is stored: the skinning matrices the bake sampled at each clip's stored frames (float64 → float32;
not the texture's quantised values), turned into the ``.glb``'s space: ``N · C · M_b · C⁻¹``, with
``M_b`` the bone's matrix in the mesh's own (Blender, Z-up) coordinates, ``C`` Blender's axes to glTF's
(``(x, y, z) → (x, z, -y)``) and ``N`` the skinned node's world matrix in the file, which Babylon.js
ignores for a skinned node (:mod:`.gltf`). A looping clip's range ends with its frame 0 again (Babylon's
player shows the last frame of a range only on the first run and wraps to the range's second frame: its
convention for loops whose last frame repeats the first).

Beside Babylon's own ``vertexData``, ``width`` and ``height`` the JSON holds ``ranges`` (per clip: name,
first and last row, ``sample_rate`` = the ``framesPerSecond`` that plays it at its own speed, ``loop``),
the palette's bone names and what the numbers are.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Sequence
from typing import Any

import numpy as np

from .layout import Clip

__all__ = ["BABYLON_FORMAT", "BLENDER_TO_GLTF", "babylon_vat", "dumps", "vat_rows"]

BABYLON_FORMAT = "hybrid_skin.babylon_vat"
#: Blender's Z-up axes to glTF's Y-up: ``(x, y, z) → (x, z, -y)``.
BLENDER_TO_GLTF = np.array([[1, 0, 0, 0], [0, 0, 1, 0], [0, -1, 0, 0], [0, 0, 0, 1]], dtype=np.float64)


def vat_rows(matrices: np.ndarray, node_world: np.ndarray) -> np.ndarray:
    """``(F, B, 4, 4)`` mesh-space skinning matrices → ``(F, 4 (B + 1), 4)`` float32 texels: each bone's
    ``N · C · M · C⁻¹`` as its 4 columns, then the identity."""
    m = np.asarray(matrices, dtype=np.float64)
    frames, bones = m.shape[:2]
    gltf = node_world @ BLENDER_TO_GLTF @ m @ np.linalg.inv(BLENDER_TO_GLTF)
    full = np.concatenate([gltf, np.broadcast_to(np.eye(4), (frames, 1, 4, 4))], axis=1)
    # texel k of a bone is column k: the transpose's rows
    texels = np.ascontiguousarray(np.swapaxes(full, -1, -2), dtype=np.float32)
    return texels.reshape(frames, 4 * (bones + 1), 4)


def babylon_vat(
    clip_matrices: Sequence[np.ndarray],
    clips: Sequence[Clip],
    bone_names: Sequence[str],
    node_world: np.ndarray,
) -> dict[str, Any]:
    """The JSON document (a dict) for Babylon.js: ``clip_matrices[c]`` ``(frame_count, B, 4, 4)`` are clip
    ``c``'s stored frames; ``node_world`` the skinned nodes' world matrix in the ``.glb``."""
    if len(clip_matrices) != len(clips) or not clips:
        raise ValueError(f"{len(clip_matrices)} matrix stacks for {len(clips)} clips")
    rows, ranges = [], []
    for clip, mats in zip(clips, clip_matrices):
        mats = np.asarray(mats)
        if mats.shape[0] != clip.frame_count or mats.shape[1] != len(bone_names):
            want = (clip.frame_count, len(bone_names))
            raise ValueError(f"clip {clip.name!r}: {mats.shape[:2]} matrices, expected {want}")
        if clip.loop:  # Babylon's loops: the last frame repeats the first
            mats = np.concatenate([mats, mats[:1]])
        start = sum(len(r) for r in rows)
        rows.append(vat_rows(mats, node_world))
        ranges.append(
            {
                "name": clip.name,
                "from": start,
                "to": start + len(mats) - 1,
                "sample_rate": clip.sample_rate,
                "loop": clip.loop,
            }
        )
    data = np.concatenate(rows)
    return {
        "vertexData": base64.b64encode(data.astype("<f4").tobytes()).decode("ascii"),
        "width": int(data.shape[1]),
        "height": int(data.shape[0]),
        "format": BABYLON_FORMAT,
        "format_version": 1,
        "skinning": "LBS",
        "values": "float32 4x4 joint matrices, column-major, in the .glb's space (skinned node world in)",
        "ranges": ranges,
        "bones": list(bone_names),
    }


def dumps(document: dict[str, Any]) -> str:
    """Strict JSON text."""
    return json.dumps(document, indent=1, allow_nan=False)
