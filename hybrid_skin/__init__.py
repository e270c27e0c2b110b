"""Hybrid Skin: per-vertex blend of linear blend and dual quaternion skinning for Blender.

No bpy import at module level: ``hybrid_skin.core`` must stay importable without Blender. The
Blender modules register in this order and unregister in reverse; any failure is raised, never
swallowed, so a broken install is visible at once.
"""

from __future__ import annotations

import importlib

_MODULES = (
    "skin.properties",
    "skin.operators",
    "bake.operators",
    "skin.panel",
    "analyze.operators",
    "animtex.operators",
    "animtex.crowd",
    "skin.viewport",
    "skin.handlers",
)


def _modules():
    return [importlib.import_module(f".{name}", __package__) for name in _MODULES]


def register() -> None:
    for module in _modules():
        module.register()


def unregister() -> None:
    for module in reversed(_modules()):
        module.unregister()


def __getattr__(name: str):
    """``hybrid_skin.api`` on first access (PEP 562), without importing bpy for ``hybrid_skin.core``."""
    if name == "api":
        return importlib.import_module(".api", __package__)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
