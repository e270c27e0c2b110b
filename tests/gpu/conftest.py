"""GPU tests: the add-on's real shaders on Blender's GPU backend (Mesa llvmpipe is enough).

The fixtures are the Blender harness's own (tests/blender/conftest.py), re-exported so that these tests also
run against the installed extension zip - which is how the shader loader's installed layout
(``<package>/shaders/``) gets tested - with an empty scene per test and one GPU context per session.
"""

from __future__ import annotations

from tests.blender.conftest import addon, addon_zip, empty_scene, gpu_backend_checked, gpu_context

__all__ = ["addon", "addon_zip", "empty_scene", "gpu_backend_checked", "gpu_context"]
