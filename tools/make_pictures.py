"""Regenerate the README pictures with the add-on's own render_comparison (headless).

Run from the repository root:  .venv/bin/python tools/make_pictures.py  (or make pictures)
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import bpy  # noqa: E402

import hybrid_skin  # noqa: E402
from hybrid_skin.draw import ensure_gpu_context  # noqa: E402
from tests.support.scenes import make_chain_armature, make_cylinder, pose_bone, skin_to_chain  # noqa: E402

OUT = ROOT / "tests" / "media"


def limb(bones: list[float], rings: int, blend: float = 0.6) -> tuple[bpy.types.Object, bpy.types.Object]:
    for obj in list(bpy.data.objects):
        bpy.data.objects.remove(obj)
    arm = make_chain_armature("Rig", bones)
    cyl = make_cylinder("Limb", height=sum(bones), rings=rings, segments=32)
    skin_to_chain(cyl, arm, blend=blend)
    bpy.context.view_layer.objects.active = cyl
    bpy.ops.hybrid_skin.add()
    return arm, cyl


def main() -> None:
    bpy.ops.wm.read_factory_settings(use_empty=True)
    hybrid_skin.register()
    ensure_gpu_context()
    arm, cyl = limb([1.0, 1.0], 32)
    pose_bone(arm, "Bone1", (95, 0, 140))
    bpy.ops.hybrid_skin.render_comparison(filepath=str(OUT / "bend_twist.png"), width=360, height=360)
    arm, cyl = limb([1.0, 1.0, 1.0], 48)
    pose_bone(arm, "Bone1", (120, 0, 0))
    pose_bone(arm, "Bone2", (0, 170, 0))
    cyl.hybrid_skin.factor_mode = "AUTO"
    for profile, name in (("ROUND", "auto_bend_then_twist.png"), ("JOINT", "auto_0_1_bend_then_twist.png")):
        cyl.hybrid_skin.auto_profile = profile  # Auto (round), and the Auto of version 0.1 to compare
        bpy.ops.hybrid_skin.render_comparison(filepath=str(OUT / name), width=360, height=360)
    # The README's limb in profile: radius 0.25, blend zone one diameter, bent 120° in the view plane.
    arm, cyl = limb([1.0, 1.0], 48, blend=0.5)
    pose_bone(arm, "Bone1", (0, 0, 120))
    cyl.hybrid_skin.factor_mode = "AUTO"
    for profile, name in (("ROUND", "auto_bend_120.png"), ("JOINT", "auto_0_1_bend_120.png")):
        cyl.hybrid_skin.auto_profile = profile
        bpy.ops.hybrid_skin.render_comparison(filepath=str(OUT / name), width=360, height=360)
    hybrid_skin.unregister()


if __name__ == "__main__":
    main()
