"""Matrix, vector and boolean helpers for building Geometry Nodes trees: each adds the nodes of one
small formula (Blender's ``normalize_m4``, ``mat4_to_size``, ``interpf``…) and returns its output socket.
Used by the B-bone groups (:mod:`.bbone_groups`, :mod:`.bbone_segments`)."""

from __future__ import annotations

from .builder import Builder, Socket

__all__ = [
    "axis_lengths",
    "both",
    "columns",
    "direction",
    "flag",
    "from_columns",
    "invert",
    "lerp",
    "matmul",
    "negate",
    "normalized",
    "point",
    "scaling",
]


def matmul(b: Builder, *matrices: Socket) -> Socket:
    out = matrices[0]
    for m in matrices[1:]:
        out = b.node("FunctionNodeMatrixMultiply", {0: out, 1: m}).outputs[0]
    return out


def invert(b: Builder, matrix: Socket) -> Socket:
    return b.node("FunctionNodeInvertMatrix", {"Matrix": matrix}).outputs["Matrix"]


def point(b: Builder, matrix: Socket, vector) -> Socket:
    return b.node("FunctionNodeTransformPoint", {"Vector": vector, "Transform": matrix}).outputs[0]


def columns(b: Builder, matrix: Socket) -> tuple[Socket, Socket, Socket, Socket]:
    """The X, Y, Z axes and the translation of ``matrix`` (its columns, first three rows). Transform
    nodes: a Separate Matrix costs Blender several times more in a field."""
    axes = [direction(b, matrix, axis) for axis in ((1.0, 0.0, 0.0), (0.0, 1.0, 0.0), (0.0, 0.0, 1.0))]
    return (*axes, point(b, matrix, (0.0, 0.0, 0.0)))


def direction(b: Builder, matrix: Socket, vector) -> Socket:
    return b.node("FunctionNodeTransformDirection", {"Direction": vector, "Transform": matrix}).outputs[0]


def scaling(b: Builder, scale) -> Socket:
    """A matrix that scales by the vector ``scale``."""
    return b.node("FunctionNodeCombineTransform", {"Scale": scale}).outputs[0]


def from_columns(b: Builder, x, y, z, t=None) -> Socket:
    """A 4 × 4 matrix with axes ``x``, ``y``, ``z`` and translation ``t`` (none: the origin); a column
    given as ``(vector, w)`` also sets its fourth row (a packed matrix, not a transform)."""
    node = b.node("FunctionNodeCombineMatrix")
    for j, column in enumerate((x, y, z, t)):
        if column is None:
            continue
        vector, w = column if isinstance(column, tuple) and len(column) == 2 else (column, None)
        for i, part in enumerate(b.separate(vector)):
            b.set_input(node, 4 * j + i, part)
        if w is not None:
            b.set_input(node, 4 * j + 3, w)
    return node.outputs[0]


def axis_lengths(b: Builder, matrix: Socket) -> Socket:
    """Blender's ``mat4_to_size``: the lengths of the X, Y, Z axes, as a vector."""
    x, y, z, _ = columns(b, matrix)
    return b.combine(*(b.vec("LENGTH", axis) for axis in (x, y, z)))


def normalized(b: Builder, matrix: Socket) -> Socket:
    """Blender's ``normalize_m4``: unit axes (each times 1 / its length), the translation kept."""
    return matmul(b, matrix, scaling(b, b.vec("DIVIDE", (1.0, 1.0, 1.0), axis_lengths(b, matrix))))


def flag(b: Builder, flags: Socket, bit: int) -> Socket:
    """Whether ``bit`` is set in the integer field ``flags``."""
    masked = b.node("FunctionNodeBitMath", {"A": flags, "B": bit}, operation="AND").outputs[0]
    return b.compare("NOT_EQUAL", masked, 0, data_type="INT")


def lerp(b: Builder, target, origin, fac) -> Socket:
    """Blender's ``interpf(target, origin, fac)``: ``fac · target + (1 - fac) · origin``."""
    return b.math(
        "ADD", b.math("MULTIPLY", fac, target), b.math("MULTIPLY", b.math("SUBTRACT", 1.0, fac), origin)
    )


def both(b: Builder, a: Socket, c: Socket, operation: str = "AND") -> Socket:
    return b.node("FunctionNodeBooleanMath", {0: a, 1: c}, operation=operation).outputs[0]


def negate(b: Builder, a: Socket) -> Socket:
    return b.node("FunctionNodeBooleanMath", {0: a}, operation="NOT").outputs[0]
