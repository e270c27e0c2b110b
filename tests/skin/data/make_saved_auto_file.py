"""Make ``saved_with_auto_0_1.blend``: a file saved by the add-on as it was before Auto had profiles (main at
commit 29abbf6, where this work branched), with objects in factor mode Auto. Kept to show how the fixture
was made; it needs that add-on's zip, not this checkout's.

    git archive 29abbf6 | tar -x -C /tmp/old && (cd /tmp/old && python .ci/build.py --output-dir dist)
    python tests/skin/data/make_saved_auto_file.py /tmp/old/dist/hybrid_skin-0.1.0.zip \
        tests/skin/data/saved_with_auto_0_1.blend

Three cylinders on one two-bone rig bent at the joint (keyed over frames 1-3): "AutoEvaluated" (factor mode
Auto, display Evaluated), "AutoGPU" (factor mode Auto, display GPU) and "Global" (factor mode Global, 0.5).
Everything is made with the add-on's own operators, as a user would.
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
    for frame, angle in ((1, 0.0), (3, 110.0)):
        bone.rotation_euler = (math.radians(angle), 0.0, 0.0)
        bone.keyframe_insert("rotation_euler", frame=frame)
    scene = bpy.context.scene
    scene.frame_start, scene.frame_end = 1, 3
    objects = {}
    for x, name in enumerate(("AutoEvaluated", "AutoGPU", "Global")):
        obj = make_cylinder(name, rings=24, segments=16)
        skin_to_chain(obj, arm, blend=0.6)
        obj.location.x = 1.5 * x
        bpy.context.view_layer.objects.active = obj
        assert bpy.ops.hybrid_skin.add() == {"FINISHED"}
        objects[name] = obj
    for name, display in (("AutoEvaluated", "EVALUATED"), ("AutoGPU", "GPU")):
        objects[name].hybrid_skin.factor_mode = "AUTO"
        objects[name].hybrid_skin.display = display
    objects["Global"].hybrid_skin.deform_factor = 0.5
    scene.frame_set(3)
    bpy.ops.wm.save_as_mainfile(filepath=out, compress=True)


if __name__ == "__main__":
    main(*sys.argv[1:3])
