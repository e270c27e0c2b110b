"""The format specification (``shaders/FORMAT.md``) is enough to decode a bake (issue 13 §3).

The decoder here is written from FORMAT.md alone: standard image readers (pypng for PNG8/PNG16, the OpenEXR
bindings for EXR16/EXR32), no add-on Python. Section numbers below are FORMAT.md's. It decodes every kind ×
precision of RobotExpressive's Wave (which leaves the left arm unkeyed, posed 64-87° from rest) through the
mesh data the bake saved, at every stored frame and halfway between, and compares with Blender's own
evaluation of the scene as the user has it: the Armature modifier (LBS), Preserve Volume (DQS) and their
multi-modifier mix at the sidecar's deform factor (``tests.support.scenes.native_positions``), within the
sidecar's claimed error. Also: the embedded block (§11) says what the JSON says, the UV map (§7) finds the
same item as the index attribute, and the schema describes every field the spec names (§14).

Auto (§3 Auto rows, §4, §6, §7 ``auto_rest``, §9 the factor, §10, §11 the Auto table): the robot's meshes in
factor mode Auto baked as bone kinds; the factor of every vertex computed here from the spec's formula
(pair sums written out, float64) and the positions skinned with it, against the add-on's own Auto
(Blender has none): its factors within ``error_report.auto.factor``, its positions within the report's
claims.
"""

from __future__ import annotations

import importlib
import json
import math
import re
from pathlib import Path

import bpy
import jsonschema
import numpy as np
import OpenEXR
import png
import pytest

from tests.support.animtex import bake, scene_pose, set_pose
from tests.support.assets import clip_action, play
from tests.support.scenes import native_positions

REPO_ROOT = Path(__file__).resolve().parents[2]
SPEC = REPO_ROOT / "shaders" / "FORMAT.md"
SCHEMA = REPO_ROOT / "hybrid_skin" / "core" / "animtex" / "schema.json"
PRECISIONS = ("PNG8", "PNG16", "EXR16", "EXR32")
#: Blender's Armature modifier and the add-on's skinning (the report's truth) differ by float32 rounding.
SLACK = 1e-6


# ------------------------------------------------------------------------------- §2, §3: the image
def read_image(path: Path, precision: str) -> np.ndarray:
    """``(H, W, 4)`` float64 sampler channels, indexed by texture row (§3: bottom-up)."""
    if precision.startswith("PNG"):
        width, height, rows, info = png.Reader(filename=str(path)).read()
        assert (info["planes"], info["alpha"], info["bitdepth"]) == (
            4,
            True,
            8 if precision == "PNG8" else 16,
        )
        stored = np.array([np.asarray(r, dtype=np.uint32) for r in rows]).reshape(height, width, 4)
        channels = stored / (255.0 if precision == "PNG8" else 65535.0)
    else:
        exr = OpenEXR.File(str(path))
        planes = exr.channels()
        if "RGBA" in planes:
            channels = planes["RGBA"].pixels
        else:  # read by name (§2), whatever order the file lists them in
            channels = np.stack([planes[c].pixels for c in "RGBA"], -1)
        assert channels.dtype == (np.float16 if precision == "EXR16" else np.float32)
        channels = channels.astype(np.float64)
    return channels[::-1]  # the reader's first row is the top; texture row 0 is the last (§3)


def png_chunks(path: Path) -> set[bytes]:
    data, pos, kinds = path.read_bytes(), 8, set()
    while pos < len(data):
        length = int.from_bytes(data[pos : pos + 4], "big")
        kinds.add(data[pos + 4 : pos + 8])
        pos += 12 + length
    return kinds


# ---------------------------------------------------------------------- §3, §4, §6: values at samples
def texel_values(meta: dict, channels: np.ndarray, clip: dict, frame: int) -> np.ndarray:
    """Decoded ``(items, T, 4)`` values of clip-local ``frame`` (guard band allowed)."""
    lay = meta["layout"]
    p, t, r = lay["items_per_row"], lay["texels_per_item"], lay["rows_per_frame"]
    i = np.arange(lay["item_count"])
    x = (i % p)[:, None] * t + np.arange(t)
    y = (clip["first_row"] + frame * r + i // p)[:, None].repeat(t, 1)
    offset, scale = np.array(meta["decode"]["offset"]), np.array(meta["decode"]["scale"])
    return offset + scale * channels[y, x]  # VERTEX: one shared item entry broadcasts


def sample_values(meta: dict, channels: np.ndarray, clip: dict, s: float) -> np.ndarray:
    count = clip["frame_count"]
    s = s % count if clip["loop"] else min(max(s, 0.0), count - 1)
    f0 = min(math.floor(s), count - 1)
    alpha = s - f0
    v0 = texel_values(meta, channels, clip, f0)
    return v0 + alpha * (texel_values(meta, channels, clip, f0 + 1) - v0)


# ---------------------------------------------------------------------------------- §5: per kind
def qmul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    aw, ax, ay, az = np.moveaxis(a, -1, 0)
    bw, bx, by, bz = np.moveaxis(b, -1, 0)
    return np.stack(
        [
            aw * bw - ax * bx - ay * by - az * bz,
            aw * bx + ax * bw + ay * bz - az * by,
            aw * by - ax * bz + ay * bw + az * bx,
            aw * bz + ax * by - ay * bx + az * bw,
        ],
        -1,
    )


def rotation(q: np.ndarray) -> np.ndarray:
    w, x, y, z = np.moveaxis(q / np.linalg.norm(q, axis=-1, keepdims=True), -1, 0)
    return np.stack(
        [
            np.stack([1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)], -1),
            np.stack([2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)], -1),
            np.stack([2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)], -1),
        ],
        -2,
    )


def quaternion(m: np.ndarray) -> np.ndarray:
    """Unit quaternion ``(w, x, y, z)``, ``w >= 0``, of rotation matrices (§5: columns normalised first)."""
    m = m / np.linalg.norm(m, axis=-2, keepdims=True)
    m = np.where((np.linalg.det(m) < 0)[..., None, None], -m, m)
    out = []
    for r in m.reshape(-1, 3, 3):
        tr = np.trace(r)
        cands = [
            1 + tr,
            1 + r[0, 0] - r[1, 1] - r[2, 2],
            1 - r[0, 0] + r[1, 1] - r[2, 2],
            1 - r[0, 0] - r[1, 1] + r[2, 2],
        ]
        k = int(np.argmax(cands))
        s = 2 * math.sqrt(cands[k])
        if k == 0:
            q = [0.25 * s, (r[2, 1] - r[1, 2]) / s, (r[0, 2] - r[2, 0]) / s, (r[1, 0] - r[0, 1]) / s]
        elif k == 1:
            q = [(r[2, 1] - r[1, 2]) / s, 0.25 * s, (r[0, 1] + r[1, 0]) / s, (r[0, 2] + r[2, 0]) / s]
        elif k == 2:
            q = [(r[0, 2] - r[2, 0]) / s, (r[0, 1] + r[1, 0]) / s, 0.25 * s, (r[1, 2] + r[2, 1]) / s]
        else:
            q = [(r[1, 0] - r[0, 1]) / s, (r[0, 2] + r[2, 0]) / s, (r[1, 2] + r[2, 1]) / s, 0.25 * s]
        q = np.array(q) * (1 if q[0] >= 0 else -1)
        out.append(q / np.linalg.norm(q))
    return np.array(out).reshape(m.shape[:-2] + (4,))


def bones_from_values(meta: dict, v: np.ndarray):
    """``(A (B,3,3), u (B,3), q (B,4), s (B,))`` of one sample's decoded bone values (§5)."""
    if meta["kind"] == "BONE_MATRIX":
        a, u = v[:, :, :3], v[:, :, 3]
        return a, u, quaternion(a), np.linalg.norm(a, axis=-2).mean(-1)
    q = v[:, 0] / np.linalg.norm(v[:, 0], axis=-1, keepdims=True)
    s = v[:, 1, 3]
    return s[:, None, None] * rotation(q), v[:, 1, :3], q, s


def skin(meta: dict, v: np.ndarray, p: np.ndarray, idx: np.ndarray, w: np.ndarray, f: float) -> np.ndarray:
    """§5's hybrid skinning of mesh coordinates ``p`` (N, 3) with one sample's bone values."""
    pivots = np.array([b["pivot"] for b in meta["bones"]])
    a, u, q, s = bones_from_values(meta, v)
    m = np.concatenate([a, (u - np.einsum("bij,bj->bi", a, pivots))[..., None]], -1)  # (B, 3, 4)
    lin = np.einsum("nk,nkij->nij", w, m[idx])
    t = u - np.einsum("bij,bj->bi", rotation(q), pivots)
    zeros = np.zeros(len(t))[:, None]
    dual = 0.5 * qmul(np.concatenate([zeros, t], -1), q)  # (B, 4)
    qk = q[idx]  # (N, 4, 4)
    fold = (s[idx] - 1)[..., None] * (p[:, None] - pivots[idx])
    dk = dual[idx] + 0.5 * qmul(qk, np.concatenate([np.zeros(fold.shape[:-1] + (1,)), fold], -1))
    big_q, big_d = w[:, :1] * qk[:, 0], w[:, :1] * dk[:, 0]
    for j in range(1, 4):
        sign = np.where(np.sum(big_q * qk[:, j], -1) < 0, -1.0, 1.0)[:, None]
        big_q = big_q + sign * w[:, j : j + 1] * qk[:, j]
        big_d = big_d + sign * w[:, j : j + 1] * dk[:, j]
    norm2 = np.sum(big_q * big_q, -1)[:, None]
    conj = big_q * np.array([1.0, -1.0, -1.0, -1.0])
    dqs = np.concatenate([rotation(big_q), (2 * qmul(big_d, conj)[:, 1:] / norm2)[..., None]], -1)
    f = np.asarray(f, dtype=np.float64)
    f = f[:, None, None] if f.ndim else f  # per vertex (Auto, §9) or one number
    mix = (1 - f) * lin + f * dqs
    return np.einsum("nij,nj->ni", mix[..., :3], p) + mix[..., 3]


# ---------------------------------------------------------------------------------- §3, §4, §9: Auto
def auto_values(meta: dict, channels: np.ndarray, clip: dict, frame: int) -> np.ndarray:
    """Decoded ``(bones, 2, 4)`` Auto texels of clip-local ``frame`` (§3 Auto rows, §4 ``auto.decode``)."""
    lay, auto = meta["layout"], meta["auto"]
    p, t, r = lay["items_per_row"], lay["texels_per_item"], lay["rows_per_frame"]
    i = np.arange(lay["item_count"])
    x = (i % p)[:, None] * t + np.arange(2)
    y = (clip["first_row"] + frame * r + auto["row_offset"] + i // p)[:, None].repeat(2, 1)
    offset, scale = np.array(auto["decode"]["offset"]), np.array(auto["decode"]["scale"])
    return offset + scale * channels[y, x]


def auto_sample(meta: dict, channels: np.ndarray, clip: dict, s: float) -> np.ndarray:
    """§6: interpolated like every value, on decoded values."""
    count = clip["frame_count"]
    s = s % count if clip["loop"] else min(max(s, 0.0), count - 1)
    f0 = min(math.floor(s), count - 1)
    v0 = auto_values(meta, channels, clip, f0)
    return v0 + (s - f0) * (auto_values(meta, channels, clip, f0 + 1) - v0)


def auto_factors(meta: dict, data: np.ndarray, idx: np.ndarray, w: np.ndarray, rest: np.ndarray):
    """§9's factor of every vertex ``(N,)``, its pair sums written out over ``i < j``, the presence's
    moments over the influences."""
    a = meta["auto"]
    tau, sigma, angle, head = data[:, 0, 0], data[:, 0, 1:], data[:, 1, 0], data[:, 1, 1:]
    n = len(idx)
    p_sum, t_sum, s_sum, d_sum = (np.zeros(n) for _ in range(4))
    jh = np.zeros((n, 3))
    for i in range(4):
        for j in range(i + 1, 4):
            ww = w[:, i] * w[:, j]
            bi, bj = idx[:, i], idx[:, j]
            da = angle[bi] - angle[bj]
            p_sum += ww
            t_sum += ww * (tau[bi] - tau[bj]) ** 2
            s_sum += ww * np.sum((sigma[bi] - sigma[bj]) ** 2, axis=1)
            d_sum += ww * da**2
            jh += (ww * da)[:, None] * (head[bi] - head[bj])
    joint = np.where(d_sum[:, None] > 0, jh / np.where(d_sum > 0, d_sum, 1.0)[:, None], 0.0)
    r2 = rest[:, 3]
    q = np.where(r2 > 0, np.sum((rest[:, :3] - joint) ** 2, axis=1) / np.where(r2 > 0, r2, 1.0), 0.0)
    z2 = np.where(d_sum > 0, np.maximum(q - 1.0, 0.0), 0.0)
    s = np.where(p_sum > 0, s_sum / np.where(p_sum > 0, p_sum, 1.0), 0.0) / a["quarter_turn_sq"]
    k = a["width"] * np.maximum(s, 1e-12) ** (a["swing_exponent"] / 2)
    total = w.sum(axis=1)
    mean = np.einsum("nj,njc->nc", w, sigma[idx]) / np.where(total > 0, total, 1.0)[:, None]
    dev = np.sum((sigma[idx] - mean[:, None, :]) ** 2, axis=2)  # |d_j|^2
    m2, m4 = np.sum(w * dev, axis=1), np.sum(w * dev**2, axis=1)
    scaled = total * a["presence"]
    u = np.where(scaled > 0, (m2 / np.where(m4 > 0, m4, 1.0)) * m2 / np.where(scaled > 0, scaled, 1.0), 1e6)
    u = np.minimum(np.where(m4 > 0, u, 0.0), 1e6)
    presence = u**3 / (u**3 + 1.0)
    bottom = a["twist_weight"] * t_sum + s_sum + a["epsilon_sq"] * p_sum
    depth = np.where(bottom > 0, s_sum / np.where(bottom > 0, bottom, 1.0), 0.0)
    return 1.0 - presence * depth * (1.0 - np.exp(-k * z2))


# ------------------------------------------------------------------------------- §7: mesh data
def attribute(obj, name: str, data_type: str, field: str, width: int, dtype) -> np.ndarray:
    attr = obj.data.attributes[name]
    assert (attr.data_type, attr.domain) == (data_type, "POINT"), (name, attr.data_type, attr.domain)
    buf = np.empty(len(attr.data) * width, dtype)
    attr.data.foreach_get(field, buf)
    return buf.reshape(-1, width) if width > 1 else buf


def coordinates(obj) -> np.ndarray:
    co = np.empty(len(obj.data.vertices) * 3)
    obj.data.vertices.foreach_get("co", co)
    return co.reshape(-1, 3)


def uv_items(meta: dict, obj) -> np.ndarray:
    """Each vertex's item from the UV map ``texel_uv`` (§7), per vertex (via its corners)."""
    lay = meta["layout"]
    uv_map = obj.data.uv_layers[meta["mesh_attributes"]["texel_uv"]]
    uv = np.empty(len(uv_map.data) * 2)
    uv_map.data.foreach_get("uv", uv)
    uv = uv.reshape(-1, 2)
    corner_vertex = np.empty(len(obj.data.loops), np.int64)
    obj.data.loops.foreach_get("vertex_index", corner_vertex)
    items = np.floor(uv[:, 1] * lay["height"]).astype(int) * lay["items_per_row"] + (
        np.floor(uv[:, 0] * lay["width"]).astype(int) // lay["texels_per_item"]
    )
    out = np.full(len(obj.data.vertices), -1)
    out[corner_vertex] = items
    return out


def decode_meshes(meta: dict, channels: np.ndarray, meshes: list, s: float, f: float) -> list[np.ndarray]:
    """Mesh-space positions of every mesh at fractional sample ``s`` of clip 0 (bones: at factor ``f``)."""
    v = sample_values(meta, channels, meta["clips"][0], s)
    names = meta["mesh_attributes"]
    out = []
    for obj in meshes:
        p = coordinates(obj)
        if meta["kind"] == "VERTEX":
            items = attribute(obj, names["texel_index"], "INT", "value", 1, np.int32)
            out.append(p + v[items, 0, :3])
        else:
            idx = attribute(obj, names["bone_indices"], "FLOAT_COLOR", "color", 4, np.float32)
            w = attribute(obj, names["bone_weights"], "FLOAT_COLOR", "color", 4, np.float32)
            assert np.array_equal(idx, np.round(idx)) and np.allclose(w.sum(1), 1.0, atol=1e-6)
            out.append(skin(meta, v, p, idx.astype(int), w.astype(np.float64), f))
    return out


# ------------------------------------------------------------------------------------- §11
def embedded_block(meta: dict, channels: np.ndarray) -> np.ndarray:
    width = meta["layout"]["width"]
    texels = channels[: meta["layout"]["metadata_rows"]].reshape(-1, 4)
    data = np.clip(np.round(texels * 255), 0, 255).astype(np.uint8)
    return np.frombuffer(data.tobytes(), "<f4")[: width * meta["layout"]["metadata_rows"]]


def check_embedded(meta: dict, channels: np.ndarray) -> None:
    block, lay, clips = embedded_block(meta, channels), meta["layout"], meta["clips"]
    kind = ("VERTEX", "BONE_MATRIX", "BONE_DQ").index(meta["kind"])
    precision = PRECISIONS.index(meta["precision"])
    bones = 0 if meta["kind"] == "VERTEX" else lay["item_count"]
    header = [meta["format_version"], kind, precision, lay["texels_per_item"], lay["item_count"],
              lay["items_per_row"], lay["rows_per_frame"], len(clips), lay["metadata_rows"]]  # fmt: skip
    assert block[:9].tolist() == header
    factor = meta["deform_factor"]["value"]
    assert math.isnan(block[9]) if factor is None else block[9] == np.float32(factor)
    auto_table = int(block[20]) if meta.get("auto") else 0  # §11: float 20, the Auto table's index
    assert block[10:16].tolist() == [
        16,
        24,
        24 + 4 * len(clips),
        9 if bones else 0,
        lay["width"],
        lay["height"],
    ]
    off, sc = np.array(meta["decode"]["offset"], np.float32), np.array(meta["decode"]["scale"], np.float32)
    glob = {
        "VERTEX": [*off[0, 0, :3], *sc[0, 0, :3], off[0, 1, 0], sc[0, 1, 0]],
        "BONE_MATRIX": [off[0, 0, 0], sc[0, 0, 0], 0, 0, 0, 0, 0, 0],
        "BONE_DQ": [off[0, 0, 0], sc[0, 0, 0], off[0, 1, 3], sc[0, 1, 3], 0, 0, 0, 0],
    }[meta["kind"]]
    if auto_table:
        glob[4] = auto_table
    np.testing.assert_array_equal(block[16:24], np.float32(glob))
    for c, clip in enumerate(clips):
        row = [clip["first_row"], clip["frame_count"], clip["sample_rate"], float(clip["loop"])]
        np.testing.assert_array_equal(block[24 + 4 * c : 28 + 4 * c], np.float32(row))
    if bones:
        start = 24 + 4 * len(clips)
        table = block[start : start + 9 * bones].reshape(bones, 9)
        np.testing.assert_array_equal(table[:, :3], np.float32([b["pivot"] for b in meta["bones"]]))
        t_off, t_sc = (
            (off[:, :, 3], sc[:, :, 3]) if meta["kind"] == "BONE_MATRIX" else (off[:, 1, :3], sc[:, 1, :3])
        )
        np.testing.assert_array_equal(table[:, 3:], np.concatenate([t_off, t_sc], 1))
    if meta.get("auto"):
        a, at = meta["auto"], int(block[20])
        assert at >= 24 + 4 * len(clips) + 9 * bones  # after the bone table
        profile = {"ROUND": 1, "KEEP_VOLUME": 2}[a["profile"]]
        head = [a["width"], a["swing_exponent"], a["twist_weight"], a["epsilon_sq"], a["quarter_turn_sq"],
                a["row_offset"], profile, a["vertex_floats"], a["presence"], 0, 0, 0]  # fmt: skip
        np.testing.assert_array_equal(block[at : at + 12], np.float32(head))
        terms = block[at + 12 : at + 12 + 16 * bones].reshape(bones, 16)
        np.testing.assert_array_equal(terms[:, :8], np.float32(a["decode"]["offset"]).reshape(bones, 8))
        np.testing.assert_array_equal(terms[:, 8:], np.float32(a["decode"]["scale"]).reshape(bones, 8))


# -------------------------------------------------------------------------------- the tests
def native_truth(arm, meshes, action, frames, factor, pose):
    """Blender playing ``action`` from the scene's ``pose``: per sample, per mesh positions and matrices."""
    set_pose(arm, pose)
    out = []
    for frame in frames:
        play(arm, action, float(frame))
        out.append(
            [(native_positions(obj, factor).astype(np.float64), np.array(obj.matrix_world)) for obj in meshes]
        )
    return out


def scene_distance(truth: list, got: list) -> float:
    return max(float(np.linalg.norm((g - t) @ w[:3, :3].T, axis=-1).max()) for (t, w), g in zip(truth, got))


@pytest.mark.parametrize("kind", ["VERTEX", "BONE_MATRIX", "BONE_DQ"])
def test_decoder_from_the_spec_matches_blender(addon, robot, tmp_path, kind):
    arm, meshes = robot
    wave = clip_action("Wave")
    pose = scene_pose(arm)  # the left arm, which Wave does not key, as the file poses it
    schema = json.loads(SCHEMA.read_text(encoding="utf-8"))
    truth_cache: dict[tuple[float, float], list] = {}
    for precision in PRECISIONS:
        out = tmp_path / precision
        out.mkdir()
        padded = precision in ("PNG8", "EXR16")
        bake(directory=str(out), kind=kind, precision=precision, action_source="LISTED",
             actions=[{"name": wave.name, "use": True}], power_of_two=padded, file_name="wave")  # fmt: skip
        meta = json.loads((out / "wave.json").read_text(encoding="utf-8"))
        jsonschema.validate(meta, schema)
        image = out / meta["image"]
        assert (
            meta["pose"]["unkeyed_bones"] == "scene" and meta["import_settings"]["row_order"] == "bottom_up"
        )
        if precision.startswith("PNG"):
            assert not png_chunks(image) & {b"gAMA", b"sRGB", b"iCCP", b"cHRM"}  # §2: data, not colour
        channels = read_image(image, precision)
        lay = meta["layout"]
        assert channels.shape == (lay["height"], lay["width"], 4)
        if padded:  # §3: padding rows are the top of the image (the first rows a reader returns)
            assert lay["height"] > lay["data_height"] and not channels[lay["data_height"] :].any()
        check_embedded(meta, channels)
        (clip,) = meta["clips"]
        # §6: stored frame k is action frame frame_start + k * frame_step; halfway samples between them.
        samples = [k + h for k in range(clip["frame_count"]) for h in (0.0, 0.5)]
        samples = [s for s in samples if clip["loop"] or s <= clip["frame_count"] - 1]
        report, diagonal = meta["error_report"], meta["error_report"]["bbox_diagonal"]
        factor = meta["deform_factor"]["value"]
        assert factor == 0.5 and report["deform_factor"] == (None if kind == "VERTEX" else factor)
        # §9, §10: the sidecar's factor, and for bone kinds the runtime's extremes (Blender's Armature
        # modifier alone at 0, Preserve Volume alone at 1) with their own claims.
        claims = {factor: report}
        if kind != "VERTEX":
            claims.update({e["deform_factor"]: e for e in report["by_deform_factor"]})
            assert sorted(claims) == [0.0, 0.5, 1.0]
            assert report["any_deform_factor_max"] == max(c["overall"]["max"] for c in claims.values())
        for f, claim in claims.items():
            worst = {0.0: 0.0, 0.5: 0.0}
            for s in samples:
                frame = clip["frame_start"] + s * clip["frame_step"]
                if (frame, f) not in truth_cache:
                    truth_cache[frame, f] = native_truth(arm, meshes, wave, [frame], f, pose)[0]
                got = decode_meshes(meta, channels, meshes, s, f)
                worst[s % 1] = max(worst[s % 1], scene_distance(truth_cache[frame, f], got))
            for half, name in ((0.0, "frames"), (0.5, "mid_frames")):
                bound = claim[name]["max"] + SLACK * diagonal
                assert worst[half] <= bound, (precision, f, name, worst[half], claim[name]["max"])
        if kind == "VERTEX":
            index = attribute(meshes[0], meta["mesh_attributes"]["texel_index"], "INT", "value", 1, np.int32)
            assert np.array_equal(uv_items(meta, meshes[0]), index)


def spec_fields() -> list[str]:
    text = SPEC.read_text(encoding="utf-8")
    index = text[text.index("## 14. Field index") :]
    return re.findall(r"`([a-z_]+(?:\[\])?(?:\.[a-z_]+(?:\[\])?)*)`", index.split("\n", 3)[3])


def resolve(schema: dict, node: dict) -> dict:
    """Follow ``$ref`` and pick the object branch of a ``oneOf`` (e.g. ``null`` or an object)."""
    while "$ref" in node or "oneOf" in node:
        if "$ref" in node:
            node = schema["$defs"][node["$ref"].rsplit("/", 1)[1]]
        else:
            node = next(resolve(schema, n) for n in node["oneOf"] if n.get("type") != "null")
    return node


def schema_node(schema: dict, node: dict, path: list[str]) -> dict:
    node = resolve(schema, node)
    if not path:
        return node
    head, rest = path[0], path[1:]
    array = head.endswith("[]")
    child = node["properties"][head.removesuffix("[]")]
    if array:
        child = resolve(schema, child)["items"]
    return schema_node(schema, child, rest)


def test_schema_covers_every_field_the_spec_names():
    schema = json.loads(SCHEMA.read_text(encoding="utf-8"))
    fields = spec_fields()
    assert len(fields) > 70 and "pose.unkeyed_bones" in fields and "import_settings.row_order" in fields
    for field in fields:
        schema_node(schema, schema, field.split("."))  # KeyError names a field the schema lacks
    text = SPEC.read_text(encoding="utf-8")
    for section in ("## 2. Reading the image", "## 6. Frames", "## 11. Embedded metadata block"):
        assert section in text


@pytest.mark.parametrize("kind", ["BONE_MATRIX", "BONE_DQ"])
def test_auto_from_the_spec_matches_the_addons_auto(addon, robot, tmp_path, kind):
    arm, meshes = robot
    for obj in meshes:
        obj.hybrid_skin.factor_mode = "AUTO"  # the Round profile (stamped when Auto is chosen)
    wave = clip_action("Wave")
    pose = scene_pose(arm)
    bind = importlib.import_module(addon.__name__ + ".rig.bind")
    truth_cache: dict[float, list] = {}

    def truth(frame: float) -> list:
        """Per mesh: the add-on's positions with its own Auto factor, the factors, the object matrix."""
        if frame not in truth_cache:
            set_pose(arm, pose)
            play(arm, wave, float(frame))
            dg = bpy.context.evaluated_depsgraph_get()
            truth_cache[frame] = [
                (addon.api.deformed_positions(obj), bind.cached_bind(obj, dg).posed(dg).auto_factors(),
                 np.array(obj.matrix_world)) for obj in meshes
            ]  # fmt: skip
        return truth_cache[frame]

    for precision in ("PNG16", "EXR32"):
        out = tmp_path / precision
        out.mkdir()
        bake(directory=str(out), kind=kind, precision=precision, action_source="LISTED",
             actions=[{"name": wave.name, "use": True}], file_name="wave")  # fmt: skip
        meta = json.loads((out / "wave.json").read_text(encoding="utf-8"))
        jsonschema.validate(meta, json.loads(SCHEMA.read_text(encoding="utf-8")))
        assert meta["auto"]["profile"] == "ROUND" and meta["deform_factor"]["mode"] == "AUTO"
        lay, auto = meta["layout"], meta["auto"]
        bone_rows = -(-lay["item_count"] // lay["items_per_row"])
        assert lay["rows_per_frame"] == 2 * auto["row_offset"] == 2 * bone_rows
        channels = read_image(out / meta["image"], precision)
        check_embedded(meta, channels)
        (clip,) = meta["clips"]
        report = meta["error_report"]
        samples = [k + h for k in range(clip["frame_count"]) for h in (0.0, 0.5)]
        samples = [s for s in samples if clip["loop"] or s <= clip["frame_count"] - 1]
        worst = {"frames": [0.0, 0.0], "mid_frames": [0.0, 0.0]}
        names = meta["mesh_attributes"]
        for s in samples:
            where = "frames" if s % 1 == 0 else "mid_frames"
            v = sample_values(meta, channels, clip, s)
            data = auto_sample(meta, channels, clip, s)
            frame = clip["frame_start"] + s * clip["frame_step"]
            for obj, (want_p, want_f, world) in zip(meshes, truth(frame)):
                idx = attribute(obj, names["bone_indices"], "FLOAT_COLOR", "color", 4, np.float32).astype(int)
                w = attribute(obj, names["bone_weights"], "FLOAT_COLOR", "color", 4, np.float32).astype(float)
                rest = attribute(obj, names["auto_rest"], "FLOAT_COLOR", "color", 4, np.float32).astype(float)
                f = auto_factors(meta, data, idx, w, rest)
                got = skin(meta, v, coordinates(obj), idx, w, f)
                distance = float(np.linalg.norm((got - want_p) @ world[:3, :3].T, axis=-1).max())
                factor = float(np.abs(f - want_f).max())
                worst[where] = [max(worst[where][0], distance), max(worst[where][1], factor)]
        diagonal = report["bbox_diagonal"]
        for where, (distance, factor) in worst.items():
            claims = report[where]["max"], report["auto"]["factor"][where]["max"]
            print(f"{kind} {precision} {where}: position {distance:.3g} (claimed {claims[0]:.3g}), "
                  f"factor {factor:.3g} (claimed {claims[1]:.3g})")  # fmt: skip
            assert distance <= report[where]["max"] + SLACK * diagonal, (precision, where)
            assert factor <= report["auto"]["factor"][where]["max"] + 1e-5, (precision, where)
        if precision == "EXR32":  # float32 data: the add-on's own factors at stored frames
            assert worst["frames"][1] < 1e-3
