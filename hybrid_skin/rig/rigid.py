"""Meshes that follow a bone rigidly (parented to it), and making them skinned so bakes can carry them.

Game characters are often part skinned, part rigid: a robot's torso, a helmet or a weapon is an object
parented to a bone (``Ctrl+P ▸ Bone``, or to an empty that is), which Blender moves with the bone and no
Armature modifier deforms. Animation textures store what skinning moves, so such a part is missing from
a crowd unless it is skinned. :func:`skin_rigid_part` makes it so without moving a vertex: like *Apply
Transforms*, the part's placement at the *rest* pose goes into its mesh (coordinates, normals, shape
keys), and the object sits where the armature's skinned meshes sit (parented to the armature object with
their transform, or none when there are none) — bone textures hold one palette for meshes that sit alike.
It gets a vertex group named after its bone (weight 1 on every vertex) and an Armature modifier at the
top of its stack. At every pose Blender then computes what it did before: a part under bone ``b`` sat at
``A · S_b · A⁻¹ · W_rest`` (``A`` the armature object's matrix, ``S_b`` the bone's pose matrix times its
inverse rest matrix, in armature space), and the Armature modifier applies the same ``S_b``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import bpy
from mathutils import Matrix

from ..errors import HybridSkinError
from . import stack

#: Modifiers whose result does not depend on the object's own axes and origin: a part with only these
#: can move its placement into the mesh.
FRAME_FREE_MODIFIERS = {"SUBSURF", "TRIANGULATE", "WEIGHTED_NORMAL", "EDGE_SPLIT"}

__all__ = ["RigidPart", "armature_of", "check", "reference_placement", "rigid_parts", "skin_rigid_part"]


@dataclass(frozen=True)
class RigidPart:
    """A mesh object that follows bone ``bone`` of an armature through its parents."""

    obj: bpy.types.Object
    bone: str
    #: The objects between the mesh and the armature (empties the part hangs from), nearest first.
    between: tuple[bpy.types.Object, ...]


def _followed_bone(obj: bpy.types.Object, arm: bpy.types.Object) -> RigidPart | None:
    between, current = [], obj
    while current.parent is not None:
        parent = current.parent
        if parent == arm:
            if current.parent_type == "BONE" and current.parent_bone:
                return RigidPart(obj, current.parent_bone, tuple(between))
            return None  # parented to the armature object (or deformed by it, old style): not a bone
        if current.parent_type != "OBJECT":
            return None  # vertex parents and the like move with something else
        between.append(parent)
        current = parent
    return None


def armature_of(obj: bpy.types.Object | None) -> bpy.types.Object | None:
    """The armature ``obj`` is (an armature), is deformed by (its first Armature modifier's) or follows
    (a bone parent, through other objects), else None."""
    if obj is None:
        return None
    if obj.type == "ARMATURE":
        return obj
    mod = next((m for m in getattr(obj, "modifiers", ()) if m.type == "ARMATURE" and m.object), None)
    if mod is not None:
        return mod.object
    current = obj
    while current.parent is not None:
        if current.parent.type == "ARMATURE" and current.parent_type == "BONE":
            return current.parent
        current = current.parent
    return None


def rigid_parts(arm: bpy.types.Object, objects: Iterable[bpy.types.Object]) -> list[RigidPart]:
    """The mesh objects among ``objects`` that follow a bone of ``arm`` and no Armature modifier deforms,
    by name."""
    found = []
    for obj in objects:
        if obj.type != "MESH" or any(mod.type == "ARMATURE" for mod in obj.modifiers):
            continue
        part = _followed_bone(obj, arm)
        if part is not None:
            found.append(part)
    return sorted(found, key=lambda part: part.obj.name)


def _animated(obj: bpy.types.Object) -> bool:
    anim = obj.animation_data
    return anim is not None and (anim.action is not None or len(anim.drivers) > 0 or len(anim.nla_tracks) > 0)


def check(part: RigidPart, arm: bpy.types.Object) -> None:
    """Raise the one sentence that says why ``part`` cannot be skinned as it moves, if it cannot."""
    obj, name = part.obj, part.bone
    bone = arm.data.bones.get(name)
    if bone is None:
        raise HybridSkinError(f"'{obj.name}' follows a bone '{name}' that '{arm.name}' does not have")
    if not bone.use_deform:
        raise HybridSkinError(
            f"'{obj.name}' follows bone '{name}', which does not deform (Bone properties ▸ Deform): turn "
            "Deform on for it, or parent the mesh to a deforming bone"
        )
    moving = next((o for o in part.between if _animated(o) or o.constraints), None)
    if moving is not None:
        raise HybridSkinError(
            f"'{obj.name}' hangs from '{moving.name}', which is animated or constrained on its own: a "
            "vertex group cannot follow it, so it stays as it is"
        )
    if obj.constraints:
        raise HybridSkinError(
            f"'{obj.name}' has constraints: a skinned copy of its motion would ignore them, so it stays as "
            "it is"
        )
    if _animated(obj):
        raise HybridSkinError(
            f"'{obj.name}' is animated on its own: its keys move it relative to the bone, which a vertex "
            "group cannot follow, so it stays as it is"
        )
    if obj.data.users > 1:
        raise HybridSkinError(
            f"'{obj.name}' shares its mesh data '{obj.data.name}' with other objects: make it single-user "
            "(Object ▸ Relations ▸ Make Single User) first, as Apply Transforms asks"
        )
    placed = next((m for m in obj.modifiers if m.type not in FRAME_FREE_MODIFIERS), None)
    if placed is not None:
        raise HybridSkinError(
            f"'{obj.name}' has a {placed.type.replace('_', ' ').title()} modifier ('{placed.name}'), whose "
            "result may depend on where the object's origin is: apply it first"
        )
    if obj.vertex_groups.get(name) is not None:
        raise HybridSkinError(
            f"'{obj.name}' already has a vertex group named '{name}': rename it, so that the bone's group "
            "can be added"
        )


def _name(obj: bpy.types.Object) -> str:
    return obj.name


def reference_placement(arm: bpy.types.Object, objects: Iterable[bpy.types.Object]) -> Matrix:
    """Where, relative to ``arm``, skinned parts are put: as the first (by name) of the meshes ``arm``
    already deforms sits (a bake's palette is in that mesh's space), or on the armature when none does."""
    meshes = (o for o in objects if o.type == "MESH")
    skinned = sorted((o for o in meshes if stack.find_armature_modifier(o, armature=arm)), key=_name)
    if not skinned:
        return Matrix.Identity(4)
    return arm.matrix_world.inverted() @ skinned[0].matrix_world


def skin_rigid_part(part: RigidPart, arm: bpy.types.Object, placement: Matrix) -> None:
    """Make ``part`` skinned to its bone without moving a vertex (see the module docstring), its object
    placed at ``placement`` relative to the armature (:func:`reference_placement`); checked first
    (:func:`check`), so nothing changes when it raises."""
    check(part, arm)
    obj = part.obj
    pose_bone = arm.pose.bones[part.bone]
    armature_world = arm.matrix_world.copy()
    # S_b, the bone's motion from rest in armature space, as the Armature modifier applies it.
    motion = pose_bone.matrix @ pose_bone.bone.matrix_local.inverted()
    rest_world = armature_world @ motion.inverted() @ armature_world.inverted() @ obj.matrix_world
    into_mesh = (armature_world @ placement).inverted() @ rest_world
    obj.data.transform(into_mesh, shape_keys=True)
    if into_mesh.determinant() < 0.0:  # a mirroring placement: keep the faces pointing outwards
        obj.data.flip_normals()
    obj.parent = arm
    obj.parent_type = "OBJECT"
    obj.matrix_parent_inverse = placement
    obj.matrix_basis = Matrix.Identity(4)
    group = obj.vertex_groups.new(name=part.bone)
    group.add(range(len(obj.data.vertices)), 1.0, "REPLACE")
    mod = obj.modifiers.new(name="Armature", type="ARMATURE")
    mod.object = arm
    mod.use_vertex_groups, mod.use_bone_envelopes = True, False
    index = len(obj.modifiers) - 1
    if index:
        obj.modifiers.move(index, 0)
