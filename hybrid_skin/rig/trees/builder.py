"""A small builder for the Geometry Nodes trees Hybrid Skin generates: a tree is code, built from Python in
one pass, never patched.

:class:`Builder` wraps one ``GeometryNodeTree`` while it is built: the group's interface (:meth:`input`,
:meth:`output`), nodes with their settings and inputs in one call (:meth:`node`, and the shorthands
:meth:`math`, :meth:`vec`, :meth:`compare`, :meth:`switch` ...), nested groups (:meth:`group`) and labelled
frames (:meth:`frame`), then :meth:`finish` lays the nodes out left to right by dependency, so that a reader
of the tree in Blender's node editor sees the data flow. An input of a node is given either as a constant or
as an output socket (:class:`bpy.types.NodeSocket`), which is linked.

Socket lookup is by identifier or name among the *enabled* sockets (Geometry Nodes nodes change their
sockets with their data type), so the same description builds on Blender 4.5, 5.0 and 5.2.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import bpy
import numpy as np

__all__ = [
    "Builder",
    "Socket",
    "TREE_TAG",
    "VERSION_TAG",
    "find_tree",
    "new_tree",
    "output",
    "remove_unused_trees",
    "tree_tag",
]

Socket = bpy.types.NodeSocket
#: Custom properties on every generated tree: its kind and the version of its description, so that a tree
#: from another build is recognised (and rebuilt, or left alone when it is newer).
TREE_TAG = "hybrid_skin_tree"
VERSION_TAG = "hybrid_skin_tree_version"
#: Horizontal spacing of the layout's columns, vertical spacing of its rows (node editor units).
_COLUMN, _ROW = 220.0, 170.0

#: Interface socket types by the short names the descriptions use.
_SOCKET_TYPES = {
    "GEOMETRY": "NodeSocketGeometry",
    "FLOAT": "NodeSocketFloat",
    "INT": "NodeSocketInt",
    "BOOLEAN": "NodeSocketBool",
    "VECTOR": "NodeSocketVector",
    "MATRIX": "NodeSocketMatrix",
    "ROTATION": "NodeSocketRotation",
    "STRING": "NodeSocketString",
    "OBJECT": "NodeSocketObject",
}


def new_tree(name: str, kind: str, version: int) -> bpy.types.GeometryNodeTree:
    """A new empty Geometry Nodes tree tagged ``kind`` and ``version`` (Blender gives it a free name)."""
    tree = bpy.data.node_groups.new(name, "GeometryNodeTree")
    tree[TREE_TAG] = kind
    tree[VERSION_TAG] = version
    return tree


def tree_tag(tree: bpy.types.NodeTree) -> tuple[str, int] | None:
    """``(kind, version)`` of a tree Hybrid Skin generated, or None for any other tree."""
    kind, version = tree.get(TREE_TAG), tree.get(VERSION_TAG)
    if not isinstance(kind, str) or not isinstance(version, int):
        return None
    return kind, version


class Builder:
    """Builds the tree ``tree`` (empty, from :func:`new_tree`); see the module docstring."""

    def __init__(self, tree: bpy.types.GeometryNodeTree) -> None:
        self.tree = tree
        self._frame: bpy.types.Node | None = None
        self._group_in = tree.nodes.new("NodeGroupInput")
        self._group_out = tree.nodes.new("NodeGroupOutput")

    # ------------------------------------------------------------------------------- interface
    def input(
        self,
        name: str,
        kind: str,
        *,
        default: Any = None,
        minimum: float | None = None,
        maximum: float | None = None,
        description: str = "",
        single_value: bool = False,
        subtype: str | None = None,
    ) -> Socket:
        """Add a group input and return its socket on the Group Input node."""
        item = self.tree.interface.new_socket(name, in_out="INPUT", socket_type=_SOCKET_TYPES[kind])
        item.description = description
        if default is not None:
            item.default_value = default
        if minimum is not None:
            item.min_value = minimum
        if maximum is not None:
            item.max_value = maximum
        if subtype is not None:
            item.subtype = subtype
        if single_value and hasattr(item, "structure_type"):  # 5.0+: no field, the modifier shows a value
            item.structure_type = "SINGLE"
        elif single_value and hasattr(item, "force_non_field"):
            item.force_non_field = True
        return self._group_in.outputs[item.identifier]

    def output(self, name: str, kind: str, socket: Socket, description: str = "") -> None:
        """Add a group output fed by ``socket``."""
        item = self.tree.interface.new_socket(name, in_out="OUTPUT", socket_type=_SOCKET_TYPES[kind])
        item.description = description
        self.tree.links.new(socket, self._group_out.inputs[item.identifier])

    # ----------------------------------------------------------------------------------- nodes
    def node(
        self,
        idname: str,
        inputs: dict[str | int, Any] | None = None,
        *,
        label: str = "",
        **settings: Any,
    ) -> bpy.types.Node:
        """A node of type ``idname`` with ``settings`` (its properties, set first: they decide its sockets)
        and ``inputs`` (by identifier, name or index among enabled sockets; a socket is linked, anything
        else is the default value)."""
        node = self.tree.nodes.new(idname)
        for key, value in settings.items():
            setattr(node, key, value)
        if label:
            node.label = label
        if self._frame is not None:
            node.parent = self._frame
        for key, value in (inputs or {}).items():
            self.set_input(node, key, value)
        return node

    def set_input(self, node: bpy.types.Node, key: str | int, value: Any) -> None:
        self.set_socket(_socket(node.inputs, key), value)

    def set_socket(self, target: bpy.types.NodeSocket, value: Any) -> None:
        """Link ``value`` (a socket) into ``target``, or set it as its value."""
        if isinstance(value, bpy.types.NodeSocket):
            self.tree.links.new(value, target)
        elif value is not None:
            if isinstance(value, int | float) and not isinstance(value, bool) and target.type == "VECTOR":
                value = (value, value, value)  # a number where a vector goes: Blender converts it so too
            target.default_value = value

    def group(
        self, tree: bpy.types.NodeTree, inputs: dict[str, Any] | None = None, label: str = ""
    ) -> bpy.types.Node:
        """A group node of ``tree``; ``inputs`` by interface name."""
        node = self.node("GeometryNodeGroup", label=label)
        node.node_tree = tree
        for key, value in (inputs or {}).items():
            self.set_input(node, key, value)
        return node

    @contextmanager
    def frame(self, label: str) -> Iterator[bpy.types.Node]:
        """Nodes made inside the block go into a labelled frame."""
        frame = self.tree.nodes.new("NodeFrame")
        frame.label = label
        frame.label_size = 16
        outer, self._frame = self._frame, frame
        if outer is not None:
            frame.parent = outer
        try:
            yield frame
        finally:
            self._frame = outer

    # ------------------------------------------------------------------------------ shorthands
    def math(self, operation: str, a: Any, b: Any = None, c: Any = None, label: str = "") -> Socket:
        """A float Math node; returns its output."""
        inputs = {0: a}
        if b is not None:
            inputs[1] = b
        if c is not None:
            inputs[2] = c
        return self.node("ShaderNodeMath", inputs, operation=operation, label=label).outputs[0]

    def vec(self, operation: str, a: Any, b: Any = None, c: Any = None, label: str = "") -> Socket:
        """A Vector Math node; returns its vector output (its float output for DOT_PRODUCT and LENGTH)."""
        inputs = {0: a}
        if b is not None:
            inputs[1] = b
        if c is not None:
            inputs[2] = c
        node = self.node("ShaderNodeVectorMath", inputs, operation=operation, label=label)
        return (
            node.outputs["Value"] if operation in ("DOT_PRODUCT", "LENGTH", "DISTANCE") else node.outputs[0]
        )

    def compare(self, operation: str, a: Any, b: Any, data_type: str = "FLOAT") -> Socket:
        node = self.node("FunctionNodeCompare", {"A": a, "B": b}, data_type=data_type, operation=operation)
        return node.outputs["Result"]

    def switch(self, kind: str, condition: Any, if_false: Any, if_true: Any, label: str = "") -> Socket:
        """A Switch node of ``kind`` (``FLOAT``, ``VECTOR``, ``INT``, ``GEOMETRY`` ...)."""
        node = self.node(
            "GeometryNodeSwitch",
            {"Switch": condition, "False": if_false, "True": if_true},
            input_type=kind,
            label=label,
        )
        return output(node)

    def index_switch(self, kind: str, index: Any, items: list[Any], label: str = "") -> Socket:
        """An Index Switch of ``kind`` over ``items`` (constants or sockets); returns its output."""
        node = self.node("GeometryNodeIndexSwitch", {"Index": index}, data_type=kind, label=label)
        for _ in range(len(items) - len(node.index_switch_items)):
            node.index_switch_items.new()
        sockets = {s.identifier: s for s in node.inputs}  # one read: the items are many
        for i, value in enumerate(items):
            self.set_socket(sockets[f"Item_{i}"], value)
        return output(node)

    def named(self, name: str, kind: str) -> Socket:
        """A Named Attribute field of ``kind`` (``FLOAT``, ``INT``, ``FLOAT_VECTOR``, ``FLOAT4X4`` ...)."""
        node = self.node("GeometryNodeInputNamedAttribute", {"Name": name}, data_type=kind)
        return node.outputs["Attribute"]

    def store(self, geometry: Socket, name: Any, value: Any, kind: str, selection: Any = None) -> Socket:
        """Store ``value`` as the point attribute ``name`` (of ``kind``); returns the geometry."""
        inputs = {"Geometry": geometry, "Name": name, "Value": value}
        if selection is not None:
            inputs["Selection"] = selection
        node = self.node("GeometryNodeStoreNamedAttribute", inputs, data_type=kind, domain="POINT")
        return node.outputs[0]

    def sample(self, geometry: Socket, value: Socket, index: Any, kind: str) -> Socket:
        """Sample Index: ``value`` (a field on ``geometry``'s points) at ``index``."""
        node = self.node(
            "GeometryNodeSampleIndex",
            {"Geometry": geometry, "Value": value, "Index": index},
            data_type=kind,
            domain="POINT",
        )
        return output(node)

    def separate(self, vector: Any) -> tuple[Socket, Socket, Socket]:
        node = self.node("ShaderNodeSeparateXYZ", {0: vector})
        return node.outputs[0], node.outputs[1], node.outputs[2]

    def combine(self, x: Any = 0.0, y: Any = 0.0, z: Any = 0.0) -> Socket:
        return self.node("ShaderNodeCombineXYZ", {0: x, 1: y, 2: z}).outputs[0]

    # ---------------------------------------------------------------------------------- layout
    def finish(self) -> bpy.types.GeometryNodeTree:
        """Lay the nodes out in columns by their distance from the group input; returns the tree."""
        nodes = [n for n in self.tree.nodes if n.bl_idname != "NodeFrame"]
        sources: dict[str, set[str]] = {n.name: set() for n in nodes}
        for link in self.tree.links:
            sources[link.to_node.name].add(link.from_node.name)
        depth: dict[str, int] = {}
        pending = dict(sources)
        while pending:  # a tree is acyclic: each pass places the nodes whose sources are all placed
            ready = [name for name, ins in pending.items() if ins.issubset(depth)]
            if not ready:
                raise RuntimeError(f"the generated tree '{self.tree.name}' has a cycle")
            for name in ready:
                depth[name] = 1 + max((depth[s] for s in pending.pop(name)), default=-1)
        rows: dict[int, int] = {}
        where: dict[str, tuple[float, float]] = {}
        for n in nodes:
            col = depth[n.name]
            row = rows.get(col, 0)
            rows[col] = row + 1
            where[n.name] = (col * _COLUMN, -row * _ROW)
        where[self._group_out.name] = ((max(depth.values(), default=0) + 1) * _COLUMN, 0.0)
        # One bulk write: setting each node's location updates the whole tree each time (quadratic).
        locations = np.empty(2 * len(self.tree.nodes), dtype=np.float32)
        self.tree.nodes.foreach_get("location", locations)
        for i, n in enumerate(self.tree.nodes):
            if n.name in where:
                locations[2 * i : 2 * i + 2] = where[n.name]
        self.tree.nodes.foreach_set("location", locations)
        return self.tree


def output(node: bpy.types.Node, key: str | int = 0) -> bpy.types.NodeSocket:
    """An enabled output of ``node`` by index, identifier or name (nodes with a data type keep one output
    per type, of which one is enabled)."""
    return _socket(node.outputs, key)


def _socket(sockets, key: str | int) -> bpy.types.NodeSocket:
    """An enabled socket by index, identifier or name (see the module docstring)."""
    enabled = [s for s in sockets if s.enabled]
    if isinstance(key, int):
        return enabled[key]
    for s in enabled:
        if s.identifier == key:
            return s
    for s in enabled:
        if s.name == key:
            return s
    raise KeyError(f"no enabled socket {key!r} among {[s.identifier for s in enabled]}")


def find_tree(kind: str, version: int) -> bpy.types.GeometryNodeTree | None:
    """The file's local tree tagged ``[kind, version]``, if any."""
    for tree in bpy.data.node_groups:
        if tree.library is None and tree_tag(tree) == (kind, version):
            return tree
    return None


def remove_unused_trees(names) -> None:
    """Remove the named trees of Hybrid Skin's that nothing uses any more, then every shared group of
    Hybrid Skin's left unused by them (never a tree of the user's: only tagged ones)."""
    for name in names:
        tree = bpy.data.node_groups.get(name)
        if tree is not None and tree.users == 0 and tree.library is None and tree_tag(tree):
            bpy.data.node_groups.remove(tree)
    while True:
        unused = [t for t in bpy.data.node_groups if t.users == 0 and t.library is None and tree_tag(t)]
        if not unused:
            return
        for tree in unused:
            bpy.data.node_groups.remove(tree)
