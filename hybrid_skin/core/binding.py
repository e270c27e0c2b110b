"""Turn raw vertex-group entries into a :class:`~.skinning.SkinBinding`, the way Blender reads them.

Blender's Armature modifier, per vertex and in the *stored order* of its groups:

* skips groups whose name matches no deform bone;
* multiplies the weight by the bone's envelope falloff when the bone has "Multiply Vertex Group by
  Envelope"; if no group matched a bone and envelopes are enabled, every deform bone contributes its
  envelope weight instead;
* splits a B-bone's weight between two neighbouring segments (``1 - blend`` and ``blend``);
* divides by the sum of weights and leaves the vertex alone when that sum is ≤ 1e-4;
* scales the whole displacement by the modifier's mask vertex group (optionally inverted).

B-bone segments become *virtual bones*: a bone with ``s > 1`` segments owns ``s + 1`` consecutive
palette entries (one per segment joint), so the skinning kernels never need to know about B-bones.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from .skinning import SkinBinding

__all__ = [
    "DeformBones",
    "build_binding",
    "envelope_falloff",
    "straight_bbone_split",
    "virtual_deform_matrices",
    "virtual_rest_matrices",
]

#: Blender leaves vertices whose total weight is at or below this undeformed.
CONTRIB_THRESHOLD = 1e-4

#: ``(bone, points (m, 3) armature space) -> (segment index (m,), blend (m,))`` for curved B-bones.
SegmentSplit = Callable[[int, np.ndarray], tuple[np.ndarray, np.ndarray]]


@dataclass(frozen=True)
class DeformBones:
    """Rest description of the armature's deform bones, in pose-bone order (O(bones)).

    rest: ``(D, 4, 4)`` bone rest matrices in armature space (``Bone.matrix_local``).
    segments: ``(D,)`` B-bone segment counts (1 for an ordinary bone).
    length: ``(D,)`` bone lengths. head, tail: ``(D, 3)``. head_radius, tail_radius, envelope_distance,
    envelope_weight: ``(D,)``. envelope_multiply: ``(D,)`` bool.
    curved: ``(D,)`` bool, B-bones with the curved segment mapping.
    parent: ``(D,)`` index of the nearest deforming ancestor, -1 for none (used by the AUTO factor).
    """

    names: tuple[str, ...]
    rest: np.ndarray
    segments: np.ndarray
    length: np.ndarray
    head: np.ndarray
    tail: np.ndarray
    head_radius: np.ndarray
    tail_radius: np.ndarray
    envelope_distance: np.ndarray
    envelope_weight: np.ndarray
    envelope_multiply: np.ndarray
    curved: np.ndarray
    parent: np.ndarray | None = None

    @property
    def count(self) -> int:
        return len(self.names)

    @property
    def virtual_counts(self) -> np.ndarray:
        """Palette entries per bone: ``segments + 1`` for B-bones, else 1."""
        seg = np.asarray(self.segments)
        return np.where(seg > 1, seg + 1, 1)

    @property
    def virtual_base(self) -> np.ndarray:
        """First palette index of each bone."""
        counts = self.virtual_counts
        return np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.int32)

    @property
    def virtual_count(self) -> int:
        return int(self.virtual_counts.sum())

    def virtual_parents(self) -> np.ndarray:
        """Parent of every palette entry: the previous segment joint within a B-bone, else the last
        entry of the nearest deforming ancestor (so twist and swing accumulate along segments)."""
        counts, base = self.virtual_counts, self.virtual_base
        parent = np.full(self.count, -1) if self.parent is None else np.asarray(self.parent)
        out = np.empty(self.virtual_count, dtype=np.int64)
        for d in range(self.count):
            p = parent[d]
            out[base[d]] = -1 if p < 0 else base[p] + counts[p] - 1
            out[base[d] + 1 : base[d] + counts[d]] = np.arange(base[d], base[d] + counts[d] - 1)
        return out


def envelope_falloff(points: np.ndarray, bones: DeformBones, bone: np.ndarray) -> np.ndarray:
    """Blender's ``distfactor_to_bone`` for ``points (m, 3)`` against bones ``bone (m,)``."""
    head, tail = bones.head[bone], bones.tail[bone]
    rh, rt, dist = bones.head_radius[bone], bones.tail_radius[bone], bones.envelope_distance[bone]
    axis = tail - head
    length = np.linalg.norm(axis, axis=-1)
    axis = np.divide(axis, length[:, None], out=np.zeros_like(axis), where=length[:, None] > 0)
    rel = points - head
    height = np.einsum("mc,mc->m", rel, axis)
    along = np.sum(rel * rel, -1) - height * height
    t = np.divide(height, length, out=np.zeros_like(height), where=length > 0)
    radius = np.where(length > 0, rh + (rt - rh) * t, rh)
    d2 = np.where(
        height < 0, np.sum(rel * rel, -1), np.where(height > length, np.sum((tail - points) ** 2, -1), along)
    )
    radius = np.where(height < 0, rh, np.where(height > length, rt, radius))
    inside = d2 < radius * radius
    beyond = (dist == 0) | (d2 >= (radius + dist) ** 2)
    de = np.sqrt(np.maximum(d2, 0.0)) - radius
    fall = 1.0 - np.divide(de * de, dist * dist, out=np.zeros_like(de), where=dist != 0)
    return np.where(inside, 1.0, np.where(beyond, 0.0, fall))


def straight_bbone_split(
    points: np.ndarray, bones: DeformBones, bone: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Segment index and blend for points on B-bones, Blender's straight mapping.

    The point's rest-space Y coordinate along the bone, scaled to segments, picks two neighbouring
    segment joints; the fractional part blends them.
    """
    inv_rest = np.linalg.inv(bones.rest[bone])
    y = np.einsum("mc,mc->m", inv_rest[:, 1, :3], points) + inv_rest[:, 1, 3]
    segs = bones.segments[bone].astype(np.float64)
    head_tail = np.clip(y / bones.length[bone] * segs, 0.0, segs)
    index = np.clip(np.floor(head_tail), 0, segs - 1)
    blend = np.clip(head_tail - index, 0.0, 1.0)
    return index.astype(np.int32), blend


def _envelope_entries(points: np.ndarray, vertices: np.ndarray, bones: DeformBones):
    """Dense envelope entries (vertex, bone, weight) for ``vertices`` that no group deformed."""
    vv, bb = np.meshgrid(vertices, np.arange(bones.count), indexing="ij")
    vv, bb = vv.ravel(), bb.ravel()
    weight = envelope_falloff(points[vv], bones, bb) * bones.envelope_weight[bb]
    keep = weight != 0
    return vv[keep], bb[keep], weight[keep]


def build_binding(
    counts: np.ndarray,
    entry_bone: np.ndarray,
    entry_weight: np.ndarray,
    points: np.ndarray,
    bones: DeformBones,
    mask_weight: np.ndarray | None = None,
    invert_mask: bool = False,
    use_envelopes: bool = False,
    curved_split: SegmentSplit | None = None,
) -> SkinBinding:
    """Build a binding from per-vertex group entries in stored order.

    counts: ``(N,)`` entries per vertex. entry_bone: ``(E,)`` deform-bone index per entry, -1 for
    groups that are not deform bones. entry_weight: ``(E,)``. points: ``(N, 3)`` rest positions in
    armature space (for envelopes and B-bone segments). mask_weight: ``(N,)`` weights of the
    modifier's mask group (0 where a vertex is not in it) or ``None`` for no mask.
    """
    n = int(points.shape[0])
    counts = np.asarray(counts, dtype=np.int64)
    if counts.shape != (n,) or int(counts.sum()) != len(entry_bone) or len(entry_bone) != len(entry_weight):
        raise ValueError("entry arrays do not match the vertex count")
    points = np.asarray(points, dtype=np.float64)
    vertex = np.repeat(np.arange(n), counts)
    bone = np.asarray(entry_bone, dtype=np.int64)
    weight = np.asarray(entry_weight, dtype=np.float64)
    keep = bone >= 0
    if not keep.all():  # groups that are no deform bone's (copies skipped when every entry is a bone's)
        vertex, bone, weight = vertex[keep], bone[keep], weight[keep]

    mult = bones.envelope_multiply[bone]
    if mult.any():
        weight = weight.copy()
        weight[mult] *= envelope_falloff(points[vertex[mult]], bones, bone[mult])

    if use_envelopes:
        deformed = np.zeros(n, dtype=bool)
        deformed[vertex] = True
        ev, eb, ew = _envelope_entries(points, np.flatnonzero(~deformed), bones)
        order = np.argsort(np.concatenate([vertex, ev]), kind="stable")
        vertex = np.concatenate([vertex, ev])[order]
        bone = np.concatenate([bone, eb])[order]
        weight = np.concatenate([weight, ew])[order]

    contrib = np.bincount(vertex, weights=weight, minlength=n)

    # Expand every entry into two palette slots; the second is only used by B-bones.
    base = bones.virtual_base[bone]
    is_bbone = bones.segments[bone] > 1
    if is_bbone.any():
        first, second = base.copy(), base.copy()
        w_first, w_second = weight.copy(), np.zeros_like(weight)
        sel = np.flatnonzero(is_bbone)
        seg, blend = straight_bbone_split(points[vertex[sel]], bones, bone[sel])
        curved = bones.curved[bone[sel]]
        if curved.any():
            if curved_split is None:
                raise ValueError("curved B-bone mapping needs a segment split function")
            for b in np.unique(bone[sel][curved]):
                rows = np.flatnonzero(curved & (bone[sel] == b))
                seg[rows], blend[rows] = curved_split(int(b), points[vertex[sel][rows]])
        first[sel] = base[sel] + seg
        second[sel] = first[sel] + 1
        w_first[sel] = weight[sel] * (1.0 - blend)
        w_second[sel] = weight[sel] * blend
        slot_vertex = np.repeat(vertex, 2)
        slot_bone = np.stack([first, second], 1).ravel()
        slot_weight = np.stack([w_first, w_second], 1).ravel()
    else:  # no second slot is used: the entries as they are (the same slots, in the same order)
        slot_vertex, slot_bone, slot_weight = vertex, base, weight
    used = slot_weight != 0.0
    if not used.all():
        slot_vertex, slot_bone, slot_weight = slot_vertex[used], slot_bone[used], slot_weight[used]

    per_vertex = np.bincount(slot_vertex, minlength=n)
    k = max(int(per_vertex.max(initial=0)), 1)
    start = np.concatenate([[0], np.cumsum(per_vertex)[:-1]])
    rank = np.arange(len(slot_vertex)) - start[slot_vertex]
    indices = np.zeros((n, k), dtype=np.int32)
    weights = np.zeros((n, k), dtype=np.float64)
    indices[slot_vertex, rank] = slot_bone
    weights[slot_vertex, rank] = slot_weight

    deformed = contrib > CONTRIB_THRESHOLD
    np.divide(weights, contrib[:, None], out=weights, where=deformed[:, None])
    weights[~deformed] = 0.0
    influence = np.ones(n) if mask_weight is None else np.asarray(mask_weight, dtype=np.float64)
    if mask_weight is not None and invert_mask:
        influence = 1.0 - influence
    influence = np.where(deformed, influence, 0.0)
    return SkinBinding(indices, weights.astype(np.float32), influence.astype(np.float32))


def virtual_rest_matrices(bones: DeformBones, rest_segments: dict[int, np.ndarray]) -> np.ndarray:
    """Rest frames of every palette entry ``(V, 4, 4)``.

    ``rest_segments[d]`` holds bone ``d``'s B-bone segment joint matrices in bone space
    (``PoseBone.bbone_segment_matrix(i, rest=True)``), ``(segments + 1, 4, 4)``. The frame used for the
    dual quaternion split is the bone's rest matrix times the segment matrix with unit axes, as
    Blender's ``BKE_pchan_bbone_segments_cache_compute`` does.
    """
    out = np.empty((bones.virtual_count, 4, 4))
    base = bones.virtual_base
    for d in range(bones.count):
        if bones.segments[d] > 1:
            seg = bones.rest[d] @ rest_segments[d]
            seg[:, :3, :3] /= np.linalg.norm(seg[:, :3, :3], axis=-2, keepdims=True)
            out[base[d] : base[d] + bones.segments[d] + 1] = seg
        else:
            out[base[d]] = bones.rest[d]
    return out


def virtual_deform_matrices(
    bones: DeformBones,
    channel: np.ndarray,
    pose_segments: dict[int, np.ndarray],
    rest_segments: dict[int, np.ndarray],
) -> np.ndarray:
    """Deform matrices of every palette entry ``(V, 4, 4)`` for one frame.

    channel: ``(D, 4, 4)`` ``PoseBone.matrix_channel``. A B-bone segment joint ``a`` deforms by
    ``channel · rest · pose_seg[a] · rest_seg[a]⁻¹ · rest⁻¹`` (Blender's ``b_bone_mats[a + 1]``).
    """
    out = np.empty((bones.virtual_count, 4, 4))
    base = bones.virtual_base
    for d in range(bones.count):
        if bones.segments[d] > 1:
            rest = bones.rest[d]
            out[base[d] : base[d] + bones.segments[d] + 1] = (
                channel[d] @ rest @ pose_segments[d] @ np.linalg.inv(rest_segments[d]) @ np.linalg.inv(rest)
            )
        else:
            out[base[d]] = channel[d]
    return out
