"""The Analyze sub-panel of the Hybrid Skin sidebar tab: the last analysis of the active mesh."""

from __future__ import annotations

import bpy

from ..core.analysis import Analysis
from ..core.folds import FOLD_LIMIT
from .operators import HYBRID_SKIN_OT_analyze, analyzed_object, last_analysis

#: How the panel names each method the analysis measures (its rows are keyed by these internal names).
ROW_LABELS = {
    "LBS": "LBS",
    "DQS": "DQS",
    "current": "Your Setting",
    "best": "Best Single Factor",
    "AUTO": "Auto: Round",
    "AUTO_KEEP_VOLUME": "Auto: Keep Volume",
    "AUTO_JOINT": "Auto: Per Joint",
}
#: Share of the sidebar's width for the method's name; the numbers share the rest.
NAME_SHARE = 0.42

__all__ = ["VIEW3D_PT_hybrid_skin_analyze", "draw_results"]

#: The panel lists at most this many bones, those with the largest artifacts.
PANEL_BONES = 6


def _percent(value: float | None) -> str:
    return "—" if value is None else f"{100.0 * value:+.1f}%"


def _factor_text(result: Analysis, name: str, factor: float | None) -> str:
    if factor is not None:
        return f"{factor:.2f}"
    return result.current_label if name == "current" else "per vertex"


def _table_row(layout, name: str, cells: list[str]):
    """One row: the method's name on the left, its numbers in equal columns on the right."""
    split = layout.split(factor=NAME_SHARE, align=True)
    split.label(text=name)
    numbers = split.row(align=True)
    for text in cells:
        numbers.label(text=text)


def _folds_text(result: Analysis, name: str) -> str:
    """How many blended edges the row folds more than :data:`FOLD_LIMIT` degrees beyond both LBS and DQS,
    and the worst of them ("0", "3, 41°"); LBS and DQS are the reference ("—")."""
    summary = (result.fold_rows or {}).get(name)
    if summary is None or name in ("LBS", "DQS"):
        return "—"
    return f"{summary.over_limit}, {summary.worst:.0f}°" if summary.over_limit else "0"


def draw_results(layout, result: Analysis, frame: int) -> None:
    """The analysis as the panel shows it: volume and folds per method, then the bones with the worst
    artifacts."""
    if result.frame != frame:
        layout.label(text=f"Results of frame {result.frame}: analyze again", icon="ERROR")
    layout.label(text="Whole mesh", icon="MESH_DATA")
    col = layout.column(align=True)
    _table_row(col, "Method", ["Factor", "Volume", "Folds"])
    for name, (factor, measure) in result.comparison.rows.items():
        volume = "open mesh" if measure.volume_change is None else _percent(measure.volume_change)
        cells = [_factor_text(result, name, factor), volume, _folds_text(result, name)]
        _table_row(col, ROW_LABELS.get(name, name), cells)
    layout.label(text=f"Folds: edges turned over {FOLD_LIMIT:g}° beyond both LBS and DQS", icon="INFO")
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
        _table_row(col, "Method", ["Bulge", "Shrink", "Collapse", "Volume"])
        for name, summary in by_bone[bone].items():
            cells = [f"{100.0 * value:.1f}%" for value in (summary.bulge, summary.shrink, summary.collapse)]
            _table_row(col, ROW_LABELS.get(name, name), [*cells, _percent(summary.volume_change)])
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
