"""Tangents for normal maps reach the three.js runtime and follow Blender's own tangents of the deformed mesh.

CesiumMan (textured: a UV map) baked by the command line with ``--tangents`` as VERTEX (the tangents in the
texture's third texel; deform factor 0, so Blender's Armature modifier is the truth) and BONE_DQ (the
``.glb``'s ``TANGENT`` turned at runtime, played at factor 0). The page plays stored frames and reads back
every exported vertex's tangent and sign as the runtime's GLSL computes it (``animtex_decode_tangent``, what
the patched material feeds three's normal mapping). Truth: Blender's ``Mesh.calc_tangents`` (MikkTSpace) of
the evaluated, deformed mesh at the same frame, at the corner of each exported vertex (the corner of its
Blender vertex whose rest tangent the ``.glb`` carries): within :data:`ANGLE_DEG`; the signs agree exactly.
"""

from __future__ import annotations

import bpy
import numpy as np
import pytest

from tests.engines.bakes import bake_asset, save_asset_blend
from tests.engines.browser import floats
from tests.engines.test_three_runtime import TIME, blender_axes, instance, parts_of
from tests.support.assets import play

SAMPLES = (0.0, 7.0, 15.0, 31.0)
#: Angle between the runtime's tangents and Blender's MikkTSpace tangents of the deformed mesh (made
#: perpendicular to the runtime's normal: a normal map's frame is that normal's, and how the cofactor
#: normal differs from Blender's face-averaged one is the error report's normal_angle_deg), in degrees, at
#: percentiles over every exported vertex and sampled frame. VERTEX stores Blender's own (measured: median
#: 0.0001°, 99th percentile 0.35°, max 3.9°: where an item's corners disagree); a bone kind turns the rest
#: tangents with the skin, as engines' GPU skinning does (measured: median 0.12°, 95th 5.1°, 99th 15°; the
#: largest where the skin stretches, squashes or folds triangles: REGULAR reports it apart).
ANGLE_DEG = {"VERTEX": {50: 0.01, 99: 1.0, 100: 5.0}, "BONE_DQ": {50: 0.5, 95: 6.0}}
#: Where a triangle at a vertex turns more than FOLD_DEG from the vertex's normal, or stretches or squashes
#: by more than STRETCH in area, MikkTSpace recomputes a tangent that a turned rest tangent cannot follow.
FOLD_DEG = 60.0
STRETCH = 1.5


@pytest.fixture(scope="module")
def bakes(addon, assets, page_server):
    blend = page_server.data_dir / "cesium.blend"
    armature, actions = save_asset_blend(assets / "CesiumMan.gltf", blend)
    extra = {"VERTEX": ("--tangents", "--deform-factor", "0"), "BONE_DQ": ("--tangents",)}
    out = page_server.data_dir
    return {kind: bake_asset(blend, out / kind.lower(), armature, actions, kind, "EXR32", options)
            for kind, options in extra.items()}  # fmt: skip


def corner_tangents(mesh) -> tuple[np.ndarray, np.ndarray]:
    """``(corner vertex (C,), tangent and sign (C, 4))`` of ``mesh``'s UV map, Blender's MikkTSpace."""
    mesh.calc_tangents(uvmap=mesh.uv_layers[0].name)
    count = len(mesh.loops)
    vertex, sign = np.empty(count, np.int32), np.empty(count, np.float32)
    tangent = np.empty(count * 3, np.float32)
    mesh.loops.foreach_get("vertex_index", vertex)
    mesh.loops.foreach_get("tangent", tangent)
    mesh.loops.foreach_get("bitangent_sign", sign)
    mesh.free_tangents()
    return vertex, np.c_[tangent.reshape(-1, 3), sign]


def triangles(mesh) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(vertices (T, 3), unit normals (T, 3), areas (T,))`` of ``mesh``'s triangulation."""
    mesh.calc_loop_triangles()
    count = len(mesh.loop_triangles)
    tri = np.empty(count * 3, np.int32)
    mesh.loop_triangles.foreach_get("vertices", tri)
    tri = tri.reshape(count, 3)
    co = np.empty(len(mesh.vertices) * 3, np.float32)
    mesh.vertices.foreach_get("co", co)
    co = co.reshape(-1, 3).astype(np.float64)
    face = np.cross(co[tri[:, 1]] - co[tri[:, 0]], co[tri[:, 2]] - co[tri[:, 0]])
    area = np.linalg.norm(face, axis=1)
    return tri, face / np.maximum(area, 1e-30)[:, None], area / 2


def regular(mesh, rest_areas: np.ndarray) -> np.ndarray:
    """Per vertex: whether the skin keeps every triangle at it regular: neither stretched nor squashed more
    than :data:`STRETCH` times in area, nor turned more than :data:`FOLD_DEG` from the vertex's normal
    (folded). Elsewhere MikkTSpace recomputes a tangent the turned one cannot follow."""
    tri, face, area = triangles(mesh)
    normals = np.empty(len(mesh.vertices) * 3, np.float32)
    mesh.vertex_normals.foreach_get("vector", normals)
    normals = normals.reshape(-1, 3)
    ratio = area / np.maximum(rest_areas, 1e-30)
    ok = np.ones(len(normals), bool)
    for k in range(3):
        fine = (np.sum(face * normals[tri[:, k]], axis=1) >= np.cos(np.radians(FOLD_DEG))) & (
            (ratio <= STRETCH) & (ratio >= 1 / STRETCH))
        np.logical_and.at(ok, tri[:, k], fine)
    return ok


def angles_deg(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.degrees(np.arctan2(np.linalg.norm(np.cross(a, b), axis=-1), np.sum(a * b, -1)))


@pytest.mark.parametrize("kind", ["VERTEX", "BONE_DQ"])
def test_runtime_tangents_follow_blenders_deformed_tangents(bakes, page_server, kind):
    bake = bakes[kind]
    meta = bake.meta
    assert meta["tangents"]["uv_maps"] == ["UVMap"]
    assert meta["tangents"]["stored"] == ("texture" if kind == "VERTEX" else "mesh")
    assert meta["layout"]["texels_per_item"] == (3 if kind == "VERTEX" else 2)
    (clip,) = meta["clips"]
    factor = None if kind == "VERTEX" else 0.0
    jobs = [instance(clip, s, factor=factor) for s in SAMPLES]
    folder = f"/data/{kind.lower()}"
    spec = {"id": kind, "sidecar": f"{folder}/{bake.sidecar.name}", "gltf": f"{folder}/{bake.glb.name}",
            "yUp": True, "time": TIME, "instances": jobs}  # fmt: skip
    (result,) = page_server.run_page("three.html", {"mode": "readback", "characters": [spec]})["characters"]
    (part,) = parts_of({**result, "yUp": True}, len(jobs)).values()
    raw = result["parts"][0]
    count, n = len(jobs), raw["vertices"]
    got = floats(raw["tangents"], (count, n, 4))
    got_t, got_sign = blender_axes(got[..., :3]), got[..., 3]
    rest = floats(raw["attributes"]["tangent"]).reshape(n, 4)
    rest_t, rest_sign = blender_axes(rest[:, :3]), rest[:, 3]
    np.testing.assert_array_equal(got_sign, np.broadcast_to(rest_sign, got_sign.shape))  # the sign stays

    bpy.ops.wm.open_mainfile(filepath=str(bake.folder / "cesium.blend"), load_ui=False)
    obj = bpy.data.objects[raw["name"]]
    arm = obj.find_armature()
    action = bpy.data.actions[clip["name"]]
    vertex = part["blender_vertex"].astype(np.int64)
    corner_vertex, rest_corners = corner_tangents(obj.data)
    # each exported vertex's corner: of its Blender vertex's corners, the one whose rest tangent it carries
    candidates = [np.flatnonzero(corner_vertex == v) for v in vertex]
    mismatch = [angles_deg(rest_corners[c, :3], rest_t[k][None]) + 1e3 * (rest_corners[c, 3] != rest_sign[k])
                for k, c in enumerate(candidates)]  # fmt: skip
    corner = np.array([c[np.argmin(m)] for c, m in zip(candidates, mismatch)])
    assert (angles_deg(rest_corners[corner, :3], rest_t) < 0.5).all()
    rest_areas = triangles(obj.data)[2]
    worst, kept = [], []
    for i, s in enumerate(SAMPLES):
        play(arm, action, clip["frame_start"] + clip["frame_step"] * s)
        depsgraph = bpy.context.evaluated_depsgraph_get()
        evaluated = obj.evaluated_get(depsgraph)
        mesh = evaluated.to_mesh()
        try:
            _, deformed = corner_tangents(mesh)
            smooth = regular(mesh, rest_areas)[vertex]
        finally:
            evaluated.to_mesh_clear()
        np.testing.assert_array_equal(deformed[corner, 3], got_sign[i])
        want = deformed[corner, :3].astype(np.float64)
        n = part["normals"][i].astype(np.float64)  # the runtime's normal (Blender's axes)
        projected = want - np.sum(want * n, -1, keepdims=True) * n
        worst.append(angles_deg(got_t[i], projected))
        kept.append(smooth)
    every, kept = np.concatenate(worst), np.concatenate(kept)
    stats = {q: float(np.percentile(every, q)) for q in (50, 95, 99, 100)}
    regular_stats = {q: float(np.percentile(every[kept], q)) for q in (50, 99, 100)}
    print(f"{kind}: runtime tangents vs Blender's deformed MikkTSpace over {every.size} vertex-frames: "
          f"median {stats[50]:.3g}°, 95th percentile {stats[95]:.3g}°, 99th {stats[99]:.3g}°, max "
          f"{stats[100]:.3g}°; where the skin keeps triangles regular ({kept.mean():.1%}): 99th "
          f"{regular_stats[99]:.3g}°, max {regular_stats[100]:.3g}°")  # fmt: skip
    for q, bound in ANGLE_DEG[kind].items():
        assert stats[q] <= bound, (kind, q, stats[q])
