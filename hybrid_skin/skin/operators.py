"""Operators that add, remove and rebind Hybrid Skin, like a modifier. All undoable."""

from __future__ import annotations

import bpy
from bpy.props import EnumProperty

from ..errors import HybridSkinError
from ..operator_base import GuardedOperator, in_modes, refuse
from ..rig import baked, bind, checks, handlers, properties, setup, stack
from . import viewport

__all__ = [
    "HYBRID_SKIN_OT_add",
    "HYBRID_SKIN_OT_rebind",
    "HYBRID_SKIN_OT_remove",
    "HYBRID_SKIN_OT_remove_all",
]


def has_hybrid_skin(obj: bpy.types.Object | None) -> bool:
    return obj is not None and obj.type == "MESH" and obj.hybrid_skin.enabled


class NeedsHybridSkin:
    """Mixin: the operator runs on an active mesh that uses Hybrid Skin."""

    @classmethod
    def poll(cls, context):
        return has_hybrid_skin(context.active_object) or refuse(cls, "Select a mesh that uses Hybrid Skin")


class HYBRID_SKIN_OT_add(GuardedOperator, bpy.types.Operator):
    """Deform the active mesh with Hybrid Skin (a blend of linear and dual quaternion skinning)"""

    bl_idname = "hybrid_skin.add"
    bl_label = "Add Hybrid Skin"
    bl_options = {"REGISTER", "UNDO"}

    display: EnumProperty(
        name="Display",
        items=properties.DISPLAYS,
        default="EVALUATED",
        description="How the viewport shows the hybrid (Evaluated: Blender's own stack, seen by everything)",
    )

    @classmethod
    def poll(cls, context):
        return in_modes(cls, context, "add Hybrid Skin")

    def execute(self, context):
        obj = checks.editable_mesh(context.active_object)
        checks.single_user_mesh(obj, "adding Hybrid Skin")
        mod = stack.armature_modifier(obj)
        checks.validate(obj, mod)
        settings = obj.hybrid_skin
        if settings.enabled:
            self.report({"WARNING"}, f"'{obj.name}' already uses Hybrid Skin")
            return {"CANCELLED"}
        settings.modifier_name = mod.name
        settings.modifier_uid = stack.modifier_ref(mod)[0]
        bound = bind.rebind(obj, context.evaluated_depsgraph_get())
        self._obj = obj
        settings.display = self.display
        settings.enabled = True  # sets the display up through the update callback
        refusal = setup.gpu_refusal(obj) if self.display == "GPU" else None
        if refusal is not None:
            self.report({"WARNING"}, refusal)
            return {"FINISHED"}
        segments = bound.bones.virtual_count - bound.bones.count
        extra = f" + {segments} B-bone segment joints" if segments else ""
        self.report(
            {"INFO"},
            f"Hybrid Skin on '{obj.name}': {bound.vertex_count} vertices, "
            f"{bound.bones.count} deform bones{extra}",
        )
        return {"FINISHED"}

    def rollback(self, context) -> None:
        obj = getattr(self, "_obj", None)
        if obj is not None:
            setup.restore(obj)
            obj.hybrid_skin.enabled = False
            bind.forget(obj)


class HYBRID_SKIN_OT_remove(NeedsHybridSkin, GuardedOperator, bpy.types.Operator):
    """Remove Hybrid Skin from the active mesh and restore its modifiers and display exactly"""

    bl_idname = "hybrid_skin.remove"
    bl_label = "Remove Hybrid Skin"
    bl_options = {"REGISTER", "UNDO"}

    def execute(self, context):
        obj = context.active_object
        was_baked = bool(obj.hybrid_skin.bake_state)
        if obj.override_library is None:
            checks.editable_mesh(obj)
        elif was_baked:  # the baked keys live in the library's mesh, which the override cannot change
            raise HybridSkinError(
                f"'{obj.name}' is a library override of a baked object: clear the bake in its library "
                f"file '{obj.override_library.reference.library.filepath}' first"
            )
        elif setup.has_parts(obj):  # an override cannot remove modifiers its library gave it
            raise HybridSkinError(
                f"'{obj.name}' is a library override whose Hybrid Skin is part of its library "
                f"'{obj.override_library.reference.library.filepath}': remove it there"
            )
        # An override's Hybrid Skin comes from its library; restoring only sets its own values back.
        if was_baked:
            baked.clear(obj)  # baked keys are derived data; leaving them would deform twice
        obj.hybrid_skin.enabled = False  # the update callback restores a local object's own setup
        setup.restore(obj)  # (an override set up by an earlier build has its own record)
        return self._forget(obj, " and cleared its bake" if was_baked else "")

    def _forget(self, obj: bpy.types.Object, cleared: str) -> set[str]:
        bind.forget(obj)
        viewport.forget(obj)
        self.report({"INFO"}, f"Removed Hybrid Skin from '{obj.name}'{cleared}")
        return {"FINISHED"}


class HYBRID_SKIN_OT_rebind(NeedsHybridSkin, GuardedOperator, bpy.types.Operator):
    """Read weights and rest shape again now (edits are picked up by themselves; this forces it)"""

    bl_idname = "hybrid_skin.rebind"
    bl_label = "Rebind Hybrid Skin"
    bl_options = {"REGISTER", "UNDO"}

    def execute(self, context):
        obj = context.active_object
        bound = bind.rebind(obj, context.evaluated_depsgraph_get())
        viewport.forget(obj)
        self.report({"INFO"}, f"Rebound '{obj.name}': {bound.vertex_count} vertices")
        return {"FINISHED"}


class HYBRID_SKIN_OT_remove_all(GuardedOperator, bpy.types.Operator):
    """Take Hybrid Skin off every object of this file: each gets its own modifiers and settings back, as
    Remove does. The setup is Blender's own data and stays in files after the add-on is uninstalled;
    this is how a file is handed on without it"""

    bl_idname = "hybrid_skin.remove_all"
    bl_label = "Remove Hybrid Skin from All Objects"
    bl_options = {"REGISTER", "UNDO"}

    @classmethod
    def poll(cls, context):
        if not in_modes(cls, context, "remove Hybrid Skin from the file"):
            return False
        meshes = (o.hybrid_skin for o in bpy.data.objects if o.type == "MESH")
        used = any(settings.enabled or settings.saved_state for settings in meshes)
        return used or refuse(cls, "No object of this file uses Hybrid Skin")

    def execute(self, context):
        meshes = [o for o in bpy.data.objects if o.type == "MESH" and setup.is_local(o)]
        for obj in [o for o in meshes if o.hybrid_skin.bake_state]:
            baked.clear(obj)  # derived data: left alone, the baked keys would deform a second time
        names = handlers.remove_all()
        for obj in bpy.data.objects:
            bind.forget(obj)
        viewport.forget()
        skipped = [o.name for o in bpy.data.objects if o.type == "MESH" and o.hybrid_skin.enabled]
        told = f"Removed Hybrid Skin from {len(names)} object(s)"
        if skipped:
            told += (
                f"; {len(skipped)} kept it (linked from a library, or a record of a newer build): "
                f"{skipped[:3]}"
            )
        self.report({"INFO"}, told)
        return {"FINISHED"}


classes = (HYBRID_SKIN_OT_add, HYBRID_SKIN_OT_remove, HYBRID_SKIN_OT_rebind, HYBRID_SKIN_OT_remove_all)


def register() -> None:
    for cls in classes:
        bpy.utils.register_class(cls)


def unregister() -> None:
    for cls in reversed(classes):
        bpy.utils.unregister_class(cls)
