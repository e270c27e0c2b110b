"""The last animation texture bake's summary, stored on the baked object for the panels and the crowd.

A small JSON text in a hidden ID property: kind, precision, size, where the files went (relative to
the .blend when it is saved), the overall error and where the time went. Written after a successful
bake; read by the panels (:mod:`.panels`) and the crowd preview (:mod:`.crowd`), which finds the
sidecar through it.

Blender remaps its own relative paths when a file is saved into another folder (Save As with Remap
Relative), never an add-on's: :func:`rebase_paths` does it for the summaries, called by the save handlers
(:mod:`.handlers`), and :func:`restore_texts` takes it back when the open file stays the old one (Save
Copy, a save that failed).
"""

from __future__ import annotations

import json
import os

import bpy

from .options import BakeResult

__all__ = ["SUMMARY_PROPERTY", "last_summary", "rebase_paths", "restore_texts", "store_summary", "summary"]

#: ID property (hidden: leading underscore) holding the last bake's summary for the UI.
SUMMARY_PROPERTY = "_hybrid_skin_animtex"


def summary(result: BakeResult) -> dict:
    """What the UI shows about a bake."""
    tex, overall = result.texture, result.report["overall"]
    return {
        "kind": tex.kind.value,
        "precision": tex.precision.value,
        "frame_step": tex.clips[0].frame_step,
        "clips": len(tex.clips),
        "size": [tex.layout.width, tex.layout.height],
        "image": result.image_path,
        "json": result.json_path,
        "max": overall["max"],
        "mean": overall["mean"],
        "max_percent": overall["max_percent"],
        "mean_percent": overall["mean_percent"],
        "warnings": result.warnings,
        "seconds": {name: round(t, 4) for name, t in result.timings.items()},
    }


#: Summary entries that are file paths: stored relative to the saved .blend (``//...``) so that a project
#: folder can move (or be opened on another machine) and the panels and crowd preview still find the files.
PATH_KEYS = ("image", "json")


def store_summary(obj: bpy.types.Object, result: BakeResult) -> None:
    info = summary(result)
    if bpy.data.filepath:
        for key in PATH_KEYS:
            info[key] = _relative(info[key])
    obj[SUMMARY_PROPERTY] = json.dumps(info)


def _relative(path: str, start: str | None = None) -> str:
    """``path`` relative to the folder ``start`` (the open .blend's when None) as ``//...``."""
    try:
        return bpy.path.relpath(path, start=start)
    except ValueError:  # another drive (Windows): no relative path exists
        return path


def _folder(blend: str) -> str:
    return os.path.dirname(os.path.abspath(blend))


def rebase_paths(old_blend: str, new_blend: str) -> dict[int, str]:
    """The file is about to be saved as ``new_blend`` (it was ``old_blend``): every summary's ``//`` path
    made relative to the new file's folder, naming the same file. Blender cannot tell an add-on whether
    Remap Relative is on, so this is done either way (the paths keep naming the files the bake wrote).
    Local objects only: a linked object's paths are its library's. Returns each changed summary's text
    before, by ``Object.session_uid``, for :func:`restore_texts`."""
    if not old_blend or not new_blend:
        return {}
    old_folder, new_folder = _folder(old_blend), _folder(new_blend)
    if os.path.normcase(old_folder) == os.path.normcase(new_folder):
        return {}
    before = {}
    for obj in bpy.data.objects:
        text = obj.get(SUMMARY_PROPERTY)
        if obj.library is not None or obj.override_library is not None or not isinstance(text, str):
            continue
        try:
            info = json.loads(text)
        except ValueError:  # not a summary this build wrote: a save handler must not raise, leave it
            continue
        for key in PATH_KEYS:
            path = info.get(key)
            if isinstance(path, str) and path.startswith("//"):
                info[key] = _relative(os.path.normpath(bpy.path.abspath(path, start=old_folder)), new_folder)
        if json.dumps(info) != text:
            before[obj.session_uid] = text
            obj[SUMMARY_PROPERTY] = json.dumps(info)
    return before


def restore_texts(before: dict[int, str]) -> None:
    """Put back the summaries :func:`rebase_paths` changed (the open file is still the old one)."""
    for obj in bpy.data.objects:
        if obj.session_uid in before:
            obj[SUMMARY_PROPERTY] = before[obj.session_uid]


def last_summary(obj: bpy.types.Object | None) -> dict | None:
    """The stored summary with its file paths absolute again (resolved against the folder of the .blend the
    object lives in: the open file's, or its library's)."""
    text = obj.get(SUMMARY_PROPERTY) if obj is not None else None
    if not isinstance(text, str):
        return None
    info = json.loads(text)
    for key in PATH_KEYS:
        if isinstance(info.get(key), str):  # a linked object's paths are relative to its library's file
            info[key] = bpy.path.abspath(info[key], library=obj.library)
    return info
