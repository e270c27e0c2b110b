"""Blender test harness: the add-on is tested the way a user gets it.

The zip built by ``.ci/build.py`` is installed into the temporary user directory set up by
``tests/conftest.py`` with the operator behind the Preferences "Install from Disk" button, enabled, and
imported as ``bl_ext.user_default.hybrid_skin``. Each test then starts from an empty scene with the add-on
still enabled. The fixtures that use these functions live in ``tests/conftest.py``, which imports this
module only once a Blender test runs (tests under ``tests/core`` never import bpy).
"""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import bpy
import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
BUILD_SCRIPT = REPO_ROOT / ".ci" / "build.py"
PACKAGE_ID = "hybrid_skin"
REPO_MODULE = "user_default"
ADDON_MODULE = f"bl_ext.{REPO_MODULE}.{PACKAGE_ID}"

# Data-blocks a test may create; all are removed between tests (shape keys go with their meshes).
_SCENE_DATA = (
    "objects", "meshes", "armatures", "actions", "materials", "images", "textures", "node_groups",
    "collections", "cameras", "lights", "curves", "lattices", "worlds", "texts", "cache_files",
)


def addon_enabled() -> bool:
    """Whether Blender lists the installed add-on as enabled and its module is loaded."""
    import addon_utils  # on sys.path only once bpy is imported

    _default, loaded = addon_utils.check(ADDON_MODULE)
    return loaded and ADDON_MODULE in bpy.context.preferences.addons


def user_repo_index() -> int:
    for index, repo in enumerate(bpy.context.preferences.extensions.repos):
        if repo.module == REPO_MODULE:
            return index
    raise LookupError(f"no extension repository {REPO_MODULE!r} in the preferences")


def reset_to_empty_scene() -> None:
    """Replace the scene with a fresh empty one and drop all scene data, leaving add-ons and handlers alone.

    ``wm.read_homefile`` is not used: it keeps add-ons enabled but strips every non-persistent
    ``bpy.app.handlers`` entry, which would hide handler bugs and break the handler bookkeeping tests.
    A new scene (rather than emptying the old one) also resets any properties the add-on stores on the scene.
    """
    window = bpy.context.window
    if window is not None:
        fresh = bpy.data.scenes.new("Scene")
        window.scene = fresh
    else:
        fresh = bpy.context.scene
    for scene in list(bpy.data.scenes):
        if scene != fresh:
            bpy.data.scenes.remove(scene)
    fresh.name = "Scene"
    doomed = [datablock for name in _SCENE_DATA for datablock in getattr(bpy.data, name, ())]
    if doomed:
        bpy.data.batch_remove(doomed)
    bpy.data.orphans_purge(do_recursive=True)


def addon_zip(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The extension zip: ``$HYBRID_SKIN_ZIP`` (set by ``make test``) or a fresh build into a temp folder."""
    if env_zip := os.environ.get("HYBRID_SKIN_ZIP"):
        path = Path(env_zip).resolve()
        if not path.is_file():
            pytest.fail(f"HYBRID_SKIN_ZIP={env_zip} does not exist; run `make build`")
        return path
    out = tmp_path_factory.mktemp("dist")
    result = subprocess.run(
        [sys.executable, str(BUILD_SCRIPT), "--output-dir", str(out), "--stage-dir", str(out / "stage")],
        capture_output=True, text=True, check=False,
    )
    if result.returncode != 0:
        pytest.fail(f"{BUILD_SCRIPT} failed:\n{result.stdout}\n{result.stderr}")
    return Path(result.stdout.strip().splitlines()[-1])


def installed_addon(addon_zip: Path) -> Iterator[ModuleType]:
    """Install the zip into the temporary ``user_default`` repository, enable it and yield its module.

    A caller that finds the add-on already enabled neither installs nor removes it.
    """
    if addon_enabled():
        yield importlib.import_module(ADDON_MODULE)
        return
    result = bpy.ops.extensions.package_install_files(
        filepath=str(addon_zip), repo=REPO_MODULE, enable_on_install=True,
    )
    assert result == {"FINISHED"}, f"package_install_files returned {result}"
    assert addon_enabled(), f"{ADDON_MODULE} was installed but is not enabled"
    yield importlib.import_module(ADDON_MODULE)

    if addon_enabled():
        bpy.ops.preferences.addon_disable(module=ADDON_MODULE)
    bpy.ops.extensions.package_uninstall(repo_index=user_repo_index(), pkg_id=PACKAGE_ID)


def empty_scene() -> Iterator[bpy.types.Scene]:
    """An empty scene for one test, with the add-on (installed by the caller) enabled before and after."""
    reset_to_empty_scene()
    yield bpy.context.scene
    if not addon_enabled():  # a test that disables the add-on must not take the rest of the session with it
        bpy.ops.preferences.addon_enable(module=ADDON_MODULE)


def gpu_context(expected_gpu_backend: str) -> ModuleType:
    """Make Blender's ``gpu`` module usable in background mode and return it, on the backend asked for.

    The bpy module creates its GPU context lazily, on the first render; one tiny Workbench render of a
    throwaway scene does it (Mesa's llvmpipe or lavapipe is enough). Offscreen buffers, shaders and batches
    work after. Blender falls back to OpenGL without a word when Vulkan cannot start, so the backend is
    asserted here, once per session, before any GPU test runs (tests/support/gpu_backend.py selects it).
    """
    import gpu

    scene = bpy.data.scenes.new("gpu_context_init")
    camera = bpy.data.objects.new("gpu_context_camera", bpy.data.cameras.new("gpu_context_camera"))
    scene.collection.objects.link(camera)
    scene.camera = camera
    scene.render.engine = "BLENDER_WORKBENCH"
    scene.render.resolution_x = scene.render.resolution_y = 8
    scene.render.resolution_percentage = 100
    try:
        bpy.ops.render.render(scene=scene.name)
    finally:
        camera_data = camera.data
        bpy.data.objects.remove(camera)
        bpy.data.cameras.remove(camera_data)
        bpy.data.scenes.remove(scene)
    try:
        gpu.types.GPUOffScreen(4, 4, format="RGBA32F").free()
    except Exception as ex:  # any backend failure means the GPU tests cannot run
        pytest.fail(f"no usable GPU context after a Workbench render: {type(ex).__name__}: {ex}")
    backend = gpu.platform.backend_type_get()
    if backend != expected_gpu_backend:
        pytest.fail(
            f"the GPU tests asked for the {expected_gpu_backend} backend but Blender runs {backend} "
            f"({gpu.platform.renderer_get()}); Blender falls back silently when a backend cannot start"
        )
    return gpu
