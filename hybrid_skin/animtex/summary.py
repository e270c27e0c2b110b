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

import os
from dataclasses import dataclass, field, replace

import bpy

from ..errors import HybridSkinError
from ..saved import SavedRecord
from .options import BakeResult

__all__ = [
    "SUMMARY_PROPERTY",
    "BakeSummary",
    "last_summary",
    "rebase_paths",
    "restore_texts",
    "store_summary",
    "summary",
]

#: ID property (hidden: leading underscore) holding the last bake's summary for the UI.
SUMMARY_PROPERTY = "_hybrid_skin_animtex"


@dataclass
class BakeSummary(SavedRecord):
    """What the UI shows about the last texture bake of an object (see the module docstring).

    Version 0 (builds before saved records had versions) is the same table with the sidecar's path under
    ``json``."""

    VERSION = 1
    WHAT = "animation texture bake summary"

    kind: str = ""
    precision: str = ""
    frame_step: float = 1.0
    clips: int = 0
    #: Texture width and height in pixels.
    size: list = field(default_factory=lambda: [0, 0])
    #: The texture and the sidecar: absolute when read through :func:`last_summary`; stored relative to
    #: the .blend (``//...``) once it is saved (:data:`PATH_FIELDS`).
    image: str = ""
    sidecar: str = ""
    #: The overall error (scene units, and percent of the bounding-box diagonal).
    max: float = 0.0
    mean: float = 0.0
    max_percent: float = 0.0
    mean_percent: float = 0.0
    warnings: list = field(default_factory=list)
    #: Seconds per phase of the bake.
    seconds: dict = field(default_factory=dict)


def _from_version_0(data: dict) -> dict:
    data["sidecar"] = data.pop("json", "")
    return data


BakeSummary.MIGRATIONS = {0: _from_version_0}


def summary(result: BakeResult) -> BakeSummary:
    """What the UI shows about a bake."""
    tex, overall = result.texture, result.report["overall"]
    return BakeSummary(
        kind=tex.kind.value,
        precision=tex.precision.value,
        frame_step=tex.clips[0].frame_step,
        clips=len(tex.clips),
        size=[tex.layout.width, tex.layout.height],
        image=result.image_path,
        sidecar=result.json_path,
        max=overall["max"],
        mean=overall["mean"],
        max_percent=overall["max_percent"],
        mean_percent=overall["mean_percent"],
        warnings=list(result.warnings),
        seconds={name: round(t, 4) for name, t in result.timings.items()},
    )


#: Summary fields that are file paths: stored relative to the saved .blend (``//...``) so that a project
#: folder can move (or be opened on another machine) and the panels and crowd preview still find the files.
PATH_FIELDS = ("image", "sidecar")


def _with_paths(info: BakeSummary, change) -> BakeSummary:
    return replace(info, **{name: change(getattr(info, name)) for name in PATH_FIELDS})


def _load(text: object) -> BakeSummary | None:
    """The summary stored as ``text``, or None when there is none or it is not one this build can read
    (a handler or a panel must not raise over a damaged property)."""
    if not isinstance(text, str):
        return None
    try:
        return BakeSummary.load(text)
    except (HybridSkinError, ValueError, TypeError, AttributeError, KeyError):
        return None


def store_summary(obj: bpy.types.Object, result: BakeResult) -> None:
    info = summary(result)
    if bpy.data.filepath:
        info = _with_paths(info, _relative)
    obj[SUMMARY_PROPERTY] = info.save()


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
        if obj.library is not None or obj.override_library is not None:
            continue
        info = _load(text)
        if info is None:  # not a summary this build can read: a save handler must not raise, leave it
            continue

        def rebased(path: str) -> str:
            if not path.startswith("//"):
                return path
            return _relative(os.path.normpath(bpy.path.abspath(path, start=old_folder)), new_folder)

        rebased_text = _with_paths(info, rebased).save()
        if rebased_text != text:
            before[obj.session_uid] = text
            obj[SUMMARY_PROPERTY] = rebased_text
    return before


def restore_texts(before: dict[int, str]) -> None:
    """Put back the summaries :func:`rebase_paths` changed (the open file is still the old one)."""
    for obj in bpy.data.objects:
        if obj.session_uid in before:
            obj[SUMMARY_PROPERTY] = before[obj.session_uid]


def last_summary(obj: bpy.types.Object | None) -> BakeSummary | None:
    """The stored summary with its file paths absolute again (resolved against the folder of the .blend the
    object lives in: the open file's, or its library's)."""
    info = _load(obj.get(SUMMARY_PROPERTY)) if obj is not None else None
    if info is None:
        return None
    # a linked object's paths are relative to its library's file
    def absolute(path: str) -> str:
        return os.path.normpath(bpy.path.abspath(path, library=obj.library)) if path else path

    return _with_paths(info, absolute)
