"""The three.js runtime culls a crowd by the bake's boxes (``pose_bounds``) and keeps every visible instance.

RobotExpressive baked by the command line (``Walking`` and ``Wave``: a loop and a clamp) as VERTEX and
BONE_DQ, its ``.glb`` loaded with ``animtexParts``; 60 instances on a grid wider than the camera's view, at
times between stored frames, some cross-fading, one with a runtime factor. ``crowd.update(time, camera)``
culls; then the same crowd, updated without a camera, draws every instance and every vertex is read back
(the runtime's own GLSL) and placed by its instance and part matrices. Checks:

* every placed vertex lies inside its instance's box (``crowd.instanceBox``: the clip's interval box in
  the character's space, placed): the boxes hold the animation as played;
* every instance with a vertex inside the camera's view volume was drawn (no popping), and the parts'
  draw counts equal the number drawn;
* culling works: instances wholly outside the view were not drawn (fewer than all).
"""

from __future__ import annotations

import numpy as np
import pytest

from tests.engines.bakes import bake_asset, save_asset_blend
from tests.engines.browser import floats

CLIPS = ("Walking", "Wave")
TIME = 1.25
COLUMNS, ROWS, SPACING = 10, 6, 2.2  # the robot is about 4.5 units tall, 2.5 wide


@pytest.fixture(scope="module")
def bakes(addon, assets, page_server):
    blend = page_server.data_dir / "robot.blend"
    armature, actions = save_asset_blend(assets / "RobotExpressive.glb", blend, CLIPS)
    return {kind: bake_asset(blend, page_server.data_dir / kind.lower(), armature, actions, kind, "PNG16")
            for kind in ("VERTEX", "BONE_DQ")}  # fmt: skip


def instances(meta: dict) -> list[dict]:
    walk, wave = meta["clips"]
    out = []
    for i in range(COLUMNS * ROWS):
        clip = (walk, wave)[i % 2]
        sample = (0.37 * i) % clip["frame_count"]  # between stored frames, all over the clip
        matrix = np.eye(4)
        matrix[:3, 3] = ((i % COLUMNS - COLUMNS / 2) * SPACING, 0.0, -(i // COLUMNS) * SPACING)
        spec = {"clip": clip["name"], "speed": 1.0, "timeOffset": sample / clip["sample_rate"] - TIME,
                "matrix": matrix.T.ravel().tolist()}  # fmt: skip
        if i % 7 == 3:  # fading to the other clip, halfway
            other = (wave, walk)[i % 2]
            spec["fade"] = {"clip": other["name"], "speed": 1.0, "timeOffset": 0.2 - TIME,
                            "start": TIME - 0.2, "duration": 0.4}  # fmt: skip
        if meta["kind"] != "VERTEX" and i % 5 == 1:
            spec["deformFactor"] = 1.0
        out.append(spec)
    return out


@pytest.mark.parametrize("kind", ["VERTEX", "BONE_DQ"])
def test_culling_keeps_every_visible_instance_and_drops_others(bakes, page_server, kind):
    bake = bakes[kind]
    folder = f"/data/{kind.lower()}"
    jobs = instances(bake.meta)
    job = {"mode": "culling", "sidecar": f"{folder}/{bake.sidecar.name}", "gltf": f"{folder}/{bake.glb.name}",
           "time": TIME, "instances": jobs, "fov": 25.0, "aspect": 1.6, "near": 0.5, "far": 60.0,
           "camera": [4.0, 3.0, 8.0], "target": [3.0, 2.0, -4.0]}  # fmt: skip
    result = page_server.run_page("three.html", job, timeout=600)
    count = len(jobs)
    boxes = np.array(result["boxes"])
    instance = np.array(result["instance_matrices"]).reshape(count, 4, 4).transpose(0, 2, 1)
    parts = np.array(result["part_matrices"]).reshape(-1, 4, 4).transpose(0, 2, 1)
    view_projection = np.array(result["view_projection"]).reshape(4, 4).T
    seen = np.zeros(count, bool)
    for part, matrix in zip(result["parts"], parts):
        n = part["vertices"]
        local = floats(part["positions"], (count, n, 4))[..., :3].astype(np.float64)
        world = np.einsum("iab,bc,inc->ina", instance[:, :3, :3], matrix[:3, :3], local)
        world += (instance[:, :3, :3] @ matrix[:3, 3] + instance[:, :3, 3])[:, None]
        size = (boxes[:, 3:] - boxes[:, :3]).max(axis=1)[:, None, None]
        out = np.maximum(boxes[:, None, :3] - world, world - boxes[:, None, 3:]).max(axis=(1, 2))
        out /= size[:, 0, 0]
        assert (out <= 1e-6).all(), (part["name"], np.flatnonzero(out > 1e-6), out.max())
        clip = np.einsum("ab,inb->ina", view_projection, np.concatenate([world, np.ones((count, n, 1))], -1))
        w = clip[..., 3:]
        inside = (w[..., 0] > 0) & (np.abs(clip[..., :3]) <= w).all(-1)
        seen |= inside.any(axis=1)
    drawn = set(result["drawn"])
    assert result["counts"] == [len(drawn)] * len(parts) and len(drawn) == len(result["drawn"])
    missing = sorted(set(np.flatnonzero(seen)) - drawn)
    print(f"{kind}: {len(drawn)} of {count} drawn, {int(seen.sum())} with a vertex in view, missed {missing}")
    assert not missing
    assert 0 < seen.sum() <= len(drawn) < count - 10  # the far and side rows go
