"""Vertex and bone animation textures for GPU-instanced crowds (Johansson 2021), numpy only.

Pipeline: the Blender side samples each clip (skinned positions/normals, or bone skinning matrices) →
:mod:`.encode` builds ``(H, W, 4)`` pixels in the chosen :class:`Precision` on a :mod:`.layout` (an
:class:`~.texture.AnimationTexture`, optionally with its own binary :mod:`.header`) → :mod:`.metadata`
writes the JSON sidecar (validated by the shipped ``schema.json``; :mod:`.sidecar` reads it back) →
:mod:`.decode` plays it back exactly as ``shaders/animtex_*.glsl`` do → :mod:`.report` measures the
error against the rig and picks the cheapest encoding within a tolerance. Motion of the mesh object
itself (root motion) is not in the texture: :mod:`.root_motion` writes it as a per-clip track.
"""

from .auto import AutoBake, TextureAuto
from .decode import (
    BoneFrames,
    decode_bone_frames,
    decode_values,
    decode_vertex_frames,
    skin_with_bone_frames,
)
from .encode import (
    encode_bone_dq_animation,
    encode_bone_matrix_animation,
    encode_vertex_animation,
)
from .header import read_embedded
from .layout import TEXELS_PER_ITEM, Clip, Kind, TextureLayout, frame_pair, plan_layout
from .metadata import FORMAT_VERSION, build_metadata, dumps
from .pose_bounds import ClipBounds, pose_bounds
from .quantize import Precision, error_bound
from .report import (
    EncodingChoice,
    choose_encoding,
    clip_errors,
    encoding_candidates,
    error_report,
    mid_samples,
    pick_encoding,
)
from .root_motion import root_motion_at, root_motion_matrices, root_motion_track
from .sidecar import load_schema, loads, texture_from_metadata
from .texture import AnimationTexture

__all__ = [
    "FORMAT_VERSION",
    "TEXELS_PER_ITEM",
    "AnimationTexture",
    "AutoBake",
    "ClipBounds",
    "BoneFrames",
    "Clip",
    "EncodingChoice",
    "Kind",
    "Precision",
    "TextureAuto",
    "TextureLayout",
    "build_metadata",
    "choose_encoding",
    "clip_errors",
    "decode_bone_frames",
    "decode_values",
    "decode_vertex_frames",
    "dumps",
    "encoding_candidates",
    "encode_bone_dq_animation",
    "encode_bone_matrix_animation",
    "encode_vertex_animation",
    "error_bound",
    "error_report",
    "frame_pair",
    "load_schema",
    "loads",
    "mid_samples",
    "pick_encoding",
    "plan_layout",
    "pose_bounds",
    "read_embedded",
    "root_motion_at",
    "root_motion_matrices",
    "root_motion_track",
    "skin_with_bone_frames",
    "texture_from_metadata",
]
