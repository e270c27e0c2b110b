"""Shared node groups of the Auto tree: the per-bone and per-vertex formulas of ``core/autofactor.py``,
written once as Geometry Nodes groups (one datablock each per file, tagged and versioned like every
generated tree). Each group states which core function it mirrors; tests hold their numbers to the core.

* ``HybridSkin · Quaternion From Matrix``: ``dualquat.quaternion_from_matrix`` (columns normalised, a
  negative determinant negated, Shepperd's largest-candidate branch, ``w >= 0``).
* ``HybridSkin · Bone Swing Twist``: ``autofactor.relative_rotations`` + ``swing_twist`` for one bone:
  its local ``(twist, A; swing; A · head)`` before the chain sums.
* ``HybridSkin · Auto Profile``: the end of ``autofactor._round_chunk`` and of the Per Joint profile, from
  the vertex's weighted moments.
"""

from __future__ import annotations

import bpy
import numpy as np

from ...core import autofactor
from .builder import Builder, Socket, find_tree, new_tree

__all__ = ["QUATERNION_GROUP", "SWING_TWIST_GROUP", "PROFILE_GROUP", "shared_group"]

QUATERNION_GROUP = "HybridSkin · Quaternion From Matrix"
SWING_TWIST_GROUP = "HybridSkin · Bone Swing Twist"
PROFILE_GROUP = "HybridSkin · Auto Profile"


def shared_group(kind: str, version: int) -> bpy.types.GeometryNodeTree:
    """The file's group ``kind`` at ``version``, built if missing."""
    found = find_tree(kind, version)
    if found is not None:
        return found
    builder = Builder(new_tree(kind, kind, version))
    _BUILDERS[kind](builder, version)
    return builder.finish()


# ------------------------------------------------------------------------------- quaternion
def _quaternion(b: Builder, _version: int) -> None:
    matrix = b.input("Matrix", "MATRIX", description="Its upper 3 × 3 block is read")
    m = b.node("FunctionNodeSeparateMatrix", {"Matrix": matrix}).outputs
    # Blender's matrices are column-major: output "Column j Row i" is m[i][j].
    cols = [b.combine(m[4 * j], m[4 * j + 1], m[4 * j + 2]) for j in range(3)]
    with b.frame("Columns normalised; a mirror (negative determinant) negated"):
        cols = [b.vec("NORMALIZE", c) for c in cols]
        det = b.vec("DOT_PRODUCT", cols[0], b.vec("CROSS_PRODUCT", cols[1], cols[2]))
        sign = b.switch("FLOAT", b.compare("LESS_THAN", det, 0.0), 1.0, -1.0)
        cols = [b.vec("SCALE", c, sign) for c in cols]  # vector SCALE: the float input is the scale
    x0, y0, z0 = b.separate(cols[0])  # m00, m10, m20
    x1, y1, z1 = b.separate(cols[1])  # m01, m11, m21
    x2, y2, z2 = b.separate(cols[2])  # m02, m12, m22
    m00, m11, m22 = x0, y1, z2
    with b.frame("Shepperd: the largest of the four candidates"):

        def cand(s0: float, s1: float, s2: float) -> Socket:
            a = b.math("MULTIPLY_ADD", m00, s0, 1.0)
            a = b.math("MULTIPLY_ADD", m11, s1, a)
            return b.math("MULTIPLY_ADD", m22, s2, a)

        cands = [cand(1, 1, 1), cand(1, -1, -1), cand(-1, 1, -1), cand(-1, -1, 1)]
        # argmax, the first on ties (numpy's): index 0 unless a later one is strictly larger
        best_value = cands[0]
        best = b.node("FunctionNodeInputInt", integer=0).outputs[0]
        for i in (1, 2, 3):
            larger = b.compare("GREATER_THAN", cands[i], best_value)
            best = b.switch("INT", larger, best, i)
            best_value = b.math("MAXIMUM", best_value, cands[i])
        s = b.math("MULTIPLY", b.math("SQRT", b.math("MAXIMUM", best_value, 1e-30)), 2.0)
    r21_r12 = b.math("SUBTRACT", z1, y2)
    r02_r20 = b.math("SUBTRACT", x2, z0)
    r10_r01 = b.math("SUBTRACT", y0, x1)
    r01_r10 = b.math("ADD", x1, y0)
    r02_r20p = b.math("ADD", x2, z0)
    r12_r21 = b.math("ADD", y2, z1)
    quarter = b.math("MULTIPLY", s, 0.25)

    def over_s(value: Socket) -> Socket:
        return b.math("DIVIDE", value, s)

    # (w, x, y, z) of each case, as a float w and a vector xyz
    cases = [
        (quarter, (over_s(r21_r12), over_s(r02_r20), over_s(r10_r01))),
        (over_s(r21_r12), (quarter, over_s(r01_r10), over_s(r02_r20p))),
        (over_s(r02_r20), (over_s(r01_r10), quarter, over_s(r12_r21))),
        (over_s(r10_r01), (over_s(r02_r20p), over_s(r12_r21), quarter)),
    ]
    with b.frame("The chosen case, w >= 0, unit length"):
        w = b.index_switch("FLOAT", best, [c[0] for c in cases])
        v = b.index_switch("VECTOR", best, [b.combine(*c[1]) for c in cases])
        flip = b.switch("FLOAT", b.compare("LESS_THAN", w, 0.0), 1.0, -1.0)
        w, v = b.math("MULTIPLY", w, flip), b.vec("SCALE", v, flip)
        length = b.math("SQRT", b.math("MULTIPLY_ADD", w, w, b.vec("DOT_PRODUCT", v, v)))
        unit = b.compare("GREATER_THAN", length, 1e-30)
        w = b.switch("FLOAT", unit, 1.0, b.math("DIVIDE", w, length))
        v = b.switch("VECTOR", unit, (0.0, 0.0, 0.0), b.vec("DIVIDE", v, length))
    b.output("W", "FLOAT", w)
    b.output("XYZ", "VECTOR", v)


# ------------------------------------------------------------------------------- swing twist
def _swing_twist(b: Builder, version: int) -> None:
    deform = b.input("Deform", "MATRIX", description="The bone's deform matrix (pose × inverse rest)")
    parent = b.input("Parent Deform", "MATRIX", description="Its deforming parent's (identity for a root)")
    axis = b.input("Axis", "VECTOR", description="The bone's rest Y axis, unit length (armature space)")
    head = b.input("Head", "VECTOR", description="The bone's rest head (armature space)")
    quaternion = shared_group(QUATERNION_GROUP, version)
    with b.frame("Rotation relative to the parent (a parent scaled to 0: its rotation alone)"):
        det = b.node("FunctionNodeMatrixDeterminant", {"Matrix": parent}).outputs[0]
        singular = b.compare("LESS_EQUAL", b.math("ABSOLUTE", det), 1e-12)
        q = b.group(quaternion, {"Matrix": parent})
        qx, qy, qz = b.separate(q.outputs["XYZ"])
        rotation = b.node(
            "FunctionNodeQuaternionToRotation", {"W": q.outputs["W"], "X": qx, "Y": qy, "Z": qz}
        ).outputs[0]
        rotation_only = b.node("FunctionNodeCombineTransform", {"Rotation": rotation}).outputs[0]
        parent = b.switch("MATRIX", singular, parent, rotation_only)
        inverse = b.node("FunctionNodeInvertMatrix", {"Matrix": parent}).outputs["Matrix"]
        relative = b.node("FunctionNodeMatrixMultiply", {0: inverse, 1: deform}).outputs[0]
        q = b.group(quaternion, {"Matrix": relative})
        w, v = q.outputs["W"], q.outputs["XYZ"]
    with b.frame("Swing and twist about the bone's rest axis"):
        twist = b.math("MULTIPLY", b.math("ARCTAN2", b.vec("DOT_PRODUCT", v, axis), w), 2.0)
        inner = b.vec("MULTIPLY_ADD", axis, w, b.vec("CROSS_PRODUCT", v, axis))  # v × a + w a
        turned = b.vec("MULTIPLY_ADD", b.vec("CROSS_PRODUCT", v, inner), 2.0, axis)
        normal = b.vec("CROSS_PRODUCT", axis, turned)
        sin = b.vec("LENGTH", normal)
        cos = b.vec("DOT_PRODUCT", axis, turned)
        angle = b.math("ARCTAN2", sin, cos)
        unit = b.switch(
            "VECTOR", b.compare("GREATER_THAN", sin, 1e-12), (0.0, 0.0, 0.0), b.vec("DIVIDE", normal, sin)
        )
        swing = b.vec("SCALE", unit, angle)
    b.output("Twist Angle", "VECTOR", b.combine(twist, angle, 0.0), "(twist, swing angle, 0)")
    b.output("Swing", "VECTOR", swing, "swing angle × unit axis")
    b.output("Angle Head", "VECTOR", b.vec("SCALE", head, angle), "swing angle × rest head")


# ----------------------------------------------------------------------------------- profile
def _profile(b: Builder, _version: int) -> None:
    """Inputs are the vertex's sums over its influences (see ``auto_tree``); output: Auto's factor.

    Geometry Nodes' divisions return 0 for a zero divisor, which is what the core's guarded divisions
    give wherever that value can matter (every divisor here is >= 0; where the core's default is not 0 the
    vertex blends nothing and its depth is 0, so the factor is 1 either way)."""
    t = b.input("T", "FLOAT", description="Weighted twist variance times the total weight")
    s = b.input("S", "FLOAT", description="Weighted swing variance times the total weight")
    aa = b.input("AA", "FLOAT", description="Weighted variance of the accumulated swing angle, × total")
    ah = b.input("AH", "VECTOR", description="Weighted covariance of that angle and A·head, × total")
    m2 = b.input("M2", "FLOAT", description="Sum of w |d|² of the swing deviations")
    m4 = b.input("M4", "FLOAT", description="Sum of w |d|⁴ of the swing deviations")
    total = b.input("Total", "FLOAT", description="The vertex's total weight")
    pairs = b.input("Pairs", "FLOAT", description="Sum over influence pairs of w_i w_j")
    rest = b.input("Rest", "VECTOR", description="The vertex's rest position in armature space")
    r2 = b.input("R2", "FLOAT", description="Its squared rest distance to the nearest of its bones")
    width = b.input("Width", "FLOAT", single_value=True)
    exponent = b.input("Swing Exponent", "FLOAT", single_value=True)
    twist_weight = b.input("Twist Weight", "FLOAT", single_value=True)
    per_joint = b.input("Per Joint", "BOOLEAN", single_value=True, description="The Auto of version 0.1")

    with b.frame("Where the joint is: z² = |x - J|² / r² - 1"):
        joint = b.vec("DIVIDE", ah, aa)  # aa = 0: no swing (S = 0), the depth below is 0
        off = b.vec("SUBTRACT", rest, joint)
        ratio = b.math("DIVIDE", b.vec("DOT_PRODUCT", off, off), r2)
        along = b.math("MAXIMUM", b.math("SUBTRACT", ratio, 1.0), 0.0)
    with b.frame("F = exp(-k z²), k = width (θ / 90°)^exponent"):
        swing = b.math("DIVIDE", s, b.math("MULTIPLY", pairs, float(autofactor.QUARTER_TURN_SQ)))
        power = b.math("POWER", b.math("MAXIMUM", swing, 1e-12), b.math("MULTIPLY", exponent, 0.5))
        profile = b.math(
            "EXPONENT", b.math("MULTIPLY", b.math("MULTIPLY", power, along), b.math("MULTIPLY", width, -1.0))
        )
    with b.frame("Presence: how much of the vertex's weight swings"):
        spread = b.math("DIVIDE", m2, m4)
        q = b.math(
            "MULTIPLY",
            spread,
            b.math("DIVIDE", m2, b.math("MULTIPLY", total, float(autofactor.PRESENCE_WEIGHT))),
        )
        cube = b.math("POWER", b.math("MINIMUM", q, 1e6), 3.0)
        fade = b.math("DIVIDE", cube, b.math("ADD", cube, 1.0))
    with b.frame("Depth: swing against twist"):
        eps2_pairs = b.math("MULTIPLY", pairs, float(np.float32(autofactor.ANGLE_EPSILON**2)))
        denom = b.math("ADD", b.math("MULTIPLY_ADD", twist_weight, t, s), eps2_pairs)
        depth = b.math("DIVIDE", s, denom)
        round_f = b.math(
            "MULTIPLY_ADD", b.math("MULTIPLY", fade, depth), b.math("SUBTRACT", profile, 1.0), 1.0
        )
    with b.frame("Per Joint (0.1): 0.55 for swing, 1 for twist"):
        share = b.math("DIVIDE", t, b.math("ADD", b.math("ADD", t, s), eps2_pairs))
        swing_f, twist_f = autofactor.SWING_FACTOR, autofactor.TWIST_FACTOR
        joint_f = b.math("MULTIPLY_ADD", share, twist_f - swing_f, swing_f)
    b.output("Factor", "FLOAT", b.switch("FLOAT", per_joint, round_f, joint_f))


_BUILDERS = {QUATERNION_GROUP: _quaternion, SWING_TWIST_GROUP: _swing_twist, PROFILE_GROUP: _profile}
