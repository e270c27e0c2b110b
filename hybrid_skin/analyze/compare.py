"""Render Comparison: LBS | current hybrid | DQS side by side, to choose a deform factor. The picture
(:mod:`.comparison`, drawn with the viewport's own shaders) opens in an Image Editor as an image datablock
and, when a file path is given, is written to that PNG first."""

from __future__ import annotations

import bpy
from bpy.props import IntProperty, StringProperty

from ..operator_base import GuardedOperator, refuse
from . import comparison

__all__ = ["HYBRID_SKIN_OT_render_comparison"]


class HYBRID_SKIN_OT_render_comparison(GuardedOperator, bpy.types.Operator):
    """Render the active skinned mesh as LBS | its hybrid | DQS side by side and show it in an Image
    Editor (and a PNG file), to choose a deform factor"""

    bl_idname = "hybrid_skin.render_comparison"
    bl_label = "Render Hybrid Skin Comparison"
    bl_options = {"REGISTER"}

    filepath: StringProperty(
        name="PNG File",
        description="Also write the picture to this PNG (empty: only show it in Blender)",
        subtype="FILE_PATH",
        default="//hybrid_skin_comparison.png",
        options={"PATH_SUPPORTS_BLEND_RELATIVE"},
    )
    width: IntProperty(
        name="Panel Width", description="Width of each of the three pictures, in pixels",
        default=512, min=64, max=4096,
    )  # fmt: skip
    height: IntProperty(
        name="Panel Height", description="Height of the pictures, in pixels", default=512, min=64, max=4096
    )

    @classmethod
    def poll(cls, context):
        obj = context.active_object
        if obj is None or obj.type != "MESH":
            return refuse(cls, "Select a mesh deformed by an Armature modifier to compare its skinning")
        return True

    def invoke(self, context, event):
        if not bpy.data.filepath and self.filepath.startswith("//"):
            self.filepath = ""  # an unsaved file has no folder for "//": show the picture only
        return context.window_manager.invoke_props_dialog(self, width=380)

    def draw(self, context):
        layout = self.layout
        layout.use_property_split = True
        layout.prop(self, "width")
        layout.prop(self, "height")
        layout.prop(self, "filepath")

    def execute(self, context):
        path = comparison.comparison_path(self.filepath) if self.filepath else None
        pixels = comparison.comparison_pixels(context, context.active_object, self.width, self.height)
        if path is not None:
            comparison.save_png(pixels, path)
        image = comparison.comparison_image(pixels, path)
        shown = show_in_image_editor(context, image)
        where = f"wrote {path} and " if path is not None else ""
        seen = "showing it in the Image Editor" if shown else f"see image '{image.name}' in an Image Editor"
        self.report({"INFO"}, f"Comparison: {where}{seen}")
        return {"FINISHED"}


def show_in_image_editor(context, image: bpy.types.Image) -> bool:
    """Show ``image`` in an open Image Editor, else where Blender shows a render (the user's Preferences ▸
    Interface ▸ Temporary Editors ▸ Render In: a new window by default). False without a window
    (background, scripts): the image datablock is there to look at later."""
    window_manager = context.window_manager
    if context.window is None or not getattr(window_manager, "windows", None):
        return False

    def image_editor():
        for window in window_manager.windows:
            for area in window.screen.areas:
                if area.type == "IMAGE_EDITOR":
                    return area
        return None

    area = image_editor()
    if area is None:
        try:
            bpy.ops.render.view_show("INVOKE_DEFAULT")
        except RuntimeError:
            return False
        area = image_editor()
        if area is None:
            return False
    area.spaces.active.image = image
    area.tag_redraw()
    return True


classes = (HYBRID_SKIN_OT_render_comparison,)


def register() -> None:
    for cls in classes:
        bpy.utils.register_class(cls)


def unregister() -> None:
    for cls in reversed(classes):
        bpy.utils.unregister_class(cls)
