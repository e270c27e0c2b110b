"""Real rigs (assets/) baked the way a user bakes them, and Blender's own evaluation of them (the truth).

Bakes run through the command line (``python -m hybrid_skin bake-textures ... --save --gltf``) on a .blend
saved from a fresh glTF import: the bake's own ``<name>.glb`` (glTF's +Y up, issue 14 §5) is what the
browser loads; :mod:`tests.engines.export_gltf` writes a second copy in Blender's Z up for the test that the
runtime's axis change is exact, and for the crowd picture. The truth is evaluated in this process on a fresh
import of the same file: Blender's native Armature modifier (LBS), its Preserve Volume (DQS) or its
two-modifier mix for a factor in between (:func:`tests.support.scenes.native_positions`), each clip played
as the bake plays it.
"""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import bpy
import numpy as np

from tests.support.animtex import scene_pose, set_pose
from tests.support.assets import armature_actions, clip_action, import_gltf, play
from tests.support.blender import reset_to_empty_scene
from tests.support.scenes import native_positions

REPO_ROOT = Path(__file__).resolve().parents[2]
#: glTF animation names of the clips the tests bake (a rest-like loop, a walk, a fast arm motion).
ROBOT_CLIPS = ("Idle", "Walking", "Wave")
#: How the bake poses bones a clip does not key (the sidecar's ``pose.unkeyed_bones``): since issue 13 §1
#: "as the scene has them" (the pose at bake start, what Blender shows playing the clip), not rest; the
#: command line's ``--unkeyed-bones-at-rest`` would make it True. The truth follows this constant.
BAKE_RESETS_UNKEYED_BONES_TO_REST = False
#: Each imported armature's pose right after import (by object name): what bones a clip does not key show.
SCENE_POSES: dict[str, dict] = {}


@dataclass(frozen=True)
class Bake:
    folder: Path
    sidecar: Path
    glb: Path  # the bake's own export (+Y up)
    gltf: Path  # tests/engines/export_gltf.py's copy in Blender's axes (Z up)
    meta: dict


def import_asset(path: Path):
    """A fresh import of a glTF rig: ``(armature, skinned meshes sorted by name)``."""
    arm, meshes = import_gltf(path)
    bpy.context.view_layer.objects.active = arm
    SCENE_POSES[arm.name_full] = scene_pose(arm)
    return arm, sorted(meshes, key=lambda o: o.name)


def save_asset_blend(asset: Path, path: Path, clips: tuple[str, ...] | None = None) -> tuple[str, list[str]]:
    """Save a fresh import of ``asset`` as ``path``; returns the armature name and the Blender action names
    of the glTF animations ``clips`` (default: every action that animates the armature)."""
    reset_to_empty_scene()
    arm, _ = import_asset(asset)
    actions = [clip_action(name).name for name in clips] if clips else [a.name for a in armature_actions()]
    bpy.ops.wm.save_as_mainfile(filepath=str(path), copy=True)
    name = arm.name
    reset_to_empty_scene()
    return name, actions


def _run(args: list[str], what: str) -> None:
    done = subprocess.run(args, cwd=REPO_ROOT, capture_output=True, text=True, timeout=600, check=False)
    if done.returncode != 0:
        raise AssertionError(
            f"{what} failed (exit {done.returncode}):\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
        )


def bake_asset(
    blend: Path,
    folder: Path,
    armature: str,
    actions: list[str],
    kind: str,
    precision: str,
    extra: tuple[str, ...] = (),
) -> Bake:
    """Bake ``actions`` with the command line into ``folder`` (on a copy of ``blend``), with the bake's own
    glTF export (``<name>.glb``, +Y up), and export a Z-up copy (``<name>.gltf``) with export_gltf.py;
    ``extra``: more command-line options (e.g. ``--factor-mode AUTO``)."""
    folder.mkdir(parents=True)
    copy = folder / blend.name
    copy.write_bytes(blend.read_bytes())
    name = f"{blend.stem}_{kind.lower()}_{precision.lower()}"
    _run(
        [sys.executable, "-m", "hybrid_skin", "bake-textures", str(copy), "--object", armature,
         "--actions", *actions, "--kind", kind, "--precision", precision, "--output", str(folder),
         "--name", name, "--save", "--gltf", *extra],
        f"bake-textures {kind} {precision}",
    )  # fmt: skip
    gltf = folder / f"{name}.gltf"
    export = [sys.executable, str(Path(__file__).with_name("export_gltf.py")), str(copy)]
    _run([*export, str(gltf)], "glTF export (Z up)")
    sidecar = folder / f"{name}.json"
    glb = folder / f"{name}.glb"
    assert glb.is_file(), f"the bake wrote no {glb.name}"
    return Bake(folder, sidecar, glb, gltf, json.loads(sidecar.read_text(encoding="utf-8")))


def clip_frame(clip: dict, seconds: float) -> float:
    """The action frame a clip plays ``seconds`` after its start: the sidecar's frames, loops wrapping
    with period ``frame_count`` samples and other clips holding their ends (``layout.frame_pair``)."""
    sample = seconds * clip["sample_rate"]
    count = clip["frame_count"]
    sample = sample % count if clip["loop"] else min(max(sample, 0.0), count - 1)
    return clip["frame_start"] + clip["frame_step"] * sample


def blender_truth(addon, arm, meshes, action: bpy.types.Action, frame: float, factor: float | str) -> dict:
    """Per mesh name: Blender's own deformed positions (mesh space), the add-on's skinning normals (the
    cofactor normals a bake stores, ``api.deformed_normals``) and the object matrix, at action ``frame``.
    ``factor`` ``"auto"``: Blender has no Auto, so the positions are the add-on's own skinning with Auto
    (the round profile; the truth a bake that carries Auto is measured against)."""
    arm.animation_data_create()
    arm.animation_data.use_nla = False
    set_pose(arm, SCENE_POSES[arm.name_full])  # unkeyed bones as at import, not as the last clip left them
    play(arm, action, float(frame))
    if BAKE_RESETS_UNKEYED_BONES_TO_REST:
        for pb in arm.pose.bones:
            pb.location, pb.rotation_quaternion, pb.scale = (0, 0, 0), (1, 0, 0, 0), (1, 1, 1)
            pb.rotation_euler, pb.rotation_axis_angle = (0, 0, 0), (0, 0, 1, 0)
        play(arm, action, float(frame))  # keyed channels back from the action, unkeyed ones stay at rest
    out = {}
    for obj in meshes:
        if factor == "auto":
            obj.hybrid_skin.factor_mode = "AUTO"  # stamps the default profile, Round (as --factor-mode AUTO)
            assert obj.hybrid_skin.auto_profile == "ROUND"
            out[obj.name] = (
                addon.api.deformed_positions(obj),
                addon.api.deformed_normals(obj),
                np.array(obj.matrix_world),
            )
            continue
        out[obj.name] = (
            native_positions(obj, factor),
            addon.api.deformed_normals(obj, deform_factor=factor),
            np.array(obj.matrix_world),
        )
    return out
