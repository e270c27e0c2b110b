"""Bake operators: shape keys / point cache, and clear. Undoable; progress and Esc in the UI."""

from __future__ import annotations

import bpy
from bpy.props import BoolProperty, EnumProperty, FloatProperty, IntProperty, StringProperty

from ..core.budget import memory_budget
from ..errors import HybridSkinError
from ..operator_base import GuardedOperator, JobOperator, in_modes, refuse
from ..rig import baked, checks
from . import baker

TARGET_ITEMS = [
    ("SHAPE_KEYS", "Shape Key per Frame", "One keyed shape key per baked frame (glTF morph targets)"),
    ("CURRENT", "Current Frame", "One shape key with the current frame's hybrid (apply as shape key)"),
    ("PC2", "PC2 Point Cache", "A .pc2 file played by a Mesh Cache modifier (light for long clips)"),
    ("MDD", "MDD Point Cache", "An .mdd file played by a Mesh Cache modifier"),
]


class HYBRID_SKIN_OT_bake_deformation(JobOperator, bpy.types.Operator):
    """Bake the hybrid deformation so renders and exporters see it (shape keys or a point cache)"""

    bl_idname = "hybrid_skin.bake_deformation"
    bl_label = "Bake Hybrid Skin Deformation"
    bl_options = {"REGISTER", "UNDO"}

    target: EnumProperty(
        name="Target", items=TARGET_ITEMS, default="SHAPE_KEYS", description="What the bake writes"
    )
    # Negative frames are frames: a bound left out (not set) is the scene's, never a sentinel value.
    # SKIP_SAVE: a bake started from the panel must not reuse the Start/End of an earlier bake.
    frame_start: IntProperty(
        name="Start", description="First frame (left out: the scene's)", default=1, options={"SKIP_SAVE"}
    )
    frame_end: IntProperty(
        name="End", description="Last frame (left out: the scene's)", default=250, options={"SKIP_SAVE"}
    )
    frame_step: IntProperty(name="Step", description="Bake every Nth frame", default=1)
    # SKIP_SAVE: the next object's bake must not be offered the previous object's file.
    filepath: StringProperty(
        name="Cache File", subtype="FILE_PATH", default="",
        options={"PATH_SUPPORTS_BLEND_RELATIVE", "SKIP_SAVE"},
        description="The .pc2 or .mdd file a point cache bake writes (shape key bakes write none)",
    )
    replace_file: BoolProperty(
        name="Replace File",
        description="Replace the file at the cache's path even when it is not this object's point cache "
        "(another kind of file, another object's cache); without it such a bake is refused",
        default=False,
        options={"SKIP_SAVE"},
    )
    # The file browser: only the chosen format's files listed, an existing file's name shown in red.
    filter_glob: StringProperty(
        default="*.pc2;*.mdd", options={"HIDDEN", "SKIP_SAVE"},
        description="The files the file browser lists: the chosen format's",
    )
    check_existing: BoolProperty(
        default=True, options={"HIDDEN", "SKIP_SAVE"},
        description="The file browser shows an existing file's name in red",
    )
    memory_budget: FloatProperty(
        name="Memory Budget",
        description="Most memory a shape-key bake may hold, in MiB (0: half of this machine's memory): a "
        "larger bake is refused before it plays a frame",
        default=0.0,
        min=0.0,
        options={"SKIP_SAVE"},
    )

    use_modal: BoolProperty(
        options={"HIDDEN", "SKIP_SAVE"}, description="Run with a progress bar and Esc (set by the dialog)"
    )

    job_label = "baking"
    cancelled = "Bake cancelled: nothing was changed (a previous bake stays as it was)"

    @classmethod
    def poll(cls, context):
        obj = context.active_object
        if obj is None or obj.type != "MESH":
            return refuse(cls, "Select the skinned mesh to bake")
        return in_modes(cls, context, "bake")

    def _fill_range(self, scene) -> None:
        """Start and End left out are the scene's: filled in, so the dialog and the Adjust Last Operation
        panel show what is baked."""
        if not self.properties.is_property_set("frame_start"):
            self.frame_start = scene.frame_start
        if not self.properties.is_property_set("frame_end"):
            self.frame_end = scene.frame_end

    def make_job(self, context) -> baker.Baker:
        scene = context.scene
        if self.target == "CURRENT":
            frames = [scene.frame_current]
        else:
            self._fill_range(scene)
            frames = baker.bake_frames(self.frame_start, self.frame_end, self.frame_step)
        return baker.Baker(
            context, context.active_object, self.target, frames, self.filepath,
            memory_budget_mib=self.memory_budget, replace_file=self.replace_file,
        )  # fmt: skip

    def job_done(self, context, job: baker.Baker) -> set[str]:
        replaced = " (its previous bake replaced)" if job.replaced else ""
        baked_frames = f"Baked {len(job.frames)} frame(s) of '{job.obj.name}'"
        self.report({"INFO"}, f"{baked_frames} ({self.target}){replaced}")
        return {"FINISHED"}

    def execute(self, context):
        if self.use_modal and context.window is not None:
            return self.start_job(context)  # after the dialog or the file browser: progress, Esc
        return self.run_job(context)

    def invoke(self, context, event):
        """Shape keys: a dialog with the frames first; a point cache: the file browser (its side panel has
        the same options); the current frame: at once."""
        self._fill_range(context.scene)
        self.use_modal = True
        if self.target in ("PC2", "MDD"):
            extension = self.target.lower()
            if not self.filepath:
                self.filepath = f"//{checks.file_name_for(context.active_object.name)}.{extension}"
            self.filter_glob = f"*.{extension}"
            context.window_manager.fileselect_add(self)  # execute() runs after the file is chosen
            return {"RUNNING_MODAL"}
        if self.target == "SHAPE_KEYS":
            return context.window_manager.invoke_props_dialog(self, width=420)
        return self.start_job(context)

    def draw(self, context):
        layout = self.layout
        layout.use_property_split = True
        layout.prop(self, "target")
        col = layout.column(align=True)
        col.enabled = self.target != "CURRENT"
        col.prop(self, "frame_start")
        col.prop(self, "frame_end")
        col.prop(self, "frame_step")
        if self.target in ("PC2", "MDD"):
            layout.prop(self, "replace_file")
        layout.prop(self, "memory_budget")
        try:
            lines = self._estimate(context)
        except Exception as err:  # noqa: BLE001 - a dialog redraws: one line, never a traceback per redraw
            lines = [(f"No estimate ({type(err).__name__}: {err})", "ERROR")]
        for text, icon in lines:
            layout.label(text=text, icon=icon)

    def _estimate(self, context) -> list[tuple[str, str]]:
        """What the bake will make, or the sentence it would be refused with (counts only, nothing baked)."""
        obj = context.active_object
        try:
            if self.target == "CURRENT":
                frames = [context.scene.frame_current]
            else:
                frames = baker.bake_frames(self.frame_start, self.frame_end, self.frame_step)
            path = checks.absolute_path(self.filepath, "point cache") if self.target in ("PC2", "MDD") else ""
            baker.check(obj, self.target, path, replace=self.replace_file)
            why = baker.size_refusal(obj, self.target, frames, memory_budget(self.memory_budget), path)
        except HybridSkinError as err:
            return [(str(err), "ERROR")]
        if why is not None:
            return [(why, "ERROR")]
        what = {"PC2": "frames in the cache", "MDD": "frames in the cache"}.get(self.target, "shape keys")
        return [(f"{len(frames):,} {what} of {len(obj.data.vertices):,} vertices", "INFO")]


class HYBRID_SKIN_OT_clear_bake(GuardedOperator, bpy.types.Operator):
    """Remove the baked shape keys or point cache and restore the modifier setup exactly"""

    bl_idname = "hybrid_skin.clear_bake"
    bl_label = "Clear Hybrid Skin Bake"
    bl_options = {"REGISTER", "UNDO"}

    @classmethod
    def poll(cls, context):
        obj = context.active_object
        if obj is None or obj.type != "MESH" or not baked.is_baked(obj):
            return refuse(cls, "Select a mesh with a Hybrid Skin bake (shape keys or a point cache)")
        return True

    def execute(self, context):
        checks.editable_mesh(context.active_object)
        baker.check_bake_record(context.active_object)
        baked.clear(context.active_object)
        self.report({"INFO"}, "Cleared the Hybrid Skin bake")
        return {"FINISHED"}


classes = (HYBRID_SKIN_OT_bake_deformation, HYBRID_SKIN_OT_clear_bake)


def register() -> None:
    for cls in classes:
        bpy.utils.register_class(cls)


def unregister() -> None:
    for cls in reversed(classes):
        bpy.utils.unregister_class(cls)
