"""Shared node groups of the B-bone part of the Auto tree: Blender's own B-bone math, written once as
Geometry Nodes groups (one datablock each per file, tagged and versioned like every generated tree).

Each group names the function of Blender's ``armature.cc`` it follows; tests hold the segment matrices they
make to ``PoseBone.bbone_segment_matrix``. Every group works on fields, so one evaluation serves every
B-bone of a rig at once (:mod:`.bbone_segments` lays the B-bones out as points).

* ``HybridSkin · Bone Vector Roll``: ``vec_roll_to_mat3`` (a bone's rotation from its Y axis and roll,
  with Blender's special cases near -Y).
* ``HybridSkin · Bone Roll Of Matrix``: ``mat3_vec_to_roll`` (the roll that turns a vector's zero-roll
  frame into a matrix's, as the twist about Y of their difference).
* ``HybridSkin · B-Bone Handles``: ``BKE_pchan_bbone_spline_params_get`` followed by
  ``BKE_pchan_bbone_handles_compute`` for a rest or a pose spline: the Bézier handles, rolls and scales.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, fields

import bpy

from .builder import Builder, Socket, find_tree, new_tree
from .node_math import (
    axis_lengths,
    both,
    columns,
    flag,
    from_columns,
    invert,
    matmul,
    negate,
    normalized,
    point,
)

__all__ = [
    "ALL_FEATURES",
    "HANDLES_GROUP",
    "KIND_ABSOLUTE",
    "KIND_NONE",
    "KIND_RELATIVE",
    "KIND_TANGENT",
    "ROLL_GROUP",
    "VECTOR_ROLL_GROUP",
    "Features",
    "Flag",
    "shared_group",
]

VECTOR_ROLL_GROUP = "HybridSkin · Bone Vector Roll"
ROLL_GROUP = "HybridSkin · Bone Roll Of Matrix"
HANDLES_GROUP = "HybridSkin · B-Bone Handles"

#: How a B-bone end finds its handle (Blender's handle types; Automatic is Absolute on the connected
#: parent or child).
KIND_NONE, KIND_ABSOLUTE, KIND_RELATIVE, KIND_TANGENT = 0, 1, 2, 3


class Flag:
    """Bits of a B-bone's flags input (its settings that are not numbers)."""

    SCALE_EASING = 1  # Bone.use_scale_easing
    END_ROLL = 2  # Bone.use_endroll_as_inroll (adds the previous handle's end roll)
    PREV_BBONE = 4  # the start handle is a B-bone with segments (Absolute): Blender averages directions
    NEXT_BBONE = 8
    PREV_SCALE = (16, 32, 64)  # Bone.bbone_handle_use_scale_start x, y, z
    PREV_EASE = 128  # Bone.bbone_handle_use_ease_start
    NEXT_SCALE = (256, 512, 1024)
    NEXT_EASE = 2048


@dataclass(frozen=True)
class Features:
    """What the rig's B-bones use: the handles group leaves out the rest (the numbers of what it keeps are
    the same), so a rig of Automatic handles, as Rigify's, evaluates a third fewer nodes each frame. Each
    set has its own group, named with it."""

    start_handle: bool = True
    end_handle: bool = True
    start_roll: bool = True  # a start handle whose roll is read (not an Absolute handle that is a B-bone)
    relative: bool = True
    tangent: bool = True
    handle_scale: bool = True  # scale or ease from a handle
    scale_easing: bool = True
    end_roll: bool = True  # Bone.use_endroll_as_inroll

    @property
    def suffix(self) -> str:
        used = [f.name.replace("_", " ") for f in fields(self) if getattr(self, f.name)]
        return "" if len(used) == len(fields(self)) else f" ({', '.join(used) or 'no handles'})"


ALL_FEATURES = Features()


def shared_group(kind: str, version: int, features: Features = ALL_FEATURES) -> bpy.types.GeometryNodeTree:
    """The file's group ``kind`` (for ``features``, where it depends on them) at ``version``, built if
    missing."""
    name = kind + (features.suffix if kind in _BY_FEATURES else "")
    found = find_tree(name, version)
    if found is not None:
        return found
    builder = Builder(new_tree(name, name, version))
    if kind in _BY_FEATURES:
        _BUILDERS[kind](builder, version, features)
    else:
        _BUILDERS[kind](builder, version)
    return builder.finish()


# ------------------------------------------------------------------------- vector and roll
def _vector_roll(b: Builder, _version: int) -> None:
    vector = b.input("Vector", "VECTOR", description="The bone's Y axis (any length)")
    roll = b.input("Roll", "FLOAT", description="Roll about it, radians")
    nor = b.vec("NORMALIZE", vector)
    x, y, z = b.separate(nor)
    with b.frame("The shortest rotation taking Y to the vector (vec_roll_to_mat3_normalized)"):
        # Its quaternion is (1 + y, z, 0, -x), normalised; near -Y Blender takes 1 + y from x and z (a
        # series), and at -Y itself a half turn about Z.
        theta = b.math("ADD", 1.0, y)
        theta_alt = b.math("ADD", b.math("MULTIPLY", x, x), b.math("MULTIPLY", z, z))
        safe = both(
            b,
            b.compare("GREATER_THAN", theta, 6.1e-3),
            b.compare("GREATER_THAN", theta_alt, 2.5e-4 * 2.5e-4),
            "OR",
        )
        series = b.math(
            "MULTIPLY_ADD",
            theta_alt,
            0.5,
            b.math("MULTIPLY", b.math("MULTIPLY", theta_alt, theta_alt), 0.125),
        )
        theta = b.switch("FLOAT", b.compare("LESS_EQUAL", theta, 6.1e-3), theta, series)
        size = b.math("SQRT", b.math("MULTIPLY_ADD", theta, theta, theta_alt))
        shortest = b.node(
            "FunctionNodeQuaternionToRotation",
            {
                "W": b.math("DIVIDE", theta, size),
                "X": b.math("DIVIDE", z, size),
                "Y": 0.0,
                "Z": b.math("DIVIDE", b.math("MULTIPLY", x, -1.0), size),
            },
        ).outputs[0]
        half_turn = b.node(
            "FunctionNodeQuaternionToRotation", {"W": 0.0, "X": 0.0, "Y": 0.0, "Z": 1.0}
        ).outputs[0]
        shortest = b.switch("ROTATION", safe, half_turn, shortest)
    with b.frame("Then the roll about the vector"):
        turn = b.node("FunctionNodeAxisAngleToRotation", {"Axis": nor, "Angle": roll}).outputs[0]
        rotation = b.node(
            "FunctionNodeRotateRotation", {"Rotation": shortest, "Rotate By": turn}, rotation_space="GLOBAL"
        ).outputs[0]
    b.output("Rotation", "ROTATION", rotation, "Rotation whose Y axis is the vector")


def _roll_of_matrix(b: Builder, version: int) -> None:
    matrix = b.input("Matrix", "MATRIX", description="Its upper 3 × 3 block is read")
    vector = b.input(
        "Vector", "VECTOR", description="The axis whose zero-roll frame the roll is measured from"
    )
    with b.frame("Columns normalised, a mirror negated (mat3_to_quat)"):
        axes = [b.vec("NORMALIZE", axis) for axis in columns(b, matrix)[:3]]
        det = b.vec("DOT_PRODUCT", axes[0], b.vec("CROSS_PRODUCT", axes[1], axes[2]))
        sign = b.switch("FLOAT", b.compare("LESS_THAN", det, 0.0), 1.0, -1.0)
    with b.frame("... of inverse(zero-roll frame) · matrix (mat3_vec_to_roll): each column turned back"):
        frame = b.group(shared_group(VECTOR_ROLL_GROUP, version), {"Vector": vector, "Roll": 0.0}).outputs[0]
        back = b.node("FunctionNodeInvertRotation", {"Rotation": frame}).outputs[0]
        m = [  # m[c][r]: column c, row r
            b.separate(
                b.node(
                    "FunctionNodeRotateVector", {"Vector": b.vec("SCALE", axis, sign), "Rotation": back}
                ).outputs[0]
            )
            for axis in axes
        ]
    with b.frame("Twist about Y of its quaternion (mat3_normalized_to_quat_fast's branches)"):
        w, y = _quaternion_w_y(b, m)
        flip = b.switch("FLOAT", b.compare("LESS_THAN", w, 0.0), 1.0, -1.0)
        roll = b.math(
            "MULTIPLY", b.math("ARCTAN2", b.math("MULTIPLY", y, flip), b.math("MULTIPLY", w, flip)), 2.0
        )
    b.output("Roll", "FLOAT", roll)


def _quaternion_w_y(b: Builder, m) -> tuple[Socket, Socket]:
    """W and Y of Blender's quaternion of the unit-column matrix ``m`` (``m[c][r]``), up to the common
    positive factor its final normalisation removes. Mike Day's four cases, as Blender picks them: for a
    matrix that is not a pure rotation (a handle under a non-uniform scale), each case gives another
    quaternion, so the case must be Blender's."""

    def sqrt2(*terms) -> Socket:  # 2 sqrt(1 ± m00 ± m11 ± m22), summed in Blender's order
        total = 1.0
        for sign, value in terms:
            total = b.math("ADD" if sign > 0 else "SUBTRACT", total, value)
        return b.math("MULTIPLY", b.math("SQRT", total), 2.0)

    def signed(s: Socket, a: Socket, c: Socket) -> Socket:  # -s where a < c ("W non-negative")
        return b.math("MULTIPLY", s, b.switch("FLOAT", b.compare("LESS_THAN", a, c), 1.0, -1.0))

    def over(value: Socket, s: Socket) -> Socket:
        return b.math("MULTIPLY", value, b.math("DIVIDE", 1.0, s))

    m00, m11, m22 = m[0][0], m[1][1], m[2][2]
    cases = []
    s = signed(sqrt2((1, m00), (-1, m11), (-1, m22)), m[1][2], m[2][1])
    cases.append((over(b.math("SUBTRACT", m[1][2], m[2][1]), s), over(b.math("ADD", m[0][1], m[1][0]), s)))
    s = signed(sqrt2((-1, m00), (1, m11), (-1, m22)), m[2][0], m[0][2])
    cases.append((over(b.math("SUBTRACT", m[2][0], m[0][2]), s), b.math("MULTIPLY", s, 0.25)))
    s = signed(sqrt2((-1, m00), (-1, m11), (1, m22)), m[0][1], m[1][0])
    cases.append((over(b.math("SUBTRACT", m[0][1], m[1][0]), s), over(b.math("ADD", m[1][2], m[2][1]), s)))
    s = sqrt2((1, m00), (1, m11), (1, m22))
    cases.append((b.math("MULTIPLY", s, 0.25), over(b.math("SUBTRACT", m[2][0], m[0][2]), s)))
    negative_z = b.compare("LESS_THAN", m22, 0.0)
    first = b.switch("INT", b.compare("GREATER_THAN", m00, m11), 1, 0)
    second = b.switch("INT", b.compare("LESS_THAN", m00, b.math("MULTIPLY", m11, -1.0)), 3, 2)
    case = b.switch("INT", negative_z, second, first)
    w = b.index_switch("FLOAT", case, [c[0] for c in cases])
    y = b.index_switch("FLOAT", case, [c[1] for c in cases])
    return w, y


# ------------------------------------------------------------------------------------ handles
def _handles(b: Builder, version: int, f: Features) -> None:
    """BKE_pchan_bbone_spline_params_get + BKE_pchan_bbone_handles_compute, per spline (a field)."""
    i = _HandleInputs(b)
    rest = i.rest_mode
    with b.frame("This bone's space (a non-uniformly scaled pose: its unscaled matrix)"):
        scale = axis_lengths(b, i.pose)
        sx, sy, sz = b.separate(scale)
        uneven = both(
            b,
            b.compare("GREATER_THAN", b.math("ABSOLUTE", b.math("SUBTRACT", sx, sy)), 1e-6),
            b.compare("GREATER_THAN", b.math("ABSOLUTE", b.math("SUBTRACT", sy, sz)), 1e-6),
            "OR",
        )
        do_scale = both(b, uneven, negate(b, rest))
        own = b.switch("MATRIX", do_scale, i.pose, normalized(b, i.pose))
        own = b.switch("MATRIX", rest, own, i.rest)
        imat = invert(b, own)
        own_head = _head(b, b.switch("MATRIX", rest, i.pose, i.rest))
        own_tail = _tail(b, b.switch("MATRIX", rest, i.pose, i.rest), i.length)
    ends = {}
    for end in ("prev", "next"):
        with b.frame(f"The {'start' if end == 'prev' else 'end'} handle in this bone's space"):
            ends[end] = _handle_end(b, i, end, imat, own_head, own_tail, f)
    with b.frame("Ease, roll, curve and scale: the bone's, plus the pose's (not at rest)"):
        values = _values(b, i, ends, f)
    with b.frame("Handle directions and rolls (BKE_pchan_bbone_handles_compute)"):
        length = b.math("MULTIPLY", i.length, b.switch("FLOAT", do_scale, 1.0, sy))
        epsilon = b.math("MULTIPLY", i.length, 1e-5)
        h1, roll1, h2, roll2 = _directions(b, version, ends, length, epsilon, f)
    with b.frame("Handle lengths from the circle factor, then the curve offsets"):
        circle = b.math("MULTIPLY", length, b.math("DIVIDE", _circle_factor(b, h1, h2), 0.75))
        fix = b.switch("VECTOR", do_scale, (1.0, 0.0, 1.0), b.combine(sx, 0.0, sz))  # curve x, -, curve z
        ease1, ease2 = b.separate(values["in"])[1], b.separate(values["out"])[1]
        h1 = b.vec(
            "MULTIPLY_ADD", h1, b.math("MULTIPLY", ease1, circle), b.vec("MULTIPLY", values["in"], fix)
        )
        h2 = b.vec(
            "MULTIPLY_ADD",
            h2,
            b.math("MULTIPLY", b.math("MULTIPLY", ease2, circle), -1.0),
            b.vec("MULTIPLY", values["out"], fix),
        )
        roll1 = b.math("ADD", roll1, values["roll1"])
        roll2 = b.math("ADD", roll2, values["roll2"])
    with b.frame("Packed: one matrix, so a caller evaluates all this once"):
        packed = from_columns(
            b,
            _with_w(b, h1, roll1),
            _with_w(b, h2, roll2),
            _with_w(b, values["scale_in"], length),
            _with_w(b, values["scale_out"], 0.0),
        )
    b.output(
        "Spline",
        "MATRIX",
        packed,
        "Columns: (handle in, roll in), (handle out, roll out), "
        "(scale in, length), (scale out, 0); bone space, handles from the head and the tail",
    )
    b.output(
        "Space Scale",
        "VECTOR",
        b.switch("VECTOR", do_scale, (1.0, 1.0, 1.0), scale),
        "The pose's axis lengths where it scales the bone non-uniformly (Blender then works in that "
        "scaled space), else 1",
    )


def _with_w(b: Builder, vector: Socket, w) -> tuple:
    """A packed column ``(vector, fourth row)`` for :func:`from_columns`."""
    return (vector, w)


class _HandleInputs:
    """The handles group's interface: the bone's and its handles' matrices, its settings."""

    def __init__(self, b: Builder) -> None:
        self.rest_mode = b.input("Rest Mode", "BOOLEAN", description="The rest spline (else the pose's)")
        self.pose = b.input("Pose", "MATRIX", description="The bone's pose matrix (armature space)")
        self.rest = b.input("Rest", "MATRIX", description="The bone's rest matrix (armature space)")
        self.length = b.input("Length", "FLOAT", description="The bone's rest length")
        self.flags = b.input("Flags", "INT", description="bbone_groups.Flag bits")
        self.kind, self.handle = {}, {}
        for end, label in (("prev", "Start"), ("next", "End")):
            self.kind[end] = b.input(
                f"{label} Kind", "INT", description="0 none, 1 absolute, 2 relative, 3 tangent"
            )
            self.handle[end] = {
                "pose": b.input(f"{label} Pose", "MATRIX", description="The handle bone's pose matrix"),
                "rest": b.input(f"{label} Rest", "MATRIX", description="The handle bone's rest matrix"),
                "local": b.input(
                    f"{label} Local", "MATRIX", description="The handle bone's local pose (its scale)"
                ),
                "length": b.input(f"{label} Length", "FLOAT", description="The handle bone's rest length"),
            }
        self.bone, self.posed = {}, {}
        for level, target in (("Bone", self.bone), ("Pose", self.posed)):
            for name, what in SETTINGS:
                target[name] = b.input(f"{level} {name}", "VECTOR", description=what)


#: The settings vectors of a B-bone, Bone (edit mode) and PoseBone alike.
SETTINGS = (
    ("In", "(curve in x, ease in, curve in z)"),
    ("Out", "(curve out x, ease out, curve out z)"),
    ("Roll", "(roll in, roll out, the start handle's roll out)"),
    ("Scale In", "Scale at the start (x, length, z)"),
    ("Scale Out", "Scale at the end (x, length, z)"),
)


def _head(b: Builder, matrix: Socket) -> Socket:
    return point(b, matrix, (0.0, 0.0, 0.0))


def _tail(b: Builder, matrix: Socket, length) -> Socket:
    return point(b, matrix, b.combine(0.0, length, 0.0))


def _handle_end(b: Builder, i: _HandleInputs, end: str, imat, own_head, own_tail, f: Features) -> dict:
    """The handle point, matrix and scale of one end (the start: prev, the end: next)."""
    start = end == "prev"
    if not (f.start_handle if start else f.end_handle):
        return {
            "used": False,
            "point": (0.0, 0.0, 0.0),
            "matrix": None,
            "bbone": False,
            "scale": (1.0, 1.0, 1.0),
        }
    rest, kind, h = i.rest_mode, i.kind[end], i.handle[end]
    used = b.compare("NOT_EQUAL", kind, KIND_NONE, data_type="INT")
    now = b.switch("MATRIX", rest, h["pose"], h["rest"])
    head = _head(b, now)
    target = head if start else _tail(b, now, h["length"])  # Absolute (and Automatic)
    if f.relative or f.tangent:
        moved = b.vec("SUBTRACT", head, _head(b, h["rest"]))  # RELATIVE: the handle's move from its rest
        along = b.vec("SUBTRACT", _tail(b, now, h["length"]), head)  # TANGENT: the handle's direction
        own = own_head if start else own_tail
        relative = b.vec("SUBTRACT" if start else "ADD", own, moved) if f.relative else target
        tangent = b.vec("SUBTRACT" if start else "ADD", own, along) if f.tangent else target
        target = b.index_switch("VECTOR", kind, [(0.0, 0.0, 0.0), target, relative, tangent])
    local = point(b, imat, target)
    if f.relative:  # RELATIVE at rest: the handle sits on the head (start) or the tail (end) itself
        rest_relative = both(b, rest, b.compare("EQUAL", kind, KIND_RELATIVE, data_type="INT"))
        local = b.switch(
            "VECTOR", rest_relative, local, (0.0, 0.0, 0.0) if start else b.combine(0.0, i.length, 0.0)
        )
    absolute = b.compare("EQUAL", kind, KIND_ABSOLUTE, data_type="INT")
    bbone = both(b, absolute, flag(b, i.flags, Flag.PREV_BBONE if start else Flag.NEXT_BBONE))
    scale = (1.0, 1.0, 1.0)
    if f.handle_scale:
        scale = b.switch("VECTOR", rest, axis_lengths(b, h["local"]), (1.0, 1.0, 1.0))
        if start:  # Blender reads the start handle's scale only where it reads its roll
            scale = b.switch("VECTOR", bbone, scale, (1.0, 1.0, 1.0))
        scale = b.switch("VECTOR", used, (1.0, 1.0, 1.0), scale)
    matrix = matmul(b, imat, now) if (f.start_roll if start else True) else None
    return {"used": used, "point": local, "matrix": matrix, "bbone": bbone, "scale": scale}


def _values(b: Builder, i: _HandleInputs, ends: dict, f: Features) -> dict[str, Socket]:
    """Ease, roll, curve and scale of the spline (BKE_pchan_bbone_spline_params_get's last block), as
    vectors: ``in``/``out`` = (curve x, ease, curve z), ``roll`` = (roll in, roll out, handle's end roll)."""
    rest = i.rest_mode

    def plus_pose(name: str) -> Socket:  # the Bone's value plus the PoseBone's (not at rest)
        return b.vec("ADD", i.bone[name], b.switch("VECTOR", rest, i.posed[name], (0.0, 0.0, 0.0)))

    def times_pose(name: str) -> Socket:
        return b.vec("MULTIPLY", i.bone[name], b.switch("VECTOR", rest, i.posed[name], (1.0, 1.0, 1.0)))

    ease_in, ease_out, roll = plus_pose("In"), plus_pose("Out"), b.separate(plus_pose("Roll"))
    v = {"roll1": roll[0], "roll2": roll[1], "in": ease_in, "out": ease_out}
    if f.end_roll and f.start_handle:
        end_roll = both(b, flag(b, i.flags, Flag.END_ROLL), ends["prev"]["used"])
        v["roll1"] = b.switch("FLOAT", end_roll, roll[0], b.math("ADD", roll[0], roll[2]))
    scale_in, scale_out = times_pose("Scale In"), times_pose("Scale Out")
    for key, scale, end, bit in (
        ("in", scale_in, "prev", Flag.PREV_EASE),
        ("out", scale_out, "next", Flag.NEXT_EASE),
    ):
        if f.scale_easing:
            eased = b.vec("SCALE", v[key], b.separate(scale)[1])
            v[key] = b.switch("VECTOR", flag(b, i.flags, Flag.SCALE_EASING), v[key], eased)
        if f.handle_scale:
            by_handle = b.vec("SCALE", v[key], b.separate(ends[end]["scale"])[1])
            v[key] = b.switch("VECTOR", flag(b, i.flags, bit), v[key], by_handle)
    v["scale_in"], v["scale_out"] = scale_in, scale_out
    if f.handle_scale:
        v["scale_in"] = _handle_scale(b, i.flags, scale_in, ends["prev"]["scale"], Flag.PREV_SCALE)
        v["scale_out"] = _handle_scale(b, i.flags, scale_out, ends["next"]["scale"], Flag.NEXT_SCALE)
    return v


def _handle_scale(
    b: Builder, flags: Socket, scale: Socket, handle: Socket, bits: tuple[int, int, int]
) -> Socket:
    """``scale`` times the handle's scale on the axes whose flag is set."""
    factor = [
        b.switch("FLOAT", flag(b, flags, bit), 1.0, part)
        for part, bit in zip(b.separate(handle), bits, strict=True)
    ]
    return b.vec("MULTIPLY", scale, b.combine(*factor))


def _directions(b: Builder, version: int, ends: dict, length, epsilon, f: Features):
    """Unit handle directions h1, h2 and their rolls from the handles' matrices."""
    roll_group = shared_group(ROLL_GROUP, version)
    prev, nxt = ends["prev"], ends["next"]
    h1, roll1, h2, roll2 = (0.0, 1.0, 0.0), 0.0, (0.0, 1.0, 0.0), 0.0
    if f.start_handle:
        h1 = b.vec(
            "SUBTRACT", prev["point"], b.combine(0.0, b.switch("FLOAT", prev["bbone"], 0.0, length), 0.0)
        )
        h1, short1 = _unit(b, h1, epsilon)
        h1 = b.vec("SCALE", b.switch("VECTOR", short1, h1, (0.0, -1.0, 0.0)), -1.0)
        if f.start_roll:
            roll1 = b.group(roll_group, {"Matrix": prev["matrix"], "Vector": h1}).outputs[0]
            roll1 = b.switch("FLOAT", prev["bbone"], roll1, 0.0)
            roll1 = b.switch("FLOAT", prev["used"], 0.0, roll1)
        h1 = b.switch("VECTOR", prev["used"], (0.0, 1.0, 0.0), h1)
    if f.end_handle:
        h2 = b.vec(
            "SUBTRACT", nxt["point"], b.combine(0.0, b.switch("FLOAT", nxt["bbone"], length, 0.0), 0.0)
        )
        h2, short2 = _unit(b, h2, epsilon)
        h2 = b.switch("VECTOR", short2, h2, (0.0, 1.0, 0.0))
        roll2 = b.group(roll_group, {"Matrix": nxt["matrix"], "Vector": h2}).outputs[0]
        h2 = b.switch("VECTOR", nxt["used"], (0.0, 1.0, 0.0), h2)
        roll2 = b.switch("FLOAT", nxt["used"], 0.0, roll2)
    return h1, roll1, h2, roll2


def _unit(b: Builder, vector: Socket, epsilon) -> tuple[Socket, Socket]:
    """``normalize_v3`` and whether the vector was shorter than ``epsilon``."""
    length = b.vec("LENGTH", vector)
    return b.vec("NORMALIZE", vector), b.compare("LESS_THAN", length, epsilon)


def _circle_factor(b: Builder, h1: Socket, h2: Socket) -> Socket:
    """Blender's ``cubic_tangent_factor_circle_v3`` of two unit tangents."""
    dot = b.vec("DOT_PRODUCT", h1, h2)
    half = b.math("DIVIDE", b.math("ARCCOSINE", dot), 2.0)
    sin, cos = b.math("SINE", half), b.math("COSINE", half)
    general = b.math(
        "DIVIDE", b.math("DIVIDE", b.math("SUBTRACT", 1.0, cos), b.math("MULTIPLY", sin, 2.0)), sin
    )
    out = b.switch("FLOAT", b.compare("LESS_THAN", dot, -1.0 + 1e-5), general, 0.5)
    return b.switch("FLOAT", b.compare("GREATER_THAN", dot, 1.0 - 1e-5), out, (1.0 / 3.0) * 0.75)


#: Groups whose description depends on :class:`Features`.
_BY_FEATURES = {HANDLES_GROUP}
_BUILDERS: dict[str, Callable] = {
    VECTOR_ROLL_GROUP: _vector_roll,
    ROLL_GROUP: _roll_of_matrix,
    HANDLES_GROUP: _handles,
}
