"""The three.js runtime walks a crowd by the baked root motion: instances end where Blender's armature ends.

RobotExpressive's ``Walking`` made a walk cycle (*Manual Frame Range* + *Cyclic*) whose armature object
moves and turns (object keys, as ``tests/animtex/test_root_motion.py`` adds them), baked by the command
line as VERTEX and BONE_DQ from the clip's first frame. ``AnimtexCrowd(..., { rootMotion: true })`` plays
instances placed at the origin at stored samples in the first cycle, at the wrap (one whole cycle), two
cycles and seven frames on, and before the clip's start. Checks:

* each instance's matrix (``crowd.instanceMatrix``) is the armature's own motion from Blender, in glTF's
  axes: ``Y · A_s · A_0⁻¹ · Y⁻¹`` for a sample ``s`` in the first cycle, and a cycle on ``(A_end · A_0⁻¹)^n``
  before it (an engine's root motion continues a walk cycle; Blender's own F-curve cycles jump back);
* in the first cycle, every vertex the runtime draws (read back, placed by its instance and part
  matrices) is where Blender's own Armature modifier puts it in the world, within the error the sidecar
  claims.
"""

from __future__ import annotations

import bpy
import numpy as np
import pytest

from tests.animtex.test_root_motion import key_root_motion
from tests.engines.bakes import bake_asset, import_asset
from tests.engines.browser import floats
from tests.engines.test_three_runtime import TIME
from tests.support.assets import clip_action, play
from tests.support.blender import reset_to_empty_scene
from tests.support.scenes import native_positions

#: Blender's axes to glTF's: (x, y, z) -> (x, z, -y).
Y_UP = np.array([[1.0, 0, 0, 0], [0, 0, 1, 0], [0, -1, 0, 0], [0, 0, 0, 1]])
SLACK = 1e-5  # of the walk's extent: float32 on the GPU and in the track


@pytest.fixture(scope="module")
def walk_cycle(addon, assets, page_server):
    reset_to_empty_scene()
    arm, _ = import_asset(assets / "RobotExpressive.glb")
    walk = clip_action("Walking")
    key_root_motion(arm, walk)
    walk.use_frame_range, walk.use_cyclic = True, True
    play(arm, walk, walk.frame_range[0])  # the export places the meshes where the clip starts
    blend = page_server.data_dir / "walk.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(blend), copy=True)
    name, action = arm.name, walk.name
    reset_to_empty_scene()
    out = page_server.data_dir
    return {kind: bake_asset(blend, out / f"walk_{kind.lower()}", name, [action], kind, "EXR32")
            for kind in ("VERTEX", "BONE_DQ")}  # fmt: skip


def samples(clip: dict) -> list[float]:
    count = clip["frame_count"]
    return [0.0, 5.0, float(count - 1), float(count), 2.0 * count + 7.0, -3.0]


def armature_motion(arm, walk, clip: dict, sample: float) -> np.ndarray:
    """Blender's armature from the clip's start to ``sample``, continued over whole cycles."""
    count, step, start = clip["frame_count"], clip["frame_step"], clip["frame_start"]
    cycles, rest = divmod(sample, count)
    worlds = {}
    for frame in (start, clip["frame_end"], start + step * rest):
        play(arm, walk, float(frame))
        worlds[frame] = np.array(arm.matrix_world)
    a0 = worlds[start]
    cycle = worlds[clip["frame_end"]] @ np.linalg.inv(a0)
    return np.linalg.matrix_power(cycle, int(cycles)) @ worlds[start + step * rest] @ np.linalg.inv(a0)


@pytest.mark.parametrize("kind", ["VERTEX", "BONE_DQ"])
def test_instances_walk_where_blenders_armature_walks(walk_cycle, page_server, kind):
    bake = walk_cycle[kind]
    (clip,) = bake.meta["clips"]
    assert clip["loop"] and "cycle" in clip["root_motion"]
    folder = f"/data/{bake.folder.name}"
    factor = {} if kind == "VERTEX" else {"deformFactor": 0.0}
    jobs = [{"clip": clip["name"], "speed": 1.0, "timeOffset": s / clip["sample_rate"] - TIME, **factor}
            for s in samples(clip)]  # fmt: skip
    spec = {"id": kind, "sidecar": f"{folder}/{bake.sidecar.name}", "gltf": f"{folder}/{bake.glb.name}",
            "yUp": True, "rootMotion": True, "time": TIME, "instances": jobs}  # fmt: skip
    (result,) = page_server.run_page("three.html", {"mode": "readback", "characters": [spec]})["characters"]
    count = len(jobs)
    got = np.array(result["instance_matrices"]).reshape(count, 4, 4).transpose(0, 2, 1)
    parts = np.array(result["part_matrices"]).reshape(-1, 4, 4).transpose(0, 2, 1)

    bpy.ops.wm.open_mainfile(filepath=str(bake.folder / "walk.blend"), load_ui=False)
    arm = next(o for o in bpy.data.objects if o.type == "ARMATURE")
    walk = bpy.data.actions[clip["name"]]
    extent = max(np.abs(got[:, :3, 3]).max(), 1.0)
    for i, s in enumerate(samples(clip)):
        want = Y_UP @ armature_motion(arm, walk, clip, s) @ np.linalg.inv(Y_UP)
        np.testing.assert_allclose(got[i], want, atol=SLACK * extent, err_msg=f"sample {s}")
    assert np.linalg.norm(got[3, :3, 3]) > 1.0  # a whole cycle walks (scene units)

    report = bake.meta["error_report"]  # at stored frames: VERTEX's own, a bone kind's at factor 0 (LBS)
    claimed = (report if kind == "VERTEX" else report["by_deform_factor"][0])["frames"]["max"]
    worst = 0.0
    for part, matrix in zip(result["parts"], parts):
        obj = bpy.data.objects[part["name"]]
        n = part["vertices"]
        local = floats(part["positions"], (count, n, 4))[..., :3].astype(np.float64)
        vertex = floats(part["blender_vertex"]).astype(np.int64)
        for i, s in enumerate(samples(clip)[:3]):  # the first cycle: Blender's own evaluation
            world = (got[i] @ matrix @ np.c_[local[i], np.ones(n)].T).T[:, :3]
            play(arm, walk, clip["frame_start"] + clip["frame_step"] * s)
            truth = native_positions(obj, bake.meta["deform_factor"]["value"] if kind == "VERTEX" else 0.0)
            blender = (Y_UP @ np.array(obj.matrix_world) @ np.c_[truth[vertex], np.ones(n)].T).T[:, :3]
            worst = max(worst, float(np.linalg.norm(world - blender, axis=1).max()))
    print(f"{kind}: vertices {worst:.3g} from Blender's (claimed {claimed:.3g}), root within {SLACK:g}")
    assert worst <= claimed + SLACK * extent
