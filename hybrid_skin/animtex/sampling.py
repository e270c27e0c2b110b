"""How a texture bake samples the scene: at each frame it needs, the add-on's own skinning of every mesh
(the truth), the bone palette and, with Auto, each bone's Auto data. :class:`Sampling` is the part of
:class:`.bake.TextureBake` that does it; the bake's state (parts, options, kind, samples, the animation
state it plays) is the bake's own, set up in its ``__init__`` and ``steps``.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import bpy
import numpy as np

from ..core.animtex import Clip, Kind
from ..core.animtex.samples import FrameSample, clip_frames, frame_key
from ..rig import bind
from ..rig.mesh_bind import MeshBind
from . import palette
from .scene import clip_for

__all__ = ["Sampling"]


class Sampling:
    """The sampling methods of :class:`.bake.TextureBake` (which it inherits)."""

    def _step_frames(self, steps: Sequence[float]) -> tuple[list[tuple[int, float]], set[tuple[int, float]]]:
        """Every ``(clip, frame)`` the ``steps`` need (stored and halfway), and the stored ones."""
        needed: dict[tuple[int, float], None] = {}
        stored: set[tuple[int, float]] = set()
        for ci, action in enumerate(self.actions):
            for step in steps:
                frames, mids = clip_frames(clip_for(action, self.fps, step))
                stored.update((ci, frame_key(f)) for f in frames)
                needed.update({(ci, frame_key(f)): None for f in (*frames, *mids)})
        return list(needed), stored

    def _binds(self, depsgraph) -> list[MeshBind]:
        return [bind.cached_bind(p.obj, depsgraph) for p in self.parts]

    def _evaluate(self, depsgraph, phase: str) -> tuple[FrameSample, list]:
        """The sample at the current frame and each mesh's factors; skinning is ``phase`` for VERTEX (it
        is the texture's data), ``truth`` for bone kinds (only the error report reads it)."""
        positions, normals, factors, extremes = [], [], [], []
        bones = self.kind is not Kind.VERTEX
        with self._phase(phase):
            binds = self._binds(depsgraph)
        auto = self.auto_profile is not None
        with self._phase("truth" if bones else phase):
            posed = [b.posed(depsgraph) for b in binds]
            for part, pose in zip(self.parts, posed):
                # bone kinds: the runtime factor, or with Auto the core's Auto factors (the mode is Auto)
                override = self.bone_factor if bones and not auto else None
                wanted = self._factor(part.obj, pose.bind, override)
                factors.append(wanted.values(pose))
                if bones:  # the report's worst over every runtime factor: also at factors 0 and 1
                    p, n, ends = pose.skin_with_ends(factors[-1])
                    extremes.append(ends)
                else:
                    p, n = pose.skin(factors[-1], normals=True)
                positions.append(p)
                normals.append(n)
            if not bones:  # the texture's items: vertices, then further corner normal groups
                item_positions, item_normals = self.items.frame(posed, factors, positions, normals)
        with self._phase(phase):
            matrices = palette.skinning_matrices(posed[0], self.rest_bone) if bones else None
            world = [p.obj.evaluated_get(depsgraph).matrix_world for p in self.parts]
        world = np.array(world, dtype=np.float64)
        if not bones:
            return FrameSample(item_positions, item_normals, None, world), factors
        join = np.concatenate if len(self.parts) > 1 else (lambda arrays: arrays[0])
        ends = np.concatenate(extremes, axis=1)
        sample = FrameSample(join(positions), join(normals), matrices, world, ends)
        if auto:
            with self._phase(phase):
                bones_data = posed[0].auto_bone_data(self.auto_profile).bones
                if self.rest_bone:  # the identity bone: no twist, no swing
                    bones_data = np.concatenate([bones_data, np.zeros((1, bones_data.shape[1]), np.float32)])
            sample.auto_bones, sample.auto_factors = bones_data, join(factors)
        return sample, factors

    def _prepare_bones(self, depsgraph) -> None:
        """Palette names, pivots and per-vertex influences (bone kinds), checked at the start frame."""
        posed = [b.posed(depsgraph) for b in self._binds(depsgraph)]
        prepared = palette.prepare(self.armature.name, self.parts, posed)
        if self.auto_profile is not None:  # each vertex's Auto rest data, in the armature's rest space
            for part, pose in zip(self.parts, posed):
                part.auto_rest = pose.bind.auto_rest(pose.target_to_armature)
        self.bone_names, self.bone_pivots, self.rest_bone = (
            prepared.names,
            prepared.pivots,
            prepared.rest_bone,
        )
        if prepared.truncated:
            slots = palette.BONE_SLOTS
            self.warnings.append(
                f"{prepared.truncated} vertices have more than {slots} influences: kept the largest "
                f"{slots}, renormalised (the error report includes the difference)"
            )

    def _sample(self, steps: Sequence[float]) -> Iterator[float]:
        """Sample what ``steps`` need and is not sampled yet; yields progress (capped at 0.9)."""
        todo, stored = self._step_frames(steps)
        for key in todo:
            if key in self.samples:
                continue
            ci, frame = key
            phase = "sample" if key in stored else "truth"
            with self._phase(phase):
                if ci != self._playing:
                    self._anim.play(self.actions[ci])
                    self._playing = ci
                self._anim.set_frame(frame)
                depsgraph = bpy.context.evaluated_depsgraph_get()
            sample, factors = self._evaluate(depsgraph, phase)
            if self._oracle.due():  # Blender's own evaluation here: the gap the report adds
                with self._phase("truth"):
                    runtime = None if self.auto_profile else self.bone_factor  # Auto: the samples' factors
                    sample.oracle = self._oracle.measure(sample, factors, runtime)
            self.samples[key] = sample
            self._diagonal = None
            yield min(0.9, 0.9 * len(self.samples) / self._planned)

    def _loop_end_worlds(self, clips: Sequence[Clip]) -> dict[int, np.ndarray]:
        """The first mesh's object matrix at each looping clip's end frame, where it wraps: a frame
        no sample holds, needed only for the loop's root motion (one frame change, no skinning)."""
        ends = {}
        for ci, clip in enumerate(clips):
            if clip.loop:
                if ci != self._playing:
                    self._anim.play(self.actions[ci])
                    self._playing = ci
                self._anim.set_frame(clip.frame_end)
                obj = self.parts[0].obj.evaluated_get(bpy.context.evaluated_depsgraph_get())
                ends[ci] = np.array(obj.matrix_world, dtype=np.float64)
        return ends
