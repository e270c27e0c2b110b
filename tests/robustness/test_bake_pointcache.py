"""Point cache bakes play back what Hybrid Skin computed, at every frame step, and fail in sentences.

Issue 12, wrong result 7 (frame step > 1 played back wrong: the Mesh Cache reads sample
``frame · frame_scale − frame_start``, so ``frame_start`` must be ``start / step``), 16 (``//x.pc2`` in an
unsaved file), the message for a write that fails (PermissionError), and a ``//`` path that the Mesh Cache
modifier held as an absolute one (a moved project folder played the rest mesh).
"""

from __future__ import annotations

import importlib
import os
import shutil

import bpy
import numpy as np
import pytest

from tests.robustness.bake_scene import (
    activate,
    diagonal,
    evaluated,
    refused,
    rig,
    same_as,
    snapshot,
    unsaved_file,
)


@pytest.mark.parametrize("fmt", ["PC2", "MDD"])
@pytest.mark.parametrize(("start", "end", "step"), [(3, 15, 3), (1, 12, 2), (2, 11, 4)])
def test_point_cache_with_a_frame_step_plays_back_the_hybrid(addon, tmp_path, fmt, start, end, step):
    """Blender's own Mesh Cache playback at every baked frame equals the hybrid computed before."""
    arm, obj = rig()
    frames = list(range(start, end + 1, step))
    expected = {}
    for frame in frames:
        bpy.context.scene.frame_set(frame)
        expected[frame] = addon.api.deformed_positions(obj)
    diag = diagonal(expected[frames[0]])
    path = tmp_path / f"cache.{fmt.lower()}"
    assert bpy.ops.hybrid_skin.bake_deformation(
        target=fmt, frame_start=start, frame_end=end, frame_step=step, filepath=str(path)
    ) == {"FINISHED"}
    assert obj.modifiers["HybridSkin Cache"].type == "MESH_CACHE"
    assert obj.modifiers["HybridSkin Cache"].filepath == str(path)  # absolute stays absolute
    for frame in frames:
        bpy.context.scene.frame_set(frame)
        error = np.abs(evaluated(obj) - expected[frame]).max()
        assert error <= 1e-5 * diag, f"frame {frame}: {error / diag:.1%} of the bounding box"


def test_relative_cache_path_in_an_unsaved_file_is_refused(addon, tmp_path, monkeypatch):
    """``//x.pc2`` in a file never saved would land in the process's working directory."""
    monkeypatch.chdir(tmp_path)
    unsaved_file()
    arm, obj = rig()
    before = snapshot([tmp_path])
    refused(
        bpy.ops.hybrid_skin.bake_deformation, "save the file first or give an absolute path",
        target="PC2", filepath="//x.pc2",
    )
    same_as(before, [tmp_path], "after a refused bake")
    assert not os.listdir(tmp_path)


def test_relative_cache_path_in_a_saved_file_lands_next_to_it(addon, tmp_path):
    arm, obj = rig()
    bpy.ops.wm.save_as_mainfile(filepath=str(tmp_path / "scene.blend"))
    obj = bpy.data.objects["Cylinder"]
    assert bpy.ops.hybrid_skin.bake_deformation(
        target="PC2", frame_start=1, frame_end=4, filepath="//x.pc2"
    ) == {"FINISHED"}
    assert (tmp_path / "x.pc2").is_file()
    assert obj.modifiers["HybridSkin Cache"].filepath == "//x.pc2"  # relative stays relative


def _bake_relative_cache(addon, tmp_path, fmt: str) -> tuple:
    """A saved project ``proj/scene.blend`` with a ``//cache.<fmt>`` bake of frames 1–12, saved again;
    returns the project folder and, per checked frame, what Blender's Mesh Cache played there (equal to
    the hybrid computed before the bake)."""
    project = tmp_path / "proj"
    project.mkdir()
    arm, obj = rig()
    frames = [1, 4, 7, 12]
    expected = {}
    for frame in frames:
        bpy.context.scene.frame_set(frame)
        expected[frame] = addon.api.deformed_positions(obj)
    bpy.ops.wm.save_as_mainfile(filepath=str(project / "scene.blend"))
    obj = bpy.data.objects["Cylinder"]
    activate(obj)
    name = f"cache.{fmt.lower()}"
    assert bpy.ops.hybrid_skin.bake_deformation(
        target=fmt, frame_start=1, frame_end=12, filepath=f"//{name}"
    ) == {"FINISHED"}
    assert (project / name).is_file()  # written where the user asked
    assert obj.modifiers["HybridSkin Cache"].filepath == f"//{name}"
    played = {}
    for frame in frames:
        bpy.context.scene.frame_set(frame)
        played[frame] = evaluated(obj)
        assert_close(played[frame], expected[frame], f"frame {frame} before the move")
    bpy.ops.wm.save_mainfile()
    return project, played


def assert_close(ours: np.ndarray, reference: np.ndarray, what: str) -> None:
    diag = diagonal(reference)
    error = np.abs(ours - reference).max()
    assert error <= 1e-5 * diag, f"{what}: {error / diag:.2e} of the bounding box off"


def _plays_as_baked(blend, played: dict, what: str) -> None:
    bpy.ops.wm.open_mainfile(filepath=str(blend))
    obj = bpy.data.objects["Cylinder"]
    for frame, positions in played.items():
        bpy.context.scene.frame_set(frame)
        assert_close(evaluated(obj), positions, f"frame {frame} {what}")
    cache = obj.modifiers["HybridSkin Cache"]
    assert cache.filepath.startswith("//"), cache.filepath  # still relative: the folder can move again


@pytest.mark.parametrize("fmt", ["PC2", "MDD"])
def test_a_relative_cache_plays_after_the_project_folder_moves(addon, tmp_path, fmt):
    """The Mesh Cache held the absolute path: after the folder moved it found no file ("No such file")
    and the mesh dropped to its rest shape."""
    project, played = _bake_relative_cache(addon, tmp_path, fmt)
    moved = tmp_path / "moved"
    shutil.move(project, moved)
    _plays_as_baked(moved / "scene.blend", played, "after the project folder moved")


@pytest.mark.parametrize("where", ["sibling/sub", "proj/deeper"])
def test_a_relative_cache_plays_after_save_as_into_another_folder(addon, tmp_path, where):
    """Blender remaps the Mesh Cache's ``//`` path on Save As (Remap Relative, its default)."""
    _project, played = _bake_relative_cache(addon, tmp_path, "PC2")
    target = tmp_path / where
    target.mkdir(parents=True)
    bpy.ops.wm.save_as_mainfile(filepath=str(target / "scene.blend"))
    _plays_as_baked(target / "scene.blend", played, f"after Save As into {where}")


@pytest.mark.parametrize("fmt", ["PC2", "MDD"])
def test_clear_bake_removes_the_modifier_and_leaves_the_file(addon, tmp_path, fmt):
    """README: Clear Bake removes what the bake added to the file; the cache file on disk is the user's."""
    arm, obj = rig()
    bpy.context.scene.frame_set(6)
    unbaked = evaluated(obj)
    path = tmp_path / f"x.{fmt.lower()}"
    assert bpy.ops.hybrid_skin.bake_deformation(
        target=fmt, frame_start=1, frame_end=12, filepath=str(path)
    ) == {"FINISHED"}
    written = path.read_bytes()
    assert bpy.ops.hybrid_skin.clear_bake() == {"FINISHED"}
    # The Mesh Cache is gone; the (Evaluated) display is back: the user's modifier and Hybrid Skin's own.
    assert [m.name for m in obj.modifiers] == [
        "HybridSkin Rest", "Armature", "HybridSkin Keep LBS", "HybridSkin DQS", "HybridSkin Mix"
    ]
    assert not obj.hybrid_skin.bake_state
    assert path.read_bytes() == written
    assert_close(evaluated(obj), unbaked, "after Clear Bake (the scene shows what it showed before the bake)")


@pytest.mark.parametrize("fmt", ["PC2", "MDD"])
def test_a_write_that_fails_is_a_sentence_and_changes_nothing(addon, tmp_path, monkeypatch, fmt):
    """The folder looks writable but the write itself fails half-way (PermissionError: a full disk, a
    share): the frames stream to the file, so the failure comes with the third frame."""
    baker = importlib.import_module(addon.__name__ + ".bake.baker")
    writer, real, calls = baker.pointcache.PointCacheWriter, baker.pointcache.PointCacheWriter.write, []

    def fail(self, positions):
        calls.append(1)
        if len(calls) == 3:
            raise PermissionError(13, "Permission denied", str(self.path))
        real(self, positions)

    monkeypatch.setattr(writer, "write", fail)
    arm, obj = rig()
    bpy.context.scene.frame_set(5)
    before = snapshot([tmp_path])
    refused(
        bpy.ops.hybrid_skin.bake_deformation, "Permission denied",
        target=fmt, frame_start=1, frame_end=6, filepath=str(tmp_path / f"x.{fmt.lower()}"),
    )
    same_as(before, [tmp_path], "after a failed write")
    assert len(calls) == 3
    assert not obj.hybrid_skin.bake_state and "HybridSkin Cache" not in obj.modifiers
