"""Folds: how far a deformation turns the surface across its edges, and how much of that a factor field adds.

A *fold* is ``|dihedral angle now - dihedral angle at rest|`` across an interior edge (two triangles share
it), in degrees: 0 while the two triangles turn together, 180 when one lies flat on the other. A smooth
bend of a fine mesh folds each edge a little; a seam, where the surface kinks, folds one edge a lot.

Hybrid skinning mixes LBS and DQS per vertex, ``p = (1 - f) p_LBS + f p_DQS``. Where the factor changes
from one vertex to the next, the surface can fold more than either end does: that is the seam a factor
field makes, and what a viewer sees of it. A *blend's* dihedral angle need not lie between the two ends'
either, even with one factor everywhere, so two references are measured:

* **beyond both**: the field's fold minus the larger of LBS's and DQS's fold there;
* **beyond the hybrid**: minus the largest of LBS's, DQS's and the fold of the *uniform* hybrid whose factor
  is the edge's own (the mean of its two vertices' factors, on every vertex): the fold the field's
  variation adds, which no single factor makes.

Only edges whose two vertices blend (two weights above 0.1 %, :func:`.metrics.blended_vertices`) are
measured: elsewhere a vertex follows one bone and every factor gives the same surface.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = [
    "FOLD_LIMIT",
    "FoldSetup",
    "FoldSummary",
    "dihedral_angles",
    "fold_angles",
    "folds_beyond",
    "interior_edges",
    "larger_end_folds",
    "prepare_folds",
    "summarize",
]

#: Degrees a factor field may fold an edge beyond its references before it counts (docs/quality.md).
FOLD_LIMIT = 10.0


def interior_edges(triangles: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The edges two triangles share: ``(E, 2)`` vertex pairs and ``(E, 2)`` the two triangles of each."""
    tri = np.asarray(triangles, dtype=np.int64)
    edges = np.sort(np.concatenate([tri[:, [0, 1]], tri[:, [1, 2]], tri[:, [2, 0]]]), axis=1)
    faces = np.tile(np.arange(tri.shape[0]), 3)
    order = np.lexsort((edges[:, 1], edges[:, 0]))
    edges, faces = edges[order], faces[order]
    _, first, count = np.unique(edges, axis=0, return_index=True, return_counts=True)
    pick = first[count == 2]  # sorted: the edge's two entries are neighbours
    return edges[pick], np.column_stack([faces[pick], faces[pick + 1]])


def dihedral_angles(positions: np.ndarray, triangles: np.ndarray, faces: np.ndarray) -> np.ndarray:
    """``(E,)`` degrees between the normals of each edge's two triangles (``faces`` ``(E, 2)``): 0 where they
    lie in one plane. A degenerate triangle has no normal and counts as flat against its neighbour."""
    p = np.asarray(positions, dtype=np.float64)
    tri = np.asarray(triangles)
    n = np.cross(p[tri[:, 1]] - p[tri[:, 0]], p[tri[:, 2]] - p[tri[:, 0]])
    length = np.linalg.norm(n, axis=1, keepdims=True)
    n = np.divide(n, length, out=np.zeros_like(n), where=length > 0.0)
    cos = np.einsum("ec,ec->e", n[faces[:, 0]], n[faces[:, 1]])
    cos = np.where((length[faces[:, 0], 0] > 0.0) & (length[faces[:, 1], 0] > 0.0), cos, 1.0)
    return np.degrees(np.arccos(np.clip(cos, -1.0, 1.0)))


@dataclass(frozen=True)
class FoldSetup:
    """The rest side of the fold measure (:func:`prepare_folds`): the measured edges ``(E, 2)``, their two
    triangles ``faces`` ``(E, 2)`` (indices into ``triangles``) and their dihedral angles at rest."""

    triangles: np.ndarray
    edges: np.ndarray
    faces: np.ndarray
    rest_angles: np.ndarray


def prepare_folds(
    rest_positions: np.ndarray, triangles: np.ndarray, blended: np.ndarray | None = None
) -> FoldSetup:
    """The interior edges of ``triangles`` (only those whose two vertices are ``blended``, ``(N,)`` bool,
    when given) and their rest dihedral angles. O(T log T) once; :func:`fold_angles` is then O(E)."""
    tri = np.asarray(triangles, dtype=np.int64)
    edges, faces = interior_edges(tri)
    if blended is not None:
        keep = np.asarray(blended)[edges].all(axis=1)
        edges, faces = edges[keep], faces[keep]
    return FoldSetup(tri, edges, faces, dihedral_angles(rest_positions, tri, faces))


def fold_angles(setup: FoldSetup, positions: np.ndarray) -> np.ndarray:
    """``(E,)`` degrees each measured edge's dihedral angle changed from rest."""
    return np.abs(dihedral_angles(positions, setup.triangles, setup.faces) - setup.rest_angles)


def _uniform_folds(setup: FoldSetup, lbs: np.ndarray, dqs: np.ndarray, factors: np.ndarray) -> np.ndarray:
    """Per edge, the fold of the hybrid whose factor is the edge's mean factor on all of its triangles'
    corners (each edge's two triangles evaluated on their own, O(E))."""
    g = 0.5 * (factors[setup.edges[:, 0]] + factors[setup.edges[:, 1]])
    corners = setup.triangles[setup.faces]  # (E, 2, 3)
    lbs, dqs = np.asarray(lbs, dtype=np.float64), np.asarray(dqs, dtype=np.float64)
    mixed = lbs[corners] + g[:, None, None, None] * (dqs[corners] - lbs[corners])  # (E, 2, 3, 3)
    n = np.cross(mixed[:, :, 1] - mixed[:, :, 0], mixed[:, :, 2] - mixed[:, :, 0])
    length = np.linalg.norm(n, axis=2, keepdims=True)
    n = np.divide(n, length, out=np.zeros_like(n), where=length > 0.0)
    cos = np.where(
        (length[:, 0, 0] > 0.0) & (length[:, 1, 0] > 0.0), np.einsum("ec,ec->e", n[:, 0], n[:, 1]), 1.0
    )
    return np.abs(np.degrees(np.arccos(np.clip(cos, -1.0, 1.0))) - setup.rest_angles)


def larger_end_folds(setup: FoldSetup, lbs: np.ndarray, dqs: np.ndarray) -> np.ndarray:
    """``(E,)`` the larger of LBS's and DQS's fold of each measured edge: what :func:`folds_beyond` measures
    against, computed once per pose for every field measured at it."""
    return np.maximum(fold_angles(setup, lbs), fold_angles(setup, dqs))


def folds_beyond(
    setup: FoldSetup,
    lbs: np.ndarray,
    dqs: np.ndarray,
    factors: float | np.ndarray,
    *,
    uniform: bool = False,
    ends: np.ndarray | None = None,
) -> np.ndarray:
    """``(E,)`` degrees the hybrid with ``factors`` (one number or ``(N,)``) folds each measured edge
    beyond both LBS and DQS there (positions ``lbs``, ``dqs`` ``(N, 3)`` of one pose); with ``uniform``,
    beyond the uniform hybrid at the edge's own factor too (module docstring). Negative: folds less.
    ``ends``: :func:`larger_end_folds` of this pose, if already known."""
    lbs, dqs = np.asarray(lbs, dtype=np.float64), np.asarray(dqs, dtype=np.float64)
    f = np.broadcast_to(np.asarray(factors, dtype=np.float64), (lbs.shape[0],))
    hybrid = lbs + f[:, None] * (dqs - lbs)
    reference = larger_end_folds(setup, lbs, dqs) if ends is None else ends
    if uniform:
        reference = np.maximum(reference, _uniform_folds(setup, lbs, dqs, f))
    return fold_angles(setup, hybrid) - reference


@dataclass(frozen=True)
class FoldSummary:
    """Folds of one field over one or more poses: how many edge-poses exceed :data:`FOLD_LIMIT` and 30°
    beyond the reference, the largest excess (degrees) and where (pose number, edge's vertex pair)."""

    over_limit: int
    over_30: int
    worst: float
    worst_pose: int
    worst_edge: tuple[int, int]
    measured: int

    def __add__(self, other: FoldSummary) -> FoldSummary:
        first, second = (self, other) if self.worst >= other.worst else (other, self)
        return FoldSummary(
            self.over_limit + other.over_limit,
            self.over_30 + other.over_30,
            first.worst,
            first.worst_pose,
            first.worst_edge,
            self.measured + other.measured,
        )


def summarize(setup: FoldSetup, beyond: np.ndarray, pose: int = 0) -> FoldSummary:
    """A :class:`FoldSummary` of one pose's :func:`folds_beyond`; summaries of several poses add up."""
    b = np.asarray(beyond, dtype=np.float64)
    if b.size == 0:
        return FoldSummary(0, 0, 0.0, pose, (-1, -1), 0)
    j = int(np.argmax(b))
    edge = (int(setup.edges[j, 0]), int(setup.edges[j, 1]))
    return FoldSummary(
        int((b > FOLD_LIMIT).sum()), int((b > 30.0).sum()), max(float(b[j]), 0.0), pose, edge, int(b.size)
    )
