"""The Geometry Nodes trees of Blender's own hybrid: what each modifier Hybrid Skin adds evaluates.

The stack (:mod:`..parts` puts it on the object)::

    HybridSkin Rest       stores the Armature modifier's input positions (REST_ATTRIBUTE)
    <your Armature>       LBS (its Preserve Volume is off)
    HybridSkin Keep LBS   stores the LBS result (LBS_ATTRIBUTE), puts the rest positions back
    HybridSkin DQS        a Preserve Volume Armature modifier with your modifier's settings: DQS
    HybridSkin Mix        position = (1 - f) LBS + f DQS, f per vertex (this tree), the helpers removed

``f`` is the Mix modifier's *Deform Factor* (Global), times the weights of a vertex group (Vertex Group), or
Auto: computed in the tree from Bone Info nodes (:mod:`.auto_tree`, Blender 5.2+), or read from the
attribute :data:`AUTO_ATTRIBUTE` the add-on writes at each frame where the tree cannot compute it. Both
Armature modifiers mask with your mask group, so ``(1 - f) LBS_m + f DQS_m`` is Blender's own masked mix.

Every tree carries its kind and ``TREE_VERSION`` (:func:`.builder.tree_tag`): a description that changes bumps
the version, and trees of another version are rebuilt, never patched.
"""

from __future__ import annotations

from dataclasses import dataclass

import bpy

from . import auto_tree
from .builder import Builder, find_tree, new_tree, output

__all__ = [
    "AUTO_ATTRIBUTE",
    "KEEP_TREE",
    "LBS_ATTRIBUTE",
    "MIX_INPUTS",
    "REST_ATTRIBUTE",
    "REST_TREE",
    "TREE_VERSION",
    "MixInputs",
    "build_mix",
    "shared_tree",
]

#: Version of every description in this package: bump it when any tree changes.
TREE_VERSION = 2
#: The Armature modifier's input positions, stored by the Rest modifier for the modifiers after it.
REST_ATTRIBUTE = ".hybrid_skin_rest"
#: The LBS result, stored by the Keep LBS modifier for the Mix modifier.
LBS_ATTRIBUTE = ".hybrid_skin_lbs"
#: Auto factors the add-on writes at each frame where the tree cannot compute them (Blender before 5.2).
AUTO_ATTRIBUTE = ".hybrid_skin_auto"
REST_TREE = "HybridSkin Rest"
KEEP_TREE = "HybridSkin Keep LBS"


@dataclass(frozen=True)
class MixInputs:
    """The Mix modifier's inputs by role: their names in the tree's interface."""

    deform_factor: str = "Deform Factor"
    mode: str = "Factor Mode"
    group: str = "Factor Group"
    profile: str = "Auto Profile"
    armature: str = "Armature"


MIX_INPUTS = MixInputs()


def shared_tree(kind: str) -> bpy.types.GeometryNodeTree:
    """The file's one tree of ``kind`` (:data:`REST_TREE` or :data:`KEEP_TREE`) at this version, built
    if missing. Trees of other versions are left to the objects that still use them."""
    found = find_tree(kind, TREE_VERSION)
    if found is not None:
        return found
    builder = Builder(new_tree(kind, kind, TREE_VERSION))
    geometry = builder.input("Geometry", "GEOMETRY")
    position = builder.node("GeometryNodeInputPosition").outputs[0]
    if kind == REST_TREE:
        with builder.frame("The Armature modifier's input, for the modifiers after it"):
            out = builder.store(geometry, REST_ATTRIBUTE, position, "FLOAT_VECTOR")
    elif kind == KEEP_TREE:
        with builder.frame("Keep the LBS result; the DQS modifier starts from the rest positions again"):
            kept = builder.store(geometry, LBS_ATTRIBUTE, position, "FLOAT_VECTOR")
            rest = builder.named(REST_ATTRIBUTE, "FLOAT_VECTOR")
            out = builder.node("GeometryNodeSetPosition", {"Geometry": kept, "Position": rest}).outputs[0]
    else:
        raise ValueError(f"no shared tree {kind!r}")
    builder.output("Geometry", "GEOMETRY", out)
    return builder.finish()


def build_mix(name: str, auto: auto_tree.AutoSource, helpers: tuple[str, ...]) -> bpy.types.GeometryNodeTree:
    """The Mix tree of one object (named ``name``; Blender may give it a free name): ``auto`` says how Auto
    factors are found, ``helpers`` are the point attributes to remove from the result (the stack's own and
    those the bind stored on the mesh), so nothing of Hybrid Skin's reaches what follows or an export."""
    builder = Builder(new_tree(name, "HybridSkin Mix", TREE_VERSION))
    b = builder
    geometry = b.input("Geometry", "GEOMETRY")
    value = b.input(
        MIX_INPUTS.deform_factor,
        "FLOAT",
        default=0.5,
        minimum=0.0,
        maximum=1.0,
        subtype="FACTOR",
        single_value=True,
        description="Blend between linear blend skinning (0) and dual quaternion skinning (1)",
    )
    mode = b.input(
        MIX_INPUTS.mode,
        "INT",
        default=0,
        minimum=0,
        maximum=2,
        single_value=True,
        description="0 Global: the Deform Factor everywhere; 1 Vertex Group: the Deform Factor times the "
        "group's weights; 2 Auto: per vertex from the pose",
    )
    group = b.input(
        MIX_INPUTS.group,
        "STRING",
        single_value=True,
        description="The vertex group whose weights scale the Deform Factor (Factor Mode 1)",
    )
    profile = b.input(
        MIX_INPUTS.profile,
        "INT",
        default=0,
        minimum=0,
        maximum=2,
        single_value=True,
        description="Auto's profile: 0 Round, 1 Keep Volume, 2 Per Joint (0.1)",
    )
    armature = b.input(
        MIX_INPUTS.armature,
        "OBJECT",
        description="The armature whose pose Auto reads (the Armature modifier's)",
    )
    with b.frame("Deform factor per vertex"):
        weights = b.node("GeometryNodeInputNamedAttribute", {"Name": group}, data_type="FLOAT").outputs[0]
        scaled = b.math("MULTIPLY", value, weights, label="Factor × group")
    with b.frame("Auto: from the pose"):
        automatic = auto.build(b, armature, profile)
    with b.frame("(1 - f) LBS + f DQS"):
        factor = b.index_switch("FLOAT", mode, [value, scaled, automatic], label="Factor Mode")
        lbs = b.named(LBS_ATTRIBUTE, "FLOAT_VECTOR")
        dqs = b.node("GeometryNodeInputPosition").outputs[0]
        mixed = output(
            b.node(
                "ShaderNodeMix",
                {"Factor_Float": factor, "A_Vector": lbs, "B_Vector": dqs},
                data_type="VECTOR",
            )
        )
        # Auto's factor is 1 where a vertex blends no two bones (its LBS and DQS agree): those vertices keep
        # the DQS result as it is, and Auto is evaluated only where it matters.
        selection = auto.where_needed(b)
        if selection is not None:
            not_auto = b.compare("NOT_EQUAL", mode, 2, data_type="INT")
            selection = b.node(
                "FunctionNodeBooleanMath", {0: not_auto, 1: selection}, operation="OR"
            ).outputs[0]
        out = b.node(
            "GeometryNodeSetPosition", {"Geometry": geometry, "Position": mixed, "Selection": selection}
        ).outputs[0]
    with b.frame("Hybrid Skin's helpers are not part of the result"):
        for attribute in (REST_ATTRIBUTE, LBS_ATTRIBUTE, *helpers):
            out = b.node("GeometryNodeRemoveAttribute", {"Geometry": out, "Name": attribute}).outputs[0]
    b.output("Geometry", "GEOMETRY", out)
    return b.finish()
