"""Bone bakes' glTF binary (``.glb``) as engines read it: the palette as a glTF skin, written from the file.

Blender's exporter writes a bone bake's meshes with its custom attributes ``_ANIMTEX_BONE_INDICES`` and
``_ANIMTEX_BONE_WEIGHTS`` (float ``VEC4``). :func:`add_palette_skin` turns them into what every glTF loader
knows, without touching anything else in the file:

* ``JOINTS_0`` (unsigned byte, or unsigned short above 256 bones) and ``WEIGHTS_0`` (float) on every
  primitive that carries them: the same 4 palette indices and weights;
* one joint node per palette bone (named as the sidecar's ``bones``), and one skin ``animtex_palette``
  whose ``joints`` are those nodes in palette order (joint ``i`` is bone ``i``) with identity inverse bind
  matrices. Joint 0 is the skeleton's root (``skin.skeleton``), a root of the scene holding the skinned
  nodes' world transform ``W``; every other joint is its child with an identity transform;
* ``skin`` on every node whose mesh got the joints; those nodes become roots of the scene with no
  transform of their own.

The Khronos glTF Validator asks for both: joints with a common root (``SKIN_NO_COMMON_ROOT`` is an
error) and skinned nodes without local transforms, which glTF says loaders ignore
(``NODE_SKINNED_MESH_LOCAL_TRANSFORMS``). At rest every joint's world matrix is ``W`` and every inverse
bind matrix the identity, so a loader that skins the mesh shows it where the file placed it before, and
the root is a joint, so a loader that makes the joints' ancestors bones too (Babylon.js) gets exactly the
palette. :func:`skinned_placement` gives ``W`` back from a file (old files: the skinned node's own world
matrix), and a player of baked matrices (Babylon.js's ``BakedVertexAnimationManager``) includes it.

Numpy and the standard library only; bytes in, bytes out (the Blender side writes the file).
"""

from __future__ import annotations

import json
import struct
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..dualquat import quaternion_from_matrix

__all__ = [
    "PALETTE_NODE",
    "PlacementError",
    "add_palette_skin",
    "node_world_matrices",
    "read_glb",
    "set_texcoords",
    "skinned_placement",
    "write_glb",
]

#: Name of the added skin.
PALETTE_NODE = "animtex_palette"
#: glTF attribute names the bake's export gives the palette indices and weights.
INDICES, WEIGHTS = "_ANIMTEX_BONE_INDICES", "_ANIMTEX_BONE_WEIGHTS"

_MAGIC, _JSON, _BIN = b"glTF", 0x4E4F534A, 0x004E4942
_TYPES = {5120: np.int8, 5121: np.uint8, 5122: np.int16, 5123: np.uint16, 5125: np.uint32, 5126: np.float32}
_WIDTH = {"SCALAR": 1, "VEC2": 2, "VEC3": 3, "VEC4": 4, "MAT4": 16}
_ARRAY_BUFFER = 34962


def read_glb(data: bytes) -> tuple[dict[str, Any], bytearray]:
    """``(json document, binary chunk)`` of a glTF binary; ``ValueError`` unless it is one."""
    if len(data) < 20 or data[:4] != _MAGIC:
        raise ValueError("not a glTF binary (.glb) file")
    _, version, length = struct.unpack_from("<4sII", data, 0)
    if version != 2 or length != len(data):
        raise ValueError(f"glTF binary version {version}, length {length} of {len(data)} bytes: not readable")
    doc, binary, at = None, bytearray(), 12
    while at < length:
        size, kind = struct.unpack_from("<II", data, at)
        body = data[at + 8 : at + 8 + size]
        if kind == _JSON:
            doc = json.loads(bytes(body).decode("utf-8"))
        elif kind == _BIN:
            binary = bytearray(body)
        at += 8 + size
    if doc is None:
        raise ValueError("the glTF binary has no JSON chunk")
    return doc, binary


def write_glb(doc: dict[str, Any], binary: bytes) -> bytes:
    """A glTF binary of ``doc`` and ``binary`` (chunks padded to 4 bytes: JSON with spaces, BIN with 0;
    the first buffer's ``byteLength`` set to the binary's)."""
    if doc.get("buffers"):
        doc["buffers"][0]["byteLength"] = len(binary)
    text = json.dumps(doc, separators=(",", ":")).encode("utf-8")
    text += b" " * (-len(text) % 4)
    chunks = struct.pack("<II", len(text), _JSON) + text
    if binary:
        blob = bytes(binary) + b"\0" * (-len(binary) % 4)
        chunks += struct.pack("<II", len(blob), _BIN) + blob
    return struct.pack("<4sII", _MAGIC, 2, 12 + len(chunks)) + chunks


def accessor(doc: dict[str, Any], binary: bytes, index: int) -> np.ndarray:
    """The values of accessor ``index`` as ``(count, width)`` (strides and offsets honoured)."""
    acc = doc["accessors"][index]
    view = doc["bufferViews"][acc["bufferView"]]
    dtype, width = np.dtype(_TYPES[acc["componentType"]]), _WIDTH[acc["type"]]
    start = view.get("byteOffset", 0) + acc.get("byteOffset", 0)
    stride = view.get("byteStride", dtype.itemsize * width)
    count = acc["count"]
    raw = np.frombuffer(bytes(binary), np.uint8, stride * (count - 1) + dtype.itemsize * width, start)
    rows = np.lib.stride_tricks.as_strided(raw, (count, dtype.itemsize * width), (stride, 1))
    return np.ascontiguousarray(rows).view(dtype).reshape(count, width)


def _append(doc: dict[str, Any], binary: bytearray, values: np.ndarray, kind: str, component: int,
            target: int | None) -> int:  # fmt: skip
    """Append ``values`` as a new buffer view + accessor; returns the accessor's index."""
    binary.extend(b"\0" * (-len(binary) % 4))  # every accessor starts 4-byte aligned
    data = np.ascontiguousarray(values, dtype=_TYPES[component]).tobytes()
    view = {"buffer": 0, "byteOffset": len(binary), "byteLength": len(data)}
    if target is not None:
        view["target"] = target
    binary.extend(data)
    doc.setdefault("bufferViews", []).append(view)
    count = len(values)
    doc.setdefault("accessors", []).append(
        {"bufferView": len(doc["bufferViews"]) - 1, "componentType": component, "count": count, "type": kind}
    )
    return len(doc["accessors"]) - 1


def node_world_matrices(doc: dict[str, Any]) -> dict[int, np.ndarray]:
    """Each node's world matrix ``(4, 4)`` float64 (its ``matrix`` or TRS composed with its parents')."""
    nodes = doc.get("nodes", [])
    parent = {c: i for i, n in enumerate(nodes) for c in n.get("children", ())}

    def local(node: dict[str, Any]) -> np.ndarray:
        if "matrix" in node:
            return np.array(node["matrix"], dtype=np.float64).reshape(4, 4).T  # column-major in the file
        x, y, z, w = node.get("rotation", (0.0, 0.0, 0.0, 1.0))
        r = np.array([
            [1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
            [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
            [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)],
        ])  # fmt: skip
        m = np.eye(4)
        m[:3, :3] = r * np.asarray(node.get("scale", (1.0, 1.0, 1.0)), dtype=np.float64)
        m[:3, 3] = node.get("translation", (0.0, 0.0, 0.0))
        return m

    out: dict[int, np.ndarray] = {}

    def world(i: int) -> np.ndarray:
        if i not in out:
            m = local(nodes[i])
            out[i] = world(parent[i]) @ m if i in parent else m
        return out[i]

    for i in range(len(nodes)):
        world(i)
    return out


class PlacementError(ValueError):
    """The skinned meshes are not in one place: one palette skin cannot hold them."""


def _trs(matrix: np.ndarray) -> dict[str, list[float]]:
    """A node's ``translation``/``rotation``/``scale`` for an affine ``matrix`` without shear (the
    identity's parts left out); ``ValueError`` for a mirroring or sheared one, which TRS cannot hold."""
    linear = np.asarray(matrix, dtype=np.float64)[:3, :3]
    scale = np.linalg.norm(linear, axis=0)
    if np.linalg.det(linear) <= 0 or scale.min() < 1e-12:
        raise ValueError("the skinned meshes' placement mirrors or flattens them")
    rotation = linear / scale
    if not np.allclose(rotation.T @ rotation, np.eye(3), rtol=0, atol=1e-5):
        raise ValueError("the skinned meshes' placement shears them")
    q = quaternion_from_matrix(rotation)[[1, 2, 3, 0]]  # glTF's (x, y, z, w)
    out: dict[str, list[float]] = {}
    translation = np.asarray(matrix, dtype=np.float64)[:3, 3]
    if np.any(translation != 0):
        out["translation"] = [float(v) for v in translation]
    if not np.allclose(q, (0, 0, 0, 1), rtol=0, atol=0):
        out["rotation"] = [float(v) for v in q]
    if not np.allclose(scale, 1, rtol=0, atol=0):
        out["scale"] = [float(v) for v in scale]
    return out


def _make_roots(doc: dict[str, Any], node_indices: Sequence[int]) -> None:
    """Nodes ``node_indices`` without a transform, each a root of the scene (out of its parent's
    ``children``). The export writes the baked meshes alone, so these are all its nodes: nothing else
    hangs below them."""
    nodes = doc["nodes"]
    moved = set(node_indices)
    for node in nodes:
        if "children" in node:
            node["children"] = [c for c in node["children"] if c not in moved]
            if not node["children"]:
                del node["children"]
    scene = doc.setdefault("scenes", [{"nodes": []}])[doc.get("scene", 0)]
    roots = scene.setdefault("nodes", [])
    for i in node_indices:
        for key in ("matrix", "translation", "rotation", "scale"):
            nodes[i].pop(key, None)
        if i not in roots:
            roots.append(i)


def skinned_placement(doc: dict[str, Any]) -> np.ndarray | None:
    """Where the palette skin places its meshes at rest: the world matrix of its skeleton root (files
    written since the skeleton has a root: joint 0 holds it) or, in older files (joints at the scene's
    roots, identities), the skinned node's own world matrix; ``None`` without the palette skin."""
    skins = [s for s in doc.get("skins", []) if s.get("name") == PALETTE_NODE]
    if not skins:
        return None
    worlds = node_world_matrices(doc)
    joint0 = worlds[skins[0]["joints"][0]]
    skinned = [i for i, n in enumerate(doc.get("nodes", [])) if n.get("skin") == doc["skins"].index(skins[0])]
    return joint0 @ worlds[skinned[0]] if skinned else joint0


def set_texcoords(data: bytes, channels: dict[str, tuple[int, np.ndarray]], vertex_attribute: str) -> bytes:
    """The glTF binary ``data`` with, for each node named in ``channels`` (``(first, values)``: ``values``
    ``(N, 2 k)`` float32 per source vertex), ``TEXCOORD_{first + j}`` of its mesh's primitives overwritten in
    place by ``(values[v, 2 j], values[v, 2 j + 1])`` for each exported vertex ``v`` (its source vertex is
    the primitive's ``vertex_attribute``). The values go in as they are: no v flip. ``ValueError`` when a
    channel is missing or not float ``VEC2``."""
    doc, binary = read_glb(data)
    nodes = doc.get("nodes", [])
    for node in nodes:
        if node.get("name") not in channels or "mesh" not in node:
            continue
        first, values = channels[node["name"]]
        values = np.asarray(values, dtype=np.float32)
        for primitive in doc["meshes"][node["mesh"]].get("primitives", []):
            attributes = primitive.get("attributes", {})
            vertex = np.rint(accessor(doc, binary, attributes[vertex_attribute])[:, 0]).astype(np.int64)
            for j in range(values.shape[1] // 2):
                name = f"TEXCOORD_{first + j}"
                if name not in attributes:
                    raise ValueError(f"mesh '{node['name']}' has no {name}")
                acc = doc["accessors"][attributes[name]]
                if (acc["componentType"], acc["type"]) != (5126, "VEC2"):
                    raise ValueError(f"{name} of mesh '{node['name']}' is not float VEC2")
                view = doc["bufferViews"][acc["bufferView"]]
                start = view.get("byteOffset", 0) + acc.get("byteOffset", 0)
                stride = view.get("byteStride", 8)
                pairs = np.ascontiguousarray(values[vertex, 2 * j : 2 * j + 2])
                if stride == 8:  # tightly packed, as Blender's exporter writes them
                    binary[start : start + 8 * len(pairs)] = pairs.tobytes()
                else:
                    for i, pair in enumerate(pairs):
                        binary[start + i * stride : start + i * stride + 8] = pair.tobytes()
                if "min" in acc:
                    acc["min"], acc["max"] = pairs.min(0).tolist(), pairs.max(0).tolist()
    return write_glb(doc, binary)


def add_palette_skin(data: bytes, bone_names: Sequence[str]) -> tuple[bytes, list[int]]:
    """The glTF binary ``data`` with the palette as a skin (see the module), and the indices of the
    nodes skinned. ``ValueError`` when no primitive carries the palette attributes, or one carries an
    index outside ``bone_names``."""
    doc, binary = read_glb(data)
    if doc.get("skins"):
        raise ValueError("the file already has a skin")
    count = len(bone_names)
    if count == 0:
        raise ValueError("the palette has no bones")
    component = 5121 if count <= 256 else 5123
    skinned_meshes = set()
    for m, mesh in enumerate(doc.get("meshes", [])):
        for primitive in mesh.get("primitives", []):
            attributes = primitive.get("attributes", {})
            if INDICES not in attributes or WEIGHTS not in attributes:
                continue
            indices = accessor(doc, binary, attributes[INDICES])
            weights = accessor(doc, binary, attributes[WEIGHTS]).astype(np.float32)
            joints = np.rint(indices).astype(np.int64)
            if len(joints) and (joints.min() < 0 or joints.max() >= count):
                raise ValueError(f"mesh '{mesh.get('name', m)}' names bone {joints.max()} of {count}")
            attributes["JOINTS_0"] = _append(doc, binary, joints, "VEC4", component, _ARRAY_BUFFER)
            attributes["WEIGHTS_0"] = _append(doc, binary, weights, "VEC4", 5126, _ARRAY_BUFFER)
            skinned_meshes.add(m)
    if not skinned_meshes:
        raise ValueError(f"no mesh carries {INDICES} and {WEIGHTS}")
    nodes = doc.setdefault("nodes", [])
    skinned = [i for i, n in enumerate(nodes) if n.get("mesh") in skinned_meshes]
    worlds = node_world_matrices(doc)
    placement = worlds[skinned[0]]
    if any(not np.allclose(worlds[i], placement, rtol=0, atol=1e-6) for i in skinned):
        raise PlacementError("the skinned meshes are placed differently")
    _make_roots(doc, skinned)
    first = len(nodes)
    joints = list(range(first, first + count))
    nodes.append({"name": str(bone_names[0]), **_trs(placement)})
    nodes.extend({"name": str(name)} for name in bone_names[1:])
    if count > 1:
        nodes[first]["children"] = joints[1:]
    scene = doc.setdefault("scenes", [{"nodes": []}])[doc.get("scene", 0)]
    scene.setdefault("nodes", []).append(first)
    identity = np.tile(np.eye(4, dtype=np.float32).ravel(), (count, 1))
    inverse_bind = _append(doc, binary, identity, "MAT4", 5126, None)
    doc.setdefault("skins", []).append(
        {"name": PALETTE_NODE, "inverseBindMatrices": inverse_bind, "skeleton": first, "joints": joints}
    )
    skin = len(doc["skins"]) - 1
    for i in skinned:
        nodes[i]["skin"] = skin
    if not doc.get("buffers"):
        doc["buffers"] = [{"byteLength": 0}]
    return write_glb(doc, binary), skinned
