"""The last animation texture bake's summary, stored on the baked object for the panels and the crowd.

A small JSON text in a hidden ID property: kind, precision, size, where the files went (relative to
the .blend when it is saved), the overall error and where the time went. Written after a successful
bake; read by the panels (:mod:`.panels`) and the crowd preview (:mod:`.crowd`), which finds the
sidecar through it.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import bpy

if TYPE_CHECKING:
    from .bake import BakeResult

__all__ = ["SUMMARY_PROPERTY", "last_summary", "store_summary", "summary"]

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


def _relative(path: str) -> str:
    try:
        return bpy.path.relpath(path)
    except ValueError:  # another drive (Windows): no relative path exists
        return path


def last_summary(obj: bpy.types.Object | None) -> dict | None:
    """The stored summary with its file paths absolute again (resolved against the .blend's folder)."""
    text = obj.get(SUMMARY_PROPERTY) if obj is not None else None
    if not isinstance(text, str):
        return None
    info = json.loads(text)
    for key in PATH_KEYS:
        if isinstance(info.get(key), str):
            info[key] = bpy.path.abspath(info[key])
    return info
