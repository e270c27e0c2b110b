"""The instancing mesh: a bone bake's meshes as a static glTF whose UV channels carry the skin's data.

Engines instance *static* meshes (Unreal's instanced static meshes, which its AnimToTexture plugin feeds the
same way; Unity's ``Graphics.RenderMeshInstanced``): a ``.glb`` with a glTF skin imports as a skeletal or
skinned mesh instead. With the bake's *Instancing Mesh* option a bone bake also writes
``<name>_instancing.glb``: the baked meshes without skin, modifiers or animation (glTF's +Y up, their own
coordinates, placed as in the ``.glb``), each vertex's 4 palette indices, 4 weights and, where the texture
carries Auto, its 4 floats of Auto rest data in UV channels after the mesh's own UV maps (from
``TEXCOORD_2`` at the earliest, where Godot's importer makes them ``CUSTOM0``–``CUSTOM2``:
:data:`FIRST_DATA_CHANNEL`), two values a channel (:data:`CHANNELS`), and ``_ANIMTEX_VERTEX`` (each exported
vertex's Blender index).

These channels hold data, not texture coordinates: the file holds a pair ``(a, b)`` as ``u = a, v = b``
exactly (the same float32 values as the skin's attributes; no v flip, so a reader that takes the file's
values, as three.js's GLTFLoader does, decodes exactly what the skin decodes). Importers that turn glTF's
UVs to ``v`` from the bottom (Unity's and Unreal's) give ``1 − b``: their entry points take ``1 − v`` back,
within float32 rounding. The channels are made by UV maps added to the meshes for the export (so the
exporter splits and orders vertices as for any UV map) and removed again, whatever happens, with the meshes'
active UV maps as they were; then the file's channels are overwritten with the exact values.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import contextmanager

import bpy
import numpy as np

from .. import bridge
from ..core.animtex import gltf
from ..errors import HybridSkinError
from .export import write_gltf
from .scene import MeshPart

__all__ = [
    "CHANNELS",
    "FIRST_DATA_CHANNEL",
    "INSTANCING_SUFFIX",
    "check_instancing",
    "first_data_channel",
    "instancing_record",
    "write_instancing",
]

#: Blender's limit of UV maps per mesh.
MAX_UV_MAPS = 8
#: The file beside the texture: ``<name>`` + this.
INSTANCING_SUFFIX = "_instancing.glb"
#: The UV channels after the mesh's own, in order: (mesh data key, its two components in the channel).
CHANNELS = (
    ("bone_indices", 0, 1),
    ("bone_indices", 2, 3),
    ("bone_weights", 0, 1),
    ("bone_weights", 2, 3),
    ("auto_rest", 0, 1),
    ("auto_rest", 2, 3),
)
#: The first data channel at the earliest. Godot 4's glTF importer (4.2+) gives ``TEXCOORD_0`` and ``_1`` as
#: ``UV`` and ``UV2`` and each further pair of channels as one ``CUSTOM`` vector (``TEXCOORD_2`` in
#: ``CUSTOM0.xy``, ``_3`` in ``CUSTOM0.zw``, …): data from channel 2 on reaches its shader as ``CUSTOM0`` =
#: the 4 indices, ``CUSTOM1`` = the 4 weights, ``CUSTOM2`` = the Auto rest data. A mesh with fewer UV maps of
#: its own gets empty channels (zeros) up to ``TEXCOORD_1``.
FIRST_DATA_CHANNEL = 2
#: Names of the UV maps the export adds for the time of the export (no leading "_": Blender's exporter would
#: also write such a map as a custom attribute): the empty channels, then the data channels.
_PAD_NAME = "animtex_instancing_empty_{}"
_UV_NAME = "animtex_instancing_{}"


def _channels(auto: bool) -> tuple[tuple[str, int, int], ...]:
    return CHANNELS if auto else CHANNELS[:4]


def first_data_channel(mesh: bpy.types.Mesh) -> int:
    """The glTF ``TEXCOORD_`` index of ``mesh``'s first data channel: after its own UV maps, and no earlier
    than :data:`FIRST_DATA_CHANNEL`."""
    return max(len(mesh.uv_layers), FIRST_DATA_CHANNEL)


def _added_names(mesh: bpy.types.Mesh, auto: bool) -> list[str]:
    """The UV maps the export adds to ``mesh``, in order: the empty channels, then the data channels."""
    pads = first_data_channel(mesh) - len(mesh.uv_layers)
    data = [_UV_NAME.format(k) for k in range(len(_channels(auto)))]
    return [_PAD_NAME.format(k) for k in range(pads)] + data


def check_instancing(parts: Sequence[MeshPart], auto: bool) -> None:
    """Refuse, before anything is written, a mesh without room for the channels (8 UV maps at most)."""
    needed = len(_channels(auto))
    for part in parts:
        mesh = part.obj.data
        taken = [name for name in _added_names(mesh, auto) if name in mesh.attributes]
        if taken:
            raise HybridSkinError(
                f"Mesh '{part.obj.name}' already has an attribute '{taken[0]}', a name the instancing mesh "
                "uses: rename or remove it to export the instancing mesh"
            )
        if len(mesh.uv_layers) + needed > MAX_UV_MAPS:
            raise HybridSkinError(
                f"Mesh '{part.obj.name}' has {len(mesh.uv_layers)} UV maps: the instancing mesh adds "
                f"{needed} and Blender allows {MAX_UV_MAPS} (remove one, or bake without Instancing Mesh)"
            )


def instancing_record(parts: Sequence[MeshPart], file_name: str, auto: bool) -> dict:
    """The sidecar's ``instancing`` block: the file, each mesh's first data channel and the channels."""
    return {
        "file": file_name,
        "first_uv_channel": {p.obj.name: first_data_channel(p.obj.data) for p in parts},
        "channels": [{"mesh_attribute": key, "components": [a, b]} for key, a, b in _channels(auto)],
        "v": "raw: TEXCOORD holds a pair (a, b) as u = a, v = b (data, not flipped as glTF's texture "
        "coordinates are); an importer that turns v to 1 - v (Unity, Unreal) gives (a, 1 - b)",
    }


@contextmanager
def _data_uv_maps(parts: Sequence[MeshPart], auto: bool):
    """Each mesh with the channels as extra UV maps (per face corner, the corner's vertex's values), after
    empty ones up to :data:`FIRST_DATA_CHANNEL`, removed again after; the meshes' active and active-render UV
    maps as they were."""
    added: list[tuple[bpy.types.Mesh, list[str], int, int]] = []
    try:
        for part in parts:
            mesh = part.obj.data
            values = _padded_values(part, auto)
            corner_vertex = bridge.corner_vertices(mesh)
            layers = mesh.uv_layers
            active = layers.active_index
            render = next((i for i, uv in enumerate(layers) if uv.active_render), -1)
            names = _added_names(mesh, auto)
            added.append((mesh, names, active, render))
            for k, name in enumerate(names):  # the exact values are written into the file afterwards
                bridge.set_uv_map(mesh, name, values[corner_vertex, 2 * k : 2 * k + 2])
        yield
    finally:
        for mesh, names, active, render in added:
            for name in names:
                layer = mesh.uv_layers.get(name)
                if layer is not None:
                    mesh.uv_layers.remove(layer)
            if 0 <= active < len(mesh.uv_layers):
                mesh.uv_layers.active_index = active
            if 0 <= render < len(mesh.uv_layers):
                mesh.uv_layers[render].active_render = True


def _values(part: MeshPart, auto: bool) -> np.ndarray:
    """``(N, 2 k)`` float32: the channels' pairs per vertex, in channel order."""
    data = {"bone_indices": part.bone_indices, "bone_weights": part.bone_weights, "auto_rest": part.auto_rest}
    return np.concatenate(
        [np.asarray(data[key], dtype=np.float32)[:, [a, b]] for key, a, b in _channels(auto)], axis=1
    )


def _padded_values(part: MeshPart, auto: bool) -> np.ndarray:
    """:func:`_values` after the empty channels' zeros: every channel the export adds, in order."""
    values = _values(part, auto)
    pads = first_data_channel(part.obj.data) - len(part.obj.data.uv_layers)
    return np.concatenate([np.zeros((len(values), 2 * pads), np.float32), values], axis=1)


def write_instancing(parts: Sequence[MeshPart], path: str, auto: bool) -> None:
    """Write the instancing mesh (see the module) to ``path``."""
    owns = {p.obj.name: len(p.obj.data.uv_layers) for p in parts}
    channels = {p.obj.name: (owns[p.obj.name], _padded_values(p, auto)) for p in parts}
    with _data_uv_maps(parts, auto):
        write_gltf(parts, path, ())
    try:
        with open(path, "rb") as fh:
            data = gltf.set_texcoords(fh.read(), channels, "_ANIMTEX_VERTEX")
        with open(path, "wb") as fh:
            fh.write(data)
    except ValueError as err:
        raise HybridSkinError(f"Cannot write the instancing mesh: {err}") from err
