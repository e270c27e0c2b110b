"""Damaged or foreign records a bake reads: one sentence naming the object or file, every other object
bakes, and the damaged record is left as it was (issue 35, item 5: bakes, sidecars, the command line).

Members: a bake record that is not JSON, one of the wrong shape, one saved by a newer build (a shape-key
bake over it, Clear Bake, a texture bake of its mesh); a hand-edited sidecar whose ``files`` names other
files; the command line given a .blend holding a damaged record.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import bpy
import pytest

from tests.robustness.bake_scene import activate, refused, rig, same_as, snapshot
from tests.support.scenes import make_cylinder, skin_to_chain

REPO_ROOT = Path(__file__).resolve().parents[2]
DAMAGED = {
    "not JSON": ('{"version": 1, "keys": [', "it is damaged"),
    "wrong shape": ('{"version": 1, "keys": 5, "bypassed": "x"}', "it is damaged (bypassed, keys)"),
    "newer build": ('{"version": 99, "keys": []}', "it was saved by a newer Hybrid Skin"),
}


def two_meshes():
    """The rig's cylinder and a second one with Hybrid Skin, both on one armature."""
    arm, obj = rig()
    other = make_cylinder("Other", rings=4, segments=8)
    skin_to_chain(other, arm)
    activate(other)
    assert bpy.ops.hybrid_skin.add() == {"FINISHED"}
    activate(obj)
    return arm, obj, other


@pytest.mark.parametrize("damage", list(DAMAGED))
def test_a_damaged_bake_record_is_one_sentence_and_left_as_it_was(addon, tmp_path, damage):
    text, why = DAMAGED[damage]
    arm, obj, other = two_meshes()
    obj.hybrid_skin.bake_state = text
    before = snapshot([tmp_path])
    for operator, kwargs in (
        (bpy.ops.hybrid_skin.bake_deformation, {"frame_start": 1, "frame_end": 4}),
        (bpy.ops.hybrid_skin.bake_deformation, {"target": "PC2", "filepath": str(tmp_path / "x.pc2")}),
        (bpy.ops.hybrid_skin.clear_bake, {}),
        (bpy.ops.hybrid_skin.bake_animation_texture, {"directory": str(tmp_path)}),
    ):
        message = f"'Cylinder' holds a Hybrid Skin bake whose record this build cannot read ({why})"
        said = refused(operator, message, **kwargs)
        assert "left as it was" in said
    same_as(before, [tmp_path], "after the refusals")
    assert obj.hybrid_skin.bake_state == text  # for the build that can read it
    # every other object bakes
    activate(other)
    assert bpy.ops.hybrid_skin.bake_deformation(frame_start=1, frame_end=4) == {"FINISHED"}
    assert bpy.ops.hybrid_skin.bake_animation_texture(directory=str(tmp_path)) == {"FINISHED"}
    activate(arm)
    refused(bpy.ops.hybrid_skin.bake_animation_texture, "'Cylinder' holds a Hybrid Skin bake",
            directory=str(tmp_path), file_name="all")  # fmt: skip


def test_a_hand_edited_sidecar_cannot_name_other_files_for_removal(addon, tmp_path):
    """A sidecar's ``files`` is trusted only for the names a set of its stem has: a file beside it or
    outside the folder that it names is never removed."""
    arm, obj = rig()
    folder = tmp_path / "out"
    folder.mkdir()
    bake = bpy.ops.hybrid_skin.bake_animation_texture
    assert bake(directory=str(folder), file_name="crowd") == {"FINISHED"}
    (folder / "notes.txt").write_text("mine")
    sidecar = folder / "crowd.json"
    meta = json.loads(sidecar.read_text())
    meta["files"] = {"image": "crowd.png", "sidecar": "crowd.json", "gltf": "notes.txt", "babylon": "../v"}
    (tmp_path / "v").write_text("mine too")
    sidecar.write_text(json.dumps(meta))
    assert bake(directory=str(folder), file_name="crowd") == {"FINISHED"}
    assert (folder / "notes.txt").read_text() == "mine" and (tmp_path / "v").read_text() == "mine too"


def test_the_command_line_names_the_damaged_object(addon, tmp_path):
    arm, obj, other = two_meshes()
    obj.hybrid_skin.bake_state = DAMAGED["not JSON"][0]
    blend = tmp_path / "scene.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(blend), copy=True)
    out = tmp_path / "out"

    def cli(*args):
        return subprocess.run([sys.executable, "-m", "hybrid_skin", "bake-textures", str(blend), *args,
                               "--output", str(out)], cwd=REPO_ROOT, capture_output=True, text=True,
                              timeout=300, check=False)  # fmt: skip

    failed = cli("--object", "Rig")
    assert failed.returncode == 1 and "Traceback" not in failed.stderr, failed.stderr
    (line,) = failed.stderr.strip().splitlines()
    assert line.startswith("error: 'Cylinder' holds a Hybrid Skin bake whose record this build cannot read")
    assert list(out.iterdir()) == []
    done = cli("--object", "Other")  # the other mesh bakes
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize(
    ("edit", "said"),
    [
        (lambda meta: meta.pop("image"), "is not a sidecar this add-on can read (KeyError"),
        (lambda meta: meta["clips"][0].pop("frame_count"), "does not match its texture (KeyError"),
        (lambda meta: meta["layout"].update(width="wide"), "does not match its texture (ValueError"),
    ],
    ids=["no image", "a clip without its frame count", "a width that is not a number"],
)
def test_crowd_preview_names_a_damaged_sidecar(addon, tmp_path, edit, said):
    """The last bake's sidecar, damaged after the bake: one sentence naming the file, never a traceback."""
    arm, obj = rig()
    bake = bpy.ops.hybrid_skin.bake_animation_texture
    assert bake(directory=str(tmp_path), file_name="crowd") == {"FINISHED"}
    sidecar = tmp_path / "crowd.json"
    meta = json.loads(sidecar.read_text())
    edit(meta)
    sidecar.write_text(json.dumps(meta))
    text = refused(bpy.ops.hybrid_skin.crowd_preview, said, count=4)
    assert str(sidecar) in text, text
