"""The built zip is a valid Blender extension that installs, enables and re-enables cleanly."""

from __future__ import annotations

import importlib
import importlib.util
import sys
import zipfile
from pathlib import Path
from types import ModuleType

import bpy
import pytest

from tests.support.blender import ADDON_MODULE, REPO_ROOT, addon_enabled
from tests.support.scenes import make_chain_armature, make_cylinder, skin_to_chain

CYCLES = 20
_IGNORED_PARTS = {"__pycache__", ".pytest_cache", ".ruff_cache"}


def _load_build_script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("hybrid_skin_ci_build", REPO_ROOT / ".ci" / "build.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


build_script = _load_build_script()


def _source_files(folder: Path) -> set[str]:
    """Files under ``folder`` that belong in the package, relative and with forward slashes."""
    return {
        path.relative_to(folder).as_posix()
        for path in folder.rglob("*")
        if path.is_file()
        and not _IGNORED_PARTS.intersection(path.parts)
        and not path.name.startswith(".")
        and path.suffix != ".pyc"
    }


def _zip_names(zip_path: Path) -> set[str]:
    with zipfile.ZipFile(zip_path) as archive:
        return {name for name in archive.namelist() if not name.endswith("/")}


def _handler_counts() -> dict[str, int]:
    """Number of callbacks in every ``bpy.app.handlers`` list."""
    counts = {
        name: len(handlers)
        for name in dir(bpy.app.handlers)
        if not name.startswith("__") and isinstance(handlers := getattr(bpy.app.handlers, name), list)
    }
    assert "depsgraph_update_post" in counts and "load_post" in counts, "bpy.app.handlers lists not found"
    return counts


def test_zip_has_package_and_manifest_at_root(addon_zip: Path) -> None:
    names = _zip_names(addon_zip)
    assert "__init__.py" in names
    assert "blender_manifest.toml" in names
    with zipfile.ZipFile(addon_zip) as archive:
        assert archive.read("blender_manifest.toml") == (REPO_ROOT / "blender_manifest.toml").read_bytes()


def test_zip_carries_every_package_file(addon_zip: Path) -> None:
    missing = _source_files(REPO_ROOT / "hybrid_skin") - _zip_names(addon_zip)
    assert not missing, f"package files missing from the zip: {sorted(missing)}"


def test_zip_carries_shaders(addon_zip: Path) -> None:
    shaders = _source_files(REPO_ROOT / "shaders")
    assert any(name.endswith(".glsl") for name in shaders), "no GLSL files in the top-level shaders/ folder"
    zipped = {name.removeprefix("shaders/") for name in _zip_names(addon_zip) if name.startswith("shaders/")}
    assert zipped == shaders


def test_zip_has_no_dev_files(addon_zip: Path) -> None:
    names = _zip_names(addon_zip)
    unwanted = {
        name for name in names
        if name.split("/")[0] in {"tests", "build", "dist", "Makefile", "pyproject.toml"}
        or any(part.startswith(".") or part == "__pycache__" for part in name.split("/"))
        or name.endswith((".pyc", ".zip"))
    }
    assert not unwanted, f"dev files in the zip: {sorted(unwanted)}"


def test_blender_validator_accepts_zip(addon_zip: Path) -> None:
    build_script.validate(addon_zip)  # raises BuildError on any complaint


def test_blender_validator_rejects_a_broken_manifest(addon_zip: Path, tmp_path: Path) -> None:
    """Control for the test above: the validator as called here does reject a bad manifest."""
    broken = tmp_path / "broken.zip"
    with zipfile.ZipFile(addon_zip) as source, zipfile.ZipFile(broken, "w") as target:
        for item in source.infolist():
            data = source.read(item)
            if item.filename == "blender_manifest.toml":
                data = data.replace(b'tags = ["Animation", "Rigging"]', b'tags = ["Not A Blender Tag"]')
                assert b"Not A Blender Tag" in data
            target.writestr(item, data)
    with pytest.raises(build_script.BuildError):
        build_script.validate(broken)


def test_installed_module_is_enabled_and_importable(addon: ModuleType) -> None:
    assert addon.__name__ == ADDON_MODULE
    assert addon_enabled()
    assert ADDON_MODULE in bpy.context.preferences.addons
    assert callable(addon.register) and callable(addon.unregister)


def test_installed_module_lives_in_temporary_user_dir(addon: ModuleType, blender_user_dir: Path) -> None:
    installed = Path(addon.__file__).resolve()
    expected_dir = (blender_user_dir / "extensions" / "user_default" / "hybrid_skin").resolve()
    assert installed == expected_dir / "__init__.py"
    extensions_dir = Path(bpy.utils.user_resource("EXTENSIONS")).resolve()
    assert extensions_dir == (blender_user_dir / "extensions").resolve()
    assert not installed.is_relative_to(Path.home() / ".config" / "blender")
    assert not installed.is_relative_to(REPO_ROOT), "imported from the source tree, not the installed zip"


def test_disable_enable_cycles_leave_handlers_unchanged(addon: ModuleType) -> None:
    before = _handler_counts()
    for _ in range(CYCLES):
        bpy.ops.preferences.addon_disable(module=ADDON_MODULE)
        assert not addon_enabled(), "addon_disable left the add-on enabled"
        bpy.ops.preferences.addon_enable(module=ADDON_MODULE)
        assert addon_enabled(), "addon_enable did not enable the add-on"
    after = _handler_counts()
    changed = {name: (before[name], after.get(name)) for name in before if before[name] != after.get(name)}
    assert not changed, f"handlers changed over {CYCLES} disable/enable cycles (before, after): {changed}"
    assert after.keys() == before.keys()


def test_disable_enable_cycles_remove_every_draw_callback(addon: ModuleType) -> None:
    """Each disable removes the viewport callback it added and drops the runtime: removing that handle
    again must fail."""
    handles = []
    for _ in range(CYCLES):
        runtime = importlib.import_module(f"{ADDON_MODULE}.runtime")  # re-imported on each enable
        viewport = importlib.import_module(f"{ADDON_MODULE}.skin.viewport")
        assert viewport.is_registered() and viewport.viewport_state().draw_handle is not None
        handles.append(viewport.viewport_state().draw_handle)
        bpy.ops.preferences.addon_disable(module=ADDON_MODULE)
        assert not viewport.is_registered() and runtime.current() is None
        bpy.ops.preferences.addon_enable(module=ADDON_MODULE)
    for handle in handles:
        with pytest.raises(ValueError):
            bpy.types.SpaceView3D.draw_handler_remove(handle, "WINDOW")


def test_enabling_re_applies_at_once_and_leaves_no_timer_for_a_file_load(
    addon: ModuleType, tmp_path: Path
) -> None:
    """Enabled in a running session the add-on re-applies its display at once. Only a startup
    registration (``bpy.data`` restricted) defers that to a timer, a persistent one: a file load drops a
    pending non-persistent timer, and Blender 4.2 then crashes at exit (the bpy module never runs it)."""
    cyl = make_cylinder("Cylinder")
    skin_to_chain(cyl, make_chain_armature("Rig", [1.0, 1.0]))
    bpy.context.view_layer.objects.active = cyl
    assert bpy.ops.hybrid_skin.add(display="GPU") == {"FINISHED"} and cyl.display_type == "BOUNDS"
    bpy.ops.preferences.addon_disable(module=ADDON_MODULE)
    assert cyl.display_type == "TEXTURED"  # the user's own setting while the add-on is off
    bpy.ops.preferences.addon_enable(module=ADDON_MODULE)
    assert cyl.display_type == "BOUNDS"
    handlers = importlib.import_module(f"{ADDON_MODULE}.rig.handlers")
    assert not bpy.app.timers.is_registered(handlers._rearm_after_register)

    handlers.unregister()
    real_data = bpy.data
    bpy.data = type("RestrictData", (), {"__slots__": ()})()  # what RestrictBlend does at startup
    try:
        handlers.register()
    finally:
        bpy.data = real_data
    path = tmp_path / "saved.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(path), copy=True)
    bpy.ops.wm.open_mainfile(filepath=str(path))
    assert bpy.app.timers.is_registered(handlers._rearm_after_register)
    bpy.ops.preferences.addon_disable(module=ADDON_MODULE)
    assert not bpy.app.timers.is_registered(handlers._rearm_after_register)
    bpy.ops.preferences.addon_enable(module=ADDON_MODULE)


def test_a_failing_registration_leaves_nothing_registered(addon: ModuleType, monkeypatch) -> None:
    """A module whose register() fails: the error goes up, the modules registered before it are
    unregistered again and the runtime is dropped, so enabling again (after a fix) works."""
    bpy.ops.preferences.addon_disable(module=ADDON_MODULE)
    package = importlib.import_module(ADDON_MODULE)
    runtime = importlib.import_module(f"{ADDON_MODULE}.runtime")
    analyze_panel = importlib.import_module(f"{ADDON_MODULE}.analyze.panel")

    def broken() -> None:
        raise RuntimeError("a broken module")

    monkeypatch.setattr(analyze_panel, "register", broken)
    with pytest.raises(RuntimeError, match="a broken module"):
        package.register()
    assert runtime.current() is None
    assert not hasattr(bpy.types, "HYBRID_SKIN_OT_add") and not hasattr(bpy.types.Object, "hybrid_skin")
    monkeypatch.undo()
    bpy.ops.preferences.addon_enable(module=ADDON_MODULE)
    assert addon_enabled() and hasattr(bpy.types, "HYBRID_SKIN_OT_add")
