"""The three.js runtime plays real bakes of RobotExpressive in headless Chromium as Blender deforms the robot.

Bakes are made with the command line, which also writes the meshes as ``.glb`` (:mod:`tests.engines.bakes`);
the page (``pages/three.js``) loads exactly these files (texture, sidecar, .glb in glTF's +Y up) with
``shaders/engines/three/hybrid_skin_animtex.js`` and three's GLTFLoader, plays an ``AnimtexCrowd`` and reads
every vertex of every instance back from a float target (the runtime's own GLSL, i.e. the shipped
``shaders/animtex_*.glsl``). Checks, per instance:

* against **Blender's own evaluation** (native Armature modifiers: LBS, Preserve Volume, or their mix at
  the factor) at stored frames and halfway between them: positions within the error the sidecar claims for
  that clip (``error_report``, scene units: mesh-space differences mapped by the object matrix) plus
  :data:`SLACK`; normals within the claimed angle against the add-on's skinning normals (the definition a
  bake stores). VERTEX cross-fades against the lerp of Blender's two poses;
* against the **numpy core decoders** reading the same files (exact float32 arithmetic both sides), at any
  time, for cross-fades of every kind too: :data:`DECODER_TOL` of the mesh extent.

A BONE_DQ bake made with ``--factor-mode AUTO`` carries Auto (``dq_auto``): its instances play Auto by
default (each vertex's factor from the texture's Auto data and the ``.glb``'s ``_ANIMTEX_AUTO_REST``), some a
runtime factor. Auto instances are held to the numpy decoders with the core's own ``round_factors``
(:mod:`hybrid_skin.core.animtex.auto`), and to the add-on's own Auto skinning of the scene (Blender has no
Auto) within the sidecar's claims, which for such a bake are measured at Auto. The other bakes carry no
Auto, and what the encoder writes without Auto is the file it wrote before Auto existed
(``tests/core/animtex/test_auto.py``): their instances are the old bakes playing on the new runtime.
"""

from __future__ import annotations

import base64
import importlib
import json
import os
from pathlib import Path

import bpy
import numpy as np
import pytest

from tests.engines.bakes import (
    ROBOT_CLIPS,
    bake_asset,
    blender_truth,
    clip_frame,
    import_asset,
    save_asset_blend,
)
from tests.engines.browser import floats

REPO_ROOT = Path(__file__).resolve().parents[2]
#: Blender's native modifiers vs the add-on's skinning (the error report's truth), plus float32 on the GPU:
#: relative to the report's bounding-box diagonal (measured on EXR32 bakes: at most 2e-7).
SLACK = 1e-6
#: Browser vs numpy decoders reading the same file: float32 rounding only. Relative to the mesh extent.
DECODER_TOL = 2e-6
NORMAL_SLACK_DEG = 0.01
TIME = 1.25  # the crowd's clock for the readback
ROBOT, CESIUM_MAN = "RobotExpressive.glb", "CesiumMan.gltf"
#: (kind, precision) per character: every image path (PNG 8/16 bit, half and full float EXR) is loaded.
BAKES = {
    "vertex": ("VERTEX", "PNG16"),
    "vertex_exr": ("VERTEX", "EXR32"),
    "dq": ("BONE_DQ", "EXR16"),
    "matrix": ("BONE_MATRIX", "PNG8"),
    "dq_auto": ("BONE_DQ", "PNG16"),
}
#: More command-line options per bake.
BAKE_OPTIONS = {"dq_auto": ("--factor-mode", "AUTO")}


def instance(clip: dict, sample: float, speed: float = 1.0, factor: float | None = None, fade=None) -> dict:
    """Instance playing ``clip`` at fractional ``sample`` when the crowd's clock reads TIME."""
    spec = {"clip": clip["name"], "speed": speed, "timeOffset": sample / clip["sample_rate"] - TIME * speed}
    if factor is not None:
        spec["deformFactor"] = factor
    if fade is not None:
        to, to_sample, weight = fade
        duration = 0.5
        spec["fade"] = {"clip": to["name"], "speed": 1.0, "timeOffset": to_sample / to["sample_rate"] - TIME,
                        "start": TIME - weight * duration, "duration": duration}  # fmt: skip
    return spec


def instances_for(meta: dict) -> list[dict]:
    """Stored frames, halfway samples, a loop wrapping, a clamp, other speeds, factors and cross-fades."""
    idle, walk, wave = (next(c for c in meta["clips"] if c["name"].startswith(n)) for n in ROBOT_CLIPS)
    bones = meta["kind"] != "VERTEX"
    out = [
        instance(idle, 17.0),
        instance(walk, 6.5, speed=0.5),
        instance(wave, 20.0, speed=1.5),
        instance(wave, 40.5),
        instance(walk, walk["frame_count"] + 3.0 if walk["loop"] else walk["frame_count"] + 7.0),  # wrap/hold
        instance(idle, 12.3),  # anywhere between frames: numpy only
        instance(walk, 4.0, fade=(wave, 10.0, 0.4)),
        instance(idle, 30.5, fade=(walk, 2.5, 0.75)),
        instance(wave, 8.0, fade=(idle, 21.0, 1.0)),  # done: update() makes the faded-to clip the instance's
    ]
    if bones:  # the runtime deform factor: LBS, DQS and between, per instance
        out += [
            instance(wave, 33.0, factor=0.0),
            instance(wave, 33.0, factor=1.0),
            instance(walk, 9.5, factor=0.25),
        ]
        out.append(instance(wave, 24.0, factor=1.0, fade=(walk, 7.0, 0.5)))
    if meta.get("auto"):  # Auto, asked for by name (the instances without a factor above play it too)
        out += [instance(wave, 21.0, factor="auto"), instance(wave, 21.5, factor="auto")]
    return out


@pytest.fixture(scope="module")
def bakes(addon, assets, page_server):
    blend = page_server.data_dir / "robot.blend"
    armature, actions = save_asset_blend(assets / ROBOT, blend, ROBOT_CLIPS)
    return {key: bake_asset(blend, page_server.data_dir / key, armature, actions, kind, precision,
                            BAKE_OPTIONS.get(key, ()))
            for key, (kind, precision) in BAKES.items()}  # fmt: skip


@pytest.fixture(scope="module")
def readback(bakes, page_server):
    characters = []
    for key, bake in bakes.items():
        folder = f"/data/{key}"
        spec = {"id": key, "sidecar": f"{folder}/{bake.sidecar.name}", "gltf": f"{folder}/{bake.glb.name}",
                "yUp": True, "time": TIME, "instances": instances_for(bake.meta)}  # fmt: skip
        characters.append(spec)
        if key == "vertex":  # the same, finding each vertex's texels through the texel UV map instead
            characters.append({**spec, "id": "vertex_uv", "itemFromUv": "uv"})
        if key in ("vertex", "dq"):  # the same from a glTF in Blender's Z-up axes
            characters.append(
                {**spec, "id": f"{key}_zup", "gltf": f"{folder}/{bake.gltf.name}", "yUp": False}
            )
    result = page_server.run_page("three.html", {"mode": "readback", "characters": characters}, timeout=600)
    y_up = {c["id"]: c["yUp"] for c in characters}
    return {c["id"]: {**c, "yUp": y_up[c["id"]]} for c in result["characters"]}, {
        c["id"]: c["instances"] for c in characters
    }


def blender_axes(v: np.ndarray) -> np.ndarray:
    """glTF's +Y up ``(x, y, z)`` → Blender's ``(x, -z, y)``: a swap and a sign, exact in float32."""
    return v[..., [0, 2, 1]] * np.array([1, -1, 1], v.dtype)


def parts_of(character: dict, count: int) -> dict:
    """Per part name: the page's arrays, shaped, in Blender's axes (from a +Y up glTF: converted)."""
    axes = blender_axes if character.get("yUp") else (lambda v: v)
    out = {}
    for part in character["parts"]:
        n = part["vertices"]
        attributes = {k: floats(v) for k, v in part["attributes"].items()}
        if "normal" in attributes:
            attributes["normal"] = axes(attributes["normal"].reshape(-1, 3)).ravel()
        out[part["name"]] = {
            "blender_vertex": floats(part["blender_vertex"]).astype(np.int64),
            "rest": axes(floats(part["rest"], (n, 3))),
            "positions": axes(floats(part["positions"], (count, n, 4))[..., :3]),
            "normals": axes(floats(part["normals"], (count, n, 4))[..., :3]),
            **attributes,
        }
    return out


def test_page_decodes_every_instance(readback):
    results, jobs = readback
    assert set(results) == {*BAKES, "vertex_uv", "vertex_zup", "dq_zup"}
    for key, character in results.items():
        parts = parts_of(character, len(jobs[key]))
        assert sorted(parts) == ["Object_94", "Object_95", "Object_98", "Object_99"]
        for part in parts.values():
            assert np.isfinite(part["positions"]).all() and np.isfinite(part["normals"]).all()


@pytest.mark.parametrize("key", ["vertex", "dq"])
def test_y_up_geometry_plays_the_same_motion(readback, key):
    """glTF's Y up (x, z, -y) of Blender's axes in (the bake's .glb), the same numbers out as from a Z-up
    export: bit for bit, since the runtime's axis change is a swap and a sign on both sides of the same
    decoder (``parts_of`` turns the Y-up results back)."""
    results, jobs = readback
    y_up = parts_of(results[key], len(jobs[key]))
    z_up = parts_of(results[f"{key}_zup"], len(jobs[key]))
    for name, part in z_up.items():
        other = y_up[name]
        np.testing.assert_array_equal(other["blender_vertex"], part["blender_vertex"])
        for field in ("rest", "positions", "normals"):
            np.testing.assert_array_equal(other[field], part[field])


def test_texel_uv_path_equals_texel_index_path(readback):
    results, jobs = readback
    by_index = parts_of(results["vertex"], len(jobs["vertex"]))
    by_uv = parts_of(results["vertex_uv"], len(jobs["vertex"]))
    for name, part in by_index.items():
        np.testing.assert_array_equal(by_uv[name]["positions"], part["positions"])
        np.testing.assert_array_equal(by_uv[name]["normals"], part["normals"])


# ------------------------------------------------------------------------------------ references
@pytest.fixture(scope="module")
def core(addon):
    name = addon.__name__ + ".core.animtex"
    return {m: importlib.import_module(f"{name}{m}") for m in ("", ".crossfade", ".decode", ".auto")}


def played_factor(meta: dict, spec: dict) -> float | str:
    """The factor an instance plays: its own, else "auto" where the bake carries Auto, else the bake's."""
    return spec.get("deformFactor", "auto" if meta.get("auto") else meta["deform_factor"]["value"])


def image_channels(path: Path) -> np.ndarray:
    """``(H, W, 4)`` float32 channels as Blender loads the image (Non-Color, alpha as data)."""
    image = bpy.data.images.load(str(path), check_existing=False)
    try:
        image.colorspace_settings.name = "Non-Color"
        image.alpha_mode = "CHANNEL_PACKED"
        width, height = image.size
        buf = np.empty(width * height * 4, np.float32)
        image.pixels.foreach_get(buf)
    finally:
        bpy.data.images.remove(image)
    return buf.reshape(height, width, 4)


def sample_of(meta: dict, spec: dict, fade: bool = False) -> tuple[int, float]:
    """(clip index, fractional sample) an instance plays at TIME (the fade's target with ``fade``)."""
    s = spec["fade"] if fade else spec
    index = [c["name"] for c in meta["clips"]].index(s["clip"])
    seconds = TIME * s["speed"] + s["timeOffset"]
    return index, round(seconds * meta["clips"][index]["sample_rate"], 6)  # the intended sample, exactly


def fade_weight(spec: dict) -> float:
    fade = spec["fade"]
    return min(max((TIME - fade["start"]) / fade["duration"], 0.0), 1.0)


def numpy_reference(core, meta: dict, texture, part: dict, spec: dict) -> tuple[np.ndarray, np.ndarray]:
    """What the core decoders give for one part of one instance (cross-fades included)."""
    ca, sa = sample_of(meta, spec)
    fade = spec.get("fade")
    cb, sb = sample_of(meta, spec, fade=True) if fade else (ca, sa)
    weight = fade_weight(spec) if fade else 0.0
    rest = part["rest"]
    if meta["kind"] == "VERTEX":
        items = np.rint(part["_animtex_index"]).astype(np.int64)
        rest_items = np.zeros((meta["layout"]["item_count"], 3), np.float32)
        rest_items[items] = rest
        p, n = core[".crossfade"].crossfade_vertex_frames(texture, rest_items, ca, sa, cb, sb, weight)
        return p[0, items], n[0, items]
    frames = core[".crossfade"].crossfade_bone_frames(texture, ca, sa, cb, sb, weight)
    idx = np.rint(part["_animtex_bone_indices"].reshape(-1, 4)).astype(np.int64)
    w = part["_animtex_bone_weights"].reshape(-1, 4)
    factor = played_factor(meta, spec)
    if factor == "auto":  # the core's round_factors on the decoded, cross-faded Auto data
        auto = core[".auto"]
        data = auto.crossfade_auto(texture, ca, sa, cb, sb, weight)
        rest_data = part["_animtex_auto_rest"].reshape(-1, 4)
        factor = auto.texture_factors(texture, data, idx.astype(np.int32), w, rest_data)
    p, n = core[".decode"].skin_with_bone_frames(frames, rest, idx, w, factor, part["normal"].reshape(-1, 3))
    return p[0], n[0]


@pytest.mark.parametrize("key", [*BAKES, "vertex_uv"])
def test_runtime_matches_the_numpy_decoders(readback, bakes, core, key):
    results, jobs = readback
    bake = bakes[key.removesuffix("_uv")]
    texture = core[""].texture_from_metadata(bake.meta, image_channels(bake.folder / bake.meta["image"]))
    parts = parts_of(results[key], len(jobs[key]))
    worst = 0.0
    for i, spec in enumerate(jobs[key]):
        for name, part in parts.items():
            want_p, want_n = numpy_reference(core, bake.meta, texture, part, spec)
            extent = np.abs(part["rest"]).max()
            np.testing.assert_allclose(
                part["positions"][i], want_p, rtol=0, atol=DECODER_TOL * extent, err_msg=f"{i} {name}"
            )
            np.testing.assert_allclose(
                part["normals"][i], want_n, rtol=0, atol=DECODER_TOL * 10, err_msg=f"{i} {name}"
            )
            worst = max(worst, np.abs(part["positions"][i] - want_p).max() / extent)
    print(f"{key}: browser vs numpy max {worst:.3g} of the mesh extent")


def unit(v: np.ndarray) -> np.ndarray:
    v = np.asarray(v, dtype=np.float64)
    return v / np.linalg.norm(v, axis=-1, keepdims=True)


def angle_deg(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Degrees between unit vectors: 2 asin(|a - b| / 2) (arccos of a float32 dot product is blind below
    ~0.03 degrees, far above what a good bake claims)."""
    return np.degrees(2 * np.arcsin(np.minimum(np.linalg.norm(unit(a) - unit(b), axis=-1) / 2, 1.0)))


def report_claim(meta: dict, clip: int, sample: float, factor: float | str | None = None) -> tuple | None:
    """The sidecar's claimed max position error (scene units) and normal angle for that clip, at stored
    frames or halfway between them; ``None`` for other samples (the report does not measure them). A bake
    that carries Auto claims its clips' figures at Auto; a runtime ``factor`` there is bounded by the
    report's figures at factors 0 and 1 (``by_deform_factor``, over all clips)."""
    entry = meta["error_report"]["clips"][clip]
    count, loop = meta["clips"][clip]["frame_count"], meta["clips"][clip]["loop"]
    s = sample % count if loop else min(max(sample, 0.0), count - 1)
    if s == int(s):
        where = "frames"
    elif 2 * s == int(2 * s):
        where = "mid_frames"
    else:
        return None
    if meta.get("auto") and factor != "auto":
        ends = meta["error_report"]["by_deform_factor"]
        return max(e[where]["max"] for e in ends), entry["normal_angle_deg"]["max"]
    return entry[where]["max"], entry["normal_angle_deg"]["max"]


@pytest.mark.parametrize("key", list(BAKES))
def test_runtime_matches_blender(readback, bakes, addon, assets, key):
    results, jobs = readback
    meta = bakes[key].meta
    parts = parts_of(results[key], len(jobs[key]))
    arm, meshes = import_asset(assets / ROBOT)
    assert sorted(o.name for o in meshes) == sorted(parts)
    diagonal = meta["error_report"]["bbox_diagonal"]
    rest_normals = {o.name: unit(np.array([v.normal[:] for v in o.data.vertices])) for o in meshes}
    cache: dict = {}

    def truth(clip: int, sample: float, factor: float) -> dict:
        key = (clip, sample, factor)
        if key not in cache:
            action = bpy.data.actions[meta["clips"][clip]["name"]]
            frame = clip_frame(meta["clips"][clip], sample / meta["clips"][clip]["sample_rate"])
            cache[key] = blender_truth(addon, arm, meshes, action, frame, factor)
        return cache[key]

    checked = 0
    for i, spec in enumerate(jobs[key]):
        factor = played_factor(meta, spec)
        sides = [(sample_of(meta, spec), 1.0)]
        if spec.get("fade"):
            if meta["kind"] != "VERTEX":
                continue  # a bone-space blend has no Blender counterpart: the numpy test holds it
            w = fade_weight(spec)
            sides = [(sample_of(meta, spec), 1.0 - w), (sample_of(meta, spec, fade=True), w)]
        claims = [report_claim(meta, c, s, factor) for (c, s), _ in sides]
        if None in claims:
            continue  # not a sample the report measures (the numpy test covers it)
        claim = sum(w * c[0] for c, (_, w) in zip(claims, sides))
        angle_claim = max(c[1] for c in claims)
        for name, part in parts.items():
            world = None
            want_p = np.zeros_like(part["positions"][i], dtype=np.float64)
            for (clip, sample), w in sides:
                p, n, world = truth(clip, sample, factor)[name]
                want_p += w * p[part["blender_vertex"]]
            error = np.linalg.norm((part["positions"][i] - want_p) @ world[:3, :3].T, axis=-1)
            assert error.max() <= claim + SLACK * diagonal, (i, name, error.max(), claim)
            if len(sides) == 1:
                got_n = part["normals"][i].astype(np.float64)
                want_n = unit(n[part["blender_vertex"]])
                angle = angle_deg(got_n, want_n)
                # Bone kinds skin the glTF file's normals (the exporter writes the mesh's corner normals),
                # the bake's truth Blender's vertex normals: their angle at rest adds to the claim (twice:
                # a blended skinning matrix is not a pure rotation).
                rest_angle = 0.0
                if meta["kind"] != "VERTEX":
                    rest_angle = 2 * angle_deg(
                        unit(part["normal"].reshape(-1, 3)), rest_normals[name][part["blender_vertex"]]
                    )
                excess = angle - rest_angle - angle_claim
                assert excess.max() <= NORMAL_SLACK_DEG, (i, name, angle.max(), angle_claim, excess.max())
            print(
                f"{key} #{i} {name}: max {error.max():.3g} claim {claim:.3g} (+{SLACK * diagonal:.2g})"
                + (f" normal {angle.max():.3g} claim {angle_claim:.3g}" if len(sides) == 1 else "")
            )
            checked += 1
    assert checked >= 4 * len(parts)


# ------------------------------------------------------------------------------------- the picture
WIDTH, HEIGHT = 960, 540
HERO = 15


def placement(x: float, z: float, yaw: float) -> np.ndarray:
    """three's world (Y up) from Blender's (Z up): a turn about the vertical, then the ground position."""
    c, s = np.cos(yaw), np.sin(yaw)
    z_up_to_y_up = np.array([[1, 0, 0, 0], [0, 0, 1, 0], [0, -1, 0, 0], [0, 0, 0, 1]], dtype=np.float64)
    turn = np.array([[c, 0, s, 0], [0, 1, 0, 0], [-s, 0, c, 0], [0, 0, 0, 1]])
    move = np.eye(4)
    move[:3, 3] = (x, 0.0, z)
    return move @ turn @ z_up_to_y_up


def crowd_instances(meta: dict) -> list[dict]:
    """A 6 x 4 grid walking out of step, each with its own factor; the hero in front at a stored frame."""
    rng = np.random.default_rng(2)
    walk = meta["clips"][0]
    out = []
    for row in range(4):
        for col in range(6):
            sample = float(rng.uniform(0, walk["frame_count"]))
            spec = instance(
                walk, sample, speed=float(rng.uniform(0.8, 1.2)), factor=float(rng.choice([0.0, 0.5, 1.0]))
            )
            x, z = 1.3 * (col - 2.5) + rng.uniform(-0.2, 0.2), -1.7 * row + rng.uniform(-0.3, 0.3)
            spec["matrix"] = placement(x, z, 0.9 + rng.uniform(-0.4, 0.4)).T.ravel().tolist()
            out.append(spec)
    out[HERO] = {**instance(walk, 20.0, factor=1.0), "matrix": placement(0.7, 0.9, 1.1).T.ravel().tolist()}
    return out


def gltf_triangles(path: Path) -> dict:
    """Per node name: triangle corner indices ``(T, 3)`` and each vertex's Blender index, from the file."""
    import json

    doc = json.loads(path.read_text(encoding="utf-8"))
    buffers = [(path.parent / b["uri"]).read_bytes() for b in doc["buffers"]]
    types = {5121: np.uint8, 5123: np.uint16, 5125: np.uint32, 5126: np.float32}

    def accessor(i: int) -> np.ndarray:
        acc = doc["accessors"][i]
        view = doc["bufferViews"][acc["bufferView"]]
        width = {"SCALAR": 1, "VEC2": 2, "VEC3": 3, "VEC4": 4}[acc["type"]]
        start = view.get("byteOffset", 0) + acc.get("byteOffset", 0)
        data = np.frombuffer(
            buffers[view["buffer"]], types[acc["componentType"]], acc["count"] * width, start
        )
        return data.reshape(acc["count"], width) if width > 1 else data

    out = {}
    for node in doc["nodes"]:
        (primitive,) = doc["meshes"][node["mesh"]]["primitives"]
        out[node["name"]] = (
            accessor(primitive["indices"]).reshape(-1, 3).astype(np.int64),
            accessor(primitive["attributes"]["_HS_VERTEX"]).astype(np.int64),
        )
    return out


def silhouette(corners: np.ndarray, width: int, height: int) -> np.ndarray:
    """Coverage ``(height, width)`` bool, row 0 at the bottom, of triangles ``(T, 3, 2)`` in pixels:
    pixel centres inside a front-facing (counter-clockwise) triangle, as the rasteriser decides."""
    mask = np.zeros((height, width), bool)
    a, b, c = corners[:, 0], corners[:, 1], corners[:, 2]
    area = (b[:, 0] - a[:, 0]) * (c[:, 1] - a[:, 1]) - (b[:, 1] - a[:, 1]) * (c[:, 0] - a[:, 0])
    for tri, ar in zip(corners, area):
        if ar <= 0:
            continue
        lo = np.maximum(np.floor(tri.min(0)).astype(int), 0)
        hi = np.minimum(np.ceil(tri.max(0)).astype(int), (width, height))
        if np.any(hi <= lo):
            continue
        x, y = np.meshgrid(np.arange(lo[0], hi[0]) + 0.5, np.arange(lo[1], hi[1]) + 0.5)
        inside = np.ones(x.shape, bool)
        for k in range(3):
            p, q = tri[k], tri[(k + 1) % 3]
            inside &= (q[0] - p[0]) * (y - p[1]) - (q[1] - p[1]) * (x - p[0]) >= 0
        mask[lo[1] : hi[1], lo[0] : hi[0]] |= inside
    return mask


def truth_silhouette(addon, arm, meshes, meta, bake, spec, view_projection, sample_shift=0.0) -> np.ndarray:
    clip, sample = sample_of(meta, spec)
    sample += sample_shift
    action = bpy.data.actions[meta["clips"][clip]["name"]]
    frame = clip_frame(meta["clips"][clip], sample / meta["clips"][clip]["sample_rate"])
    truth = blender_truth(addon, arm, meshes, action, frame, spec["deformFactor"])
    place = np.array(spec["matrix"]).reshape(4, 4).T
    corners = []
    for name, (triangles, blender_vertex) in gltf_triangles(bake.gltf).items():
        local, _normals, world = truth[name]
        p = local[blender_vertex].astype(np.float64)
        p = np.c_[p, np.ones(len(p))] @ (view_projection @ place @ world).T
        pixel = (p[:, :2] / p[:, 3:] * 0.5 + 0.5) * (WIDTH, HEIGHT)
        corners.append(pixel[triangles])
    return silhouette(np.concatenate(corners), WIDTH, HEIGHT)


def test_crowd_picture_and_hero_silhouette(addon, assets, page_server, tmp_path):
    """CesiumMan (a fully skinned figure) baked as BONE_DQ: the README's crowd picture, drawn with the
    material users get (MeshStandardMaterial patched by the runtime); then the hero alone, whose coverage
    must be the silhouette of Blender's own deformation projected with the page's camera."""
    blend = page_server.data_dir / "cesium_man.blend"
    armature, actions = save_asset_blend(assets / CESIUM_MAN, blend)
    bake = bake_asset(blend, page_server.data_dir / "picture", armature, actions, "BONE_DQ", "EXR16")
    job = {
        "mode": "screenshot", "width": WIDTH, "height": HEIGHT, "time": TIME, "hero": HERO,
        "sidecar": f"/data/picture/{bake.sidecar.name}", "gltf": f"/data/picture/{bake.gltf.name}",
        "instances": crowd_instances(bake.meta), "sun": [3.0, 6.0, 4.0],
        "camera": {"fov": 40.0, "near": 0.1, "far": 100.0, "position": [2.6, 1.9, 4.6],
                   "target": [0.0, 0.75, -2.2]},
    }  # fmt: skip
    result = page_server.run_page("three.html", job, timeout=600)
    png = base64.b64decode(result["png"])
    (tmp_path / "three_crowd.png").write_bytes(png)
    if os.environ.get("HYBRID_SKIN_WRITE_MEDIA"):  # refresh the README's picture
        (REPO_ROOT / "tests" / "media" / "three_crowd.png").write_bytes(png)
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    drawn = floats(result["mask"], (HEIGHT, WIDTH)) > 0.5
    view_projection = np.array(result["view_projection"]).reshape(4, 4).T
    arm, meshes = import_asset(assets / CESIUM_MAN)
    spec = job["instances"][HERO]
    want = truth_silhouette(addon, arm, meshes, bake.meta, bake, spec, view_projection)
    wrong = truth_silhouette(addon, arm, meshes, bake.meta, bake, spec, view_projection, sample_shift=6.0)
    differ, differ_wrong = np.count_nonzero(drawn ^ want), np.count_nonzero(drawn ^ wrong)
    print(f"hero: {want.sum()} px, {differ} differ from Blender's ({differ_wrong} from 6 frames later)")
    assert want.sum() > 3000  # a real silhouette, well inside the picture
    assert not want[0].any() and not want[-1].any() and not want[:, 0].any() and not want[:, -1].any()
    assert differ <= 0.01 * want.sum()  # edge pixels whose centres lie within the error of an edge
    assert differ_wrong > 10 * max(differ, 1)  # the check sees a pose six frames off


def test_bad_input_gives_one_clear_sentence(bakes, page_server):
    bake = bakes["dq"]
    folder = page_server.data_dir / "dq"
    broken = {
        "not_a_sidecar.json": {"hello": 1},
        "future.json": {**bake.meta, "format_version": 99},
        "no_block.json": {**bake.meta, "embedded_metadata": None},
        "no_image.json": {**bake.meta, "image": "missing.exr"},
        "image_elsewhere.json": {**bake.meta, "image": f"../dq/{bake.meta['image']}"},
        "image_url.json": {**bake.meta, "image": "http://example.com/robot.exr"},
        "too_wide.json": {**bake.meta, "layout": {**bake.meta["layout"], "width": 1 << 20}},
    }
    for name, meta in broken.items():
        (folder / name).write_text(json.dumps(meta), encoding="utf-8")
    job = {"mode": "errors", "sidecars": [f"/data/dq/{n}" for n in broken],
           "sidecar": f"/data/dq/{bake.sidecar.name}", "gltf": f"/data/dq/{bake.gltf.name}"}  # fmt: skip
    messages = page_server.run_page("three.html", job)["messages"]
    expected = [
        "is not a hybrid_skin.animtex sidecar",
        "format_version 99 is not supported",
        "no embedded metadata block: bake again without --no-embed",
        "cannot load the image",
        "the sidecar's image \"../dq/robot_bone_dq_exr16.exr\" is not a plain file name beside it",
        "the sidecar's image \"http://example.com/robot.exr\" is not a plain file name beside it",
        "larger than this device's maxTextureSize",  # 2^20 wide: refused before the image is fetched
        'no clip "Nope"; the clips are',
        "deform factor must be in 0..1, got 2",
        "deform factor 'auto' needs a bake that carries Auto",
        "instance 5 is out of range 0..1",
        "the geometry has no attribute 'animtex_bone_indices'",
    ]
    assert len(messages) == len(expected)
    for message, part in zip(messages, expected):
        assert message is not None and message.startswith("AnimtexError: ") and part in message, message
        assert message.count("\n") == 0
