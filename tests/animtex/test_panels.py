"""The animation texture panels as a user meets them, drawn with a recording layout."""

from __future__ import annotations

import importlib

import bpy

from tests.support.layout import draw_panel
from tests.support.scenes import make_chain_armature, make_cylinder, skin_to_chain


def test_the_sidebar_panel_offers_the_bake_and_the_crowd_preview(addon):
    """The Crowd Preview button used to be hidden behind a check for an operator class name Blender
    never registers ("HYBRIDSKIN_OT_crowd_preview"; Blender names it after bl_idname)."""
    arm = make_chain_armature("Rig", [1.0, 1.0])
    skin_to_chain(make_cylinder("Cylinder"), arm)
    bpy.context.view_layer.objects.active = arm
    panels = importlib.import_module(addon.__name__ + ".animtex.panels")
    drawn = draw_panel(panels.VIEW3D_PT_hybrid_skin_animtex)
    assert drawn is not None
    assert drawn.operators() == ["hybrid_skin.bake_animation_texture", "hybrid_skin.crowd_preview"]
    assert [c.text for c in drawn.buttons("hybrid_skin.crowd_preview")] == ["Crowd Preview"]
