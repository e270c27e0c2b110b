"""The three.js runtime plays a bake's instancing mesh number for number as the skinned ``.glb``.

The tentacle rig (``tests/animtex/tentacle.py``) in factor mode Auto, baked by the command line as BONE_DQ
and BONE_MATRIX with ``--gltf --instancing``: ``<name>.glb`` (a glTF skin, the bone data as attributes) and
``<name>_instancing.glb`` (a static mesh, the bone data in UV channels, the sidecar's ``instancing``). Both
load with three's GLTFLoader and ``animtexParts``; the same instances (both clips, between frames, a
cross-fade, Auto and runtime factors) read back from both are equal bit for bit, positions and normals, and
both are placed alike.
"""

from __future__ import annotations

import bpy
import numpy as np
import pytest

from tests.animtex.tentacle import tentacle_scene
from tests.engines.bakes import bake_asset
from tests.engines.browser import floats
from tests.engines.test_three_runtime import TIME, instance
from tests.support.blender import reset_to_empty_scene


@pytest.fixture(scope="module")
def bakes(addon, page_server):
    reset_to_empty_scene()
    arm, _, actions = tentacle_scene()
    blend = page_server.data_dir / "tentacle.blend"
    name = arm.name
    bpy.ops.wm.save_as_mainfile(filepath=str(blend), copy=True)
    reset_to_empty_scene()
    extra = ("--instancing", "--factor-mode", "AUTO")
    return {kind: bake_asset(blend, page_server.data_dir / kind.lower(), name, actions, kind, "PNG16", extra)
            for kind in ("BONE_DQ", "BONE_MATRIX")}  # fmt: skip


@pytest.mark.parametrize("kind", ["BONE_DQ", "BONE_MATRIX"])
def test_instancing_mesh_plays_as_the_skinned_one(bakes, page_server, kind):
    bake = bakes[kind]
    twist, opened = bake.meta["clips"]
    assert bake.meta["instancing"]["file"] == f"{bake.glb.stem}_instancing.glb"
    jobs = [instance(twist, 3.5), instance(opened, 2.25, factor=0.4), instance(twist, 7.0, factor="auto"),
            instance(opened, 5.0, fade=(twist, 1.5, 0.3))]  # fmt: skip
    folder = f"/data/{kind.lower()}"
    spec = {"sidecar": f"{folder}/{bake.sidecar.name}", "yUp": True, "time": TIME, "instances": jobs}
    files = {"skinned": bake.glb.name, "instancing": bake.meta["instancing"]["file"]}
    characters = [{**spec, "id": key, "gltf": f"{folder}/{name}"} for key, name in files.items()]
    result = page_server.run_page("three.html", {"mode": "readback", "characters": characters}, timeout=600)
    skinned, static = (next(c for c in result["characters"] if c["id"] == k) for k in files)
    parts = {p["name"]: p for p in skinned["parts"]}
    assert sorted(parts) == sorted(p["name"] for p in static["parts"]) == ["Box", "Tentacle"]
    for part in static["parts"]:
        other = parts[part["name"]]
        n = part["vertices"]
        assert other["vertices"] == n
        np.testing.assert_array_equal(floats(part["blender_vertex"]), floats(other["blender_vertex"]))
        for key in ("positions", "normals"):
            got, want = floats(part[key], (len(jobs), n, 4)), floats(other[key], (len(jobs), n, 4))
            np.testing.assert_array_equal(got, want, err_msg=f"{kind} {part['name']} {key}")
    # placed alike (the skinned one through its skeleton's root: a float64 product, equal to rounding)
    np.testing.assert_allclose(static["part_matrices"], skinned["part_matrices"], rtol=0, atol=1e-12)
