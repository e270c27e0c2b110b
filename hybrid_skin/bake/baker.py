"""Bake the hybrid result so renders, exporters and other add-ons see it (issue: Bake).

Targets:

* ``SHAPE_KEYS``: one shape key per baked frame, keyed 0 → 1 → 0 with linear interpolation so playback
  (and the glTF exporter's morph targets) shows the hybrid; between baked frames the result blends
  linearly. Each key stores only the *skinning displacement* on top of the Basis, so the user's own
  shape keys keep working (they are part of the rest input we skin, and Blender adds them again).
* ``CURRENT``: one shape key for the current frame ("apply as shape key").
* ``PC2`` / ``MDD``: a point cache file played back by a Mesh Cache modifier (lighter for long clips).

While a bake is active the Armature modifier is bypassed (viewport and render) and the GPU display is
off. The bake record (JSON in ``Object.hybrid_skin.bake_state``, it survives save/reload and undo) lists
exactly what the bake created: its shape keys, its F-Curves and the action they are in, whether it
created the Basis, the shape keys' animation data or that action, and the modifier it bypassed (by its
``persistent_uid``, so a renamed modifier is still found). ``clear`` removes only that: the user's own
drivers, the keyframes they added afterwards (even inside an action the bake created), their active
shape key and values stay. A point cache file stays on disk: it is the user's (nothing deletes files).

Refused (one sentence each, nothing changed): a mesh shared by several objects (a bake would deform
them all), shape-key targets with Shape Key Lock on or absolute shape keys (relative keys would not
play back), a point cache path relative to an unsaved file, a point cache Time Stretching slows past the
Mesh Cache's Frame Scale limit, a frame outside Blender's range; and, before a frame is played, a bake
larger than it can be (:func:`size_refusal`): more shape keys than a mesh holds, more memory than the
budget (:func:`..core.budget.memory_budget`), a point cache larger than the free space of its folder. A
frame whose skinning is not finite (NaN or infinity, e.g. a bone scaled by a driver gone wrong) stops the
bake with the frame's number, as the texture bakes refuse it.

Memory: shape keys hold every frame until they are written (the keys' own size); a point cache streams
its frames to a temporary file beside the target (:class:`..core.pointcache.PointCacheWriter`), renamed
into place when the last frame is in, so it holds one frame whatever the range.

Time Stretching (``render.frame_map_old/new``) makes Blender evaluate animation, shape-key values and a
Mesh Cache's sample at ``scene frame · old / new``: frames are sampled at scene frames (what the scene
shows) and keyed or scaled in that animation time (:func:`animation_time`), so they play back there.
"""

from __future__ import annotations

import math
import os
import shutil
import traceback
from collections.abc import Iterator, Sequence

import bpy
import numpy as np

from .. import bridge
from ..core import pointcache
from ..core.budget import MemoryBudget, bytes_text, memory_budget
from ..errors import HybridSkinError
from ..rig import baked, bind, checks, factor, setup, stack
from ..rig.bake_record import BakeRecord, unreadable
from ..rig.state import rig_state
from . import cache_file

KEY_PREFIX = "HS Bake "
CACHE_MODIFIER = "HybridSkin Cache"
TARGETS = ("SHAPE_KEYS", "CURRENT", "PC2", "MDD")
#: Blender's frame range (MINAFRAME … MAXFRAME): ``scene.frame_set`` clamps anything outside it.
BLENDER_FRAMES = (-1048574, 1048574)
#: The Mesh Cache modifier's largest Frame Scale (its RNA range).
MAX_CACHE_FRAME_SCALE = 100.0
#: The most shape keys a mesh holds: a key's Relative To is a 16-bit index into the key's blocks.
MAX_SHAPE_KEYS = 32767


def bake_frames(start: int, end: int, step: int) -> range:
    """The frames a bake of ``start`` … ``end`` every ``step`` frames samples (a range: its length is known
    before anything is built)."""
    if step <= 0:
        raise HybridSkinError(f"Frame step must be at least 1, got {step}")
    for frame in (start, end):
        if not BLENDER_FRAMES[0] <= frame <= BLENDER_FRAMES[1]:
            raise HybridSkinError(
                f"Frame {frame} is outside Blender's frame range ({BLENDER_FRAMES[0]} to "
                f"{BLENDER_FRAMES[1]}): choose a Start and End inside it"
            )
    if end < start:
        raise HybridSkinError(
            f"Frame range {start}–{end} is reversed: the end must not come before the start"
        )
    return range(start, end + 1, step)


def _frames_text(frames: Sequence[int]) -> str:
    step = frames[1] - frames[0] if len(frames) > 1 else 1
    every = "every frame" if step == 1 else f"every {step}"
    return f"Frames {frames[0]:,}–{frames[-1]:,} ({every}) are {len(frames):,}"


def size_refusal(
    obj: bpy.types.Object, target: str, frames: Sequence[int], budget: MemoryBudget, filepath: str = ""
) -> str | None:
    """Why a bake of ``frames`` to ``target`` is larger than it can be, in one sentence naming the frames
    and what would fit; ``None`` when it fits. Counts only: nothing is sampled."""
    points, count = len(obj.data.vertices), len(frames)
    step = frames[1] - frames[0] if count > 1 else 1
    if target in ("PC2", "MDD"):
        size = pointcache.cache_bytes(target, points, count)
        folder = os.path.dirname(filepath) or "."
        free = shutil.disk_usage(folder).free
        if size > free:
            name = os.path.basename(filepath)
            return (
                f"{_frames_text(frames)} frames of {points:,} vertices: '{name}' would be {bytes_text(size)} "
                f"and '{folder}' has {bytes_text(free)} free; free some space, choose another folder or bake "
                "fewer frames"
            )
        return None
    key = obj.data.shape_keys
    have = len(key.key_blocks) if key is not None else 1  # the Basis the bake adds
    room = MAX_SHAPE_KEYS - have
    if count > room:
        last = frames[0] + (room - 1) * step
        wider = math.ceil((frames[-1] - frames[0]) / max(room - 1, 1))
        return (
            f"{_frames_text(frames)} shape keys for '{obj.name}', which has {have:,}: a mesh holds at most "
            f"{MAX_SHAPE_KEYS:,} (a key's Relative To is a 16-bit index). Bake at most {room:,} frames: an "
            f"End of at most {last:,}, or a Step of at least {wider:,}; or bake to a point cache"
        )
    held = 2 * 12 * points * count  # the frames held until written, then the keys themselves
    if not budget.allows(held):
        fits = max(1, budget.bytes // (24 * points))
        return (
            f"{_frames_text(frames)} shape keys of {points:,} vertices: the bake would hold about "
            f"{bytes_text(held)} in memory, over the budget of {budget}; bake fewer frames (about {fits:,} "
            "fit), or to a point cache, which streams its frames to the file"
        )
    return None


def key_name(frame: int) -> str:
    """``HS Bake 0001``; negative frames ``HS Bake -0005`` (four digits after the sign too)."""
    return f"{KEY_PREFIX}{frame:04d}" if frame >= 0 else f"{KEY_PREFIX}-{-frame:04d}"


def animation_time(scene: bpy.types.Scene) -> float:
    """Animation frames per scene frame: Time Stretching (Output ▸ Frame Range) evaluates every
    animation, shape-key values and a Mesh Cache's sample included, at ``frame · old / new``."""
    return scene.render.frame_map_old / scene.render.frame_map_new


def check(
    obj: bpy.types.Object, target: str, filepath: str = "", *, replace: bool = False
) -> bpy.types.Modifier:
    """Raise :class:`..errors.HybridSkinError` unless ``obj`` can be baked to ``target`` (a point cache: at
    ``filepath``, over a file there only if it is the object's own or ``replace``).

    Returns the Armature modifier the bake replaces."""
    checks.editable_mesh(obj)
    if not obj.hybrid_skin.enabled:
        raise HybridSkinError(f"'{obj.name}' does not use Hybrid Skin: add it first (Hybrid Skin ▸ Add)")
    check_bake_record(obj)
    try:  # the display's record (the bake takes the display off while it samples)
        setup.load(obj)
    except (HybridSkinError, ValueError, TypeError, KeyError, AttributeError) as err:
        raise HybridSkinError(
            f"'{obj.name}' holds a Hybrid Skin display record this build cannot read ({err}): it is left as "
            "it was, and the object is not baked"
        ) from err
    checks.single_user_mesh(obj, "a bake")
    if target not in TARGETS:
        raise HybridSkinError(f"Unknown bake target '{target}'")
    mod = stack.armature_modifier(obj, stack.followed_modifier_name(obj))
    checks.validate(obj, mod)
    modifiers = stack.user_modifiers(obj)
    # Shape keys act before the modifiers above: one that moves vertices would move the baked ones too.
    # One that only changes weights leaves them where they are (the Armature modifier is off then).
    above = [
        m.name
        for m in modifiers[: modifiers.index(mod)]
        if (m.show_viewport or m.show_render) and m.type not in stack.WEIGHT_ONLY_MODIFIER_TYPES
    ]
    if above and target in ("SHAPE_KEYS", "CURRENT"):
        raise HybridSkinError(
            f"Modifiers {above} sit above '{mod.name}' on '{obj.name}': shape keys act before them. "
            "Apply or move them below, or bake to a point cache"
        )
    if target in ("SHAPE_KEYS", "CURRENT"):
        _check_shape_keys(obj)
    if target in ("PC2", "MDD"):
        if not filepath:
            raise HybridSkinError("Choose a point cache file name")
        filepath = checks.absolute_path(filepath, "point cache")
        if os.path.isdir(filepath):
            raise HybridSkinError("Choose a point cache file name")
        folder = os.path.dirname(filepath) or "."
        if not os.path.isdir(folder) or not os.access(folder, os.W_OK):
            raise HybridSkinError(f"Cannot write to '{folder}': choose a writable folder")
        if not replace and (why := cache_file.refusal(obj, target, filepath)) is not None:
            raise HybridSkinError(why)
    return mod


def check_bake_record(obj: bpy.types.Object) -> None:
    """Refuse, naming the object, when its previous bake's record cannot be read: which keys or modifier
    that bake added is unknown, so nothing may take it off or bake over it; the record is left as it was
    (a newer build, or the one that made it, can read it)."""
    why = unreadable(obj.hybrid_skin.bake_state)
    if why is not None:
        raise HybridSkinError(
            f"'{obj.name}' holds a Hybrid Skin bake whose record this build cannot read ({why}): it is left "
            "as it was; remove that bake's shape keys or Mesh Cache modifier by hand, or open the file with "
            "the build that baked it"
        )


def _check_shape_keys(obj: bpy.types.Object) -> None:
    """Baked keys are relative keys that play by their values: refuse where they would not."""
    key = obj.data.shape_keys
    if obj.show_only_shape_key:
        raise HybridSkinError(
            f"Shape Key Lock is on for '{obj.name}': only the active shape key would show, not the baked "
            "ones; turn it off (Shape Keys panel, pin icon) or bake to a point cache"
        )
    if key is not None and not key.use_relative:
        raise HybridSkinError(
            f"'{obj.name}' uses absolute shape keys, which play by evaluation time, not by value: make "
            "them relative (Shape Keys panel ▸ Relative) or bake to a point cache"
        )


class Baker:
    """A bake: a :class:`..operator_base.Job` (:meth:`steps`), made of ``start()``, ``step()`` until it
    returns True, then ``finish()``; closing :meth:`steps` early (Esc, an error) is ``cancel()``."""

    def __init__(
        self,
        context: bpy.types.Context,
        obj: bpy.types.Object,
        target: str,
        frames: Sequence[int],
        filepath: str = "",
        *,
        memory_budget_mib: float = 0.0,
        replace_file: bool = False,
    ):
        self.context, self.obj, self.target, self.frames = context, obj, target, frames
        self.filepath = filepath
        self.mod = check(obj, target, filepath, replace=replace_file)
        if not frames:
            raise HybridSkinError("No frame to bake: the range is empty")
        if target in ("PC2", "MDD"):
            self.filepath = checks.absolute_path(filepath, "point cache")  # where the file is written
            # What the Mesh Cache modifier holds: a path relative to the .blend (``//``) stays relative, as
            # Blender keeps its own, so the project folder can move and Save As remaps it.
            self.cache_path = filepath if filepath.startswith("//") else self.filepath
            self._check_cache_speed(context.scene)
        factor.resolve(obj)  # a missing factor group is refused before anything changes
        budget = memory_budget(memory_budget_mib)
        if (why := size_refusal(obj, target, frames, budget, self.filepath)) is not None:
            raise HybridSkinError(why)
        self.index = 0
        self.results: list[np.ndarray] = []  # shape keys: each frame's displacement until they are written
        self.cache: pointcache.PointCacheWriter | None = None  # point caches: frames go to the file
        self.replaced = False  # whether the bake replaced a previous bake of the object (said when done)
        self.record = BakeRecord(target=target, frames=list(frames))
        self.frame_before = (context.scene.frame_current, context.scene.frame_subframe)

    def steps(self) -> Iterator[float]:
        """The whole bake, one frame per step (progress in [0, 1])."""
        self.start()
        try:
            while not self.step():
                yield self.progress
        except BaseException:  # closed (Esc) or failed: the scene, frame, modifiers and display as they were
            self.cancel()
            raise
        self.finish()  # a write that fails takes back what it wrote itself
        yield 1.0

    @property
    def frame_step(self) -> int:
        return (self.frames[1] - self.frames[0]) if len(self.frames) > 1 else 1

    def _check_cache_speed(self, scene: bpy.types.Scene) -> None:
        """The Mesh Cache reads one sample per ``frame_step · old / new`` animation frames (see
        :meth:`_write_cache`); its Frame Scale cannot go above 100."""
        if 1.0 / (self.frame_step * animation_time(scene)) > MAX_CACHE_FRAME_SCALE:
            render = scene.render
            raise HybridSkinError(
                f"Time Stretching {render.frame_map_old} → {render.frame_map_new} slows the animation more "
                "than a Mesh Cache modifier can follow (Frame Scale at most 100): bake to shape keys, "
                "or set Time Stretching closer to 1:1 (Output ▸ Frame Range)"
            )

    @property
    def progress(self) -> float:
        return self.index / max(len(self.frames), 1)

    def start(self) -> None:
        obj = self.obj
        # Until finish or cancel the object is neither set up nor baked: the handlers leave it alone.
        rig_state().held.add(obj.session_uid)
        # Modifiers hidden: not edits of what the bind read (edits made before, e.g. weights by a script,
        # are evaluated first and mark the bind). A previous bake stays whole until this one has its
        # frames (Esc or a failure while sampling leaves it as it was); the bind leaves its keys out.
        with bind.own_edits([obj]):
            setup.restore(obj)
            modifiers = list(obj.modifiers)
            tail = modifiers[modifiers.index(self.mod) :]
            # Hidden while baking so the rest input is read directly; restored (or kept bypassed) later.
            self.tail_flags = [(m, m.show_viewport, m.show_render) for m in tail]
            for m in tail:
                m.show_viewport = False
        if self.target in ("PC2", "MDD"):
            self.cache = self._open_cache()

    def step(self) -> bool:
        """Bake one frame; True when all frames are done. Current Frame keeps the scene's sub-frame (what
        the scene shows at frame 6.5 is baked, not frame 6)."""
        frame = self.frames[self.index]
        subframe = self.frame_before[1] if self.target == "CURRENT" else 0.0
        self.context.scene.frame_set(frame, subframe=subframe)
        depsgraph = self.context.evaluated_depsgraph_get()
        with np.errstate(all="ignore"):  # a pose gone infinite: refused below in one sentence, not warned
            bound = bind.cached_bind(self.obj, depsgraph)
            wanted = factor.resolve(self.obj, bound)
            posed = bound.posed(depsgraph)
            positions, _ = posed.skin(wanted.values(posed))
        self._check_finite(frame, positions)
        if self.cache is not None:
            try:
                self.cache.write(positions)
            except OSError as err:  # a full disk, a share gone: one sentence (the bake is taken back)
                raise self._write_error(err) from err
        else:
            self.results.append(positions - bound.rest_positions)  # only the skinning displacement
        self.index += 1
        return self.index >= len(self.frames)

    def _check_finite(self, frame: int, positions: np.ndarray) -> None:
        """A frame skinned to NaN or infinity stops the bake, as the texture bakes refuse it."""
        bad = ~np.isfinite(positions).all(axis=1)
        if bad.any():
            raise HybridSkinError(
                f"Frame {frame:,} of '{self.obj.name}' deforms {np.count_nonzero(bad):,} vertices to NaN or "
                "infinity (a bone scaled to infinity, a driver or keyframe gone wrong): fix the pose at that "
                "frame or leave it out of the range"
            )

    def _open_cache(self) -> pointcache.PointCacheWriter:
        """The cache file, streamed: its header now (every count is known), each frame as it is sampled."""
        start, step = self.frames[0], self.frame_step
        render = self.context.scene.render
        fps = render.fps / render.fps_base
        times = (np.asarray(self.frames, dtype=np.float64) - start) / fps
        try:
            return pointcache.PointCacheWriter(
                self.filepath, self.target, len(self.obj.data.vertices), len(self.frames),
                start_frame=float(start), sample_rate=float(step), times=times,
            )  # fmt: skip
        except OSError as err:
            raise self._write_error(err) from err

    def _write_error(self, err: OSError) -> HybridSkinError:
        reason = err.strerror or err
        return HybridSkinError(f"Cannot write '{self.filepath}' ({reason}): choose a writable file")

    def _restore_tail(self) -> None:
        for m, viewport, render in getattr(self, "tail_flags", ()):
            m.show_viewport, m.show_render = viewport, render

    def cancel(self) -> None:
        if self.cache is not None:
            self.cache.discard()
        try:
            # errstate: the scene may be back at a frame whose pose is not finite (the refusal said so)
            with bind.own_edits([self.obj]), np.errstate(all="ignore"):
                self._restore_tail()
                self.context.scene.frame_set(self.frame_before[0], subframe=self.frame_before[1])
                setup.apply(self.obj)
        finally:
            rig_state().held.discard(self.obj.session_uid)

    def finish(self) -> None:
        try:
            # Baked keys are left out of the rest input: the bind stays valid.
            with bind.own_edits([self.obj]):
                self._finish()
        finally:
            rig_state().held.discard(self.obj.session_uid)

    def _finish(self) -> None:
        obj = self.obj
        self._restore_tail()
        ref = stack.modifier_ref(self.mod)
        self.replaced = baked.is_baked(obj)
        if self.replaced:  # the previous bake goes now that this one has every frame: the user's flags back
            baked.clear(obj)
            setup.restore(obj)
            self.mod = stack.find_modifier(obj, ref)
        self.record.bypassed = [[*ref, self.mod.show_viewport, self.mod.show_render]]
        try:
            if self.target in ("PC2", "MDD"):
                self._write_cache()
            else:
                self._write_shape_keys()
        except Exception as err:  # nothing half-done: take back what was written, then report
            obj.hybrid_skin.bake_state = self.record.save()
            baked.clear(obj)
            if self.cache is not None:
                self.cache.rollback()  # the file at the path is what it was
            self.context.scene.frame_set(self.frame_before[0], subframe=self.frame_before[1])
            if not self.replaced:
                raise
            if not isinstance(err, HybridSkinError):
                traceback.print_exception(err)  # a bug: the details for a bug report
            what = str(err) if isinstance(err, HybridSkinError) else f"{type(err).__name__}: {err}"
            raise HybridSkinError(
                f"The bake failed while writing ({what}): it was taken back, but the previous bake of "
                f"'{obj.name}' had been cleared for it; bake again"
            ) from err
        if self.cache is not None:
            self.cache.finalize()
        self.mod.show_viewport = False
        self.mod.show_render = False
        obj.hybrid_skin.bake_state = self.record.save()
        self.context.scene.frame_set(self.frame_before[0], subframe=self.frame_before[1])

    def _write_cache(self) -> None:
        start, step = self.frames[0], self.frame_step
        try:
            self.cache.commit()
        except OSError as err:
            raise self._write_error(err) from err
        cache = self.obj.modifiers.new(CACHE_MODIFIER, "MESH_CACHE")
        self.record.cache_modifier = stack.modifier_ref(cache)
        cache.cache_format = self.target
        cache.filepath = self.cache_path
        # The Mesh Cache reads sample (animation frame · frame_scale − frame_start), the animation frame
        # being the scene frame · old / new under Time Stretching: scene frame ``start + i·step`` reads
        # sample i.
        cache.frame_start = float(start) / step
        cache.frame_scale = 1.0 / (step * animation_time(self.context.scene))
        cache.deform_mode = "OVERWRITE"
        with self.context.temp_override(object=self.obj):
            at = list(self.obj.modifiers).index(self.mod)
            self.obj.modifiers.move(len(self.obj.modifiers) - 1, at + 1)

    def _write_shape_keys(self) -> None:
        obj = self.obj
        active = obj.active_shape_key_index
        record = self.record
        record.active_key = active
        record.created_basis = obj.data.shape_keys is None
        if obj.data.shape_keys is None:
            obj.shape_key_add(name="Basis", from_mix=False)
        key = obj.data.shape_keys
        basis = key.reference_key
        base = bridge.shape_key_points(basis)  # raw fast path (Blender ≥ 4.1)
        for frame, delta in zip(self.frames, self.results):
            name = key_name(frame) if self.target == "SHAPE_KEYS" else f"{KEY_PREFIX}Frame {frame}"
            kb = obj.shape_key_add(name=name, from_mix=False)
            record.keys.append(kb.name)  # recorded at once: a failure later clears exactly these
            bridge.set_shape_key_points(kb, base + delta.astype(np.float32))
            kb.relative_key = basis
            kb.value = 1.0 if self.target == "CURRENT" else 0.0
        if self.target == "SHAPE_KEYS":
            anim = key.animation_data
            record.created_animation_data = anim is None
            record.created_action = anim is None or anim.action is None
            record.last_slot = getattr(anim, "last_slot_identifier", "") if anim is not None else ""
            self._key_values(key, record.keys)
        obj.active_shape_key_index = active

    def _key_values(self, key: bpy.types.Key, names: list[str]) -> None:
        """Key i is 1 at its frame and 0 at its neighbours (linear), held at the ends of the range.

        Keyed in animation frames: under Time Stretching Blender evaluates the values at
        ``scene frame · old / new``, so scene frame f shows the key baked at f."""
        scale = animation_time(self.context.scene)
        frames = [frame * scale for frame in self.frames]
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
            if i == 0:
                self.record.action = key.animation_data.action.name
            fcurve = baked.fcurves(key).find(baked.data_path(name))
            for point in fcurve.keyframe_points:
                point.interpolation = "LINEAR"


