"""Animation texture bake: the operator, its N-panel sub-panel and its Dope Sheet ▸ Action editor entries.

``hybrid_skin.bake_animation_texture`` bakes the active action (or listed / all compatible actions, as
clips of one texture) of the active armature for its skinned meshes, or of the active skinned mesh.
From the UI it asks for its settings, then runs modally with a progress bar (Esc cancels, nothing is
written); ``execute`` (scripts, command line) runs it to the end at once. Undoable: the only scene
change is the per-vertex data written on the meshes.
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

from .. import bridge
from ..progress import ModalProgress
from . import bake as animtex_bake

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


def _target(context):
    obj = context.active_object
    return obj if obj is not None and obj.type in {"ARMATURE", "MESH"} else None


class HYBRIDSKIN_OT_bake_animation_texture(ModalProgress, bpy.types.Operator):
    """Bake actions into a vertex or bone animation texture (PNG/EXR + JSON) for GPU-instanced crowds"""

    bl_idname = "hybrid_skin.bake_animation_texture"
    bl_label = "Bake Animation Texture"
    bl_options = {"REGISTER", "UNDO"}

    directory: StringProperty(name="Folder", subtype="DIR_PATH", default="//")
    file_name: StringProperty(name="Name", description="File name without extension (empty: object and kind)")
    kind: EnumProperty(name="Kind", items=KIND_ITEMS, default="VERTEX")
    precision: EnumProperty(name="Precision", items=PRECISION_ITEMS, default="PNG16")
    action_source: EnumProperty(name="Actions", items=ACTION_SOURCES, default="ACTIVE")
    actions: CollectionProperty(type=HybridSkinAnimtexAction)
    frame_step: FloatProperty(
        name="Frame Step",
        description="Scene frames between stored samples (below 1 samples fast actions between frames)",
        default=1.0,
        min=animtex_bake.MIN_FRAME_STEP,
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
    use_modal: BoolProperty(options={"HIDDEN", "SKIP_SAVE"})

    _job = None
    _steps = None

    @classmethod
    def poll(cls, context):
        return _target(context) is not None and context.mode in {"OBJECT", "POSE"}

    def _action_names(self, context) -> list[str] | None:
        if self.action_source == "LISTED":
            return [item.name for item in self.actions if item.use] or None
        if self.action_source == "ALL":
            arm, _meshes = animtex_bake.find_target(_target(context), context.scene)
            return [a.name for a in animtex_bake.compatible_actions(arm)] or None
        return None

    def _make_job(self, context) -> animtex_bake.TextureBake:
        options = animtex_bake.BakeOptions(
            directory=self.directory,
            kind=self.kind,
            precision=self.precision,
            frame_step=self.frame_step,
            tolerance=self.tolerance,
            max_width=self.max_width,
            power_of_two=self.power_of_two,
            embed_metadata=self.embed_metadata,
            write_mesh_data=self.write_mesh_data,
            name=self.file_name,
        )
        if self.action_source == "LISTED" and not any(item.use for item in self.actions):
            raise bridge.HybridSkinError("No action is ticked: tick at least one in the list")
        return animtex_bake.TextureBake(context, _target(context), options, self._action_names(context))

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
        try:
            job = self._make_job(context)
        except bridge.HybridSkinError as err:
            self.report({"ERROR"}, str(err))
            return {"CANCELLED"}
        if self.use_modal and context.window is not None:
            return self._start_modal(context, job)
        wm = context.window_manager
        wm.progress_begin(0, 100)
        try:
            for progress in job.run():
                wm.progress_update(int(progress * 100))
        except bridge.HybridSkinError as err:
            self.report({"ERROR"}, str(err))
            return {"CANCELLED"}
        finally:
            wm.progress_end()
        return self._done(job)

    def invoke(self, context, event):
        target = _target(context)
        try:
            arm, _meshes = animtex_bake.find_target(target, context.scene)
        except bridge.HybridSkinError as err:
            self.report({"ERROR"}, str(err))
            return {"CANCELLED"}
        active = arm.animation_data.action if arm.animation_data else None
        chosen = {item.name: item.use for item in self.actions}
        self.actions.clear()
        for action in animtex_bake.compatible_actions(arm):
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
        try:
            while time.perf_counter() < deadline:
                progress = next(self._steps)
        except StopIteration:
            self._end(context)
            return self._done(self._job)
        except bridge.HybridSkinError as err:
            self._end(context)
            self.report({"ERROR"}, str(err))
            return {"CANCELLED"}
        except BaseException:
            self._end(context)  # a bug: still remove the timer and the progress bar
            raise
        self.show_progress(
            context, progress, f"Hybrid Skin: baking animation texture {progress:.0%} (Esc to cancel)"
        )
        return {"RUNNING_MODAL"}


def timing_lines(seconds: dict[str, float]) -> list[str]:
    """Where the last bake's time went (the phases of :data:`.animtex_bake.PHASES`), for the panel:
    sampling and the truth at halfway frames usually dominate, then writing the image."""
    if not seconds:
        return []
    phases = [(name, seconds.get(name, 0.0)) for name in animtex_bake.PHASES]
    parts = [f"{name} {value:.2f}" for name, value in phases if value >= 0.005]
    half = (len(parts) + 1) // 2
    return [f"Baked in {sum(v for _, v in phases):.2f} s", ", ".join(parts[:half]), ", ".join(parts[half:])]


def draw_summary(layout, obj) -> None:
    """The last bake's error report (stored on the baked object)."""
    info = animtex_bake.last_summary(obj)
    if info is None:
        return
    col = layout.column(align=True)
    col.label(
        text=f"{info['kind']} {info['precision']}, step {info['frame_step']:g}, {info['clips']} clip(s), "
        f"{info['size'][0]}×{info['size'][1]}"
    )
    col.label(text=f"Max error {info['max']:.3g} ({info['max_percent']:.3g}%)")
    col.label(text=f"Mean error {info['mean']:.3g} ({info['mean_percent']:.3g}%)")
    for line in timing_lines(info.get("seconds", {})):
        col.label(text=line, icon="TIME" if line.startswith("Baked") else "BLANK1")
    for warning in info.get("warnings", ()):
        col.label(text=warning, icon="ERROR")


def _draw_bake_button(layout) -> None:
    layout.operator(HYBRIDSKIN_OT_bake_animation_texture.bl_idname, icon="TEXTURE")


class VIEW3D_PT_hybrid_skin_animtex(bpy.types.Panel):
    """Bake actions into animation textures for crowds"""

    bl_label = "Animation Texture"
    bl_space_type = "VIEW_3D"
    bl_region_type = "UI"
    bl_category = "Hybrid Skin"
    bl_parent_id = "VIEW3D_PT_hybrid_skin"
    bl_options = {"DEFAULT_CLOSED"}

    @classmethod
    def poll(cls, context):
        return _target(context) is not None

    def draw(self, context):
        _draw_bake_button(self.layout)
        draw_summary(self.layout, _target(context))
        if hasattr(bpy.types, "HYBRIDSKIN_OT_crowd_preview"):
            from . import crowd  # noqa: PLC0415  (gpu only once the crowd is used)

            text = "Hide Crowd" if crowd.is_active() else "Crowd Preview"
            self.layout.operator("hybrid_skin.crowd_preview", text=text, icon="COMMUNITY")
            if crowd.is_active():
                self.layout.label(text=crowd.stats_line())


def _is_action_editor(context) -> bool:
    space = context.space_data
    return space is not None and getattr(space, "ui_mode", getattr(space, "mode", "")) == "ACTION"


class DOPESHEET_PT_hybrid_skin_animtex(bpy.types.Panel):
    """Bake this action (or several) into an animation texture"""

    bl_label = "Animation Texture"
    bl_space_type = "DOPESHEET_EDITOR"
    bl_region_type = "UI"
    bl_category = "Hybrid Skin"

    @classmethod
    def poll(cls, context):
        return _is_action_editor(context) and _target(context) is not None

    def draw(self, context):
        _draw_bake_button(self.layout)
        draw_summary(self.layout, _target(context))


def _menu_entry(self, context) -> None:
    if _is_action_editor(context):
        self.layout.separator()
        _draw_bake_button(self.layout)


#: The Action editor's own menu where it exists (Blender >= 4.4), else its Key menu.
MENU = "DOPESHEET_MT_action" if hasattr(bpy.types, "DOPESHEET_MT_action") else "DOPESHEET_MT_key"

classes = (
    HybridSkinAnimtexAction,
    HYBRIDSKIN_OT_bake_animation_texture,
    VIEW3D_PT_hybrid_skin_animtex,
    DOPESHEET_PT_hybrid_skin_animtex,
)


def register() -> None:
    for cls in classes:
        bpy.utils.register_class(cls)
    getattr(bpy.types, MENU).append(_menu_entry)


def unregister() -> None:
    getattr(bpy.types, MENU).remove(_menu_entry)
    for cls in reversed(classes):
        bpy.utils.unregister_class(cls)
