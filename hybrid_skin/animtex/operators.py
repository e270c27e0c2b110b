"""Animation texture operators: the bake, the crowd preview of the last bake, and skinning rigid parts.

``hybrid_skin.bake_animation_texture`` bakes the active action (or listed / all compatible actions, as
clips of one texture) of the active armature for its skinned meshes, or of the active skinned mesh.
From the UI it asks for its settings, then runs modally with a progress bar (Esc cancels, nothing is
written); ``execute`` (scripts, command line) runs it to the end at once. Undoable: the only scene
change is the per-vertex data written on the meshes. ``hybrid_skin.crowd_preview`` shows or hides a
crowd of the last bake (:mod:`.crowd`). ``hybrid_skin.skin_rigid_parts`` skins the meshes parented to
bones of the armature so that bakes carry them (:mod:`..rig.rigid`; undoable). The panels that offer
them are :mod:`.panels`.
"""

from __future__ import annotations

import bpy
from bpy.props import (
    BoolProperty,
    CollectionProperty,
    EnumProperty,
    FloatProperty,
    IntProperty,
    StringProperty,
)

from ..draw.shaders import ShaderCompileError
from ..errors import HybridSkinError
from ..operator_base import GuardedOperator, JobOperator, in_modes, refuse
from ..rig import rigid
from . import bake, crowd, dialog
from . import options as options_module
from .scene import compatible_actions, find_target

ACTION_SOURCES = [
    ("ACTIVE", "Active Action", "The armature's active action"),
    ("LISTED", "Chosen Actions", "The actions ticked in the list, as clips of one texture"),
    ("ALL", "All Actions", "Every action that animates this armature's bones, as clips of one texture"),
]


class HybridSkinAnimtexAction(bpy.types.PropertyGroup):
    """One action offered to the bake"""

    name: StringProperty(name="Action", description="The action's name")
    use: BoolProperty(name="Bake", default=True, description="Bake this action as a clip of the texture")


def bake_target(context) -> bpy.types.Object | None:
    """The active armature or mesh (what a bake starts from), else None."""
    obj = context.active_object
    return obj if obj is not None and obj.type in {"ARMATURE", "MESH"} else None


class HYBRID_SKIN_OT_bake_animation_texture(JobOperator, bpy.types.Operator):
    """Bake actions into a vertex animation texture (VAT) or a bone animation texture (PNG/EXR + JSON) for
    GPU-instanced crowds in game engines"""

    bl_idname = "hybrid_skin.bake_animation_texture"
    bl_label = "Bake Animation Texture (VAT)"
    bl_options = {"REGISTER", "UNDO"}

    # The bake's own options come from their one declaration (options.BakeOptions), added below the class.
    action_source: EnumProperty(
        name="Actions", items=ACTION_SOURCES, default="ACTIVE", description="Which actions become clips"
    )
    actions: CollectionProperty(
        type=HybridSkinAnimtexAction, description="The armature's actions, ticked to bake (Chosen Actions)"
    )
    use_modal: BoolProperty(
        options={"HIDDEN", "SKIP_SAVE"}, description="Run with a progress bar and Esc (set by the dialog)"
    )

    job_label = "baking animation texture"
    cancelled = "Animation texture bake cancelled: nothing was written"

    @classmethod
    def poll(cls, context):
        if bake_target(context) is None:
            return refuse(cls, "Select an armature, or a mesh an Armature modifier deforms, to bake")
        return in_modes(cls, context, "bake", ("OBJECT", "POSE"))

    def _action_names(self, context) -> list[str] | None:
        if self.action_source == "LISTED":
            return [item.name for item in self.actions if item.use] or None
        if self.action_source == "ALL":
            arm, _meshes = find_target(bake_target(context), context.scene)
            return [a.name for a in compatible_actions(arm)] or None
        return None

    def make_job(self, context) -> bake.TextureBake:
        names = options_module.operator_properties()
        options = bake.BakeOptions(**{name: getattr(self, name) for name in names})
        if self.action_source == "LISTED" and not any(item.use for item in self.actions):
            raise HybridSkinError("No action is ticked: tick at least one in the list")
        return bake.TextureBake(context, bake_target(context), options, self._action_names(context))

    def job_done(self, context, job) -> set[str]:
        result = job.result
        for warning in result.warnings:
            self.report({"WARNING"}, warning)
        overall = result.report["overall"]
        removed = ""
        if result.removed:  # the previous bake's, which no longer matched: said, never silently
            removed = f"; removed the previous bake's {', '.join(result.removed)}, which no longer matched"
        self.report(
            {"INFO"},
            f"Baked {len(result.texture.clips)} clip(s) to {result.image_path}: max error "
            f"{overall['max']:.3g} ({overall['max_percent']:.3g}% of the bounding box){removed}",
        )
        return {"FINISHED"}

    def execute(self, context):
        if self.use_modal and context.window is not None:
            return self.start_job(context)  # from the dialog: progress, Esc
        return self.run_job(context)

    def invoke(self, context, event):
        target = bake_target(context)
        arm, _meshes = find_target(target, context.scene)
        active = arm.animation_data.action if arm.animation_data else None
        chosen = {item.name: item.use for item in self.actions}
        self.actions.clear()
        for action in compatible_actions(arm):
            item = self.actions.add()
            item.name = action.name
            item.use = chosen.get(action.name, action == active)
        self.use_modal = True
        return context.window_manager.invoke_props_dialog(self, width=560)

    def draw(self, context):
        dialog.draw(self, context)

HYBRID_SKIN_OT_bake_animation_texture.__annotations__.update(options_module.operator_properties())


class HYBRID_SKIN_OT_crowd_preview(GuardedOperator, bpy.types.Operator):
    """Show or hide a crowd of the last animation texture (VAT) bake in the viewport, drawn from the
    textures with one instanced draw call, as a game engine would"""

    bl_idname = "hybrid_skin.crowd_preview"
    bl_label = "Animation Texture Crowd Preview"

    count: IntProperty(
        name="Instances", description="How many copies of the character to draw (one draw call)",
        default=1000, min=1, soft_max=10000, max=100000,
    )  # fmt: skip
    spacing: FloatProperty(
        name="Spacing",
        subtype="DISTANCE",
        default=0.0,
        min=0.0,
        description="Distance between neighbours on the grid (0: from the character's size)",
    )

    @classmethod
    def poll(cls, context):
        if crowd.is_active() or context.active_object is not None:
            return True
        return refuse(cls, "Select the armature or mesh whose last animation texture bake to show")

    def invoke(self, context, event):
        if crowd.is_active():
            return self.execute(context)  # hides it: nothing to choose
        return context.window_manager.invoke_props_dialog(self, width=300)

    def execute(self, context):
        if crowd.is_active():
            crowd.hide()
            self.report({"INFO"}, "Crowd preview off")
            return {"FINISHED"}
        try:
            preview = crowd.preview_for(context.active_object, context.scene, self.count, self.spacing)
        except (ShaderCompileError, ValueError) as err:  # a message meant for the user, as it is
            raise HybridSkinError(str(err)) from err
        crowd.show(preview)
        self.report({"INFO"}, f"Crowd preview: {preview.count:,} instances")
        return {"FINISHED"}


class HYBRID_SKIN_OT_skin_rigid_parts(GuardedOperator, bpy.types.Operator):
    """Skin the meshes parented to bones of this armature so that animation textures carry them: each
    gets a vertex group of weight 1 and an Armature modifier, its placement goes into its mesh (as Apply
    Transforms does), and it moves exactly as before"""

    bl_idname = "hybrid_skin.skin_rigid_parts"
    bl_label = "Skin Rigid Parts to Their Bones"
    bl_options = {"REGISTER", "UNDO"}

    @classmethod
    def poll(cls, context):
        if rigid.armature_of(context.active_object) is None:
            return refuse(cls, "Select an armature, or a mesh it deforms, whose rigid parts to skin")
        return in_modes(cls, context, "skin rigid parts")

    def execute(self, context):
        arm = rigid.armature_of(context.active_object)
        if arm is None:
            raise HybridSkinError("Select an armature, or a mesh it deforms, to skin its rigid parts")
        parts = rigid.rigid_parts(arm, context.scene.objects)
        if not parts:
            self.report({"INFO"}, f"No mesh is parented to a bone of '{arm.name}': nothing to skin")
            return {"CANCELLED"}
        done, refused = [], []
        for part in parts:
            try:
                rigid.check(part, arm)
                done.append(part)
            except HybridSkinError as err:
                refused.append(str(err))
        placement = rigid.reference_placement(arm, context.scene.objects)  # before any part is skinned
        for part in done:
            rigid.skin_rigid_part(part, arm, placement)
        for reason in refused:
            self.report({"WARNING"}, reason)
        if not done:
            raise HybridSkinError(refused[0])
        self.report({"INFO"}, f"Skinned {len(done)} rigid part(s) to the bones of '{arm.name}'")
        return {"FINISHED"}


classes = (
    HybridSkinAnimtexAction,
    HYBRID_SKIN_OT_bake_animation_texture,
    HYBRID_SKIN_OT_crowd_preview,
    HYBRID_SKIN_OT_skin_rigid_parts,
)


def register() -> None:
    for cls in classes:
        bpy.utils.register_class(cls)


def unregister() -> None:
    for cls in reversed(classes):
        bpy.utils.unregister_class(cls)
