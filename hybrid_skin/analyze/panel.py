"""The Analyze sub-panel of the Hybrid Skin sidebar tab: the last analysis of the active mesh."""

from __future__ import annotations

import bpy

from ..core.analysis import Analysis
from .operators import HYBRID_SKIN_OT_analyze, analyzed_object, last_analysis

#: How the panel names the rows of Auto's other profiles (the rest by their own name: "AUTO" is the default
#: profile, Round).
ROW_LABELS = {"AUTO_KEEP_VOLUME": "Keep Vol.", "AUTO_JOINT": "Auto 0.1"}

__all__ = ["VIEW3D_PT_hybrid_skin_analyze", "draw_results"]

#: The panel lists at most this many bones, those with the largest artifacts.
PANEL_BONES = 6


def _percent(value: float | None) -> str:
    return "—" if value is None else f"{100.0 * value:+.1f}%"


def _factor_text(result: Analysis, name: str, factor: float | None) -> str:
    if factor is not None:
        return f"{factor:.2f}"
    return result.current_label if name == "current" else "auto"


def draw_results(layout, result: Analysis, frame: int) -> None:
    """The analysis as the panel shows it: volume per method, then the bones with the worst artifacts."""
    if result.frame != frame:
        layout.label(text=f"Results of frame {result.frame}: analyze again", icon="ERROR")
    col = layout.column(align=True)
    header = col.row(align=True)
    for text in ("Method", "Factor", "Volume"):
        header.label(text=text)
    for name, (factor, measure) in result.comparison.rows.items():
        row = col.row(align=True)
        row.label(text=ROW_LABELS.get(name, name))
        row.label(text=_factor_text(result, name, factor))
        row.label(text="open mesh" if measure.volume_change is None else _percent(measure.volume_change))
    _draw_bones(layout, result)


def _draw_bones(layout, result: Analysis) -> None:
    """One box per bone (at most :data:`PANEL_BONES`, the worst): bulge, shrink, collapse, local volume per
    method."""
    by_bone = result.by_bone()
    if not by_bone:
        layout.label(text="No bent or twisted joint at this frame", icon="INFO")
        return

    def severity(bone: str) -> float:
        return max(max(s.bulge, s.shrink, s.collapse) for s in by_bone[bone].values())

    order = list(by_bone)
    shown = sorted(sorted(order, key=severity, reverse=True)[:PANEL_BONES], key=order.index)
    for bone in shown:
        box = layout.box()
        box.label(text=bone, icon="BONE_DATA")
        col = box.column(align=True)
        header = col.row(align=True)
        for text in ("", "Bulge", "Shrink", "Collapse", "Local Vol."):
            header.label(text=text)
        for name, summary in by_bone[bone].items():
            row = col.row(align=True)
            row.label(text=ROW_LABELS.get(name, name))
            row.label(text=f"{100.0 * summary.bulge:.1f}%")
            row.label(text=f"{100.0 * summary.shrink:.1f}%")
            row.label(text=f"{100.0 * summary.collapse:.1f}%")
            row.label(text=_percent(summary.volume_change))
    if len(order) > len(shown):
        layout.label(text=f"{len(order) - len(shown)} more bones with smaller artifacts")


class VIEW3D_PT_hybrid_skin_analyze(bpy.types.Panel):
    """Skinning artifacts of the active mesh: LBS, DQS, its own factor, the best global factor, Auto"""

    bl_label = "Analyze"
    bl_space_type = "VIEW_3D"
    bl_region_type = "UI"
    bl_category = "Hybrid Skin"
    bl_parent_id = "VIEW3D_PT_hybrid_skin"
    bl_options = {"DEFAULT_CLOSED"}

    @classmethod
    def poll(cls, context):
        return analyzed_object(context) is not None

    def draw(self, context):
        obj = analyzed_object(context)
        self.layout.operator(HYBRID_SKIN_OT_analyze.bl_idname, icon="VIEWZOOM")
        result = last_analysis(obj)
        if result is not None:
            draw_results(self.layout, result, context.scene.frame_current)


classes = (VIEW3D_PT_hybrid_skin_analyze,)


def register() -> None:
    for cls in classes:
        bpy.utils.register_class(cls)


def unregister() -> None:
    for cls in reversed(classes):
        bpy.utils.unregister_class(cls)
