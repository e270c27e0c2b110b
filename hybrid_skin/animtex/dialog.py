"""The texture bake's dialog: its options top-down by what depends on what, what cannot apply greyed with
the reason beside it, and before OK the texture's size and the bytes the bake will hold, from the same plan
the bake checks (:mod:`.bounds`), with every refusal the options alone decide.

Order: the actions (the checklist under its selector), what the texture stores (kind; the tolerance, which
when on picks precision and frame step; unkeyed bones; Auto at runtime, bone kinds only), its layout, then
the files (folder, name, Replace Files; Mesh Data, glTF which needs it, Babylon.js which needs glTF and a
bone kind), the memory budget, and the estimate.

The estimate costs a scan of the scene and, for VERTEX, of each mesh's corners: it is kept in the session
(:class:`EstimateCache`) for the options and objects it was made for, so the dialog redraws it only when
an option changes.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

import bpy
import numpy as np

from .. import runtime
from ..core.animtex import Kind, Precision
from ..core.animtex.palette import palette_names
from ..core.animtex.report import encoding_candidates
from ..core.budget import bytes_text, memory_budget
from ..errors import HybridSkinError
from ..rig import bind
from . import bounds
from .corners import CornerItems
from .options import AUTO_STEPS, BakeOptions, declared
from .outputs import Source, default_stem, plan_outputs
from .scene import clip_for, compatible_actions, find_target, mesh_parts, object_settings, resolve_actions
from .summary import SUMMARY_PROPERTY, last_summary

__all__ = ["EstimateCache", "draw", "estimate"]


@dataclass
class EstimateCache:
    """The last estimate, and each mesh's texture item count (vertices and corner groups), by what they
    were made for."""

    key: tuple = ()
    lines: list[tuple[str, str]] = field(default_factory=list)
    items: dict[tuple, int] = field(default_factory=dict)


def _cache() -> EstimateCache:
    return runtime.get().state(EstimateCache)


def _item_count(meshes: list[bpy.types.Object]) -> int:
    """A VERTEX texture's items for ``meshes`` (:class:`.corners.CornerItems`), kept per mesh."""
    cache, total = _cache(), 0
    for obj in meshes:
        mesh = obj.data
        key = (obj.session_uid, mesh.session_uid, len(mesh.vertices), len(mesh.loops))
        if key not in cache.items:
            cache.items[key] = CornerItems.of(mesh_parts([obj], single_user=False)).item_count
        total += cache.items[key]
    return total


def _bone_count(meshes: list[bpy.types.Object]) -> int:
    """Palette entries of a bone texture, as the bake prepares them (:func:`.palette.prepare`): the binds'
    bones (a B-Bone's segments each), and the rest bone where a vertex is only partly skinned."""
    cache = _cache()
    key = tuple((m.session_uid, m.data.session_uid, len(m.data.vertices)) for m in meshes)
    if key not in cache.items:
        depsgraph = bpy.context.evaluated_depsgraph_get()
        binds = [bind.cached_bind(m, depsgraph) for m in meshes]
        rest = any(bool(np.any(b.binding.influence < 1.0)) for b in binds)
        cache.items[key] = len(palette_names(binds[0].bones, rest))
    return cache.items[key]


def estimate(context, options: BakeOptions, action_names: list[str] | None) -> list[tuple[str, str]]:
    """``[(text, icon)]``: the texture's size and the memory the bake holds, or why it would be refused."""
    target = context.active_object
    folder = bpy.path.abspath(options.directory) if options.directory else ""
    try:  # a file added, replaced or removed there changes the folder's time
        changed = os.stat(folder).st_mtime_ns if folder else 0
    except OSError:
        changed = -1
    key = (
        target.name if target else "", target.get(SUMMARY_PROPERTY) if target else None,
        tuple(action_names or ()), tuple(getattr(options, name) for name, _ in declared()),
        bpy.data.filepath, changed,
    )  # fmt: skip
    cache = _cache()
    if cache.key != key:
        try:
            cache.lines = _estimate(context, target, options, action_names)
        except HybridSkinError as err:
            cache.lines = [(str(err), "ERROR")]
        cache.key = key
    return cache.lines


def _estimate(context, target, options: BakeOptions, action_names) -> list[tuple[str, str]]:
    lines = [(why, "ERROR") for why in _option_conflicts(options)]
    options.validate()
    arm, meshes = find_target(target, context.scene)
    scene = context.scene
    fps = scene.render.fps / scene.render.fps_base
    actions = resolve_actions(arm, action_names)
    kind = Kind(options.kind)
    items = _item_count(meshes) if kind is Kind.VERTEX else _bone_count(meshes)
    auto = kind is not Kind.VERTEX and options.runtime_auto and any(
        getattr(object_settings(m), "factor_mode", "") == "AUTO" for m in meshes
    )
    counts = dict(item_count=items, vertex_count=sum(len(m.data.vertices) for m in meshes),
                  part_count=len(meshes), options=options, auto=auto)  # fmt: skip
    budget = memory_budget(options.memory_budget)
    steps = AUTO_STEPS if options.tolerance > 0 else (options.frame_step,)
    plans = [
        bounds.texture_plan(kind, p, [clip_for(a, fps, s) for a in actions], **counts)
        for s, p in (encoding_candidates(steps) if options.tolerance > 0 else [(steps[0], options.precision)])
    ]
    fitting = [p for p in plans if bounds.refusal(p, budget) is None]
    if not fitting:
        return [*lines, (bounds.refusal(plans[0], budget), "ERROR")]
    lines += [_size_line(p) for p in (fitting if len(fitting) == 1 else (fitting[0], fitting[-1]))]
    peak = max(p.peak_bytes for p in fitting)
    lines.append((f"The bake holds about {bytes_text(peak)} (budget {bytes_text(budget.bytes)})", "MEMORY"))
    lines += _files(target, options, kind, {p.precision for p in fitting})
    return lines


def _size_line(plan) -> tuple[str, str]:
    lay, step = plan.layout, plan.clips[0].frame_step
    return (
        f"{lay.width:,} × {lay.height:,} texels, {plan.precision.value}, step {step:g}: "
        f"{bytes_text(plan.image_bytes)} ({plan.stored_samples:,} samples of {lay.item_count:,} items)",
        "TEXTURE",
    )


def _option_conflicts(options: BakeOptions) -> list[str]:
    """The refusals the options alone decide (the bake's own checks say the same)."""
    out = []
    if options.export_gltf and not options.write_mesh_data:
        out.append("glTF needs Mesh Data: the export carries it (turn Mesh Data on, or glTF off)")
    if options.export_babylon and (options.kind == "VERTEX" or not options.export_gltf):
        out.append("Babylon.js needs a bone kind and glTF: it plays bone matrices on the glTF export")
    return out


def _files(target, options: BakeOptions, kind: Kind, precisions: set[Precision]) -> list[tuple[str, str]]:
    """Where the files go, and whether a file there would be replaced or refused."""
    folder = bpy.path.abspath(options.directory) if options.directory else ""
    if not folder or not os.path.isdir(folder):
        return [(f"Folder '{options.directory}' does not exist: choose an existing folder", "ERROR")]
    given = bpy.path.clean_name(options.file_name) if options.file_name else ""
    stem = given or default_stem(target.name, kind.value)
    endings = tuple(sorted({".png" if p.normalized else ".exr" for p in precisions}))
    own = last_summary(target)
    try:
        outputs = plan_outputs(
            os.path.normpath(folder), stem, image_endings=endings, gltf=options.export_gltf,
            babylon=options.export_babylon, source=Source(target.name, bpy.data.filepath, kind.value),
            own_sidecar=own.sidecar if own is not None else None, replace=options.replace_files,
        )  # fmt: skip
    except HybridSkinError as err:
        return [(str(err), "ERROR")]
    names = ", ".join(outputs.names(endings[0]).values())
    again = " (replaces this object's previous bake)" if outputs.previous else ""
    return [(f"Writes {names}{again}", "FILE")]


def draw(op, context) -> None:
    """The bake dialog (see the module docstring); ``op`` is the operator (its properties are the
    options)."""
    layout = op.layout
    layout.use_property_split = True
    layout.prop(op, "action_source")
    if op.action_source == "LISTED":
        box = layout.box().column(align=True)
        for item in op.actions:
            box.prop(item, "use", text=item.name)
    layout.separator()
    layout.prop(op, "kind")
    layout.prop(op, "tolerance")
    col = layout.column()
    col.active = op.tolerance == 0.0
    col.prop(op, "precision")
    col.prop(op, "frame_step")
    if op.tolerance > 0.0:
        col.label(text="Picked by the tolerance search", icon="INFO")
    layout.prop(op, "unkeyed_bones_at_rest")
    _greyed(layout, op, "runtime_auto", op.kind != "VERTEX", "VERTEX bakes Auto into the positions")
    layout.separator()
    row = layout.row(align=True)
    row.prop(op, "max_width")
    row.prop(op, "power_of_two", toggle=True)
    layout.prop(op, "embed_metadata")
    layout.separator()
    layout.prop(op, "directory")
    layout.prop(op, "file_name", placeholder=_placeholder(op, context))
    layout.prop(op, "replace_files")
    layout.prop(op, "write_mesh_data")
    _greyed(layout, op, "export_gltf", op.write_mesh_data, "needs Mesh Data")
    babylon = op.kind != "VERTEX" and op.export_gltf
    _greyed(layout, op, "export_babylon", babylon, "needs glTF" if op.kind != "VERTEX" else "bone kinds only")
    layout.prop(op, "tangents")
    _greyed(layout, op, "export_instancing", op.kind != "VERTEX", "bone kinds only")
    layout.prop(op, "memory_budget")
    box = layout.box().column(align=True)
    for text, icon in _dialog_estimate(op, context):
        box.label(text=text, icon=icon)


def _greyed(layout, op, name: str, applies: bool, why: str) -> None:
    """``name``'s checkbox, greyed with ``why`` beside it where it cannot apply."""
    row = layout.row()
    row.enabled = applies
    row.prop(op, name)
    if not applies:
        row.label(text=why, icon="INFO")


def _placeholder(op, context) -> str:
    target, kind = context.active_object, str(op.kind)
    return default_stem(target.name, kind) if target is not None else ""


def _dialog_estimate(op, context) -> list[tuple[str, str]]:
    try:
        return _options_estimate(op, context)
    except Exception as err:  # noqa: BLE001 - a dialog redraws: one line, never a traceback per redraw
        return [(f"No estimate ({type(err).__name__}: {err})", "ERROR")]


def _options_estimate(op, context) -> list[tuple[str, str]]:
    try:
        options = BakeOptions(**{name: getattr(op, name) for name, o in declared() if o.ui})
    except TypeError as err:  # an option the dialog does not offer
        return [(f"No estimate: {err}", "ERROR")]
    names = None
    if op.action_source == "LISTED":
        names = [item.name for item in op.actions if item.use] or None
        if names is None:
            return [("No action is ticked: tick at least one in the list", "ERROR")]
    elif op.action_source == "ALL":
        try:
            names = [a.name for a in compatible_actions(find_target(context.active_object, context.scene)[0])]
        except HybridSkinError as err:
            return [(str(err), "ERROR")]
    return estimate(context, options, names)
