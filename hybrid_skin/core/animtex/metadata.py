"""The JSON sidecar: everything an engine or shader needs to decode a texture without this code.

(The same layout, clip table and decode terms, embedded in the texture itself for shaders that have no
JSON parser, are :mod:`.header`.)

Dicts and strings only (no files): the Blender side decides where the image and the ``.json`` go.
``schema.json`` beside this module is the JSON Schema (draft 2020-12) of what :func:`build_metadata`
writes; :func:`.sidecar.loads` reads a sidecar back with the few checks runtime code relies on.
Format history: version 1 is the first. Optional fields added since, which readers of version 1 may
ignore: a clip's ``root_motion`` (:mod:`.root_motion`); ``pose``, ``units``, ``import_settings``,
``deform_factor.mode``/``source``, ``error_report.deform_factor``, ``by_deform_factor`` and
``any_deform_factor_max``; ``error_report.oracle_gap``; ``options``; ``auto`` (a bone texture that
carries Auto, :mod:`.auto`), ``mesh_attributes.auto_rest`` and ``error_report.auto``; ``source`` and
``files`` (what the bake is of, and its set of files); ``pose_bounds`` and each clip's ``pose_bounds``
(culling boxes, :mod:`.pose_bounds`), ``tangents`` and ``instancing``. The specification
a decoder is written from is ``shaders/FORMAT.md``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from .auto import AUTO_CHANNELS
from .layout import GUARD_FRAMES, Clip, Kind, TextureLayout
from .pose_bounds import ClipBounds
from .quantize import Precision, error_bound
from .texture import AnimationTexture

__all__ = [
    "DEFAULT_MESH_ATTRIBUTES",
    "auto_rest_attributes",
    "ORIGIN",
    "UNKEYED_BONES",
    "import_settings",
    "FORMAT_NAME",
    "FORMAT_VERSION",
    "build_metadata",
    "dumps",
]

FORMAT_NAME = "hybrid_skin.animtex"
FORMAT_VERSION = 1
#: How a bake poses bones a clip does not key (the sidecar's ``pose.unkeyed_bones``).
UNKEYED_BONES = ("scene", "rest")

#: Mesh data the Blender side writes so an engine finds each vertex's texels after reordering.
DEFAULT_MESH_ATTRIBUTES = {
    "texel_index": "animtex_index",  # INT point attribute: item index (vertex textures)
    "texel_uv": "animtex_uv",  # UV map: texel-centre UV of the corner's item's first texel in frame 0
    "corner_index": "animtex_corner_index",  # INT face-corner attribute: item of the corner's normal group
    "bone_indices": "animtex_bone_indices",  # bone kinds: influence bone indices, in "bones" order
    "bone_weights": "animtex_bone_weights",  # bone kinds: matching normalised weights
    # bone kinds with Auto: each vertex's Auto rest data (autofactor.vertex_geometry), 4 floats per
    # attribute; more floats continue in "<name>_1", "<name>_2", ... (sidecar auto.vertex_floats)
    "auto_rest": "animtex_auto_rest",
}

def auto_rest_attributes(name: str, vertex_floats: int) -> list[str]:
    """The attributes holding ``vertex_floats`` floats of Auto rest data per vertex, 4 per attribute:
    ``name``, then ``name_1``, ``name_2``, ... (the last one padded with zeros)."""
    return [name if i == 0 else f"{name}_{i}" for i in range(-(-int(vertex_floats) // 4))]


#: The ``auto`` block's description of how a runtime computes the factor (shaders/FORMAT.md section 9).
AUTO_FORMULA = (
    "per vertex from its 4 influences, the interpolated Auto data of those bones and its auto_rest: "
    "f = 1 - presence_fade * S (1 - exp(-k z^2)) / (twist_weight T + S + epsilon_sq P), "
    "hs_round_begin/add/spread/finish of shaders/hybrid_skin_round.glsl (shaders/FORMAT.md section 9)"
)

_SLOTS = {
    Kind.VERTEX: [("position_offset", ["dx", "dy", "dz", "one"]), ("normal", ["x", "y", "z", "one"])],
    Kind.BONE_MATRIX: [(f"row{r}", [f"a{r}0", f"a{r}1", f"a{r}2", f"u{r}"]) for r in range(3)],
    Kind.BONE_DQ: [("rotation", ["w", "x", "y", "z"]), ("pivot_position_scale", ["ux", "uy", "uz", "s"])],
}

#: The third texel of a VERTEX texture that stores tangents (decoded with the normal's terms).
TANGENT_SLOT = ("tangent", ["x", "y", "z", "sign"])


#: The ``tangents`` block's rule (shaders/FORMAT.md sections 5 and 7).
TANGENT_RULE = (
    "MikkTSpace tangent (xyz) and bitangent sign (w; bitangent = w cross(normal, tangent)) of each mesh's "
    "UV map at rest, turned by each vertex's hybrid matrix M (t' = M t, made perpendicular to the normal and "
    "unit): VERTEX stores the turned ones (slot tangent), bone kinds turn the mesh's own (glTF TANGENT) at "
    "runtime"
)


def _slots(texture: AnimationTexture) -> list[tuple[str, list[str]]]:
    slots = list(_SLOTS[texture.kind])
    if texture.kind is Kind.VERTEX and texture.layout.texels_per_item == 3:
        slots.append(TANGENT_SLOT)
    return slots


_CHANNEL_RULE = {
    Precision.PNG8: "stored / 255",
    Precision.PNG16: "stored / 65535",
    Precision.EXR16: "stored half float",
    Precision.EXR32: "stored float",
}

#: Row order (``layout.origin``): the same in PNG and EXR files, see shaders/FORMAT.md.
ORIGIN = (
    "bottom-up: texture row y is image row height - 1 - y as a PNG or EXR reader returns rows (top row "
    "first), so row 0 is the last row stored in the file; texelFetch y = 0 in OpenGL, Blender "
    "Image.pixels row 0; power-of-two padding is at the top of the image (the first rows read)"
)

#: Pixel format an engine must import each precision as (``import_settings.pixel_format``).
PIXEL_FORMATS = {
    Precision.PNG8: "RGBA8_UNORM",
    Precision.PNG16: "RGBA16_UNORM",
    Precision.EXR16: "RGBA16_FLOAT",
    Precision.EXR32: "RGBA32_FLOAT",
}

_TEXEL_FORMULA = (
    "x = (item % items_per_row) * texels_per_item + slot; "
    "y = clip.first_row + frame * rows_per_frame + item // items_per_row; "
    "frame = clip.frame_count is the guard band (frame 0 for loops, last frame otherwise)"
)


def _auto_dict(texture: AnimationTexture) -> dict[str, Any]:
    auto = texture.auto
    terms = auto.value_min, auto.value_max, auto.decode_offset, auto.decode_scale
    bound = error_bound(*terms, texture.precision)
    return {
        "profile": auto.profile,
        "width": float(np.float32(auto.shape.width)),
        "swing_exponent": float(np.float32(auto.shape.swing_exponent)),
        "twist_weight": float(np.float32(auto.shape.twist_weight)),
        "epsilon_sq": float(np.float32(auto.epsilon_sq)),
        "quarter_turn_sq": float(np.float32(auto.quarter_turn_sq)),
        "presence": float(np.float32(auto.presence)),
        "row_offset": texture.layout.auto_row_offset,
        "slots": [{"name": n, "channels": list(c)} for n, c in AUTO_CHANNELS],
        "decode": {"offset": _nested(auto.decode_offset), "scale": _nested(auto.decode_scale)},
        "bounds": {"min": _nested(auto.value_min), "max": _nested(auto.value_max)},
        "error_bound": _nested(bound),
        "space": "armature",
        "vertex_floats": auto.vertex_floats,
        "interpolation": "linear on decoded values between stored frames; cross-fades lerp by the weight",
        "formula": AUTO_FORMULA,
    }


def _nested(a: np.ndarray) -> list:
    """float32 array → nested lists of floats; float32 → float64 → JSON → float32 is exact."""
    return np.asarray(a, dtype=np.float64).tolist()


#: The top-level ``pose_bounds`` block's descriptions (shaders/FORMAT.md section 10).
POSE_BOUNDS_SPACE = (
    "each mesh's own object space, mesh units (the space of the decoded positions, before the object's "
    "transform); per mesh in the order of meshes"
)
POSE_BOUNDS_ENCLOSE = (
    "every position playback decodes: at every runtime deform factor in [0, 1] and Auto, at and between "
    "stored frames; clips[].pose_bounds.frames[f] from stored frame f to f + 1 (the last: to the guard "
    "band), clips[].pose_bounds.min/max the whole clip; a cross-fade: the union of both clips' boxes"
)


#: Significant decimal digits of the per-frame boxes (rounded outward: a box a few 1e-4 of the clip's extent
#: larger, in a sidecar a third the size of float32's shortest decimals).
FRAME_BOX_DIGITS = 4


def _float32_values(a: np.ndarray) -> list:
    """Nested lists of the shortest decimals that read back as the float32 values of ``a``."""
    shortest = np.vectorize(lambda v: float(str(v)), otypes=[object])
    return shortest(np.asarray(a, dtype=np.float32)).tolist()


def _outward_decimals(lo: np.ndarray, hi: np.ndarray, extent: np.ndarray) -> tuple[list, list]:
    """``lo``/``hi`` ``(F, M, 3)`` rounded outward to a decimal grid of :data:`FRAME_BOX_DIGITS` digits of
    each mesh's ``extent`` ``(M,)``, then widened by one float32 step so the float32 of each decimal still
    encloses."""
    exponent = np.floor(np.log10(np.maximum(extent, 1e-30))) - (FRAME_BOX_DIGITS - 1)
    step = (10.0**exponent)[None, :, None]
    down = np.floor(np.nextafter(lo.astype(np.float64), -np.inf) / step) * step
    up = np.ceil(np.nextafter(hi.astype(np.float64), np.inf) / step) * step
    digits = np.maximum(0, -exponent).astype(int)
    text = lambda a: [[[round(float(v), int(d)) for v in vec] for vec, d in zip(mesh, digits)] for mesh in a]  # noqa: E731
    return text(np.minimum(down, lo)), text(np.maximum(up, hi))


def _pose_bounds_dicts(bounds: Sequence[ClipBounds]) -> list[dict[str, Any]]:
    out = []
    for b in bounds:
        extent = np.max(b.clip_hi.astype(np.float64) - b.clip_lo, axis=1)
        frames_lo, frames_hi = _outward_decimals(b.lo, b.hi, extent)
        out.append({
            "min": _float32_values(b.clip_lo),
            "max": _float32_values(b.clip_hi),
            "frames": {"min": frames_lo, "max": frames_hi},
        })  # fmt: skip
    return out


def _layout_dict(lay: TextureLayout) -> dict[str, Any]:
    return {
        "width": lay.width,
        "height": lay.height,
        "data_width": lay.data_width,
        "data_height": lay.data_height,
        "texels_per_item": lay.texels_per_item,
        "item_count": lay.item_count,
        "items_per_row": lay.items_per_row,
        "rows_per_frame": lay.rows_per_frame,
        "metadata_rows": lay.metadata_rows,
        "guard_frames": GUARD_FRAMES,
        "power_of_two": lay.power_of_two,
        "max_width": lay.max_width,
        "origin": ORIGIN,
        "texel": _TEXEL_FORMULA,
    }


def _clip_dict(clip: Clip, first_row: int, root_motion: Mapping[str, Any] | None) -> dict[str, Any]:
    entry = {
        "name": clip.name,
        "first_row": first_row,
        "frame_count": clip.frame_count,
        "sample_rate": clip.sample_rate,
        "loop": clip.loop,
        "duration": (clip.frame_count if clip.loop else clip.frame_count - 1) / clip.sample_rate,
        "frame_start": clip.frame_start,
        "frame_end": clip.frame_end,
        "frame_step": clip.frame_step,
        "fps": clip.fps,
    }
    if root_motion is not None:
        for key in ("translation", "rotation", "scale"):
            if len(root_motion[key]) != clip.frame_count:
                raise ValueError(
                    f"clip {clip.name!r}: root motion {key} has {len(root_motion[key])} samples, "
                    f"the clip {clip.frame_count}"
                )
        entry["root_motion"] = dict(root_motion)
    return entry


def import_settings(texture: AnimationTexture) -> dict[str, Any]:
    """How an engine must import the image: data, exact size, nearest texels (shaders/FORMAT.md)."""
    lay = texture.layout
    return {
        "pixel_format": PIXEL_FORMATS[texture.precision],
        "srgb": False,
        "compression": "none",
        "filter": "nearest",
        "mipmaps": False,
        "npot": "none",
        "max_size": max(lay.width, lay.height),
        "wrap": "clamp",
        "premultiplied_alpha": False,
        "row_order": "bottom_up",
    }


def build_metadata(
    texture: AnimationTexture,
    *,
    image: str | None = None,
    mesh_attributes: Mapping[str, str] | None = None,
    error_report: Mapping[str, Any] | None = None,
    root_motion: Sequence[Mapping[str, Any] | None] | None = None,
    unkeyed_bones: str = "scene",
    factor: Mapping[str, str] | None = None,
    mesh_to_scene_scale: float | None = None,
    options: Mapping[str, Any] | None = None,
    source: Mapping[str, str] | None = None,
    files: Mapping[str, str | None] | None = None,
    pose_bounds: tuple[Sequence[str], Sequence[ClipBounds]] | None = None,
    tangent_uv_maps: Sequence[str] | None = None,
    instancing: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The sidecar dict for ``texture``; ``image`` is the texture's file name, if already known.
    ``pose_bounds``: the baked meshes' names (the texture's order) and each clip's culling boxes
    (:func:`.pose_bounds.pose_bounds`), kept as ``pose_bounds`` and ``clips[].pose_bounds``.
    ``tangent_uv_maps``: with tangents (normal maps), each baked mesh's UV map they follow (``tangents``).
    ``instancing``: the instancing mesh's file and UV channel layout (bone kinds), kept as ``instancing``.
    ``options``: what the bake was asked for (the add-on's ``BakeOptions.record()``), kept as the
    optional ``options`` block (additive in format version 1).

    ``root_motion`` has one entry per clip: its :func:`.root_motion.root_motion_track`, or ``None``
    for a clip whose mesh does not move (the clip then has no ``root_motion`` field).
    ``unkeyed_bones`` is how the bake posed bones a clip does not key: ``"scene"`` (the pose the scene
    had at bake start, what Blender shows playing the action) or ``"rest"``. ``factor`` is the deform
    factor's ``mode`` (``GLOBAL``, ``VERTEX_GROUP``, ``AUTO``, ``MIXED``) and ``source`` (``object``:
    each object's own settings; ``bake``: numbers given to the bake). ``mesh_to_scene_scale`` is how
    many scene units one mesh unit is (the first mesh's world matrix at the first sample, its largest
    axis scale): texture values are in mesh units, the error report in scene units. ``source`` (the
    object, the .blend file and the kind baked) and ``files`` (the set's file names: ``image``, ``sidecar``,
    ``gltf``, ``babylon``) are the optional ``source`` and ``files`` blocks (additive in format version 1):
    what a later bake of the same names reads to tell its own files from others'.
    """
    if unkeyed_bones not in UNKEYED_BONES:
        raise ValueError(f"unkeyed_bones must be one of {UNKEYED_BONES}, got {unkeyed_bones!r}")
    tracks = [None] * len(texture.clips) if root_motion is None else list(root_motion)
    if len(tracks) != len(texture.clips):
        raise ValueError(f"root_motion has {len(tracks)} entries for {len(texture.clips)} clips")
    kind = texture.kind
    attrs = dict(DEFAULT_MESH_ATTRIBUTES if mesh_attributes is None else mesh_attributes)
    if kind is Kind.VERTEX:
        attrs = {k: v for k, v in attrs.items() if not k.startswith("bone_")}
    if texture.auto is None:
        attrs.pop("auto_rest", None)
    bound = error_bound(
        texture.value_min, texture.value_max, texture.decode_offset, texture.decode_scale, texture.precision
    )
    meta: dict[str, Any] = {
        "format": FORMAT_NAME,
        "format_version": FORMAT_VERSION,
        "kind": kind.value,
        "precision": texture.precision.value,
        "image": image,
        "sampling": {
            "color_space": "Non-Color",
            "alpha": "CHANNEL_PACKED",
            "filter": "nearest",
            "mipmaps": False,
        },
        "import_settings": import_settings(texture),
        "units": {
            "values": "mesh",
            "error_report": "scene",
            "mesh_to_scene_scale": None if mesh_to_scene_scale is None else float(mesh_to_scene_scale),
        },
        "layout": _layout_dict(texture.layout),
        "slots": [{"name": n, "channels": c} for n, c in _slots(texture)],
        "decode": {
            "rule": "value = offset + scale * channel",
            "channel": _CHANNEL_RULE[texture.precision],
            "per_bone": kind is not Kind.VERTEX,
            "offset": _nested(texture.decode_offset),
            "scale": _nested(texture.decode_scale),
        },
        "bounds": {"min": _nested(texture.value_min), "max": _nested(texture.value_max)},
        "error_bound": _nested(bound),
        "clips": [
            _clip_dict(c, texture.layout.clip_first_rows[i], tracks[i]) for i, c in enumerate(texture.clips)
        ],
        "pose": {"unkeyed_bones": unkeyed_bones},
        "deform_factor": {
            "value": texture.deform_factor,
            "baked": kind is Kind.VERTEX,
            **(factor or {}),
        },
        "mesh_attributes": attrs,
        "embedded_metadata": (
            {
                "rows": texture.layout.metadata_rows,
                "encoding": "float32 little-endian, byte k in channel k as byte/255",
            }
            if texture.embedded_metadata
            else None
        ),
    }
    if kind is not Kind.VERTEX:
        pivots = np.asarray(texture.bone_pivots, dtype=np.float64)
        meta["bones"] = [{"name": n, "pivot": _nested(p)} for n, p in zip(texture.bone_names, pivots)]
        meta["non_rigid_residual"] = float(texture.non_rigid_residual)
        if texture.auto is not None:
            meta["auto"] = _auto_dict(texture)
    if error_report is not None:
        meta["error_report"] = dict(error_report)
    if options is not None:
        meta["options"] = dict(options)
    if source is not None:
        meta["source"] = dict(source)
    if files is not None:
        meta["files"] = dict(files)
    if tangent_uv_maps is not None:
        stored = kind is Kind.VERTEX
        if stored and texture.layout.texels_per_item != 3:
            raise ValueError("tangents: a VERTEX texture stores them in a third texel per item")
        meta["tangents"] = {
            "uv_maps": [str(n) for n in tangent_uv_maps],
            "stored": "texture" if stored else "mesh",
            "rule": TANGENT_RULE,
        }
    if instancing is not None:
        if kind is Kind.VERTEX:
            raise ValueError("an instancing mesh carries bone indices and weights: bone kinds only")
        meta["instancing"] = dict(instancing)
    if pose_bounds is not None:
        names, bounds = pose_bounds
        if len(bounds) != len(texture.clips) or any(b.lo.shape[1] != len(names) for b in bounds):
            raise ValueError(f"pose bounds of {len(bounds)} clips, {len(names)} meshes: not this texture's")
        meta["pose_bounds"] = {
            "meshes": [str(n) for n in names],
            "space": POSE_BOUNDS_SPACE,
            "encloses": POSE_BOUNDS_ENCLOSE,
        }
        for entry, clip_bounds in zip(meta["clips"], _pose_bounds_dicts(bounds)):
            entry["pose_bounds"] = clip_bounds
    return meta


#: A JSON array of numbers only (what :func:`dumps` puts on one line).
_NUMBER_LIST = re.compile(r"\[(?:\s*-?[0-9][0-9.eE+-]*\s*,)*\s*-?[0-9][0-9.eE+-]*\s*\]")


def dumps(meta: Mapping[str, Any]) -> str:
    """Strict JSON text (no NaN/Infinity, which many JSON parsers reject), indented, with each array of
    numbers on one line (a vector, a box corner: the line breaks only those arrays lose are between
    numbers; strings hold no line breaks, so none changes)."""
    text = json.dumps(meta, indent=1, allow_nan=False)
    return _NUMBER_LIST.sub(lambda m: re.sub(r"\s*\n\s*", "", m.group(0)), text)
