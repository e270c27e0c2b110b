"""Texture-bake summaries follow the file: a save into another folder rebases the ``//`` paths they
store (the bake's files), as Blender does for its own relative paths, and puts them back when the open
file stays the old one (Save Copy, a save that failed)."""

from __future__ import annotations

import os
from dataclasses import dataclass, field

import bpy
from bpy.app.handlers import persistent

from .. import runtime
from . import summary


@dataclass
class SaveState:
    """``Object.session_uid`` → its summary before a save into another folder rebased its paths."""

    before_save: dict[int, str] = field(default_factory=dict)


def _state() -> SaveState:
    return runtime.get().state(SaveState)


def _same_file(a: str, b: str) -> bool:
    return bool(a and b) and os.path.normcase(os.path.abspath(a)) == os.path.normcase(os.path.abspath(b))


@persistent
def on_save_pre(filepath: str = "", *_args) -> None:
    """``filepath`` is the file being written; ``bpy.data.filepath`` is still the open one."""
    new = filepath if isinstance(filepath, str) else ""
    _state().before_save = summary.rebase_paths(bpy.data.filepath, new)


@persistent
def on_save_post(filepath: str = "", *_args) -> None:
    """After a save, or one that failed (``save_post_fail``): the open file is the one written, or the old
    one still (Save Copy, a failure), whose stored paths must name its own files again."""
    state = _state()
    before, state.before_save = state.before_save, {}
    if before and not _same_file(bpy.data.filepath, filepath if isinstance(filepath, str) else ""):
        summary.restore_texts(before)


_HANDLERS = (("save_pre", on_save_pre), ("save_post", on_save_post), ("save_post_fail", on_save_post))


def register() -> None:
    for name, func in _HANDLERS:
        getattr(bpy.app.handlers, name).append(func)


def unregister() -> None:
    for name, func in reversed(_HANDLERS):
        getattr(bpy.app.handlers, name).remove(func)
