"""What a texture bake adds for engines beyond the texture: tangents, culling boxes, the instancing mesh.

:class:`EngineData` is set up with the bake (its refusals run before anything is sampled or written), gives
the sidecar its blocks (:meth:`EngineData.metadata`) and writes the instancing mesh
(:meth:`EngineData.export`). The numbers themselves are the core's (:mod:`..core.animtex.pose_bounds`) and
the modules beside this one's (:mod:`.corners` for tangents, :mod:`.instancing`).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .. import bridge
from ..core.animtex import AnimationTexture, Kind, pose_bounds
from ..errors import HybridSkinError
from .corners import rest_tangents
from .export import check_names
from .files import VERTEX_ATTRIBUTES
from .instancing import check_instancing, instancing_record, write_instancing
from .scene import MeshPart

__all__ = ["EngineData"]


class EngineData:
    """The bake's engine extras for ``parts`` of a ``kind`` texture, as ``options`` ask (Tangents,
    Instancing Mesh); ``auto``: the texture carries Auto. Raises :class:`HybridSkinError` on what they
    cannot do, before the bake starts."""

    def __init__(self, parts: Sequence[MeshPart], kind: Kind, options, auto: bool):
        self.parts, self.kind, self.options, self.auto = parts, kind, options, auto
        if options.export_instancing:
            if kind is Kind.VERTEX:
                raise HybridSkinError(
                    "The instancing mesh carries bone indices and weights: bake BONE_MATRIX or BONE_DQ "
                    "for one"
                )
            check_instancing(parts, auto)  # room for its UV channels
            check_names(parts, ())  # and its own names free
        texel_uv = VERTEX_ATTRIBUTES["texel_uv"]
        #: Each mesh's rest corner tangents (a mesh without a UV map, or faces Blender cannot compute them
        #: on, refused here) and the UV map they follow, with Tangents; else ``None``.
        self.rest_tangents = rest_tangents(parts, texel_uv) if options.tangents else None
        self.tangent_uv_maps = None
        if options.tangents:
            self.tangent_uv_maps = [bridge.tangent_uv_map(p.obj.data, skip=(texel_uv,)) for p in parts]

    def metadata(
        self, texture: AnimationTexture, rest_items: np.ndarray | None, instancing_file: str | None
    ) -> dict:
        """The sidecar's engine blocks (keyword arguments of :func:`..core.animtex.build_metadata`): the
        culling boxes of every decoded pose, the tangents' UV maps, the instancing mesh's layout (its file:
        ``instancing_file``)."""
        names = [p.obj.name for p in self.parts]
        instancing = None
        if self.options.export_instancing:
            instancing = instancing_record(self.parts, instancing_file, self.auto)
        return {
            "pose_bounds": (names, pose_bounds(texture, self.parts, rest_items)),
            "tangent_uv_maps": self.tangent_uv_maps,
            "instancing": instancing,
        }

    def export(self, path: str) -> None:
        """Write the instancing mesh to ``path`` (the bake's transaction's temporary file)."""
        write_instancing(self.parts, path, self.auto)
