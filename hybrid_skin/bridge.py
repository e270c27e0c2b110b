"""The one module that reads and writes Blender data in bulk (``foreach_get``/``foreach_set``, contiguous).

Everything the add-on exchanges with Blender's mesh, pose, shape-key, attribute and image data goes
through here as numpy arrays; nothing else walks ``mesh.vertices`` or pose bones one by one. Data in and
out only, no policy: which modifier is followed, what is refused and why live in :mod:`.rig` (``stack``,
``checks``).
"""

from __future__ import annotations

import itertools
import operator

import bmesh
import bpy
import numpy as np

from .core.binding import DeformBones
from .errors import HybridSkinError

__all__ = [
    "channel_matrices",
    "corner_vertices",
    "deform_bones",
    "evaluated_positions",
    "image_pixels",
    "modifier_input",
    "modifier_input_path",
    "object_matrix",
    "point_attribute",
    "pose_channels",
    "read_vertex_group_entries",
    "segment_matrices",
    "set_attribute",
    "set_modifier_input",
    "set_image_pixels",
    "set_pose_channels",
    "set_shape_key_points",
    "set_uv_map",
    "set_vertex_positions",
    "shape_key_points",
    "surface",
    "triangle_vertices",
    "vertex_normals",
    "vertex_positions",
]


def _flat(collection, attr: str, count: int, width: int, dtype=np.float32) -> np.ndarray:
    buf = np.empty(count * width, dtype=dtype)
    collection.foreach_get(attr, buf)
    return buf.reshape(count, width) if width > 1 else buf


def _matrices(collection, attr: str, count: int) -> np.ndarray:
    """``foreach_get`` of a 4×4 matrix property (stored column-major) → ``(count, 4, 4)`` row-major."""
    return np.ascontiguousarray(_flat(collection, attr, count, 16).reshape(count, 4, 4).transpose(0, 2, 1))


def object_matrix(obj: bpy.types.Object) -> np.ndarray:
    return np.array(obj.matrix_world, dtype=np.float64)



# --------------------------------------------------------------------------------------- armature
def deform_bones(arm: bpy.types.Object) -> DeformBones:
    """Rest data of the deform bones in pose-bone order (O(bones); bulk reads)."""
    bones = arm.data.bones
    n = len(bones)
    use = _flat(bones, "use_deform", n, 1, dtype=bool)
    order = {b.name: i for i, b in enumerate(bones)}
    pose_names = [pb.name for pb in arm.pose.bones]
    if len(pose_names) != n or any(name not in order for name in pose_names):
        # In Edit Mode Blender renames (adds, removes) pose channels at once, and the bones when it is left.
        raise HybridSkinError(
            f"The bones of '{arm.name}' are being edited in Edit Mode: they are read when it leaves Edit Mode"
        )
    pose_order = np.array([order[name] for name in pose_names], dtype=np.int64)
    sel = pose_order[use[pose_order]]
    names = tuple(bones[int(i)].name for i in sel)
    curved = np.array([bones[int(i)].bbone_mapping_mode == "CURVED" for i in sel], dtype=bool)
    position = {name: d for d, name in enumerate(names)}
    parent = np.full(len(names), -1, dtype=np.int64)
    for d, name in enumerate(names):
        ancestor = bones[name].parent
        while ancestor is not None and ancestor.name not in position:
            ancestor = ancestor.parent
        parent[d] = -1 if ancestor is None else position[ancestor.name]
    return DeformBones(
        names=names,
        rest=_matrices(bones, "matrix_local", n)[sel].astype(np.float64),
        segments=_flat(bones, "bbone_segments", n, 1, dtype=np.int32)[sel],
        length=_flat(bones, "length", n, 1)[sel].astype(np.float64),
        head=_flat(bones, "head_local", n, 3)[sel].astype(np.float64),
        tail=_flat(bones, "tail_local", n, 3)[sel].astype(np.float64),
        head_radius=_flat(bones, "head_radius", n, 1)[sel].astype(np.float64),
        tail_radius=_flat(bones, "tail_radius", n, 1)[sel].astype(np.float64),
        envelope_distance=_flat(bones, "envelope_distance", n, 1)[sel].astype(np.float64),
        envelope_weight=_flat(bones, "envelope_weight", n, 1)[sel].astype(np.float64),
        envelope_multiply=_flat(bones, "use_envelope_multiply", n, 1, dtype=bool)[sel],
        curved=curved,
        parent=parent,
    )


def pose_bone_index(arm: bpy.types.Object, names: tuple[str, ...]) -> np.ndarray:
    """Indices of ``names`` in ``arm.pose.bones`` (for slicing bulk pose reads)."""
    lookup = {pb.name: i for i, pb in enumerate(arm.pose.bones)}
    missing = [nm for nm in names if nm not in lookup]
    if missing:
        raise HybridSkinError(f"Armature '{arm.name}' lost bones {missing[:5]}: rebind Hybrid Skin")
    return np.array([lookup[nm] for nm in names], dtype=np.int64)


def channel_matrices(arm_eval: bpy.types.Object, index: np.ndarray) -> np.ndarray:
    """``PoseBone.matrix_channel`` (Blender's chan_mat, rest → pose in armature space) ``(D, 4, 4)``."""
    pose_bones = arm_eval.pose.bones
    return _matrices(pose_bones, "matrix_channel", len(pose_bones))[index].astype(np.float64)


def segment_matrices(arm_eval: bpy.types.Object, bones: DeformBones, rest: bool) -> dict[int, np.ndarray]:
    """B-bone segment joint matrices in bone space per B-bone (``segments + 1`` each)."""
    out: dict[int, np.ndarray] = {}
    for d in np.flatnonzero(bones.segments > 1):
        pb = arm_eval.pose.bones[bones.names[d]]
        mats = [pb.bbone_segment_matrix(i, rest=rest) for i in range(int(bones.segments[d]) + 1)]
        out[int(d)] = np.array(mats, dtype=np.float64)
    return out


def pose_channels(arm: bpy.types.Object, channel: str, width: int) -> np.ndarray:
    """One pose channel of every pose bone (``"location"``, ``"rotation_quaternion"`` ...) ``(B, width)``."""
    bones = arm.pose.bones
    return _flat(bones, channel, len(bones), width).reshape(len(bones), width)


def set_pose_channels(arm: bpy.types.Object, values: dict[str, np.ndarray]) -> None:
    """Write pose channels ``{channel: (B, width)}`` of every pose bone."""
    for channel, value in values.items():
        arm.pose.bones.foreach_set(channel, np.ascontiguousarray(value, dtype=np.float32).ravel())


# ------------------------------------------------------------------------------------------- mesh
def _stored(mesh: bpy.types.Mesh, attribute: str, field: str, fallback, attr: str, width: int, dtype):
    """A built-in attribute read as one copy of its array (``position``, ``.corner_vert``): 50-500x faster
    than the same values through ``MeshVertex.co`` / ``MeshLoop.vertex_index``, which go element by
    element. ``fallback`` (that per-element collection) where the attribute is absent."""
    count = len(fallback)
    data = mesh.attributes.get(attribute)
    if data is None or len(data.data) != count:
        return _flat(fallback, attr, count, width, dtype)
    return _flat(data.data, field, count, width, dtype)


def vertex_positions(mesh: bpy.types.Mesh) -> np.ndarray:
    """``(N, 3)`` float32 vertex coordinates (mesh local space)."""
    return _stored(mesh, "position", "vector", mesh.vertices, "co", 3, np.float32)


def set_vertex_positions(mesh: bpy.types.Mesh, positions: np.ndarray) -> None:
    """Write ``(N, 3)`` vertex coordinates (mesh local space)."""
    mesh.vertices.foreach_set("co", np.ascontiguousarray(positions, dtype=np.float32).ravel())
    mesh.update()


def vertex_normals(mesh: bpy.types.Mesh) -> np.ndarray:
    """``(N, 3)`` float32 vertex normals."""
    return _flat(mesh.vertex_normals, "vector", len(mesh.vertices), 3)


def evaluated_positions(obj: bpy.types.Object, depsgraph: bpy.types.Depsgraph | None = None) -> np.ndarray:
    """``(N, 3)`` float32 positions of the evaluated object (its whole modifier stack), local space."""
    depsgraph = depsgraph or bpy.context.evaluated_depsgraph_get()
    return vertex_positions(obj.evaluated_get(depsgraph).data)


def corner_vertices(mesh: bpy.types.Mesh) -> np.ndarray:
    """``(C,)`` int32 vertex index of every face corner (loop)."""
    return _stored(mesh, ".corner_vert", "value", mesh.loops, "vertex_index", 1, np.int32)


def corner_normals(mesh: bpy.types.Mesh) -> np.ndarray:
    """``(C, 3)`` float32 normal of every face corner as Blender shades it (sharp edges, flat faces,
    custom split normals)."""
    return _flat(mesh.corner_normals, "vector", len(mesh.loops), 3)


def tangent_uv_map(mesh: bpy.types.Mesh, skip: tuple[str, ...] = ()) -> str | None:
    """The UV map tangents are computed for: the active one (what Blender's glTF exporter uses for
    ``TANGENT``), or the first other than ``skip`` (the bake's own texel UV map); ``None`` without one."""
    layers = [uv.name for uv in mesh.uv_layers if uv.name not in skip]
    active = mesh.uv_layers.active
    return active.name if active is not None and active.name in layers else (layers[0] if layers else None)


def corner_tangents(mesh: bpy.types.Mesh, uv_map: str) -> np.ndarray:
    """``(C, 4)`` float32 MikkTSpace tangent and bitangent sign of every face corner for ``uv_map``
    (Blender's ``Mesh.calc_tangents``; its cache is freed again). ``RuntimeError`` where Blender cannot
    compute them (faces of more than 4 corners)."""
    mesh.calc_tangents(uvmap=uv_map)
    try:
        count = len(mesh.loops)
        tangent = _flat(mesh.loops, "tangent", count, 3)
        sign = _flat(mesh.loops, "bitangent_sign", count, 1)
    finally:
        mesh.free_tangents()
    return np.concatenate([tangent, sign[:, None]], axis=1)


def deformed_corner_tangents(mesh: bpy.types.Mesh, positions: np.ndarray, uv_map: str) -> np.ndarray:
    """``(C, 4)`` MikkTSpace tangents and signs of ``mesh`` deformed to vertex ``positions`` ``(N, 3)``:
    Blender's own ``Mesh.calc_tangents`` on a scratch copy of the mesh (removed again), so the user's mesh
    is never changed."""
    scratch = mesh.copy()
    try:
        scratch.vertices.foreach_set("co", np.ascontiguousarray(positions, dtype=np.float32).ravel())
        scratch.update()
        return corner_tangents(scratch, uv_map)
    finally:
        bpy.data.meshes.remove(scratch)


def triangle_vertices(mesh: bpy.types.Mesh) -> np.ndarray:
    """``(T, 3)`` int32 vertex indices of the mesh's triangulation."""
    mesh.calc_loop_triangles()
    t = len(mesh.loop_triangles)
    return _flat(mesh.loop_triangles, "vertices", t, 3, dtype=np.int32).reshape(t, 3)


def shape_key_points(key_block: bpy.types.ShapeKey) -> np.ndarray:
    """``(N, 3)`` float32 coordinates of a shape key."""
    n = len(key_block.points)
    return _flat(key_block.points, "co", n, 3).reshape(n, 3)


def set_shape_key_points(key_block: bpy.types.ShapeKey, positions: np.ndarray) -> None:
    key_block.points.foreach_set("co", np.ascontiguousarray(positions, dtype=np.float32).ravel())


def point_attribute(mesh: bpy.types.Mesh, name: str, field: str, width: int, dtype=np.float32) -> np.ndarray:
    """``(N, width)`` values of the point attribute ``name`` (``field`` ``"value"``, ``"color"`` ...)."""
    n = len(mesh.vertices)
    return _flat(mesh.attributes[name].data, field, n, width, dtype=dtype).reshape(n, width)


def set_attribute(
    mesh: bpy.types.Mesh, name: str, data_type: str, domain: str, field: str, values: np.ndarray
) -> None:
    """Write an attribute on ``domain`` (``"POINT"``, ``"CORNER"``), (re)created when it is missing or of
    another type or domain."""
    attributes = mesh.attributes
    colors = (attributes.active_color_name, attributes.default_color_name)
    attr = attributes.get(name)
    if attr is not None and (attr.data_type != data_type or attr.domain != domain):
        attributes.remove(attr)
        attr = None
    if attr is None:
        attributes.new(name, data_type, domain)
        # Blender makes a mesh's first colour attribute the active (painted) and render one: data stored
        # as colour must not take the user's choice, "none" included.
        attributes.active_color_name, attributes.default_color_name = colors
    mesh.attributes[name].data.foreach_set(field, np.ascontiguousarray(values).ravel())


def set_uv_map(mesh: bpy.types.Mesh, name: str, uv: np.ndarray) -> bool:
    """Write ``(C, 2)`` per-corner UVs into the UV map ``name`` (created if missing); False when the
    mesh has no room for another UV map."""
    layer = mesh.uv_layers.get(name) or mesh.uv_layers.new(name=name, do_init=False)
    if layer is None:
        return False
    mesh.uv_layers[name].uv.foreach_set("vector", np.ascontiguousarray(uv, dtype=np.float32).ravel())
    return True


# ------------------------------------------------------------------------------------------ image
def image_pixels(image: bpy.types.Image) -> np.ndarray:
    """``(H, W, 4)`` float32 pixels of an image as Blender holds them (row 0 at the bottom)."""
    width, height = image.size
    buf = np.empty(width * height * 4, dtype=np.float32)
    image.pixels.foreach_get(buf)
    return buf.reshape(height, width, 4)


def set_image_pixels(image: bpy.types.Image, pixels: np.ndarray) -> None:
    """Write ``(H, W, 4)`` float pixels (row 0 at the bottom) into an image of that size."""
    image.pixels.foreach_set(np.ascontiguousarray(pixels, dtype=np.float32).reshape(-1))


def read_vertex_group_entries(mesh: bpy.types.Mesh) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """All vertex-group entries in stored order: ``(counts (N,), group (E,), weight (E,))``.

    BMesh exposes each vertex's weights as plain lists; flattening those is about twice as fast as
    iterating ``MeshVertex.groups`` and keeps Blender's stored order (which decides DQS signs).
    """
    n = len(mesh.vertices)
    bm = bmesh.new()
    try:
        bm.from_mesh(mesh)
        layer = bm.verts.layers.deform.active
        if layer is None:
            return np.zeros(n, np.int64), np.zeros(0, np.int32), np.zeros(0, np.float32)
        # map() with C callables throughout: no Python frame per vertex (a third faster than generators)
        dverts = list(map(operator.itemgetter(layer), bm.verts))
        counts = np.fromiter(map(len, dverts), dtype=np.int64, count=n)
        total = int(counts.sum())
        chain, deform = itertools.chain.from_iterable, bmesh.types.BMDeformVert
        groups = np.fromiter(chain(map(deform.keys, dverts)), dtype=np.int32, count=total)
        weights = np.fromiter(chain(map(deform.values, dverts)), dtype=np.float32, count=total)
    finally:
        bm.free()
    return counts, groups, weights


def surface(mesh: bpy.types.Mesh) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Triangulated surface for drawing: ``(triangles (T, 3) corner indices, corner_vertex (C,),
    corner_normals (C, 3))``. Corner normals keep sharp edges and custom normals as Blender shades them."""
    mesh.calc_loop_triangles()
    t = len(mesh.loop_triangles)
    triangles = _flat(mesh.loop_triangles, "loops", t, 3, dtype=np.int32)
    corner_vertex = corner_vertices(mesh)
    return triangles, corner_vertex, corner_normals(mesh)


# ------------------------------------------------------------------------------ modifier inputs
# A Geometry Nodes modifier's inputs are ID properties of the modifier up to Blender 5.1
# (``mod["Socket_2"]``, animated at ``modifiers["Mix"]["Socket_2"]``) and RNA structs from 5.2
# (``mod.properties.inputs.Socket_2.value``, animated at
# ``modifiers["Mix"].properties.inputs.Socket_2.value``).
def _input_identifier(mod: bpy.types.NodesModifier, name: str) -> str:
    tree = mod.node_group
    for item in tree.interface.items_tree if tree is not None else ():
        if item.item_type == "SOCKET" and item.in_out == "INPUT" and item.name == name:
            return item.identifier
    raise KeyError(f"modifier '{mod.name}' has no input named {name!r}")


def modifier_input(mod: bpy.types.NodesModifier, name: str):
    """The value of the Geometry Nodes modifier's input ``name`` (its interface name)."""
    identifier = _input_identifier(mod, name)
    if hasattr(mod, "properties"):
        return getattr(mod.properties.inputs, identifier).value
    return mod[identifier]


def set_modifier_input(mod: bpy.types.NodesModifier, name: str, value) -> None:
    """Set the modifier's input ``name``; unchanged values are not written (no needless update)."""
    identifier = _input_identifier(mod, name)
    if hasattr(mod, "properties"):
        socket = getattr(mod.properties.inputs, identifier)
        if socket.value == value:
            return
        socket.value = value
    elif identifier not in mod.keys() or mod[identifier] != value:
        mod[identifier] = value
    else:
        return
    mod.id_data.update_tag()  # neither way of setting an input tells the depsgraph


def modifier_input_path(mod: bpy.types.NodesModifier, name: str) -> str:
    """The object-relative data path that animates the modifier's input ``name``."""
    identifier = _input_identifier(mod, name)
    base = f"modifiers[{_quoted(mod.name)}]"
    if hasattr(mod, "properties"):
        return f"{base}.properties.inputs.{identifier}.value"
    return f'{base}["{identifier}"]'


def _quoted(name: str) -> str:
    return '"' + name.replace("\\", "\\\\").replace('"', '\\"') + '"'
