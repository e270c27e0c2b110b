"""Session-wide test setup shared by core, Blender and GPU tests.

This file must not import bpy: core tests run without Blender. It runs before any test module, so before
anything imports bpy, which makes it the place to isolate Blender's user directories: the bpy module reads
``BLENDER_USER_*`` once, on first import, and installs extensions, preferences and caches there; and to choose
the GPU backend (``HYBRID_SKIN_GPU_BACKEND=vulkan``, see tests/support/gpu_backend.py).

Layout: ``tests/`` mirrors the package. ``tests/core`` (like ``hybrid_skin/core``) is numpy only and never
imports bpy; every other test runs against the installed extension zip, starting from an empty scene with
the add-on enabled (the autouse :func:`empty_scene`), through the harness in ``tests/support/blender.py``.
GPU tests carry the ``gpu`` marker and use the :func:`gpu_context` fixture.
"""

from __future__ import annotations

import importlib
import os
import shutil
import sys
import tempfile
from pathlib import Path

import pytest

from tests.support import gpu_backend

REPO_ROOT = Path(__file__).resolve().parent.parent
#: Tests of the numpy core: no Blender, no GPU, no add-on install.
PURE_TESTS = REPO_ROOT / "tests" / "core"

# Variables that would override BLENDER_USER_RESOURCES for one kind of directory, or inject extra add-ons.
_BLENDER_DIR_OVERRIDES = (
    "BLENDER_USER_CONFIG",
    "BLENDER_USER_SCRIPTS",
    "BLENDER_USER_EXTENSIONS",
    "BLENDER_USER_DATAFILES",
    "BLENDER_SYSTEM_SCRIPTS",
    "BLENDER_SYSTEM_EXTENSIONS",
)


def _isolate_blender_user_dirs() -> Path:
    """Point every Blender user directory at a fresh temporary folder for this test session."""
    if "bpy" in sys.modules:
        raise RuntimeError(
            "bpy was imported before tests/conftest.py could isolate Blender's user directories; "
            "installed extensions would leak into the real ~/.config/blender"
        )
    user_dir = Path(tempfile.mkdtemp(prefix="hybrid_skin_blender_user_"))
    for name in _BLENDER_DIR_OVERRIDES:
        os.environ.pop(name, None)
    os.environ["BLENDER_USER_RESOURCES"] = str(user_dir)
    return user_dir


BLENDER_USER_DIR = _isolate_blender_user_dirs()

#: The backend the GPU tests must run on (``gpu.platform.backend_type_get()``); asserted by the gpu_context
#: fixture, because Blender falls back to OpenGL silently when the backend asked for cannot start.
EXPECTED_GPU_BACKEND = gpu_backend.BACKEND_NAMES[gpu_backend.requested_backend()]
if gpu_backend.ENV_VAR in os.environ:
    gpu_backend.select_backend(gpu_backend.requested_backend())
elif sys.platform == "darwin":
    EXPECTED_GPU_BACKEND = "METAL"  # Blender's default there (never run: no Mac in CI)


_EXIT_STATUS = 0


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    global _EXIT_STATUS
    _EXIT_STATUS = int(exitstatus)


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config: pytest.Config) -> None:
    shutil.rmtree(BLENDER_USER_DIR, ignore_errors=True)
    bpy = sys.modules.get("bpy")
    if bpy is not None and bpy.app.version < (5, 0, 0):
        # Blender < 5.0 as a module runs its shutdown (WM_exit) only when the bpy module object is freed
        # at interpreter exit. After a glTF import (4.2) or a full session (4.4) the module outlives
        # finalization and C++ static destructors run without that shutdown, after every test finished:
        # ~SpaceType frees Python UI classes with no interpreter (segfault, 4.2) and the draw manager's
        # shader compiler waits forever for its thread (hang, 4.4). Leave before them, with pytest's status.
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(_EXIT_STATUS)


def assets_dir() -> Path:
    """Third-party test rigs (glTF): ``$HYBRID_SKIN_ASSETS``, else the repository's own ``assets/``."""
    override = os.environ.get("HYBRID_SKIN_ASSETS")
    return Path(override).resolve() if override else (REPO_ROOT / "assets").resolve()


@pytest.fixture(scope="session")
def assets() -> Path:
    """The assets folder; fails (never skips) when it is missing so lost coverage is visible."""
    path = assets_dir()
    if not path.is_dir():
        pytest.fail(f"test assets not found at {path}; set HYBRID_SKIN_ASSETS to the glTF rigs folder")
    return path


@pytest.fixture(scope="session")
def expected_gpu_backend() -> str:
    """``gpu.platform.backend_type_get()`` of this session: ``OPENGL`` unless HYBRID_SKIN_GPU_BACKEND says."""
    return EXPECTED_GPU_BACKEND


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """A test that needs the GPU context is a GPU test: ``-m gpu`` (``make test-vulkan``) selects it."""
    for item in items:
        if "gpu_context" in getattr(item, "fixturenames", ()) and item.get_closest_marker("gpu") is None:
            item.add_marker(pytest.mark.gpu)


def pytest_report_header(config: pytest.Config) -> str:
    return f"hybrid_skin: GPU tests expect the {EXPECTED_GPU_BACKEND} backend"


@pytest.fixture(scope="session")
def blender_user_dir() -> Path:
    """The temporary folder that stands in for ~/.config/blender/<version> during this session."""
    return BLENDER_USER_DIR


# ------------------------------------------------------------------------------ Blender fixtures
def _harness():
    """``tests.support.blender``, imported on first use: it imports bpy, which pure tests never need."""
    return importlib.import_module("tests.support.blender")


def _is_pure(request: pytest.FixtureRequest) -> bool:
    return Path(str(request.node.path)).resolve().is_relative_to(PURE_TESTS)


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> None:
    """Import bpy before the first Blender test module: ``bmesh`` and ``mathutils`` exist only after it."""
    if file_path.suffix == ".py" and not file_path.resolve().is_relative_to(PURE_TESTS):
        importlib.import_module("bpy")


@pytest.fixture(scope="session")
def addon_zip(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The extension zip: ``$HYBRID_SKIN_ZIP`` (set by ``make test``) or a fresh build into a temp folder."""
    return _harness().addon_zip(tmp_path_factory)


@pytest.fixture(scope="session")
def addon(addon_zip: Path):
    """The installed, enabled add-on module ``bl_ext.user_default.hybrid_skin`` (uninstalled at the end)."""
    yield from _harness().installed_addon(addon_zip)


@pytest.fixture(autouse=True)
def empty_scene(request: pytest.FixtureRequest):
    """Each Blender test starts from an empty scene with the add-on installed and enabled; pure tests
    (``tests/core``) get nothing and never import bpy."""
    if _is_pure(request):
        yield None
        return
    request.getfixturevalue("addon")
    yield from _harness().empty_scene()


@pytest.fixture(scope="session")
def gpu_context(expected_gpu_backend: str):
    """Blender's ``gpu`` module with a usable context on the backend asked for, also in background mode
    (see the harness)."""
    return _harness().gpu_context(expected_gpu_backend)


@pytest.fixture(autouse=True)
def gpu_backend_checked(request: pytest.FixtureRequest) -> None:
    """Every test marked ``gpu`` runs only after ``gpu_context`` has asserted the backend (even one that
    draws through an operator and never asks for the fixture itself)."""
    if request.node.get_closest_marker("gpu") is not None:
        request.getfixturevalue("gpu_context")
