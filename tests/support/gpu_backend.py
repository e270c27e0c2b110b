"""Choose the GPU backend of the bpy module for a test session (tests only, never the add-on).

Blender's full binary takes ``--gpu-backend vulkan``; the bpy module reads no command line and starts from
factory preferences, so ``preferences.system.gpu_backend`` changes nothing. What ``--gpu-backend`` calls is
``GPU_backend_type_selection_set_override(GPUBackendType)``. It is not exported, but the bpy wheels keep
their symbol table: ``nm`` gives its address relative to ``PyInit_bpy`` (exported), so loading the module's
shared object with ctypes before ``import bpy`` (the import then reuses the same loaded object) and calling
that address selects the backend, exactly as the command-line option does.

Blender falls back to OpenGL silently when the backend asked for cannot start; the GPU test fixtures assert
``gpu.platform.backend_type_get()`` for that reason (tests/support/blender.py).
"""

from __future__ import annotations

import ctypes
import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path

#: ``HYBRID_SKIN_GPU_BACKEND`` values and Blender's ``GPUBackendType`` bits (GPU_platform_backend_enum.hh).
BACKENDS = {"opengl": 1 << 0, "metal": 1 << 1, "vulkan": 1 << 3}
#: What ``gpu.platform.backend_type_get()`` answers for each.
BACKEND_NAMES = {"opengl": "OPENGL", "metal": "METAL", "vulkan": "VULKAN"}
ENV_VAR = "HYBRID_SKIN_GPU_BACKEND"
OVERRIDE_SYMBOL = "GPU_backend_type_selection_set_override"
ANCHOR_SYMBOL = "PyInit_bpy"


class GPUBackendError(RuntimeError):
    """The backend asked for cannot be selected; the message says why."""


def requested_backend() -> str:
    """The backend this session asks for: ``$HYBRID_SKIN_GPU_BACKEND`` (lower case), default ``opengl``."""
    value = os.environ.get(ENV_VAR, "opengl").strip().lower() or "opengl"
    if value not in BACKENDS:
        raise GPUBackendError(f"{ENV_VAR}={value!r} is not one of {sorted(BACKENDS)}")
    return value


def bpy_shared_object() -> Path:
    """The bpy module's shared object (``bpy/__init__.so`` in the wheels), found without importing it."""
    spec = importlib.util.find_spec("bpy")
    if spec is None or spec.origin is None or not spec.origin.endswith((".so", ".pyd", ".dylib")):
        raise GPUBackendError(f"the bpy module is not installed as a shared object (spec: {spec})")
    return Path(spec.origin)


def symbol_offsets(library: Path) -> tuple[int, int]:
    """Addresses of ``PyInit_bpy`` and of the backend override in ``library``'s symbol table (``nm``)."""
    nm = shutil.which("nm")
    if nm is None:
        raise GPUBackendError("`nm` is needed to select a GPU backend in tests; install binutils")
    result = subprocess.run([nm, "--defined-only", str(library)], capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise GPUBackendError(f"nm failed on {library}: {result.stderr.strip()}")
    anchor = override = None
    for line in result.stdout.splitlines():
        parts = line.split()
        if len(parts) != 3 or parts[1] not in "tT":
            continue
        address, _kind, name = parts
        if name == ANCHOR_SYMBOL:
            anchor = int(address, 16)
        elif OVERRIDE_SYMBOL in name:  # C++-mangled, and namespaced in newer releases
            if override is not None:
                raise GPUBackendError(f"{library} has more than one {OVERRIDE_SYMBOL} symbol")
            override = int(address, 16)
    if anchor is None or override is None:
        found = {ANCHOR_SYMBOL: anchor, OVERRIDE_SYMBOL: override}
        missing = [name for name, address in found.items() if address is None]
        raise GPUBackendError(
            f"{library} has no symbol {' or '.join(missing)} (a stripped build?): the GPU backend cannot be "
            "selected, and Blender would silently run its default"
        )
    return anchor, override


def select_backend(backend: str) -> None:
    """Make the bpy module start on ``backend`` (``"vulkan"`` …); call before anything imports bpy."""
    if "bpy" in sys.modules:
        raise GPUBackendError("bpy is already imported: the GPU backend must be chosen before `import bpy`")
    library = bpy_shared_object()
    anchor, override = symbol_offsets(library)
    loaded = ctypes.CDLL(str(library))
    address = ctypes.cast(loaded[ANCHOR_SYMBOL], ctypes.c_void_p).value + (override - anchor)
    set_override = ctypes.CFUNCTYPE(None, ctypes.c_int)(address)
    set_override(BACKENDS[backend])
