"""``python -m hybrid_skin demo``: what Hybrid Skin is for, on a real rig, in a folder you can open.

``make demo`` runs it on RobotExpressive (CC0, shipped in ``assets/``). One progress line per step:

1. import the rig with Blender's bundled glTF importer, and skin the meshes parented to its bones (Skin
   Rigid Parts: RobotExpressive is 4 skinned meshes and 15 rigid ones — head, torso, legs — that bakes
   would otherwise leave out);
2. add Hybrid Skin to every mesh an Armature modifier deforms (the operator a user clicks);
3. compare with Blender's own deformation (Armature modifier LBS, Preserve Volume, and their mix) at
   f = 0, 0.5 and 1 over several frames — printed as one line;
4. twist the joint that shows it best on top of the first clip's pose and render LBS | hybrid | Auto | DQS
   to ``comparison.png``;
5. bake an animation texture set (bone dual quaternions, PNG16 + JSON + the meshes as .glb) from several
   actions, with the decoded-vs-Blender error line;
6. write ``crowd.html``: the bake played as an instanced crowd by the shipped three.js runtime, three.js
   copied beside it from the pinned npm install (:mod:`.crowd_page`), and ``crowd.png``, its screenshot by
   headless Chromium when Chromium is installed (a line says when either is skipped);
7. bake one action to shape keys (one keyed shape key per frame) on every mesh;
8. save ``<asset>_demo.blend`` beside them: Hybrid Skin settings, baked keys, and the texture bake's
   files referenced relative to it (the folder can move).

Exit 0 on success; 1 with an ``error:`` line naming the step when one fails; 2 when the asset is missing.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from ..console import quiet
from . import crowd_page

DEFAULT_ASSET = "RobotExpressive.glb"
DEFAULT_OUTPUT = Path("out") / "demo"
FACTORS = (0.0, 0.5, 1.0)
COMPARE_FRAMES = 4
#: Actions baked to the texture set when the file has them (RobotExpressive's); else its first four.
TEXTURE_ACTIONS = ("Idle", "Walking", "Running", "Wave", "Dance")
TEXTURE_ACTION_COUNT = 4
#: The action baked to shape keys (a short one keeps the .blend small), else the shortest.
SHAPE_KEY_ACTION = "Wave"
STEPS = 9


def default_asset() -> Path:
    folder = os.environ.get("HYBRID_SKIN_ASSETS")
    root = Path(folder) if folder else Path(__file__).resolve().parents[3] / "assets"
    return root / DEFAULT_ASSET


def add_arguments(parser: argparse.ArgumentParser) -> None:
    default = f"$HYBRID_SKIN_ASSETS or <repo>/assets/{DEFAULT_ASSET}"
    parser.add_argument("--asset", type=Path, default=None, help=f"rigged .glb/.gltf (default: {default})")
    parser.add_argument("--output", type=Path, default=DEFAULT_OUTPUT,
                        help=f"folder for the pictures, textures and .blend (default: {DEFAULT_OUTPUT})")


class StepFailed(Exception):
    """A step could not be done; the message is the sentence the user sees."""


class Progress:
    """Prints ``[k/7] title ... detail (seconds)`` as each step ends."""

    def __init__(self) -> None:
        self.number = 0

    def run(self, title: str, work: Callable[[], str]):
        self.number += 1
        print(f"[{self.number}/{STEPS}] {title} ...", end="", flush=True)
        t0 = time.perf_counter()
        try:
            with quiet():
                detail = work()
        except StepFailed as err:
            print(" failed")
            raise StepFailed(f"{title}: {err}") from None
        print(f" {detail} ({time.perf_counter() - t0:.1f} s)", flush=True)


def _operator_message(err: RuntimeError) -> str:
    """The report of a Blender operator that failed (bpy raises it as RuntimeError('Error: ...'))."""
    return str(err).strip().removeprefix("Error: ").strip()


# ------------------------------------------------------------------------------------------- scene
def import_asset(path: Path) -> str:
    """Empty scene, then Blender's glTF importer."""
    import bpy

    bpy.ops.wm.read_factory_settings(use_empty=True)
    try:
        bpy.ops.import_scene.gltf(filepath=str(path))
    except RuntimeError as err:
        message = _operator_message(err)
        raise StepFailed(f"Blender's glTF importer could not read {path.name}: {message}") from None
    return f"{len(bpy.data.objects)} objects, {len(bpy.data.actions)} actions"


def skinned_objects() -> list:
    import bpy

    return sorted(
        (o for o in bpy.data.objects
         if o.type == "MESH" and any(m.type == "ARMATURE" and m.object is not None for m in o.modifiers)),
        key=lambda o: o.name,
    )


def armature_of(objects) -> object:
    arms = {m.object for o in objects for m in o.modifiers if m.type == "ARMATURE" and m.object}
    if len(arms) != 1:
        raise StepFailed(f"the demo needs one armature; this file has {len(arms)}")
    return arms.pop()


def _count(n: int, one: str, many: str) -> str:
    return f"{n} {one if n == 1 else many}"


def _action_name(action, armature) -> str:
    """The action's own name (Blender 4.2's glTF importer appended ``_<armature object>``)."""
    return action.name.removesuffix(f"_{armature.name}")


def play(armature, action, frame: float | None = None) -> None:
    """Make ``action`` the armature's active action (its object slot in Blender ≥ 4.4), at ``frame``."""
    import bpy

    data = armature.animation_data or armature.animation_data_create()
    data.action = action
    slots = getattr(action, "slots", None)
    if slots is not None and hasattr(data, "action_slot"):
        slot = next((s for s in slots if s.target_id_type == "OBJECT"), None)
        if slot is not None:
            data.action_slot = slot
    if frame is not None:
        bpy.context.scene.frame_set(int(frame), subframe=float(frame) % 1.0)


def frames_of(action, count: int) -> list[float]:
    start, end = (float(f) for f in action.frame_range)
    if count <= 1 or end <= start:
        return [start]
    return [start + (end - start) * i / (count - 1) for i in range(count)]


# ------------------------------------------------------------------------------------------- steps
def skin_rigid_parts(armature) -> str:
    import bpy

    from ...rig import rigid

    parts = rigid.rigid_parts(armature, bpy.context.scene.objects)
    if not parts:
        return "none: every mesh is skinned"
    bpy.context.view_layer.objects.active = armature
    try:
        bpy.ops.hybrid_skin.skin_rigid_parts()
    except RuntimeError as err:
        raise StepFailed(_operator_message(err)) from None
    left = len(rigid.rigid_parts(armature, bpy.context.scene.objects))
    done = f"{_count(len(parts) - left, 'mesh', 'meshes')} parented to bones"
    return done + (f", {left} left as they were (see the warnings)" if left else "")


def add_hybrid_skin(objects) -> str:
    import bpy

    for obj in objects:
        bpy.context.view_layer.objects.active = obj
        obj.select_set(True)
        try:
            bpy.ops.hybrid_skin.add()
        except RuntimeError as err:
            raise StepFailed(f"'{obj.name}': {_operator_message(err)}") from None
    vertices = sum(len(o.data.vertices) for o in objects)
    factor = objects[0].hybrid_skin.deform_factor
    return f"{_count(len(objects), 'mesh', 'meshes')}, {vertices:,} vertices, deform factor {factor:g}"


def compare_with_blender(objects, armature, actions) -> str:
    """The worst distance between Hybrid Skin and Blender's own deformation, over meshes × f × frames."""
    import bpy
    import numpy as np

    from ... import api
    from ...rig import native

    worst, count = 0.0, 0
    for action in actions[:2]:
        for frame in frames_of(action, COMPARE_FRAMES):
            play(armature, action, frame)
            for obj in objects:
                for f in FACTORS:
                    ours = api.deformed_positions(obj, deform_factor=f)
                    theirs = native.native_positions(obj, f)
                    diagonal = float(np.linalg.norm(theirs.max(0) - theirs.min(0))) or 1.0
                    worst = max(worst, float(np.linalg.norm(ours - theirs, axis=1).max()) / diagonal)
                    count += 1
    bpy.context.view_layer.update()
    if not worst < 1e-4:
        raise StepFailed(f"Hybrid Skin differs from Blender's own deformation by {worst:.2e} × the mesh size")
    return f"worst {worst:.1e} × mesh size over {count} mesh × factor × frame cases (Blender: LBS, DQS, mix)"


#: How far the picture twists a joint on top of the animation: LBS collapses ("candy wrapper"), DQS keeps
#: the volume, the hybrid and Auto sit between (the animation alone bends the robot's arms only mildly).
PICTURE_TWIST_DEGREES = 160.0


@contextmanager
def twisted(armature, bone_name: str, degrees: float) -> Iterator[None]:
    """The pose bone turned ``degrees`` about its own axis (Y) on top of its pose; put back after."""
    import math

    import bpy
    from mathutils import Quaternion

    bone = armature.pose.bones[bone_name]
    mode, rotation = bone.rotation_mode, bone.rotation_quaternion.copy()
    bone.rotation_mode = "QUATERNION"
    bone.rotation_quaternion = rotation @ Quaternion((0.0, 1.0, 0.0), math.radians(degrees))
    bpy.context.view_layer.update()
    try:
        yield
    finally:
        bone.rotation_quaternion = rotation
        bone.rotation_mode = mode
        bpy.context.view_layer.update()


def lbs_dqs_gap(obj) -> float:
    """Largest distance between the LBS and DQS results of ``obj`` at this pose ÷ its size."""
    import numpy as np

    from ... import api

    lbs = api.deformed_positions(obj, deform_factor=0.0)
    dqs = api.deformed_positions(obj, deform_factor=1.0)
    size = float(np.linalg.norm(dqs.max(0) - dqs.min(0))) or 1.0
    return float(np.linalg.norm(lbs - dqs, axis=1).max()) / size


def most_telling_twist(objects, armature) -> tuple[object, str, float]:
    """``(mesh, bone, gap)``: of the bones most weighted where vertices blend two or more bones (where
    LBS and DQS can differ at all: a rigid part's one bone cannot), the one whose twist shows LBS and DQS
    furthest apart, and the mesh where it shows."""
    weight: dict[str, float] = {}
    for obj in objects:
        names = {g.index: g.name for g in obj.vertex_groups}
        for vertex in obj.data.vertices:
            bones = [(names.get(g.group), g.weight) for g in vertex.groups if g.weight > 0.0]
            bones = [(name, w) for name, w in bones if name in armature.pose.bones]
            if len(bones) < 2:
                continue
            for name, w in bones:
                weight[name] = weight.get(name, 0.0) + w
    best = (objects[0], "", -1.0)
    for name in sorted(weight, key=weight.get, reverse=True)[:8]:
        with twisted(armature, name, PICTURE_TWIST_DEGREES):
            for obj in objects:
                gap = lbs_dqs_gap(obj)
                if gap > best[2]:
                    best = (obj, name, gap)
    return best


#: How much of the mesh around the twisted joint the picture shows: the vertices LBS and DQS move apart by
#: more than this share of their largest distance, framed with this margin. (The whole mesh at README size
#: made the candy wrapper a few pixels.)
CLOSE_UP_SHARE, CLOSE_UP_MARGIN = 0.3, 1.5


@contextmanager
def close_up(scene, obj, armature, bone_name: str) -> Iterator[None]:
    """An orthographic scene camera framing where LBS and DQS of ``obj`` differ at this pose, looking at
    the twisted bone from the side (across its axis); removed after, the scene's camera put back."""
    import bpy
    import numpy as np
    from mathutils import Matrix, Vector

    from ... import api

    lbs = api.deformed_positions(obj, deform_factor=0.0).astype(np.float64)
    dqs = api.deformed_positions(obj, deform_factor=1.0).astype(np.float64)
    world = np.array(obj.matrix_world)
    lbs, dqs = (p @ world[:3, :3].T + world[:3, 3] for p in (lbs, dqs))
    apart = np.linalg.norm(lbs - dqs, axis=1)
    region = np.concatenate([lbs, dqs])[np.tile(apart >= CLOSE_UP_SHARE * apart.max(), 2)]
    centre = 0.5 * (region.min(0) + region.max(0))
    radius = CLOSE_UP_MARGIN * float(np.linalg.norm(region - centre, axis=1).max()) or 1.0
    bone = armature.pose.bones[bone_name]
    axis = np.array(armature.matrix_world.to_3x3() @ (bone.tail - bone.head))
    axis /= np.linalg.norm(axis) or 1.0
    view = np.array([0.0, -1.0, 0.0])  # from the character's front, turned to be across the bone
    view -= axis * float(view @ axis)
    if np.linalg.norm(view) < 1e-3:
        view = np.array([1.0, 0.0, 0.0]) - axis * axis[0]
    view /= np.linalg.norm(view)
    data = bpy.data.cameras.new(".hybrid_skin_demo_close_up")
    data.type, data.ortho_scale = "ORTHO", 2.0 * radius
    data.clip_start, data.clip_end = 0.01 * radius, 100.0 * radius
    camera = bpy.data.objects.new(data.name, data)
    scene.collection.objects.link(camera)
    rotation = Vector(-view).to_track_quat("-Z", "Y").to_matrix().to_4x4()  # looking at it, Z up
    camera.matrix_world = Matrix.Translation(Vector(centre + 10.0 * radius * view)) @ rotation
    before = scene.camera
    scene.camera = camera
    bpy.context.view_layer.update()
    try:
        yield
    finally:
        scene.camera = before
        bpy.data.objects.remove(camera)
        bpy.data.cameras.remove(data)


#: Clay grey for the picture (scene-linear): the robot's dark material would hide the shapes.
PICTURE_COLOR = (0.55, 0.55, 0.6)


def render_pose(objects, armature, actions, output: Path) -> str:
    import bpy

    from ...analyze import comparison

    action = actions[0]
    frame = float(action.frame_range[0])
    play(armature, action, frame)
    obj, bone, gap = most_telling_twist(objects, armature)
    path = output / "comparison.png"
    with twisted(armature, bone, PICTURE_TWIST_DEGREES), close_up(bpy.context.scene, obj, armature, bone):
        try:
            comparison.render_comparison(bpy.context, obj, path, width=320, height=400, auto_panel=True,
                                         color=PICTURE_COLOR)
        except Exception as err:  # no GPU context on this machine, or an unwritable folder: say which
            raise StepFailed(f"could not draw the comparison ({type(err).__name__}: {err})") from None
    name = _action_name(action, armature)
    return (f"{path.name}: '{obj.name}' at '{name}' frame {frame:g}, '{bone}' twisted "
            f"{PICTURE_TWIST_DEGREES:g}° (LBS and DQS {100 * gap:.0f}% of its size apart)")


def bake_textures(armature, actions, output: Path, stem: str, done: dict) -> str:
    import bpy

    from ...animtex import bake as animtex_bake
    from ...errors import HybridSkinError

    folder = output / "textures"
    folder.mkdir(parents=True, exist_ok=True)
    options = animtex_bake.BakeOptions(
        directory=str(folder), kind="BONE_DQ", precision="PNG16", file_name=f"{stem}_bone_dq",
        write_mesh_data=True, export_gltf=True,
    )
    try:
        result = animtex_bake.bake(bpy.context, armature, options, [a.name for a in actions])
    except HybridSkinError as err:
        raise StepFailed(str(err)) from None
    done["bake"] = result
    stored, halfway = result.report["frames"], result.report["mid_frames"]
    clips = ", ".join(_action_name(a, armature) for a in actions)
    files = " + ".join(Path(p).name for p in (result.image_path, result.json_path, result.gltf_path))
    return (f"{_count(len(actions), 'clip', 'clips')} ({clips}) → {files}; decoded vs Blender: max "
            f"{stored['max_percent']:.2g}% of the size at the stored frames, {halfway['max_percent']:.2g}% "
            "halfway between them (interpolation)")


def server_line(output: Path) -> str:
    return f"python3 -m http.server --bind 127.0.0.1 --directory '{output}' 8000"


def write_crowd(output: Path, bake, asset: str) -> str:
    """The crowd page and, with Chromium, its screenshot; the reason in the line when one is skipped."""
    three = crowd_page.find_three()
    if three is None:
        return "skipped: three.js is not installed (make demo installs it with npm from tests/engines)"
    height = 0.6 * bake.report["bbox_diagonal"] or 1.0  # about a standing character's height
    page = crowd_page.write_crowd_page(
        output, three, Path(bake.json_path), Path(bake.gltf_path), asset, float(height)
    )
    chromium = crowd_page.find_chromium()
    if chromium is None:
        return f"{page.name}; screenshot skipped: Chromium is not installed"
    try:
        crowd_page.screenshot(chromium, page, output / "crowd.png")
    except (OSError, RuntimeError) as err:
        return f"{page.name}; screenshot failed: {err}"
    return f"{page.name} + crowd.png (headless Chromium)"


def bake_shape_keys(objects, armature, actions) -> str:
    import bpy

    by_name = {_action_name(a, armature): a for a in actions}
    shortest = min(actions, key=lambda a: a.frame_range[1] - a.frame_range[0])
    action = by_name.get(SHAPE_KEY_ACTION) or shortest
    start, end = (int(round(f)) for f in action.frame_range)
    play(armature, action, start)
    scene = bpy.context.scene
    scene.frame_start, scene.frame_end = start, end
    for obj in objects:
        bpy.context.view_layer.objects.active = obj
        try:
            bpy.ops.hybrid_skin.bake_deformation(target="SHAPE_KEYS", frame_start=start, frame_end=end)
        except RuntimeError as err:
            raise StepFailed(f"'{obj.name}': {_operator_message(err)}") from None
    frames = end - start + 1
    name = _action_name(action, armature)
    meshes = _count(len(objects), "mesh", "meshes")
    return f"'{name}' frames {start}–{end}: {frames} keyed shape keys on {meshes}"


def save_blend(path: Path) -> str:
    import bpy

    try:
        bpy.ops.wm.save_as_mainfile(filepath=str(path), relative_remap=True)
    except RuntimeError as err:
        raise StepFailed(f"could not save {path}: {_operator_message(err)}") from None
    return str(path)


# --------------------------------------------------------------------------------------------- run
def run(args: argparse.Namespace) -> int:
    asset = (args.asset or default_asset()).expanduser()
    if not asset.is_file():
        print(f"error: demo asset not found: {asset}\n"
              "  pass --asset PATH, or set HYBRID_SKIN_ASSETS to the folder holding "
              f"{DEFAULT_ASSET}", file=sys.stderr)
        return 2
    output = args.output.expanduser().resolve()
    try:
        output.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        print(f"error: cannot create the output folder {output}: {err.strerror}", file=sys.stderr)
        return 1
    import bpy

    t_start = time.perf_counter()
    print(f"Hybrid Skin demo on Blender {bpy.app.version_string}: {asset.name} → {output}")
    stem = asset.stem.lower()
    blend = output / f"{stem}_demo.blend"
    progress = Progress()
    try:
        progress.run(f"Import {asset.name}", lambda: import_asset(asset))
        objects = skinned_objects()
        if not objects:
            raise StepFailed(f"{asset.name} has no mesh deformed by an Armature modifier")
        armature = armature_of(objects)
        progress.run("Skin rigid parts", lambda: skin_rigid_parts(armature))
        objects = skinned_objects()
        actions = clip_actions(armature)
        progress.run("Add Hybrid Skin", lambda: add_hybrid_skin(objects))
        with quiet():
            save_blend(blend)  # saved early: the texture bake records its files relative to it
        progress.run("Compare with Blender", lambda: compare_with_blender(objects, armature, actions))
        progress.run("Render LBS | hybrid | Auto | DQS",
                     lambda: render_pose(objects, armature, actions, output))
        done: dict = {}
        progress.run("Bake animation textures", lambda: bake_textures(armature, actions, output, stem, done))
        progress.run("Crowd page", lambda: write_crowd(output, done["bake"], asset.stem))
        progress.run("Bake shape keys", lambda: bake_shape_keys(objects, armature, actions))
        progress.run("Save", lambda: save_blend(blend))
    except StepFailed as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    print(f"\nDone in {time.perf_counter() - t_start:.0f} s. Everything is in {output}:")
    for path in sorted(p for p in output.rglob("*") if p.is_file() and not p.name.endswith(".blend1")):
        print(f"  {path.relative_to(output)}")
    print(f"Open {blend.name} in Blender with Hybrid Skin installed (sidebar ▸ Hybrid Skin: the settings).")
    if (output / "crowd.html").is_file():
        print(f"Watch the crowd: {server_line(output)}, then open http://127.0.0.1:8000/crowd.html")
    return 0


def clip_actions(armature) -> list:
    """The actions baked and compared: RobotExpressive's favourites when present, else the first few."""
    from ...animtex.scene import compatible_actions

    actions = compatible_actions(armature)
    if not actions:
        raise StepFailed(f"no action animates the bones of '{armature.name}'")
    by_name = {_action_name(a, armature): a for a in actions}
    chosen = [by_name[n] for n in TEXTURE_ACTIONS if n in by_name][:TEXTURE_ACTION_COUNT]
    return chosen or actions[:TEXTURE_ACTION_COUNT]
