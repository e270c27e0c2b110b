"""Analyze Deformation: the operator (N-panel ▸ Hybrid Skin ▸ Analyze) and the glue that feeds the core.

:func:`analyze` poses the active mesh's bind at the current frame and hands its arrays to
:func:`..core.analysis.analyze_pose`. Results are numbers only, kept per object in the runtime until the
next analysis (nothing is written to the .blend, so the operator needs no undo step).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import bpy
import numpy as np

from .. import bridge, runtime
from ..core.analysis import Analysis, analyze_pose
from ..core.autofactor import PROFILES
from ..errors import HybridSkinError
from ..operator_base import GuardedOperator, in_modes, refuse
from ..rig import bind, factor

__all__ = ["AUTO_ROWS", "HYBRID_SKIN_OT_analyze", "analyze", "analyzed_object", "last_analysis"]

#: The analysis row of each Auto profile (the default profile is the row "AUTO").
AUTO_ROWS = {"ROUND": "AUTO", "KEEP_VOLUME": "AUTO_KEEP_VOLUME", "JOINT": "AUTO_JOINT"}


def analyze(
    obj: bpy.types.Object, depsgraph: bpy.types.Depsgraph, grid: np.ndarray | None = None
) -> Analysis:
    """Measure LBS, DQS, the object's own factor, the best global factor (on ``grid``, default steps
    of 0.01) and every Auto profile on ``obj`` at the depsgraph's frame. Raises
    :class:`..errors.HybridSkinError`."""
    bound = bind.cached_bind(obj, depsgraph)
    wanted = factor.resolve(obj, bound)
    posed = bound.posed(depsgraph)
    t2a = posed.target_to_armature
    rest = bound.rest_positions.astype(np.float64) @ t2a[:3, :3].T + t2a[:3, 3]
    triangles, corner_vertex, _normals = bridge.surface(obj.data)
    if triangles.size == 0:
        raise HybridSkinError(f"'{obj.name}' has no faces: there is no surface to measure")
    auto = {AUTO_ROWS[profile]: posed.auto_factors(profile) for profile in PROFILES}
    return analyze_pose(
        rest,
        corner_vertex[triangles],
        bound.bones,
        bound.virtual_rest,
        bound.binding,
        posed.palette,
        posed.deform,
        current=posed.auto_factors() if wanted.auto else wanted.values(),
        current_label=wanted.label,
        auto=auto,
        object_name=obj.name,
        object_uid=obj.session_uid,
        frame=depsgraph.scene.frame_current,
        grid=grid,
    )


def analyzed_object(context) -> bpy.types.Object | None:
    """The active mesh if it uses Hybrid Skin (what the operator and the panel work on)."""
    obj = context.active_object
    if obj is None or obj.type != "MESH" or not obj.hybrid_skin.enabled:
        return None
    return obj


def last_analysis(obj: bpy.types.Object) -> Analysis | None:
    """The last analysis of this very object (not of an earlier object of the same name)."""
    result = _state().analyses.get(obj.session_uid)
    return result if result is not None and result.object_uid == obj.session_uid else None


@dataclass
class AnalyzeState:
    """The last analysis of each object, by ``Object.session_uid`` (a rename keeps it)."""

    analyses: dict[int, Analysis] = field(default_factory=dict)


def _state() -> AnalyzeState:
    return runtime.get().state(AnalyzeState)


class HYBRID_SKIN_OT_analyze(GuardedOperator, bpy.types.Operator):
    """Measure volume change, joint bulge and shrink, candy-wrapper collapse: LBS, DQS, own, best, Auto"""

    bl_idname = "hybrid_skin.analyze"
    bl_label = "Analyze Hybrid Skin Deformation"
    bl_options = {"REGISTER"}

    @classmethod
    def poll(cls, context):
        if analyzed_object(context) is None:
            return refuse(cls, "Select a mesh that uses Hybrid Skin to measure its joints")
        return in_modes(cls, context, "analyze the deformation")

    def execute(self, context):
        obj = analyzed_object(context)
        result = analyze(obj, context.evaluated_depsgraph_get())
        _state().analyses[obj.session_uid] = result
        best = result.comparison.rows["best"][0]
        self.report(
            {"INFO"},
            f"'{obj.name}' frame {result.frame}: {len(result.labels)} moved joints, "
            f"best global factor {best:.2f}",
        )
        return {"FINISHED"}


classes = (HYBRID_SKIN_OT_analyze,)


def register() -> None:
    for cls in classes:
        bpy.utils.register_class(cls)


def unregister() -> None:
    for cls in reversed(classes):
        bpy.utils.unregister_class(cls)
    _state().analyses.clear()
