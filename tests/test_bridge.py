"""The bridge's bulk reads against Blender's own per-element access (the slow, obviously right way)."""

from __future__ import annotations

import importlib
from types import SimpleNamespace

import bmesh
import bpy
import numpy as np


def _edited_mesh() -> bpy.types.Object:
    """A mesh with quads, triangles and an n-gon whose vertices were deleted and added after creation (so
    its arrays were rebuilt), and a Subdivision modifier for an evaluated copy with other counts."""
    bpy.ops.mesh.primitive_monkey_add()
    obj = bpy.context.object
    bm = bmesh.new()
    bm.from_mesh(obj.data)
    bmesh.ops.delete(bm, geom=bm.verts[5:40], context="VERTS")
    ring = [bm.verts.new((np.cos(a), np.sin(a), 3.0)) for a in np.linspace(0, 2 * np.pi, 7, endpoint=False)]
    bm.faces.new(ring)
    bm.to_mesh(obj.data)
    bm.free()
    obj.modifiers.new("Subdivision", "SUBSURF")
    return obj


def test_bulk_positions_and_corner_vertices_equal_blenders_elements(addon):
    bridge = importlib.import_module(addon.__name__ + ".bridge")
    obj = _edited_mesh()
    evaluated = obj.evaluated_get(bpy.context.evaluated_depsgraph_get()).data
    for mesh in (obj.data, evaluated):
        assert len(mesh.vertices) > 400 and any(len(p.vertices) == 7 for p in obj.data.polygons)
        np.testing.assert_array_equal(
            bridge.vertex_positions(mesh), np.array([v.co for v in mesh.vertices], np.float32)
        )
        np.testing.assert_array_equal(
            bridge.corner_vertices(mesh), np.array([loop.vertex_index for loop in mesh.loops], np.int32)
        )
    # A mesh without the built-in attributes (none in Blender 4.5-5.2) is read element by element.
    bare = SimpleNamespace(attributes={}, vertices=obj.data.vertices, loops=obj.data.loops)
    np.testing.assert_array_equal(bridge.vertex_positions(bare), bridge.vertex_positions(obj.data))
    np.testing.assert_array_equal(bridge.corner_vertices(bare), bridge.corner_vertices(obj.data))
