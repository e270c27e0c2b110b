"""Blender's own deformation of a skinned mesh, for comparisons (demo, benchmarks).

LBS is the Armature modifier, DQS the same modifier with Preserve Volume, and the hybrid at factor f is
Blender's two-modifier mix: an LBS Armature modifier followed by a Preserve Volume one with Multi
Modifier and a vertex group of weight f, which interpolates (1-f)·LBS + f·DQS per vertex. Every
setting touched is restored, and helper modifiers and groups are removed, before returning.
"""

from __future__ import annotations

import contextlib
from contextlib import contextmanager

import bpy
import numpy as np

from .. import bridge, runtime
from . import stack
from .state import hold

__all__ = ["ORACLE_GROUP", "add_mix_modifier", "native_mix", "native_positions"]

#: The throwaway factor group of the native twin (:func:`native_positions`), never the display's own.
ORACLE_GROUP = "HS_native_factor"


def add_mix_modifier(
    obj: bpy.types.Object, mod: bpy.types.ArmatureModifier, name: str, group: str
) -> bpy.types.ArmatureModifier:
    """Blender's exact hybrid: a Preserve Volume Armature modifier ``name`` right after the LBS one ``mod``,
    with Multi Modifier and the vertex group ``group`` as the per-vertex factor."""
    extra = obj.modifiers.new(name, "ARMATURE")  # a new one: one of that name may be the user's
    extra.object = mod.object
    extra.use_deform_preserve_volume = True
    extra.use_multi_modifier = True
    extra.use_vertex_groups = mod.use_vertex_groups
    extra.use_bone_envelopes = mod.use_bone_envelopes
    extra.vertex_group = group
    obj.modifiers.move(list(obj.modifiers).index(extra), list(obj.modifiers).index(mod) + 1)
    return extra


@contextmanager
def native_mix(obj: bpy.types.Object, deform_factor: float):
    """Within the block, ``obj`` evaluates to Blender's LBS/DQS mix at scalar ``deform_factor`` (Hybrid
    Skin's own modifiers, if set up, are hidden meanwhile: they would mix a second time)."""
    mod = stack.armature_modifier(obj)
    mixes = [m for m in obj.modifiers if stack.is_part(m) and m.show_viewport]
    saved = (mod.use_deform_preserve_volume, mod.show_viewport)
    group = extra = None
    with contextlib.ExitStack() as context:
        if runtime.current() is not None:
            context.enter_context(hold([obj]))  # the handlers must not "repair" the stack meanwhile
        try:
            mod.show_viewport = True
            for m in mixes:
                m.show_viewport = False
            if deform_factor in (0.0, 1.0):
                mod.use_deform_preserve_volume = deform_factor == 1.0
            else:
                mod.use_deform_preserve_volume = False
                group = obj.vertex_groups.new(name=ORACLE_GROUP)  # a free name if the user has this one
                group.add(range(len(obj.data.vertices)), float(deform_factor), "REPLACE")
                extra = add_mix_modifier(obj, mod, "HS_native_dqs", group.name)
            bpy.context.view_layer.update()
            yield
        finally:
            if extra is not None:
                obj.modifiers.remove(extra)
            if group is not None:
                obj.vertex_groups.remove(group)
            for m in mixes:
                m.show_viewport = True
            mod.use_deform_preserve_volume, mod.show_viewport = saved
            bpy.context.view_layer.update()


def native_positions(obj: bpy.types.Object, deform_factor: float) -> np.ndarray:
    """Blender's own result at scalar ``deform_factor``: LBS (0), Preserve Volume (1) or the mix.

    With a mask vertex group on the modifier the multi-modifier setup cannot mask the DQS part, so the
    mix is then taken from Blender's masked LBS and masked DQS results.
    """
    mod = stack.armature_modifier(obj)
    if mod.vertex_group and deform_factor not in (0.0, 1.0):
        lbs, dqs = native_positions(obj, 0.0), native_positions(obj, 1.0)
        return ((1.0 - deform_factor) * lbs + deform_factor * dqs).astype(np.float32)
    with native_mix(obj, deform_factor):
        return bridge.evaluated_positions(obj)
