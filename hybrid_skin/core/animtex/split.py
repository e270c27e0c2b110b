"""Split normals of a ``VERTEX`` animation texture: one item per (vertex, corner normal), numpy only.

A vertex texture stores one normal per item. Engines split a vertex wherever its face corners carry
different normals (sharp edges, flat faces, custom split normals: glTF exporters and FBX importers
do), so a hard edge needs one item per such *corner group*, or it is shaded smooth. :func:`split_corners`
groups the corners of each vertex whose normals agree within :data:`SPLIT_ANGLE_DEG` (the split an
exporter makes) and numbers the groups as texture items:

- items ``0..N-1`` are the vertices themselves (each holds the normal of its first corner group, the
  one with the vertex's lowest corner), so a per-vertex texel index stays valid;
- every further group of a vertex gets an item after them, in vertex order.

An extra item's position is its vertex's position; its normal, per frame, is its rest corner normal
turned by its vertex's skinning transform (:func:`.skinning.skin` with the vertex's influences), as
the vertex normals are. A smooth mesh has no extra items.

With corner *tangents* (a bake that stores tangents for normal maps: MikkTSpace tangents and bitangent
signs of a UV map, Blender's ``Mesh.calc_tangents``), corners of one vertex also stay apart where their
tangents differ by more than the angle or their signs differ (UV seams, mirrored UVs): each item then has
one rest tangent, as engines split vertices by tangent too.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..small_linalg import unit

__all__ = ["SPLIT_ANGLE_DEG", "CornerSplit", "split_corners"]

#: Corners of one vertex whose normals differ by more than this angle get their own item.
SPLIT_ANGLE_DEG = 0.1


@dataclass(frozen=True)
class CornerSplit:
    """Texture items of one mesh's corner groups.

    corner_item: ``(C,)`` int32 item of every face corner (``0..N-1`` or an extra item).
    item_vertex: ``(N + E,)`` int32 vertex of every item (``item_vertex[:N] == arange(N)``; the
        extra items are in vertex order, so no extra item ``N + k`` has ``item_vertex == N + k``).
    item_normals: ``(N + E, 3)`` float32 unit rest normal of every item: its corner group's normal
        (the mean of its corners' normals, renormalised) at split vertices, the vertex normal elsewhere.
    split_vertices: ``(S,)`` int32 vertices with more than one corner group.
    item_tangents: ``(N + E, 4)`` float32 rest tangent (unit, orthogonal to the item's normal) and
        bitangent sign of every item, when corner tangents were given; else ``None``.
    """

    corner_item: np.ndarray
    item_vertex: np.ndarray
    item_normals: np.ndarray
    split_vertices: np.ndarray
    item_tangents: np.ndarray | None = None

    @property
    def item_count(self) -> int:
        return int(self.item_vertex.shape[0])

    @property
    def vertex_count(self) -> int:
        return self.item_count - self.extra_count

    @property
    def extra_count(self) -> int:
        """Items beyond the vertices: each split vertex's corner groups after its first."""
        return int(np.count_nonzero(self.item_vertex != np.arange(self.item_count)))

    @property
    def changed_items(self) -> np.ndarray:
        """``(M,)`` int32 items whose normal is a corner group's rather than the vertex normal: every
        item of a split vertex (the vertex's own item and its extra items)."""
        extra = np.arange(self.vertex_count, self.item_count, dtype=np.int32)
        return np.concatenate([self.split_vertices, extra])


def split_corners(
    corner_vertex: np.ndarray,
    corner_normals: np.ndarray,
    vertex_normals: np.ndarray,
    angle_deg: float = SPLIT_ANGLE_DEG,
    corner_tangents: np.ndarray | None = None,
) -> CornerSplit:
    """Group each vertex's corners by normal (within ``angle_deg``, transitively) into texture items.

    ``corner_vertex`` ``(C,)``: the vertex of every face corner; ``corner_normals`` ``(C, 3)``: their
    normals (Blender's ``Mesh.corner_normals``); ``vertex_normals`` ``(N, 3)``: the vertex normals, kept
    for vertices whose corners all agree (so a smooth mesh's items are exactly its vertices).
    ``corner_tangents`` ``(C, 4)``: tangent and bitangent sign of every corner, to group by as well.
    """
    cv = np.asarray(corner_vertex, dtype=np.int64)
    cn = unit(np.asarray(corner_normals, dtype=np.float64))
    vn = np.asarray(vertex_normals, dtype=np.float32)
    n, c = len(vn), len(cv)
    if cn.shape != (c, 3) or vn.shape != (n, 3) or (c and (cv.min() < 0 or cv.max() >= n)):
        raise ValueError(
            f"corner data do not match: {c} corner vertices, normals {cn.shape}, {n} vertex normals"
        )
    # Pairs of corners of one vertex (sorted by vertex: a vertex's corners are one run).
    order = np.argsort(cv, kind="stable")
    counts = np.bincount(cv, minlength=n)
    run_start = np.concatenate([[0], np.cumsum(counts)[:-1]])
    pos_in_run = np.arange(c) - np.repeat(run_start, counts)
    deg = np.repeat(counts, counts)  # corners of each sorted corner's vertex
    a_list, b_list = [], []
    for offset in range(1, int(counts.max(initial=1))):
        has = pos_in_run + offset < deg
        a = np.flatnonzero(has)
        a_list.append(order[a])
        b_list.append(order[a + offset])
    a = np.concatenate(a_list) if a_list else np.zeros(0, np.int64)
    b = np.concatenate(b_list) if b_list else np.zeros(0, np.int64)
    close = np.einsum("ij,ij->i", cn[a], cn[b]) >= np.cos(np.radians(angle_deg))
    if corner_tangents is not None:
        ct = np.asarray(corner_tangents, dtype=np.float64)
        if ct.shape != (c, 4):
            raise ValueError(f"corner tangents {ct.shape} do not match {c} corners")
        direction = unit(ct[:, :3])
        close &= np.einsum("ij,ij->i", direction[a], direction[b]) >= np.cos(np.radians(angle_deg))
        close &= np.sign(ct[a, 3]) == np.sign(ct[b, 3])
    a, b = a[close], b[close]
    # Connected components: every corner takes the smallest corner index it is linked to.
    label = np.arange(c)
    while True:
        low = np.minimum(label[a], label[b])
        new = label.copy()
        np.minimum.at(new, a, low)
        np.minimum.at(new, b, low)
        new = new[new]
        if np.array_equal(new, label):
            break
        label = new
    # Groups, numbered: each vertex's group with its lowest corner is the vertex's own item.
    roots = np.flatnonzero(label == np.arange(c))  # one corner per group, ascending
    root_vertex = cv[roots]
    first = np.full(n, c, dtype=np.int64)
    np.minimum.at(first, cv, np.arange(c))
    own = roots == first[root_vertex]
    extra_roots = roots[~own]
    extra_roots = extra_roots[np.lexsort((extra_roots, cv[extra_roots]))]
    root_item = np.empty(c, dtype=np.int64)
    root_item[roots[own]] = root_vertex[own]
    root_item[extra_roots] = n + np.arange(len(extra_roots))
    corner_item = root_item[label].astype(np.int32)
    item_vertex = np.concatenate([np.arange(n), cv[extra_roots]]).astype(np.int32)
    # Rest normal per item: its corners' mean; the vertex normal for vertices that are not split.
    sums = np.zeros((n + len(extra_roots), 3))
    np.add.at(sums, corner_item, cn)
    item_normals = unit(sums).astype(np.float32)
    split = np.unique(cv[extra_roots]).astype(np.int32)
    whole = np.ones(n, dtype=bool)
    whole[split] = False
    item_normals[:n][whole] = vn[whole]
    tangents = None
    if corner_tangents is not None:
        sums = np.zeros((n + len(extra_roots), 3))
        np.add.at(sums, corner_item, direction)
        normal = item_normals.astype(np.float64)
        sums -= np.einsum("ij,ij->i", sums, normal)[:, None] * normal  # perpendicular to the normal
        sign = np.ones(len(sums))
        sign[corner_item] = np.where(ct[:, 3] < 0, -1.0, 1.0)  # one sign per item: its corners agree
        tangents = np.concatenate([unit(sums), sign[:, None]], axis=1).astype(np.float32)
    return CornerSplit(corner_item, item_vertex, item_normals, split, tangents)
