"""Animation texture operators: the bake, and the crowd preview of the last bake.

``hybrid_skin.bake_animation_texture`` bakes the active action (or listed / all compatible actions, as
clips of one texture) of the active armature for its skinned meshes, or of the active skinned mesh.
From the UI it asks for its settings, then runs modally with a progress bar (Esc cancels, nothing is
written); ``execute`` (scripts, command line) runs it to the end at once. Undoable: the only scene
change is the per-vertex data written on the meshes. ``hybrid_skin.crowd_preview`` shows or hides a
crowd of the last bake (:mod:`.crowd`). The panels that offer them are :mod:`.panels`.
"""

from __future__ import annotations

import time

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
from ..operator_base import GuardedOperator, ModalProgress
from . import bake, crowd
from .scene import compatible_actions, find_target

KIND_ITEMS = [
    ("VERTEX", "Vertex", "Skinned positions and normals per vertex and frame (no skinning at runtime)"),
    ("BONE_MATRIX", "Bone Matrix", "3x4 skinning matrix per bone and frame (skinning at runtime)"),
    ("BONE_DQ", "Bone Dual Quaternion", "Rotation + pivot position per bone and frame (hybrid at runtime)"),
]
PRECISION_ITEMS = [
    ("PNG8", "PNG 8-bit", "Smallest; about 1/255 of the motion range"),
    ("PNG16", "PNG 16-bit", "16 bits inside the motion's bounding box; loads everywhere"),
    ("EXR16", "EXR Half", "Half floats, centred on the motion range"),
    ("EXR32", "EXR Float", "Full float: exact to float32"),
]
ACTION_SOURCES = [
    ("ACTIVE", "Active Action", "The armature's active action"),
    ("LISTED", "Chosen Actions", "The actions ticked in the list, as clips of one texture"),
    ("ALL", "All Actions", "Every action that animates this armature's bones, as clips of one texture"),
]


class HybridSkinAnimtexAction(bpy.types.PropertyGroup):
    """One action offered to the bake"""

    name: StringProperty(name="Action")
    use: BoolProperty(name="Bake", default=True)


def bake_target(context) -> bpy.types.Object | None:
    """The active armature or mesh (what a bake starts from), else None."""
    obj = context.active_object
    return obj if obj is not None and obj.type in {"ARMATURE", "MESH"} else None


class HYBRID_SKIN_OT_bake_animation_texture(ModalProgress, bpy.types.Operator):
    """Bake actions into a vertex or bone animation texture (PNG/EXR + JSON) for GPU-instanced crowds"""

    bl_idname = "hybrid_skin.bake_animation_texture"
    bl_label = "Bake Animation Texture"
    bl_options = {"REGISTER", "UNDO"}

    directory: StringProperty(
        name="Folder", subtype="DIR_PATH", default="//", options={"PATH_SUPPORTS_BLEND_RELATIVE"}
    )
    file_name: StringProperty(name="Name", description="File name without extension (empty: object and kind)")
    kind: EnumProperty(name="Kind", items=KIND_ITEMS, default="VERTEX")
    precision: EnumProperty(name="Precision", items=PRECISION_ITEMS, default="PNG16")
    action_source: EnumProperty(name="Actions", items=ACTION_SOURCES, default="ACTIVE")
    actions: CollectionProperty(type=HybridSkinAnimtexAction)
    frame_step: FloatProperty(
        name="Frame Step",
        description="Scene frames between stored samples (below 1 samples fast actions between frames)",
        default=1.0,
        min=bake.MIN_FRAME_STEP,
        soft_max=16.0,
        step=50,
    )
    tolerance: FloatProperty(
        name="Tolerance",
        subtype="DISTANCE",
        default=0.0,
        min=0.0,
        precision=5,
        description="If above 0, pick the smallest frame step and precision whose max error stays below it",
    )
    max_width: IntProperty(name="Max Width", default=8192, min=16, max=16384)
    power_of_two: BoolProperty(name="Power of Two", description="Pad both sides to powers of two")
    embed_metadata: BoolProperty(
        name="Embed Metadata",
        default=True,
        description="Also store the decode table in the texture's first rows",
    )
    write_mesh_data: BoolProperty(
        name="Mesh Data",
        default=True,
        description="Store texel coordinates / bone indices and weights on the meshes",
    )
    export_gltf: BoolProperty(
        name="glTF",
        default=False,
        description="Also write the baked meshes as <name>.glb beside the texture, with the mesh data as "
        "glTF attributes an engine loader keeps (needs Mesh Data)",
    )
    export_babylon: BoolProperty(
        name="Babylon.js",
        default=False,
        description="Bone kinds: also write <name>.babylon.json, the bone matrices for Babylon.js's own "
        "baked vertex animation player (LBS), to play with the .glb (needs glTF)",
    )
    unkeyed_bones_at_rest: BoolProperty(
        name="Unkeyed Bones at Rest",
        default=False,
        description="Bake bones an action does not key at their rest pose (default: as the scene poses "
        "them, which is what Blender shows when the action plays)",
    )
    use_modal: BoolProperty(options={"HIDDEN", "SKIP_SAVE"})

    _job = None
    _steps = None

    @classmethod
    def poll(cls, context):
        return bake_target(context) is not None and context.mode in {"OBJECT", "POSE"}

    def _action_names(self, context) -> list[str] | None:
        if self.action_source == "LISTED":
            return [item.name for item in self.actions if item.use] or None
        if self.action_source == "ALL":
            arm, _meshes = find_target(bake_target(context), context.scene)
            return [a.name for a in compatible_actions(arm)] or None
        return None

    def _make_job(self, context) -> bake.TextureBake:
        options = bake.BakeOptions(
            directory=self.directory,
            kind=self.kind,
            precision=self.precision,
            frame_step=self.frame_step,
            tolerance=self.tolerance,
            max_width=self.max_width,
            power_of_two=self.power_of_two,
            embed_metadata=self.embed_metadata,
            write_mesh_data=self.write_mesh_data,
            export_gltf=self.export_gltf,
            export_babylon=self.export_babylon,
            name=self.file_name,
            reset_unkeyed_to_rest=self.unkeyed_bones_at_rest,
        )
        if self.action_source == "LISTED" and not any(item.use for item in self.actions):
            raise HybridSkinError("No action is ticked: tick at least one in the list")
        return bake.TextureBake(context, bake_target(context), options, self._action_names(context))

    def _done(self, job) -> set[str]:
        result = job.result
        for warning in result.warnings:
            self.report({"WARNING"}, warning)
        overall = result.report["overall"]
        self.report(
            {"INFO"},
            f"Baked {len(result.texture.clips)} clip(s) to {result.image_path}: max error "
            f"{overall['max']:.3g} ({overall['max_percent']:.3g}% of the bounding box)",
        )
        return {"FINISHED"}

    def execute(self, context):
        job = self._make_job(context)
        if self.use_modal and context.window is not None:
            return self._start_modal(context, job)
        wm = context.window_manager
        wm.progress_begin(0, 100)
        try:
            for progress in job.run():
                wm.progress_update(int(progress * 100))
        finally:
            wm.progress_end()
        return self._done(job)

    def rollback(self, context) -> None:
        """After an error: the armature's action and frame back (closing the job restores them)."""
        if self._steps is not None:
            self._steps.close()
            self._steps = None
        super().rollback(context)

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
        return context.window_manager.invoke_props_dialog(self, width=420)

    def draw(self, context):
        layout = self.layout
        layout.use_property_split = True
        layout.prop(self, "directory")
        layout.prop(self, "file_name")
        layout.prop(self, "kind")
        col = layout.column()
        col.active = self.tolerance == 0.0
        col.prop(self, "precision")
        col.prop(self, "frame_step")
        layout.prop(self, "tolerance")
        layout.prop(self, "action_source")
        layout.prop(self, "unkeyed_bones_at_rest")
        if self.action_source == "LISTED":
            box = layout.box().column(align=True)
            for item in self.actions:
                box.prop(item, "use", text=item.name)
        row = layout.row(align=True)
        row.prop(self, "max_width")
        row.prop(self, "power_of_two", toggle=True)
        row = layout.row(align=True)
        row.prop(self, "embed_metadata", toggle=True)
        row.prop(self, "write_mesh_data", toggle=True)
        row.prop(self, "export_gltf", toggle=True)
        row.prop(self, "export_babylon", toggle=True)

    # ----------------------------------------------------------------------------------- modal
    def _start_modal(self, context, job) -> set[str]:
        self._job, self._steps = job, job.run()
        return self.begin_modal(context)

    def modal(self, context, event):
        if event.type == "ESC":
            self._steps.close()  # restores the action and frame; nothing was written
            self._end(context)
            self.report({"WARNING"}, "Animation texture bake cancelled: nothing was written")
            return {"CANCELLED"}
        if event.type != "TIMER":
            return {"PASS_THROUGH"}
        deadline = time.perf_counter() + 0.1  # ~100 ms of work per tick keeps the UI responsive
        progress = 0.0
        try:  # an error: the funnel closes the job, removes the timer and progress bar, and reports
            while time.perf_counter() < deadline:
                progress = next(self._steps)
        except StopIteration:
            self._steps = None
            self._end(context)
            return self._done(self._job)
        self.show_progress(
            context, progress, f"Hybrid Skin: baking animation texture {progress:.0%} (Esc to cancel)"
        )
        return {"RUNNING_MODAL"}


class HYBRID_SKIN_OT_crowd_preview(GuardedOperator, bpy.types.Operator):
    """Show or hide a crowd of the last animation texture bake, drawn with one instanced draw call"""

    bl_idname = "hybrid_skin.crowd_preview"
    bl_label = "Crowd Preview"

    count: IntProperty(name="Instances", default=1000, min=1, soft_max=10000, max=100000)
    spacing: FloatProperty(
        name="Spacing",
        subtype="DISTANCE",
        default=0.0,
        min=0.0,
        description="Grid spacing (0: from the character's size)",
    )

    @classmethod
    def poll(cls, context):
        return crowd.is_active() or context.active_object is not None

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


classes = (HybridSkinAnimtexAction, HYBRID_SKIN_OT_bake_animation_texture, HYBRID_SKIN_OT_crowd_preview)


def register() -> None:
    for cls in classes:
        bpy.utils.register_class(cls)


def unregister() -> None:
    for cls in reversed(classes):
        bpy.utils.unregister_class(cls)
