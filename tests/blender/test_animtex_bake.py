"""Animation texture bake (seed 002) through the installed operator: files, sizes, round trip, failures.

The expected values are recomputed here without the bake's own code: truth from ``api.deformed_positions``
at every baked frame and halfway between frames (the scene played by ``tests.blender.assets.play``), the
texture read back from disk (PNG with the small decoder below, EXR with Blender's loader), each vertex
found through the mesh data the bake wrote, decoded with the core's reference decoders (the GLSL twins).
"""

from __future__ import annotations

import importlib
import json
import math
import os
import struct
import subprocess
import sys
import zlib
from pathlib import Path

import bpy
import jsonschema
import numpy as np
import pytest

from tests.blender.assets import armature_actions, clip_action, import_gltf, play
from tests.blender.scenes import make_chain_armature, make_cylinder, skin_to_chain

REPO_ROOT = Path(__file__).resolve().parents[2]
PRECISIONS = ("PNG8", "PNG16", "EXR16", "EXR32")
TEXELS = {"VERTEX": 2, "BONE_MATRIX": 3, "BONE_DQ": 2}
ROBOT_ACTIONS = 14


@pytest.fixture(scope="module")
def animtex(addon):
    """The installed bake module with its operator registered (also before ``_MODULES`` lists it)."""
    module = importlib.import_module(addon.__name__ + ".operators_animtex")
    registered_here = not module.HYBRIDSKIN_OT_bake_animation_texture.is_registered
    if registered_here:
        module.register()
    yield importlib.import_module(addon.__name__ + ".animtex_bake")
    if registered_here:
        module.unregister()


@pytest.fixture(scope="module")
def core(addon):
    return importlib.import_module(addon.__name__ + ".core.animtex")


@pytest.fixture
def robot(assets):
    arm, meshes = import_gltf(assets / "RobotExpressive.glb")
    bpy.context.view_layer.objects.active = arm
    return arm, sorted(meshes, key=lambda o: o.name)


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


def rest_pose(arm) -> None:
    """A clip is its action alone: channels it does not key stay at rest, whatever was played before."""
    for pb in arm.pose.bones:
        pb.location, pb.rotation_quaternion, pb.scale = (0, 0, 0), (1, 0, 0, 0), (1, 1, 1)
        pb.rotation_euler, pb.rotation_axis_angle = (0, 0, 0), (0, 0, 1, 0)


def truth(addon, arm, meshes, action, frames, factor):
    """Per mesh: ``(S, N, 3)`` local positions and ``(S, 4, 4)`` object matrices at scene ``frames``."""
    arm.animation_data.use_nla = False
    play(arm, action, float(frames[0]))
    rest_pose(arm)
    out = [([], []) for _ in meshes]
    for frame in frames:
        play(arm, action, float(frame))
        for (positions, worlds), obj in zip(out, meshes):
            positions.append(addon.api.deformed_positions(obj, deform_factor=factor))
            worlds.append(np.array(obj.matrix_world))
    return [(np.array(p).reshape(len(frames), -1, 3), np.array(w).reshape(-1, 4, 4)) for p, w in out]


def decode(core, meta, texture, meshes, clip: int, samples: np.ndarray) -> list[np.ndarray]:
    """Local positions per mesh, each vertex found through the mesh data the bake wrote."""
    if meta["kind"] == "VERTEX":
        index = [
            mesh_attribute(o, meta["mesh_attributes"]["texel_index"], 1, "value", np.int32) for o in meshes
        ]
        rest = np.zeros((meta["layout"]["item_count"], 3), np.float32)
        for obj, idx in zip(meshes, index):
            rest[idx] = coordinates(obj)
        items, _ = core.decode_vertex_frames(texture, rest, clip, samples)
        return [items[:, idx] for idx in index]
    from importlib import import_module

    skin = import_module(core.__name__ + ".decode").skin_with_bone_frames
    frames = core.decode_bone_frames(texture, clip, samples)
    out = []
    for obj in meshes:
        idx = mesh_attribute(obj, meta["mesh_attributes"]["bone_indices"], 4, "color")
        w = mesh_attribute(obj, meta["mesh_attributes"]["bone_weights"], 4, "color")
        assert np.array_equal(idx, np.round(idx)) and np.allclose(w.sum(1), 1.0, atol=1e-6)
        out.append(skin(frames, coordinates(obj), idx.astype(np.int32), w, meta["deform_factor"]["value"])[0])
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


# ---------------------------------------------------------------------------------- round trip
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


@pytest.mark.parametrize("kind", list(TEXELS))
def test_robot_round_trip_every_precision(addon, animtex, core, robot, tmp_path, kind):
    arm, meshes = robot
    actions = [a.name for a in armature_actions()]
    assert len(actions) == ROBOT_ACTIONS
    clips_truth, bone_truth = {}, {}
    for precision in PRECISIONS:
        out = tmp_path / precision
        out.mkdir()
        bake(directory=str(out), kind=kind, precision=precision, action_source="ALL", file_name="robot")
        meta, texture = load_bake(core, out / "robot.json", independent_png=kind != "VERTEX")
        assert sorted(os.listdir(out)) == sorted(["robot.json", meta["image"]])  # no temporary files left
        assert [c["name"] for c in meta["clips"]] == actions
        check_layout(meta, arm, meshes, kind)
        factor = meta["deform_factor"]["value"]
        assert factor == 0.5 and meta["deform_factor"]["baked"] == (kind == "VERTEX")
        stored_truth, mid_truth, stored_got, mid_got = [], [], [], []
        for ci, clip in enumerate(meta["clips"]):
            frames, halves = clip_frames(clip)
            if ci not in clips_truth:  # same frames and factor for every precision: evaluate once
                action = bpy.data.actions[clip["name"]]
                clips_truth[ci] = (
                    truth(addon, arm, meshes, action, frames, factor),
                    truth(addon, arm, meshes, action, halves, factor),
                )
                if kind != "VERTEX":
                    mats = []
                    rest_pose(arm)
                    for frame in frames:
                        play(arm, action, float(frame))
                        mats.append(true_bone_matrices(arm, meshes, [b["name"] for b in meta["bones"]]))
                    bone_truth[ci] = np.array(mats)
            stored_truth.append(clips_truth[ci][0])
            mid_truth.append(clips_truth[ci][1])
            stored_got.append(decode(core, meta, texture, meshes, ci, np.arange(len(frames), dtype=float)))
            mid_got.append(decode(core, meta, texture, meshes, ci, np.arange(len(halves)) + 0.5))
            if kind != "VERTEX":
                check_bones(core, meta, texture, ci, bone_truth[ci], kind, precision)
        check_report(
            meta, per_mesh(stored_truth), per_mesh(stored_got), per_mesh(mid_truth), per_mesh(mid_got)
        )
        if kind == "VERTEX":
            check_vertex_bound(
                meshes, [t for t, _ in per_mesh(stored_truth)], per_mesh(stored_got), precision
            )


def per_mesh(clips: list) -> list:
    """Per-clip lists of per-mesh arrays (or (positions, worlds) pairs) → per mesh, clips concatenated."""
    if isinstance(clips[0][0], tuple):
        return [
            tuple(np.concatenate([c[i][j] for c in clips]) for j in range(2)) for i in range(len(clips[0]))
        ]
    return [np.concatenate([c[i] for c in clips]) for i in range(len(clips[0]))]


def check_layout(meta, arm, meshes, kind) -> None:
    """Texture size from the formulas: items wrap at max width, one band per frame plus a guard band."""
    lay, t = meta["layout"], TEXELS[kind]
    items = (
        sum(len(o.data.vertices) for o in meshes)
        if kind == "VERTEX"
        else sum(b.use_deform for b in arm.data.bones)
    )
    per_row = min(items, 8192 // t)
    rows = math.ceil(items / per_row)
    counts = [
        int(bpy.data.actions[c["name"]].frame_range[1] - bpy.data.actions[c["name"]].frame_range[0]) + 1
        for c in meta["clips"]
    ]
    assert [c["frame_count"] for c in meta["clips"]] == counts
    embedded = 16 + 8 + 4 * len(counts) + (9 * items if kind != "VERTEX" else 0)
    assert (lay["item_count"], lay["items_per_row"], lay["rows_per_frame"]) == (items, per_row, rows)
    assert lay["width"] == per_row * t
    assert lay["metadata_rows"] == math.ceil(embedded / lay["width"])
    assert lay["height"] == lay["metadata_rows"] + sum(c + 1 for c in counts) * rows
    firsts = np.cumsum([lay["metadata_rows"]] + [(c + 1) * rows for c in counts])[:-1]
    assert [c["first_row"] for c in meta["clips"]] == firsts.tolist()


def check_vertex_bound(meshes, truth_local, got_local, precision) -> None:
    rest = np.concatenate([coordinates(o) for o in meshes])
    all_truth = np.concatenate([t.transpose(1, 0, 2) for t in truth_local]).transpose(1, 0, 2)
    all_got = np.concatenate([g.transpose(1, 0, 2) for g in got_local]).transpose(1, 0, 2)
    bound = vertex_bound(all_truth, rest, precision)
    err = np.abs(all_got - all_truth).reshape(-1, 3).max(0)
    assert np.all(err <= bound), (precision, err, bound)
    if precision == "PNG8":  # the bound is not vacuous: 8 bits visibly err
        assert err.max() > 0.3 * bound.max()


def check_bones(core, meta, texture, clip, mats, kind, precision) -> None:
    pivots = np.array([b["pivot"] for b in meta["bones"]])
    got = core.decode_bone_frames(texture, clip, np.arange(len(mats), dtype=float)).matrices
    d_lin, d_t = bone_matrix_bounds(kind, precision, mats, pivots)
    scale = np.linalg.norm(mats[..., :3, :3], axis=-2).mean(-1)
    rigid = np.abs(scale - 1).max() < 1e-4  # glTF rigs: rigid bones, or the DQ kind keeps only uniform scale
    assert rigid or kind == "BONE_MATRIX"
    assert np.abs(got[..., :3, :3] - mats[..., :3, :3]).max() <= d_lin, (kind, precision)
    assert np.all(np.abs(got[..., :3, 3] - mats[..., :3, 3]) <= d_t), (kind, precision)


def check_report(meta, truth_local, got_local, mid_truth, mid_got) -> None:
    """The sidecar's error report equals the numbers recomputed here; stored frames are within its bound."""
    report = meta["error_report"]
    every = np.concatenate([to_world(p, w).reshape(-1, 3) for p, w in truth_local + mid_truth])
    diagonal = float(np.linalg.norm(every.max(0) - every.min(0)))
    np.testing.assert_allclose(report["bbox_diagonal"], diagonal, rtol=1e-6)
    frames = world_stats(truth_local, got_local, diagonal)
    mids = world_stats(mid_truth, mid_got, diagonal)
    tol = dict(rtol=1e-5, atol=2e-6 * diagonal)  # truth re-evaluated here: float32 noise of ~1 ulp
    for name, ours in (("frames", frames), ("mid_frames", mids)):
        assert report[name]["count"] == ours["count"]
        np.testing.assert_allclose(report[name]["max"], ours["max"], **tol)
        np.testing.assert_allclose(report[name]["mean"], ours["mean"], **tol)
        np.testing.assert_allclose(report[name]["max_percent"], ours["max_percent"], **tol)
    overall_mean = (frames["mean"] * frames["count"] + mids["mean"] * mids["count"]) / (
        frames["count"] + mids["count"]
    )
    np.testing.assert_allclose(report["overall"]["max"], max(frames["max"], mids["max"]), **tol)
    np.testing.assert_allclose(report["overall"]["mean"], overall_mean, **tol)
    assert frames["max"] <= report["encoding_bound"], (frames["max"], report["encoding_bound"])


# ------------------------------------------------------------------------------- other shapes
def bent_chain(name: str, keys: dict[int, tuple[float, float, float]], bbone_segments: int = 1, **cylinder):
    """Two-bone chain deforming a cylinder; Bone1 keyed at the given frames (degrees)."""
    arm = make_chain_armature(f"{name}Rig", [1.0, 1.0], segments=bbone_segments)
    obj = make_cylinder(name, **cylinder)
    mod = skin_to_chain(obj, arm)
    pb = arm.pose.bones["Bone1"]
    pb.rotation_mode = "XYZ"
    for frame, angles in keys.items():
        pb.rotation_euler = [math.radians(a) for a in angles]
        pb.keyframe_insert("rotation_euler", frame=frame)
    bpy.context.view_layer.objects.active = arm
    return arm, obj, mod


def test_mesh_above_16384_vertices_wraps_and_decodes(addon, animtex, core, tmp_path):
    arm, obj, _ = bent_chain("Big", {1: (0, 0, 0), 3: (80, 0, 60)}, rings=130, segments=128)
    n = len(obj.data.vertices)
    assert n > 16384
    action = arm.animation_data.action
    ((local, world),) = truth(addon, arm, [obj], action, np.arange(1.0, 4.0), 0.5)
    for max_width, per_row, rows in ((8192, 4096, 5), (16384, 8192, 3)):
        out = tmp_path / str(max_width)
        out.mkdir()
        bake(directory=str(out), kind="VERTEX", precision="EXR32", max_width=max_width, file_name="big")
        meta, texture = load_bake(core, out / "big.json")
        lay = meta["layout"]
        assert (lay["items_per_row"], lay["rows_per_frame"], lay["width"]) == (per_row, rows, 2 * per_row)
        assert lay["height"] == lay["metadata_rows"] + (3 + 1) * rows
        (got,) = decode(core, meta, texture, [obj], 0, np.arange(3.0))
        assert np.all(
            np.abs(got - local).reshape(-1, 3).max(0) <= vertex_bound(local, coordinates(obj), "EXR32")
        )
        # The UV map points at each vertex's first texel of frame band 0, also for the last (wrapped) vertex.
        uv = mesh_attribute(obj, "animtex_uv", 2, "vector")
        corner_vertex = np.empty(len(obj.data.loops), np.int32)
        obj.data.loops.foreach_get("vertex_index", corner_vertex)
        last = np.flatnonzero(corner_vertex == n - 1)[0]
        texel = np.floor(uv[last] * [lay["width"], lay["height"]]).astype(int)
        assert tuple(texel) == ((n - 1) % per_row * 2, (n - 1) // per_row)


@pytest.mark.parametrize("kind", ["VERTEX", "BONE_MATRIX"])
def test_one_frame_action(addon, animtex, core, tmp_path, kind):
    arm, obj, _ = bent_chain("Pose", {5: (45, 0, 30)})
    action = arm.animation_data.action
    assert tuple(action.frame_range) == (5.0, 5.0)
    bake(directory=str(tmp_path), kind=kind, precision="PNG16", file_name="pose")
    meta, texture = load_bake(core, tmp_path / "pose.json")
    (clip,) = meta["clips"]
    assert (clip["frame_count"], clip["duration"]) == (1, 0.0)
    rows = meta["layout"]["rows_per_frame"]
    assert meta["layout"]["height"] == meta["layout"]["metadata_rows"] + 2 * rows
    assert meta["error_report"]["mid_frames"] is None
    ((local, _),) = truth(addon, arm, [obj], action, [5.0], 0.5)
    (got,) = decode(core, meta, texture, [obj], 0, np.array([0.0, 0.7, 3.0]))  # any time shows the pose
    diag = meta["error_report"]["bbox_diagonal"]
    np.testing.assert_allclose(got, np.broadcast_to(local, got.shape), atol=2e-4 * diag)


def test_partly_skinned_vertices_use_the_rest_bone(addon, animtex, core, tmp_path):
    arm, obj, mod = bent_chain("Masked", {1: (0, 0, 0), 4: (70, 0, 40)})
    mask = obj.vertex_groups.new(name="mask")
    z = np.array([v.co.z for v in obj.data.vertices])
    mask.add(np.flatnonzero(z < 1.6).tolist(), 1.0, "REPLACE")  # the top stays at rest
    mod.vertex_group = "mask"
    bake(directory=str(tmp_path), kind="BONE_DQ", precision="EXR32", file_name="masked")
    meta, texture = load_bake(core, tmp_path / "masked.json")
    assert meta["bones"][-1]["name"] == "HS_rest"
    ((local, _),) = truth(addon, arm, [obj], arm.animation_data.action, np.arange(1.0, 5.0), 0.5)
    (got,) = decode(core, meta, texture, [obj], 0, np.arange(4.0))
    np.testing.assert_allclose(got, local, atol=1e-5)
    np.testing.assert_allclose(
        got[:, z >= 1.6], np.broadcast_to(coordinates(obj)[z >= 1.6], got[:, z >= 1.6].shape), atol=1e-6
    )


@pytest.mark.parametrize("kind", ["BONE_MATRIX", "BONE_DQ"])
def test_bbone_segments_are_palette_bones(addon, animtex, core, tmp_path, kind):
    arm, obj, _ = bent_chain("Bendy", {1: (0, 0, 0), 6: (60, 20, 50)}, bbone_segments=4)
    arm.pose.bones["Bone0"].bbone_easeout = 1.5  # curved segments, so they really differ from the bone
    bake(directory=str(tmp_path), kind=kind, precision="EXR32", file_name="bendy")
    meta, texture = load_bake(core, tmp_path / "bendy.json")
    assert [b["name"] for b in meta["bones"]] == [f"Bone{i}.bbone{j}" for i in range(2) for j in range(5)]
    ((local, _),) = truth(addon, arm, [obj], arm.animation_data.action, np.arange(1.0, 7.0), 0.5)
    (got,) = decode(core, meta, texture, [obj], 0, np.arange(6.0))
    np.testing.assert_allclose(got, local, atol=2e-6)


def test_mesh_target_and_chosen_actions(addon, animtex, core, robot, tmp_path):
    arm, meshes = robot
    bpy.context.view_layer.objects.active = meshes[1]
    wave, dance, yes = (clip_action(n).name for n in ("Wave", "Dance", "Yes"))
    chosen = [{"name": wave, "use": True}, {"name": dance, "use": False}, {"name": yes, "use": True}]
    bake(
        directory=str(tmp_path),
        kind="VERTEX",
        precision="PNG8",
        action_source="LISTED",
        actions=chosen,
        power_of_two=True,
        max_width=512,
    )
    meta, texture = load_bake(core, tmp_path / f"{meshes[1].name}_vertex.json")
    assert [c["name"] for c in meta["clips"]] == [wave, yes]
    lay = meta["layout"]
    assert lay["item_count"] == len(meshes[1].data.vertices) and lay["items_per_row"] == 256
    for side, used in ((lay["width"], lay["data_width"]), (lay["height"], lay["data_height"])):
        assert side & (side - 1) == 0 and side // 2 < used <= side  # padded to the next power of two
    assert not texture.pixels[lay["data_height"] :].any()
    assert meta["error_report"]["frames"]["max"] <= meta["error_report"]["encoding_bound"]
    summary = animtex.last_summary(meshes[1])
    assert summary["max"] == meta["error_report"]["overall"]["max"] and summary["clips"] == 2


# ------------------------------------------------------------------------- tolerance, cancel
def test_tolerance_picks_the_cheapest_encoding_that_meets_it(addon, animtex, core, robot, tmp_path):
    arm, _ = robot
    tolerance = 0.02  # scene units; the robot is about 10 units across
    options = animtex.BakeOptions(str(tmp_path), kind="BONE_DQ", tolerance=tolerance, name="auto")
    clips = [clip_action("Idle").name, clip_action("Sitting").name]
    result = animtex.bake(bpy.context, arm, options, clips)
    *rejected, (step, precision, error) = result.tried
    assert error <= tolerance and all(e > tolerance for _, _, e in rejected) and rejected
    meta, _ = load_bake(core, tmp_path / "auto.json")
    assert (meta["clips"][0]["frame_step"], meta["precision"]) == (step, precision)
    assert meta["error_report"]["overall"]["max"] == pytest.approx(error)
    # The same choice baked with fixed settings reports the same error, and the next cheaper one fails.
    fixed = animtex.bake(
        bpy.context,
        arm,
        animtex.BakeOptions(
            str(tmp_path), kind="BONE_DQ", frame_step=step, precision=precision, name="fixed"
        ),
        clips,
    )
    assert fixed.report["overall"]["max"] == pytest.approx(error, rel=1e-6)
    assert sorted(os.listdir(tmp_path)) == sorted(
        ["auto.json", meta["image"], "fixed.json", meta["image"].replace("auto", "fixed")]
    )


def test_sub_frame_step_samples_fast_actions_finer(addon, animtex, robot, tmp_path):
    arm, _ = robot
    errors = {}
    for step in (1.0, 0.5):
        options = animtex.BakeOptions(str(tmp_path), kind="BONE_DQ", frame_step=step, name=f"step{step}")
        result = animtex.bake(bpy.context, arm, options, [clip_action("Punch").name])
        (clip,) = result.metadata["clips"]
        assert clip["frame_count"] == int(20 / step) + 1 and clip["sample_rate"] == 24 / step
        errors[step] = result.report["mid_frames"]["max"]
    # Halfway errors are the lerp's chord error, ~ (sample spacing)^2: halving the step cuts them a lot.
    assert errors[0.5] < 0.5 * errors[1.0], errors


def test_tolerance_search_reaches_sub_frame_steps_and_samples_lazily(addon, animtex, robot, tmp_path):
    arm, _ = robot
    scene_module = importlib.import_module(addon.__name__ + ".animtex_scene")

    def search(tolerance: float):
        options = animtex.BakeOptions(str(tmp_path), kind="BONE_DQ", tolerance=tolerance, name="punch")
        job = animtex.TextureBake(bpy.context, arm, options, [clip_action("Punch").name])
        for _ in job.run():
            pass
        return job

    def frames_of(step: float) -> set[float]:
        clip = scene_module.clip_for(clip_action("Punch"), 24.0, step)
        return {scene_module.frame_key(f) for f in np.concatenate(scene_module.clip_frames(clip))}

    # Punch moves ~0.5 units between scene frames' halfway points (lerp chord error at step 1): no
    # whole-frame step meets 0.3, half-frame sampling does (its error ~ a quarter of step 1's).
    job = search(0.3)
    *rejected, (step, precision, error) = job.result.tried
    assert step == 0.5 and error <= 0.3 and rejected and all(e > 0.3 for _, _, e in rejected)
    assert {s for s, _, _ in rejected} == {8, 4, 3, 2, 1}  # every whole step was tried first
    (clip,) = job.result.metadata["clips"]
    assert clip["frame_step"] == 0.5 and clip["sample_rate"] == 48
    assert job.result.report["overall"]["max"] == pytest.approx(error)
    assert {f for _, f in job.samples} == set().union(*(frames_of(s) for s in (8, 4, 3, 2, 1, 0.5)))
    # A loose tolerance is met by the first candidate: only step 8's frames are ever sampled.
    loose = search(2.0)
    assert [t[:2] for t in loose.result.tried] == [(8, "PNG8")]
    assert {f for _, f in loose.samples} == frames_of(8)
    assert loose.result.report["overall"]["max"] <= 2.0


def test_cancel_restores_the_scene_and_writes_nothing(addon, animtex, robot, tmp_path):
    arm, meshes = robot
    anim = arm.animation_data
    anim.action = clip_action("Wave")
    bpy.context.scene.frame_set(7)
    pose = [tuple(pb.rotation_quaternion) for pb in arm.pose.bones]
    meshes[0].modifiers.new("UserHidden", "SMOOTH").show_viewport = False  # after the Armature modifier
    shown = {(o.name, m.name): m.show_viewport for o in meshes for m in o.modifiers}
    assert any(shown.values())
    clips = [clip_action("Punch").name, clip_action("Dance").name]
    job = animtex.TextureBake(bpy.context, arm, animtex.BakeOptions(str(tmp_path)), clips)
    steps = job.run()
    for _ in range(40):
        next(steps)
    # sampling: Blender does not deform the baked meshes (the truth is the add-on's own skinning)
    assert not any(m.show_viewport for o in meshes for m in o.modifiers)
    steps.close()
    assert anim.action == clip_action("Wave") and anim.use_nla and bpy.context.scene.frame_current == 7
    np.testing.assert_allclose([tuple(pb.rotation_quaternion) for pb in arm.pose.bones], pose, atol=1e-6)
    assert {(o.name, m.name): m.show_viewport for o in meshes for m in o.modifiers} == shown
    assert os.listdir(tmp_path) == []


def test_phase_timings_and_png_compression(addon, animtex, robot, tmp_path):
    arm, meshes = robot
    sizes = {}
    for compression in (0, 90):
        out = tmp_path / str(compression)
        out.mkdir()
        options = animtex.BakeOptions(str(out), png_compression=compression, write_mesh_data=False)
        result = animtex.bake(bpy.context, arm, options, [clip_action("Wave").name])
        sizes[compression] = os.path.getsize(result.image_path)
        assert list(result.timings) == list(animtex.PHASES) and all(t >= 0 for t in result.timings.values())
        assert result.timings["sample"] > 0 and result.timings["report"] > 0 and result.timings["write"] > 0
        assert animtex.last_summary(arm)["seconds"] == pytest.approx(result.timings, abs=1e-4)
    assert sizes[90] < sizes[0]  # both read back exactly (checked by the bake); only the size differs
    assert all(m.show_viewport for o in meshes for m in o.modifiers)


# ---------------------------------------------------------------------------------- failures
def unwritable_folder(tmp_path: Path) -> Path:
    folder = tmp_path / "locked"
    folder.mkdir()
    folder.chmod(0o555)
    try:
        (folder / "probe").touch()
    except OSError:
        return folder
    (folder / "probe").unlink()  # root ignores permissions: use a folder the kernel refuses
    sysfs = Path("/sys")
    try:
        (sysfs / "hybrid_skin_probe").touch()
    except OSError:
        return sysfs
    pytest.skip("no unwritable folder available to this user")


@pytest.mark.parametrize(
    "case, message",
    [
        ("unwritable", "Cannot write to"),
        ("missing", "does not exist"),
        ("no_armature", "has no Armature modifier"),
        ("no_mesh", "deforms no mesh"),
        ("no_action", "has no active action"),
    ],
)
def test_bad_input_gives_a_clear_message_and_no_files(addon, animtex, robot, tmp_path, case, message):
    arm, _ = robot
    folder = tmp_path / "out"
    folder.mkdir()
    if case == "unwritable":
        folder = unwritable_folder(tmp_path)
    elif case == "missing":
        folder = tmp_path / "nowhere"
    elif case == "no_armature":
        bpy.ops.mesh.primitive_cube_add()
    elif case == "no_mesh":
        bpy.context.view_layer.objects.active = make_chain_armature("Lonely", [1.0])
    else:
        arm.animation_data.action = None
    before = sorted(os.listdir(folder)) if folder.is_dir() else None
    with pytest.raises(RuntimeError, match=message):
        bpy.ops.hybrid_skin.bake_animation_texture(directory=str(folder))
    assert (sorted(os.listdir(folder)) if folder.is_dir() else None) == before


def test_failed_write_is_atomic(addon, animtex, robot, tmp_path, monkeypatch):
    arm, meshes = robot
    (tmp_path / "robot_vertex.png").write_bytes(b"an older bake")
    unreadable = np.zeros((1, 1, 4), np.float32)
    monkeypatch.setattr(f"{addon.__name__}.animtex_files.read_image", lambda path: unreadable)
    with pytest.raises(RuntimeError, match="did not read back"):
        bpy.ops.hybrid_skin.bake_animation_texture(directory=str(tmp_path), file_name="robot_vertex")
    assert os.listdir(tmp_path) == ["robot_vertex.png"]
    assert (tmp_path / "robot_vertex.png").read_bytes() == b"an older bake"
    assert "animtex_index" not in meshes[0].data.attributes


# ---------------------------------------------------------------------------- undo, UI, CLI
def test_undo_removes_the_mesh_data(addon, animtex, robot, tmp_path):
    arm, meshes = robot
    name = meshes[0].name
    bpy.ops.ed.undo_push(message="before bake")
    result = bpy.ops.hybrid_skin.bake_animation_texture("EXEC_DEFAULT", True, directory=str(tmp_path))
    assert result == {"FINISHED"}
    assert "animtex_uv" in bpy.data.objects[name].data.uv_layers
    bpy.ops.ed.undo()
    assert "animtex_uv" not in bpy.data.objects[name].data.uv_layers
    assert "animtex_index" not in bpy.data.objects[name].data.attributes


class StubLayout:
    """Records what a draw function puts in a layout (the UI cannot be drawn headless)."""

    def __init__(self, log: list):
        self.log = log

    def __getattr__(self, name):
        def record(*args, **kwargs):
            self.log.append((name, args, kwargs))
            return StubLayout(self.log)

        return record


def test_ui_entries(addon, animtex, robot, tmp_path):
    ops = importlib.import_module(addon.__name__ + ".operators_animtex")
    assert ops.VIEW3D_PT_hybrid_skin_animtex.bl_parent_id == "VIEW3D_PT_hybrid_skin"
    assert ops.DOPESHEET_PT_hybrid_skin_animtex.bl_space_type == "DOPESHEET_EDITOR"
    for cls in ops.classes:
        assert cls.is_registered
    assert ops._menu_entry in getattr(bpy.types, ops.MENU)._dyn_ui_initialize()
    bake(directory=str(tmp_path), kind="BONE_MATRIX", precision="PNG8")
    log: list = []
    ops.draw_summary(StubLayout(log), robot[0])  # the report as the panels show it
    labels = [call[2]["text"] for call in log if call[0] == "label"]
    assert labels[0].startswith("BONE_MATRIX PNG8, step 1, 1 clip(s)") and labels[1].startswith("Max error")
    seconds = animtex.last_summary(robot[0])["seconds"]
    assert f"Baked in {sum(seconds.values()):.2f} s" in labels  # where the time went, phase by phase
    assert any(t.startswith("sample ") for t in labels)
    # Every phase of 5 ms or more is listed with its time; shorter ones (writing a small PNG on a fast
    # machine) are left out, so which phases appear depends on the machine, their numbers do not.
    listed = ", ".join(labels)
    for name in animtex.PHASES:
        if seconds.get(name, 0.0) >= 0.005:
            assert f"{name} {seconds[name]:.2f}" in listed, (name, labels)
    dialog = type(
        "Dialog", (), {"layout": StubLayout(log), "actions": [], "tolerance": 0.0, "action_source": "LISTED"}
    )
    ops.HYBRIDSKIN_OT_bake_animation_texture.draw(dialog(), bpy.context)


def run_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "hybrid_skin", "bake-textures", *args],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def test_command_line(addon, core, robot, tmp_path):
    arm, _ = robot
    blend = tmp_path / "robot.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(blend), copy=True)
    before = blend.read_bytes()
    out = tmp_path / "textures"
    clips = [clip_action("Idle").name, clip_action("Wave").name]
    done = run_cli(
        str(blend),
        "--object",
        arm.name,
        "--actions",
        *clips,
        "--kind",
        "BONE_DQ",
        "--precision",
        "EXR16",
        "--output",
        str(out),
        "--name",
        "crowd",
    )
    assert done.returncode == 0, done.stderr
    meta, _ = load_bake(core, out / "crowd.json")
    assert (meta["kind"], meta["precision"], [c["name"] for c in meta["clips"]]) == (
        "BONE_DQ",
        "EXR16",
        clips,
    )
    assert "overall" in done.stdout and blend.read_bytes() == before
    for args, message in (
        (("--object", "Object_72"), "has no Armature modifier"),
        (("--object", arm.name, "--actions", "Nope"), "No action named"),
        (("--object", "Ghost"), "no object 'Ghost'"),
    ):
        failed = run_cli(str(blend), *args, "--output", str(tmp_path / "empty"))
        assert failed.returncode == 1 and message in failed.stderr, failed.stderr
        assert os.listdir(tmp_path / "empty") == []
    assert run_cli(str(tmp_path / "missing.blend"), "--object", "x", "--output", str(out)).returncode == 2


# ------------------------------------------------------------------------------------- root motion
def key_root_motion(arm, action) -> None:
    """Key the armature object's location and Z rotation into ``action`` over its frame range."""
    start, end = (float(f) for f in action.frame_range)
    play(arm, action, start)  # assigns the action (and its object slot): the keys land in it
    arm.rotation_mode = "XYZ"
    for frame, x, y, angle in (
        (start, 0.0, 0.0, 0.0),
        ((start + end) / 2, 1.5, 0.4, 0.7),
        (end, 3.0, -0.5, 1.9),
    ):
        arm.location, arm.rotation_euler = (x, y, 0.0), (0.0, 0.0, angle)
        arm.keyframe_insert("location", frame=frame)
        arm.keyframe_insert("rotation_euler", index=2, frame=frame)


def test_root_motion_track_follows_the_moving_armature(addon, animtex, core, robot, tmp_path):
    from mathutils import Matrix, Quaternion

    arm, meshes = robot
    walk, sitting = clip_action("Walking"), clip_action("Sitting")
    key_root_motion(arm, walk)
    scene = bpy.context.scene
    scene.frame_set(7)
    before = {o.name: np.array(o.matrix_world) for o in (arm, *meshes)}
    pose = [tuple(pb.rotation_quaternion) for pb in arm.pose.bones]
    options = animtex.BakeOptions(str(tmp_path), kind="VERTEX", frame_step=2, name="walk")
    animtex.bake(bpy.context, arm, options, [walk.name, sitting.name])
    # the user's scene is back: action, frame, object matrices (root motion included), pose
    assert arm.animation_data.action == walk and scene.frame_current == 7
    for obj in (arm, *meshes):
        np.testing.assert_allclose(np.array(obj.matrix_world), before[obj.name], atol=1e-5)
    np.testing.assert_allclose([tuple(pb.rotation_quaternion) for pb in arm.pose.bones], pose, atol=1e-6)

    meta, _ = load_bake(core, tmp_path / "walk.json")  # validated against the shipped schema
    walking, sitting = meta["clips"]
    assert "root_motion" not in sitting  # an action that does not move the object has no track
    track = walking["root_motion"]
    frames, _ = clip_frames(walking)
    assert len(frames) == walking["frame_count"] == 12
    assert all(len(track[k]) == 12 for k in ("translation", "rotation", "scale"))
    # independently: the first baked mesh's world matrix at each stored frame, Blender's own evaluation
    worlds = []
    for frame in frames:
        play(arm, walk, float(frame))
        worlds.append(np.array(meshes[0].matrix_world))
    worlds = np.array(worlds)
    expected = np.linalg.inv(worlds[0]) @ worlds  # in the mesh's space at the clip's first sample
    got = np.array(
        [
            np.array(Matrix.LocRotScale(t, Quaternion(q), s))
            for t, q, s in zip(track["translation"], track["rotation"], track["scale"])
        ]
    )
    np.testing.assert_allclose(got, expected, atol=1e-5)  # entries ~1: float32 rounding and then some
    np.testing.assert_allclose(worlds[0] @ got, worlds, atol=1e-5 * np.abs(worlds).max())
    assert np.linalg.norm(track["translation"][-1]) > 1e-3  # it really moves (in mesh units)
    # the texture stays in place: decoded mesh-local positions placed by each sample's own world
    # matrix match the truth within the encoding bound
    assert meta["error_report"]["frames"]["max"] <= meta["error_report"]["encoding_bound"]


def test_root_motion_of_a_loop_and_a_user_transform_left_alone(addon, animtex, core, robot, tmp_path):
    from mathutils import Matrix, Quaternion

    arm, meshes = robot
    walk, sitting = clip_action("Walking"), clip_action("Sitting")
    key_root_motion(arm, walk)
    walk.use_frame_range, walk.use_cyclic = True, True  # a walk cycle: its end frame is the wrap
    idle = clip_action("Idle")  # the user's active action keys no object transform
    play(arm, idle, 3.0)
    arm.location, arm.rotation_euler = (0.25, -0.5, 0.125), (0.0, 0.0, 0.3)
    bpy.context.view_layer.update()
    before = np.array(arm.matrix_world)
    options = animtex.BakeOptions(str(tmp_path), kind="BONE_DQ", name="loop")
    animtex.bake(bpy.context, arm, options, [walk.name, sitting.name])
    assert arm.animation_data.action == idle
    # the object keys of the baked action must not leave the armature where its last frame put it
    np.testing.assert_allclose(np.array(arm.matrix_world), before, atol=1e-6)

    meta, _ = load_bake(core, tmp_path / "loop.json")
    walking, sitting = meta["clips"]
    assert walking["loop"] and "root_motion" not in sitting  # Sitting starts from the user's transform
    start, end = walking["frame_start"], walking["frame_end"]
    worlds = []
    for frame in (start, end):
        play(arm, walk, float(frame))
        worlds.append(np.array(meshes[0].matrix_world))
    cycle = walking["root_motion"]["cycle"]
    got = np.array(Matrix.LocRotScale(cycle["translation"], Quaternion(cycle["rotation"]), cycle["scale"]))
    np.testing.assert_allclose(got, np.linalg.inv(worlds[0]) @ worlds[1], atol=1e-5)
    assert np.linalg.norm(cycle["translation"]) > 1e-3
