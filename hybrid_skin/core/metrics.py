"""Quantitative skinning artifacts: volume change, joint bulge / shrink, candy-wrapper collapse.

Yin (2019) judged the LBS / DQS trade-off by eye (§5.3) and asked for a measure (§6.2): how far the
vertices around a joint move towards or away from the skeleton compared with the rest pose. This module
measures, per joint (a joint is named by its *child* bone ``c``; its parent is ``p = parents[c]``):

* **region**: the vertices weighted to both ``p`` and ``c`` (each weight > ``min_weight``). Outside it a
  vertex follows one bone rigidly, so LBS, DQS and every hybrid agree there; the artifacts live here.
* **volume_change**: local volume ratio - 1 of the region's triangles (all three corners in the region),
  closed by capping every boundary loop with a fan to the loop's centroid (a band of a limb becomes a
  closed drum), then measured with signed tetrahedra. Each cap moves with its loop, so only non-rigid
  deformation changes it. The whole closed mesh's change is :attr:`PoseMeasure.volume_change`.
* **bulge / shrink / contour_change** use the relative change ``e = d / d_rest - 1`` of each region
  vertex's distance ``d`` to the joint's skeleton (the union of the parent and child bone segments, head to
  tail, each moved by its own deform matrix). An ideal limb keeps ``e = 0``, like a bent pipe. DQS turns the
  convex side of a bend into a ball around the joint (``e > 0``, Yin 2019, Fig. 5.6), LBS pulls it towards
  the joint (``e < 0``). ``bulge = max(e)`` over the region, ``shrink = -min(e)`` over the *convex side*
  only (the concave side of a bend self-intersects under every blend, so it would mask the difference),
  ``contour_change = mean(e)`` over the convex side: its thickness change, 0 when the visible side keeps its
  volume on average. The convex side is the half-space of rest offsets from the joint opposite to where the
  child bone swings; a joint without swing (pure twist) has no concave side.
* **collapse**: ``1 - min`` over cross-sections of (deformed / rest) radius, the candy-wrapper measure. The
  region is sliced across the child bone's rest axis into slabs ``slice_width`` thick; a slab's radius is
  the RMS distance of its vertices to their centroid (rigid-invariant, 0 when a ring collapses to a point).

:func:`compare_factors` evaluates LBS, DQS, the current factor, the best single global factor (the one
that minimises the worst ``|contour_change|`` over the joints) and per-vertex factor fields such as Auto's
profiles. :func:`dominating_factors` finds the single factors at least as good as a field on every measure;
:func:`largest_factor_step` measures how abruptly a field changes across the mesh's edges.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

__all__ = [
    "FactorComparison",
    "blended_vertices",
    "dominating_factors",
    "largest_factor_step",
    "JointMeasure",
    "MeasureSetup",
    "PoseMeasure",
    "best_global_factor",
    "compare_factors",
    "cross_section_radii",
    "is_closed",
    "measure_pose",
    "prepare_measures",
    "segment_distance",
    "signed_volume",
    "volume_change",
]

#: Slabs with fewer vertices than this are not a cross-section and are ignored.
MIN_SLICE_VERTICES = 6
#: A joint whose child axis swings by less than this (radians) counts as unbent: no concave side.
MIN_SWING = np.radians(1.0)


def signed_volume(positions: np.ndarray, triangles: np.ndarray, apex: np.ndarray | None = None) -> float:
    """Sum of signed volumes of the tetrahedra (apex, a, b, c); the enclosed volume for a closed mesh.

    Outward-facing counter-clockwise triangles give a positive volume. For a closed mesh the apex does not
    matter; for an open patch the result is the cone volume seen from ``apex``.
    """
    p = np.asarray(positions, dtype=np.float64)
    if apex is not None:
        p = p - np.asarray(apex, dtype=np.float64)
    a, b, c = p[triangles[:, 0]], p[triangles[:, 1]], p[triangles[:, 2]]
    return float(np.einsum("ij,ij->", a, np.cross(b, c)) / 6.0)


def volume_change(rest_positions: np.ndarray, positions: np.ndarray, triangles: np.ndarray) -> float:
    """Closed-mesh volume ratio - 1 (0 = volume kept, -0.1 = lost 10 %)."""
    return signed_volume(positions, triangles) / signed_volume(rest_positions, triangles) - 1.0


def is_closed(triangles: np.ndarray) -> bool:
    """True when every undirected edge is shared by exactly two triangles (a watertight surface)."""
    tri = np.asarray(triangles)
    edges = np.sort(np.concatenate([tri[:, [0, 1]], tri[:, [1, 2]], tri[:, [2, 0]]]), axis=1)
    _, counts = np.unique(edges, axis=0, return_counts=True)
    return bool(np.all(counts == 2))


def segment_distance(points: np.ndarray, heads: np.ndarray, tails: np.ndarray) -> np.ndarray:
    """``(N,)`` distance from each point to the nearest of the segments ``heads[s] → tails[s]`` ``(S, 3)``."""
    axis = tails - heads
    rel = points[:, None, :] - heads[None, :, :]
    length_sq = np.einsum("sc,sc->s", axis, axis)
    along = np.einsum("nsc,sc->ns", rel, axis)
    # A segment collapsed to a point (a bone scaled to 0) is that point: t = 0.
    t = np.clip(np.divide(along, length_sq, out=np.zeros_like(along), where=length_sq > 0.0), 0.0, 1.0)
    return np.linalg.norm(rel - t[..., None] * axis, axis=-1).min(axis=1)


def _group_means(ids: np.ndarray, values: np.ndarray, count: int) -> np.ndarray:
    """``(count, C)`` mean of ``values`` ``(n, C)`` per group id (0 for empty groups)."""
    sums = np.stack([np.bincount(ids, values[:, c], count) for c in range(values.shape[1])], -1)
    return sums / np.maximum(np.bincount(ids, minlength=count), 1)[:, None]


def cross_section_radii(positions: np.ndarray, slice_ids: np.ndarray, slice_count: int) -> np.ndarray:
    """``(slice_count,)`` RMS distance of each slice's vertices to the slice centroid (0 for empty slices)."""
    offset = positions - _group_means(slice_ids, positions, slice_count)[slice_ids]
    return np.sqrt(_group_means(slice_ids, np.einsum("nc,nc->n", offset, offset)[:, None], slice_count)[:, 0])


class _Caps(NamedTuple):
    """Boundary loops of a patch: ``edges`` ``(E, 2)`` directed as in the triangles, ``vertices`` ``(L,)``,
    and the loop id of each: ``loop_of_vertex`` ``(L,)``, ``loop_of_edge`` ``(E,)``."""

    edges: np.ndarray
    vertices: np.ndarray
    loop_of_vertex: np.ndarray
    loop_of_edge: np.ndarray


def _boundary_loops(triangles: np.ndarray) -> _Caps:
    """Directed boundary edges of an oriented triangle patch and the loop each belongs to.

    Loops are the connected components of the boundary edges, found by min-label propagation (vectorised,
    iterations bounded by the longest loop).
    """
    directed = np.concatenate([triangles[:, [0, 1]], triangles[:, [1, 2]], triangles[:, [2, 0]]])
    _, inverse, counts = np.unique(np.sort(directed, axis=1), axis=0, return_inverse=True, return_counts=True)
    edges = directed[counts[inverse.reshape(-1)] == 1]
    vertices, local = np.unique(edges, return_inverse=True)
    local = local.reshape(-1, 2)
    label = np.arange(vertices.shape[0])
    while True:
        low = np.minimum(label[local[:, 0]], label[local[:, 1]])
        updated = label.copy()
        np.minimum.at(updated, local[:, 0], low)
        np.minimum.at(updated, local[:, 1], low)
        if np.array_equal(updated, label):
            break
        label = updated
    _, loop_of_vertex = np.unique(label, return_inverse=True)
    return _Caps(edges, vertices, loop_of_vertex, loop_of_vertex[local[:, 0]])


def _capped_volume(positions: np.ndarray, triangles: np.ndarray, caps: _Caps, apex: np.ndarray) -> float:
    """Volume of the patch ``triangles`` closed by a fan to the centroid of each boundary loop."""
    loops = int(caps.loop_of_vertex.max()) + 1 if caps.loop_of_vertex.size else 0
    centroid = _group_means(caps.loop_of_vertex, positions[caps.vertices], loops)
    rel_u = positions[caps.edges[:, 0]] - apex
    rel_v = positions[caps.edges[:, 1]] - apex
    fans = np.einsum("ij,ij->", rel_v, np.cross(rel_u, centroid[caps.loop_of_edge] - apex)) / 6.0
    return signed_volume(positions, triangles, apex) + float(fans)


@dataclass(frozen=True)
class _JointSetup:
    child: int
    parent: int
    region: np.ndarray  # (R,) vertex indices
    triangles: np.ndarray  # (T, 3) region triangles (global vertex indices)
    rest_distance: np.ndarray  # (R,)
    rest_offset: np.ndarray  # (R, 3) rest position - joint
    caps: _Caps  # boundary loops of the region triangles, closed for the local volume
    rest_volume: float
    slice_ids: np.ndarray  # (R,) compact slab ids, -1 = not in a counted slab
    rest_radii: np.ndarray  # (S,)


@dataclass(frozen=True)
class MeasureSetup:
    """Everything about the rest pose the metrics need, computed once by :func:`prepare_measures`."""

    rest_positions: np.ndarray
    triangles: np.ndarray
    closed: bool
    rest_volume: float
    bone_rest: np.ndarray
    bone_lengths: np.ndarray
    joints: tuple[_JointSetup, ...]


@dataclass(frozen=True)
class JointMeasure:
    """Artifacts at one joint (fractions: 0.1 = 10 %). See the module docstring for definitions."""

    joint: int
    volume_change: float
    bulge: float
    shrink: float
    contour_change: float
    collapse: float


@dataclass(frozen=True)
class PoseMeasure:
    """Artifacts of one deformed mesh: closed-mesh volume change (``None`` if open) and per-joint measures."""

    volume_change: float | None
    joints: tuple[JointMeasure, ...]

    def joint(self, child: int) -> JointMeasure:
        """The measure of the joint whose child bone is ``child``."""
        return next(j for j in self.joints if j.joint == child)

    @property
    def score(self) -> float:
        """Worst ``|contour_change|`` over the joints: 0 when every visible joint side keeps its volume."""
        return max((abs(j.contour_change) for j in self.joints), default=0.0)


def _bone_segments(
    rest: np.ndarray, lengths: np.ndarray, bones: list[int], deform: np.ndarray | None
) -> tuple[np.ndarray, np.ndarray]:
    """Heads and tails ``(S, 3)`` of ``bones`` at rest, or moved by their ``deform`` matrices."""
    heads = rest[bones, :3, 3]
    tails = heads + lengths[bones, None] * rest[bones, :3, 1]
    if deform is None:
        return heads, tails
    m = deform[bones]
    return (
        np.einsum("sij,sj->si", m[:, :3, :3], heads) + m[:, :3, 3],
        np.einsum("sij,sj->si", m[:, :3, :3], tails) + m[:, :3, 3],
    )


def _prepare_joint(
    rest_positions: np.ndarray,
    triangles: np.ndarray,
    rest: np.ndarray,
    lengths: np.ndarray,
    parent: int,
    child: int,
    in_region: np.ndarray,
    slice_width: float | None,
) -> _JointSetup | None:
    region = np.flatnonzero(in_region)
    if region.size == 0:
        return None
    joint = rest[child, :3, 3]
    pts = rest_positions[region]
    heads, tails = _bone_segments(rest, lengths, [parent, child], None)
    distance = segment_distance(pts, heads, tails)
    keep = distance > 1e-9 * max(1.0, float(np.abs(pts).max()))
    region, pts, distance = region[keep], pts[keep], distance[keep]
    if region.size == 0:
        return None
    tri = triangles[in_region[triangles].all(axis=1)]
    caps = _boundary_loops(tri)

    width = slice_width if slice_width is not None else 0.1 * float(distance.mean())
    slab = np.round((pts - joint) @ rest[child, :3, 1] / width).astype(np.int64)
    _, slab, counts = np.unique(slab, return_inverse=True, return_counts=True)
    kept = counts >= MIN_SLICE_VERTICES
    compact = np.cumsum(kept) - 1
    slice_ids = np.where(kept[slab], compact[slab], -1)
    in_slice = slice_ids >= 0
    radii = cross_section_radii(pts[in_slice], slice_ids[in_slice], int(kept.sum()))
    volume = _capped_volume(rest_positions, tri, caps, joint)
    return _JointSetup(child, parent, region, tri, distance, pts - joint, caps, volume, slice_ids, radii)


def prepare_measures(
    rest_positions: np.ndarray,
    triangles: np.ndarray,
    bone_rest: np.ndarray,
    parents: np.ndarray,
    bone_lengths: np.ndarray,
    bone_indices: np.ndarray,
    weights: np.ndarray,
    *,
    joints: Sequence[int] | None = None,
    min_weight: float = 1e-3,
    slice_width: float | None = None,
) -> MeasureSetup:
    """Precompute the rest-pose side of every metric (O(N) once; :func:`measure_pose` is then per frame).

    ``bone_rest`` ``(B, 4, 4)``, ``parents`` ``(B,)`` (-1 = root), ``bone_lengths`` ``(B,)``;
    ``bone_indices`` / ``weights`` ``(N, K)`` as in :class:`~.skinning.SkinBinding`. ``joints`` lists child
    bones to measure (default: every bone with a parent whose region is not empty). ``slice_width``
    defaults to a tenth of the mean rest distance of region vertices to the skeleton.
    """
    p = np.asarray(rest_positions, dtype=np.float64)
    tri = np.asarray(triangles, dtype=np.int64)
    rest = np.asarray(bone_rest, dtype=np.float64)
    lengths = np.asarray(bone_lengths, dtype=np.float64)
    idx, w = np.asarray(bone_indices), np.asarray(weights, dtype=np.float64)
    children = [int(c) for c in (range(rest.shape[0]) if joints is None else joints) if parents[c] >= 0]
    setups = []
    for c in children:  # O(joints) loop; everything inside is vectorised over vertices
        parent = int(parents[c])
        on_parent = np.where(idx == parent, w, 0.0).sum(1) > min_weight
        both = on_parent & (np.where(idx == c, w, 0.0).sum(1) > min_weight)
        setup = _prepare_joint(p, tri, rest, lengths, parent, c, both, slice_width)
        if setup is not None:
            setups.append(setup)
    closed = is_closed(tri)
    return MeasureSetup(
        p, tri, closed, signed_volume(p, tri) if closed else float("nan"), rest, lengths, tuple(setups)
    )


def _measure_joint(
    setup: MeasureSetup, js: _JointSetup, positions: np.ndarray, deform: np.ndarray
) -> JointMeasure:
    d_parent, d_child = deform[js.parent], deform[js.child]
    joint = d_child[:3, :3] @ setup.bone_rest[js.child, :3, 3] + d_child[:3, 3]
    pts = positions[js.region]
    heads, tails = _bone_segments(setup.bone_rest, setup.bone_lengths, [js.parent, js.child], deform)
    e = segment_distance(pts, heads, tails) / js.rest_distance - 1.0

    axis = setup.bone_rest[js.child, :3, 1]
    # The child's axis in the parent's frame (a parent scaled to 0 has none: its pseudo-inverse, which
    # leaves no swing, so the whole region counts as the convex side).
    linear = d_parent[:3, :3]
    invert = np.linalg.solve if np.linalg.det(linear) != 0.0 else lambda m, v: np.linalg.pinv(m) @ v
    swung = invert(linear, d_child[:3, :3] @ axis)
    swing = swung - (swung @ axis) * axis
    if np.linalg.norm(swing) > np.sin(MIN_SWING) * np.linalg.norm(swung):
        convex = js.rest_offset @ swing <= 0.0
    else:
        convex = np.ones(e.shape, dtype=bool)

    in_slice = js.slice_ids >= 0
    radii = cross_section_radii(pts[in_slice], js.slice_ids[in_slice], js.rest_radii.shape[0])
    ratio = np.divide(radii, js.rest_radii, out=np.ones_like(radii), where=js.rest_radii > 0)
    volume = _capped_volume(positions, js.triangles, js.caps, joint)
    volume = volume / js.rest_volume - 1.0 if js.rest_volume else 0.0
    return JointMeasure(
        joint=js.child,
        volume_change=float(volume),
        bulge=float(max(e.max(), 0.0)),
        shrink=float(max(-e[convex].min(), 0.0)),
        contour_change=float(e[convex].mean()),
        collapse=float(1.0 - ratio.min()) if ratio.size else 0.0,
    )


def measure_pose(setup: MeasureSetup, positions: np.ndarray, deform: np.ndarray) -> PoseMeasure:
    """Measure deformed ``positions`` ``(N, 3)`` skinned with the bone deform matrices ``(B, 4, 4)``."""
    p = np.asarray(positions, dtype=np.float64)
    d = np.asarray(deform, dtype=np.float64)
    total = signed_volume(p, setup.triangles) / setup.rest_volume - 1.0 if setup.closed else None
    return PoseMeasure(total, tuple(_measure_joint(setup, js, p, d) for js in setup.joints))


#: ``deform factor (scalar or (N,)) → deformed positions (N, 3)``, e.g. a closure over ``skinning.skin``.
SkinFunction = Callable[[float | np.ndarray], np.ndarray]


def best_global_factor(
    setup: MeasureSetup,
    deform: np.ndarray,
    skin: SkinFunction,
    grid: np.ndarray | None = None,
    objective: Callable[[PoseMeasure], float] = lambda m: m.score,
) -> tuple[float, PoseMeasure]:
    """The single global factor on ``grid`` (default 0, 0.01, …, 1) minimising ``objective``.

    Ties go to the smallest factor. Costs one skinning per grid point: an analysis tool, not per frame.
    """
    factors = np.linspace(0.0, 1.0, 101) if grid is None else np.asarray(grid, dtype=np.float64)
    measures = [measure_pose(setup, skin(float(f)), deform) for f in factors]
    best = int(np.argmin([objective(m) for m in measures]))
    return float(factors[best]), measures[best]


@dataclass(frozen=True)
class FactorComparison:
    """One row per method: its deform factor (scalar, or ``None`` for a per-vertex field) and its measure."""

    rows: dict[str, tuple[float | None, PoseMeasure]]

    def table(self) -> str:
        """Plain-text table, one line per method and joint, percentages."""
        lines = ["method   factor  volume | joint  vol.loc  bulge  shrink  contour  collapse"]
        for name, (factor, m) in self.rows.items():
            f = "  per-v" if factor is None else f"{factor:7.2f}"
            vol = "    n/a" if m.volume_change is None else f"{100 * m.volume_change:+7.2f}"
            for j in m.joints:
                lines.append(
                    f"{name:8s} {f} {vol} | {j.joint:5d} {100 * j.volume_change:+8.2f} {100 * j.bulge:6.2f}"
                    f" {100 * j.shrink:7.2f} {100 * j.contour_change:+8.2f} {100 * j.collapse:9.2f}"
                )
        return "\n".join(lines)


def compare_factors(
    setup: MeasureSetup,
    deform: np.ndarray,
    skin: SkinFunction,
    *,
    current: float | None = None,
    auto: np.ndarray | Mapping[str, np.ndarray] | None = None,
    grid: np.ndarray | None = None,
) -> FactorComparison:
    """Measure LBS (f = 0), DQS (f = 1), the ``current`` factor, the best global factor and ``auto`` on one
    pose: a per-vertex factor array (row ``"AUTO"``, e.g. from :func:`~.autofactor.auto_factors`) or a
    mapping of row names to such arrays (one row each, in the mapping's order)."""
    rows: dict[str, tuple[float | None, PoseMeasure]] = {
        "LBS": (0.0, measure_pose(setup, skin(0.0), deform)),
        "DQS": (1.0, measure_pose(setup, skin(1.0), deform)),
    }
    if current is not None:
        rows["current"] = (float(current), measure_pose(setup, skin(float(current)), deform))
    rows["best"] = best_global_factor(setup, deform, skin, grid)
    fields = {} if auto is None else ({"AUTO": auto} if isinstance(auto, np.ndarray) else dict(auto))
    for name, factors in fields.items():
        rows[name] = (None, measure_pose(setup, skin(np.asarray(factors)), deform))
    return FactorComparison(rows)


#: The measures :func:`dominating_factors` compares (smaller is better; volume by its magnitude).
DOMINANCE_MEASURES = ("volume", "bulge", "shrink", "collapse")


def _measure_vector(m: PoseMeasure) -> np.ndarray:
    """Whole-mesh |volume change| (0 for an open mesh), then per joint bulge, shrink and collapse."""
    joints = [value for j in m.joints for value in (j.bulge, j.shrink, j.collapse)]
    return np.array([abs(m.volume_change or 0.0), *joints])


def dominating_factors(
    setup: MeasureSetup,
    deform: np.ndarray,
    skin: SkinFunction,
    field: np.ndarray,
    grid: np.ndarray | None = None,
    tolerance: float = 1e-4,
) -> list[float]:
    """The single factors on ``grid`` (default 0, 0.01, …, 1) at least as good as the per-vertex ``field``
    on every measure (:data:`DOMINANCE_MEASURES`, every joint) and better on one by more than
    ``tolerance``: an empty list means no single factor does what the field does."""
    factors = np.linspace(0.0, 1.0, 101) if grid is None else np.asarray(grid, dtype=np.float64)
    own = _measure_vector(measure_pose(setup, skin(np.asarray(field)), deform))
    out = []
    for f in factors:
        other = _measure_vector(measure_pose(setup, skin(float(f)), deform))
        if np.all(other <= own + tolerance) and np.any(other < own - tolerance):
            out.append(float(f))
    return out


def blended_vertices(weights: np.ndarray, min_weight: float = 1e-3) -> np.ndarray:
    """``(N,)`` bool: the vertices with at least two weights above ``min_weight`` (the regions' threshold),
    the ones whose factor changes anything (for :func:`largest_factor_step`)."""
    return (np.asarray(weights) > min_weight).sum(axis=1) >= 2


def largest_factor_step(
    factors: np.ndarray, triangles: np.ndarray, blended: np.ndarray | None = None
) -> float:
    """Largest ``|f_a - f_b|`` over the edges of ``triangles``; with ``blended`` ``(N,)`` bool, only over
    edges whose two vertices blend (elsewhere a vertex follows one bone and its factor changes nothing)."""
    f = np.asarray(factors, dtype=np.float64)
    tri = np.asarray(triangles)
    edges = np.concatenate([tri[:, [0, 1]], tri[:, [1, 2]], tri[:, [2, 0]]])
    if blended is not None:
        edges = edges[np.asarray(blended)[edges].all(axis=1)]
    return float(np.abs(f[edges[:, 0]] - f[edges[:, 1]]).max()) if len(edges) else 0.0

