"""View3D ▸ Sidebar ▸ "Hybrid Skin" tab."""

from __future__ import annotations

import bpy

from ..rig import bind, setup
from . import viewport


class VIEW3D_PT_hybrid_skin(bpy.types.Panel):
    """Hybrid Skin settings of the active mesh"""

    bl_label = "Hybrid Skin"
    bl_space_type = "VIEW_3D"
    bl_region_type = "UI"
    bl_category = "Hybrid Skin"

    def draw(self, context):
        layout = self.layout
        obj = context.active_object
        if obj is None or obj.type != "MESH":
            self.draw_no_mesh(layout, obj)
            return
        settings = obj.hybrid_skin
        if not settings.enabled:
            layout.operator("hybrid_skin.add", icon="MOD_ARMATURE")
            return
        row = layout.row(align=True)
        row.operator("hybrid_skin.remove", icon="X")
        row.operator("hybrid_skin.rebind", icon="FILE_REFRESH")
        layout.prop(settings, "factor_mode", expand=True)
        # Only what acts in this mode: Auto reads no slider, the group scales the slider's number.
        if settings.factor_mode == "GLOBAL":
            layout.prop(settings, "deform_factor", slider=True)
        elif settings.factor_mode == "VERTEX_GROUP":
            layout.prop_search(settings, "factor_vertex_group", obj, "vertex_groups")
            layout.prop(settings, "deform_factor", slider=True, text="Group Scale")
        else:
            layout.prop(settings, "auto_profile")
            self.draw_auto_path(layout, obj)
        layout.prop(settings, "display", expand=True)
        self.draw_display_note(layout, obj)
        layout.operator("hybrid_skin.render_comparison", icon="RENDER_STILL")
        self.draw_bake(layout, settings)
        self.draw_stats(layout, obj)
        layout.operator("hybrid_skin.remove_all", text="Remove from All Objects", icon="TRASH")

    @staticmethod
    def draw_no_mesh(layout, obj) -> None:
        """No mesh active: say what to select (an armature: the meshes it deforms)."""
        if obj is None or obj.type != "ARMATURE":
            layout.label(text="Select a skinned mesh", icon="INFO")
            return
        meshes = [
            o.name for o in bpy.data.objects
            if o.type == "MESH" and any(m.type == "ARMATURE" and m.object == obj for m in o.modifiers)
        ]
        col = layout.column(align=True)
        if not meshes:
            col.label(text=f"No mesh is deformed by '{obj.name}'", icon="INFO")
            return
        col.label(text="Hybrid Skin is set on a mesh: select one", icon="INFO")
        for name in meshes[:6]:
            col.label(text=name, icon="OUTLINER_OB_MESH")
        if len(meshes) > 6:
            col.label(text=f"... and {len(meshes) - 6} more")

    @staticmethod
    def draw_auto_path(layout, obj) -> None:
        """Who computes Auto here: Blender from the pose, or the add-on at each frame (and what a machine
        without the add-on renders then)."""
        rec = setup.readable(obj) if setup.is_local(obj) else None
        col = layout.column(align=True)
        if rec is None or rec.auto != setup.AUTO_ATTRIBUTE:
            col.label(text="Auto: evaluated by Blender (Geometry Nodes)", icon="NODETREE")
            return
        col.label(text="Auto: written by Hybrid Skin each frame", icon="INFO")
        col.label(text=f"({rec.auto_reason})")
        col.label(text="Without the add-on: the last frame's factors")

    @staticmethod
    def draw_display_note(layout, obj) -> None:
        """What draws the mesh now and, for the GPU preview, what it does not feed."""
        settings = obj.hybrid_skin
        if not setup.is_local(obj):
            layout.label(text="Linked: Blender shows its library's deformation", icon="LIBRARY_DATA_DIRECT")
            return
        rec = setup.readable(obj)
        if rec is None or settings.bake_state:
            return
        col = layout.column(align=True)
        if rec.hidden_for == setup.PAINT:
            col.label(text="Painting: your Armature modifier alone", icon="INFO")
            col.label(text="is shown, where the brush paints")
            return
        if settings.display != "GPU":
            return
        if rec.gpu_draws:
            col.label(text="Preview drawn by Hybrid Skin's shaders", icon="INFO")
            col.label(text="OBJ/FBX exports, ray casts, scripts and")
            col.label(text="Viewport Render Image see the rest pose")
            return
        notes = {
            setup.HIDDEN: "Armature modifier hidden: Blender draws the mesh",
            setup.REFUSED: "Shown by Blender's own modifiers (see the Info log)",
            setup.TAIL: "A modifier follows the Armature one: Blender draws",
            setup.READ: "Something reads the mesh: Blender draws it",
            setup.RENDER: "Viewport render: Blender draws the mesh",
        }
        col.label(text=notes.get(rec.aside, "Blender draws the mesh until Object Mode"), icon="INFO")

    @staticmethod
    def draw_bake(layout, settings) -> None:
        box = layout.box()
        box.label(text="Bake", icon="SHAPEKEY_DATA")
        if settings.bake_state:
            box.label(text="Baked: the Armature modifier is bypassed")
            box.operator("hybrid_skin.clear_bake", icon="TRASH")
            return
        row = box.row(align=True)
        row.operator("hybrid_skin.bake_deformation", text="Shape Keys").target = "SHAPE_KEYS"
        row.operator("hybrid_skin.bake_deformation", text="Current Frame").target = "CURRENT"
        row = box.row(align=True)
        row.operator("hybrid_skin.bake_deformation", text="PC2 Cache").target = "PC2"
        row.operator("hybrid_skin.bake_deformation", text="MDD Cache").target = "MDD"

    @staticmethod
    def draw_stats(layout, obj) -> None:
        bound = bind.peek(obj)
        col = layout.column(align=True)
        if bound is None:
            col.label(text="Not bound yet")
            return
        col.label(text=f"Vertices: {bound.vertex_count:,}")
        segments = bound.bones.virtual_count - bound.bones.count
        col.label(
            text=f"Bones: {bound.bones.count}" + (f" + {segments} B-bone segment joints" if segments else "")
        )
        col.label(text=f"Max influences: {bound.binding.max_influences}")
        shown = viewport.viewport_state().shown.get(obj.session_uid)
        ms = None if shown is None else shown.update_ms
        if ms is not None:
            col.label(text=f"Last update: {ms:.2f} ms")


classes = (VIEW3D_PT_hybrid_skin,)


def register() -> None:
    for cls in classes:
        bpy.utils.register_class(cls)


def unregister() -> None:
    for cls in reversed(classes):
        bpy.utils.unregister_class(cls)
