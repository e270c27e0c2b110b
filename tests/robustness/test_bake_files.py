"""A texture bake's files are one transaction, and never replace what is not the bake's own (issue 35,
items 2 and 3).

Members of "outputs are not one transaction": an export that fails late, a Babylon.js write that breaks, a
file held open by another program (Windows' lock on a file an engine has open, simulated where it
happens: the rename), meshes placed differently, an exporter that is missing, a name too long for a file.
Members of "files that are not the bake's are replaced": two objects whose names clean to the same file
name, another object's bake under the name asked for, a JSON file the add-on did not write, an image with
no sidecar, a point cache's path holding another kind of file or another object's cache. Each is checked
against a snapshot of the folder (every file's bytes) and of the user's data, taken before: nothing
changes unless the message says so.
"""

from __future__ import annotations

import importlib
import json
import os

import addon_utils
import bpy
import pytest

from tests.robustness.bake_scene import activate, refused, rig, same_as, snapshot
from tests.support.scenes import make_cylinder, skin_to_chain
from tests.support.work import work_done

UNCHANGED = "nothing was changed: the folder and the meshes are as they were"


@pytest.fixture
def animtex(addon):
    return importlib.import_module(addon.__name__ + ".animtex.bake")


def writing(addon):
    """The installed add-on's module that writes a texture bake's files."""
    return importlib.import_module(addon.__name__ + ".animtex.writing")


def texture_bake(folder, **kwargs):
    return bpy.ops.hybrid_skin.bake_animation_texture(directory=str(folder), **kwargs)


def files(folder) -> list[str]:
    return sorted(os.listdir(folder))


# ----------------------------------------------------------------------------------- one transaction
def test_an_export_that_fails_late_leaves_the_previous_set_whole(addon, animtex, tmp_path, monkeypatch):
    """The glTF export fails after the texture is made: the previous bake's texture, sidecar and .glb, and
    the mesh data it wrote, are as they were."""
    arm, obj = rig()
    assert texture_bake(tmp_path, file_name="crowd", kind="BONE_DQ", export_gltf=True) == {"FINISHED"}
    assert files(tmp_path) == ["crowd.glb", "crowd.json", "crowd.png"]
    before = snapshot([tmp_path])

    def fails(*args, **kwargs):
        raise animtex.HybridSkinError("Blender's glTF exporter did not write the file (simulated)")

    monkeypatch.setattr(writing(addon), "write_gltf", fails)
    text = refused(texture_bake, "did not write the file (simulated)", folder=tmp_path, file_name="crowd",
                   kind="BONE_DQ", precision="EXR16", export_gltf=True)  # fmt: skip
    assert text.rstrip().endswith(UNCHANGED), text
    same_as(before, [tmp_path], "after an export that failed late")


def test_a_bug_while_writing_is_taken_back(addon, animtex, tmp_path, monkeypatch):
    """A bug in the Babylon.js write, after the image, the mesh data and the .glb: all taken back, and the
    funnel's "nothing was changed" is true."""
    arm, obj = rig()
    assert texture_bake(tmp_path, file_name="crowd", kind="BONE_MATRIX") == {"FINISHED"}
    before = snapshot([tmp_path])
    monkeypatch.setattr(writing(addon), "write_babylon", lambda *args: 1 / 0)
    text = refused(texture_bake, "ZeroDivisionError", folder=tmp_path, file_name="crowd",
                   kind="BONE_MATRIX", export_gltf=True, export_babylon=True)  # fmt: skip
    assert "nothing was changed" in text
    same_as(before, [tmp_path], "after a bug while writing")


def test_a_file_held_open_by_another_program_changes_nothing(addon, tmp_path, monkeypatch):
    """Windows refuses to replace a file an engine has open: the commit meets it before it places a new
    file, puts back what it moved, and says which file and why."""
    outputs = importlib.import_module(addon.__name__ + ".animtex.outputs")
    arm, obj = rig()
    assert texture_bake(tmp_path, file_name="crowd", export_gltf=True) == {"FINISHED"}
    before = snapshot([tmp_path])
    real = os.replace

    def locked(source, target, *args, **kwargs):
        if str(source).endswith("crowd.glb"):
            raise PermissionError(13, "Permission denied", str(source))
        return real(source, target, *args, **kwargs)

    monkeypatch.setattr(outputs.os, "replace", locked)
    text = refused(texture_bake, "Cannot replace 'crowd.glb' (Permission denied; is it open in another",
                   folder=tmp_path, file_name="crowd", precision="EXR32", export_gltf=True)  # fmt: skip
    assert UNCHANGED in text
    monkeypatch.undo()
    same_as(before, [tmp_path], "after a commit that met a locked file")


def test_meshes_placed_differently_are_refused_before_a_frame(addon, tmp_path):
    arm, obj = rig()
    other = make_cylinder("Other", rings=4, segments=8)
    skin_to_chain(other, arm)
    other.location.x = 3.0
    activate(arm)
    before = snapshot([tmp_path])
    with work_done() as work:
        refused(texture_bake, "are placed differently", folder=tmp_path, kind="BONE_DQ", export_gltf=True)
    assert work.frames == 0
    same_as(before, [tmp_path], "after a refused bake")


def test_a_missing_exporter_is_refused_before_a_frame(addon, tmp_path):
    arm, obj = rig()
    before = snapshot([tmp_path])
    addon_utils.disable("io_scene_gltf2")
    try:
        with work_done() as work:
            refused(texture_bake, "glTF exporter is not enabled", folder=tmp_path, export_gltf=True)
    finally:
        addon_utils.enable("io_scene_gltf2")
    assert work.frames == 0
    same_as(before, [tmp_path], "after a refused bake")


def test_names_are_checked_before_a_frame_and_temporary_names_never_limit_them(addon, tmp_path):
    """A Name too long for the file system is refused at once; one that fits every output (240 bytes:
    ``.babylon.json`` makes 253) bakes, though the temporary names of earlier builds would not have fit."""
    arm, obj = rig()
    before = snapshot([tmp_path])
    with work_done() as work:
        refused(texture_bake, "longer than the 255 this folder allows", folder=tmp_path, file_name="n" * 252)
    assert work.frames == 0
    same_as(before, [tmp_path], "after a refused bake")
    long = "n" * 240
    assert texture_bake(tmp_path, file_name=long, kind="BONE_DQ", export_gltf=True,
                        export_babylon=True) == {"FINISHED"}  # fmt: skip
    assert files(tmp_path) == sorted(long + e for e in (".babylon.json", ".glb", ".json", ".png"))


def test_a_bake_without_export_removes_its_previous_glb_and_says_so(addon, animtex, tmp_path):
    """The previous bake's .glb would not match the new texture: it is the bake's own, so it goes, and the
    result names it. Nothing else in the folder is touched."""
    arm, obj = rig()
    (tmp_path / "notes.txt").write_text("mine")
    assert texture_bake(tmp_path, file_name="crowd", export_gltf=True) == {"FINISHED"}
    options = animtex.BakeOptions(str(tmp_path), file_name="crowd", precision="EXR16")
    result = animtex.bake(bpy.context, obj, options)
    assert result.removed == ["crowd.glb", "crowd.png"]
    assert files(tmp_path) == ["crowd.exr", "crowd.json", "notes.txt"]
    meta = json.loads((tmp_path / "crowd.json").read_text())
    assert meta["files"] == {"image": "crowd.exr", "sidecar": "crowd.json", "gltf": None, "babylon": None}
    assert meta["source"] == {"object": obj.name, "file": bpy.data.filepath, "kind": "VERTEX"}


# -------------------------------------------------------------------------- never replace others' files
def test_names_that_clean_alike_stay_distinct(addon, tmp_path):
    arm, first = rig("Robot.001")
    second = make_cylinder("Robot_001", rings=4, segments=8)
    skin_to_chain(second, arm)
    for obj in (first, second):
        activate(obj)
        assert texture_bake(tmp_path) == {"FINISHED"}
    sidecars = [n for n in files(tmp_path) if n.endswith(".json")]
    stems = {json.loads((tmp_path / n).read_text())["source"]["object"]: n for n in sidecars}
    assert set(stems) == {"Robot.001", "Robot_001"} and stems["Robot_001"] == "Robot_001_vertex.json", stems
    assert len(files(tmp_path)) == 4


def test_another_objects_bake_is_replaced_only_when_asked(addon, tmp_path):
    arm, first = rig("Hero")
    extra = make_cylinder("Villain", rings=4, segments=8)
    skin_to_chain(extra, arm)
    assert texture_bake(tmp_path, file_name="crowd") == {"FINISHED"}
    activate(extra)
    before = snapshot([tmp_path])
    with work_done() as work:
        where = os.path.basename(bpy.data.filepath) or "an unsaved file"
        said = f"is the bake of 'Hero' from {where}"
        text = refused(texture_bake, said, folder=tmp_path, file_name="crowd")
    assert work.frames == 0 and "tick Replace Files" in text
    same_as(before, [tmp_path], "after a refused bake")
    assert texture_bake(tmp_path, file_name="crowd", replace_files=True) == {"FINISHED"}
    assert json.loads((tmp_path / "crowd.json").read_text())["source"]["object"] == "Villain"


@pytest.mark.parametrize(
    ("name", "content", "why"),
    [
        ("crowd.json", '{"scene": "my level"}', "not a sidecar Hybrid Skin wrote"),
        ("crowd.png", "a picture of mine", "no sidecar beside it"),
        ("crowd.json", "not even JSON", "not a sidecar Hybrid Skin wrote"),
    ],
)
def test_files_the_add_on_did_not_write_are_not_replaced(addon, tmp_path, name, content, why):
    arm, obj = rig()
    (tmp_path / name).write_text(content)
    before = snapshot([tmp_path])
    refused(texture_bake, why, folder=tmp_path, file_name="crowd")
    same_as(before, [tmp_path], "after a refused bake")


def test_this_objects_previous_bake_is_its_own_also_from_an_earlier_build(addon, tmp_path):
    """A sidecar written before ``source`` existed is this object's when the object's own last bake
    names it: baking again replaces it without asking."""
    arm, obj = rig()
    assert texture_bake(tmp_path, file_name="crowd") == {"FINISHED"}
    sidecar = tmp_path / "crowd.json"
    meta = json.loads(sidecar.read_text())
    del meta["source"], meta["files"]
    sidecar.write_text(json.dumps(meta))
    assert texture_bake(tmp_path, file_name="crowd", precision="PNG8") == {"FINISHED"}
    assert json.loads(sidecar.read_text())["precision"] == "PNG8"


def test_the_dialog_forgets_the_previous_objects_name(addon):
    """Blender offers an operator's last values again: not a Name (nor Replace), which belong to the
    object baked; nor the point cache bake's file. The file browser lists the cache's format only."""
    texture = bpy.ops.hybrid_skin.bake_animation_texture.get_rna_type().properties
    assert texture["file_name"].is_skip_save and texture["replace_files"].is_skip_save
    assert not texture["directory"].is_skip_save  # the folder is the project's
    cache = bpy.ops.hybrid_skin.bake_deformation.get_rna_type().properties
    assert cache["filepath"].is_skip_save and cache["replace_file"].is_skip_save
    assert cache["filter_glob"].is_hidden and cache["check_existing"].default


# ------------------------------------------------------------------------------------- point caches
@pytest.mark.parametrize("fmt", ["PC2", "MDD"])
@pytest.mark.parametrize("kind", ["text", "other format", "other object", "other vertex count"])
def test_a_point_cache_never_replaces_a_file_that_is_not_its_own(addon, tmp_path, fmt, kind):
    pointcache = importlib.import_module(addon.__name__ + ".core.pointcache")
    arm, obj = rig()
    path = tmp_path / f"x.{fmt.lower()}"
    points = len(obj.data.vertices)
    if kind == "text":
        path.write_text("my notes")
        why = "exists and is not a point cache"
    elif kind == "other format":
        other = "MDD" if fmt == "PC2" else "PC2"
        writer = pointcache.PointCacheWriter(path, other, points, 1, times=[0.0])
        writer.write([[0.0, 0.0, 0.0]] * points)
        writer.commit()
        why = f"is an {other} point cache"
    elif kind == "other object":
        twin = obj.copy()
        twin.data = obj.data.copy()
        twin.name = "Twin"
        bpy.context.scene.collection.objects.link(twin)
        twin.hybrid_skin.bake_state = ""
        mod = twin.modifiers.new("Cache", "MESH_CACHE")
        mod.cache_format, mod.filepath = fmt, str(path)
        getattr(pointcache, f"write_{fmt.lower()}")(path, [[[0.0, 0.0, 0.0]] * points], *(
            (1.0,) if fmt == "PC2" else ([0.0],)))
        activate(obj)
        why = "is the point cache of 'Twin'"
    else:
        getattr(pointcache, f"write_{fmt.lower()}")(path, [[[0.0, 0.0, 0.0]] * 3], *(
            (1.0,) if fmt == "PC2" else ([0.0],)))
        why = "is a point cache of 3 points"
    before = snapshot([tmp_path])
    kwargs = {"target": fmt, "frame_start": 1, "frame_end": 6, "filepath": str(path)}
    with work_done() as work:
        refused(bpy.ops.hybrid_skin.bake_deformation, why, **kwargs)
    assert work.frames == 0
    same_as(before, [tmp_path], "after a refused point-cache bake")
    assert bpy.ops.hybrid_skin.bake_deformation(replace_file=True, **kwargs) == {"FINISHED"}
    assert pointcache.cache_layout(path.read_bytes()) == (fmt, points, 6)


@pytest.mark.parametrize("fmt", ["PC2", "MDD"])
def test_a_cleared_cache_is_baked_again_to_its_file(addon, tmp_path, fmt):
    """Clear Bake leaves the file: the same object's next bake to it replaces it without asking."""
    arm, obj = rig()
    kwargs = {"target": fmt, "frame_start": 1, "frame_end": 6, "filepath": str(tmp_path / f"x.{fmt.lower()}")}
    assert bpy.ops.hybrid_skin.bake_deformation(**kwargs) == {"FINISHED"}
    assert bpy.ops.hybrid_skin.clear_bake() == {"FINISHED"}
    kwargs["frame_end"] = 12
    assert bpy.ops.hybrid_skin.bake_deformation(**kwargs) == {"FINISHED"}


@pytest.mark.parametrize("fmt", ["PC2", "MDD"])
def test_a_point_cache_failing_after_its_file_puts_the_previous_file_back(addon, tmp_path, monkeypatch, fmt):
    """The new file is in place and adding the Mesh Cache modifier fails (a bug): the previous file is
    back, byte for byte, and the object shows the sentence's state."""
    baker = importlib.import_module(addon.__name__ + ".bake.baker")
    arm, obj = rig()
    path = tmp_path / f"x.{fmt.lower()}"
    kwargs = {"target": fmt, "frame_start": 1, "frame_end": 6, "filepath": str(path)}
    assert bpy.ops.hybrid_skin.bake_deformation(**kwargs) == {"FINISHED"}
    assert bpy.ops.hybrid_skin.clear_bake() == {"FINISHED"}
    before = snapshot([tmp_path])
    monkeypatch.setattr(baker, "animation_time", lambda scene: 1 / 0)
    refused(bpy.ops.hybrid_skin.bake_deformation, "ZeroDivisionError", **{**kwargs, "frame_end": 12})
    same_as(before, [tmp_path], "after a point-cache bake that failed after its file")


def test_a_rebake_that_fails_while_sampling_keeps_the_previous_bake(addon, monkeypatch):
    """Shape keys: the previous bake stays whole until the new one has every frame."""
    arm, obj = rig(keys=True)
    assert bpy.ops.hybrid_skin.bake_deformation(frame_start=1, frame_end=12, frame_step=6) == {"FINISHED"}
    before = snapshot()
    baker = importlib.import_module(addon.__name__ + ".bake.baker")
    real, calls = baker.Baker.step, []

    def breaks(self):
        calls.append(1)
        if len(calls) == 5:
            raise ZeroDivisionError("simulated bug")
        return real(self)

    monkeypatch.setattr(baker.Baker, "step", breaks)
    refused(bpy.ops.hybrid_skin.bake_deformation, "ZeroDivisionError", frame_start=1, frame_end=12)
    same_as(before, what="after a re-bake that failed while sampling")
