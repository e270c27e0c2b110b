"""Render Comparison: LBS | current hybrid | DQS side by side to a PNG, to choose a deform factor (the
drawing is :mod:`..draw.comparison`'s, with the viewport's own shaders)."""

from __future__ import annotations

import bpy
from bpy.props import IntProperty, StringProperty

from ..draw import comparison
from ..operator_base import GuardedOperator

__all__ = ["HYBRID_SKIN_OT_render_comparison"]


class HYBRID_SKIN_OT_render_comparison(GuardedOperator, bpy.types.Operator):
    """Render LBS | current hybrid | DQS side by side to a PNG, to choose a deform factor"""

    bl_idname = "hybrid_skin.render_comparison"
    bl_label = "Render Comparison"
    bl_options = {"REGISTER"}

    filepath: StringProperty(
        name="File Path",
        subtype="FILE_PATH",
        default="//hybrid_skin_comparison.png",
        options={"PATH_SUPPORTS_BLEND_RELATIVE"},
    )
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
        path = comparison.render_comparison(
            context, context.active_object, self.filepath, width=self.width, height=self.height
        )
        self.report({"INFO"}, f"Wrote {path}")
        return {"FINISHED"}


classes = (HYBRID_SKIN_OT_render_comparison,)


def register() -> None:
    for cls in classes:
        bpy.utils.register_class(cls)


def unregister() -> None:
    for cls in reversed(classes):
        bpy.utils.unregister_class(cls)
