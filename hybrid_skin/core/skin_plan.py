"""Per-binding and per-frame data of the skinning kernel (:mod:`.skin_kernel`), O(bones) per frame.

Antipodality (Blender's running-sum rule): a bone's dual quaternion is negated when its real part points
away from the running sum of the bones before it. Negating a whole dual quaternion (real, dual and
pivot term) leaves its transform unchanged, and the rule then decides the opposite way for it, exactly
(float negation is exact) — so the blend is the same for any per-bone signs. Per frame the bones are
signed along a spanning forest of the bones that share vertices (each agrees with its parent), which
makes every pair that shares a vertex agree unless the two really turn more than 180° apart.

If every pair of bones that share a vertex (with positive weights) has ``dot(q_a, q_b) ≥``
:data:`PAIR_MARGIN`, no sign can flip: the running sum's dot with the next bone is a positive combination
of such dots, far above float32 rounding, and the frame needs no sign work at all. Otherwise (bones that
share vertices spread over more than 180°) the rule runs per vertex, from a ``(B, B)`` table of the
bones' real-part dot products: ``dot(running sum, q_k) = Σ_{j<k} ±w_j·P[b_j, b_k]``, a few scalar
gathers per vertex (:attr:`Frame.pair_dots`; above :data:`PAIR_TABLE_BONES` bones, the kernel's running
sum over the *suspect* vertices instead).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["PAIR_MARGIN", "PAIR_TABLE_BONES", "BindingPlan", "Frame", "plan_binding", "prepare"]

#: Bone pairs whose real parts have a dot product at least this large cannot flip in the running sum;
#: float32 rounding of a running sum of unit quaternions is below 1e-6.
PAIR_MARGIN = 1e-4

#: Largest palette for the ``(B, B)`` pair table (16 MiB of float32).
PAIR_TABLE_BONES = 2048


@dataclass(frozen=True)
class BindingPlan:
    """What the kernel derives once per binding.

    pairs: ``(U, 2)`` distinct bone pairs that share a vertex with positive weights on both.
    levels: a maximum spanning forest of those pairs (weighted by shared vertices) as breadth-first
        ``(bones, parents)`` levels.
    full_influence: every vertex has influence 1 (no identity blend needed).
    """

    pairs: np.ndarray
    levels: tuple[tuple[np.ndarray, np.ndarray], ...]
    full_influence: bool


def plan_binding(bone_indices: np.ndarray, weights: np.ndarray, influence: np.ndarray) -> BindingPlan:
    k = weights.shape[1]
    bones = int(bone_indices.max(initial=0)) + 1
    keys = []
    for a in range(k):
        for b in range(a + 1, k):
            both = (weights[:, a] > 0) & (weights[:, b] > 0)
            lo = np.minimum(bone_indices[:, a], bone_indices[:, b]).astype(np.int64)
            hi = np.maximum(bone_indices[:, a], bone_indices[:, b]).astype(np.int64)
            keys.append((lo * bones + hi)[both & (lo != hi)])
    flat = np.concatenate(keys) if keys else np.zeros(0, np.int64)
    if bones * bones <= 1 << 24:  # counting is O(entries); np.unique would sort them
        counts = np.bincount(flat, minlength=bones * bones)
        unique = np.flatnonzero(counts)
        counts = counts[unique]
    else:
        unique, counts = np.unique(flat, return_counts=True)
    pairs = np.stack(np.divmod(unique, bones), 1) if len(unique) else np.zeros((0, 2), np.int64)
    return BindingPlan(pairs, _spanning_levels(bones, pairs, counts), bool(np.all(influence == 1.0)))


def _spanning_levels(bones: int, pairs: np.ndarray, shared: np.ndarray) -> tuple:
    """Maximum spanning forest (Kruskal on shared-vertex counts) as breadth-first levels."""
    root = list(range(bones))

    def find(a: int) -> int:
        while root[a] != a:
            root[a] = root[root[a]]
            a = root[a]
        return a

    neighbours: list[list[int]] = [[] for _ in range(bones)]
    for i in np.argsort(-shared, kind="stable").tolist():
        a, b = int(pairs[i, 0]), int(pairs[i, 1])
        ra, rb = find(a), find(b)
        if ra != rb:
            root[ra] = rb
            neighbours[a].append(b)
            neighbours[b].append(a)
    seen = [False] * bones
    levels: list[list[tuple[int, int]]] = []
    for start in range(bones):
        if seen[start]:
            continue
        seen[start] = True
        frontier, depth = [start], 0
        while frontier:
            step = []
            for a in frontier:
                for b in neighbours[a]:
                    if not seen[b]:
                        seen[b] = True
                        step.append((b, a))
            if step:
                if len(levels) <= depth:
                    levels.append([])
                levels[depth].extend(step)
            frontier, depth = [b for b, _ in step], depth + 1
    return tuple((np.array([b for b, _ in lv]), np.array([a for _, a in lv])) for lv in levels)


@dataclass(frozen=True)
class Frame:
    """Per-frame bone data.

    tables: float32 rows ``[LBS 3x4 | real | dual | pivot 4x3]`` for what a chunk needs (see
        :meth:`table`); only the ``wide`` ones carry the pivot columns. Dual quaternions are signed along
        :attr:`BindingPlan.levels`. ``"pivot"``: the pivot columns alone.
    keep: the LBS columns of mixed tables are already multiplied by this ``1 − f`` (a scalar factor
        strictly between 0 and 1; ``None`` otherwise): one multiply per bone instead of one per vertex.
    pivot: ``(B, 12)`` pivot terms (4x3 row-major, signed like the tables), ``None`` when no bone is
        scaled. scaled: ``(B,)`` bool, the bones with a pivot term.
    suspect: ``(B,)`` bool, bones in a co-occurring pair below :data:`PAIR_MARGIN`; ``None`` when no
        vertex can flip a sign.
    pair_dots: ``(B, B)`` float32 dot products of the signed real parts when some vertex can flip a sign
        and the palette has at most :data:`PAIR_TABLE_BONES` bones, else ``None``.
    """

    tables: dict[str, np.ndarray]
    keep: float | None
    pivot: np.ndarray | None
    scaled: np.ndarray | None
    suspect: np.ndarray | None
    pair_dots: np.ndarray | None = None

    def table(self, lbs: bool, dqs: bool, wide: bool = False, flipped: bool = False) -> np.ndarray:
        """Rows for LBS and/or DQS (with pivots when ``wide``); ``flipped``: doubled, rows ``B + b`` are
        bone ``b`` with its dual quaternion (and pivot) negated (only when :attr:`pair_dots` is set)."""
        if not dqs:
            return self.tables["lbs"]
        return self.tables[
            ("both" if lbs else "dq") + ("_wide" if wide else "") + ("_flip" if flipped else "")
        ]

    def pivot_rows(self, flipped: bool) -> np.ndarray | None:
        return self.tables.get("pivot_flip" if flipped else "pivot")


def _bone_signs(real: np.ndarray, plan: BindingPlan) -> np.ndarray:
    sign = np.ones(len(real))
    for bones, parents in plan.levels:
        dot = np.einsum("pc,pc->p", real[bones], real[parents])
        sign[bones] = np.where(dot < 0.0, -sign[parents], sign[parents])
    return sign


def _suspects(dq: np.ndarray, plan: BindingPlan) -> tuple[np.ndarray | None, np.ndarray | None]:
    """Sign the bones' dual quaternions ``dq`` in place when some shared pair disagrees; then the suspect
    bones and the pair table (both ``None`` when no vertex can flip a sign)."""
    if not len(plan.pairs):
        return None, None
    a, b = plan.pairs[:, 0], plan.pairs[:, 1]
    q = dq[:, :4].astype(np.float64)
    low = np.einsum("pc,pc->p", q[a], q[b]) < PAIR_MARGIN
    if not low.any():  # the usual frame: canonical quaternions already agree
        return None, None
    sign = _bone_signs(q, plan)
    dq *= sign.astype(np.float32)[:, None]  # exact: only signs change
    q *= sign[:, None]
    low = np.einsum("pc,pc->p", q[a], q[b]) < PAIR_MARGIN
    if not low.any():
        return None, None
    suspect = np.zeros(len(dq), dtype=bool)
    suspect[plan.pairs[low].ravel()] = True
    pair_dots = None
    if len(dq) <= PAIR_TABLE_BONES:
        pair_dots = np.ascontiguousarray(q @ q.T, dtype=np.float32)
    return suspect, pair_dots


def prepare(
    matrices: np.ndarray,
    real: np.ndarray,
    dual: np.ndarray,
    pivot: np.ndarray | None,
    plan: BindingPlan,
    factor: float | np.ndarray,
    both: bool = False,
) -> Frame:
    """The frame's tables for ``factor``; ``both``: LBS and DQS rows unweighted whatever the factor (the
    kernel then needs both terms apart, see :func:`.skin_kernel.positions_and_ends`)."""
    b = matrices.shape[0]
    scalar = isinstance(factor, float) and not both
    tables = {"lbs": np.ascontiguousarray(matrices, dtype=np.float32).reshape(b, 12)}
    if scalar and factor <= 0.0:  # LBS only: no dual quaternions at all
        return Frame(tables, None, None, None, None)
    dq = np.zeros((b, 20), dtype=np.float32)
    dq[:, 0:4] = real
    dq[:, 4:8] = dual
    scaled = None
    if pivot is not None:
        dq[:, 8:20] = np.asarray(pivot, dtype=np.float32).reshape(b, 12)
        scaled = np.any(dq[:, 8:20] != 0.0, axis=1)
        scaled = scaled if scaled.any() else None
    suspect, pair_dots = _suspects(dq, plan)
    keep = None
    names = ["dq", "dq_wide"]
    if not (scalar and factor >= 1.0):
        mixed = tables["lbs"]
        if scalar:
            keep = 1.0 - factor
            mixed = mixed * np.float32(keep)
        tables["both_wide"] = np.concatenate([mixed, dq], 1)
        tables["both"] = np.ascontiguousarray(tables["both_wide"][:, :20])
        names = ["both", "both_wide"]
    tables["dq_wide"] = dq
    tables["dq"] = np.ascontiguousarray(dq[:, :8])
    pivots = None
    if scaled is not None:
        pivots = tables["pivot"] = np.ascontiguousarray(dq[:, 8:20])
        names.append("pivot")
    if pair_dots is not None:  # doubled tables: rows B + b hold bone b with its dual quaternion negated
        for name in names:
            t = tables[name]
            negated = t.copy()
            negated[:, 12 if name.startswith("both") else 0 :] *= -1.0
            tables[name + "_flip"] = np.concatenate([t, negated])
    return Frame(tables, keep, pivots, scaled, suspect, pair_dots)
