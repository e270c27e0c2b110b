"""``HybridSkin · B-Bone Segments``: every B-bone's segment joint matrices, rest and pose, as Blender's
``BKE_pchan_bbone_segments_cache_compute`` makes them, in one evaluation for all the rig's B-bones.

Layout (a point cloud each, so every step is one field evaluation whatever the number of B-bones):

* **Splines**, ``2 · count`` points: B-bone ``k``'s rest spline at ``2k``, its pose spline at ``2k + 1``
  (Duplicate Elements keeps each bone's copies together). The handles group
  (:data:`.bbone_groups.HANDLES_GROUP`) gives each spline its Bézier handles, rolls and scales.
* **Samples**, :data:`SAMPLES` points per spline (row ``s · SAMPLES + j``): Blender's forward-differenced
  polyline of the curve (``BKE_curve_forward_diff_bezier``, 32 steps, the same sums in the same order) and
  its accumulated length; joint ``a`` (``a <= segments``) lives on row ``j = a``: the curve parameter that
  spaces the joints by their segment scales along that polyline (``equalize_cubic_bezier``), the point and
  tangent there (De Casteljau), and the joint matrix (``make_bbone_spline_matrix``).

The group's output holds, on B-bone ``k``'s rows: ``deform`` (joint ``a``'s deform matrix, Blender's
``b_bone_mats[a + 1]``) at row ``(2k + 1) · SAMPLES + a``; ``frame`` (its rest frame with unit axes, the dual
quaternions' rest) and ``length`` (to the next joint; the last joint: minus the one before) at row
``2k · SAMPLES + a``.
"""

from __future__ import annotations

import numpy as np

from . import bbone_groups, node_math
from .builder import Builder, Socket, find_tree, new_tree, output
from .node_math import invert, matmul, normalized

__all__ = ["SAMPLES", "SEGMENTS_GROUP", "build", "shared"]

SEGMENTS_GROUP = "HybridSkin · B-Bone Segments"
#: Blender's MAX_BBONE_SUBDIV: the polyline's steps, and the most segments a B-bone can have.
STEPS = 32
SAMPLES = STEPS + 1
#: The binary search keeps ``low · _BOUNDS + high`` (both at most STEPS).
_BOUNDS = 64


def build(b: Builder, version: int, features: bbone_groups.Features) -> None:
    """The group's description (:func:`shared`)."""
    count = b.input("Count", "INT", single_value=True, description="How many B-bones")
    inputs = _inputs(b)
    with b.frame("Splines: each B-bone's rest (2k) and pose (2k + 1)"):
        splines = _splines(b, version, count, inputs, features)
    with b.frame(f"Samples: {SAMPLES} points per spline (Blender's forward differences)"):
        samples, row = _polyline(b, splines)
    with b.frame("Joints: parameters spaced by the segment scales (equalize_cubic_bezier)"):
        samples = _joint_parameters(b, samples, row)
    with b.frame("Joint matrices (make_bbone_spline_matrix)"):
        joint = _joint_matrix(b, version, row, b.named("t", "FLOAT"))
        samples = b.store(samples, "joint", joint, "FLOAT4X4", selection=row["joint row"])
    with b.frame("Deform matrices (b_bone_mats); rest frames and lengths"):
        samples = _deform(b, samples, row)
    b.output("Joints", "GEOMETRY", samples, "Rows as the module docstring of bbone_segments.py says")


def _inputs(b: Builder) -> dict[str, Socket]:
    """Per B-bone fields, of its number ``k`` = Index // 2 (the group evaluates them on its splines)."""
    out = {
        "Pose": b.input("Pose", "MATRIX", description="Bone Info Pose of the B-bone"),
        "Rest": b.input("Rest", "MATRIX", description="Bone Info Rest Pose of the B-bone"),
        "Length": b.input("Length", "FLOAT", description="Its rest length"),
        "Segments": b.input("Segments", "INT", description="Its segments (2 to 32)"),
        "Flags": b.input("Flags", "INT", description="bbone_groups.Flag bits"),
    }
    for label in ("Start", "End"):
        out[f"{label} Kind"] = b.input(
            f"{label} Kind", "INT", description="0 none, 1 absolute, 2 relative, 3 tangent"
        )
        for what in ("Pose", "Rest", "Local"):
            out[f"{label} {what}"] = b.input(
                f"{label} {what}", "MATRIX", description=f"The handle bone's {what.lower()} matrix"
            )
        out[f"{label} Length"] = b.input(
            f"{label} Length", "FLOAT", description="The handle bone's rest length"
        )
    for level in ("Bone", "Pose"):
        for name, what in bbone_groups.SETTINGS:
            out[f"{level} {name}"] = b.input(f"{level} {name}", "VECTOR", description=what)
    return out


#: Field types by socket type, for Evaluate at Index and Store Named Attribute.
_KINDS = {
    "MATRIX": "FLOAT4X4",
    "VECTOR": "FLOAT_VECTOR",
    "VALUE": "FLOAT",
    "INT": "INT",
    "BOOLEAN": "BOOLEAN",
}
#: What each spline keeps for its samples (the handles group's packed outputs and the bone's own data).
_SPLINE_DATA = (
    ("Spline", "FLOAT4X4"),
    ("Space Scale", "FLOAT_VECTOR"),
    ("Segments", "INT"),
    ("Pose", "FLOAT4X4"),
    ("Rest", "FLOAT4X4"),
)


def at(b: Builder, value: Socket, index: Socket) -> Socket:
    """``value`` (a field) evaluated at ``index`` of the same geometry (Evaluate at Index)."""
    node = b.node(
        "GeometryNodeFieldAtIndex",
        {"Index": index, "Value": value},
        data_type=_KINDS[value.type],
        domain="POINT",
    )
    return output(node)


def imath(b: Builder, operation: str, a, c) -> Socket:
    return b.node("FunctionNodeIntegerMath", {0: a, 1: c}, operation=operation).outputs[0]


def _splines(b: Builder, version: int, count: Socket, inputs: dict[str, Socket], features) -> Socket:
    """``2 · count`` points with each spline's packed handles (one evaluation of the handles group)."""
    splines = b.node("GeometryNodePoints", {"Count": imath(b, "MULTIPLY", count, 2)}).outputs[0]
    index = b.node("GeometryNodeInputIndex").outputs[0]
    bone = imath(b, "DIVIDE_FLOOR", index, 2)
    rest = b.compare("EQUAL", imath(b, "MODULO", index, 2), 0, data_type="INT")
    fields = inputs  # the caller's fields are of the spline's bone: Index // 2
    del bone
    group = b.group(
        bbone_groups.shared_group(bbone_groups.HANDLES_GROUP, version, features),
        {"Rest Mode": rest, **{key: value for key, value in fields.items() if key != "Segments"}},
        label="Handles of each spline",
    )
    values = {"Spline": group.outputs["Spline"], "Space Scale": group.outputs["Space Scale"], **fields}
    for name, kind in _SPLINE_DATA:
        splines = b.store(splines, f"spline {name}", values[name], kind)
    return splines


def _polyline(b: Builder, splines: Socket) -> tuple[Socket, dict[str, Socket]]:
    """The samples cloud with its spline's data and the spline's polyline ``position`` and accumulated
    ``distance``; returns it and the row's fields (its spline, step, and the spline's data)."""
    count = b.node("GeometryNodeAttributeDomainSize", {"Geometry": splines}, component="POINTCLOUD").outputs[
        "Point Count"
    ]
    samples = b.node("GeometryNodePoints", {"Count": imath(b, "MULTIPLY", count, SAMPLES)}).outputs[0]
    index = b.node("GeometryNodeInputIndex").outputs[0]
    row = {
        "index": index,
        "spline": imath(b, "DIVIDE_FLOOR", index, SAMPLES),
        "step": imath(b, "MODULO", index, SAMPLES),
    }
    for name, kind in _SPLINE_DATA:  # copied once: every later step reads them as attributes
        samples = b.store(
            samples, name, b.sample(splines, b.named(f"spline {name}", kind), row["spline"], kind), kind
        )
        row[name] = b.named(name, kind)
    handle_in, handle_out, scale_in, scale_out = node_math.columns(b, row["Spline"])
    parts = b.node("FunctionNodeSeparateMatrix", {"Matrix": row["Spline"]}).outputs
    row.update(
        {
            "Handle In": handle_in,
            "Handle Out": handle_out,
            "Scale In": scale_in,
            "Scale Out": scale_out,
            "Roll In": parts[3],
            "Roll Out": parts[7],
            "Length": parts[11],
        }
    )
    row["joint row"] = b.compare("LESS_EQUAL", row["step"], row["Segments"], data_type="INT")
    row["posed"] = b.compare("EQUAL", imath(b, "MODULO", row["spline"], 2), 1, data_type="INT")
    first = b.compare("EQUAL", row["step"], 0, data_type="INT")
    # Controls 0, h1, (0, L, 0) + h2, (0, L, 0), differenced as BKE_curve_forward_diff_bezier does per axis.
    end = b.combine(0.0, row["Length"], 0.0)
    q1, q2, q3 = row["Handle In"], b.vec("ADD", end, row["Handle Out"]), end
    rt1 = b.vec("DIVIDE", b.vec("SCALE", q1, 3.0), float(STEPS))
    rt2 = b.vec("DIVIDE", b.vec("SCALE", b.vec("ADD", b.vec("SCALE", q1, -2.0), q2), 3.0), float(STEPS**2))
    rt3 = b.vec("DIVIDE", b.vec("ADD", q3, b.vec("SCALE", b.vec("SUBTRACT", q1, q2), 3.0)), float(STEPS**3))
    d1 = b.vec("ADD", b.vec("ADD", rt1, rt2), rt3)
    d2 = b.vec("ADD", b.vec("SCALE", rt2, 2.0), b.vec("SCALE", rt3, 6.0))
    d3 = b.vec("SCALE", rt3, 6.0)
    # The loop's q2 += q3, q1 += q2, q0 += q1 as running sums per spline, in the same order.
    second = _accumulate(b, b.switch("VECTOR", first, d3, d2), row["spline"], "Trailing")
    slope = _accumulate(b, b.switch("VECTOR", first, second, d1), row["spline"], "Leading")
    samples = b.store(samples, "position", _accumulate(b, slope, row["spline"], "Trailing"), "FLOAT_VECTOR")
    position = b.named("position", "FLOAT_VECTOR")
    piece = b.switch(
        "FLOAT", first, b.vec("DISTANCE", at(b, position, imath(b, "SUBTRACT", index, 1)), position), 0.0
    )
    samples = b.store(samples, "distance", _accumulate(b, piece, row["spline"], "Leading", "FLOAT"), "FLOAT")
    return samples, row


def _accumulate(b: Builder, value: Socket, group: Socket, which: str, kind: str = "FLOAT_VECTOR") -> Socket:
    node = b.node(
        "GeometryNodeAccumulateField", {"Value": value, "Group ID": group}, data_type=kind, domain="POINT"
    )
    return node.outputs[which]


def _joint_parameters(b: Builder, samples: Socket, row: dict[str, Socket]) -> Socket:
    """Stores ``t``, the curve parameter of joint ``a`` = this row's step (equalize_cubic_bezier). Each
    step's result is stored: a field read at other indices inside another is evaluated again each time."""
    step, segments, spline = row["step"], row["Segments"], row["spline"]
    is_segment = b.compare("LESS_THAN", step, segments, data_type="INT")
    with b.frame("Segment scales: exp of the interpolated log of the length scales"):
        log_in = _natural_log(b, b.math("MAXIMUM", b.separate(row["Scale In"])[1], 1e-4))
        log_out = _natural_log(b, b.math("MAXIMUM", b.separate(row["Scale Out"])[1], 1e-4))
        fac = b.math("DIVIDE", step, imath(b, "SUBTRACT", segments, 1))
        scale = b.switch(
            "FLOAT", is_segment, 0.0, b.math("EXPONENT", node_math.lerp(b, log_out, log_in, fac))
        )
        samples = b.store(samples, "segment scale", scale, "FLOAT")
        scale = b.named("segment scale", "FLOAT")
    base = imath(b, "MULTIPLY", spline, SAMPLES)
    distance = b.named("distance", "FLOAT")
    dist_step = b.math(
        "DIVIDE",
        at(b, distance, imath(b, "ADD", base, STEPS)),
        _accumulate(b, scale, spline, "Total", "FLOAT"),
    )
    samples = b.store(
        samples,
        "joint distance",
        _accumulate(b, b.math("MULTIPLY", scale, dist_step), spline, "Trailing", "FLOAT"),
        "FLOAT",
    )
    dist = b.named("joint distance", "FLOAT")
    joints = row["joint row"]  # the rows beyond a spline's last joint are left out (its polyline's only)
    with b.frame("The polyline piece the joint's distance falls in (a binary search)"):
        # low and high (the first sample beyond the distance, or the last) in one integer: one store a step
        samples = b.store(samples, "search", _BOUNDS * 1 + STEPS, "INT", selection=joints)
        for _ in range(5):  # 31 candidates: 5 halvings
            code = b.named("search", "INT")
            low, high = imath(b, "DIVIDE_FLOOR", code, _BOUNDS), imath(b, "MODULO", code, _BOUNDS)
            middle = imath(b, "DIVIDE_FLOOR", imath(b, "ADD", low, high), 2)
            beyond = b.compare("GREATER_THAN", at(b, distance, imath(b, "ADD", base, middle)), dist)
            done = b.compare("EQUAL", low, high, data_type="INT")
            low = b.switch("INT", beyond, imath(b, "ADD", middle, 1), low)
            high = b.switch("INT", beyond, high, middle)
            step_code = imath(b, "ADD", imath(b, "MULTIPLY", low, _BOUNDS), high)
            samples = b.store(
                samples, "search", b.switch("INT", done, step_code, code), "INT", selection=joints
            )
    low = imath(b, "DIVIDE_FLOOR", b.named("search", "INT"), _BOUNDS)
    after = at(b, distance, imath(b, "ADD", base, low))
    before = at(b, distance, imath(b, "ADD", base, imath(b, "SUBTRACT", low, 1)))
    fac = b.math("DIVIDE", b.math("SUBTRACT", after, dist), b.math("SUBTRACT", after, before))
    t = b.math("DIVIDE", b.math("SUBTRACT", low, fac), float(STEPS))
    t = b.switch("FLOAT", b.compare("EQUAL", step, 0, data_type="INT"), t, 0.0)
    t = b.switch("FLOAT", b.compare("EQUAL", step, segments, data_type="INT"), t, 1.0)
    return b.store(samples, "t", t, "FLOAT", selection=joints)


def _natural_log(b: Builder, value: Socket) -> Socket:
    return b.math("LOGARITHM", value, float(np.float32(np.e)))


def _joint_matrix(b: Builder, version: int, row: dict[str, Socket], t: Socket) -> Socket:
    """Joint ``a``'s matrix in bone space: the curve's point and tangent at ``t`` (the ends: the eased
    handle axes), the interpolated roll and X/Z scales."""
    step, segments = row["step"], row["Segments"]
    end = b.combine(0.0, row["Length"], 0.0)
    c = [(0.0, 0.0, 0.0), row["Handle In"], b.vec("ADD", end, row["Handle Out"]), end]
    with b.frame("De Casteljau: point and tangent"):
        one = [_interp(b, c[k], c[k + 1], t) for k in range(3)]
        two = [_interp(b, one[k], one[k + 1], t) for k in range(2)]
        tangent = b.vec("SUBTRACT", two[1], two[0])
        position = b.vec("MULTIPLY_ADD", tangent, t, two[0])
    with b.frame("The ends: handle axes eased where a handle is very short"):
        d1 = [b.vec("SUBTRACT", c[k + 1], c[k]) for k in range(3)]
        d2 = [b.vec("SUBTRACT", d1[k + 1], d1[k]) for k in range(2)]
        head_axis = _ease_axis(b, d1[0], d2[0])
        tail_axis = _ease_axis(b, d1[2], b.vec("SCALE", d2[1], -1.0))
    first = b.compare("EQUAL", step, 0, data_type="INT")
    last = b.compare("EQUAL", step, segments, data_type="INT")

    def ends(middle, head, tail, kind: str = "VECTOR") -> Socket:
        return b.switch(kind, last, b.switch(kind, first, middle, head), tail)

    fac = b.math("DIVIDE", step, segments)
    scale_in, scale_out = b.separate(row["Scale In"]), b.separate(row["Scale Out"])
    axis = ends(tangent, head_axis, tail_axis)
    position = ends(position, (0.0, 0.0, 0.0), end)
    roll = ends(
        node_math.lerp(b, row["Roll Out"], row["Roll In"], fac), row["Roll In"], row["Roll Out"], "FLOAT"
    )
    scale_x = ends(node_math.lerp(b, scale_out[0], scale_in[0], fac), scale_in[0], scale_out[0], "FLOAT")
    scale_z = ends(node_math.lerp(b, scale_out[2], scale_in[2], fac), scale_in[2], scale_out[2], "FLOAT")
    rotation = b.group(
        bbone_groups.shared_group(bbone_groups.VECTOR_ROLL_GROUP, version), {"Vector": axis, "Roll": roll}
    )
    with b.frame(
        "[rotation | point], in the pose's scaled space S (S⁻¹ · it · S; S = 1 unless non-uniform), "
        "its X and Z axes scaled"
    ):
        space = row["Space Scale"]
        scale = b.vec("MULTIPLY", space, b.combine(scale_x, 1.0, scale_z))
        matrix = b.node(
            "FunctionNodeCombineTransform",
            {"Translation": position, "Rotation": rotation.outputs[0], "Scale": scale},
        ).outputs[0]
        return matmul(b, node_math.scaling(b, b.vec("DIVIDE", (1.0, 1.0, 1.0), space)), matrix)


def _interp(b: Builder, a, c, t: Socket) -> Socket:
    """Blender's ``interp_v3_v3v3``, ``(1 - t) a + t c`` (a Mix node: one node, not four)."""
    return output(
        b.node("ShaderNodeMix", {"Factor_Float": t, "A_Vector": a, "B_Vector": c}, data_type="VECTOR")
    )


def _ease_axis(b: Builder, first: Socket, second: Socket) -> Socket:
    """Blender's ``ease_handle_axis``: fade to the second derivative when the handle is very short."""
    len2 = b.vec("DOT_PRODUCT", second, second)
    ratio = b.math("DIVIDE", b.vec("DOT_PRODUCT", first, first), len2)
    gap = float(np.float32(0.1))
    faded = b.vec("MULTIPLY_ADD", second, b.math("SUBTRACT", gap, b.math("SQRT", ratio)), first)
    use = node_math.both(
        b,
        b.compare("NOT_EQUAL", len2, 0.0),
        b.compare("LESS_THAN", ratio, float(np.float32(gap) * np.float32(gap))),
    )
    return b.switch("VECTOR", use, first, faded)


def _deform(b: Builder, samples: Socket, row: dict[str, Socket]) -> Socket:
    """``deform`` on pose rows (the rest joint 33 rows before), ``frame`` and ``length`` on rest rows."""
    joint = b.named("joint", "FLOAT4X4")
    index = row["index"]
    pose, rest = row["Pose"], row["Rest"]
    rest_joint = at(b, joint, imath(b, "SUBTRACT", index, SAMPLES))
    channel = matmul(b, pose, invert(b, rest))
    deform = matmul(b, channel, rest, joint, invert(b, rest_joint), invert(b, rest))
    posed, joints = row["posed"], row["joint row"]
    samples = b.store(samples, "deform", deform, "FLOAT4X4", selection=node_math.both(b, joints, posed))
    at_rest = node_math.both(b, joints, node_math.negate(b, posed))
    samples = b.store(samples, "frame", normalized(b, matmul(b, rest, joint)), "FLOAT4X4", selection=at_rest)
    frame = b.named("frame", "FLOAT4X4")
    here = node_math.point(b, frame, (0.0, 0.0, 0.0))
    ahead = node_math.point(b, at(b, frame, imath(b, "ADD", index, 1)), (0.0, 0.0, 0.0))
    behind = node_math.point(b, at(b, frame, imath(b, "SUBTRACT", index, 1)), (0.0, 0.0, 0.0))
    last = b.compare("EQUAL", row["step"], row["Segments"], data_type="INT")
    length = b.switch(
        "FLOAT",
        last,
        b.vec("DISTANCE", ahead, here),
        b.math("MULTIPLY", b.vec("DISTANCE", here, behind), -1.0),
    )
    return b.store(samples, "length", length, "FLOAT", selection=at_rest)


def shared(version: int, features: bbone_groups.Features = bbone_groups.ALL_FEATURES):
    """The file's ``HybridSkin · B-Bone Segments`` group for ``features`` at ``version``, built if
    missing."""
    name = SEGMENTS_GROUP + features.suffix
    found = find_tree(name, version)
    if found is not None:
        return found
    builder = Builder(new_tree(name, name, version))
    build(builder, version, features)
    return builder.finish()
