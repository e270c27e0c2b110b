"""Split normals in a ``VERTEX`` bake: the items of every baked mesh's corner groups, sampled per frame.

Sharp edges, flat faces and custom split normals give a vertex several corner normals; engines split
such vertices. :mod:`..core.animtex.split` numbers each mesh's corner groups as texture items; this
module lays them out over all baked meshes and turns their normals each frame:

- items ``0..N_total-1`` are the vertices of all meshes, mesh after mesh (``texel_index`` unchanged);
- then the extra items of the first mesh, of the second, ...

An extra item sits at its vertex; its normal (and the normal of a split vertex's own item) is its rest
corner normal turned by its vertex's skinning transform, exactly as the vertex normals are
(:func:`..core.skinning.skin`). Corner normals are read from the mesh (``Mesh.corner_normals``) at bake
start, like the coordinates the engine gets.

With tangents (the bake's *Tangents* option, for normal maps), each corner's MikkTSpace tangent of the
mesh's UV map at rest (:func:`rest_tangents`) also tells corners apart, and every item's tangent is
Blender's own MikkTSpace tangent of the mesh deformed to each frame (what Blender shades a normal map
with), made perpendicular to the item's normal. (A bone bake's runtime cannot recompute them: it turns the
mesh's rest tangents with each vertex's skin, as engines' GPU skinning does.)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from .. import bridge
from ..core.animtex.split import CornerSplit, split_corners
from ..core.skinning import SkinBinding, skin
from ..core.small_linalg import unit
from ..errors import HybridSkinError
from ..rig.mesh_bind import PosedBind
from .scene import MeshPart

__all__ = ["CornerItems", "rest_tangents"]


def rest_tangents(parts: Sequence[MeshPart], texel_uv: str) -> list[np.ndarray]:
    """Each baked mesh's corner tangents and signs ``(C, 4)`` for its UV map (:func:`.bridge.tangent_uv_map`,
    never the bake's own ``texel_uv``); one sentence when a mesh has no UV map or Blender cannot compute
    tangents on it."""
    out = []
    for part in parts:
        mesh = part.obj.data
        uv_map = bridge.tangent_uv_map(mesh, skip=(texel_uv,))
        if uv_map is None:
            raise HybridSkinError(
                f"Mesh '{part.obj.name}' has no UV map: tangents follow a UV map (add one, or bake without "
                "Tangents)"
            )
        try:
            out.append(bridge.corner_tangents(mesh, uv_map))
        except RuntimeError as err:  # Blender's MikkTSpace takes triangles and quads only
            raise HybridSkinError(
                f"Blender cannot compute tangents on mesh '{part.obj.name}': it has faces of more than 4 "
                "corners (triangulate them, or bake without Tangents)"
            ) from err
    return out


@dataclass
class CornerItems:
    """Texture items of the baked meshes' corner groups (:func:`CornerItems.of`)."""

    splits: list[CornerSplit]
    starts: list[int]  # each mesh's first vertex item
    extra_starts: list[int]  # each mesh's first extra item
    item_count: int
    #: ``(N_total + E,)`` item → index into the concatenated vertices of all meshes
    item_vertex: np.ndarray
    _bindings: dict[tuple[int, int], SkinBinding] = field(default_factory=dict)

    @classmethod
    def of(cls, parts: Sequence[MeshPart], tangents: Sequence[np.ndarray] | None = None) -> CornerItems:
        """The items of ``parts``; with ``tangents`` (:func:`rest_tangents`) corners differing in tangent
        stay apart too and every item has a rest tangent."""
        splits = [
            split_corners(
                bridge.corner_vertices(p.obj.data), bridge.corner_normals(p.obj.data), p.normals,
                corner_tangents=None if tangents is None else tangents[i],
            )
            for i, p in enumerate(parts)
        ]  # fmt: skip
        total = sum(s.vertex_count for s in splits)
        extra_starts = list(total + np.cumsum([0] + [s.extra_count for s in splits[:-1]]))
        extras = [p.start + s.item_vertex[s.vertex_count :] for p, s in zip(parts, splits)]
        item_vertex = np.concatenate([np.arange(total), *extras]).astype(np.int64)
        return cls(splits, [p.start for p in parts], extra_starts, len(item_vertex), item_vertex)

    def corner_items(self, index: int) -> np.ndarray:
        """``(C,)`` int32 texture item of every face corner of mesh ``index``."""
        s = self.splits[index]
        local = s.corner_item.astype(np.int64)
        extra = local >= s.vertex_count
        out = np.where(extra, local - s.vertex_count + self.extra_starts[index], local + self.starts[index])
        return out.astype(np.int32)

    def rest_positions(self, base: np.ndarray) -> np.ndarray:
        """``(N_total + E, 3)``: the concatenated vertex coordinates ``base``, extended to the items."""
        return base if len(base) == self.item_count else base[self.item_vertex]

    def _binding(self, index: int, binding: SkinBinding, vertices: np.ndarray) -> SkinBinding:
        key = (index, id(binding))
        if key not in self._bindings:
            self._bindings = {k: v for k, v in self._bindings.items() if k[0] != index}
            self._bindings[key] = SkinBinding(
                np.ascontiguousarray(binding.bone_indices[vertices]),
                np.ascontiguousarray(binding.weights[vertices]),
                np.ascontiguousarray(binding.influence[vertices]),
            )
        return self._bindings[key]

    def frame(
        self,
        posed: Sequence[PosedBind],
        factors: Sequence[float | np.ndarray],
        positions: Sequence[np.ndarray],
        normals: Sequence[np.ndarray],
    ) -> tuple[np.ndarray, np.ndarray]:
        """Item positions and normals ``(N_total + E, 3)`` at one frame, from each mesh's skinned
        vertex ``positions``/``normals`` and its pose and deform ``factors`` (as the vertices got them)."""
        vertex_normals, extra_normals = [], []
        for i, (pose, f, n, s) in enumerate(zip(posed, factors, normals, self.splits)):
            if not s.extra_count:
                vertex_normals.append(n)
                continue
            items = s.changed_items
            vertices = s.item_vertex[items]
            rest = pose.bind.rest_positions[vertices]
            turned = skin(
                rest,
                self._binding(i, pose.bind.binding, vertices),
                pose.palette,
                f if np.ndim(f) == 0 else np.asarray(f)[vertices],
                s.item_normals[items],
                pose.target_to_armature,
            )[1]
            n = n.copy()
            own = items < s.vertex_count
            n[items[own]] = turned[own]
            vertex_normals.append(n)
            extra_normals.append(turned[~own][np.argsort(items[~own])])
        all_positions = np.concatenate(positions) if len(positions) > 1 else positions[0]
        all_positions = self.rest_positions(all_positions)
        return all_positions, np.concatenate(vertex_normals + extra_normals)

    def items_of(self, index: int) -> np.ndarray:
        """``(n + e,)`` the texture items of mesh ``index``: its vertices', then its extra corner groups'."""
        s = self.splits[index]
        vertices = np.arange(self.starts[index], self.starts[index] + s.vertex_count)
        extras = np.arange(self.extra_starts[index], self.extra_starts[index] + s.extra_count)
        return np.concatenate([vertices, extras])

    def set_evaluated(
        self,
        index: int,
        item_positions: np.ndarray,
        item_normals: np.ndarray,
        positions: np.ndarray,
        corner_normals: np.ndarray,
    ) -> None:
        """Mesh ``index``'s items from what Blender evaluated (its modifiers after the Armature modifier
        applied, :mod:`.tail`): each item at its vertex's ``positions``, its normal the mean of its corners'
        ``corner_normals`` (a vertex with no face keeps the one it had)."""
        items = self.items_of(index)
        item_positions[items] = positions[self.item_vertex[items] - self.starts[index]]
        local = np.searchsorted(items, self.corner_items(index))  # items ascend: vertices, then extras
        summed = np.zeros((len(items), 3), np.float64)
        np.add.at(summed, local, corner_normals)
        lengths = np.linalg.norm(summed, axis=1)
        faced = lengths > 0
        item_normals[items[faced]] = (summed[faced] / lengths[faced, None]).astype(np.float32)

    def tangents(self, parts: Sequence[MeshPart], uv_maps: Sequence[str], positions: np.ndarray,
                 normals: np.ndarray) -> np.ndarray:  # fmt: skip
        """Every item's tangent and sign ``(N_total + E, 4)`` at one frame: Blender's own MikkTSpace
        tangents (``Mesh.calc_tangents`` of ``uv_maps``) of each mesh deformed to this frame's vertex
        ``positions`` (the items' positions, :meth:`frame`), each item's the mean of its corners', made
        perpendicular to the item's ``normals`` and unit."""
        own, extra = [], []
        for i, (part, s) in enumerate(zip(parts, self.splits)):
            count = s.vertex_count
            start = self.starts[i]
            moved = positions[start : start + count]
            corners = bridge.deformed_corner_tangents(part.obj.data, moved, uv_maps[i])
            sums = np.zeros((s.item_count, 3))
            np.add.at(sums, s.corner_item, corners[:, :3])
            sign = np.ones(s.item_count)
            sign[s.corner_item] = np.where(corners[:, 3] < 0, -1.0, 1.0)
            tangents = np.concatenate([sums, sign[:, None]], axis=1)
            own.append(tangents[:count])
            extra.append(tangents[count:])
        out = np.concatenate(own + extra)
        n = np.asarray(normals, dtype=np.float64)
        t = out[:, :3] - np.einsum("ij,ij->i", out[:, :3], n)[:, None] * n
        return np.concatenate([unit(t), out[:, 3:]], axis=1).astype(np.float32)
