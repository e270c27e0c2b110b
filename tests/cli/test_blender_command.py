"""``blender -b scene.blend --command hybrid_skin …``: the farm's way in, through the Blender binary.

The bpy module has no ``--command``, so these tests do what Blender does for it: the registration is
checked in Blender's own command table (registering the id again is refused with Blender's duplicate
warning while the add-on is enabled, and accepted once it is disabled), and the registered function is
called as Blender's ``--command`` calls it: with a list of the arguments after the id, in a session where
the file named before ``--command`` is open; its int return is Blender's exit status. What it prints and
writes is compared with ``python -m hybrid_skin`` on the same file: same files, exit codes and error lines.
"""

from __future__ import annotations

import importlib
import json
import math
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import bpy
import pytest

from tests.support.blender import ADDON_MODULE
from tests.support.scenes import make_chain_armature, make_cylinder, skin_to_chain

REPO_ROOT = Path(__file__).resolve().parents[2]
COMMAND_ID = "hybrid_skin"
DUPLICATE = f'registered duplicate command "{COMMAND_ID}"'


@pytest.fixture
def command(addon):
    return importlib.import_module(f"{addon.__name__}.cli.blender_command")


def is_registered(capfd) -> bool:
    """Whether Blender's command table holds ``hybrid_skin``: Blender warns (on stderr, from C) when an id
    is registered twice. The probe is taken out again either way."""
    capfd.readouterr()
    probe = bpy.utils.register_cli_command(COMMAND_ID, lambda argv: 0)
    bpy.utils.unregister_cli_command(probe)
    return DUPLICATE in capfd.readouterr().err


def as_blender_runs_it(command, capfd, *argv: str) -> tuple[int, str, str]:
    """The registered function called as Blender's ``--command`` calls it: a list of str in, an int out."""
    capfd.readouterr()
    code = command.execute(list(argv))
    assert type(code) is int, f"Blender exits with the int a command returns; got {code!r}"
    out, err = capfd.readouterr()
    return code, out, err


def python_m(*argv: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "hybrid_skin", *argv],
        cwd=REPO_ROOT, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip


def saved_bend(tmp_path: Path) -> tuple[str, Path]:
    """A tube on two bones, ``Bone1`` keyed from rest (frame 1) to bent and twisted (frame 3), saved."""
    arm = make_chain_armature("Rig", [1.0, 1.0])
    skin_to_chain(make_cylinder("Tube", rings=8, segments=8), arm)
    bone = arm.pose.bones["Bone1"]
    bone.rotation_mode = "XYZ"
    for frame, angles in ((1, (0, 0, 0)), (3, (80, 0, 60))):
        bone.rotation_euler = [math.radians(a) for a in angles]
        bone.keyframe_insert("rotation_euler", frame=frame)
    blend = tmp_path / "tube.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(blend), copy=True)
    return arm.animation_data.action.name, blend


def error_lines(text: str) -> list[str]:
    """The ``error:`` lines; argparse's (``<prog>: error: …``) without the program's name, which differs."""
    return [line[line.index("error: "):] for line in text.splitlines() if "error: " in line]


def test_the_add_on_registers_the_command_and_unregister_removes_it(command, capfd, monkeypatch):
    assert is_registered(capfd)
    handle = command._state().handle
    assert handle is not None
    bpy.ops.preferences.addon_disable(module=ADDON_MODULE)
    registered = []
    real = bpy.utils.register_cli_command

    def spy(command_id, execute):  # what enabling hands Blender, passed on to Blender unchanged
        registered.append((command_id, execute))
        return real(command_id, execute)

    try:
        assert not is_registered(capfd), "the command outlived the add-on"
        with pytest.raises(ValueError, match="already been removed"):  # Blender's own bookkeeping agrees
            bpy.utils.unregister_cli_command(handle)
        monkeypatch.setattr(bpy.utils, "register_cli_command", spy)
    finally:
        bpy.ops.preferences.addon_enable(module=ADDON_MODULE)
    monkeypatch.undo()
    assert is_registered(capfd)
    ((command_id, execute),) = registered
    fresh = importlib.import_module(f"{ADDON_MODULE}.cli.blender_command")  # re-imported on enable
    assert command_id == COMMAND_ID and execute is fresh.execute  # the function the other tests call
    capfd.readouterr()
    assert execute(["--help"]) == 0 and "bake-textures" in capfd.readouterr().out


def test_the_farm_command_bakes_the_open_file_as_python_m_does(command, capfd, tmp_path):
    action, blend = saved_bend(tmp_path)
    flags = ["--object", "Rig", "--actions", action, "--kind", "BONE_DQ", "--name", "tube"]
    bpy.ops.wm.open_mainfile(filepath=str(blend), load_ui=False)  # `blender -b tube.blend`
    before = blend.read_bytes()
    code, out, err = as_blender_runs_it(
        command, capfd, "bake-textures", *flags, "--output", str(tmp_path / "b")
    )
    assert code == 0, err
    reference = python_m("bake-textures", str(blend), *flags, "--output", str(tmp_path / "p"))
    assert reference.returncode == 0, reference.stderr
    assert blend.read_bytes() == before  # neither way touched the file (no --save)
    written = sorted(p.name for p in (tmp_path / "b").iterdir())
    assert written == sorted(p.name for p in (tmp_path / "p").iterdir()) and "tube.json" in written
    assert (tmp_path / "b" / "tube.png").read_bytes() == (tmp_path / "p" / "tube.png").read_bytes()
    ours, theirs = (json.loads((tmp_path / d / "tube.json").read_text()) for d in ("b", "p"))
    assert ours["clips"] == theirs["clips"] and ours["error_report"] == theirs["error_report"]
    # The printout: the same lines, but for the folder each wrote to.
    assert out.replace(str(tmp_path / "b"), "OUT") == reference.stdout.replace(str(tmp_path / "p"), "OUT")


def test_exit_codes_and_error_lines_match_python_m(command, capfd, tmp_path):
    _action, blend = saved_bend(tmp_path)
    empty = tmp_path / "empty"
    cases = [  # (arguments after the .blend, exit code)
        (["--object", "Ghost", "--output", str(empty)], 1),
        (["--object", "Rig", "--actions", "Nope", "--output", str(empty)], 1),
        (["--object", "Rig", "--tolerance", "-1", "--output", str(empty)], 1),
        (["--object", "Rig", "--kind", "SPLINE", "--output", str(empty)], 2),  # argparse: a bad choice
    ]
    for args, want in cases:
        bpy.ops.wm.open_mainfile(filepath=str(blend), load_ui=False)
        code, _out, err = as_blender_runs_it(command, capfd, "bake-textures", *args)
        reference = python_m("bake-textures", str(blend), *args)
        assert (code, reference.returncode) == (want, want), (args, err, reference.stderr)
        assert "Traceback" not in err + reference.stderr
        ours, theirs = error_lines(err), error_lines(reference.stderr)
        assert len(ours) == 1 and ours == theirs, (ours, theirs)
    missing = str(tmp_path / "missing.blend")
    code, _out, err = as_blender_runs_it(
        command, capfd, "bake-textures", missing, "--object", "x", "--output", "o"
    )
    assert code == 2 and error_lines(err) == [f"error: no such .blend file: {missing}"]


def test_without_an_open_file_help_and_the_source_only_demo(command, capfd, monkeypatch):
    # `blender -b --command …` with no file: what bpy.data says then (an earlier test may have opened one,
    # and loading the start-up file would drop every other test's handlers).
    monkeypatch.setattr(bpy, "data", SimpleNamespace(filepath="", is_dirty=False))
    code, _out, err = as_blender_runs_it(command, capfd, "bake-textures", "--object", "Rig", "--output", "o")
    assert code == 2 and error_lines(err) == [
        "error: no .blend file: name one, or open one (blender -b scene.blend --command ...)"
    ]
    monkeypatch.undo()
    code, out, _err = as_blender_runs_it(command, capfd, "--help")
    assert code == 0 and out.startswith("usage: blender -b scene.blend --command hybrid_skin")
    assert "bake-textures" in out and "demo" not in out  # the demo starts Blender afresh: never offered here
    code, _out, err = as_blender_runs_it(command, capfd, "demo")
    assert code == 2 and "invalid choice: 'demo'" in err
