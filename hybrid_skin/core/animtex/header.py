"""The embedded metadata block: the texture's own binary header, for shader-only decoding.

Shader-only decoding needs the layout, clip table and decode terms without a JSON parser. When a texture
is encoded with ``embed_metadata``, rows ``0 .. metadata_rows`` hold :func:`embedded_floats`: each
float32 as its 4 little-endian bytes, byte k in channel k as byte / 255, which is exact in every
precision (PNG16 stores byte * 257, half floats hold byte / 255 within 1/510). ``shaders/animtex_*.glsl``
read it; :func:`read_embedded` is their numpy twin. The JSON sidecar is :mod:`.metadata`.
"""

from __future__ import annotations

import numpy as np

from .layout import Kind
from .metadata import FORMAT_VERSION
from .quantize import Precision, float32_from_bytes
from .texture import AnimationTexture

__all__ = [
    "EMBED_GLOBALS",
    "EMBED_HEADER",
    "EMBED_PER_BONE",
    "EMBED_PER_CLIP",
    "KIND_CODES",
    "PRECISION_CODES",
    "embedded_float_count",
    "embedded_floats",
    "read_embedded",
]

KIND_CODES = {Kind.VERTEX: 0, Kind.BONE_MATRIX: 1, Kind.BONE_DQ: 2}
PRECISION_CODES = {Precision.PNG8: 0, Precision.PNG16: 1, Precision.EXR16: 2, Precision.EXR32: 3}
#: Embedded block: header floats, global decode floats, floats per clip, floats per bone.
EMBED_HEADER, EMBED_GLOBALS, EMBED_PER_CLIP, EMBED_PER_BONE = 16, 8, 4, 9


def embedded_float_count(clip_count: int, bone_count: int) -> int:
    """Length of the embedded block (``bone_count`` is 0 for vertex textures)."""
    return EMBED_HEADER + EMBED_GLOBALS + EMBED_PER_CLIP * clip_count + EMBED_PER_BONE * bone_count


def embedded_floats(texture: AnimationTexture) -> np.ndarray:
    """The embedded metadata block as float32 ``(M,)``, written from texel 0 of row 0 onwards.

    Header (16): format version, kind code, precision code, texels per item, item count, items per
    row, rows per frame, clip count, metadata rows, deform factor, globals start, clips start, bones
    start, floats per bone, width, height. Globals (8): VERTEX - position offset xyz, position scale
    xyz, normal offset, normal scale; BONE_MATRIX - linear offset, linear scale; BONE_DQ - rotation
    offset, rotation scale, scale-channel offset, scale-channel scale. Per clip (4): first row, frame
    count, sample rate, loop. Per bone (9): pivot xyz, translation offset xyz, translation scale xyz.
    """
    lay, off, sc = texture.layout, texture.decode_offset, texture.decode_scale
    bones = 0 if texture.kind is Kind.VERTEX else lay.item_count
    clips_start = EMBED_HEADER + EMBED_GLOBALS
    bones_start = clips_start + EMBED_PER_CLIP * len(texture.clips)
    header = [
        FORMAT_VERSION, KIND_CODES[texture.kind], PRECISION_CODES[texture.precision], lay.texels_per_item,
        lay.item_count, lay.items_per_row, lay.rows_per_frame, len(texture.clips), lay.metadata_rows,
        np.nan if texture.deform_factor is None else texture.deform_factor, EMBED_HEADER, clips_start,
        bones_start, EMBED_PER_BONE if bones else 0, lay.width, lay.height,
    ]  # fmt: skip
    if texture.kind is Kind.VERTEX:
        glob = [*off[0, 0, :3], *sc[0, 0, :3], off[0, 1, 0], sc[0, 1, 0]]
    elif texture.kind is Kind.BONE_MATRIX:
        glob = [off[0, 0, 0], sc[0, 0, 0], 0, 0, 0, 0, 0, 0]
    else:
        glob = [off[0, 0, 0], sc[0, 0, 0], off[0, 1, 3], sc[0, 1, 3], 0, 0, 0, 0]
    clip_rows = [
        [lay.clip_first_rows[i], c.frame_count, c.sample_rate, float(c.loop)]
        for i, c in enumerate(texture.clips)
    ]
    parts = [
        np.asarray(header, np.float32),
        np.asarray(glob, np.float32),
        np.asarray(clip_rows, np.float32).reshape(-1),
    ]
    if bones:
        if texture.kind is Kind.BONE_MATRIX:  # translation lives in the alpha of rows 0..2
            t_off, t_sc = off[:, :, 3], sc[:, :, 3]
        else:  # BONE_DQ: rgb of slot 1
            t_off, t_sc = off[:, 1, :3], sc[:, 1, :3]
        parts.append(
            np.concatenate([texture.bone_pivots, t_off, t_sc], axis=1).astype(np.float32).reshape(-1)
        )
    return np.concatenate(parts)


def read_embedded(channels: np.ndarray) -> dict[str, object]:
    """Parse the embedded metadata block from sampler channels ``(H, W, 4)`` alone.

    This is what a shader-only decoder does (see :func:`embedded_floats` for the float order);
    it returns the fields by name so tests can check them against the JSON sidecar.
    """
    flat = np.asarray(channels, dtype=np.float32).reshape(-1, 4)
    header = float32_from_bytes(flat[:EMBED_HEADER])
    (version, kind, precision, texels, items, per_row, rows_per_frame, clip_count, meta_rows, factor,
     glob_start, clips_start, bones_start, per_bone, width, height) = header.tolist()  # fmt: skip
    bone_count = int(items) if int(per_bone) else 0
    total = int(bones_start) + EMBED_PER_BONE * bone_count
    block = float32_from_bytes(flat[:total])
    kinds = {v: k for k, v in KIND_CODES.items()}
    precisions = {v: k for k, v in PRECISION_CODES.items()}
    return {
        "format_version": int(version),
        "kind": kinds[int(kind)],
        "precision": precisions[int(precision)],
        "texels_per_item": int(texels),
        "item_count": int(items),
        "items_per_row": int(per_row),
        "rows_per_frame": int(rows_per_frame),
        "metadata_rows": int(meta_rows),
        "deform_factor": None if np.isnan(factor) else float(factor),
        "width": int(width),
        "height": int(height),
        "globals": block[int(glob_start) : int(glob_start) + EMBED_GLOBALS],
        "clips": block[int(clips_start) : int(clips_start) + EMBED_PER_CLIP * int(clip_count)].reshape(-1, 4),
        "bones": block[int(bones_start) : total].reshape(bone_count, EMBED_PER_BONE),
    }
