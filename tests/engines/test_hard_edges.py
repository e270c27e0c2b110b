"""Hard edges survive into the engine (issue 14 §4): the three.js runtime's normals are Blender's split
normals.

A two-bone rig with flat-shaded boxes and a sphere with custom split normals
(:mod:`tests.support.hard_edges`) is baked as VERTEX with the command line, which writes the meshes as .glb
(:mod:`tests.engines.bakes`): Blender's glTF exporter splits the vertices whose corners carry different
normals, as engines do. The page plays stored frames in headless Chromium and reads back every exported
vertex's normal as the runtime's GLSL computes it (each split vertex finds its own item through
``animtex_corner_index``, or through the texel UV map).

Truth: Blender's corner normals of the evaluated meshes (Armature modifier on) at the same frames, for the
corners of each exported vertex (the corners the bake gave that vertex's item). Within 1°.
"""

from __future__ import annotations

import bpy
import numpy as np
import pytest

from tests.engines.bakes import bake_asset
from tests.engines.test_three_runtime import TIME, angle_deg, instance, parts_of
from tests.support.assets import play
from tests.support.blender import reset_to_empty_scene
from tests.support.hard_edges import corner_normals, hard_scene

TOLERANCE_DEG = 1.0
SAMPLES = (0.0, 3.0, 6.0, 8.0)  # stored frames 1, 4, 7 and 9 of the clip


@pytest.fixture(scope="module")
def hard_bake(addon, page_server):
    reset_to_empty_scene()
    arm, _ = hard_scene()
    blend = page_server.data_dir / "hard.blend"
    name, action = arm.name, arm.animation_data.action.name
    bpy.ops.wm.save_as_mainfile(filepath=str(blend), copy=True)
    reset_to_empty_scene()
    return bake_asset(blend, page_server.data_dir / "hard", name, [action], "VERTEX", "EXR32")


def test_runtime_normals_are_blenders_split_normals(hard_bake, page_server):
    meta = hard_bake.meta
    assert meta["mesh_attributes"]["corner_index"] == "animtex_corner_index"
    clip = meta["clips"][0]
    jobs = [instance(clip, s) for s in SAMPLES]
    folder = f"/data/{hard_bake.folder.name}"
    spec = {"sidecar": f"{folder}/{hard_bake.sidecar.name}", "gltf": f"{folder}/{hard_bake.glb.name}",
            "yUp": True, "time": TIME, "instances": jobs}  # fmt: skip
    characters = [{**spec, "id": "index"}, {**spec, "id": "uv", "itemFromUv": "uv"}]
    result = page_server.run_page("three.html", {"mode": "readback", "characters": characters}, timeout=600)
    results = {c["id"]: parts_of({**c, "yUp": True}, len(jobs)) for c in result["characters"]}

    # Blender's side: the baked .blend (its mesh data holds the corner items), played at each frame
    bpy.ops.wm.open_mainfile(filepath=str(hard_bake.folder / "hard.blend"), load_ui=False)
    arm = bpy.data.objects["HardRig"]
    action = bpy.data.actions[clip["name"]]
    meshes = {name: bpy.data.objects[name] for name in results["index"]}
    assert sorted(meshes) == ["Boxes", "Custom"]
    corner_item = {}
    for name, obj in meshes.items():
        values = np.empty(len(obj.data.loops), np.int32)
        obj.data.attributes["animtex_corner_index"].data.foreach_get("value", values)
        corner_item[name] = values
    worst = {key: {name: 0.0 for name in meshes} for key in results}
    split_seen = 0.0
    for i, sample in enumerate(SAMPLES):
        play(arm, action, clip["frame_start"] + clip["frame_step"] * sample)
        truth = {name: corner_normals(obj) for name, obj in meshes.items()}
        for key, parts in results.items():
            for name, part in parts.items():
                items = np.rint(part["_animtex_corner_index"]).astype(np.int64)
                # one Blender corner of each exported vertex's item: all of them share its normal
                corner = np.full(items.max() + 1, -1)
                corner[corner_item[name][::-1]] = np.arange(len(corner_item[name]))[::-1]
                assert (corner[items] >= 0).all()
                want = truth[name][corner[items]]
                worst[key][name] = max(worst[key][name], float(angle_deg(part["normals"][i], want).max()))
                if key == "index" and name == "Boxes":  # the exported vertices of one Blender vertex
                    vertex = part["blender_vertex"].astype(np.int64)
                    for v in np.unique(vertex):
                        normals = want[vertex == v]
                        split_seen = max(split_seen, float(angle_deg(normals[:1], normals).max()))
    print(f"runtime vs Blender's split normals: {worst}")
    assert split_seen > 45.0  # the boxes' exported vertices really are split (one normal per vertex fails)
    for key, per_part in worst.items():
        assert max(per_part.values()) < TOLERANCE_DEG, (key, per_part)
