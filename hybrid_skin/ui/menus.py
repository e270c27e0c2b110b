"""Every user-facing operator where Blender users look for it, so F3 finds it with Developer Extras off.

Blender's menu search (F3) lists what the editor's menus hold; an operator in no menu is found only by
the developer's operator search. So each operator is in the menus of its kind of work:

* **Object ▸ Hybrid Skin** (3D Viewport, Object Mode): everything the sidebar panel offers, by
  feature: set up (Add, Remove, Rebind), look (Analyze, Render Comparison), bake (shape keys, the current
  frame, PC2/MDD point caches, Clear), animation textures (VAT bake, Crowd Preview, Skin Rigid Parts);
* **Object ▸ Animation**, beside Blender's own *Bake Action...*: the deformation bake and the texture bake;
* **File ▸ Clean Up**: Remove Hybrid Skin from All Objects (a file handed on without the add-on);
* **Pose ▸ Hybrid Skin** (an armature in Pose Mode, where animators work): the texture bake, Crowd
  Preview and Skin Rigid Parts;
* the **Action editor**'s own menu (Action, or Key before Blender 4.4): the texture bake (from the
  animtex feature's own entry) and Crowd Preview.

Operators are named by ``bl_idname`` only (no feature module is imported), and their greyed entries say
why through each operator's ``poll_message_set``.
"""

from __future__ import annotations

import bpy

__all__ = ["MENU_ENTRIES", "VIEW3D_MT_hybrid_skin", "VIEW3D_MT_hybrid_skin_pose"]

#: (operator, text, properties) rows of the Object ▸ Hybrid Skin menu; None is a separator.
OBJECT_ITEMS: tuple = (
    ("hybrid_skin.add", None, {}),
    ("hybrid_skin.rebind", None, {}),
    ("hybrid_skin.remove", None, {}),
    ("hybrid_skin.remove_all", None, {}),
    None,
    ("hybrid_skin.analyze", None, {}),
    ("hybrid_skin.render_comparison", "Render Hybrid Skin Comparison...", {}),
    None,
    ("hybrid_skin.bake_deformation", "Bake Hybrid Skin to Shape Keys", {"target": "SHAPE_KEYS"}),
    ("hybrid_skin.bake_deformation", "Bake Hybrid Skin to Shape Key (Current Frame)", {"target": "CURRENT"}),
    ("hybrid_skin.bake_deformation", "Bake Hybrid Skin to PC2 Point Cache...", {"target": "PC2"}),
    ("hybrid_skin.bake_deformation", "Bake Hybrid Skin to MDD Point Cache...", {"target": "MDD"}),
    ("hybrid_skin.clear_bake", None, {}),
    None,
    ("hybrid_skin.bake_animation_texture", "Bake Animation Texture (VAT)...", {}),
    ("hybrid_skin.crowd_preview", "Animation Texture Crowd Preview...", {}),
    ("hybrid_skin.skin_rigid_parts", None, {}),
)
POSE_ITEMS: tuple = OBJECT_ITEMS[-3:]
ANIMATION_ITEMS: tuple = (
    ("hybrid_skin.bake_deformation", "Bake Hybrid Skin to Shape Keys", {"target": "SHAPE_KEYS"}),
    ("hybrid_skin.bake_animation_texture", "Bake Animation Texture (VAT)...", {}),
)
#: File ▸ Clean Up: where a file is readied to be handed on.
CLEANUP_ITEMS: tuple = (("hybrid_skin.remove_all", None, {}),)
ACTION_EDITOR_ITEMS: tuple = (("hybrid_skin.crowd_preview", "Animation Texture Crowd Preview...", {}),)


def draw_items(layout, items) -> None:
    """Draw rows of (operator, text, properties). Menus invoke their operators, so the dialogs (texture
    bake, comparison, crowd, point cache file) open on click."""
    for item in items:
        if item is None:
            layout.separator()
            continue
        idname, text, properties = item
        button = layout.operator(idname) if text is None else layout.operator(idname, text=text)
        for name, value in properties.items():
            setattr(button, name, value)


class VIEW3D_MT_hybrid_skin(bpy.types.Menu):
    """Hybrid Skin: skinning, bakes and animation textures of the active object"""

    bl_label = "Hybrid Skin"
    bl_idname = "VIEW3D_MT_hybrid_skin"

    def draw(self, context):
        draw_items(self.layout, OBJECT_ITEMS)


class VIEW3D_MT_hybrid_skin_pose(bpy.types.Menu):
    """Hybrid Skin: animation textures of this armature"""

    bl_label = "Hybrid Skin"
    bl_idname = "VIEW3D_MT_hybrid_skin_pose"

    def draw(self, context):
        draw_items(self.layout, POSE_ITEMS)


def _object_menu(self, context) -> None:
    self.layout.separator()
    self.layout.menu(VIEW3D_MT_hybrid_skin.bl_idname)


def _pose_menu(self, context) -> None:
    self.layout.separator()
    self.layout.menu(VIEW3D_MT_hybrid_skin_pose.bl_idname)


def _animation_menu(self, context) -> None:
    self.layout.separator()
    draw_items(self.layout, ANIMATION_ITEMS)


def _cleanup_menu(self, context) -> None:
    self.layout.separator()
    draw_items(self.layout, CLEANUP_ITEMS)


def _action_editor_menu(self, context) -> None:
    space = context.space_data
    if space is not None and getattr(space, "ui_mode", getattr(space, "mode", "")) == "ACTION":
        draw_items(self.layout, ACTION_EDITOR_ITEMS)


#: The Action editor's own menu where it exists (Blender >= 4.4), else its Key menu.
ACTION_MENU = "DOPESHEET_MT_action" if hasattr(bpy.types, "DOPESHEET_MT_action") else "DOPESHEET_MT_key"

#: Blender's menu → what the add-on appends to it.
MENU_ENTRIES = {
    "VIEW3D_MT_object": _object_menu,
    "VIEW3D_MT_object_animation": _animation_menu,
    "VIEW3D_MT_pose": _pose_menu,
    "TOPBAR_MT_file_cleanup": _cleanup_menu,
    ACTION_MENU: _action_editor_menu,
}

classes = (VIEW3D_MT_hybrid_skin, VIEW3D_MT_hybrid_skin_pose)


def register() -> None:
    for cls in classes:
        bpy.utils.register_class(cls)
    for menu, entry in MENU_ENTRIES.items():
        getattr(bpy.types, menu).append(entry)


def unregister() -> None:
    for menu, entry in reversed(MENU_ENTRIES.items()):
        getattr(bpy.types, menu).remove(entry)
    for cls in reversed(classes):
        bpy.utils.unregister_class(cls)
