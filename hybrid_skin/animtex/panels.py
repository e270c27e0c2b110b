"""Animation texture panels: the N-panel sub-panel and the Dope Sheet ▸ Action editor entries.

Both offer the bake (:mod:`.operators`) and show the last bake's summary (:mod:`.summary`); the sidebar's
sub-panel also offers Skin Rigid Parts when meshes parented to bones would be left out of a bake, and
toggles the crowd preview (:mod:`.crowd`) and shows its statistics.
"""

from __future__ import annotations

import bpy

from ..rig import rigid
from . import crowd
from .bake import PHASES
from .operators import (
    HYBRID_SKIN_OT_bake_animation_texture,
    HYBRID_SKIN_OT_crowd_preview,
    HYBRID_SKIN_OT_skin_rigid_parts,
    bake_target,
)
from .summary import last_summary

__all__ = [
    "DOPESHEET_PT_hybrid_skin_animtex",
    "VIEW3D_PT_hybrid_skin_animtex",
    "draw_summary",
    "timing_lines",
]


def timing_lines(seconds: dict[str, float]) -> list[str]:
    """Where the last bake's time went (the phases of :data:`.bake.PHASES`), for the panel:
    sampling and the truth at halfway frames usually dominate, then writing the image."""
    if not seconds:
        return []
    phases = [(name, seconds.get(name, 0.0)) for name in PHASES]
    parts = [f"{name} {value:.2f}" for name, value in phases if value >= 0.005]
    half = (len(parts) + 1) // 2
    return [f"Baked in {sum(v for _, v in phases):.2f} s", ", ".join(parts[:half]), ", ".join(parts[half:])]


def draw_summary(layout, obj) -> None:
    """The last bake's error report (stored on the baked object)."""
    info = last_summary(obj)
    if info is None:
        return
    col = layout.column(align=True)
    col.label(
        text=f"{info.kind} {info.precision}, step {info.frame_step:g}, {info.clips} clip(s), "
        f"{info.size[0]}×{info.size[1]}"
    )
    col.label(text=f"Max error {info.max:.3g} ({info.max_percent:.3g}%)")
    col.label(text=f"Mean error {info.mean:.3g} ({info.mean_percent:.3g}%)")
    for line in timing_lines(info.seconds):
        col.label(text=line, icon="TIME" if line.startswith("Baked") else "BLANK1")
    for warning in info.warnings:
        col.label(text=warning, icon="ERROR")


def _draw_bake_button(layout) -> None:
    layout.operator(HYBRID_SKIN_OT_bake_animation_texture.bl_idname, icon="TEXTURE")


def _draw_rigid_parts(layout, context) -> None:
    """Meshes parented to bones are not in a bake until skinned: say so, with the button that does it."""
    arm = rigid.armature_of(bake_target(context))
    count = len(rigid.rigid_parts(arm, context.scene.objects)) if arm is not None else 0
    if count:
        col = layout.column(align=True)
        col.label(text=f"{count} mesh(es) parented to bones are not baked", icon="INFO")
        col.operator(HYBRID_SKIN_OT_skin_rigid_parts.bl_idname, icon="MOD_ARMATURE")


class VIEW3D_PT_hybrid_skin_animtex(bpy.types.Panel):
    """Bake actions into animation textures for crowds"""

    bl_label = "Animation Texture"
    bl_space_type = "VIEW_3D"
    bl_region_type = "UI"
    bl_category = "Hybrid Skin"
    bl_parent_id = "VIEW3D_PT_hybrid_skin"
    bl_options = {"DEFAULT_CLOSED"}

    @classmethod
    def poll(cls, context):
        return bake_target(context) is not None

    def draw(self, context):
        _draw_bake_button(self.layout)
        _draw_rigid_parts(self.layout, context)
        draw_summary(self.layout, bake_target(context))
        text = "Hide Crowd" if crowd.is_active() else "Crowd Preview"
        self.layout.operator(HYBRID_SKIN_OT_crowd_preview.bl_idname, text=text, icon="COMMUNITY")
        if crowd.is_active():
            self.layout.label(text=crowd.stats_line())


def _is_action_editor(context) -> bool:
    space = context.space_data
    return space is not None and getattr(space, "ui_mode", getattr(space, "mode", "")) == "ACTION"


class DOPESHEET_PT_hybrid_skin_animtex(bpy.types.Panel):
    """Bake this action (or several) into an animation texture"""

    bl_label = "Animation Texture"
    bl_space_type = "DOPESHEET_EDITOR"
    bl_region_type = "UI"
    bl_category = "Hybrid Skin"

    @classmethod
    def poll(cls, context):
        return _is_action_editor(context) and bake_target(context) is not None

    def draw(self, context):
        _draw_bake_button(self.layout)
        draw_summary(self.layout, bake_target(context))


def _menu_entry(self, context) -> None:
    if _is_action_editor(context):
        self.layout.separator()
        _draw_bake_button(self.layout)


#: The Action editor's own menu where it exists (Blender >= 4.4), else its Key menu.
MENU = "DOPESHEET_MT_action" if hasattr(bpy.types, "DOPESHEET_MT_action") else "DOPESHEET_MT_key"

classes = (VIEW3D_PT_hybrid_skin_animtex, DOPESHEET_PT_hybrid_skin_animtex)


def register() -> None:
    for cls in classes:
        bpy.utils.register_class(cls)
    getattr(bpy.types, MENU).append(_menu_entry)


def unregister() -> None:
    getattr(bpy.types, MENU).remove(_menu_entry)
    for cls in reversed(classes):
        bpy.utils.unregister_class(cls)
