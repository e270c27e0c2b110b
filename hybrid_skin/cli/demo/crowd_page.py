"""The demo's crowd page: its texture bake played by the shipped three.js runtime, in a browser, offline.

:func:`write_crowd_page` puts beside the demo's files ``crowd.html`` and ``crowd.js`` (from ``crowd/`` beside
this module), ``crowd.json`` (what to play and where the camera is), the runtime
(``hybrid_skin_animtex.js``) with the GLSL it compiles (``shaders/``), and the few three.js files it imports
(``three/``, with three's licence), copied from the npm install pinned in ``tests/engines/package-lock.json``
(``make demo`` runs ``npm ci`` there). Pages that fetch files cannot be opened from disk (browsers refuse
``fetch`` of ``file://``), so the demo prints a one-line local server. :func:`screenshot` serves the folder on
127.0.0.1, opens the page in headless Chromium with ``?screenshot``, and writes the PNG the page posts back.
"""

from __future__ import annotations

import base64
import http.server
import json
import os
import shutil
import signal
import subprocess
import tempfile
import threading
from pathlib import Path

__all__ = ["THREE_FILES", "find_chromium", "find_three", "screenshot", "write_crowd_page"]

#: What the page imports from three (module build, loaders and their helpers) and its licence.
THREE_FILES = (
    "LICENSE",
    "build/three.module.js",
    "build/three.core.js",
    "examples/jsm/loaders/GLTFLoader.js",
    "examples/jsm/loaders/EXRLoader.js",
    "examples/jsm/libs/fflate.module.js",
    "examples/jsm/utils/BufferGeometryUtils.js",
    "examples/jsm/utils/SkeletonUtils.js",
)
RUNTIME_SHADERS = (
    "animtex_vertex.glsl", "dual_quaternion_lib.glsl", "hybrid_skin_round.glsl", "animtex_bone.glsl"
)
CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome")
CHROMIUM_FLAGS = (
    "--headless=new", "--use-angle=swiftshader", "--enable-unsafe-swiftshader", "--no-sandbox",
    "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--no-first-run",
    "--disable-sync", "--disable-extensions", "--mute-audio", "--window-size=960,540",
)  # fmt: skip
WIDTH, HEIGHT = 960, 540


def _package_root() -> Path:
    return Path(__file__).resolve().parents[2]


def find_three() -> Path | None:
    """The pinned three.js npm install (``tests/engines/node_modules/three``), or ``None``."""
    three = _package_root().parent / "tests" / "engines" / "node_modules" / "three"
    return three if all((three / f).is_file() for f in THREE_FILES) else None


def _shaders() -> Path:
    package = _package_root()
    return next(p for p in (package / "shaders", package.parent / "shaders") if p.is_dir())


def write_crowd_page(output: Path, three: Path, sidecar: Path, glb: Path, title: str, height: float) -> Path:
    """``crowd.html`` (+ ``crowd.js``, the runtime, its GLSL and three's files) in ``output``, playing the
    bake ``sidecar`` / ``glb`` (both under ``output``) on a grid of instances; ``height``: the character's
    height in scene units (spacing and camera)."""
    for name in THREE_FILES:
        target = output / "three" / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(three / name, target)
    shaders = _shaders()
    for runtime in sorted((shaders / "engines" / "three").glob("*.js")):  # the runtime's modules
        shutil.copyfile(runtime, output / runtime.name)
    (output / "shaders").mkdir(exist_ok=True)
    for name in RUNTIME_SHADERS:
        shutil.copyfile(shaders / name, output / "shaders" / name)
    for name in ("crowd.html", "crowd.js"):
        shutil.copyfile(Path(__file__).with_name("crowd") / name, output / name)
    settings = {
        "title": title,
        "sidecar": sidecar.relative_to(output).as_posix(),
        "gltf": glb.relative_to(output).as_posix(),
        "rows": 4,
        "columns": 6,
        "spacing": 0.6 * height,
        "time": 1.3,
        "clay": 0xC8CCD6,
        "width": WIDTH,
        "height": HEIGHT,
        "camera": [0.8 * height, 1.3 * height, 3.4 * height],
        "target": [0.0, 0.6 * height, -1.4 * height],
    }
    (output / "crowd.json").write_text(json.dumps(settings, indent=1), encoding="utf-8")
    return output / "crowd.html"


def find_chromium() -> str | None:
    return next((path for name in CHROMIUM_NAMES if (path := shutil.which(name))), None)


class _Handler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args) -> None:  # noqa: A002 (http.server's signature)
        pass

    def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
        body = self.rfile.read(int(self.headers["Content-Length"]))
        self.send_response(204)
        self.end_headers()
        if self.path == "/screenshot":
            self.server.png = base64.b64decode(body)  # type: ignore[attr-defined]
            self.server.done.set()  # type: ignore[attr-defined]
        elif self.path == "/error":
            self.server.error = body.decode("utf-8", "replace").strip()  # type: ignore[attr-defined]
            self.server.done.set()  # type: ignore[attr-defined]


def screenshot(chromium: str, page: Path, target: Path, timeout: float = 60.0) -> None:
    """Open ``page`` (served from its folder on 127.0.0.1) in headless ``chromium`` and write the PNG it
    renders to ``target``; ``RuntimeError`` with the reason when no picture comes back."""

    def handler(*args, **kwargs):
        return _Handler(*args, directory=str(page.parent), **kwargs)

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.done, server.png, server.error = threading.Event(), None, None  # type: ignore[attr-defined]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{server.server_address[1]}/{page.name}?screenshot"
    try:
        with tempfile.TemporaryDirectory(prefix="hybrid_skin_demo_chromium_") as profile:
            proc = subprocess.Popen(
                [chromium, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", url],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL,
                start_new_session=True,
            )  # fmt: skip
            try:
                finished = server.done.wait(timeout)  # type: ignore[attr-defined]
            finally:
                for sig in (signal.SIGTERM, signal.SIGKILL):
                    try:
                        os.killpg(proc.pid, sig)
                        proc.wait(5)
                        break
                    except (ProcessLookupError, subprocess.TimeoutExpired):
                        continue
        if not finished:
            raise RuntimeError(f"the page drew nothing within {timeout:.0f} s")
        if server.png is None:  # type: ignore[attr-defined]
            raise RuntimeError(f"the page failed: {server.error}")  # type: ignore[attr-defined]
        target.write_bytes(server.png)  # type: ignore[attr-defined]
    finally:
        server.shutdown()
        server.server_close()
