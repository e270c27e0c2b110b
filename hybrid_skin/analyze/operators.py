"""Analyze Deformation: skinning artifacts of the active mesh at the current frame (N-panel ▸ Analyze).

For one pose the operator skins the mesh with LBS, DQS, the object's own factor, the best single global
factor and AUTO, and measures each with :mod:`.core.metrics`: whole-mesh volume change (closed meshes)
and, per joint, outward bulge, candy-wrapper collapse and local volume change. Everything runs in
armature space on the bind's palette, where B-bone segment joints are bones of their own; a joint is
named by its child palette entry. Results are numbers only, kept per object in :data:`results` until the
next analysis (nothing is written to the .blend, so the operator needs no undo step).
"""

from __future__ import annotations

from dataclasses import dataclass

import bpy
import numpy as np

from .. import bridge
from ..core import metrics
from ..core.binding import DeformBones
from ..core.skinning import skin
from ..factor import vertex_factors
from ..skin import bind as rig

__all__ = [
    "Analysis",
    "BoneSummary",
    "HYBRIDSKIN_OT_analyze",
    "VIEW3D_PT_hybrid_skin_analyze",
    "analyze",
    "draw_results",
    "joint_labels",
    "moved_joints",
    "palette_lengths",
    "results",
]

#: A joint counts as moved when its child's deform relative to its parent's differs from the identity by
#: more than this (rotation/scale entries, or translation per unit of child length). Unmoved joints have
#: no artifacts (every blend of two equal matrices is that matrix), so they are not measured.
MOVED_TOLERANCE = 1e-4
#: The panel lists at most this many bones, those with the largest artifacts.
PANEL_BONES = 6


@dataclass(frozen=True)
class BoneSummary:
    """One deform bone under one method: the worst bulge and collapse over its joints (a B-bone owns its
    head joint and its segment joints) and the local volume change at its head joint (``None`` if that
    joint did not move). Segment joints are one segment thick, often less than a ring of the mesh, so
    their capped local volume is ill-conditioned; the head joint's region spans the blend between bones."""

    bulge: float
    collapse: float
    volume_change: float | None


@dataclass(frozen=True)
class Analysis:
    """One analysis of one object: ``comparison`` rows are LBS, DQS, current, best, AUTO.

    ``current_label`` says what the object's own factor is ("0.50", "group", "auto"). Per measured joint
    (child palette entry): ``labels`` its name, ``bones`` the deform bone that owns it; ``heads`` holds
    the joints that are a bone's head (between two bones) rather than a B-bone segment joint.
    """

    object_name: str
    object_uid: int
    frame: int
    current_label: str
    comparison: metrics.FactorComparison
    labels: dict[int, str]
    bones: dict[int, str]
    heads: frozenset[int]

    def by_bone(self) -> dict[str, dict[str, BoneSummary]]:
        """Deform bone → method → :class:`BoneSummary`, bones in palette order."""
        out: dict[str, dict[str, BoneSummary]] = {}
        for name, (_f, m) in self.comparison.rows.items():
            grouped: dict[str, list[metrics.JointMeasure]] = {}
            for j in m.joints:
                grouped.setdefault(self.bones[j.joint], []).append(j)
            for bone, joints in grouped.items():
                head = next((j.volume_change for j in joints if j.joint in self.heads), None)
                out.setdefault(bone, {})[name] = BoneSummary(
                    max(j.bulge for j in joints), max(j.collapse for j in joints), head
                )
        return out

    def table(self) -> str:
        """Plain-text table (as :meth:`.core.metrics.FactorComparison.table`, joints by name)."""
        lines = [f"'{self.object_name}' frame {self.frame}"]
        lines += [f"joint {c}: {self.labels[c]}" for c in sorted(self.labels)]
        return "\n".join([*lines, self.comparison.table()])


#: Object name → its last :class:`Analysis`.
results: dict[str, Analysis] = {}


def palette_lengths(bones: DeformBones, virtual_rest: np.ndarray) -> np.ndarray:
    """``(V,)`` length of each palette entry's skeleton segment along its rest Y axis, for the metrics.

    An ordinary bone spans head to tail. A B-bone segment joint spans to the next joint; the last one
    (at the tail) spans back to the previous joint (negative length), so every entry is a real segment.
    """
    out = np.empty(bones.virtual_count)
    base, counts = bones.virtual_base, bones.virtual_counts
    for d in range(bones.count):  # O(bones)
        entries = slice(base[d], base[d] + counts[d])
        if counts[d] == 1:
            out[entries] = bones.length[d]
            continue
        step = np.linalg.norm(np.diff(virtual_rest[entries, :3, 3], axis=0), axis=1)
        out[entries] = np.concatenate([step, -step[-1:]])
    return out


def joint_labels(bones: DeformBones) -> tuple[list[str], list[str]]:
    """Per palette entry: a label ("DEF-forearm.L", "DEF-forearm.L seg 3") and the owning bone's name."""
    labels, owners = [], []
    for name, count in zip(bones.names, bones.virtual_counts, strict=True):
        labels += [name] + [f"{name} seg {a}" for a in range(1, count)]
        owners += [name] * int(count)
    return labels, owners


def moved_joints(deform: np.ndarray, parents: np.ndarray, lengths: np.ndarray) -> list[int]:
    """Child palette entries whose deform differs from their parent's (see :data:`MOVED_TOLERANCE`)."""
    children = np.flatnonzero(parents >= 0)
    rel = np.linalg.solve(deform[parents[children]], deform[children])
    linear = np.abs(rel[:, :3, :3] - np.eye(3)).max(axis=(1, 2))
    shift = np.linalg.norm(rel[:, :3, 3], axis=1) / np.maximum(np.abs(lengths[children]), 1e-9)
    return [int(c) for c in children[np.maximum(linear, shift) > MOVED_TOLERANCE]]


def _current_factor(
    obj: bpy.types.Object, bound: rig.SkinRig, auto: np.ndarray
) -> tuple[float | np.ndarray, str]:
    """The object's own factor (scalar or per vertex) and how the panel names it."""
    factor = vertex_factors(obj, bound)
    if isinstance(factor, str):  # "AUTO"
        return auto, "auto"
    if np.ndim(factor):
        return np.asarray(factor, dtype=np.float32), "group"
    return float(factor), f"{factor:.2f}"


def analyze(
    obj: bpy.types.Object, depsgraph: bpy.types.Depsgraph, grid: np.ndarray | None = None
) -> Analysis:
    """Measure LBS, DQS, the object's own factor, the best global factor (on ``grid``, default steps
    of 0.01) and AUTO on ``obj`` at the depsgraph's frame. Raises :class:`bridge.HybridSkinError`."""
    settings = obj.hybrid_skin
    groups = (settings.factor_vertex_group,) if settings.factor_mode == "VERTEX_GROUP" else ()
    bound = rig.cached_rig(obj, depsgraph, settings.modifier_name, groups)
    bound.evaluate(depsgraph, 0.0)  # brings the rest input and binding up to this frame
    arm_eval = bpy.data.objects[bound.armature_name].evaluated_get(depsgraph)
    t2a = bound.bound_target_to_armature
    rest = bound.rest_positions.astype(np.float64) @ t2a[:3, :3].T + t2a[:3, 3]
    deform = bound.deform_matrices(arm_eval)
    palette = bound.palette(arm_eval, deform)
    parents = bound.bones.virtual_parents()
    lengths = palette_lengths(bound.bones, bound.virtual_rest)

    triangles, corner_vertex, _normals = bridge.surface(obj.data)
    if triangles.size == 0:
        raise bridge.HybridSkinError(f"'{obj.name}' has no faces: there is no surface to measure")
    setup = metrics.prepare_measures(
        rest,
        corner_vertex[triangles],
        bound.virtual_rest,
        parents,
        lengths,
        bound.binding.bone_indices,
        bound.binding.weights,
        joints=moved_joints(deform, parents, lengths),
    )

    def skin_armature_space(factor):
        return skin(rest, bound.binding, palette, factor)[0].astype(np.float64)

    auto = bound.auto_factors(deform)
    current, current_label = _current_factor(obj, bound, auto)
    both = metrics.compare_factors(setup, deform, skin_armature_space, auto=auto, grid=grid)
    rows = {name: both.rows[name] for name in ("LBS", "DQS")}
    scalar = current if isinstance(current, float) else None
    rows["current"] = (scalar, metrics.measure_pose(setup, skin_armature_space(current), deform))
    rows["best"], rows["AUTO"] = both.rows["best"], both.rows["AUTO"]

    labels, owners = joint_labels(bound.bones)
    joints = [js.child for js in setup.joints]
    heads = set(bound.bones.virtual_base.tolist())
    return Analysis(
        object_name=obj.name,
        object_uid=obj.session_uid,
        frame=depsgraph.scene.frame_current,
        current_label=current_label,
        comparison=metrics.FactorComparison(rows),
        labels={c: labels[c] for c in joints},
        bones={c: owners[c] for c in joints},
        heads=frozenset(c for c in joints if c in heads),
    )


def _skinned(context) -> bpy.types.Object | None:
    obj = context.active_object
    if obj is None or obj.type != "MESH" or not obj.hybrid_skin.enabled:
        return None
    return obj


class HYBRIDSKIN_OT_analyze(bpy.types.Operator):
    """Measure volume change, joint bulge and candy-wrapper collapse: LBS, DQS, own, best global, Auto"""

    bl_idname = "hybrid_skin.analyze"
    bl_label = "Analyze Deformation"
    bl_options = {"REGISTER"}

    @classmethod
    def poll(cls, context):
        return context.mode == "OBJECT" and _skinned(context) is not None

    def execute(self, context):
        obj = _skinned(context)
        try:
            result = analyze(obj, context.evaluated_depsgraph_get())
        except bridge.HybridSkinError as err:
            self.report({"ERROR"}, str(err))
            return {"CANCELLED"}
        results[obj.name] = result
        best = result.comparison.rows["best"][0]
        self.report(
            {"INFO"},
            f"'{obj.name}' frame {result.frame}: {len(result.labels)} moved joints, "
            f"best global factor {best:.2f}",
        )
        return {"FINISHED"}


def _percent(value: float | None) -> str:
    return "—" if value is None else f"{100.0 * value:+.1f}%"


def _factor_text(result: Analysis, name: str, factor: float | None) -> str:
    if factor is not None:
        return f"{factor:.2f}"
    return "auto" if name == "AUTO" else result.current_label


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
        row.label(text=name)
        row.label(text=_factor_text(result, name, factor))
        row.label(text="open mesh" if measure.volume_change is None else _percent(measure.volume_change))
    _draw_bones(layout, result)


def _draw_bones(layout, result: Analysis) -> None:
    """One box per bone (at most :data:`PANEL_BONES`, the worst): bulge, collapse, local volume per method."""
    by_bone = result.by_bone()
    if not by_bone:
        layout.label(text="No bent or twisted joint at this frame", icon="INFO")
        return

    def severity(bone: str) -> float:
        return max(max(s.bulge, s.collapse) for s in by_bone[bone].values())

    order = list(by_bone)
    shown = sorted(sorted(order, key=severity, reverse=True)[:PANEL_BONES], key=order.index)
    for bone in shown:
        box = layout.box()
        box.label(text=bone, icon="BONE_DATA")
        col = box.column(align=True)
        header = col.row(align=True)
        for text in ("", "Bulge", "Collapse", "Local Vol."):
            header.label(text=text)
        for name, summary in by_bone[bone].items():
            row = col.row(align=True)
            row.label(text=name)
            row.label(text=f"{100.0 * summary.bulge:.1f}%")
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
        return _skinned(context) is not None

    def draw(self, context):
        obj = _skinned(context)
        self.layout.operator(HYBRIDSKIN_OT_analyze.bl_idname, icon="VIEWZOOM")
        result = results.get(obj.name)
        if result is not None and result.object_uid == obj.session_uid:
            draw_results(self.layout, result, context.scene.frame_current)


classes = (HYBRIDSKIN_OT_analyze, VIEW3D_PT_hybrid_skin_analyze)


def register() -> None:
    for cls in classes:
        bpy.utils.register_class(cls)


def unregister() -> None:
    for cls in reversed(classes):
        bpy.utils.unregister_class(cls)
    results.clear()
