"""The built zip is a valid Blender extension that installs, enables and re-enables cleanly."""

from __future__ import annotations

import ast
import importlib
import importlib.util
import re
import subprocess
import sys
import zipfile
from pathlib import Path
from types import ModuleType

import bpy
import pytest

from tests.support.blender import ADDON_MODULE, BUILD_SCRIPT, REPO_ROOT, addon_enabled
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


def _source_only(name: str) -> bool:
    return any(name.startswith(f"{folder}/") for folder in build_script.SOURCE_ONLY)


def test_zip_carries_every_package_file_but_the_source_only_demo(addon_zip: Path) -> None:
    package = _source_files(REPO_ROOT / "hybrid_skin")
    names = _zip_names(addon_zip)
    missing = {name for name in package if not _source_only(name)} - names
    assert not missing, f"package files missing from the zip: {sorted(missing)}"
    source_only = {name for name in package if _source_only(name)}
    assert {"cli/demo/__init__.py", "cli/demo/crowd_page.py", "cli/demo/crowd/crowd.html"} <= source_only
    assert not source_only & names, "the demo (needs assets/, serves a page, starts a browser) is in the zip"
    assert {"cli/__init__.py", "cli/blender_command.py", "cli/textures.py"} <= names  # the farm's commands


#: Modules whose use in the extension a reviewer asks about (network, processes, browsers): none is imported
#: by anything in the zip, so the manifest needs no ``network`` permission.
REVIEWED_MODULES = {"subprocess", "socket", "http", "urllib", "webbrowser", "ftplib", "smtplib", "requests"}


def test_nothing_in_the_zip_starts_a_process_or_opens_a_connection(addon_zip: Path) -> None:
    found = {}
    with zipfile.ZipFile(addon_zip) as archive:
        for name in archive.namelist():
            if not name.endswith(".py"):
                continue
            tree = ast.parse(archive.read(name))
            nodes = list(ast.walk(tree))
            used = {a.name.split(".")[0] for n in nodes if isinstance(n, ast.Import) for a in n.names}
            used |= {n.module.split(".")[0] for n in nodes if isinstance(n, ast.ImportFrom) and n.module}
            if used & REVIEWED_MODULES:
                found[name] = sorted(used & REVIEWED_MODULES)
    assert not found, found
    # Control: the scan sees such an import where there is one (the demo's page server, left out).
    tree = ast.parse((REPO_ROOT / "hybrid_skin/cli/demo/crowd_page.py").read_text(encoding="utf-8"))
    assert {"subprocess", "http"} <= {a.name.split(".")[0] for n in ast.walk(tree)
                                      if isinstance(n, ast.Import) for a in n.names}


def test_the_licence_is_the_full_gpl_3_text_in_the_repository_and_the_zip(addon_zip: Path) -> None:
    text = (REPO_ROOT / "LICENSE").read_text(encoding="utf-8")
    assert text.split()[:6] == ["GNU", "GENERAL", "PUBLIC", "LICENSE", "Version", "3,"]
    assert "END OF TERMS AND CONDITIONS" in text and "How to Apply These Terms" in text
    assert len(text.split()) > 5000  # the whole licence, not a notice pointing at it
    with zipfile.ZipFile(addon_zip) as archive:
        assert archive.read("LICENSE") == (REPO_ROOT / "LICENSE").read_bytes()


def test_the_manifest_is_complete_for_the_extensions_platform() -> None:
    manifest = build_script.read_manifest()
    assert manifest["license"] == ["SPDX:GPL-3.0-or-later"]
    assert re.fullmatch(r"https://[^\s/]+\.[^\s]+", manifest["website"]), manifest["website"]
    assert re.fullmatch(r".+ <[^@\s]+@[^@\s]+\.[^@\s]+>", manifest["maintainer"]), manifest["maintainer"]
    assert manifest["copyright"] and all(re.match(r"\d{4}(-\d{4})? \S", c) for c in manifest["copyright"])
    tags_file = {}
    exec(build_script.blender_valid_tags().read_text(encoding="utf-8"), tags_file)  # Blender's own list
    assert set(manifest["tags"]) <= tags_file["addons"]
    assert {"Animation", "Rigging", "Bake", "Game Engine"} <= set(manifest["tags"])
    # No platform list (pure Python and GLSL): the manifest says which platforms were run instead.
    assert "platforms" not in manifest
    text = (REPO_ROOT / "blender_manifest.toml").read_text(encoding="utf-8")
    assert "What was run: Linux x64" in text and "were not run" in text
    assert set(manifest["permissions"]) == {"files"}  # no network: the test above


def test_a_release_build_refuses_the_placeholder_contact() -> None:
    manifest = build_script.read_manifest()
    if build_script.PLACEHOLDER_HOST in manifest["website"] + manifest["maintainer"]:
        with pytest.raises(build_script.BuildError, match="placeholder"):
            build_script.check_release(manifest)
    real = {**manifest, "website": "https://hybrid-skin.org/", "maintainer": "A Person <a@hybrid-skin.org>"}
    build_script.check_release(real)  # accepted
    with pytest.raises(build_script.BuildError, match="maintainer"):
        build_script.check_release({**real, "maintainer": "Nobody <x@y.example>"})


def test_the_build_finds_blenders_tooling_inside_blender_too() -> None:
    """Under a Blender binary (``blender -b --python .ci/build.py``) the script asks the running Blender
    for its scripts folder; with the bpy module imported (as here) that is the folder the build finds
    beside the module in a process that has not imported it."""
    inside = build_script.blender_scripts_dir()
    script = f"import sys; sys.path.insert(0, {str(BUILD_SCRIPT.parent)!r}); import build; " \
        "assert 'bpy' not in sys.modules; print(build.blender_scripts_dir())"
    outside = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert inside.resolve() == Path(outside.stdout.strip()).resolve()
    assert (inside / "addons_core" / "bl_pkg" / "cli" / "blender_ext.py").is_file()


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
                data = re.sub(rb"(?m)^tags = \[.*\]$", b'tags = ["Not A Blender Tag"]', data)
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
