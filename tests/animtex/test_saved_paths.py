"""The texture bake's file paths follow the .blend as Blender's own paths do: a moved project folder, Save As
into another folder, Save Copy, and a Save As that fails.

The bake stores its files relative to the saved .blend (``//tex/…``) in a summary the panels and the Crowd
Preview read. Blender remaps its own relative paths on Save As (Remap Relative, on by default) but never
an add-on's: a summary kept as ``//tex/…`` after a Save As into ``other/sub/`` named a file that is not
there, and the Crowd Preview said "no animation texture bake".
"""

from __future__ import annotations

import importlib
import json
import math
import shutil
from pathlib import Path

import bpy
import pytest

from tests.support.scenes import make_chain_armature, make_cylinder, skin_to_chain


@pytest.fixture(scope="module")
def summaries(addon):
    return importlib.import_module(addon.__name__ + ".animtex.summary")


def baked_project(tmp_path: Path) -> tuple[Path, dict[str, bytes]]:
    """``proj/scene.blend`` with a keyed two-bone character baked (BONE_DQ) into ``//tex/`` and saved again;
    the project folder and the bytes of each file the bake wrote, by name."""
    project = tmp_path / "proj"
    (project / "tex").mkdir(parents=True)
    arm = make_chain_armature("Rig", [1.0, 1.0])
    obj = make_cylinder("Cylinder", rings=8, segments=12)
    skin_to_chain(obj, arm)
    bpy.context.view_layer.objects.active = obj
    assert bpy.ops.hybrid_skin.add() == {"FINISHED"}
    pb = arm.pose.bones["Bone1"]
    pb.rotation_mode = "XYZ"
    arm.animation_data_create()
    arm.animation_data.action = bpy.data.actions.new("Bend")
    for frame, angle in ((1, 0), (9, 90)):
        pb.rotation_euler = (math.radians(angle), 0.0, 0.0)
        pb.keyframe_insert("rotation_euler", frame=frame)
    bpy.context.view_layer.objects.active = arm
    bpy.ops.wm.save_as_mainfile(filepath=str(project / "scene.blend"))
    assert bpy.ops.hybrid_skin.bake_animation_texture(directory="//tex/", kind="BONE_DQ") == {"FINISHED"}
    bpy.ops.wm.save_mainfile()
    written = {p.name: p.read_bytes() for p in (project / "tex").iterdir()}
    assert sorted(written) == ["Rig_bone_dq.json", "Rig_bone_dq.png"], sorted(written)
    return project, written


def stored(obj) -> dict:
    """The summary's paths as stored in the file."""
    info = json.loads(obj["_hybrid_skin_animtex"])
    return {key: info[key] for key in ("image", "sidecar")}


def assert_finds(summaries, written: dict[str, bytes], folder: Path) -> None:
    """The open file's summary (what the panels and the Crowd Preview read) names the files under
    ``folder``, which exist and hold the baked bytes; its stored paths stay relative to the .blend."""
    arm = bpy.data.objects["Rig"]
    assert all(path.startswith("//") for path in stored(arm).values()), stored(arm)
    info = summaries.last_summary(arm)
    for key, name in (("image", "Rig_bone_dq.png"), ("sidecar", "Rig_bone_dq.json")):
        path = Path(getattr(info, key))
        assert path.is_file(), f"{key}: {path} (stored {stored(arm)[key]}) is missing"
        assert path.resolve() == (folder / name).resolve()
        assert path.read_bytes() == written[name]


@pytest.mark.parametrize("where", ["other/sub", "proj/deeper/still", "sibling", "."])
def test_save_as_into_another_folder_keeps_finding_the_files(addon, summaries, tmp_path, where):
    project, written = baked_project(tmp_path)
    target = (tmp_path / where / "scene_b.blend").resolve()
    target.parent.mkdir(parents=True, exist_ok=True)
    bpy.ops.wm.save_as_mainfile(filepath=str(target))  # relative_remap=True, Blender's default
    assert_finds(summaries, written, project / "tex")  # in the open file at once
    bpy.ops.wm.open_mainfile(filepath=str(target))
    assert_finds(summaries, written, project / "tex")  # and in the file saved there


def test_moving_the_whole_folder_finds_the_moved_files(addon, summaries, tmp_path):
    project, written = baked_project(tmp_path)
    moved = tmp_path / "moved"
    shutil.move(project, moved)
    bpy.ops.wm.open_mainfile(filepath=str(moved / "scene.blend"))
    assert_finds(summaries, written, moved / "tex")


def test_save_as_and_then_moving_that_folder(addon, summaries, tmp_path):
    """Save As into a folder beside the textures, then move both together: found relative to the new file."""
    project, written = baked_project(tmp_path)
    target = project / "shots" / "scene_b.blend"
    target.parent.mkdir()
    bpy.ops.wm.save_as_mainfile(filepath=str(target))
    moved = tmp_path / "moved"
    shutil.move(project, moved)
    bpy.ops.wm.open_mainfile(filepath=str(moved / "shots" / "scene_b.blend"))
    assert_finds(summaries, written, moved / "tex")


def test_save_copy_leaves_the_open_file_as_it_was(addon, summaries, tmp_path):
    """A copy is written for the new folder; the file still open is the old one, its paths unchanged."""
    project, written = baked_project(tmp_path)
    before = stored(bpy.data.objects["Rig"])
    copy = tmp_path / "other" / "copy.blend"
    copy.parent.mkdir()
    bpy.ops.wm.save_as_mainfile(filepath=str(copy), copy=True)
    assert bpy.data.filepath == str(project / "scene.blend")
    assert stored(bpy.data.objects["Rig"]) == before
    assert_finds(summaries, written, project / "tex")
    bpy.ops.wm.open_mainfile(filepath=str(copy))
    assert_finds(summaries, written, project / "tex")


def test_a_save_as_that_fails_changes_no_path(addon, summaries, tmp_path):
    project, written = baked_project(tmp_path)
    before = stored(bpy.data.objects["Rig"])
    (tmp_path / "a_file").write_text("")
    with pytest.raises(RuntimeError, match="Cannot open file"):
        bpy.ops.wm.save_as_mainfile(filepath=str(tmp_path / "a_file" / "scene_b.blend"))
    assert bpy.data.filepath == str(project / "scene.blend")
    assert stored(bpy.data.objects["Rig"]) == before
    assert_finds(summaries, written, project / "tex")


def test_save_as_without_remap_still_names_the_baked_files(addon, summaries, tmp_path):
    """Blender does not tell add-ons whether Remap Relative is on (save handlers get the new path only):
    the bake's paths follow the file either way, so they keep naming the files the bake wrote."""
    project, written = baked_project(tmp_path)
    target = tmp_path / "other" / "scene_b.blend"
    target.parent.mkdir()
    bpy.ops.wm.save_as_mainfile(filepath=str(target), relative_remap=False)
    bpy.ops.wm.open_mainfile(filepath=str(target))
    assert_finds(summaries, written, project / "tex")


def test_the_crowd_preview_reads_the_files_after_save_as(gpu_context, addon, summaries, tmp_path):
    project, written = baked_project(tmp_path)
    target = tmp_path / "other" / "sub" / "scene_b.blend"
    target.parent.mkdir(parents=True)
    bpy.ops.wm.save_as_mainfile(filepath=str(target))
    bpy.ops.wm.open_mainfile(filepath=str(target))
    crowd = importlib.import_module(addon.__name__ + ".animtex.crowd")
    preview = crowd.preview_for(bpy.data.objects["Rig"], bpy.context.scene, count=4)
    try:
        baked = json.loads(written["Rig_bone_dq.json"])
        assert preview.count == 4 and preview.kind.value == baked["kind"] == "BONE_DQ"
        # the baked texture, uploaded: its size is the sidecar's layout
        assert (preview.animation.width, preview.animation.height) == (
            baked["layout"]["width"], baked["layout"]["height"]
        )
    finally:
        preview.free()
    assert_finds(summaries, written, project / "tex")


def test_a_linked_rig_finds_its_librarys_files(addon, summaries, tmp_path):
    """A rig linked from a library keeps the library's summary: its ``//`` paths are relative to the
    library's folder, not to the file that links it (they named files beside the linking file)."""
    project, written = baked_project(tmp_path)
    shot = tmp_path / "shots" / "s010"
    shot.mkdir(parents=True)
    bpy.ops.wm.read_homefile(use_empty=True)
    bpy.ops.wm.save_as_mainfile(filepath=str(shot / "shot.blend"))
    with bpy.data.libraries.load(str(project / "scene.blend"), link=True, relative=True) as (source, target):
        target.objects = ["Rig"]
    (arm,) = target.objects
    assert arm.library is not None
    info = summaries.last_summary(arm)
    for key, name in (("image", "Rig_bone_dq.png"), ("sidecar", "Rig_bone_dq.json")):
        path = Path(getattr(info, key))
        assert path.resolve() == (project / "tex" / name).resolve(), path
        assert path.read_bytes() == written[name]
