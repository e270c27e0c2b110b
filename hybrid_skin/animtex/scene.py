"""What an animation texture bake reads from the scene, and the scene state it changes and puts back.

Owns: finding the target (an armature and the meshes it deforms, or one skinned mesh), each mesh's data
at bake start (:class:`MeshPart`), the actions to bake and their clips, and :class:`AnimationState`,
which plays one action at a time on the armature (NLA off; bones the action does not key keep the pose
the scene has at bake start, or rest with ``unkeyed_at_rest``), hides the baked meshes' deformation
while sampling, and restores the action, slot, NLA settings, pose, the armature object's
transform (an action may key it: root motion), modifier visibility, the scene frame and Time Stretching
afterwards (a clip holds the action's own frames: stretching is set to 1:1 while sampling).
The samples taken at each frame are :class:`..core.animtex.samples.FrameSample`; the baker
(:mod:`.bake`) orchestrates.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import bpy
import numpy as np

from .. import bridge
from ..core.animtex import Clip
from ..errors import HybridSkinError
from ..rig import checks, rigid, stack
from ..rig.bake_record import unreadable

#: Pose channels and their rest values. Each clip starts from the pose the scene had when the bake
#: started (what Blender shows when the user plays that action: channels it does not key keep their
#: values), or from rest when the bake asks for it; never from whatever the previous clip left.
POSE_CHANNELS = {
    "location": (0.0, 0.0, 0.0),
    "rotation_quaternion": (1.0, 0.0, 0.0, 0.0),
    "rotation_euler": (0.0, 0.0, 0.0),
    "rotation_axis_angle": (0.0, 0.0, 1.0, 0.0),
    "scale": (1.0, 1.0, 1.0),
}

#: Object transform channels of the armature an action may key (root motion), saved and put back.
OBJECT_CHANNELS = (
    "location",
    "rotation_euler",
    "rotation_quaternion",
    "rotation_axis_angle",
    "scale",
    "delta_location",
    "delta_rotation_euler",
    "delta_rotation_quaternion",
    "delta_scale",
)


@dataclass
class MeshPart:
    """One baked mesh: its data at bake start and its slice of the texture's items."""

    obj: bpy.types.Object
    modifier: str
    base: np.ndarray  # (N, 3) the mesh's own vertex coordinates
    normals: np.ndarray  # (N, 3) its vertex normals
    start: int  # first item of this mesh in a VERTEX texture
    bone_indices: np.ndarray | None = None  # (N, 4) palette indices (bone kinds)
    bone_weights: np.ndarray | None = None  # (N, 4)
    auto_rest: np.ndarray | None = None  # (N, 4) Auto rest data (bone kinds carrying Auto)

    @property
    def stop(self) -> int:
        return self.start + len(self.base)


def object_settings(obj: bpy.types.Object):
    """The object's Hybrid Skin settings, or ``None`` where the add-on's properties are not registered."""
    return getattr(obj, "hybrid_skin", None)


def _modifier_name(obj: bpy.types.Object) -> str:
    """The Armature modifier Hybrid Skin follows (renames included); "" (the first) without the add-on."""
    return stack.followed_modifier_name(obj) if object_settings(obj) is not None else ""


def _uses(obj: bpy.types.Object, arm: bpy.types.Object) -> bool:
    return obj.type == "MESH" and stack.find_armature_modifier(obj, armature=arm) is not None


def find_target(obj: bpy.types.Object | None, scene: bpy.types.Scene) -> tuple[bpy.types.Object, list]:
    """``(armature, meshes)`` for the active object: an armature and the meshes it deforms, or a mesh."""
    if obj is not None and obj.type == "ARMATURE":
        meshes = sorted((o for o in scene.objects if _uses(o, obj)), key=lambda o: o.name)
        if not meshes:
            raise HybridSkinError(
                f"Armature '{obj.name}' deforms no mesh in this scene: "
                "parent a mesh to it with an Armature modifier"
            )
        return obj, meshes
    if obj is None or obj.type != "MESH":
        raise HybridSkinError("Select an armature or a skinned mesh to bake animation textures")
    mod = stack.armature_modifier(obj, _modifier_name(obj))
    return checks.validate(obj, mod), [obj]


def rigid_warning(arm: bpy.types.Object, scene: bpy.types.Scene) -> str | None:
    """The sentence for meshes that follow a bone of ``arm`` rigidly and so are not in the bake, if any."""
    parts = rigid.rigid_parts(arm, scene.objects)
    if not parts:
        return None
    names = ", ".join(f"'{p.obj.name}'" for p in parts[:4])
    if len(parts) > 4:
        names += f" and {len(parts) - 4} more"
    return (
        f"{len(parts)} mesh(es) parented to bones of '{arm.name}' are not in the bake ({names}): no Armature "
        "modifier deforms them. Skin Rigid Parts (Animation Texture panel) skins them without moving them"
    )


def mesh_parts(meshes: list[bpy.types.Object], *, single_user: bool) -> list[MeshPart]:
    """Each mesh's coordinates, normals, modifier and mask group, validated; with ``single_user``
    (mesh data will be written) no two objects may share mesh data."""
    parts, start, data = [], 0, {}
    for obj in meshes:
        if single_user and obj.data in data:
            raise HybridSkinError(
                f"'{obj.name}' and '{data[obj.data]}' share mesh data '{obj.data.name}': make it "
                "single-user (Object ▸ Relations ▸ Make Single User) so each gets its own texel data"
            )
        data[obj.data] = obj.name
        settings = object_settings(obj)
        why = unreadable(settings.bake_state) if settings is not None and settings.bake_state else None
        if why is not None:
            raise HybridSkinError(
                f"'{obj.name}' holds a Hybrid Skin bake whose record this build cannot read ({why}): which "
                "of its shape keys that bake added is unknown, so they cannot be told from the mesh's own; "
                "it is left as it was (bake the other meshes, or open the file with the build that baked it)"
            )
        modifier = _modifier_name(obj)
        checks.validate(obj, stack.armature_modifier(obj, modifier))
        base, normals = bridge.vertex_positions(obj.data), bridge.vertex_normals(obj.data)
        parts.append(MeshPart(obj, modifier, base, normals, start))
        start += len(base)
    return parts


# -------------------------------------------------------------------------------------- actions
def _action_data_paths(action: bpy.types.Action) -> Iterator[str]:
    layers = getattr(action, "layers", None)
    if layers:  # slotted actions (Blender >= 4.4)
        for layer in layers:
            for strip in layer.strips:
                for bag in strip.channelbags:
                    yield from (fc.data_path for fc in bag.fcurves)
    else:
        yield from (fc.data_path for fc in getattr(action, "fcurves", ()))


def compatible_actions(arm: bpy.types.Object) -> list[bpy.types.Action]:
    """Actions that animate at least one pose bone of ``arm``, by name."""
    prefixes = tuple(f'pose.bones["{b.name}"]' for b in arm.pose.bones)
    return [a for a in bpy.data.actions if any(p.startswith(prefixes) for p in _action_data_paths(a))]


def resolve_actions(arm: bpy.types.Object, names: Sequence[str] | None) -> list[bpy.types.Action]:
    """The named actions, or the armature's active action when ``names`` is empty."""
    if names:
        missing = [n for n in names if n not in bpy.data.actions]
        if missing:
            raise HybridSkinError(f"No action named {missing}: check the names (they are case-sensitive)")
        return [bpy.data.actions[n] for n in dict.fromkeys(names)]
    anim = arm.animation_data
    if anim is None or anim.action is None:
        raise HybridSkinError(
            f"Armature '{arm.name}' has no active action: pick one in the Dope Sheet ▸ Action editor "
            "or list the actions to bake"
        )
    return [anim.action]


# ------------------------------------------------------------------------------- clips, frames
def clip_for(action: bpy.types.Action, fps: float, step: float) -> Clip:
    start, end = (float(x) for x in action.frame_range)
    loop = bool(action.use_frame_range and action.use_cyclic)
    return Clip(action.name, start, end, fps=fps, loop=loop, frame_step=float(step))


# ---------------------------------------------------------------------------- animation state
class AnimationState:
    """The armature's animation settings, pose channels and the scene frame, put back by :meth:`restore`."""

    def __init__(self, scene: bpy.types.Scene, arm: bpy.types.Object, *, unkeyed_at_rest: bool = False):
        self.scene, self.arm, self.unkeyed_at_rest = scene, arm, unkeyed_at_rest
        self.frame = (scene.frame_current, scene.frame_subframe)
        self.time_stretching = (scene.render.frame_map_old, scene.render.frame_map_new)
        anim = arm.animation_data
        if anim is not None and anim.use_tweak_mode:
            raise HybridSkinError(f"'{arm.name}' is in NLA tweak mode: leave tweak mode before baking")
        self.had_anim = anim is not None
        keys = (
            "action",
            "action_slot",
            "use_nla",
            "action_influence",
            "action_blend_type",
            "action_extrapolation",
        )
        self.saved = {k: getattr(anim, k) for k in keys if anim is not None and hasattr(anim, k)}
        self.pose = {k: bridge.pose_channels(arm, k, len(v)) for k, v in POSE_CHANNELS.items()}
        # An action may key the armature object itself (root motion): each clip starts from, and the
        # bake ends with, the user's own object transform.
        self.transform = {k: tuple(getattr(arm, k)) for k in OBJECT_CHANNELS}
        self.hidden: list[bpy.types.Modifier] = []
        self.restored = False

    def hide_deformation(
        self, meshes: Sequence[tuple[bpy.types.Object, str]], keep: dict[str, list[str]] | None = None
    ) -> None:
        """Hide each ``(mesh, armature modifier name)``'s Armature modifier and every modifier after it but
        those ``keep`` names for that mesh (its modifiers a VERTEX bake applies, :mod:`.tail`).

        The truth is the add-on's own skinning of the modifier's input, so Blender deforming the mesh
        again at every sampled frame is wasted work (as much as the sampling itself on a dense mesh);
        the pose, the object matrices and any input the skinning reads (shape keys, modifiers above)
        still evaluate. :meth:`restore` shows them again.
        """
        keep = keep or {}
        for obj, name in meshes:
            modifiers = list(obj.modifiers)
            at = modifiers.index(stack.armature_modifier(obj, name))
            for mod in modifiers[at:] + [m for m in modifiers[:at] if stack.is_part(m)]:
                if mod.show_viewport and mod.name not in keep.get(obj.name, ()):
                    mod.show_viewport = False
                    self.hidden.append(mod)

    def _set_transform(self) -> None:
        for key, value in self.transform.items():
            setattr(self.arm, key, value)

    def play(self, action: bpy.types.Action) -> None:
        anim = self.arm.animation_data or self.arm.animation_data_create()
        anim.use_nla = False
        anim.action_influence, anim.action_blend_type, anim.action_extrapolation = 1.0, "REPLACE", "HOLD"
        anim.action = action
        count = len(self.arm.pose.bones)
        if self.unkeyed_at_rest:
            bridge.set_pose_channels(self.arm, {k: np.tile(v, (count, 1)) for k, v in POSE_CHANNELS.items()})
        else:  # unkeyed channels as the scene had them, not as the previous clip left them
            bridge.set_pose_channels(self.arm, self.pose)
        self._set_transform()
        if getattr(anim, "action_slot", True) is None:  # Blender >= 4.4: pick the object slot
            slot = next((s for s in action.slots if s.target_id_type in {"OBJECT", "UNSPECIFIED"}), None)
            if slot is not None:
                anim.action_slot = slot

    def set_frame(self, frame: float) -> None:
        """Evaluate the action at its own ``frame``: Time Stretching (which evaluates animation at
        ``scene frame · old / new``) is 1:1 until :meth:`restore`."""
        render = self.scene.render
        if render.frame_map_old != render.frame_map_new:
            render.frame_map_old = render.frame_map_new
        whole = int(np.floor(frame))
        self.scene.frame_set(whole, subframe=float(frame - whole))

    def restore(self) -> None:
        if self.restored:
            return
        self.restored = True
        anim = self.arm.animation_data
        if not self.had_anim:
            if anim is not None:
                self.arm.animation_data_clear()
        elif anim is not None:
            for key, value in self.saved.items():
                if key != "action_slot" or value is not None:
                    setattr(anim, key, value)
        bridge.set_pose_channels(self.arm, self.pose)
        self._set_transform()
        for mod in self.hidden:
            mod.show_viewport = True
        render = self.scene.render
        if (render.frame_map_old, render.frame_map_new) != self.time_stretching:
            render.frame_map_old, render.frame_map_new = self.time_stretching
        self.scene.frame_set(self.frame[0], subframe=self.frame[1])


def runtime_auto_profile(
    names: Sequence[str], modes: Sequence[str], profiles: Sequence[str]
) -> tuple[str | None, str | None]:
    """The round Auto profile a bone texture carries for meshes ``names`` in factor ``modes`` with Auto
    ``profiles``, and why not (one sentence) where some mesh is in Auto but the texture plays one runtime
    factor: it carries Auto for all its meshes or none, in one round profile (Per Joint is not computed by
    runtimes). ``(None, None)`` when no mesh is in Auto."""
    if "AUTO" not in modes:
        return None, None
    plays = "the texture plays one runtime factor"
    other = next((n for n, mode in zip(names, modes) if mode != "AUTO"), None)
    if other is not None:
        auto = next(n for n, mode in zip(names, modes) if mode == "AUTO")
        return None, (
            f"'{auto}' is in factor mode Auto but '{other}' is not: a bone texture carries Auto for all "
            f"its meshes or none, so {plays} (set both to Auto, or bake with --factor-mode AUTO)"
        )
    joint = next((n for n, profile in zip(names, profiles) if profile == "JOINT"), None)
    if joint is not None:
        return None, (
            f"'{joint}' uses Auto's Per Joint (0.1) profile, which runtimes do not compute: {plays} "
            "(choose Round or Keep Volume to carry Auto)"
        )
    if len(set(profiles)) > 1:
        return None, (
            f"The meshes use different Auto profiles ({', '.join(sorted(set(profiles)))}): a bone texture "
            f"carries one, so {plays} (choose one profile for all)"
        )
    return profiles[0], None
