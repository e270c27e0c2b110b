"""What the Mix tree needs for Auto on one object, kept on its mesh: written at set-up and when the bind
changes, and, where the tree cannot compute Auto, the factors of each evaluation.

* :func:`source`: how the object's Mix tree finds Auto: :class:`.trees.auto_tree.FromPose` (Blender
  evaluates it from Bone Info nodes, 5.2+) or :class:`.trees.auto_tree.FromAttribute` (the add-on writes
  the factors at each evaluation; the reason is kept for the panel and the save message).
* :func:`write_vertex_data`: the bind's influences (palette index and weight per slot), total weight, sum
  over pairs and squared rest distance, as hidden point attributes (``.hybrid_skin_*``).
* :func:`write_factors`: Auto's factors of this evaluation into :data:`.trees.auto_tree.AUTO_ATTRIBUTE`
  (the attribute path), one bulk write.
"""

from __future__ import annotations

import hashlib

import bpy
import numpy as np

from .. import bridge
from ..core import autofactor
from ..errors import HybridSkinError
from . import bbone_settings, bind, stack
from .checks import armature_in_edit_mode
from .mesh_bind import TRANSFORM_TOLERANCE, MeshBind, PosedBind, target_to_armature
from .state import rig_state
from .trees import auto_tree, stack_trees

__all__ = [
    "bbones_stale", "remove_attributes", "rest_can_change", "rest_digest", "rest_stale", "source",
    "write_factors", "write_vertex_data",
]


def source(
    obj: bpy.types.Object, bound: MeshBind | None, depsgraph: bpy.types.Depsgraph | None = None
) -> tuple[auto_tree.FromPose | auto_tree.FromAttribute, str]:
    """``(source, reason)``: the tree's Auto, and why it is the attribute path ("" for the tree).
    ``depsgraph``: the evaluation whose B-bone settings the tree keeps (default: the context's, brought up
    to date; a handler passes its own)."""
    if bound is None:
        return auto_tree.FromAttribute(), "the mesh could not be bound"
    envelopes = bool(bound.mask[2] or bound.bones.envelope_multiply.any())
    reason = auto_tree.expressible(envelopes)
    if reason is not None:
        return auto_tree.FromAttribute(), reason
    mod = bound.modifier(obj)
    live_rest = rest_can_change(obj, mod)
    bbones, reason = _bbones(obj, bound, live_rest, depsgraph)
    if reason is not None:
        return auto_tree.FromAttribute(), auto_tree.expressible(envelopes, reason)
    placement = np.asarray(bound.bound_target_to_armature, dtype=np.float64)
    return (
        auto_tree.FromPose(
            bones=tuple(bound.bones.names),
            parents=tuple(int(p) for p in bound.palette_parents),
            influences=int(bound.binding.weights.shape[1]),
            placement=tuple(float(x) for x in placement.ravel()),
            live_rest=live_rest,
            version=stack_trees.TREE_VERSION,
            bbones=bbones,
            digests=_digests(obj, bound, bbones),
            rest_digest=rest_digest(mod.object),
        ),
        "",
    )


def rest_can_change(obj: bpy.types.Object, mod: bpy.types.Modifier) -> bool:
    """The shape the Armature modifier ``mod`` receives can differ from the one bound: the mesh has shape
    keys, or a modifier shown above ``mod``. Auto's tree then computes the rest distances itself."""
    above = stack.user_modifiers(obj)
    return obj.data.shape_keys is not None or any(m.show_viewport for m in above[: above.index(mod)])


def rest_digest(arm: bpy.types.Object | None) -> str:
    """A digest of the rig's rest pose: every bone's name, rest matrix and B-bone segments (bulk reads)."""
    if arm is None or arm.type != "ARMATURE":
        return ""
    bones = arm.data.bones
    segments = np.empty(len(bones), dtype=np.int32)
    bones.foreach_get("bbone_segments", segments)
    names = "\0".join(b.name for b in bones).encode()
    return hashlib.sha1(bind.bone_rest_key(arm) + segments.tobytes() + names).hexdigest()


def rest_stale(obj: bpy.types.Object, digests: dict[int, str]) -> bool:
    """``obj``'s Auto tree was built for a rest pose its rig no longer has: bones moved, renamed, added or
    removed in Edit Mode (read once it is left), or their B-bone segments changed since. After each edit of
    the rig (not during playback): O(bones), 0.8 ms for 900 bones here, once per rig per evaluation
    (``digests``: the rigs' digests by ``session_uid``, filled here)."""
    tree = _mix_tree(obj)
    kept = tree.get(auto_tree.REST_DIGEST, "") if tree is not None else ""
    arm = stack.followed_armature(obj) if kept else None
    if arm is None or armature_in_edit_mode(arm):
        return False
    if arm.session_uid not in digests:
        digests[arm.session_uid] = rest_digest(arm)
    return digests[arm.session_uid] != kept


def _mix_tree(obj: bpy.types.Object) -> bpy.types.NodeTree | None:
    mix = next((m for m in obj.modifiers if stack.is_part(m, "mix")), None)
    return getattr(mix, "node_group", None)


def _bbones(obj: bpy.types.Object, bound: MeshBind, live_rest: bool, depsgraph) -> tuple[tuple, str | None]:
    """The bind's B-bones for the tree (``bbone_settings.read``), or why the tree cannot follow them.

    The tree keeps the bind's split of each vertex between two B-bone segment joints (Blender makes it
    from where the vertex sits along the B-bone at rest, in armature space): it holds while the mesh's
    rest points and its place on the armature cannot change."""
    if not (bound.bones.segments > 1).any():
        return (), None
    arm = bound.armature(obj)
    if _split_matters(bound):
        if live_rest:
            return (), (
                "shape keys or modifiers above the Armature modifier move the rest points, which changes how "
                "they split between B-bone segments; the node tree keeps the bind's split"
            )
        reason = bbone_settings.placement_reason(obj, arm)
        if reason:
            return (), reason
    segments = tuple(int(s) for s in bound.bones.segments)
    evaluated = arm.evaluated_get(depsgraph) if depsgraph is not None else None
    return bbone_settings.read(arm, tuple(bound.bones.names), segments, evaluated)


def _split_matters(bound: MeshBind) -> bool:
    """Whether a vertex is weighted to a B-bone (Auto needs a rig's B-bones for its chains anyway)."""
    owner = np.repeat(np.arange(bound.bones.count), bound.bones.virtual_counts)
    binding = bound.binding
    return bool(((bound.bones.segments[owner[binding.bone_indices]] > 1) & (binding.weights > 0)).any())


def _digests(obj: bpy.types.Object, bound: MeshBind, bbones: tuple) -> tuple[str, str]:
    if not bbones:
        return ("", "")
    return bbone_settings.values_digest(bound.armature(obj)), hashlib.sha1(repr(bbones).encode()).hexdigest()


def bbones_stale(obj: bpy.types.Object, depsgraph: bpy.types.Depsgraph, animation: bool) -> bool:
    """Whether ``obj``'s Auto tree keeps B-bone settings its rig no longer has: edited since the tree was
    built (a bulk read of the rig's settings: cheap enough after each edit of the rig), the mesh moved on
    the armature (its split between segments follows), or, after an edit of the animation
    (``animation``), keyed or driven since (the B-bones read again)."""
    built = rig_state().tree_sources.get(obj.session_uid)
    if built is not None and not getattr(built, "bbones", ()):
        return False  # built in this session with no B-bone settings to keep (a pose edit costs no more)
    tree = _mix_tree(obj)
    kept = tuple(tree.get(key, "") for key in auto_tree.BBONE_DIGESTS) if tree is not None else ("", "")
    mod = stack.find_armature_modifier(obj, stack.followed_modifier_name(obj))
    if not kept[0] or mod is None or mod.object is None or mod.object.type != "ARMATURE":
        return False
    if bbone_settings.values_digest(mod.object) != kept[0]:
        return True
    try:
        bound = bind.cached_bind(obj, depsgraph, check_rest=False)
    except HybridSkinError:
        return False  # the setup says so already
    placement = target_to_armature(obj.evaluated_get(depsgraph), mod.object.evaluated_get(depsgraph))
    if not np.allclose(placement, bound.bound_target_to_armature, rtol=0.0, atol=TRANSFORM_TOLERANCE):
        bound.posed(depsgraph)  # the split between B-bone segments for the mesh's new place
        return True
    if not animation:
        return False
    source_, _reason = source(obj, bound, depsgraph)
    return not isinstance(source_, auto_tree.FromPose) or source_.digests[1] != kept[1]


def write_vertex_data(obj: bpy.types.Object, bound: MeshBind, source_: auto_tree.FromPose) -> list[str]:
    """Store the per-vertex data ``source_`` reads; returns the attribute names written."""
    mesh = obj.data
    binding = bound.binding
    names = []
    for k in range(source_.influences):
        bone, weight = auto_tree.influence_attributes(k)
        bridge.set_attribute(mesh, bone, "INT", "POINT", "value", binding.bone_indices[:, k].astype(np.int32))
        bridge.set_attribute(
            mesh, weight, "FLOAT", "POINT", "value", binding.weights[:, k].astype(np.float32)
        )
        names += [bone, weight]
    total, pairs = autofactor.weight_sums(np.ascontiguousarray(binding.weights.T, dtype=np.float32))
    r2 = bound.auto_rest(bound.bound_target_to_armature)[:, 3]
    for name, values in (
        (auto_tree.TOTAL_ATTRIBUTE, total),
        (auto_tree.PAIRS_ATTRIBUTE, pairs),
        (auto_tree.R2_ATTRIBUTE, r2),
    ):
        bridge.set_attribute(mesh, name, "FLOAT", "POINT", "value", np.asarray(values, dtype=np.float32))
        names.append(name)
    tree = _mix_tree(obj)  # none while the object is set up: the tree is built after, with the digest
    if tree is not None and tree.get(auto_tree.REST_DIGEST, "") != source_.rest_digest:
        tree[auto_tree.REST_DIGEST] = source_.rest_digest
    return names


def write_factors(obj: bpy.types.Object, posed: PosedBind) -> None:
    """Auto's factors of ``posed`` into the attribute the attribute path's tree reads."""
    values = np.asarray(posed.auto_factors(), dtype=np.float32)
    bridge.set_attribute(obj.data, auto_tree.AUTO_ATTRIBUTE, "FLOAT", "POINT", "value", values)


def remove_attributes(mesh: bpy.types.Mesh, names) -> None:
    """Remove the named point attributes Hybrid Skin stored (those still there)."""
    for name in names:
        attribute = mesh.attributes.get(name)
        if attribute is not None:
            mesh.attributes.remove(attribute)
