"""The live display's own handlers: its GPU skins are dropped on file load and undo (the objects they
were built for are other objects now), and its timers are removed at unregister."""

from __future__ import annotations

import bpy
from bpy.app.handlers import persistent

from . import viewport


@persistent
def on_reload(*_args) -> None:
    viewport.forget()


_HANDLERS = (("load_post", on_reload), ("undo_post", on_reload), ("redo_post", on_reload))


def register() -> None:
    for name, func in _HANDLERS:
        getattr(bpy.app.handlers, name).append(func)


def unregister() -> None:
    if bpy.app.timers.is_registered(viewport.step_aside_failed):
        bpy.app.timers.unregister(viewport.step_aside_failed)
    for name, func in reversed(_HANDLERS):
        getattr(bpy.app.handlers, name).remove(func)
