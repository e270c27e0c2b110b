"""A small glTF 2.0 reader written from the spec (GLB container, accessors), independent of the add-on."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import numpy as np

__all__ = ["read_gltf"]

_TYPES = {5120: np.int8, 5121: np.uint8, 5122: np.int16, 5123: np.uint16, 5125: np.uint32, 5126: np.float32}
_WIDTH = {"SCALAR": 1, "VEC2": 2, "VEC3": 3, "VEC4": 4}


def _load(path: Path) -> tuple[dict, list[bytes]]:
    data = path.read_bytes()
    if data[:4] != b"glTF":
        doc = json.loads(data)
        return doc, [(path.parent / b["uri"]).read_bytes() for b in doc["buffers"]]
    magic, version, length = struct.unpack_from("<4sII", data, 0)
    assert version == 2 and length == len(data)
    chunks, at = {}, 12
    while at < length:
        size, kind = struct.unpack_from("<I4s", data, at)
        chunks[kind] = data[at + 8 : at + 8 + size]
        at += 8 + size
    return json.loads(chunks[b"JSON"]), [chunks.get(b"BIN\x00", b"")]


def read_gltf(path: Path) -> dict[str, dict[str, np.ndarray]]:
    """Per mesh node name: its single primitive's attributes (by glTF name) and ``"indices"``, as arrays."""
    doc, buffers = _load(path)

    def accessor(i: int) -> np.ndarray:
        acc = doc["accessors"][i]
        view = doc["bufferViews"][acc["bufferView"]]
        dtype, width = np.dtype(_TYPES[acc["componentType"]]), _WIDTH[acc["type"]]
        start = view.get("byteOffset", 0) + acc.get("byteOffset", 0)
        stride = view.get("byteStride", dtype.itemsize * width)
        raw = np.frombuffer(
            buffers[view["buffer"]], np.uint8, stride * (acc["count"] - 1) + dtype.itemsize * width, start
        )
        rows = np.lib.stride_tricks.as_strided(raw, (acc["count"], dtype.itemsize * width), (stride, 1))
        values = np.ascontiguousarray(rows).view(dtype)
        return values.reshape(acc["count"], width) if width > 1 else values.reshape(-1)

    out = {}
    for node in doc["nodes"]:
        if "mesh" not in node:
            continue
        (primitive,) = doc["meshes"][node["mesh"]]["primitives"]
        arrays = {name: accessor(i) for name, i in primitive["attributes"].items()}
        arrays["indices"] = accessor(primitive["indices"])
        out[node["name"]] = arrays
    return out
