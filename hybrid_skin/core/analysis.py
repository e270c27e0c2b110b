"""One pose's skinning artifacts per joint, for every method, from arrays alone (no Blender).

For one pose the mesh is skinned with LBS, DQS, the object's own factor, the best single global factor
and each Auto profile, and each result is measured with :mod:`.metrics`: whole-mesh volume change (closed
meshes) and, per joint, outward bulge, shrink of the convex side, candy-wrapper collapse and local volume
change; and over the whole mesh, how many edges each fold beyond both LBS and DQS (:mod:`.folds`).
Everything runs in armature
space on the bind's palette, where B-bone segment joints are bones of their own; a joint is named by its
child palette entry. The add-on's Analyze operator feeds :func:`analyze_pose` with the arrays of a posed
bind; :class:`Analysis` is what its panel shows.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from . import folds, metrics
from .binding import DeformBones
from .skinning import BonePalette, SkinBinding, skin

__all__ = [
    "MOVED_TOLERANCE",
    "Analysis",
    "BoneSummary",
    "analyze_pose",
    "joint_labels",
    "moved_joints",
    "palette_lengths",
]

#: A joint counts as moved when its child's deform relative to its parent's differs from the identity by
#: more than this (rotation/scale entries, or translation per unit of child length). Unmoved joints have
#: no artifacts (every blend of two equal matrices is that matrix), so they are not measured.
MOVED_TOLERANCE = 1e-4


@dataclass(frozen=True)
class BoneSummary:
    """One deform bone under one method: the worst bulge, shrink and collapse over its joints (a B-bone owns
    its head joint and its segment joints) and the local volume change at its head joint (``None`` if that
    joint did not move). Segment joints are one segment thick, often less than a ring of the mesh, so
    their capped local volume is ill-conditioned; the head joint's region spans the blend between bones."""

    bulge: float
    collapse: float
    volume_change: float | None
    shrink: float = 0.0


@dataclass(frozen=True)
class Analysis:
    """One analysis of one object: ``comparison`` rows are LBS, DQS, current, best, then one per Auto
    profile measured (``"AUTO"``, or the names :func:`analyze_pose` was given).

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
    #: Per row (as ``comparison``): the edges it folds beyond both LBS and DQS (:func:`.folds.summarize`);
    #: LBS's and DQS's own rows fold nothing beyond themselves.
    fold_rows: Mapping[str, folds.FoldSummary] | None = None

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
                    max(j.bulge for j in joints), max(j.collapse for j in joints), head,
                    max(j.shrink for j in joints),
                )
        return out

    def table(self) -> str:
        """Plain-text table (as :meth:`.core.metrics.FactorComparison.table`, joints by name)."""
        lines = [f"'{self.object_name}' frame {self.frame}"]
        lines += [f"joint {c}: {self.labels[c]}" for c in sorted(self.labels)]
        if self.fold_rows:
            lines += [
                f"{name}: {s.over_limit} of {s.measured} blended edges fold more than "
                f"{folds.FOLD_LIMIT:g}° beyond both LBS and DQS (worst {s.worst:.1f}°, edge {s.worst_edge})"
                for name, s in self.fold_rows.items()
            ]
        return "\n".join([*lines, self.comparison.table()])


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
    parent, child = deform[parents[children]], deform[children]
    # Relative to the parent's frame; a parent scaled to 0 has none (singular): there the child's deform
    # is compared with the parent's directly.
    frame = np.linalg.det(parent[:, :3, :3]) != 0.0
    rel = np.eye(4) + child - parent
    if frame.any():
        rel[frame] = np.linalg.solve(parent[frame], child[frame])
    linear = np.abs(rel[:, :3, :3] - np.eye(3)).max(axis=(1, 2))
    shift = np.linalg.norm(rel[:, :3, 3], axis=1) / np.maximum(np.abs(lengths[children]), 1e-9)
    return [int(c) for c in children[np.maximum(linear, shift) > MOVED_TOLERANCE]]


def analyze_pose(
    rest: np.ndarray,
    triangles: np.ndarray,
    bones: DeformBones,
    virtual_rest: np.ndarray,
    binding: SkinBinding,
    palette: BonePalette,
    deform: np.ndarray,
    *,
    current: float | np.ndarray,
    current_label: str,
    auto: np.ndarray | Mapping[str, np.ndarray],
    object_name: str = "",
    object_uid: int = 0,
    frame: int = 0,
    grid: np.ndarray | None = None,
) -> Analysis:
    """Measure LBS, DQS, the ``current`` factor (scalar or ``(N,)``), the best global factor (on ``grid``,
    default steps of 0.01) and the ``auto`` factors ``(N,)`` on one pose: one array (row ``"AUTO"``) or a
    mapping of row names to arrays (one row each, e.g. every Auto profile).

    ``rest`` ``(N, 3)``: rest positions in armature space; ``triangles`` ``(T, 3)`` vertex indices;
    ``virtual_rest``/``deform`` ``(V, 4, 4)``: the palette's rest and deform matrices; ``binding`` and
    ``palette`` as :func:`.skinning.skin` takes them. The object name, id and frame only label the result.
    """
    parents = bones.virtual_parents()
    lengths = palette_lengths(bones, virtual_rest)
    setup = metrics.prepare_measures(
        rest,
        triangles,
        virtual_rest,
        parents,
        lengths,
        binding.bone_indices,
        binding.weights,
        joints=moved_joints(deform, parents, lengths),
    )

    def skin_armature_space(factor):
        return skin(rest, binding, palette, factor)[0].astype(np.float64)

    both = metrics.compare_factors(setup, deform, skin_armature_space, auto=auto, grid=grid)
    rows = {name: both.rows[name] for name in ("LBS", "DQS")}
    scalar = float(current) if np.ndim(current) == 0 else None
    rows["current"] = (scalar, metrics.measure_pose(setup, skin_armature_space(current), deform))
    rows.update((name, row) for name, row in both.rows.items() if name not in rows)

    fields = {"current": current, **{name: factor for name, (factor, _m) in both.rows.items()}}
    if isinstance(auto, Mapping):
        fields.update(auto)
    else:
        fields["AUTO"] = auto
    fold_setup = folds.prepare_folds(rest, triangles, metrics.blended_vertices(binding.weights))
    lbs, dqs = skin_armature_space(0.0), skin_armature_space(1.0)
    ends = folds.larger_end_folds(fold_setup, lbs, dqs)
    summaries = {
        name: folds.summarize(fold_setup, folds.folds_beyond(fold_setup, lbs, dqs, fields[name], ends=ends))
        for name in rows
        if fields.get(name) is not None
    }

    labels, owners = joint_labels(bones)
    joints = [js.child for js in setup.joints]
    heads = set(bones.virtual_base.tolist())
    return Analysis(
        object_name=object_name,
        object_uid=object_uid,
        frame=frame,
        current_label=current_label,
        comparison=metrics.FactorComparison(rows),
        labels={c: labels[c] for c in joints},
        bones={c: owners[c] for c in joints},
        heads=frozenset(c for c in joints if c in heads),
        fold_rows=summaries,
    )
