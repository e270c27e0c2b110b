"""The colour an object is drawn with, as Blender's solid viewport shows it."""

from __future__ import annotations

import bpy

__all__ = ["display_color"]


def display_color(obj: bpy.types.Object) -> tuple[float, float, float, float]:
    """Scene-linear RGBA: the active material's viewport colour, else the object colour."""
    material = obj.active_material
    rgba = material.diffuse_color if material is not None else obj.color
    return (float(rgba[0]), float(rgba[1]), float(rgba[2]), float(rgba[3]))
