"""Operators that add, remove and rebind Hybrid Skin, like a modifier. All undoable."""

from __future__ import annotations

import os

import bpy
from bpy.props import IntProperty, StringProperty

from .. import bridge
from ..bake import baker
from ..draw import comparison
from ..errors import HybridSkinError
from . import bind, display, viewport

__all__ = [
    "HYBRID_SKIN_OT_add",
    "HYBRID_SKIN_OT_rebind",
    "HYBRID_SKIN_OT_remove",
    "HYBRID_SKIN_OT_render_comparison",
]


def has_hybrid_skin(obj: bpy.types.Object | None) -> bool:
    return obj is not None and obj.type == "MESH" and obj.hybrid_skin.enabled


class NeedsHybridSkin:
    """Mixin: the operator runs on an active mesh that uses Hybrid Skin."""

    @classmethod
    def poll(cls, context):
        return has_hybrid_skin(context.active_object)


class HYBRID_SKIN_OT_add(bpy.types.Operator):
    """Deform the active mesh with Hybrid Skin (a blend of linear and dual quaternion skinning)"""

    bl_idname = "hybrid_skin.add"
    bl_label = "Add Hybrid Skin"
    bl_options = {"REGISTER", "UNDO"}

    @classmethod
    def poll(cls, context):
        return context.mode == "OBJECT"

    def execute(self, context):
        try:
            obj = bridge.editable_mesh(context.active_object)
            mod = bridge.armature_modifier(obj)
            bridge.validate(obj, mod)
            settings = obj.hybrid_skin
            if settings.enabled:
                self.report({"WARNING"}, f"'{obj.name}' already uses Hybrid Skin")
                return {"CANCELLED"}
            settings.modifier_name = mod.name
            bound = bind.rebind(obj, context.evaluated_depsgraph_get())
        except HybridSkinError as err:
            self.report({"ERROR"}, str(err))
            return {"CANCELLED"}
        refusal = display.gpu_refusal(obj) if settings.display == "GPU" else None
        if refusal is not None:
            settings.display = "EVALUATED"  # say what is shown: Blender's own stack, every modifier in it
        settings.enabled = True  # applies the display state through the update callback
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


class HYBRID_SKIN_OT_remove(NeedsHybridSkin, bpy.types.Operator):
    """Remove Hybrid Skin from the active mesh and restore its modifiers and display exactly"""

    bl_idname = "hybrid_skin.remove"
    bl_label = "Remove Hybrid Skin"
    bl_options = {"REGISTER", "UNDO"}

    def execute(self, context):
        obj = context.active_object
        try:
            bridge.editable_mesh(obj)
        except HybridSkinError as err:
            self.report({"ERROR"}, str(err))
            return {"CANCELLED"}
        baked = bool(obj.hybrid_skin.bake_state)
        if baked:
            baker.clear(obj)  # baked keys are derived data; leaving them would deform twice
        display.restore(obj)
        obj.hybrid_skin.enabled = False
        bind.forget(obj)
        viewport.forget(obj)
        cleared = " and cleared its bake" if baked else ""
        self.report({"INFO"}, f"Removed Hybrid Skin from '{obj.name}'{cleared}")
        return {"FINISHED"}


class HYBRID_SKIN_OT_rebind(NeedsHybridSkin, bpy.types.Operator):
    """Re-read weights and rest shape after editing the mesh or its vertex groups"""

    bl_idname = "hybrid_skin.rebind"
    bl_label = "Rebind"
    bl_options = {"REGISTER", "UNDO"}

    def execute(self, context):
        obj = context.active_object
        try:
            bound = bind.rebind(obj, context.evaluated_depsgraph_get())
        except HybridSkinError as err:
            self.report({"ERROR"}, str(err))
            return {"CANCELLED"}
        viewport.forget(obj)
        self.report({"INFO"}, f"Rebound '{obj.name}': {bound.vertex_count} vertices")
        return {"FINISHED"}


class HYBRID_SKIN_OT_render_comparison(bpy.types.Operator):
    """Render LBS | current hybrid | DQS side by side to a PNG, to choose a deform factor"""

    bl_idname = "hybrid_skin.render_comparison"
    bl_label = "Render Comparison"
    bl_options = {"REGISTER"}

    filepath: StringProperty(name="File Path", subtype="FILE_PATH", default="//hybrid_skin_comparison.png")
    width: IntProperty(name="Panel Width", default=512, min=64, max=4096)
    height: IntProperty(name="Panel Height", default=512, min=64, max=4096)

    @classmethod
    def poll(cls, context):
        obj = context.active_object
        return obj is not None and obj.type == "MESH"

    def invoke(self, context, event):
        context.window_manager.fileselect_add(self)
        return {"RUNNING_MODAL"}

    def execute(self, context):
        path = bpy.path.abspath(self.filepath)
        folder = os.path.dirname(path) or "."
        if not path.lower().endswith(".png"):
            self.report({"ERROR"}, f"'{self.filepath}' is not a .png path: choose a PNG file name")
            return {"CANCELLED"}
        if not os.path.isdir(folder) or not os.access(folder, os.W_OK):
            self.report({"ERROR"}, f"Cannot write to '{folder}': choose a writable folder")
            return {"CANCELLED"}
        try:
            comparison.render_comparison(
                context, context.active_object, path, width=self.width, height=self.height
            )
        except HybridSkinError as err:
            self.report({"ERROR"}, str(err))
            return {"CANCELLED"}
        self.report({"INFO"}, f"Wrote {path}")
        return {"FINISHED"}


classes = (HYBRID_SKIN_OT_add, HYBRID_SKIN_OT_remove, HYBRID_SKIN_OT_rebind, HYBRID_SKIN_OT_render_comparison)


def register() -> None:
    for cls in classes:
        bpy.utils.register_class(cls)


def unregister() -> None:
    for cls in reversed(classes):
        bpy.utils.unregister_class(cls)
