"""The test-only GPU backend selection (tests/support/gpu_backend.py): what it relies on holds for the
installed bpy wheel, and it refuses what it cannot do instead of letting Blender fall back silently."""

from __future__ import annotations

import ctypes

import pytest

from tests.support import gpu_backend


def test_the_wheel_keeps_both_symbols_and_the_offset_arithmetic_holds():
    library = gpu_backend.bpy_shared_object()
    anchor, override = gpu_backend.symbol_offsets(library)
    assert anchor != override
    # nm gives link-time addresses; the loaded address of the exported anchor minus its nm address is the
    # load base, which the loader puts on a page boundary: the same base then applies to the override.
    loaded = ctypes.cast(ctypes.CDLL(str(library))[gpu_backend.ANCHOR_SYMBOL], ctypes.c_void_p).value
    assert (loaded - anchor) % 4096 == 0


def test_an_unknown_backend_is_refused(monkeypatch):
    monkeypatch.setenv(gpu_backend.ENV_VAR, "directx")
    with pytest.raises(gpu_backend.GPUBackendError, match="directx"):
        gpu_backend.requested_backend()
    monkeypatch.setenv(gpu_backend.ENV_VAR, "Vulkan")
    assert gpu_backend.requested_backend() == "vulkan"


def test_selecting_after_import_bpy_is_refused():
    import bpy  # noqa: F401  (any earlier Blender test has imported it already)

    with pytest.raises(gpu_backend.GPUBackendError, match="before `import bpy`"):
        gpu_backend.select_backend("vulkan")


def test_a_stripped_library_is_refused(tmp_path):
    stripped = tmp_path / "libempty.so"
    stripped.write_bytes(b"")  # nm finds no symbols in it (and says so)
    with pytest.raises(gpu_backend.GPUBackendError):
        gpu_backend.symbol_offsets(stripped)
