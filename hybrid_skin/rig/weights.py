"""A mesh's vertex-group weights as a bind uses them: read in one bulk pass, compared bit for bit.

:func:`read` gives every weight entry in Blender's stored order (which decides DQS signs) with the deform
bone it belongs to, and the dense weights of the groups the bind keeps besides (the Armature modifier's
mask, the factor group). :meth:`Weights.same_use` tells a suspect bind whether skinning would use the
same numbers (:func:`.bind.cached_bind`): the bind keeps its entries anyway, so they are compared rather
than hashed (a digest cost ~11% of every bind).
"""

from __future__ import annotations

from dataclasses import dataclass

import bpy
import numpy as np

from .. import bridge
from ..core import binding as core_binding

__all__ = ["Entries", "Weights", "read"]

#: ``(counts (N,), deform bone per entry or -1 (E,), weight (E,))`` in stored order.
Entries = tuple[np.ndarray, np.ndarray, np.ndarray]


@dataclass(frozen=True)
class Weights:
    entries: Entries
    group_weights: dict[int, np.ndarray]  # vertex group index → (N,) weights, for mask/factor groups
    bone_names: tuple[str, ...]  # the deform bones the entries' indices refer to
    matches_a_bone: bool

    def same_use(self, entries: Entries, group_weights: dict[int, np.ndarray]) -> bool:
        """Whether skinning uses exactly the weights a bind of ``entries`` and ``group_weights`` was built
        from (bit for bit): every deform bone's entry in stored order with its vertex and weight, and the
        weights of the wanted groups (mask, factor). Other groups (the Evaluated display's factor group,
        the user's own) do not change a bind."""
        if self.group_weights.keys() != group_weights.keys() or not all(
            _identical(w, group_weights[g]) for g, w in self.group_weights.items()
        ):
            return False
        if all(map(_identical, self.entries, entries)):
            return True  # every entry as it was (the usual case: nothing changed)
        return all(map(_identical, _used(self.entries), _used(entries)))


def read(
    obj: bpy.types.Object,
    mod: bpy.types.ArmatureModifier,
    bones: core_binding.DeformBones,
    extra: tuple[str, ...],
    source: bpy.types.Object | None = None,
) -> Weights:
    """The weight entries the Armature modifier ``mod`` receives, as a bind uses them (one bulk read of
    every entry); ``extra``: groups kept besides the modifier's mask group. ``source``: the object as the
    modifier receives it (:func:`..bridge.armature_input`: evaluated when modifiers above may change
    weights), ``obj`` when not given; its groups are found by name, and kept under ``obj``'s indices."""
    source = obj if source is None else source
    counts, groups, weights = bridge.read_vertex_group_entries(source.data)
    group_names = [g.name for g in source.vertex_groups]
    bone_of_name = {name: i for i, name in enumerate(bones.names)}
    group_to_bone = np.array([bone_of_name.get(name, -1) for name in group_names] + [-1], dtype=np.int64)
    entry_bone = group_to_bone[np.where(groups < len(group_names), groups, len(group_names))]
    matches_a_bone = bool(np.any(group_to_bone >= 0))
    if not mod.use_vertex_groups:
        entry_bone = np.full_like(entry_bone, -1)

    names = {mod.vertex_group, *extra} - {""}
    wanted = {obj.vertex_groups.find(name): source.vertex_groups.find(name) for name in names}
    wanted.pop(-1, None)  # a group the object does not have: no weights kept (as for a missing group)
    vertex = np.repeat(np.arange(len(counts)), counts) if wanted else None
    group_weights: dict[int, np.ndarray] = {}
    for gi, si in wanted.items():
        w = np.zeros(len(counts), dtype=np.float64)
        hit = groups == si
        w[vertex[hit]] = weights[hit]
        group_weights[gi] = w
    return Weights((counts, entry_bone, weights), group_weights, tuple(bones.names), matches_a_bone)


def _identical(a: np.ndarray, b: np.ndarray) -> bool:
    """Same shape, type and bits (a NaN weight equals itself; a changed one never compares equal)."""
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    bits = np.dtype(f"u{a.dtype.itemsize}")
    return bool(np.array_equal(a.view(bits), b.view(bits)))


def _used(entries: Entries) -> tuple[np.ndarray, ...]:
    """The deform-bone entries of ``(counts, bone, weight)`` as ``(vertex, bone, weight)``."""
    counts, bone, weight = entries
    used = bone >= 0
    return np.repeat(np.arange(len(counts)), counts)[used], bone[used], weight[used]
