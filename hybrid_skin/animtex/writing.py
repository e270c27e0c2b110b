"""What a texture bake writes, as one transaction: the sidecar's content, the image, the mesh data and the
exports to temporary files, committed together with the sidecar last (:mod:`.outputs`); a failure anywhere
puts the folder and the meshes' data back as they were.

:class:`Writing` is the part of :class:`.bake.TextureBake` that does it (inherited); the bake's state
(parts, options, kind, its output set) is the bake's own.
"""

from __future__ import annotations

import os

import bpy
import numpy as np

from ..core.animtex import AnimationTexture, Kind, build_metadata, dumps, root_motion_track
from ..core.animtex.samples import StoredFrames
from ..errors import HybridSkinError
from ..rig import bind
from .export import write_babylon, write_gltf
from .files import MeshDataBackup, write_image, write_mesh_data
from .options import PHASES, BakeResult
from .outputs import Source, Transaction
from .summary import store_summary

__all__ = ["UNCHANGED", "Writing"]

#: How a failed write ends its sentence: the transaction put back the folder and the meshes.
UNCHANGED = "; nothing was changed: the folder and the meshes are as they were"


class Writing:
    """The writing methods of :class:`.bake.TextureBake` (which it inherits)."""

    @staticmethod
    def _mesh_to_scene_scale(stored: StoredFrames) -> float:
        """Scene units per mesh unit: the first mesh's largest axis scale at the first stored sample."""
        return float(np.linalg.norm(stored["world"][0][0, 0, :3, :3], 2))

    def _metadata(
        self, stored: StoredFrames, texture: AnimationTexture, report: dict, names: dict[str, str]
    ) -> dict:
        attributes, _ = self._attributes()
        # Root motion (the first mesh's object matrix, not in the in-place texture) per clip.
        root_motion = []
        for ci, clip in enumerate(texture.clips):
            world = stored["world"][ci][:, 0]
            try:
                root_motion.append(root_motion_track(world, cycle_end=self._cycle_end.get(ci)))
            except ValueError as err:
                root_motion.append(None)
                self.warnings.append(f"Clip '{clip.name}': no root motion track written: {err}")
        with self._phase("report"):  # culling boxes of every decoded pose (at every runtime factor), ...
            engine_blocks = self.engine.metadata(texture, self._rest_items, names.get("instancing"))
        return build_metadata(
            texture,
            image=names["image"],
            mesh_attributes=attributes,
            error_report=report,
            root_motion=root_motion,
            unkeyed_bones="rest" if self.options.unkeyed_bones_at_rest else "scene",
            factor=self.factor_record(),
            mesh_to_scene_scale=self._mesh_to_scene_scale(stored),
            options=self.options.record(),
            source=Source(self.target.name, bpy.data.filepath, self.kind.value).record(),
            files={r: names.get(r) for r in dict.fromkeys(("image", "sidecar", "gltf", "babylon", *names))},
            **engine_blocks,
        )

    def _write(
        self, stored: StoredFrames, texture: AnimationTexture, report: dict, tried: tuple
    ) -> BakeResult:
        """Every output to a temporary file, the mesh data with what it held kept, then the set committed
        with the sidecar last (:mod:`.outputs`); a failure anywhere puts the folder and the meshes back."""
        _, written = self._attributes()
        ending = ".png" if texture.precision.normalized else ".exr"
        names = self.outputs.names(ending)
        transaction = Transaction(self.outputs)
        backup = MeshDataBackup(self.parts, written) if self.options.write_mesh_data else None
        try:
            with self._phase("write"):
                meta = self._metadata(stored, texture, report, names)
                png = self.options.png_compression
                write_image(texture, transaction.temporary("image", ending), png_compression=png)
            with self._phase("mesh_data"):
                self._write_mesh_data(texture, backup)
                if self.options.export_gltf:
                    self._export(stored, texture, transaction, written)
                if self.options.export_instancing:  # the static mesh with the bone data in UV channels
                    self.engine.export(transaction.temporary("instancing", ".glb"))
            with self._phase("write"):
                with open(transaction.temporary("sidecar", ".json"), "w", encoding="utf-8") as fh:
                    fh.write(dumps(meta))
                removed = transaction.commit(ending)
        except BaseException as err:
            transaction.discard()
            if backup is not None:
                with bind.own_edits(p.obj for p in self.parts):
                    backup.restore()
            if isinstance(err, OSError):
                reason = f"Cannot write to '{self.directory}' ({err.strerror})"
                raise HybridSkinError(reason + UNCHANGED) from err
            if isinstance(err, HybridSkinError):
                raise HybridSkinError(f"{err}{UNCHANGED}") from err
            raise
        timings = {name: self.timings.get(name, 0.0) for name in PHASES}
        paths = {role: os.path.join(self.directory, name) for role, name in names.items()}
        result = BakeResult(
            paths["image"], paths["sidecar"], texture, meta, report, tried, self.warnings, timings,
            paths.get("gltf", ""), paths.get("babylon", ""), removed, paths.get("instancing", ""),
        )  # fmt: skip
        if self.target is not None:
            store_summary(self.target, result)
        return result

    def _write_mesh_data(self, texture: AnimationTexture, backup: MeshDataBackup | None) -> None:
        if backup is None:
            return
        with bind.own_edits(p.obj for p in self.parts):  # texel data: the binds stay valid
            for i, part in enumerate(self.parts):
                write_mesh_data(part, texture, self.items.corner_items(i) if self.items else None)

    def _export(
        self, stored: StoredFrames, texture: AnimationTexture, transaction: Transaction, written: list[str]
    ) -> None:
        """The meshes as ``.glb`` (bone kinds: with the palette as a skin) and, asked for, Babylon.js's
        matrices (the sampled, not quantised, ones), to the transaction's temporary files."""
        bones = None if self.kind is Kind.VERTEX else self.bone_names
        path = transaction.temporary("gltf", ".glb")
        node_world = write_gltf(self.parts, path, written, bones, self.options.tangents)
        if self.options.export_babylon and node_world is not None:
            path = transaction.temporary("babylon", ".json")
            write_babylon(path, stored["matrices"], texture.clips, bones, node_world)

