"""One export: the baked meshes as glTF binary (``.glb``) beside the texture and its sidecar.

Blender's glTF exporter writes a mesh's custom attributes only when their names start with ``_`` (and
upper-cases them in the file); the bake's attributes are named as the sidecar says (``animtex_index``,
...). For the export each is copied to ``_<name>`` on the mesh, the exporter runs on the baked objects
alone (their own coordinates and object transforms; no skin, modifiers, shape keys or animation; glTF's
+Y up), and the copies are removed again, whatever happens. In the file:

==========================  ===========================================================================
glTF attribute              what it is
==========================  ===========================================================================
``POSITION``, ``NORMAL``    the mesh's own coordinates and corner normals (the exporter splits vertices)
``TANGENT``                 with the bake's Tangents option: the active UV map's tangents and signs
``TEXCOORD_n``              the UV map ``animtex_uv`` (VERTEX; ``n``: its place among the UV maps written)
``_ANIMTEX_INDEX``          VERTEX: the vertex's texture item (float)
``_ANIMTEX_CORNER_INDEX``   VERTEX: the item of the corner group of this exported vertex (hard edges)
``_ANIMTEX_BONE_INDICES``   bone kinds: 4 palette indices (in the sidecar's ``bones`` order)
``_ANIMTEX_BONE_WEIGHTS``   bone kinds: their 4 normalised weights
``_ANIMTEX_VERTEX``         the vertex's index in its Blender mesh (pairs the exported, split vertices
                            with Blender's; engines may drop it)
``JOINTS_0``, ``WEIGHTS_0`` bone kinds: the same indices and weights as a glTF skin of the palette
                            (:mod:`..core.animtex.gltf`: one joint node per bone, identity at rest)
==========================  ===========================================================================

No ``COLOR_n``: vertex colours are written only where a material uses them (the bone kinds' attributes are
colour attributes in Blender, and a loader seeing ``COLOR_0`` tints the mesh with it). With a bone kind,
:func:`write_babylon` writes the sampled matrices for Babylon.js's own player
(:mod:`..core.animtex.babylon`) beside it.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Sequence
from contextlib import contextmanager

import bpy
import numpy as np

from .. import bridge
from ..core.animtex import babylon, gltf
from ..core.animtex.layout import Clip
from ..errors import HybridSkinError
from .scene import MeshPart

__all__ = [
    "VERTEX_ATTRIBUTE",
    "check_exporter",
    "check_names",
    "check_placement",
    "write_babylon",
    "write_gltf",
]

#: The per-vertex Blender index the export adds (``_ANIMTEX_VERTEX`` in the file).
VERTEX_ATTRIBUTE = "_animtex_vertex"
#: ``foreach_get`` field of each attribute data type the bake writes.
_FIELDS = {"INT": ("value", 1, np.int32), "FLOAT_COLOR": ("color", 4, np.float32)}


@contextmanager
def _only_selected(objects: Sequence[bpy.types.Object]):
    """Select exactly ``objects`` (the exporter's ``use_selection``); the selection and active object
    are restored after."""
    layer = bpy.context.view_layer
    before = [o for o in layer.objects if o.select_get()]
    active = layer.objects.active
    try:
        for o in before:
            o.select_set(False)
        for o in objects:
            o.select_set(True)
        yield
    finally:
        for o in objects:
            o.select_set(False)
        for o in before:
            o.select_set(True)
        layer.objects.active = active


def _add_copies(mesh: bpy.types.Mesh, names: Sequence[str]) -> list[str]:
    """``_<name>`` copies of the bake's attributes ``names`` on ``mesh`` (UV maps are exported as they
    are) and the vertex index; returns the names added."""
    added = []
    for name in names:
        attr = mesh.attributes.get(name)
        if attr is None or name in mesh.uv_layers or attr.data_type not in _FIELDS:
            continue
        field, width, dtype = _FIELDS[attr.data_type]
        data_type, domain, count = attr.data_type, attr.domain, len(attr.data)
        values = np.empty(count * width, dtype)
        attr.data.foreach_get(field, values)
        # by name from here: adding an attribute may move the others, invalidating references to them
        bridge.set_attribute(mesh, "_" + name, data_type, domain, field, values)
        added.append("_" + name)
    index = np.arange(len(mesh.vertices), dtype=np.int32)
    bridge.set_attribute(mesh, VERTEX_ATTRIBUTE, "INT", "POINT", "value", index)
    added.append(VERTEX_ATTRIBUTE)
    return added


def check_names(parts: Sequence[MeshPart], attribute_names: Sequence[str]) -> None:
    """Raise unless the export's own attribute names are free on every baked mesh."""
    ours = [f"_{a}" for a in attribute_names] + [VERTEX_ATTRIBUTE]
    clashing = [(p.obj.data.name, n) for p in parts for n in ours if n in p.obj.data.attributes]
    if clashing:
        mesh, name = clashing[0]
        raise HybridSkinError(
            f"Mesh '{mesh}' already has an attribute '{name}', a name the glTF export uses: "
            "rename or remove it to export glTF"
        )


def _temporary(path: str) -> str:
    folder, name = os.path.split(path)
    return os.path.join(folder, f".{name}.{uuid.uuid4().hex[:8]}.partial{os.path.splitext(name)[1]}")


def check_exporter() -> None:
    """Raise unless Blender's glTF exporter is there (the glTF 2.0 add-on can be disabled)."""
    if not hasattr(bpy.types, "EXPORT_SCENE_OT_gltf"):
        raise HybridSkinError(
            "Blender's glTF exporter is not enabled (Preferences ▸ Add-ons ▸ Import-Export: glTF 2.0 "
            "format): enable it, or untick glTF"
        )


def check_placement(parts: Sequence[MeshPart]) -> None:
    """Raise, before anything is sampled, unless the meshes of a bone texture's export sit in one place
    (one glTF skin; :func:`_add_skin` finds the same after the export)."""
    first = np.array(parts[0].obj.matrix_world)
    for part in parts[1:]:
        if not np.allclose(np.array(part.obj.matrix_world), first, rtol=0, atol=1e-6):
            raise HybridSkinError(
                f"'{part.obj.name}' and '{parts[0].obj.name}' are placed differently: one bone texture's "
                "glTF export needs its meshes in one place (apply their transforms, Object ▸ Apply ▸ All "
                "Transforms, or bake them separately)"
            )


def _add_skin(path: str, bone_names: Sequence[str]) -> np.ndarray:
    """Give the exported file at ``path`` the palette as a glTF skin; where it places the meshes (glTF
    space: the skinned nodes' world matrix as the exporter wrote them)."""
    with open(path, "rb") as fh:
        data = fh.read()
    try:
        data, _ = gltf.add_palette_skin(data, bone_names)
    except gltf.PlacementError as err:
        raise HybridSkinError(
            "The baked meshes are placed differently: one bone texture needs them in one place (apply "
            "their transforms, Object ▸ Apply ▸ All Transforms, or bake them separately)"
        ) from err
    except ValueError as err:
        raise HybridSkinError(f"Cannot add the bone palette to the glTF export: {err}") from err
    with open(path, "wb") as fh:
        fh.write(data)
    return gltf.skinned_placement(gltf.read_glb(data)[0])


def write_babylon(
    path: str,
    clip_matrices: Sequence[np.ndarray],
    clips: Sequence[Clip],
    bone_names: Sequence[str],
    node_world: np.ndarray,
) -> None:
    """Write the sampled matrices as Babylon.js's baked vertex animation JSON (``<name>.babylon.json``),
    atomically."""
    try:
        text = babylon.dumps(babylon.babylon_vat(clip_matrices, clips, bone_names, node_world))
    except ValueError as err:
        raise HybridSkinError(f"Cannot write the Babylon.js animation '{path}': {err}") from err
    temp = _temporary(path)
    try:
        with open(temp, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.replace(temp, path)
    except OSError as err:
        raise HybridSkinError(f"Cannot write '{path}': {err.strerror}") from err
    finally:
        if os.path.exists(temp):
            os.remove(temp)
    return node_world


def write_gltf(
    parts: Sequence[MeshPart],
    path: str,
    attribute_names: Sequence[str],
    bone_names: Sequence[str] | None = None,
    tangents: bool = False,
) -> np.ndarray | None:
    """Write the baked meshes to ``path`` (``.glb``), atomically, with the bake's mesh attributes
    ``attribute_names`` under exporter-kept names (see the module's table); with ``bone_names`` (bone
    kinds) also the palette as a glTF skin, and return the skinned nodes' world matrix (glTF space);
    ``tangents``: also each vertex's ``TANGENT`` (the active UV map's, as the bake's)."""
    check_names(parts, attribute_names)
    meshes = [p.obj.data for p in parts]
    temp = _temporary(path)
    node_world = None
    added: list[tuple[bpy.types.Mesh, list[str]]] = []
    try:
        for me in meshes:
            added.append((me, _add_copies(me, attribute_names)))
        with _only_selected([p.obj for p in parts]):
            result = bpy.ops.export_scene.gltf(
                filepath=temp,
                export_format="GLB",
                use_selection=True,
                export_yup=True,
                export_apply=False,
                export_skins=False,
                export_morph=False,
                export_animations=False,
                export_attributes=True,
                export_tangents=tangents,
                # Vertex colours only where a material uses them: by default the exporter also writes every
                # colour attribute as COLOR_n (the bone kinds' indices and weights are FLOAT_COLOR), and
                # loaders that see COLOR_0 tint the mesh with it (three's GLTFLoader turns vertexColors on).
                export_vertex_color="MATERIAL",
                export_all_vertex_colors=False,
                export_active_vertex_color_when_no_material=False,
            )
        if result != {"FINISHED"} or not os.path.isfile(temp):
            raise HybridSkinError(f"Blender's glTF exporter did not write '{path}' ({result})")
        if bone_names:
            node_world = _add_skin(temp, bone_names)
        os.replace(temp, path)
    except (OSError, RuntimeError) as err:
        raise HybridSkinError(f"Cannot write glTF '{path}': {err}") from err
    finally:
        for me, names in added:
            for name in names:
                attr = me.attributes.get(name)
                if attr is not None:
                    me.attributes.remove(attr)
        if os.path.exists(temp):
            os.remove(temp)
    return node_world

