"""Public scripting API of Hybrid Skin.

Installed as an extension it is ``bl_ext.user_default.hybrid_skin.api``::

    from bl_ext.user_default.hybrid_skin import api
    positions = api.deformed_positions(bpy.context.object)            # object's own factor
    lbs = api.deformed_positions(bpy.context.object, deform_factor=0.0)
    normals = api.deformed_normals(bpy.context.object, deform_factor=1.0)

Results are ``(N, 3)`` float32 arrays in the mesh object's local space at the current frame,
computed by the add-on's numpy core (never by evaluating Armature modifiers), so they are the same
whether the Armature modifier is shown in the viewport or not.
"""

from __future__ import annotations

import bpy
import numpy as np

from .errors import HybridSkinError
from .rig import bind, factor

__all__ = ["HybridSkinError", "deformed_normals", "deformed_positions", "rebind"]


def _mesh_object(value) -> bpy.types.Object:
    """``value`` if it is a mesh object (its original for an evaluated copy, which a depsgraph hands out);
    else one sentence saying what was passed and what to pass."""
    if isinstance(value, bpy.types.ID):
        try:
            _ = value.name  # a removed object raises here: its Python object outlives it
        except ReferenceError:
            raise HybridSkinError(
                "the object passed was removed from the file: pass an object that exists"
            ) from None
        if value.is_evaluated:
            value = value.original
    if isinstance(value, bpy.types.Object) and value.type == "MESH":
        return value
    if isinstance(value, bpy.types.Object):
        got = f"the {value.type.lower()} object '{value.name}'"
    elif isinstance(value, bpy.types.ID):
        got = f"the {type(value).__name__} datablock '{value.name}' (pass the object that uses it)"
    elif isinstance(value, str):
        got = f"the string {value!r} (pass bpy.data.objects[{value!r}])"
    else:
        got = f"{type(value).__name__} {value!r}"
    raise HybridSkinError(f"Hybrid Skin needs a mesh object (bpy.types.Object), got {got}")


def _evaluate(mesh_object, deform_factor, depsgraph, normals: bool):
    mesh_object = _mesh_object(mesh_object)
    if depsgraph is not None and not isinstance(depsgraph, bpy.types.Depsgraph):
        raise HybridSkinError(f"depsgraph must be a bpy.types.Depsgraph or None, got {depsgraph!r}")
    depsgraph = depsgraph or bpy.context.evaluated_depsgraph_get()
    bound = bind.cached_bind(mesh_object, depsgraph)
    wanted = factor.resolve(mesh_object, bound, deform_factor)
    posed = bound.posed(depsgraph)
    return posed.skin(wanted.values(posed), normals=normals)


def deformed_positions(
    mesh_object: bpy.types.Object,
    deform_factor: float | np.ndarray | None = None,
    depsgraph: bpy.types.Depsgraph | None = None,
) -> np.ndarray:
    """Hybrid-skinned vertex positions ``(N, 3)`` float32, mesh local space, current frame.

    ``deform_factor``: ``None`` uses the object's Hybrid Skin settings (global, vertex group or auto
    factor); a number in [0, 1] (0 = linear blend, 1 = dual quaternion) or an ``(N,)`` array of them
    overrides. Anything else (NaN, a value outside [0, 1], a string, even "0.5") is a
    :class:`HybridSkinError`. An evaluated copy of the object is skinned as its original.
    """
    return _evaluate(mesh_object, deform_factor, depsgraph, normals=False)[0]


def deformed_normals(
    mesh_object: bpy.types.Object,
    deform_factor: float | np.ndarray | None = None,
    depsgraph: bpy.types.Depsgraph | None = None,
) -> np.ndarray:
    """Unit vertex normals ``(N, 3)`` float32 of the hybrid-skinned mesh: ``cofactor(M) @ n``."""
    return _evaluate(mesh_object, deform_factor, depsgraph, normals=True)[1]


def rebind(mesh_object: bpy.types.Object) -> None:
    """Forget cached bind data so the next call re-reads weights and rest shape. Edits are picked up without
    it (see :func:`..skin.handlers.edited_meshes`), except weights a script edits and then, before anything
    evaluates the scene, changes the frame (on a mesh whose shape keys or data are animated) or sets a
    property or the transform of the object."""
    bind.forget(_mesh_object(mesh_object))
