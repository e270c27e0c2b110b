"""Drive a real browser from pytest: a local HTTP server, Debian's headless Chromium, results back as JSON.

The page (``tests/engines/pages/*.html``) reads its job from ``/data/job.json``, does its work with WebGL2
(SwiftShader: Chromium's CPU implementation, no GPU needed) and POSTs one JSON object to ``/result``:
either its results or ``{"error": message}``. Nothing leaves the machine: the server listens on
127.0.0.1 and Chromium runs with background networking, sync, updates and extensions off, in a fresh
profile folder that is deleted afterwards; its whole process group is ended when the page is done.

URL space: ``/repo/...`` is the repository (read-only: ``shaders/`` and ``tests/engines/``),
``/data/...`` a test's own folder (bakes, glTF, the job).
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

import numpy as np

REPO_ROOT = Path(__file__).resolve().parents[2]
ENGINES_DIR = Path(__file__).resolve().parent
NODE_MODULES = ENGINES_DIR / "node_modules"
SERVED_REPO_DIRS = ("shaders", "tests/engines")
CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome")
CHROMIUM_FLAGS = (
    "--headless=new",
    "--use-angle=swiftshader",
    "--enable-unsafe-swiftshader",
    "--no-sandbox",
    "--disable-gpu-sandbox",
    "--no-first-run",
    "--no-default-browser-check",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-extensions",
    "--disable-default-apps",
    "--disable-breakpad",
    "--disable-crash-reporter",
    "--metrics-recording-only",
    "--mute-audio",
    "--disable-dev-shm-usage",
    "--window-size=1280,800",
    "--enable-logging=stderr",
)


class BrowserError(RuntimeError):
    """The page failed, timed out, or the browser is missing; the message says which and why."""


def chromium() -> str:
    """Path of the Chromium binary; a clear failure when none is installed."""
    for name in CHROMIUM_NAMES:
        path = shutil.which(name)
        if path:
            return path
    raise BrowserError(
        "Chromium is not installed: `apt-get install chromium` (what .ci/run does), then `make test-engines`"
    )


#: What the pages load from the pinned npm install (tests/engines/package-lock.json).
NODE_FILES = (
    "three/build/three.module.js",
    "babylonjs/babylon.js",
    "babylonjs-loaders/babylonjs.loaders.min.js",
)


def check_node_modules() -> None:
    missing = [f for f in NODE_FILES if not (NODE_MODULES / f).is_file()]
    if missing:
        raise BrowserError(f"{missing[0]} is missing in {NODE_MODULES}: run `make test-engines` (npm ci)")


class _Handler(http.server.SimpleHTTPRequestHandler):
    server: PageServer

    def translate_path(self, path: str) -> str:
        path = path.split("?", 1)[0].split("#", 1)[0]
        if path.startswith("/repo/"):
            relative = Path(path[len("/repo/") :])
            if not any(relative.as_posix().startswith(d + "/") for d in SERVED_REPO_DIRS):
                return "/nonexistent"
            root, relative_path = REPO_ROOT, relative
        elif path.startswith("/data/"):
            root, relative_path = self.server.data_dir, Path(path[len("/data/") :])
        else:
            return "/nonexistent"
        full = (root / relative_path).resolve()
        return str(full) if full.is_relative_to(root.resolve()) else "/nonexistent"

    def end_headers(self) -> None:
        self.send_header("Cache-Control", "no-store")
        super().end_headers()

    def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
        body = self.rfile.read(int(self.headers["Content-Length"]))
        self.send_response(204)
        self.end_headers()
        if self.path == "/result":
            self.server.result = json.loads(body)
            self.server.done.set()

    def log_message(self, format: str, *args) -> None:  # noqa: A002 (http.server's signature)
        pass


class PageServer(http.server.ThreadingHTTPServer):
    """Serves the repository and ``data_dir``; :meth:`run_page` opens a page and returns what it posts."""

    def __init__(self, data_dir: Path):
        super().__init__(("127.0.0.1", 0), _Handler)
        self.data_dir = Path(data_dir)
        self.done = threading.Event()
        self.result: dict | None = None
        self._thread = threading.Thread(target=self.serve_forever, daemon=True)
        self._thread.start()

    @property
    def origin(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"

    def close(self) -> None:
        self.shutdown()
        self.server_close()

    def run_page(self, page: str, job: dict, timeout: float = 300.0) -> dict:
        """Write ``job`` to ``/data/job.json``, open ``/repo/tests/engines/pages/<page>`` in headless
        Chromium and return the JSON the page posts to ``/result`` (raises :class:`BrowserError` on an
        ``error`` entry or a timeout, with the browser's log)."""
        check_node_modules()
        (self.data_dir / "job.json").write_text(json.dumps(job), encoding="utf-8")
        self.done.clear()
        self.result = None
        url = f"{self.origin}/repo/tests/engines/pages/{page}?job=/data/job.json"
        with tempfile.TemporaryDirectory(prefix="hybrid_skin_chromium_") as profile:
            log_path = Path(profile) / "chromium.log"
            with log_path.open("wb") as log:
                proc = subprocess.Popen(
                    [chromium(), *CHROMIUM_FLAGS, f"--user-data-dir={profile}/user", url],
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    stdin=subprocess.DEVNULL,
                    start_new_session=True,  # its own process group: ended as a whole below
                )
                try:
                    finished = self.done.wait(timeout)
                finally:
                    _end_group(proc)
            if not finished:
                raise BrowserError(
                    f"{page} posted no result within {timeout:.0f} s; browser log:\n{_tail(log_path)}"
                )
        if "error" in self.result:
            raise BrowserError(f"{page} failed: {self.result['error']}")
        return self.result


def _end_group(proc: subprocess.Popen) -> None:
    """SIGTERM to Chromium's process group (the one we started), SIGKILL if it lingers."""
    for sig, wait in ((signal.SIGTERM, 10), (signal.SIGKILL, 10)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(wait)
            return
        except subprocess.TimeoutExpired:
            continue


def _tail(path: Path, lines: int = 40) -> str:
    text = path.read_text(encoding="utf-8", errors="replace").splitlines()
    return "\n".join(line for line in text[-lines:])


def floats(data: str, shape: tuple[int, ...] | None = None) -> np.ndarray:
    """A base64 little-endian float32 array posted by a page (``pages/common.js`` ``b64``)."""
    a = np.frombuffer(base64.b64decode(data), dtype="<f4")
    return a.reshape(shape) if shape is not None else a
