"""The embedded metadata block: the texture's own binary header, for shader-only decoding.

Shader-only decoding needs the layout, clip table and decode terms without a JSON parser. When a texture
is encoded with ``embed_metadata``, rows ``0 .. metadata_rows`` hold :func:`embedded_floats`: each
float32 as its 4 little-endian bytes, byte k in channel k as byte / 255, which is exact in every
precision (PNG16 stores byte * 257, half floats hold byte / 255 within 1/510). ``shaders/animtex_*.glsl``
read it; :func:`read_embedded` is their numpy twin. The JSON sidecar is :mod:`.metadata`.

A bone texture that carries Auto (:mod:`.auto`) appends an **Auto table** after the bone table and puts
its index in global float 4 (float 20 of the block; 0, as every older block has it, means no Auto): the
profile's constants, the Auto rows' offset, then per bone the decode terms of its two Auto texels.
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
    "EMBED_AUTO_HEADER",
    "EMBED_AUTO_PER_BONE",
    "EMBED_AUTO_INDEX",
    "AUTO_PROFILE_CODES",
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
#: The float (global 4, zero in every block without Auto) holding the Auto table's index.
EMBED_AUTO_INDEX = EMBED_HEADER + 4
#: Auto table: width, swing exponent, twist weight, epsilon^2, quarter turn^2, Auto row offset, profile
#: code, rest floats per vertex, presence, 3 reserved (0); then per bone the offsets (8) and scales (8) of
#: its two Auto texels.
EMBED_AUTO_HEADER, EMBED_AUTO_PER_BONE = 12, 16
AUTO_PROFILE_CODES = {"ROUND": 1, "KEEP_VOLUME": 2}


def embedded_float_count(clip_count: int, bone_count: int, auto: bool = False) -> int:
    """Length of the embedded block (``bone_count`` is 0 for vertex textures; ``auto``: with the Auto
    table)."""
    count = EMBED_HEADER + EMBED_GLOBALS + EMBED_PER_CLIP * clip_count + EMBED_PER_BONE * bone_count
    return count + (EMBED_AUTO_HEADER + EMBED_AUTO_PER_BONE * bone_count if auto else 0)


def embedded_floats(texture: AnimationTexture) -> np.ndarray:
    """The embedded metadata block as float32 ``(M,)``, written from texel 0 of row 0 onwards.

    Header (16): format version, kind code, precision code, texels per item, item count, items per
    row, rows per frame, clip count, metadata rows, deform factor, globals start, clips start, bones
    start, floats per bone, width, height. Globals (8): VERTEX - position offset xyz, position scale
    xyz, normal offset, normal scale; BONE_MATRIX - linear offset, linear scale; BONE_DQ - rotation
    offset, rotation scale, scale-channel offset, scale-channel scale. Per clip (4): first row, frame
    count, sample rate, loop. Per bone (9): pivot xyz, translation offset xyz, translation scale xyz.
    Then, with Auto, the Auto table (module docstring), its index in global 4.
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
    auto = texture.auto
    if auto is not None:
        parts[1][4] = bones_start + EMBED_PER_BONE * bones  # the Auto table's index (global 4)
        table = [
            auto.shape.width, auto.shape.swing_exponent, auto.shape.twist_weight, auto.epsilon_sq,
            auto.quarter_turn_sq, lay.auto_row_offset, AUTO_PROFILE_CODES[auto.profile], auto.vertex_floats,
            auto.presence, 0, 0, 0,
        ]  # fmt: skip
        per_bone = np.concatenate(
            [auto.decode_offset.reshape(bones, 8), auto.decode_scale.reshape(bones, 8)], axis=1
        )
        parts += [np.asarray(table, np.float32), per_bone.astype(np.float32).reshape(-1)]
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
    auto_index = float32_from_bytes(flat[EMBED_AUTO_INDEX : EMBED_AUTO_INDEX + 1])[0]
    auto_start = int(auto_index) if bone_count else 0
    end = auto_start + EMBED_AUTO_HEADER + EMBED_AUTO_PER_BONE * bone_count if auto_start else total
    block = float32_from_bytes(flat[:end])
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
        "auto": block[auto_start:auto_start + EMBED_AUTO_HEADER] if auto_start else None,
        "auto_bones": (
            block[auto_start + EMBED_AUTO_HEADER : end].reshape(bone_count, EMBED_AUTO_PER_BONE)
            if auto_start
            else None
        ),
    }
