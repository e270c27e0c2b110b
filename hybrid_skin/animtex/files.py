"""What an animation texture bake writes: the image, its JSON sidecar and the mesh data.

Owns: the output folder check, saving the exact codes (PNG by :mod:`..core.animtex.png`, EXR with
Blender's image API: Non-Color, alpha as data) and reading them back (:func:`write_image`, to a temporary
name :mod:`.outputs` commits with the rest of the set), and the per-vertex attributes and UV map named in
the sidecar's ``mesh_attributes``, with what they held before (:class:`MeshDataBackup`: a bake that fails
after writing them puts them back). What the UI shows about the last bake is :mod:`.summary`.
"""

from __future__ import annotations

import os
import uuid

import bpy
import numpy as np

from .. import bridge
from ..core.animtex import AnimationTexture, Kind, Precision, png
from ..core.animtex.metadata import DEFAULT_MESH_ATTRIBUTES, auto_rest_attributes
from ..errors import HybridSkinError
from ..rig import checks
from .scene import MeshPart

__all__ = [
    "BONE_ATTRIBUTES",
    "PNG_COMPRESSION",
    "VERTEX_ATTRIBUTES",
    "bone_attributes",
    "check_directory",
    "read_image",
    "write_image",
    "MeshDataBackup",
    "write_mesh_data",
]

VERTEX_ATTRIBUTES = {k: DEFAULT_MESH_ATTRIBUTES[k] for k in ("texel_index", "texel_uv", "corner_index")}
BONE_ATTRIBUTES = {k: DEFAULT_MESH_ATTRIBUTES[k] for k in ("bone_indices", "bone_weights")}


def bone_attributes(auto_floats: int = 0) -> tuple[dict[str, str], list[str]]:
    """A bone bake's ``mesh_attributes`` and the names of every attribute it writes: with
    ``auto_floats`` floats of Auto rest data per vertex, also ``auto_rest`` (4 floats an attribute)."""
    if not auto_floats:
        return dict(BONE_ATTRIBUTES), list(BONE_ATTRIBUTES.values())
    name = DEFAULT_MESH_ATTRIBUTES["auto_rest"]
    attributes = {**BONE_ATTRIBUTES, "auto_rest": name}
    return attributes, [*BONE_ATTRIBUTES.values(), *auto_rest_attributes(name, auto_floats)]


def _not_writable(folder: str, err: OSError) -> HybridSkinError:
    return HybridSkinError(f"Cannot write to '{folder}' ({err.strerror}): choose a writable folder")


def check_directory(directory: str) -> str:
    """The absolute output folder; raises unless it exists and a file can really be created in it."""
    path = checks.absolute_path(directory, "output folder") if directory else ""
    if not directory or not os.path.isdir(path):
        raise HybridSkinError(f"Output folder '{directory}' does not exist: choose an existing folder")
    try:  # os.access is not enough (root, read-only mounts, network shares): really create a file
        probe = os.path.join(path, f".hybrid_skin_probe_{uuid.uuid4().hex[:8]}")
        with open(probe, "wb"):
            pass
        os.remove(probe)
    except OSError as err:
        raise _not_writable(path, err) from err
    return path


# ---------------------------------------------------------------------------------- image files
#: PNG zlib effort in Blender's percent (``ImageFormatSettings.compression``, mapped to a zlib level as
#: Blender maps it). 0 stores the deflate blocks uncompressed: animation textures are near-random in their
#: low bits, so zlib's fastest level saves only ~18% of the file yet costs several times the write.
#: Engines re-encode textures on import anyway; scripts wanting smaller files pass
#: ``BakeOptions(png_compression=15)`` (or more; the gain beyond zlib's fastest level is tiny).
PNG_COMPRESSION = 0
#: OpenEXR codec (lossless). RLE rather than ZIP: animation textures are near-random in their low
#: bits, so ZIP only saves the constant alpha channel's bytes, which RLE saves too. 100k vertices x 25
#: frames (8192x630): EXR16 ZIP 22.9 MB, write 0.37 s + read-back 0.18 s; RLE 30.1 MB, 0.12 + 0.09 s.
#: EXR32: ZIP 59.8 MB, 0.28 + 0.18 s; RLE 70.7 MB, 0.07 + 0.10 s.
EXR_CODEC = "RLE"


def _save_image(
    texture: AnimationTexture, path: str, png_compression: int = PNG_COMPRESSION
) -> bytes | None:
    """Write the exact codes: PNG with :mod:`..core.animtex.png` (returns the bytes written), EXR with
    Blender's image API (returns ``None``)."""
    if not texture.precision.normalized:
        _save_exr(texture, path)
        return None
    data = png.encode_png(texture.pixels, png.zlib_level(png_compression))
    with open(path, "wb") as fh:
        fh.write(data)
    return data


def _save_exr(texture: AnimationTexture, path: str) -> None:
    """Write float pixels with Blender's image API: Non-Color, alpha as data, exact values.

    The render settings of a temporary scene choose half or full float and the codec; Non-Color data
    passes through ``save_render`` untouched by view transforms (the read-back check in
    :func:`write_files` guards that).
    """
    height, width = texture.pixels.shape[:2]
    image = bpy.data.images.new(".hybrid_skin_animtex", width, height, alpha=True, float_buffer=True)
    scene = None
    try:
        image.colorspace_settings.name = "Non-Color"
        image.alpha_mode = "CHANNEL_PACKED"
        bridge.set_image_pixels(image, texture.channels())
        scene = bpy.data.scenes.new(".hybrid_skin_animtex")
        settings = scene.render.image_settings
        settings.color_mode = "RGBA"
        settings.file_format = "OPEN_EXR"
        settings.color_depth = "16" if texture.precision is Precision.EXR16 else "32"
        settings.exr_codec = EXR_CODEC
        image.save_render(path, scene=scene)
    except RuntimeError as err:
        raise HybridSkinError(f"Blender could not write '{path}': {err}") from err
    finally:
        if scene is not None:
            bpy.data.scenes.remove(scene)
        bpy.data.images.remove(image)


def read_image(path: str) -> np.ndarray:
    """``(H, W, 4)`` float32 channels of a texture as Blender loads it (Non-Color, alpha as data)."""
    image = bpy.data.images.load(path, check_existing=False)
    try:
        image.colorspace_settings.name = "Non-Color"
        image.alpha_mode = "CHANNEL_PACKED"
        pixels = bridge.image_pixels(image)
    finally:
        bpy.data.images.remove(image)
    return pixels


def _file_matches(path: str, texture: AnimationTexture, written: bytes | None) -> bool:
    """Whether the file on disk holds exactly the texture's stored codes. PNG: byte for byte the
    encoder's output (``written``; the encoder itself is checked against an independent PNG decoder in
    the tests), a tenth of the cost of decoding it again; EXR: as Blender loads it."""
    if written is not None:
        with open(path, "rb") as fh:
            return fh.read() == written
    back = read_image(path)
    if back.shape != texture.pixels.shape:
        return False
    # the stored floats widen exactly to float32 (2x faster than narrowing what was read to half)
    return bool(np.array_equal(back, texture.pixels))


def write_image(texture: AnimationTexture, path: str, *, png_compression: int = PNG_COMPRESSION) -> None:
    """The texture's image at ``path`` (a temporary name: :mod:`.outputs` commits it), read back and
    compared with the codes written; raises :class:`HybridSkinError` when they differ or the write fails."""
    folder = os.path.dirname(path)
    try:
        written = _save_image(texture, path, png_compression)
        if not _file_matches(path, texture, written):
            raise HybridSkinError(
                f"The texture did not read back with the values written ({texture.precision.value}, Blender "
                f"{bpy.app.version_string}); nothing was saved: try another precision"
            )
    except OSError as err:
        raise _not_writable(folder, err) from err


# ------------------------------------------------------------------------------------ mesh data
def check_mesh_data(parts: list[MeshPart], kind: Kind) -> None:
    """Refuse, before anything is written, mesh data that :func:`write_mesh_data` could not write:
    a linked (read-only) mesh, or no room for the texel UV map (Blender allows 8 UV maps)."""
    for part in parts:
        obj, mesh = part.obj, part.obj.data
        if obj.library is not None or mesh.library is not None or mesh.override_library is not None:
            raise HybridSkinError(
                f"'{obj.name}' uses linked mesh data '{mesh.name}', which cannot store the texel data: "
                "make it local (Object ▸ Relations ▸ Make Local) or untick Mesh Data"
            )
        name = VERTEX_ATTRIBUTES["texel_uv"]
        if kind is Kind.VERTEX and name not in mesh.uv_layers and len(mesh.uv_layers) >= 8:
            raise HybridSkinError(
                f"'{obj.name}' already has 8 UV maps, the most Blender allows: remove one for '{name}' "
                "or untick Mesh Data"
            )


def write_mesh_data(
    part: MeshPart, texture: AnimationTexture, corner_items: np.ndarray | None = None
) -> None:
    """Texel index per vertex, item per face corner and UV map (VERTEX), or palette indices + weights
    per vertex (bone kinds; with Auto also each vertex's Auto rest data, 4 floats an attribute).
    ``corner_items`` ``(C,)``: each corner's item (its corner normal group's, :mod:`.corners`); the vertex's
    own item where not given."""
    mesh = part.obj.data
    if texture.kind is not Kind.VERTEX:
        indices = part.bone_indices.astype(np.float32)
        bridge.set_attribute(mesh, BONE_ATTRIBUTES["bone_indices"], "FLOAT_COLOR", "POINT", "color", indices)
        bridge.set_attribute(
            mesh, BONE_ATTRIBUTES["bone_weights"], "FLOAT_COLOR", "POINT", "color", part.bone_weights
        )
        if texture.auto is not None:
            rest = np.asarray(part.auto_rest, dtype=np.float32)
            names = auto_rest_attributes(DEFAULT_MESH_ATTRIBUTES["auto_rest"], rest.shape[1])
            padded = np.zeros((len(rest), 4 * len(names)), np.float32)
            padded[:, : rest.shape[1]] = rest
            for i, name in enumerate(names):
                chunk = np.ascontiguousarray(padded[:, 4 * i : 4 * i + 4])
                bridge.set_attribute(mesh, name, "FLOAT_COLOR", "POINT", "color", chunk)
        return
    items = np.arange(part.start, part.stop, dtype=np.int32)
    bridge.set_attribute(mesh, VERTEX_ATTRIBUTES["texel_index"], "INT", "POINT", "value", items)
    if corner_items is None:
        corner_items = part.start + bridge.corner_vertices(mesh)
    bridge.set_attribute(mesh, VERTEX_ATTRIBUTES["corner_index"], "INT", "CORNER", "value", corner_items)
    name = VERTEX_ATTRIBUTES["texel_uv"]
    uv = texture.layout.item_uv()[corner_items]
    if not bridge.set_uv_map(mesh, name, uv):
        raise HybridSkinError(f"'{part.obj.name}' already has 8 UV maps: remove one for '{name}'")


#: ``foreach_get`` field, width and numpy type of every attribute type, to keep and put back what a mesh
#: held under a name the bake writes.
_FIELDS = {
    "FLOAT": ("value", 1, np.float32), "INT": ("value", 1, np.int32), "BOOLEAN": ("value", 1, bool),
    "INT8": ("value", 1, np.int32), "FLOAT2": ("vector", 2, np.float32), "INT32_2D": ("value", 2, np.int32),
    "INT16_2D": ("value", 2, np.int32), "FLOAT_VECTOR": ("vector", 3, np.float32),
    "FLOAT_COLOR": ("color", 4, np.float32), "BYTE_COLOR": ("color", 4, np.float32),
    "QUATERNION": ("value", 4, np.float32), "FLOAT4X4": ("value", 16, np.float32),
}  # fmt: skip


class MeshDataBackup:
    """What the meshes held under the names a bake writes (absent, or type, domain and values) and which UV
    maps and attributes were active: :meth:`restore` puts it back (a bake that fails after writing them)."""

    def __init__(self, parts: list[MeshPart], names: list[str]):
        self.meshes = []
        for part in parts:
            mesh = part.obj.data
            kept = {name: self._keep(mesh.attributes.get(name)) for name in names}
            uv = mesh.uv_layers
            active = (uv.active_index, [layer.active_render for layer in uv], mesh.attributes.active_index)
            self.meshes.append((mesh, kept, active))

    @staticmethod
    def _keep(attr) -> tuple | None:
        if attr is None or attr.data_type not in _FIELDS:
            return None if attr is None else (attr.data_type, attr.domain, None)
        field, width, dtype = _FIELDS[attr.data_type]
        values = np.empty(len(attr.data) * width, dtype)
        attr.data.foreach_get(field, values)
        return attr.data_type, attr.domain, values

    def restore(self) -> None:
        for mesh, kept, (uv_active, renders, attr_active) in self.meshes:
            for name, old in kept.items():
                attr = mesh.attributes.get(name)
                if old is None:
                    if name in mesh.uv_layers:
                        mesh.uv_layers.remove(mesh.uv_layers[name])
                    elif attr is not None:
                        mesh.attributes.remove(attr)
                elif old[2] is not None:
                    data_type, domain, values = old
                    bridge.set_attribute(mesh, name, data_type, domain, _FIELDS[data_type][0], values)
            if len(mesh.uv_layers) == len(renders):
                mesh.uv_layers.active_index = uv_active
                for layer, render in zip(mesh.uv_layers, renders):
                    layer.active_render = render
            if attr_active < len(mesh.attributes):
                mesh.attributes.active_index = attr_active
