"""Animation texture bakes as the tests check them, independently of the bake's own code: reading the
written files (PNG with a small decoder of its own, EXR with Blender's loader), finding each vertex
through the mesh data the bake wrote, the truth from the API at scene frames, and error bounds.
"""

from __future__ import annotations

import json
import struct
import zlib
from importlib import import_module
from pathlib import Path

import bpy
import jsonschema
import numpy as np

from tests.support.assets import play

PRECISIONS = ("PNG8", "PNG16", "EXR16", "EXR32")
TEXELS = {"VERTEX": 2, "BONE_MATRIX": 3, "BONE_DQ": 2}


# ------------------------------------------------------------------------------------------ reading
def _unfilter(raw: bytes, height: int, stride: int, bpp: int) -> np.ndarray:
    """PNG scanline filters 0-4 (RFC 2083 §6), pixel by pixel across all channels at once."""
    out = np.zeros((height, stride), np.int32)
    prev = np.zeros(stride, np.int32)
    for y in range(height):
        start = y * (stride + 1)
        kind, line = raw[start], np.frombuffer(raw, np.uint8, stride, start + 1).astype(np.int32)
        if kind in (0, 2):
            cur = (line + prev * (kind == 2)) & 255
        else:
            cur = np.zeros(stride, np.int32)
            for x in range(0, stride, bpp):
                a = cur[x - bpp : x] if x else np.zeros(bpp, np.int32)
                b, c = prev[x : x + bpp], prev[x - bpp : x] if x else np.zeros(bpp, np.int32)
                if kind == 1:
                    pred = a
                elif kind == 3:
                    pred = (a + b) // 2
                else:
                    pa, pb, pc = np.abs(b - c), np.abs(a - c), np.abs(a + b - 2 * c)
                    pred = np.where((pa <= pb) & (pa <= pc), a, np.where(pb <= pc, b, c))
                cur[x : x + bpp] = (line[x : x + bpp] + pred) & 255
        out[y], prev = cur, cur
    return out


def read_png(path: Path) -> tuple[int, np.ndarray]:
    """``(bit depth, (H, W, 4) stored codes)``, row 0 = bottom row as Blender and texelFetch count."""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat = 8, b""
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos : pos + 4])
        kind, body = data[pos + 4 : pos + 8], data[pos + 8 : pos + 8 + length]
        if kind == b"IHDR":
            width, height, depth, color, _, _, interlace = struct.unpack(">IIBBBBB", body)
            assert (color, interlace) == (6, 0), "RGBA, not interlaced"
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    rows = _unfilter(zlib.decompress(idat), height, width * 4 * depth // 8, 4 * depth // 8)
    if depth == 16:
        rows = rows[:, 0::2] * 256 + rows[:, 1::2]
    return depth, rows.reshape(height, width, 4)[::-1]


def blender_pixels(path: Path) -> np.ndarray:
    image = bpy.data.images.load(str(path), check_existing=False)
    image.colorspace_settings.name = "Non-Color"
    image.alpha_mode = "CHANNEL_PACKED"
    width, height = image.size
    buf = np.empty(width * height * 4, np.float32)
    image.pixels.foreach_get(buf)
    bpy.data.images.remove(image)
    return buf.reshape(height, width, 4)


def load_bake(core, json_path: Path, independent_png: bool = False):
    """Sidecar (validated against the shipped schema) and the texture rebuilt from the file on disk."""
    meta = json.loads(json_path.read_text(encoding="utf-8"))
    jsonschema.validate(meta, core.load_schema())
    image = json_path.parent / meta["image"]
    if independent_png and image.suffix == ".png":
        depth, codes = read_png(image)
        assert depth == (8 if meta["precision"] == "PNG8" else 16)
        pixels = codes.astype(core.Precision(meta["precision"]).dtype)
    else:
        pixels = blender_pixels(image)
    return meta, core.texture_from_metadata(meta, pixels)


def mesh_attribute(obj, name: str, width: int, field: str, dtype=np.float32) -> np.ndarray:
    attr = obj.data.attributes[name]
    buf = np.empty(len(attr.data) * width, dtype)
    attr.data.foreach_get(field, buf)
    return buf.reshape(len(attr.data), width) if width > 1 else buf


def coordinates(obj) -> np.ndarray:
    co = np.empty(len(obj.data.vertices) * 3, np.float32)
    obj.data.vertices.foreach_get("co", co)
    return co.reshape(-1, 3)


def to_world(points: np.ndarray, world: np.ndarray) -> np.ndarray:
    """``(S, N, 3)`` local points with each frame's object matrix ``(S, 4, 4)`` → scene space."""
    return np.einsum("sij,snj->sni", world[:, :3, :3], points.astype(np.float64)) + world[:, None, :3, 3]


# ----------------------------------------------------------------------------------- truth, decode
def clip_frames(clip: dict) -> tuple[np.ndarray, np.ndarray]:
    """Scene frames of a clip's stored samples and of the samples halfway between them."""
    step, count = clip["frame_step"], clip["frame_count"]
    halves = count if clip["loop"] else count - 1
    return clip["frame_start"] + step * np.arange(count), clip["frame_start"] + step * (
        np.arange(halves) + 0.5
    )


CHANNELS = ("location", "rotation_quaternion", "rotation_euler", "rotation_axis_angle", "scale")


def scene_pose(arm) -> dict:
    """Every pose bone's channels as they are now: what bones an action does not key show when it plays."""
    return {pb.name: tuple(tuple(getattr(pb, c)) for c in CHANNELS) for pb in arm.pose.bones}


def set_pose(arm, pose: dict) -> None:
    """Put back a :func:`scene_pose`: a clip plays from the scene's pose, not from what was played before."""
    for pb in arm.pose.bones:
        for channel, value in zip(CHANNELS, pose[pb.name]):
            setattr(pb, channel, value)


def truth(addon, arm, meshes, action, frames, factor, pose: dict | None = None):
    """Per mesh: ``(S, N, 3)`` local positions and ``(S, 4, 4)`` object matrices at scene ``frames``,
    ``action`` played from ``pose`` (a :func:`scene_pose`; ``None``: the pose as it is now) as a bake
    with ``pose.unkeyed_bones == "scene"`` does: channels the action does not key keep those values."""
    arm.animation_data.use_nla = False
    if pose is not None:
        set_pose(arm, pose)
    out = [([], []) for _ in meshes]
    for frame in frames:
        play(arm, action, float(frame))
        for (positions, worlds), obj in zip(out, meshes):
            positions.append(addon.api.deformed_positions(obj, deform_factor=factor))
            worlds.append(np.array(obj.matrix_world))
    return [(np.array(p).reshape(len(frames), -1, 3), np.array(w).reshape(-1, 4, 4)) for p, w in out]


def decode(core, meta, texture, meshes, clip: int, samples: np.ndarray, factor=None) -> list[np.ndarray]:
    """Local positions per mesh, each vertex found through the mesh data the bake wrote (bone kinds at
    ``factor``, default the sidecar's)."""
    if meta["kind"] == "VERTEX":
        index = [
            mesh_attribute(o, meta["mesh_attributes"]["texel_index"], 1, "value", np.int32) for o in meshes
        ]
        rest = np.zeros((meta["layout"]["item_count"], 3), np.float32)
        for obj, idx in zip(meshes, index):
            rest[idx] = coordinates(obj)
        items, _ = core.decode_vertex_frames(texture, rest, clip, samples)
        return [items[:, idx] for idx in index]
    skin = import_module(core.__name__ + ".decode").skin_with_bone_frames
    frames = core.decode_bone_frames(texture, clip, samples)
    out = []
    for obj in meshes:
        idx = mesh_attribute(obj, meta["mesh_attributes"]["bone_indices"], 4, "color")
        w = mesh_attribute(obj, meta["mesh_attributes"]["bone_weights"], 4, "color")
        assert np.array_equal(idx, np.round(idx)) and np.allclose(w.sum(1), 1.0, atol=1e-6)
        f = meta["deform_factor"]["value"] if factor is None else factor
        out.append(skin(frames, coordinates(obj), idx.astype(np.int32), w, f)[0])
    return out


def world_stats(truth_local, got_local, diagonal) -> dict:
    dist = np.concatenate(
        [
            np.linalg.norm(to_world(g, w) - to_world(t, w), axis=-1).ravel()
            for (t, w), g in zip(truth_local, got_local)
        ]
    )
    return {
        "max": dist.max(),
        "mean": dist.mean(),
        "count": dist.size,
        "max_percent": 100 * dist.max() / diagonal,
    }


def bake(**kwargs) -> None:
    assert bpy.ops.hybrid_skin.bake_animation_texture(**kwargs) == {"FINISHED"}


def vertex_bound(truth_local: np.ndarray, rest: np.ndarray, precision: str) -> np.ndarray:
    """Per-axis decode error bound from the offsets' AABB alone (as the core tests derive it)."""
    off = truth_local.astype(np.float64) - rest
    lo, hi = off.reshape(-1, 3).min(0), off.reshape(-1, 3).max(0)
    if precision.startswith("PNG"):
        storage = (hi - lo) / (2 * (255 if precision == "PNG8" else 65535))
    else:
        exponent = np.floor(np.log2(np.maximum((hi - lo) / 2, 1e-300)))
        storage = np.where(hi > lo, 2.0 ** (exponent - (11 if precision == "EXR16" else 24)), 0.0)
    return storage + 2.0**-22 * np.maximum(np.abs(lo), np.abs(hi)) + 2.0**-24 * np.abs(truth_local).max()


def bone_matrix_bounds(kind: str, precision: str, mats: np.ndarray, pivots: np.ndarray):
    """Bounds on decoded ``(F, B, 4, 4)`` bone matrices: linear entries, and translation per bone/axis."""
    q = {"PNG8": 255, "PNG16": 65535}.get(precision)
    u = np.einsum("fbij,bj->fbi", mats[..., :3, :3], pivots) + mats[..., :3, 3]
    lo, hi = u.min(0), u.max(0)
    bits = 11 if precision == "EXR16" else 24
    if q:
        d_u = (hi - lo) / (2 * q)
    else:
        d_u = np.where(hi > lo, 2.0 ** (np.floor(np.log2(np.maximum((hi - lo) / 2, 1e-300))) - bits), 0.0)
    limit = max(1.0, np.abs(mats[..., :3, :3]).max()) if kind == "BONE_MATRIX" else 1.0
    delta = (limit / (q - 1) if q else 2.0 ** (np.floor(np.log2(limit)) - bits)) + 2.0**-21 * limit
    d_lin = delta if kind == "BONE_MATRIX" else 8 * delta  # quaternion: |dq| <= 4 delta, rotation <= 2 |dq|
    arith = 2.0**-21 * np.abs(u).max()
    return d_lin, d_u + d_lin * np.linalg.norm(pivots, axis=1)[:, None] * 3 + arith


def true_bone_matrices(arm, meshes, names) -> np.ndarray:
    """Mesh-space skinning matrices ``inv(T2A) @ matrix_channel @ T2A`` straight from the pose bones."""
    t2a = np.linalg.inv(np.array(arm.matrix_world)) @ np.array(meshes[0].matrix_world)
    chan = np.array([np.array(arm.pose.bones[n].matrix_channel) for n in names])
    return np.linalg.inv(t2a) @ chan @ t2a
