"""The user's modifiers after a mesh's Armature modifier, in a VERTEX bake: Blender applies them to the
add-on's skinning at every sample, so the texture holds what Blender shows (issue 35, item 4).

A Corrective Smooth, a Displace, a Shrinkwrap after the Armature modifier are part of what the viewport
shows; a VERTEX texture stores positions, so it can carry them. While the bake samples, such a mesh
(:class:`TailBake`) has its skinning modifiers (the Armature modifier and Hybrid Skin's own parts) hidden
and, just before its first modifier of its own, a Geometry Nodes modifier of the bake's that sets every
vertex where the add-on's skinning puts it (read from a temporary point attribute the bake writes per
sample). Blender then evaluates the user's modifiers on exactly that input, weights, attributes and
everything above the Armature modifier as they are, and the bake reads back the positions and corner
normals. Everything it added (the modifier, its node group, the attribute) is removed after, and every
modifier shown again as it was.

A stack that changes the vertex count after the Armature modifier (Subdivision Surface, Decimate, ...)
has no per-vertex result to store: :func:`tail_warning` says so, naming the modifiers, and the texture
holds the skinning alone. Bone kinds cannot carry such modifiers at all: the warning says that too.
"""

from __future__ import annotations

import bpy
import numpy as np

from .. import bridge
from ..rig import bind, stack
from .scene import MeshPart

__all__ = ["TailBake", "tail_warning", "tails"]

#: The point attribute carrying the add-on's skinning to the bake's Geometry Nodes modifier.
INPUT_ATTRIBUTE = "hybrid_skin_bake_input"


def _names(mods: list[bpy.types.Modifier]) -> str:
    return ", ".join(f"'{m.name}'" for m in mods)


def _tail(part: MeshPart) -> list[bpy.types.Modifier]:
    return stack.user_modifiers_after(part.obj, stack.armature_modifier(part.obj, part.modifier))


def tails(parts: list[MeshPart], depsgraph) -> tuple[dict[int, list[str]], list[str]]:
    """``({part index: its modifier names}, warnings)`` for a VERTEX bake: the meshes whose modifiers after
    the Armature modifier keep the vertex count (Blender applies them during the bake), and a sentence for
    each mesh whose modifiers there change it."""
    found, warnings = {}, []
    for i, part in enumerate(parts):
        mods = _tail(part)
        if not mods:
            continue
        evaluated = part.obj.evaluated_get(depsgraph).data
        if len(evaluated.vertices) == len(part.obj.data.vertices):
            found[i] = [m.name for m in mods]
        else:
            warnings.append(
                f"Modifiers {_names(mods)} after the Armature modifier of '{part.obj.name}' change its "
                "vertex count: a vertex texture cannot hold them, so it holds the skinning alone (apply them "
                "in the engine, or before the Armature modifier)"
            )
    return found, warnings


def tail_warning(parts: list[MeshPart]) -> str | None:
    """Bone kinds: the sentence for modifiers after the Armature modifier, which a bone texture cannot
    carry (the engine skins the mesh's own coordinates), or None."""
    named = [(p.obj.name, _tail(p)) for p in parts]
    named = [(name, mods) for name, mods in named if mods]
    if not named:
        return None
    which = "; ".join(f"'{name}': {_names(mods)}" for name, mods in named)
    return (
        f"Modifiers after the Armature modifier are not in a bone texture, which the engine skins from the "
        f"mesh alone ({which}): bake VERTEX to carry them, or rebuild them in the engine"
    )


class TailBake:
    """One mesh's own modifiers applied by Blender to the bake's skinning (see the module docstring)."""

    def __init__(self, part: MeshPart, names: list[str]):
        self.obj, self.part = part.obj, part
        self.names = names
        self.group: bpy.types.GeometryNodeTree | None = None
        self.modifier: bpy.types.Modifier | None = None
        self.attribute = ""
        self.active_attribute = -1

    def skinning_modifiers(self) -> list[str]:
        """What the bake hides on this mesh: the Armature modifier and every modifier after it that is
        not one of the user's it applies."""
        mods = list(self.obj.modifiers)
        first = mods.index(stack.armature_modifier(self.obj, self.part.modifier))
        return [m.name for m in mods[first:] if m.name not in self.names]

    def set_up(self) -> None:
        """Add the input attribute, the node group and its modifier before the first of the user's."""
        mesh = self.obj.data
        self.active_attribute = mesh.attributes.active_index
        name, n = INPUT_ATTRIBUTE, 0
        while name in mesh.attributes:  # a name of the user's is never written over
            n += 1
            name = f"{INPUT_ATTRIBUTE}.{n:03d}"
        self.attribute = name
        bridge.set_attribute(mesh, name, "FLOAT_VECTOR", "POINT", "vector", bridge.vertex_positions(mesh))
        self.group = _input_group(name)
        self.modifier = self.obj.modifiers.new(".hybrid_skin_bake_input", "NODES")
        self.modifier.node_group = self.group
        mods = list(self.obj.modifiers)
        with bpy.context.temp_override(object=self.obj):
            self.obj.modifiers.move(len(mods) - 1, mods.index(self.obj.modifiers[self.names[0]]))

    def apply(self, positions: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The user's modifiers applied to ``positions`` (the skinning, mesh space): positions ``(N, 3)``
        and corner normals ``(C, 3)`` of the result, as Blender evaluates it."""
        mesh = self.obj.data
        with bind.own_edits([self.obj]):  # the bake's own attribute: no edit of what a bind read
            values = np.ascontiguousarray(positions, dtype=np.float32).ravel()
            mesh.attributes[self.attribute].data.foreach_set("vector", values)
            mesh.update_tag()
        evaluated = self.obj.evaluated_get(bpy.context.evaluated_depsgraph_get()).data
        return bridge.vertex_positions(evaluated), bridge.corner_normals(evaluated)

    def remove(self) -> None:
        """Take away everything :meth:`set_up` added; the mesh's attributes as they were."""
        if self.modifier is not None:
            self.obj.modifiers.remove(self.modifier)
            self.modifier = None
        if self.group is not None:
            bpy.data.node_groups.remove(self.group)
            self.group = None
        mesh = self.obj.data
        if self.attribute and self.attribute in mesh.attributes:
            mesh.attributes.remove(mesh.attributes[self.attribute])
        if 0 <= self.active_attribute < len(mesh.attributes):
            mesh.attributes.active_index = self.active_attribute


def _input_group(attribute: str) -> bpy.types.GeometryNodeTree:
    """Geometry in, every vertex set to the point attribute ``attribute``, geometry out."""
    group = bpy.data.node_groups.new(".hybrid_skin_bake_input", "GeometryNodeTree")
    group.interface.new_socket("Geometry", in_out="INPUT", socket_type="NodeSocketGeometry")
    group.interface.new_socket("Geometry", in_out="OUTPUT", socket_type="NodeSocketGeometry")
    nodes, links = group.nodes, group.links
    source, sink = nodes.new("NodeGroupInput"), nodes.new("NodeGroupOutput")
    read = nodes.new("GeometryNodeInputNamedAttribute")
    read.data_type = "FLOAT_VECTOR"
    read.inputs["Name"].default_value = attribute
    place = nodes.new("GeometryNodeSetPosition")
    links.new(source.outputs[0], place.inputs["Geometry"])
    links.new(read.outputs["Attribute"], place.inputs["Position"])
    links.new(place.outputs["Geometry"], sink.inputs[0])
    return group
