"""Reading a sidecar back (:mod:`.metadata` writes it): the checks a decoder relies on, the shipped JSON
Schema, and the :class:`AnimationTexture` a sidecar and its image describe."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from ..autofactor import RoundShape
from .auto import TextureAuto
from .layout import Clip, Kind, TextureLayout
from .metadata import FORMAT_NAME, FORMAT_VERSION
from .quantize import Precision, stored_from_channels
from .texture import AnimationTexture

__all__ = ["load_schema", "loads", "texture_from_metadata"]


def loads(text: str) -> dict[str, Any]:
    """Parse a sidecar and check what a decoder relies on; raises ``ValueError`` with the reason."""
    meta = json.loads(text)
    if not isinstance(meta, dict) or meta.get("format") != FORMAT_NAME:
        raise ValueError(f"not a {FORMAT_NAME} sidecar")
    version = meta.get("format_version")
    if not isinstance(version, int) or not 1 <= version <= FORMAT_VERSION:
        raise ValueError(
            f"format_version {version!r} is not supported (this reader knows 1..{FORMAT_VERSION})"
        )
    Kind(meta["kind"])
    Precision(meta["precision"])
    for key in ("layout", "decode", "clips", "bounds"):
        if key not in meta:
            raise ValueError(f"sidecar lacks {key!r}")
    return meta


def load_schema() -> dict[str, Any]:
    """The JSON Schema shipped with the package (``schema.json``)."""
    return json.loads(Path(__file__).with_name("schema.json").read_text(encoding="utf-8"))


def texture_from_metadata(meta: Mapping[str, Any], pixels: np.ndarray) -> AnimationTexture:
    """Rebuild an :class:`AnimationTexture` from a sidecar and pixels read back from the image.

    ``pixels`` may be the stored dtype or float channels as Blender's ``Image.pixels`` returns them
    (``(H, W, 4)``, row 0 first); float pixels of a PNG are re-quantised to the stored codes.
    """
    kind = Kind(meta["kind"])
    precision = Precision(meta["precision"])
    lay = meta["layout"]
    clips = tuple(
        Clip(c["name"], c["frame_start"], c["frame_end"], c["fps"], c["loop"], c["frame_step"])
        for c in meta["clips"]
    )
    for clip, entry in zip(clips, meta["clips"]):
        if clip.frame_count != entry["frame_count"]:
            raise ValueError(
                f"clip {clip.name!r}: frame range gives {clip.frame_count} samples, "
                f"sidecar says {entry['frame_count']}"
            )
    auto = meta.get("auto")
    layout = TextureLayout(
        width=lay["width"],
        height=lay["height"],
        texels_per_item=lay["texels_per_item"],
        item_count=lay["item_count"],
        items_per_row=lay["items_per_row"],
        rows_per_frame=lay["rows_per_frame"],
        metadata_rows=lay["metadata_rows"],
        clip_first_rows=tuple(c["first_row"] for c in meta["clips"]),
        clip_frame_counts=tuple(c.frame_count for c in clips),
        power_of_two=lay["power_of_two"],
        max_width=lay["max_width"],
        auto_row_offset=0 if auto is None else int(auto["row_offset"]),
    )
    px = np.asarray(pixels)
    if px.shape != (layout.height, layout.width, 4):
        raise ValueError(f"pixels {px.shape} do not match the sidecar's {layout.height}x{layout.width}x4")
    if px.dtype != precision.dtype:
        px = stored_from_channels(px, precision)
    bones = meta.get("bones")
    f32 = np.float32
    return AnimationTexture(
        kind=kind,
        precision=precision,
        layout=layout,
        clips=clips,
        pixels=px,
        value_min=np.asarray(meta["bounds"]["min"], f32),
        value_max=np.asarray(meta["bounds"]["max"], f32),
        decode_offset=np.asarray(meta["decode"]["offset"], f32),
        decode_scale=np.asarray(meta["decode"]["scale"], f32),
        bone_names=None if bones is None else tuple(b["name"] for b in bones),
        bone_pivots=None if bones is None else np.asarray([b["pivot"] for b in bones], f32),
        deform_factor=meta["deform_factor"]["value"],
        non_rigid_residual=float(meta.get("non_rigid_residual", 0.0)),
        embedded_metadata=meta.get("embedded_metadata") is not None,
        auto=None if auto is None else _texture_auto(auto),
    )


def _texture_auto(auto: Mapping[str, Any]) -> TextureAuto:
    f32 = np.float32
    return TextureAuto(
        profile=auto["profile"],
        value_min=np.asarray(auto["bounds"]["min"], f32),
        value_max=np.asarray(auto["bounds"]["max"], f32),
        decode_offset=np.asarray(auto["decode"]["offset"], f32),
        decode_scale=np.asarray(auto["decode"]["scale"], f32),
        vertex_floats=int(auto["vertex_floats"]),
        shape=RoundShape(auto["width"], auto["swing_exponent"], auto["twist_weight"]),
        epsilon_sq=auto["epsilon_sq"],
        quarter_turn_sq=auto["quarter_turn_sq"],
        presence=auto["presence"],
    )
