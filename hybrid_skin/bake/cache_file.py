"""The point-cache file a bake writes, and whose file may already be at its path (issue 35).

A bake never replaces a file it cannot take for its own, unless it is asked to (Replace File): it refuses,
in one sentence, a file at the path that is not a point cache of the bake's format (an image, a text, an
MDD file at a PC2 bake's path), the cache another object's Mesh Cache modifier plays, and a cache of
another vertex count. A cache of the bake's format and of this mesh's vertex count that no other object
plays is this object's: a bake cleared, and baked again to its file (Clear Bake leaves the file on disk).
"""

from __future__ import annotations

import os

import bpy

from ..core import pointcache

__all__ = ["refusal"]


def _same(a: str, b: str) -> bool:
    return os.path.normcase(os.path.abspath(a)) == os.path.normcase(os.path.abspath(b))


def player(obj: bpy.types.Object, filepath: str) -> bpy.types.Object | None:
    """Another object whose Mesh Cache modifier plays ``filepath``, if any."""
    for other in bpy.data.objects:
        if other == obj:
            continue
        for mod in getattr(other, "modifiers", ()):
            if mod.type == "MESH_CACHE" and mod.filepath:
                if _same(bpy.path.abspath(mod.filepath, library=other.library), filepath):
                    return other
    return None


def refusal(obj: bpy.types.Object, target: str, filepath: str) -> str | None:
    """Why the bake of ``obj`` to ``target`` may not replace the file at ``filepath`` (one sentence), or
    ``None`` when there is none or it is this object's (see the module docstring)."""
    if not os.path.lexists(filepath):
        return None
    name = os.path.basename(filepath)
    advice = "choose another file name, or tick Replace File to replace it"
    try:
        with open(filepath, "rb") as fh:
            head = fh.read(32)
        layout = pointcache.cache_layout(head, os.path.getsize(filepath))
    except OSError as err:
        return f"'{name}' exists and cannot be read ({err.strerror}): {advice}"
    if layout is None:
        return f"'{name}' exists and is not a point cache: {advice}"
    fmt, points, _frames = layout
    if fmt != target:
        return f"'{name}' is an {fmt} point cache, and this bake writes {target}: {advice}"
    other = player(obj, filepath)
    if other is not None:
        return f"'{name}' is the point cache of '{other.name}' (its Mesh Cache modifier plays it): {advice}"
    vertices = len(obj.data.vertices)
    if points != vertices:
        what = f"a point cache of {points:,} points, not of '{obj.name}' ({vertices:,} vertices)"
        return f"'{name}' is {what}: {advice}"
    return None
