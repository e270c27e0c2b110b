"""Hybrid Skin: per-vertex blend of linear blend and dual quaternion skinning for Blender.

No bpy import at module level: ``hybrid_skin.core`` must stay importable without Blender, so the feature
modules are imported when the add-on registers. :func:`register` creates the one runtime
(:mod:`.runtime`), then registers each feature's Blender modules in the order of :data:`FEATURES`;
:func:`unregister` goes back in reverse and drops the runtime. Any failure is raised, never swallowed,
so a broken install is visible at once.
"""

from __future__ import annotations

import importlib

#: Packages in registration order, each with its Blender-facing modules in order (unregistered in
#: reverse): the rig layer first (the per-object settings and the handlers that keep every object's setup
#: whole), then the features, then Blender's menus that offer every feature's operators, then the command
#: line's ``blender --command hybrid_skin`` (last: a command can use everything above). The sidebar's main
#: panel registers before the sub-panels that name it.
FEATURES = (
    ("rig", ("properties", "handlers")),
    ("skin", ("operators", "panel", "viewport", "handlers")),
    ("bake", ("operators",)),
    ("analyze", ("operators", "compare", "panel")),
    ("animtex", ("operators", "panels", "crowd", "handlers")),
    ("ui", ("menus",)),
    ("cli", ("blender_command",)),
)


def _modules():
    return [
        importlib.import_module(f".{feature}.{name}", __package__)
        for feature, names in FEATURES
        for name in names
    ]


def register() -> None:
    # Deliberately here, not at module level: `import hybrid_skin.core` runs this file and must not load
    # the add-on's own modules (the runtime brings the skinning kernel's thread pool with it).
    from . import runtime

    runtime.start()
    registered = []
    try:
        for module in _modules():
            module.register()
            registered.append(module)
    except BaseException:  # leave nothing half-registered, then fail loudly
        for module in reversed(registered):
            module.unregister()
        runtime.stop()
        raise


def unregister() -> None:
    from . import runtime  # deliberately here, as in register()

    for module in reversed(_modules()):
        module.unregister()
    runtime.stop()


def __getattr__(name: str):
    """``hybrid_skin.api`` on first access (PEP 562), without importing bpy for ``hybrid_skin.core``."""
    if name == "api":
        return importlib.import_module(".api", __package__)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
