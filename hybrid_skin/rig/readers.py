"""What in the file reads a mesh object's evaluated geometry: the GPU display steps aside for it.

The GPU display hides the Armature modifier in the viewport and draws the skin itself, so Blender's own
evaluation of the mesh is the rest pose while it draws. Anything that reads that evaluation would see the
rest pose: clothing (Shrinkwrap, Surface Deform, Data Transfer, Mesh Deform cages), Boolean cutters,
Geometry Nodes that read the object (Object Info, an object or collection input), children parented to
its vertices, constraints that target one of its vertex groups or its surface, particles and collection
instances that show it, its rigid body. :func:`mesh_readers` finds them from Blender's own list of who
references whom (``bpy.data.user_map``, one C call over the file), so a new kind of modifier that takes an
object is counted too; only references known to read nothing but the object's transform are left out.
"""

from __future__ import annotations

import bpy

__all__ = ["mesh_readers"]

#: (modifier type, property) pairs that take an object for its transform only: they never read its mesh.
TRANSFORM_ONLY = frozenset(
    {
        ("ARRAY", "offset_object"),
        ("CAST", "object"),
        ("DISPLACE", "texture_coords_object"),
        ("HOOK", "object"),
        ("MIRROR", "mirror_object"),
        ("SCREW", "object"),
        ("SIMPLE_DEFORM", "origin"),
        ("UV_WARP", "object_from"),
        ("UV_WARP", "object_to"),
        ("VERTEX_WEIGHT_EDIT", "mask_tex_map_object"),
        ("VERTEX_WEIGHT_MIX", "mask_tex_map_object"),
        ("VERTEX_WEIGHT_PROXIMITY", "mask_tex_map_object"),
        ("WARP", "object_from"),
        ("WARP", "object_to"),
        ("WAVE", "start_position_object"),
        ("WAVE", "texture_coords_object"),
    }
)
#: Constraint types that read a mesh target's surface even without a vertex group.
SURFACE_CONSTRAINTS = frozenset({"SHRINKWRAP", "GEOMETRY_ATTRIBUTE"})


def _points_at(value, target: bpy.types.Object, holders: set) -> bool:
    """Whether an ID value is ``target`` or a collection that holds it (at any depth)."""
    return value is not None and (value == target or value in holders)


def _pointer_values(struct) -> list[tuple[str, object]]:
    """``(property, ID)`` for every Object or Collection pointer of an RNA struct."""
    out = []
    for prop in struct.bl_rna.properties:
        if prop.type == "POINTER" and prop.fixed_type is not None:
            if prop.fixed_type.identifier in ("Object", "Collection"):
                out.append((prop.identifier, getattr(struct, prop.identifier, None)))
    return out


def _modifier_reads(mod: bpy.types.Modifier, target: bpy.types.Object, holders: set) -> bool:
    if not mod.show_viewport:
        return False  # not evaluated in the viewport (the render sees Blender's exact stack anyway)
    for name, value in _pointer_values(mod):
        if (mod.type, name) not in TRANSFORM_ONLY and _points_at(value, target, holders):
            return True
    if mod.type == "NODES":
        return any(_is_id(value) and _points_at(value, target, holders) for value in _node_inputs(mod))
    return False


def _node_inputs(mod: bpy.types.Modifier) -> list:
    """A Geometry Nodes modifier's input values: ``mod.properties.inputs.<socket>.value`` from Blender 5.1,
    ID properties of the modifier before."""
    interface = getattr(getattr(mod, "properties", None), "inputs", None)
    if interface is not None:
        names = [p.identifier for p in interface.bl_rna.properties]
        names = [name for name in names if name not in ("rna_type", "name")]
        return [getattr(getattr(interface, name), "value", None) for name in names]
    return [mod[key] for key in mod.keys()]


def _is_id(value) -> bool:
    return isinstance(value, bpy.types.Object | bpy.types.Collection)


def _constraint_reads(con: bpy.types.Constraint, target: bpy.types.Object) -> bool:
    if getattr(con, "target", None) != target or not getattr(con, "enabled", True):
        return False
    return con.type in SURFACE_CONSTRAINTS or bool(getattr(con, "subtarget", ""))


def _object_reads(user: bpy.types.Object, target: bpy.types.Object, holders: set) -> str | None:
    """Why ``user`` reads ``target``'s geometry, or None (it references only its transform)."""
    if user.parent == target and user.parent_type in ("VERTEX", "VERTEX_3"):
        return f"'{user.name}' is parented to its vertices"
    for mod in user.modifiers:
        if _modifier_reads(mod, target, holders):
            return f"'{user.name}' reads it (modifier '{mod.name}')"
    constraints = list(user.constraints)
    if user.pose is not None:
        constraints += [c for pb in user.pose.bones for c in pb.constraints]
    for con in constraints:
        if _constraint_reads(con, target):
            return f"'{user.name}' reads it (constraint '{con.name}')"
    if user.instance_type == "COLLECTION" and user.instance_collection in holders:
        return f"'{user.name}' instances its collection '{user.instance_collection.name}'"
    return None


def _holders(target: bpy.types.Object) -> set:
    """Collections that hold ``target``, directly or through child collections."""
    return {c for c in bpy.data.collections if c.all_objects.get(target.name) == target}


def mesh_readers(targets: list[bpy.types.Object]) -> dict[int, str]:
    """``session_uid`` → one phrase naming something that reads that object's evaluated mesh, for each of
    ``targets`` that has one (others are left out)."""
    if not targets:
        return {}
    holders = {t.session_uid: _holders(t) for t in targets}
    subset = set(targets) | {c for hs in holders.values() for c in hs}
    users = bpy.data.user_map(subset=subset)
    found: dict[int, str] = {}
    for target in targets:
        why = _own_reason(target)
        held = holders[target.session_uid]
        candidates = set(users.get(target, ())) | {u for c in held for u in users.get(c, ())}
        for user in sorted(candidates, key=lambda u: u.name):
            if why is not None:
                break
            if user == target:
                continue
            if isinstance(user, bpy.types.Object):
                why = _object_reads(user, target, held)
            elif isinstance(user, bpy.types.ParticleSettings) and user.users:
                why = f"particles '{user.name}' instance it"
            elif isinstance(user, bpy.types.NodeTree) and user.users and user.bl_idname == "GeometryNodeTree":
                why = f"node group '{user.name}' reads it"
        if why is not None:
            found[target.session_uid] = why
    return found


def _own_reason(target: bpy.types.Object) -> str | None:
    """What of the object itself reads its evaluated mesh: its rigid body, children it instances."""
    if target.rigid_body is not None:
        return "its rigid body reads it"
    if target.instance_type in ("VERTS", "FACES") and target.children:
        return "it instances its children on its mesh"
    return None
