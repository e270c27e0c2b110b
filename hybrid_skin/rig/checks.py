"""The input checks every feature shares: what Hybrid Skin refuses, each as one sentence that names the
object and the fix (:class:`..errors.HybridSkinError`; operators report it, the API raises it)."""

from __future__ import annotations

import hashlib
import os

import bpy

from ..errors import HybridSkinError

__all__ = [
    "absolute_path",
    "armature_in_edit_mode",
    "editable_mesh",
    "single_user_mesh",
    "validate",
    "vertex_count_refusal",
]


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


def vertex_count_refusal(obj: bpy.types.Object, mod: bpy.types.Modifier) -> str:
    """The sentence for modifiers above ``mod`` that change the vertex count it receives."""
    return (
        f"Modifiers above '{mod.name}' on '{obj.name}' change the vertex count: "
        "move the Armature modifier above them"
    )


def single_user_mesh(obj: bpy.types.Object, what: str) -> None:
    """Refuse ``what`` (``"a bake"``, ``"adding Hybrid Skin"``) on a mesh that other objects use too:
    each of them would show the change (skinned ones twice)."""
    others = [o.name for o in bpy.data.objects if o.data == obj.data and o != obj]
    if others:
        raise HybridSkinError(
            f"'{obj.name}' shares its mesh '{obj.data.name}' with {others[:3]}: {what} would change "
            "them all; make it single-user first (Object ▸ Relations ▸ Make Single User)"
        )


def file_name_for(name: str) -> str:
    """A file name for what Blender calls ``name``: cleaned (``bpy.path.clean_name``); where cleaning
    changed it (``Robot.001`` and ``Robot_001`` both clean to ``Robot_001``), a short hash of the real name
    keeps the two apart, so the bakes of two objects never share a file name."""
    cleaned = bpy.path.clean_name(name)
    return cleaned if cleaned == name else f"{cleaned}_{hashlib.sha1(name.encode('utf-8')).hexdigest()[:6]}"


def absolute_path(path: str, what: str) -> str:
    """``path`` made absolute; a path relative to the .blend file (``//``) needs a saved file."""
    if path.startswith("//") and not bpy.data.filepath:
        raise HybridSkinError(
            f"The {what} path '{path}' is relative to the .blend file, which is not saved yet: "
            "save the file first or give an absolute path"
        )
    return os.path.abspath(bpy.path.abspath(path))
