"""Bake the hybrid result so renders, exporters and other add-ons see it (issue: Bake).

Targets:

* ``SHAPE_KEYS``: one shape key per baked frame, keyed 0 → 1 → 0 with linear interpolation so playback
  (and the glTF exporter's morph targets) shows the hybrid; between baked frames the result blends
  linearly. Each key stores only the *skinning displacement* on top of the Basis, so the user's own
  shape keys keep working (they are part of the rest input we skin, and Blender adds them again).
* ``CURRENT``: one shape key for the current frame ("apply as shape key").
* ``PC2`` / ``MDD``: a point cache file played back by a Mesh Cache modifier (lighter for long clips).

While a bake is active the Armature modifier is bypassed (viewport and render) and the GPU display is
off. ``clear`` removes exactly what the bake added and restores the modifier flags. The bake record
(JSON in ``Object.hybrid_skin.bake_state``) survives save/reload and undo.
"""

from __future__ import annotations

import json
import os

import bpy
import numpy as np
from bpy_extras import anim_utils

from .. import bridge, factor
from ..core import pointcache
from ..errors import HybridSkinError
from ..skin import bind, display

KEY_PREFIX = "HS Bake "
CACHE_MODIFIER = "HybridSkin Cache"
TARGETS = ("SHAPE_KEYS", "CURRENT", "PC2", "MDD")


def bake_frames(start: int, end: int, step: int) -> list[int]:
    if step <= 0:
        raise HybridSkinError(f"Frame step must be at least 1, got {step}")
    if end < start:
        raise HybridSkinError(
            f"Frame range {start}–{end} is reversed: the end must not come before the start"
        )
    return list(range(start, end + 1, step))


def is_baked(obj: bpy.types.Object) -> bool:
    return bool(obj.hybrid_skin.bake_state)


def check(obj: bpy.types.Object, target: str, filepath: str = "") -> bpy.types.Modifier:
    """Raise :class:`..errors.HybridSkinError` unless ``obj`` can be baked to ``target``.

    Returns the Armature modifier the bake replaces."""
    bridge.editable_mesh(obj)
    if not obj.hybrid_skin.enabled:
        raise HybridSkinError(f"'{obj.name}' does not use Hybrid Skin: add it first (Hybrid Skin ▸ Add)")
    if target not in TARGETS:
        raise HybridSkinError(f"Unknown bake target '{target}'")
    mod = bridge.armature_modifier(obj, obj.hybrid_skin.modifier_name)
    bridge.validate(obj, mod)
    stack = list(obj.modifiers)
    above = [m.name for m in stack[: stack.index(mod)] if m.show_viewport or m.show_render]
    if above and target in ("SHAPE_KEYS", "CURRENT"):
        raise HybridSkinError(
            f"Modifiers {above} sit above '{mod.name}' on '{obj.name}': shape keys act before them. "
            "Apply or move them below, or bake to a point cache"
        )
    if target in ("PC2", "MDD"):
        folder = os.path.dirname(filepath) or "."
        if not filepath or os.path.isdir(filepath):
            raise HybridSkinError("Choose a point cache file name")
        if not os.path.isdir(folder) or not os.access(folder, os.W_OK):
            raise HybridSkinError(f"Cannot write to '{folder}': choose a writable folder")
    return mod


def _fcurves(id_data):
    """The F-Curve collection animating ``id_data`` (slotted actions in Blender ≥ 4.4)."""
    anim = id_data.animation_data
    if anim is None or anim.action is None:
        return None
    action = anim.action
    if hasattr(action, "fcurves") and not hasattr(action, "slots"):
        return action.fcurves  # Blender 4.2/4.3
    bag = anim_utils.action_get_channelbag_for_slot(action, anim.action_slot)
    return None if bag is None else bag.fcurves


class Baker:
    """A bake in progress: ``start()``, ``step()`` until it returns True, then ``finish()``/``cancel()``."""

    def __init__(
        self,
        context: bpy.types.Context,
        obj: bpy.types.Object,
        target: str,
        frames: list[int],
        filepath: str = "",
    ):
        self.context, self.obj, self.target, self.frames = context, obj, target, frames
        self.filepath = filepath
        self.mod = check(obj, target, filepath)
        self.index = 0
        self.results: list[np.ndarray] = []
        self.record: dict = {}
        self.frame_before = (context.scene.frame_current, context.scene.frame_subframe)

    @property
    def progress(self) -> float:
        return self.index / max(len(self.frames), 1)

    def start(self) -> None:
        obj = self.obj
        if is_baked(obj):
            clear(obj)
        display.restore(obj)
        stack = list(obj.modifiers)
        tail = stack[stack.index(self.mod) :]
        # Hidden while baking so the rest input is read directly; restored (or kept bypassed) later.
        self.tail_flags = {m.name: (m.show_viewport, m.show_render) for m in tail}
        for m in tail:
            m.show_viewport = False
        self.record = {
            "target": self.target,
            "bypassed": {self.mod.name: [self.tail_flags[self.mod.name][0], self.mod.show_render]},
            "keys": [],
            "frames": self.frames,
        }

    def step(self) -> bool:
        """Bake one frame; True when all frames are done."""
        frame = self.frames[self.index]
        self.context.scene.frame_set(frame)
        depsgraph = self.context.evaluated_depsgraph_get()
        bound = bind.cached_bind(self.obj, depsgraph)
        wanted = factor.resolve(self.obj, bound)
        posed = bound.posed(depsgraph)
        positions, _ = posed.skin(wanted.values(posed))
        if self.target in ("SHAPE_KEYS", "CURRENT"):
            positions = positions - bound.rest_positions  # only the skinning displacement
        self.results.append(positions)
        self.index += 1
        return self.index >= len(self.frames)

    def _restore_tail(self) -> None:
        for m in self.obj.modifiers:
            if m.name in self.tail_flags:
                m.show_viewport, m.show_render = self.tail_flags[m.name]

    def cancel(self) -> None:
        self._restore_tail()
        self.context.scene.frame_set(self.frame_before[0], subframe=self.frame_before[1])
        display.apply(self.obj)

    def finish(self) -> None:
        obj = self.obj
        self._restore_tail()
        if self.target in ("PC2", "MDD"):
            self._write_cache()
        else:
            self._write_shape_keys()
        self.mod.show_viewport = False
        self.mod.show_render = False
        obj.hybrid_skin.bake_state = json.dumps(self.record)
        self.context.scene.frame_set(self.frame_before[0], subframe=self.frame_before[1])

    def _write_cache(self) -> None:
        frames = np.stack(self.results)
        start, step = self.frames[0], (self.frames[1] - self.frames[0]) if len(self.frames) > 1 else 1
        if self.target == "PC2":
            pointcache.write_pc2(self.filepath, frames, float(start), float(step))
        else:
            fps = self.context.scene.render.fps / self.context.scene.render.fps_base
            pointcache.write_mdd(self.filepath, frames, (np.array(self.frames) - start) / fps)
        cache = self.obj.modifiers.new(CACHE_MODIFIER, "MESH_CACHE")
        cache.cache_format = self.target
        cache.filepath = self.filepath
        cache.frame_start = float(start)
        cache.frame_scale = 1.0 / step
        cache.deform_mode = "OVERWRITE"
        with self.context.temp_override(object=self.obj):
            at = list(self.obj.modifiers).index(self.mod)
            self.obj.modifiers.move(len(self.obj.modifiers) - 1, at + 1)
        self.record["cache_modifier"] = cache.name

    def _write_shape_keys(self) -> None:
        obj = self.obj
        active = obj.active_shape_key_index
        self.record["created_basis"] = obj.data.shape_keys is None
        key_had_action = (
            obj.data.shape_keys is not None
            and obj.data.shape_keys.animation_data is not None
            and obj.data.shape_keys.animation_data.action is not None
        )
        if obj.data.shape_keys is None:
            obj.shape_key_add(name="Basis", from_mix=False)
        key = obj.data.shape_keys
        basis = key.reference_key
        base = bridge.shape_key_points(basis)  # raw fast path (Blender ≥ 4.1)
        names = []
        for frame, delta in zip(self.frames, self.results):
            name = f"{KEY_PREFIX}{frame:04d}" if self.target == "SHAPE_KEYS" else f"{KEY_PREFIX}Frame {frame}"
            kb = obj.shape_key_add(name=name, from_mix=False)
            bridge.set_shape_key_points(kb, base + delta.astype(np.float32))
            kb.relative_key = basis
            kb.value = 1.0 if self.target == "CURRENT" else 0.0
            names.append(kb.name)
        self.record["keys"] = names
        self.record["created_action"] = not key_had_action
        if self.target == "SHAPE_KEYS":
            self._key_values(key, names)
        obj.active_shape_key_index = active

    def _key_values(self, key: bpy.types.Key, names: list[str]) -> None:
        """Key i is 1 at its frame and 0 at its neighbours (linear), held at the ends of the range."""
        frames = self.frames
        for i, name in enumerate(names):
            kb = key.key_blocks[name]
            points = [(frames[i], 1.0)]
            if i > 0:
                points.append((frames[i - 1], 0.0))
            if i + 1 < len(frames):
                points.append((frames[i + 1], 0.0))
            for frame, value in points:
                kb.value = value
                kb.keyframe_insert("value", frame=frame)
            fcurve = _fcurves(key).find(f'key_blocks["{name}"].value')
            for point in fcurve.keyframe_points:
                point.interpolation = "LINEAR"


def clear(obj: bpy.types.Object) -> None:
    """Remove what a bake added and restore the modifier flags it changed."""
    record = json.loads(obj.hybrid_skin.bake_state or "{}")
    if not record:
        return
    cache = obj.modifiers.get(record.get("cache_modifier", ""))
    if cache is not None:
        obj.modifiers.remove(cache)
    key = obj.data.shape_keys
    if key is not None and record.get("keys"):
        curves = _fcurves(key)
        for name in record["keys"]:
            if curves is not None:
                fcurve = curves.find(f'key_blocks["{name}"].value')
                if fcurve is not None:
                    curves.remove(fcurve)
            kb = key.key_blocks.get(name)
            if kb is not None:
                obj.shape_key_remove(kb)
        if record.get("created_action") and key.animation_data is not None and key.animation_data.action:
            action = key.animation_data.action
            key.animation_data_clear()
            if action.users == 0:
                bpy.data.actions.remove(action)
        if record.get("created_basis") and len(key.key_blocks) == 1:
            obj.shape_key_clear()
    for name, (viewport, render) in record.get("bypassed", {}).items():
        mod = obj.modifiers.get(name)
        if mod is not None:
            mod.show_viewport, mod.show_render = viewport, render
    obj.hybrid_skin.bake_state = ""
    display.apply(obj)
