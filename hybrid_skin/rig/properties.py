"""``Object.hybrid_skin``: per-object settings, saved in the .blend and animatable."""

from __future__ import annotations

import bpy
from bpy.props import (
    BoolProperty,
    EnumProperty,
    FloatProperty,
    IntProperty,
    PointerProperty,
    StringProperty,
)

from . import setup
from .factor import DEFAULT_FACTOR

# Blender stores an enum property in .blend files by the number of its item, not by its identifier:
# every item has an explicit number that never changes, so files saved by earlier versions keep their
# settings when an identifier is renamed (Display "CPU" became "EVALUATED", still number 1).
FACTOR_MODES = [
    ("GLOBAL", "Global", "One deform factor for the whole object", 0),
    ("VERTEX_GROUP", "Vertex Group", "The vertex group's weights scale the deform factor per vertex", 1),
    ("AUTO", "Auto", "Per-vertex factor from each joint's twist and swing, every frame", 2),
]
# Auto's profiles (core/autofactor.py). Files saved before this setting existed store no value for it; an
# object saved in factor mode Auto then reads "JOINT", the Auto it was saved with (see _get_auto_profile).
AUTO_PROFILES = [
    ("ROUND", "Round", "Keeps a bent joint round: DQS at the joint, LBS further out, as far as the bend "
     "needs; twist pulls towards DQS", 0),
    ("KEEP_VOLUME", "Keep Volume", "Like Round, wider: the outside of a bent joint never thins and the limb "
     "keeps about DQS's volume (it bulges more)", 1),
    ("JOINT", "Per Joint (0.1)", "The Auto of version 0.1: one factor per joint, 0.55 for a bend and 1 for a "
     "twist (files saved with it keep it)", 2),
]
_AUTO_PROFILE_NUMBERS = {item[0]: item[3] for item in AUTO_PROFILES}
#: ``auto_profile_stored`` of an object whose Auto profile was never chosen or stamped.
_NOT_CHOSEN = -1
DISPLAYS = [
    (
        "EVALUATED",
        "Evaluated",
        "Blender's own modifiers compute the exact hybrid: the viewport, renders, exporters, Convert, "
        "clothing, instances, ray casts, scripts and other machines (the file holds it) all see it",
        1,
    ),
    (
        "GPU",
        "GPU Preview",
        "Faster playback of heavy meshes: the add-on's shaders draw the hybrid from the pose alone. "
        "Blender's exact stack takes over whenever something reads the mesh, another modifier follows, or "
        "you leave Object Mode; exporters, Convert, ray casts and scripts run while it draws see the rest "
        "pose",
        0,
    ),
]


def _settings_changed(self, context) -> None:
    setup.settings_changed(self.id_data)


def _factor_mode_changed(self, context) -> None:
    """Choosing Auto now stamps the default profile, so the file saved next records it: only objects of
    files saved before profiles existed are in Auto with no profile stored (they read "JOINT")."""
    if self.factor_mode == "AUTO" and self.auto_profile_stored == _NOT_CHOSEN:
        self.auto_profile_stored = _AUTO_PROFILE_NUMBERS["ROUND"]
    _settings_changed(self, context)


def _get_auto_profile(self) -> int:
    stored = self.auto_profile_stored
    if stored != _NOT_CHOSEN:
        return stored
    old_auto = self.factor_mode == "AUTO"  # saved in Auto by a version without profiles
    return _AUTO_PROFILE_NUMBERS["JOINT" if old_auto else "ROUND"]


def _set_auto_profile(self, value: int) -> None:
    self.auto_profile_stored = value


class HybridSkinSettings(bpy.types.PropertyGroup):
    """Hybrid Skin settings of a mesh object"""

    def keep_auto_profile(self) -> None:
        """Store the profile read now if none is stored: its keys may switch the Factor Mode between Auto and
        another mode, and the profile must not follow the mode (an object in Auto with no profile stored
        reads Per Joint, as files saved before profiles existed)."""
        if self.auto_profile_stored == _NOT_CHOSEN:
            self.auto_profile_stored = _AUTO_PROFILE_NUMBERS[self.auto_profile]

    enabled: BoolProperty(
        name="Enabled", description="Deform with Hybrid Skin", default=False, update=_settings_changed
    )
    deform_factor: FloatProperty(
        name="Deform Factor",
        description="Blend between linear blend skinning (0) and dual quaternion skinning (1)",
        default=DEFAULT_FACTOR,
        min=0.0,
        max=1.0,
        subtype="FACTOR",
        update=_settings_changed,
    )
    factor_mode: EnumProperty(
        name="Factor Mode",
        description="Where each vertex's deform factor comes from: one number, a vertex group, or the pose",
        items=FACTOR_MODES,
        default="GLOBAL",
        update=_factor_mode_changed,
    )
    auto_profile: EnumProperty(
        name="Auto Profile",
        description="How the Auto factor spreads over a joint",
        items=AUTO_PROFILES,
        get=_get_auto_profile,
        set=_set_auto_profile,
        update=_settings_changed,
    )
    auto_profile_stored: IntProperty(
        name="Auto Profile Number",
        description="The chosen Auto profile's number; -1: never chosen (read by Auto Profile)",
        default=_NOT_CHOSEN,
        options={"HIDDEN"},
    )
    factor_vertex_group: StringProperty(
        name="Factor Group",
        description="Vertex group whose weights scale the deform factor",
        update=_settings_changed,
    )
    display: EnumProperty(
        name="Display",
        description=(
            "How the viewport shows the hybrid: Blender's own modifiers, or the add-on's faster preview"
        ),
        items=DISPLAYS,
        default="EVALUATED",
        update=_settings_changed,
    )
    modifier_name: StringProperty(
        name="Armature Modifier", description="The Armature modifier Hybrid Skin follows"
    )
    modifier_uid: IntProperty(
        name="Armature Modifier Id",
        description="Persistent id of the followed Armature modifier (survives renames; 0: follow by name)",
        options={"HIDDEN"},
    )
    bake_state: StringProperty(
        name="Bake State",
        description="What the last bake added, removed exactly by Clear Bake",
        options={"HIDDEN"},
    )
    saved_state: StringProperty(
        name="Saved State",
        description="The object's own settings, restored exactly on remove",
        options={"HIDDEN"},
    )


classes = (HybridSkinSettings,)


def register() -> None:
    for cls in classes:
        bpy.utils.register_class(cls)
    bpy.types.Object.hybrid_skin = PointerProperty(type=HybridSkinSettings)


def unregister() -> None:
    del bpy.types.Object.hybrid_skin
    for cls in reversed(classes):
        bpy.utils.unregister_class(cls)
