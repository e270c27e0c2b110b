"""Auto in the Mix tree: the factor from the pose, evaluated by Blender (5.2+: Bone Info), or read from the
attribute the add-on writes at each frame where the tree cannot compute it.

:class:`FromPose` builds, inside the Mix tree, what ``core/autofactor.py`` computes:

* **Per bone** (a point cloud, one point per palette entry): Bone Info's pose and rest matrices, the deform
  matrix ``pose · rest⁻¹`` (Blender's ``chan_mat``), the rotation relative to the deforming parent split
  into swing and twist (:data:`.auto_groups.SWING_TWIST_GROUP`), then the sums down each chain by pointer
  jumping (``autofactor.chain_sums``: log2 of the depth steps).
* **Per vertex**: its influences, stored on the mesh at bind (:data:`VERTEX_ATTRIBUTES`: the palette
  index and weight of each, the total weight and the sum over pairs), gather the bone data; the weighted
  moments (two passes, relative to the first influence, as ``_round_chunk``) feed
  :data:`.auto_groups.PROFILE_GROUP`. The vertex's squared rest distance to its nearest bone is stored at
  bind too and computed again in the tree only when the mesh moved relative to the armature since, or when
  its rest shape can change (shape keys, modifiers above).

B-bones are the palette's virtual bones, one entry per segment joint: their deform matrices come from
Blender's B-bone math in the tree (:mod:`.palette`, :mod:`.bbone_segments`). Rigs the tree cannot express
(:func:`expressible` says why) keep :class:`FromAttribute`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import bpy
import numpy as np

from ...core import autofactor
from . import auto_groups, palette
from .builder import Builder, Socket

__all__ = [
    "AUTO_ATTRIBUTE",
    "BBONE_DIGESTS",
    "BONE_INFO",
    "FromAttribute",
    "FromPose",
    "influence_attributes",
    "LIVE_REST",
    "REST_DIGEST",
    "VERTEX_ATTRIBUTES",
]

AUTO_ATTRIBUTE = ".hybrid_skin_auto"
#: Blender 5.2 added Bone Info: before it, Auto cannot be evaluated by a tree.
BONE_INFO = "GeometryNodeBoneInfo"
#: Per-vertex data the bind stores on the mesh for :class:`FromPose` (besides one bone and one weight
#: attribute per influence slot, :func:`influence_attributes`).
TOTAL_ATTRIBUTE = ".hybrid_skin_weight_total"
PAIRS_ATTRIBUTE = ".hybrid_skin_weight_pairs"
R2_ATTRIBUTE = ".hybrid_skin_rest_r2"
VERTEX_ATTRIBUTES = (TOTAL_ATTRIBUTE, PAIRS_ATTRIBUTE, R2_ATTRIBUTE)
REST_ATTRIBUTE = ".hybrid_skin_rest"
#: Custom properties of a Mix tree that keeps B-bone settings: a digest of the rig's settings of every
#: bone (``bbone_settings.values_digest``: cheap to compare after each edit of the rig) and one of what the
#: tree was built from.
BBONE_DIGESTS = ("hybrid_skin_bbone_values", "hybrid_skin_bbones")
#: Custom property of a Mix tree that computes Auto from the pose: 1 when it computes the rest distances
#: itself (``FromPose.live_rest``), 0 when it reads those stored at bind.
LIVE_REST = "hybrid_skin_live_rest"
#: Custom property of a Mix tree that computes Auto from the pose: a digest of the rig's rest pose it was
#: built for (``FromPose.rest_digest``: names, rest matrices, B-bone segments); an edit since makes its
#: palette or its stored rest distances stale.
REST_DIGEST = "hybrid_skin_rest_digest"
#: Largest change of a placement matrix entry (float32 in the tree) that still uses the stored distances.
PLACEMENT_TOLERANCE = 1e-6


def influence_attributes(k: int) -> tuple[str, str]:
    """The bone (INT, palette index) and weight (FLOAT) attributes of influence slot ``k``."""
    return f".hybrid_skin_bone_{k}", f".hybrid_skin_weight_{k}"


@dataclass(frozen=True)
class NotChosen:
    """Auto is not the object's Factor Mode: the Mix tree holds no Auto nodes (a tree of Bone Info nodes
    costs a second or more to build); choosing Auto sets the object up again with them."""

    def build(self, b: Builder, armature: Socket, profile: Socket) -> float:
        return 1.0  # read only where the Factor Mode input is 2 (Auto), which the add-on never leaves so

    def where_needed(self, b: Builder) -> Socket | None:
        return None

    @property
    def helpers(self) -> tuple[str, ...]:
        return ()


@dataclass(frozen=True)
class FromAttribute:
    """Auto's factors as the add-on writes them at each frame (:data:`AUTO_ATTRIBUTE`)."""

    def build(self, b: Builder, armature: Socket, profile: Socket) -> Socket:
        return b.named(AUTO_ATTRIBUTE, "FLOAT")

    def where_needed(self, b: Builder) -> Socket | None:
        return None  # the attribute holds every vertex's factor

    @property
    def helpers(self) -> tuple[str, ...]:
        return (AUTO_ATTRIBUTE,)


@dataclass(frozen=True)
class FromPose:
    """Auto evaluated by the tree from the pose (module docstring). ``bones``: the palette's bone names;
    ``parents``: each entry's deforming parent in the palette (-1: none); ``influences``: influence slots
    per vertex; ``placement``: mesh → armature space at bind, row-major; ``live_rest``: the rest shape can
    change (the distances are always computed in the tree); ``bbones``: the B-bones among ``bones``
    (:class:`.palette.BBone`, their settings as the bind read them)."""

    bones: tuple[str, ...]
    parents: tuple[int, ...]
    influences: int
    placement: tuple[float, ...]
    live_rest: bool
    version: int
    bbones: tuple[palette.BBone, ...] = ()
    #: What the tree keeps of the rig's B-bone settings (:data:`BBONE_DIGESTS`), to notice edits since.
    digests: tuple[str, str] = ("", "")
    #: The rig's rest pose the tree and its stored rest distances were made for (:data:`REST_DIGEST`). Not
    #: part of the tree's shape: bones that only moved get new distances written into the same tree.
    rest_digest: str = field(default="", compare=False)

    @property
    def helpers(self) -> tuple[str, ...]:
        slots = tuple(name for k in range(self.influences) for name in influence_attributes(k))
        return (*slots, *VERTEX_ATTRIBUTES)

    def where_needed(self, b: Builder) -> Socket:
        """Vertices that blend two bones or more: elsewhere Auto's factor is 1 (``pairs`` = 0)."""
        return b.compare("GREATER_THAN", b.named(PAIRS_ATTRIBUTE, "FLOAT"), 0.0)

    @property
    def chain_steps(self) -> int:
        """Pointer-jumping steps for the deepest chain (``autofactor.chain_sums``)."""
        depth, parents = 0, np.asarray(self.parents)
        for start in range(len(parents)):
            d, p = 0, parents[start]
            while p >= 0:
                d, p = d + 1, parents[p]
            depth = max(depth, d)
        return int(np.ceil(np.log2(depth + 1))) if depth else 0

    def build(self, b: Builder, armature: Socket, profile: Socket) -> Socket:
        b.tree[LIVE_REST] = int(self.live_rest)
        b.tree[REST_DIGEST] = self.rest_digest
        if self.bbones:
            for key, digest in zip(BBONE_DIGESTS, self.digests, strict=True):
                b.tree[key] = digest
        with b.frame(f"Bone data ({len(self.bones)} bones)"):
            bones = self._bone_data(b, armature)
        with b.frame("Placement: mesh → armature space"):
            relative = b.node(
                "GeometryNodeObjectInfo", {"Object": armature}, transform_space="RELATIVE"
            ).outputs["Transform"]
            placement = b.node("FunctionNodeInvertMatrix", {"Matrix": relative}).outputs["Matrix"]
            rest = b.node(
                "FunctionNodeTransformPoint",
                {"Vector": b.named(REST_ATTRIBUTE, "FLOAT_VECTOR"), "Transform": placement},
            ).outputs[0]
        with b.frame(f"Influences ({self.influences} per vertex): weighted moments"):
            sums = self._moments(b, bones)
        with b.frame("Squared distance to the nearest bone at rest"):
            r2 = self._rest_distance(b, bones, rest, placement)
        shapes = autofactor.ROUND_SHAPES
        names = ("ROUND", "KEEP_VOLUME", "ROUND")  # item 2 (Per Joint) ignores the shape
        group = b.group(
            auto_groups.shared_group(auto_groups.PROFILE_GROUP, self.version),
            {
                **sums,
                "Rest": rest,
                "R2": r2,
                "Width": b.index_switch("FLOAT", profile, [shapes[n].width for n in names]),
                "Swing Exponent": b.index_switch("FLOAT", profile, [shapes[n].swing_exponent for n in names]),
                "Twist Weight": b.index_switch("FLOAT", profile, [shapes[n].twist_weight for n in names]),
                "Per Joint": b.compare("EQUAL", profile, 2, data_type="INT"),
            },
            label="Auto profile",
        )
        return group.outputs["Factor"]

    # ------------------------------------------------------------------------------- per bone
    def _bone_data(self, b: Builder, armature: Socket) -> Socket:
        """Points, one per palette entry, with ``ta`` (twist, A, 0), ``sg`` (swing), ``hh`` (A · head)
        summed down the chains, and ``head``, ``seg`` (rest head, length × Y axis)."""
        group = palette.palette_tree(self.bones, self.parents, self.bbones, self.version)
        points = b.group(group, {"Armature": armature}, label="Palette: Bone Info, B-bone joints").outputs[0]
        rest, length = b.named("rest", "FLOAT4X4"), b.named("length", "FLOAT")
        parent = b.named("parent", "INT")
        points = b.store(points, "up", parent, "INT")
        has_parent = b.compare("GREATER_EQUAL", parent, 0, data_type="INT")
        parent_deform = b.switch(
            "MATRIX",
            has_parent,
            b.node("FunctionNodeCombineTransform").outputs[0],
            b.sample(points, b.named("deform", "FLOAT4X4"), parent, "FLOAT4X4"),
        )
        y_axis = b.node(
            "FunctionNodeTransformDirection", {"Direction": (0.0, 1.0, 0.0), "Transform": rest}
        ).outputs[0]
        head = b.node("FunctionNodeTransformPoint", {"Vector": (0.0, 0.0, 0.0), "Transform": rest}).outputs[0]
        local = b.group(
            auto_groups.shared_group(auto_groups.SWING_TWIST_GROUP, self.version),
            {
                "Deform": b.named("deform", "FLOAT4X4"),
                "Parent Deform": parent_deform,
                "Axis": b.vec("NORMALIZE", y_axis),
                "Head": head,
            },
            label="Swing and twist",
        )
        points = b.store(points, "ta", local.outputs["Twist Angle"], "FLOAT_VECTOR")
        points = b.store(points, "sg", local.outputs["Swing"], "FLOAT_VECTOR")
        points = b.store(points, "hh", local.outputs["Angle Head"], "FLOAT_VECTOR")
        points = b.store(points, "head", head, "FLOAT_VECTOR")
        points = b.store(points, "seg", b.vec("SCALE", y_axis, length), "FLOAT_VECTOR")
        for step in range(self.chain_steps):
            with b.frame(f"Chain sums, step {step + 1} of {self.chain_steps}"):
                up = b.named("up", "INT")
                has = b.compare("GREATER_EQUAL", up, 0, data_type="INT")
                summed = {}
                for name in ("ta", "sg", "hh"):
                    here = b.named(name, "FLOAT_VECTOR")
                    above = b.switch(
                        "VECTOR", has, (0.0, 0.0, 0.0), b.sample(points, here, up, "FLOAT_VECTOR")
                    )
                    summed[name] = b.vec("ADD", here, above)
                further = b.switch("INT", has, -1, b.sample(points, up, up, "INT"))
                for name, value in summed.items():
                    points = b.store(points, name, value, "FLOAT_VECTOR")
                points = b.store(points, "up", further, "INT")
        return points

    # ----------------------------------------------------------------------------- per vertex
    def _gather(self, b: Builder, bones: Socket) -> list[dict[str, Socket]]:
        out = []
        for k in range(self.influences):
            bone_name, weight_name = influence_attributes(k)
            bone = b.named(bone_name, "INT")
            out.append(
                {
                    "w": b.named(weight_name, "FLOAT"),
                    **{
                        name: b.sample(bones, b.named(name, "FLOAT_VECTOR"), bone, "FLOAT_VECTOR")
                        for name in ("ta", "sg", "hh")
                    },
                    "bone": bone,
                }
            )
        return out

    def _moments(self, b: Builder, bones: Socket) -> dict[str, Socket]:
        """The inputs of the profile group: ``autofactor._round_chunk``'s sums. Everything relative to the
        first influence (nearby values subtract exactly); the twist, angle and angle·head sums in one pass
        (``sum w x² - W mean²``: what cancels there is far below the ``ANGLE_EPSILON² P`` the profile adds to
        every denominator), the swing deviations in a second (the presence's fourth moment needs them)."""
        gathered = self._gather(b, bones)
        total = b.named(TOTAL_ATTRIBUTE, "FLOAT")
        pairs = b.named(PAIRS_ATTRIBUTE, "FLOAT")
        zero = (0.0, 0.0, 0.0)
        first = gathered[0]
        sums = {"ta": zero, "sg": zero, "hh": zero}
        ta2, ah, swings = zero, zero, []
        for g in gathered[1:]:
            w = g["w"]
            rel = {n: b.vec("SUBTRACT", g[n], first[n]) for n in ("ta", "sg", "hh")}
            for n, x in rel.items():
                sums[n] = b.vec("MULTIPLY_ADD", x, w, sums[n])
            ta2 = b.vec("MULTIPLY_ADD", b.vec("MULTIPLY", rel["ta"], rel["ta"]), w, ta2)
            ah = b.vec("MULTIPLY_ADD", rel["hh"], b.math("MULTIPLY", w, b.separate(rel["ta"])[1]), ah)
            swings.append((w, rel["sg"]))
        scale = b.math("DIVIDE", 1.0, total)  # 0 for a vertex with no influence, as the core's
        mean = {n: b.vec("SCALE", value, scale) for n, value in sums.items()}
        mean_ta_a = b.separate(mean["ta"])[1]
        # sum w d² = sum w x² - (sum w x) · mean; sum w dA dH likewise.
        ta_var = b.vec("SUBTRACT", ta2, b.vec("MULTIPLY", sums["ta"], mean["ta"]))
        ah_cov = b.vec("SUBTRACT", ah, b.vec("SCALE", sums["hh"], mean_ta_a))
        m2 = m4 = None
        for w, x in [(first["w"], None), *swings]:
            d = b.vec("SCALE", mean["sg"], -1.0) if x is None else b.vec("SUBTRACT", x, mean["sg"])
            sq = b.vec("DOT_PRODUCT", d, d)
            w_sq = b.math("MULTIPLY", w, sq)
            m2 = w_sq if m2 is None else b.math("ADD", m2, w_sq)
            m4 = b.math("MULTIPLY", w_sq, sq) if m4 is None else b.math("MULTIPLY_ADD", w_sq, sq, m4)
        t_acc, a_acc, _ = b.separate(ta_var)
        return {
            "T": b.math("MULTIPLY", t_acc, total),
            "S": b.math("MULTIPLY", m2, total),
            "AA": b.math("MULTIPLY", a_acc, total),
            "AH": b.vec("SCALE", ah_cov, total),
            "M2": m2,
            "M4": m4,
            "Total": total,
            "Pairs": pairs,
        }

    def _rest_distance(self, b: Builder, bones: Socket, rest: Socket, placement: Socket) -> Socket:
        """The stored r² while the mesh sits where it was bound relative to the armature (and its rest
        shape cannot change); else computed here as ``autofactor.vertex_geometry`` does."""
        stored = b.named(R2_ATTRIBUTE, "FLOAT")
        live = self._live_distance(b, bones, rest)
        if self.live_rest:
            return live
        bound = b.node("FunctionNodeCombineMatrix").outputs[0]
        combine = bound.node
        for row in range(4):
            for col in range(4):
                combine.inputs[4 * col + row].default_value = self.placement[4 * row + col]
        moved = None
        for probe in ((0.0, 0.0, 0.0), (1.0, 0.0, 0.0), (0.0, 1.0, 0.0), (0.0, 0.0, 1.0)):
            now = b.node("FunctionNodeTransformPoint", {"Vector": probe, "Transform": placement}).outputs[0]
            then = b.node("FunctionNodeTransformPoint", {"Vector": probe, "Transform": bound}).outputs[0]
            far = b.compare("GREATER_THAN", b.vec("DISTANCE", now, then), PLACEMENT_TOLERANCE)
            moved = (
                far
                if moved is None
                else b.node("FunctionNodeBooleanMath", {0: moved, 1: far}, operation="OR").outputs[0]
            )
        return b.switch("FLOAT", moved, stored, live, label="Moved since the bind?")

    def _live_distance(self, b: Builder, bones: Socket, rest: Socket) -> Socket:
        nearest = None
        for k in range(self.influences):
            bone_name, weight_name = influence_attributes(k)
            bone, w = b.named(bone_name, "INT"), b.named(weight_name, "FLOAT")
            head = b.sample(bones, b.named("head", "FLOAT_VECTOR"), bone, "FLOAT_VECTOR")
            segment = b.sample(bones, b.named("seg", "FLOAT_VECTOR"), bone, "FLOAT_VECTOR")
            rel = b.vec("SUBTRACT", rest, head)
            length_sq = b.vec("DOT_PRODUCT", segment, segment)
            along = b.switch(
                "FLOAT",
                b.compare("GREATER_THAN", length_sq, 0.0),
                0.0,
                b.math("DIVIDE", b.vec("DOT_PRODUCT", rel, segment), length_sq),
            )
            t = b.math("MINIMUM", b.math("MAXIMUM", along, 0.0), 1.0)
            off = b.vec("SUBTRACT", rel, b.vec("SCALE", segment, t))
            d2 = b.vec("DOT_PRODUCT", off, off)
            candidate = b.math("MINIMUM", nearest if nearest is not None else 1e30, d2)
            nearest = b.switch(
                "FLOAT",
                b.compare("GREATER_THAN", w, 0.0),
                nearest if nearest is not None else 1e30,
                candidate,
            )
        return b.switch("FLOAT", b.compare("LESS_THAN", nearest, 1e30), 0.0, nearest)


def expressible(envelopes: bool, bbones: str | None = None) -> str | None:
    """Why a bind's Auto cannot be a :class:`FromPose` tree (one sentence), or None: Bone Info is missing
    (Blender before 5.2), envelopes make the influences depend on where the mesh sits, or ``bbones``, the
    reason its B-bones cannot be computed (``rig/bbone_settings.py``)."""
    if not hasattr(bpy.types, BONE_INFO):
        return f"Blender {bpy.app.version_string} has no Bone Info node (5.2 added it)"
    if envelopes:
        return "the Armature modifier uses bone envelopes, whose weights depend on where the mesh sits"
    return bbones
