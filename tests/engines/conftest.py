"""Engine tests: the three.js runtime in headless Chromium and the engine shader ports vs Blender and numpy.

Run by ``make test-engines`` (which installs three.js with ``npm ci`` first); ``make test`` leaves this folder
out (pyproject ``norecursedirs``) because it needs Chromium, node and the shader compilers. The Blender
harness's fixtures come from tests/conftest.py: the add-on is installed from the built zip and every test
starts from an empty scene, as everywhere outside tests/core.
"""

from __future__ import annotations

import pytest

from tests.engines.browser import PageServer

__all__ = ["page_server"]


@pytest.fixture(scope="module")
def page_server(tmp_path_factory):
    """A local HTTP server for one test module; its ``data_dir`` is the module's own temporary folder."""
    server = PageServer(tmp_path_factory.mktemp("web"))
    yield server
    server.close()
