"""The Auto tree's palette: one point per palette entry (a bone, or a B-bone's segment joint) with its
deform matrix, rest frame, length and deforming parent, evaluated by Blender from Bone Info.

A generated group per object, ``HybridSkin Palette · …`` (its own tree: Blender's cost of adding a node or
a link grows with the tree it goes into, so the Mix tree stays small):

* **Bone table**: one point per bone the palette reads (the deform bones, then the B-bones' handle bones),
  filled by one Bone Info node in a For Each Element zone; the names are one string, each padded to the
  same width (one node and one string however many bones).
* **Entries**: a rig without B-bones gives each deform bone one entry, ``pose · rest⁻¹``. A B-bone with
  ``s`` segments gives ``s + 1`` consecutive entries (``core/binding.py``'s virtual bones): the deform
  bones' points are duplicated ``s + 1`` times (Duplicate Elements keeps each bone's copies together, so
  the order is the palette's) and each joint reads ``HybridSkin · B-Bone Segments`` (:mod:`.bbone_segments`),
  fed per B-bone from the bone table and its settings (:class:`BBone`), constants stored at bind.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import bpy

from . import bbone_segments
from .bbone_groups import KIND_ABSOLUTE, KIND_NONE, KIND_RELATIVE, KIND_TANGENT, Features, Flag
from .builder import Builder, Socket, new_tree, tree_tag

__all__ = ["BBone", "Handle", "PALETTE_TREE", "SETTING_PATHS", "SETTING_VECTORS", "build", "palette_tree"]

PALETTE_TREE = "HybridSkin Palette"
BONE_INFO = "GeometryNodeBoneInfo"
#: The B-bone settings in the order of :attr:`BBone.settings`: five vectors of the Bone (edit mode,
#: ``bones["name"].…`` of the armature data), then the same five of the PoseBone (``pose.bones["name"].…``
#: of the object); per component (property, array index), ``None`` for the start handle's end roll (read
#: from the handle bone, Bone.use_endroll_as_inroll).
SETTING_PATHS = (
    (("bbone_curveinx", -1), ("bbone_easein", -1), ("bbone_curveinz", -1)),
    (("bbone_curveoutx", -1), ("bbone_easeout", -1), ("bbone_curveoutz", -1)),
    (("bbone_rollin", -1), ("bbone_rollout", -1), None),
    (("bbone_scalein", 0), ("bbone_scalein", 1), ("bbone_scalein", 2)),
    (("bbone_scaleout", 0), ("bbone_scaleout", 1), ("bbone_scaleout", 2)),
)
SETTING_VECTORS = ("In", "Out", "Roll", "Scale In", "Scale Out")


@dataclass(frozen=True)
class Handle:
    """A B-bone end's handle bone and how it is read (``bbone_groups.KIND_*``)."""

    bone: str
    kind: int


@dataclass(frozen=True)
class BBone:
    """What the segments group needs of one B-bone besides Bone Info: segments, ``bbone_groups.Flag``
    bits, handles, and its 30 settings (:data:`SETTING_PATHS`: the Bone's, then the PoseBone's)."""

    name: str
    segments: int
    flags: int
    start: Handle | None
    end: Handle | None
    settings: tuple[float, ...]


def palette_tree(
    bones: tuple[str, ...], parents: tuple[int, ...], bbones: tuple[BBone, ...], version: int
) -> bpy.types.GeometryNodeTree:
    """The palette group (module docstring) of this description: the file's, else a new one (the objects
    of one rig share it; building a Rigify palette takes seconds). Input ``Armature``; output ``Palette``,
    points with ``deform`` and ``rest`` (4 × 4), ``length`` and ``parent`` (the deforming parent's entry,
    -1: none)."""
    key = hashlib.sha1(repr((bones, parents, bbones)).encode()).hexdigest()
    for tree in bpy.data.node_groups:
        if tree.library is None and tree_tag(tree) == (PALETTE_TREE, version) and tree.get(_KEY) == key:
            return tree
    b = Builder(new_tree(f"{PALETTE_TREE} · {len(bones)} bones", PALETTE_TREE, version))
    b.tree[_KEY] = key
    armature = b.input("Armature", "OBJECT", description="The armature whose Bone Info the palette reads")
    points, fields = build(b, armature, bones, parents, bbones, version)
    for name, kind in (("deform", "FLOAT4X4"), ("rest", "FLOAT4X4"), ("length", "FLOAT"), ("parent", "INT")):
        points = b.store(points, name, fields[name], kind)
    b.output("Palette", "GEOMETRY", points, "One point per palette entry: deform, rest, length, parent")
    return b.finish()


#: The custom property of a palette group that names what it was built from.
_KEY = "hybrid_skin_palette"


def build(
    b: Builder,
    armature: Socket,
    bones: tuple[str, ...],
    parents: tuple[int, ...],
    bbones: tuple[BBone, ...],
    version: int,
) -> tuple[Socket, dict[str, Socket]]:
    """The palette's points and the fields (on them) ``deform``, ``rest``, ``length`` and ``parent``.
    ``bones``: the deform bones; ``parents``: each palette entry's deforming parent (-1: none)."""
    handles = [h.bone for bb in bbones for h in (bb.start, bb.end) if h is not None and h.bone not in bones]
    names = (*bones, *dict.fromkeys(handles))
    with b.frame(f"Bone table: Bone Info of {len(names)} bones"):
        table = _bone_table(b, armature, names, local=any(bb.flags & _SCALE_BITS for bb in bbones))
    by_name = {bb.name: bb for bb in bbones}
    counts = [by_name[name].segments + 1 if name in by_name else 1 for name in bones]
    points = b.node("GeometryNodePoints", {"Count": len(bones)}).outputs[0]
    index = b.node("GeometryNodeInputIndex").outputs[0]
    if not bbones:
        return points, {
            **_plain(b, table, index),
            "parent": b.index_switch("INT", index, list(parents), label="Deforming parent"),
        }
    points = b.store(points, "bone", index, "INT")
    amount = b.index_switch("INT", index, counts, label="Entries per bone")
    copies = b.node("GeometryNodeDuplicateElements", {"Geometry": points, "Amount": amount}, domain="POINT")
    points = b.store(copies.outputs["Geometry"], "joint", copies.outputs["Duplicate Index"], "INT")
    bone, joint = b.named("bone", "INT"), b.named("joint", "INT")
    plain = _plain(b, table, bone)
    with b.frame(f"B-bones ({len(bbones)}): their bone table rows and settings"):
        joints = _segments(b, table, {name: i for i, name in enumerate(names)}, bbones, version)
    ordinal = {bb.name: k for k, bb in enumerate(bbones)}
    k = b.index_switch("INT", bone, [ordinal.get(name, -1) for name in bones], label="B-bone number")
    is_bbone = b.compare("GREATER_EQUAL", k, 0, data_type="INT")
    rest_row = _int(b, "ADD", _int(b, "MULTIPLY", k, 2 * bbone_segments.SAMPLES), joint)
    pose_row = _int(b, "ADD", rest_row, bbone_segments.SAMPLES)

    def joint_value(name: str, kind: str, row: Socket) -> Socket:
        return b.sample(joints, b.named(name, kind), row, kind)

    fields = {
        "deform": b.switch("MATRIX", is_bbone, plain["deform"], joint_value("deform", "FLOAT4X4", pose_row)),
        "rest": b.switch("MATRIX", is_bbone, plain["rest"], joint_value("frame", "FLOAT4X4", rest_row)),
        "length": b.switch("FLOAT", is_bbone, plain["length"], joint_value("length", "FLOAT", rest_row)),
    }
    base = [sum(counts[:d]) for d in range(len(bones))]
    first_parent = b.index_switch(
        "INT", bone, [parents[base[d]] for d in range(len(bones))], label="Deforming parent"
    )
    previous = _int(b, "SUBTRACT", b.node("GeometryNodeInputIndex").outputs[0], 1)
    fields["parent"] = b.switch(
        "INT", b.compare("GREATER_THAN", joint, 0, data_type="INT"), first_parent, previous
    )
    return points, fields


_SCALE_BITS = 0b1111_1111_0000  # bbone_groups.Flag: scale or ease from a handle
#: What a string socket holds (Blender's 1024 bytes, less the terminating zero).
_STRING_BYTES = 1023


def _int(b: Builder, operation: str, a, c) -> Socket:
    return b.node("FunctionNodeIntegerMath", {0: a, 1: c}, operation=operation).outputs[0]


def _bone_table(b: Builder, armature: Socket, names: tuple[str, ...], local: bool) -> Socket:
    """Points, one per name, with ``Pose``, ``Rest`` and ``Length`` (and ``Local``) from Bone Info, read
    in a For Each Element zone: the names are one string of equal-width slices."""
    pad = next(c for c in "\x1f\x1e\x1d\x1c\x7f" if not any(c in n for n in names))
    width = max(len(n) for n in names)
    # A string socket holds at most 1023 bytes: the names go in pieces of as many as fit.
    per_piece = max(1, _STRING_BYTES // max(len(n.encode()) + width - len(n) for n in names))
    pieces = [
        "".join(n.ljust(width, pad) for n in names[i : i + per_piece])
        for i in range(0, len(names), per_piece)
    ]
    points = b.node("GeometryNodePoints", {"Count": len(names)}).outputs[0]
    zone_in = b.node("GeometryNodeForeachGeometryElementInput", label="Each bone")
    zone_out = b.node("GeometryNodeForeachGeometryElementOutput")
    zone_in.pair_with_output(zone_out)
    b.tree.links.new(points, zone_in.inputs["Geometry"])
    each = zone_in.outputs["Index"]
    packed = b.index_switch("STRING", _int(b, "DIVIDE_FLOOR", each, per_piece), pieces, label="Bone names")
    start = _int(b, "MULTIPLY", _int(b, "MODULO", each, per_piece), width)
    piece = b.node("FunctionNodeSliceString", {"String": packed, "Position": start, "Length": width}).outputs[
        0
    ]
    name = b.node("FunctionNodeReplaceString", {"String": piece, "Find": pad, "Replace": ""}).outputs[0]
    info = b.node(BONE_INFO, {"Armature": armature, "Bone Name": name}, transform_space="ORIGINAL")
    outputs = [
        ("Pose", "MATRIX", "Pose"),
        ("Rest", "MATRIX", "Rest Pose"),
        ("Length", "FLOAT", "Rest Length"),
    ]
    if local:
        outputs.append(("Local", "MATRIX", "Local Pose"))
    for item, kind, source in outputs:
        zone_out.main_items.new(kind, item)
        b.tree.links.new(info.outputs[source], zone_out.inputs[item])
    table = zone_out.outputs["Geometry"]
    for item, kind, _source in outputs:  # the zone's results are fields of its geometry: named here
        table = b.store(table, item, zone_out.outputs[item], "FLOAT4X4" if kind == "MATRIX" else kind)
    return table


def _plain(b: Builder, table: Socket, bone: Socket) -> dict[str, Socket]:
    """The bone table's matrices and length of deform bone ``bone`` (a field), and its deform matrix."""
    pose = b.sample(table, b.named("Pose", "FLOAT4X4"), bone, "FLOAT4X4")
    rest = b.sample(table, b.named("Rest", "FLOAT4X4"), bone, "FLOAT4X4")
    length = b.sample(table, b.named("Length", "FLOAT"), bone, "FLOAT")
    inverse_rest = b.node("FunctionNodeInvertMatrix", {"Matrix": rest}).outputs["Matrix"]
    deform = b.node("FunctionNodeMatrixMultiply", {0: pose, 1: inverse_rest}).outputs[0]
    return {"deform": deform, "rest": rest, "length": length}


def _segments(
    b: Builder, table: Socket, rows: dict[str, int], bbones: tuple[BBone, ...], version: int
) -> Socket:
    """The segments group fed per B-bone ``k`` = Index // 2 (its splines are two per B-bone): the bone
    table's rows of the bone and its handles, and its settings."""
    k = _int(b, "DIVIDE_FLOOR", b.node("GeometryNodeInputIndex").outputs[0], 2)

    def row(names: list[str | None], label: str) -> Socket:
        return b.index_switch("INT", k, [rows[n] if n is not None else 0 for n in names], label=label)

    def read(at: Socket, item: str, kind: str) -> Socket:
        return b.sample(table, b.named(item, kind), at, kind)

    own = row([bb.name for bb in bbones], "Bone table row")
    inputs = {
        "Pose": read(own, "Pose", "FLOAT4X4"),
        "Rest": read(own, "Rest", "FLOAT4X4"),
        "Length": read(own, "Length", "FLOAT"),
    }
    inputs["Segments"] = b.index_switch("INT", k, [bb.segments for bb in bbones], label="Segments")
    inputs["Flags"] = b.index_switch("INT", k, [bb.flags for bb in bbones], label="Flags")
    for label, attr in (("Start", "start"), ("End", "end")):
        handles = [getattr(bb, attr) for bb in bbones]
        inputs[f"{label} Kind"] = b.index_switch(
            "INT", k, [h.kind if h else KIND_NONE for h in handles], label=f"{label} handle kind"
        )
        at = row([h.bone if h else None for h in handles], f"{label} handle row")
        for what, kind in (
            ("Pose", "FLOAT4X4"),
            ("Rest", "FLOAT4X4"),
            ("Local", "FLOAT4X4"),
            ("Length", "FLOAT"),
        ):
            if what == "Local" and not any(bb.flags & _SCALE_BITS for bb in bbones):
                continue  # no B-bone takes scale from a handle: the group's default (identity) serves
            inputs[f"{label} {what}"] = read(at, what, kind)
    for v, (level, name) in enumerate(
        (level, name) for level in ("Bone", "Pose") for name in SETTING_VECTORS
    ):
        items = [tuple(bb.settings[3 * v : 3 * v + 3]) for bb in bbones]
        inputs[f"{level} {name}"] = b.index_switch("VECTOR", k, items, label=f"{level} {name}")
    segments = bbone_segments.shared(version, features(bbones))
    group = b.group(segments, {"Count": len(bbones), **inputs}, label="B-bone segments")
    return group.outputs[0]


def features(bbones: tuple[BBone, ...]) -> Features:
    """What these B-bones use of Blender's B-bone maths (:class:`.bbone_groups.Features`)."""
    starts = [bb.start for bb in bbones if bb.start is not None]
    kinds = {h.kind for bb in bbones for h in (bb.start, bb.end) if h is not None}
    return Features(
        start_handle=bool(starts),
        end_handle=any(bb.end is not None for bb in bbones),
        start_roll=any(
            bb.start is not None and not (bb.start.kind == KIND_ABSOLUTE and bb.flags & Flag.PREV_BBONE)
            for bb in bbones
        ),
        relative=KIND_RELATIVE in kinds,
        tangent=KIND_TANGENT in kinds,
        handle_scale=any(bb.flags & _SCALE_BITS for bb in bbones),
        scale_easing=any(bb.flags & Flag.SCALE_EASING for bb in bbones),
        end_roll=any(bb.flags & Flag.END_ROLL for bb in bbones),
    )
