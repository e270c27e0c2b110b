"""Make ``saved_before_rename.blend``: a file saved by the add-on as it was before the Display value
"CPU" was renamed "EVALUATED" (commit 300681a, the head of main then). Kept to show how the fixture was
made; it needs that add-on's zip, not this checkout's.

    git archive 300681a | tar -x -C /tmp/old && (cd /tmp/old && python .ci/build.py --output-dir dist)
    python tests/skin/data/make_saved_file.py /tmp/old/dist/hybrid_skin-0.1.0.zip \
        tests/skin/data/saved_before_rename.blend

Two cylinders on one two-bone rig with a keyed bend: "Evaluated" (display Evaluated, factor mode Vertex
Group on "Twisty", factor 0.7) and "Baked" (display GPU, factor mode Auto, baked to shape keys over
frames 1-3). Everything is made with the add-on's own operators, as a user would.
"""

from __future__ import annotations

import math
import os
import sys
import tempfile
from pathlib import Path

os.environ["BLENDER_USER_RESOURCES"] = tempfile.mkdtemp(prefix="hybrid_skin_saved_file_")
sys.path.insert(0, str(Path(__file__).resolve().parents[3]))

import bpy  # noqa: E402

from tests.support.scenes import make_chain_armature, make_cylinder, skin_to_chain  # noqa: E402


def main(zip_path: str, out: str) -> None:
    bpy.ops.wm.read_factory_settings(use_empty=True)
    assert bpy.ops.extensions.package_install_files(
        filepath=zip_path, repo="user_default", enable_on_install=True
    ) == {"FINISHED"}
    arm = make_chain_armature("Rig", [1.0, 1.0])
    bone = arm.pose.bones["Bone1"]
    bone.rotation_mode = "XYZ"
    for frame, angle in ((1, 0.0), (3, 80.0)):
        bone.rotation_euler = (math.radians(angle), 0.0, math.radians(angle / 2))
        bone.keyframe_insert("rotation_euler", frame=frame)
    scene = bpy.context.scene
    scene.frame_start, scene.frame_end = 1, 3

    evaluated = make_cylinder("Evaluated", rings=8, segments=12)
    skin_to_chain(evaluated, arm)
    twisty = evaluated.vertex_groups.new(name="Twisty")
    for v in evaluated.data.vertices:
        twisty.add([v.index], min(max(v.co.z / 2.0, 0.0), 1.0), "REPLACE")
    baked = make_cylinder("Baked", rings=8, segments=12)
    skin_to_chain(baked, arm)
    baked.location.x = 2.0

    for obj in (evaluated, baked):
        bpy.context.view_layer.objects.active = obj
        assert bpy.ops.hybrid_skin.add() == {"FINISHED"}
    settings = evaluated.hybrid_skin
    settings.factor_vertex_group, settings.factor_mode, settings.deform_factor = "Twisty", "VERTEX_GROUP", 0.7
    settings.display = "CPU"  # the old identifier of "Evaluated"
    baked.hybrid_skin.factor_mode = "AUTO"
    bpy.context.view_layer.objects.active = baked
    assert bpy.ops.hybrid_skin.bake_shape_keys(frame_start=1, frame_end=3) == {"FINISHED"}
    scene.frame_set(2)
    bpy.ops.wm.save_as_mainfile(filepath=out, compress=True)


if __name__ == "__main__":
    main(*sys.argv[1:3])
