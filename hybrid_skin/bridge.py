"""The one module that reads and writes Blender data in bulk (``foreach_get``/``foreach_set``, contiguous).

Everything the add-on exchanges with Blender's mesh, pose, shape-key, attribute and image data goes
through here as numpy arrays; nothing else walks ``mesh.vertices`` or pose bones one by one. Also the
input checks every feature shares (:func:`editable_mesh`, :func:`armature_modifier`, :func:`validate`).
Errors are :class:`~.errors.HybridSkinError` with a message that names the object and says how to fix
it; operators show them with ``report`` and the scripting API lets them propagate.
"""

from __future__ import annotations

import itertools
import operator
import os
import re
from contextlib import contextmanager

import bmesh
import bpy
import numpy as np

from .core.binding import DeformBones
from .errors import HybridSkinError

__all__ = [
    "DQS_MODIFIER",
    "armature_in_edit_mode",
    "armature_input",
    "armature_modifier",
    "channel_matrices",
    "corner_vertices",
    "deform_bones",
    "editable_mesh",
    "evaluated_positions",
    "find_armature_modifier",
    "is_mix_modifier",
    "image_pixels",
    "object_matrix",
    "point_attribute",
    "pose_channels",
    "read_vertex_group_entries",
    "rest_geometry",
    "segment_matrices",
    "set_image_pixels",
    "set_attribute",
    "set_pose_channels",
    "set_shape_key_points",
    "set_uv_map",
    "set_vertex_positions",
    "shape_key_points",
    "surface",
    "triangle_vertices",
    "validate",
    "vertex_normals",
    "vertex_positions",
    "weight_modifiers_above",
]

#: The Evaluated display's second (Preserve Volume) Armature modifier: never the one Hybrid Skin follows.
DQS_MODIFIER = "HybridSkin DQS"


def _flat(collection, attr: str, count: int, width: int, dtype=np.float32) -> np.ndarray:
    buf = np.empty(count * width, dtype=dtype)
    collection.foreach_get(attr, buf)
    return buf.reshape(count, width) if width > 1 else buf


def _matrices(collection, attr: str, count: int) -> np.ndarray:
    """``foreach_get`` of a 4×4 matrix property (stored column-major) → ``(count, 4, 4)`` row-major."""
    return np.ascontiguousarray(_flat(collection, attr, count, 16).reshape(count, 4, 4).transpose(0, 2, 1))


def object_matrix(obj: bpy.types.Object) -> np.ndarray:
    return np.array(obj.matrix_world, dtype=np.float64)


# ------------------------------------------------------------------------------------ input checks
def editable_mesh(obj: bpy.types.Object | None) -> bpy.types.Object:
    """The object if Hybrid Skin may change it (a local mesh); else a clear :class:`HybridSkinError`."""
    if obj is None:
        raise HybridSkinError("No active object: select a skinned mesh")
    if obj.type != "MESH":
        raise HybridSkinError(f"'{obj.name}' is a {obj.type.lower()}, not a mesh: select a skinned mesh")
    if obj.library is not None or obj.data.library is not None or obj.override_library is not None:
        raise HybridSkinError(
            f"'{obj.name}' is linked from a library: make it local (Object ▸ Relations ▸ Make Local) first"
        )
    return obj


def is_mix_modifier(mod: bpy.types.Modifier) -> bool:
    """Whether ``mod`` is the Evaluated display's Preserve Volume modifier (:data:`DQS_MODIFIER`, or the
    free name Blender gave it, ``"HybridSkin DQS.001"``, when the user has a modifier of that name)."""
    return re.fullmatch(re.escape(DQS_MODIFIER) + r"(\.\d+)?", mod.name) is not None


def find_armature_modifier(
    obj: bpy.types.Object, name: str = "", armature: bpy.types.Object | None = None
) -> bpy.types.ArmatureModifier | None:
    """The Armature modifier Hybrid Skin follows on ``obj``: the one named ``name`` if given, else the first
    in the stack (that deforms by ``armature``, if given); never the display's own (:func:`is_mix_modifier`).
    None if none."""
    for mod in obj.modifiers:
        if mod.type != "ARMATURE" or is_mix_modifier(mod) or (name and mod.name != name):
            continue
        if armature is None or mod.object == armature:
            return mod
    return None


def followed_modifier_name(obj: bpy.types.Object) -> str:
    """The name, now, of the Armature modifier Hybrid Skin follows on ``obj``: found by the persistent id
    stored at Add (a rename keeps it), else by the name saved then; "" when Hybrid Skin never bound it."""
    settings = getattr(obj, "hybrid_skin", None)
    if settings is None:
        return ""
    mod = find_modifier(obj, [settings.modifier_uid, settings.modifier_name])
    return mod.name if mod is not None and mod.type == "ARMATURE" else settings.modifier_name


def armature_modifier(obj: bpy.types.Object | None, name: str = "") -> bpy.types.ArmatureModifier:
    """:func:`find_armature_modifier` for a mesh that must have one; else a clear :class:`HybridSkinError`."""
    if obj is None or obj.type != "MESH":
        kind = "nothing" if obj is None else f"'{obj.name}' ({obj.type.lower()})"
        raise HybridSkinError(f"Hybrid Skin needs a mesh object, got {kind}: select a skinned mesh")
    mod = find_armature_modifier(obj, name)
    if mod is None:
        what = f"Armature modifier named '{name}'" if name else "Armature modifier"
        raise HybridSkinError(f"'{obj.name}' has no {what}: add one (Ctrl+P ▸ With Automatic Weights) first")
    return mod


def armature_in_edit_mode(arm: bpy.types.Object) -> bool:
    """Whether the armature's bones are being edited: Blender then deforms its meshes by the rest pose."""
    return arm.mode == "EDIT" or arm.data.is_editmode


def validate(
    obj: bpy.types.Object, mod: bpy.types.ArmatureModifier, *, rest_in_edit_mode: bool = False
) -> bpy.types.Object:
    """Check that ``obj`` can be skinned by ``mod``; return the armature object.

    ``rest_in_edit_mode``: an armature in Edit Mode is fine (the live skin shows the rest pose then, as
    Blender does); bakes leave it False, since every frame would bake the rest pose."""
    arm = mod.object
    if arm is None or arm.type != "ARMATURE":
        raise HybridSkinError(
            f"Armature modifier '{mod.name}' on '{obj.name}' has no armature: pick one in its Object field"
        )
    if armature_in_edit_mode(arm) and not rest_in_edit_mode:
        raise HybridSkinError(
            f"Armature '{arm.name}' is in Edit Mode: switch it to Pose or Object Mode first"
        )
    if obj.mode == "EDIT":
        raise HybridSkinError(f"'{obj.name}' is in Edit Mode: leave Edit Mode first")
    if len(obj.data.vertices) == 0:
        raise HybridSkinError(f"'{obj.name}' has no vertices: there is nothing to skin")
    if not mod.use_vertex_groups and not mod.use_bone_envelopes:
        raise HybridSkinError(
            f"Armature modifier '{mod.name}' binds to neither vertex groups nor envelopes: enable one"
        )
    return arm


# --------------------------------------------------------------------------------------- armature
def deform_bones(arm: bpy.types.Object) -> DeformBones:
    """Rest data of the deform bones in pose-bone order (O(bones); bulk reads)."""
    bones = arm.data.bones
    n = len(bones)
    use = _flat(bones, "use_deform", n, 1, dtype=bool)
    order = {b.name: i for i, b in enumerate(bones)}
    pose_order = np.array([order[pb.name] for pb in arm.pose.bones], dtype=np.int64)
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


@contextmanager
def _viewport_disabled(mods: list[bpy.types.Modifier]):
    """Temporarily hide modifiers in the viewport; their settings come back exactly."""
    saved = [(m, m.show_viewport) for m in mods]
    try:
        for m in mods:
            m.show_viewport = False
        yield
    finally:
        for m, state in saved:
            m.show_viewport = state


@contextmanager
def _keys_muted(mesh: bpy.types.Mesh, names: tuple[str, ...]):
    """Temporarily mute shape keys (our own baked keys must not feed back into the rest input)."""
    blocks = [
        mesh.shape_keys.key_blocks[n] for n in names if mesh.shape_keys and n in mesh.shape_keys.key_blocks
    ]
    saved = [(kb, kb.mute) for kb in blocks]
    try:
        for kb in blocks:
            kb.mute = True
        yield
    finally:
        for kb, mute in saved:
            kb.mute = mute


#: Modifier types that change vertex-group weights and nothing else: vertices stay where they are.
WEIGHT_ONLY_MODIFIER_TYPES = frozenset({"VERTEX_WEIGHT_EDIT", "VERTEX_WEIGHT_MIX", "VERTEX_WEIGHT_PROXIMITY"})


def _changes_weights(mod: bpy.types.Modifier) -> bool:
    """Whether ``mod`` may change vertex-group weights (or their stored order) and keep the vertex count."""
    if mod.type == "DATA_TRANSFER":
        return bool(mod.use_vert_data and "VGROUP_WEIGHTS" in mod.data_types_verts)
    if mod.type == "DYNAMIC_PAINT":  # a canvas with a Weight surface paints into a vertex group
        canvas = mod.canvas_settings if mod.ui_type == "CANVAS" else None
        return canvas is not None and any(s.surface_type == "WEIGHT" for s in canvas.canvas_surfaces)
    return mod.type in WEIGHT_ONLY_MODIFIER_TYPES or mod.type == "NODES"  # Geometry Nodes may write any


def weight_modifiers_above(obj: bpy.types.Object, mod: bpy.types.Modifier) -> list[bpy.types.Modifier]:
    """The modifiers shown in the viewport above ``mod`` that may change the vertex-group weights it
    receives (a Vertex Weight modifier, Geometry Nodes, ...): Blender deforms with the weights they
    produce, which may change at every frame (a keyframed setting, a Proximity target that moves)."""
    stack = list(obj.modifiers)
    return [m for m in stack[: stack.index(mod)] if m.show_viewport and _changes_weights(m)]


def vertex_count_refusal(obj: bpy.types.Object, mod: bpy.types.Modifier) -> str:
    """The sentence for modifiers above ``mod`` that change the vertex count it receives."""
    return (
        f"Modifiers above '{mod.name}' on '{obj.name}' change the vertex count: "
        "move the Armature modifier above them"
    )


@contextmanager
def armature_input(
    obj: bpy.types.Object,
    mod: bpy.types.Modifier,
    depsgraph: bpy.types.Depsgraph,
    exclude_keys: tuple[str, ...] = (),
):
    """The object as the Armature modifier ``mod`` receives it: its ``data`` is that mesh (positions,
    normals, vertex-group weights) and its ``vertex_groups`` name the mesh's groups.

    Shape keys (except ``exclude_keys``, Hybrid Skin's own baked keys) and enabled modifiers above the
    Armature modifier are applied. When the mesh has neither, that is ``obj`` itself. Otherwise the object is
    evaluated with the Armature modifier and everything after it hidden (as in GPU display mode); the
    user's settings are restored on leaving. Modifiers above that change the vertex count are refused.
    """
    stack = list(obj.modifiers)
    at = stack.index(mod)
    before = [m for m in stack[:at] if m.show_viewport]
    mesh = obj.data
    if not before and mesh.shape_keys is None:
        yield obj
        return
    tail = [m for m in stack[at:] if m.show_viewport]
    try:
        with _viewport_disabled(tail), _keys_muted(mesh, exclude_keys):
            if tail or exclude_keys:
                depsgraph.update()
            evaluated = obj.evaluated_get(depsgraph)
            if len(evaluated.data.vertices) != len(mesh.vertices):
                raise HybridSkinError(vertex_count_refusal(obj, mod))
            yield evaluated
    finally:
        if tail or exclude_keys:
            depsgraph.update()


def rest_geometry(
    obj: bpy.types.Object,
    mod: bpy.types.Modifier,
    depsgraph: bpy.types.Depsgraph,
    exclude_keys: tuple[str, ...] = (),
) -> tuple[np.ndarray, np.ndarray]:
    """Positions and vertex normals ``(N, 3)`` that the Armature modifier receives (mesh local space; see
    :func:`armature_input`)."""
    with armature_input(obj, mod, depsgraph, exclude_keys) as source:
        return vertex_positions(source.data), vertex_normals(source.data)


def surface(mesh: bpy.types.Mesh) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Triangulated surface for drawing: ``(triangles (T, 3) corner indices, corner_vertex (C,),
    corner_normals (C, 3))``. Corner normals keep sharp edges and custom normals as Blender shades them."""
    mesh.calc_loop_triangles()
    t = len(mesh.loop_triangles)
    triangles = _flat(mesh.loop_triangles, "loops", t, 3, dtype=np.int32)
    corner_vertex = corner_vertices(mesh)
    return triangles, corner_vertex, corner_normals(mesh)


# ------------------------------------------------------------------------------------ refusals
def single_user_mesh(obj: bpy.types.Object, what: str) -> None:
    """Refuse ``what`` (``"a bake"``, ``"adding Hybrid Skin"``) on a mesh that other objects use too:
    each of them would show the change (skinned ones twice)."""
    others = [o.name for o in bpy.data.objects if o.data == obj.data and o != obj]
    if others:
        raise HybridSkinError(
            f"'{obj.name}' shares its mesh '{obj.data.name}' with {others[:3]}: {what} would change "
            "them all; make it single-user first (Object ▸ Relations ▸ Make Single User)"
        )


def absolute_path(path: str, what: str) -> str:
    """``path`` made absolute; a path relative to the .blend file (``//``) needs a saved file."""
    if path.startswith("//") and not bpy.data.filepath:
        raise HybridSkinError(
            f"The {what} path '{path}' is relative to the .blend file, which is not saved yet: "
            "save the file first or give an absolute path"
        )
    return os.path.abspath(bpy.path.abspath(path))


def modifier_ref(mod: bpy.types.Modifier) -> list:
    """How saved state finds a modifier again: ``[persistent_uid, name]`` (the id survives renames)."""
    return [int(getattr(mod, "persistent_uid", 0)), mod.name]


def find_modifier(obj: bpy.types.Object, ref: list) -> bpy.types.Modifier | None:
    """The modifier a :func:`modifier_ref` points at (by id, else by name), or None."""
    uid, name = ref
    if uid:
        for mod in obj.modifiers:
            if getattr(mod, "persistent_uid", 0) == uid:
                return mod
    return obj.modifiers.get(name)
