"""How a texture bake samples the scene, in two passes that keep only what the texture needs.

1. :meth:`Sampling.sample_stored`: at each stored frame, what the encoder needs (:class:`StoredFrames`):
   VERTEX the add-on's own skinning of every mesh (the texture's data), bone kinds the palette's skinning
   matrices and, with Auto, each bone's Auto data, and every mesh's object matrix.
2. :meth:`Sampling.check`: the textures encoded from them are compared with the truth at every stored and
   halfway frame, one sample at a time (:class:`..core.animtex.verify.ReportStream`): VERTEX stored
   frames are what pass 1 kept, every other sample is skinned again and dropped once compared. So the
   bake's memory is the stored frames plus one sample, whatever the clip's length (issue 35).

:class:`Sampling` is the part of :class:`.bake.TextureBake` that does it; the bake's state (parts, options,
kind, the animation state it plays) is the bake's own, set up in its ``__init__`` and ``steps``.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import bpy
import numpy as np

from ..core.animtex import AnimationTexture, Clip, Kind
from ..core.animtex.samples import FrameSample, StoredFrames, clip_frames, frame_key
from ..core.animtex.verify import ReportStream
from ..errors import HybridSkinError
from ..rig import bind
from ..rig.mesh_bind import MeshBind
from . import palette

__all__ = ["Sampling"]


class Sampling:
    """The sampling methods of :class:`.bake.TextureBake` (which it inherits)."""

    def _binds(self, depsgraph) -> list[MeshBind]:
        return [bind.cached_bind(p.obj, depsgraph) for p in self.parts]

    def _go_to(self, clip: int, frame: float, phase: str, *, sample: bool = True):
        """Play clip ``clip`` at scene ``frame``; the evaluated depsgraph there. A ``sample`` is counted
        (:attr:`evaluations`, :attr:`evaluated`: what the tests hold the plan to)."""
        with self._phase(phase):
            if clip != self._playing:
                self._anim.play(self.actions[clip])
                self._playing = clip
            self._anim.set_frame(frame)
            if sample:
                self.evaluations += 1
                self.evaluated.add((clip, frame_key(frame)))
            return bpy.context.evaluated_depsgraph_get()

    def _worlds(self, depsgraph) -> np.ndarray:
        return np.array([p.obj.evaluated_get(depsgraph).matrix_world for p in self.parts], dtype=np.float64)

    def _truth(self, depsgraph, phase: str) -> tuple[FrameSample, list]:
        """The truth at the current frame and each mesh's factors; skinning is ``phase`` for VERTEX (it
        is the texture's data), ``truth`` for bone kinds (only the error report reads it)."""
        positions, normals, factors, extremes = [], [], [], []
        bones = self.kind is not Kind.VERTEX
        with self._phase(phase), np.errstate(all="ignore"):  # non-finite: refused by the callers
            binds = self._binds(depsgraph)
        auto = self.auto_profile is not None
        with self._phase("truth" if bones else phase), np.errstate(all="ignore"):  # non-finite: refused
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
                for i, tail in self.tails.items():  # with the user's modifiers after the skinning
                    self.items.set_evaluated(i, item_positions, item_normals, *tail.apply(positions[i]))
        world = self._worlds(depsgraph)
        if not bones:
            return FrameSample(item_positions, item_normals, None, world), factors
        join = np.concatenate if len(self.parts) > 1 else (lambda arrays: arrays[0])
        sample = FrameSample(join(positions), join(normals), None, world, np.concatenate(extremes, axis=1))
        if auto:
            sample.auto_factors = join(factors)
        return sample, factors

    def _palette(self, depsgraph) -> dict[str, np.ndarray]:
        """Bone kinds at a stored frame: the palette's skinning matrices and, with Auto, each bone's Auto
        data (no mesh is skinned: the error report skins the truth when it compares)."""
        with self._phase("sample"), np.errstate(all="ignore"):  # non-finite: refused by the caller
            posed = self._binds(depsgraph)[0].posed(depsgraph)
            out = {"matrices": palette.skinning_matrices(posed, self.rest_bone)}
            if self.auto_profile is not None:
                data = posed.auto_bone_data(self.auto_profile).bones
                if self.rest_bone:  # the identity bone: no twist, no swing
                    data = np.concatenate([data, np.zeros((1, data.shape[1]), np.float32)])
                out["auto_bones"] = data
        return out

    def _prepare_bones(self, depsgraph) -> None:
        """Palette names, pivots and per-vertex influences (bone kinds), checked at the current frame
        (no frame is played: the bake's size depends on the palette's)."""
        posed = [b.posed(depsgraph) for b in self._binds(depsgraph)]
        prepared = palette.prepare(self.armature.name, self.parts, posed)
        if self.auto_profile is not None:  # each vertex's Auto rest data, in the armature's rest space
            for part, pose in zip(self.parts, posed):
                part.auto_rest = pose.bind.auto_rest(pose.target_to_armature)
        self.bone_names, self.bone_pivots = prepared.names, prepared.pivots
        self.rest_bone = prepared.rest_bone
        if prepared.truncated:
            slots = palette.BONE_SLOTS
            self.warnings.append(
                f"{prepared.truncated} vertices have more than {slots} influences: kept the largest "
                f"{slots}, renormalised (the error report includes the difference)"
            )

    def _stored_fields(self) -> dict[str, tuple[tuple[int, ...], type]]:
        parts = (len(self.parts), 4, 4)
        if self.kind is Kind.VERTEX:
            items = (self.items.item_count, 3)
            fields = {
                "positions": (items, np.float32),
                "normals": (items, np.float32),
                "world": (parts, np.float64),
            }
            if self.options.tangents:  # Blender's tangents of the deformed meshes (normal maps)
                fields["tangents"] = ((self.items.item_count, 4), np.float32)
            return fields
        bones = len(self.bone_names)
        fields = {"matrices": ((bones, 4, 4), np.float64), "world": (parts, np.float64)}
        if self.auto_profile is not None:
            fields["auto_bones"] = ((bones, 8), np.float32)
        return fields

    def _measure_gap(self, clip: int, frame: float, sample: FrameSample, factors: list) -> None:
        """Blender's own evaluation here, where the oracle's stride says: the gap the report adds."""
        key = (clip, frame_key(frame))
        if key in self.gaps or not self._oracle.due():
            return
        with self._phase("truth"):
            runtime = None if self.auto_profile else self.bone_factor  # Auto: the samples' factors
            self.gaps[key] = self._oracle.measure(sample, factors, runtime)

    def _finite(self, clip: int, frame: float, *arrays: np.ndarray) -> None:
        """A sample that is not finite (NaN or infinity: a bone scaled past float range, a driver gone
        wrong) stops the bake, naming the frame, before anything is encoded or written."""
        if all(np.isfinite(a).all() for a in arrays):
            return
        raise HybridSkinError(
            f"Frame {frame:g} of '{self.actions[clip].name}' deforms the meshes to NaN or infinity (a bone "
            "scaled past float range, a driver or keyframe gone wrong): fix the pose at that frame or leave "
            "the action out"
        )

    def sample_stored(self, step: float) -> Iterator[float]:
        """Generator returning the :class:`StoredFrames` of every clip at ``step``; yields progress."""
        clips = self._clips(step)
        stored = StoredFrames(clips, self._stored_fields())
        for ci, clip in enumerate(clips):
            for j, frame in enumerate(clip.sample_frames()):
                depsgraph = self._go_to(ci, frame, "sample")
                if self.kind is Kind.VERTEX:
                    sample, factors = self._truth(depsgraph, "sample")
                    self._finite(ci, frame, sample.positions, sample.normals)
                    self._measure_gap(ci, frame, sample, factors)
                    stored.put(ci, j, positions=sample.positions, normals=sample.normals, world=sample.world)
                    if self.options.tangents:
                        with self._phase("sample"):
                            tangents = self.items.tangents(
                                self.parts, self.engine.tangent_uv_maps, sample.positions, sample.normals
                            )
                        stored.put(ci, j, tangents=tangents)
                else:
                    bones = self._palette(depsgraph)
                    self._finite(ci, frame, *bones.values())
                    stored.put(ci, j, world=self._worlds(depsgraph), **bones)
                yield self._progress()
        return stored

    def check(self, stored: StoredFrames, textures: Sequence[AnimationTexture]) -> Iterator[float]:
        """Generator returning each texture's error report (:class:`ReportStream`): every clip's stored and
        halfway frames in time order, each compared with every texture while it is at hand."""
        streams = [
            ReportStream(t, self.parts, bone_factor=self.bone_factor, rest_items=self._rest_items)
            for t in textures
        ]
        for ci, clip in enumerate(stored.clips):
            stored_frames, mids = clip_frames(clip)
            order = sorted(
                [(f, "frames", j) for j, f in enumerate(stored_frames)]
                + [(f, "mid_frames", j) for j, f in enumerate(mids)]
            )
            for frame, half, j in order:
                if half == "frames" and self.kind is Kind.VERTEX:
                    truth = stored.truth(ci, j)  # the texture's own data: kept, not sampled again
                else:
                    depsgraph = self._go_to(ci, frame, "truth")
                    truth, factors = self._truth(depsgraph, "truth")
                    self._finite(ci, frame, truth.positions)
                    self._measure_gap(ci, frame, truth, factors)
                with self._phase("report"):
                    for stream in streams:
                        stream.add(ci, half, j, truth)
                yield self._progress()
        with self._phase("report"):
            return [stream.report() for stream in streams]

    def _progress(self) -> float:
        return min(0.9, 0.9 * self.evaluations / self._planned)

    def _loop_end_worlds(self, clips: Sequence[Clip]) -> dict[int, np.ndarray]:
        """The first mesh's object matrix at each looping clip's end frame, where it wraps: a frame
        no sample holds, needed only for the loop's root motion (one frame change, no skinning)."""
        ends = {}
        for ci, clip in enumerate(clips):
            if clip.loop:
                depsgraph = self._go_to(ci, clip.frame_end, "sample", sample=False)
                ends[ci] = np.array(self.parts[0].obj.evaluated_get(depsgraph).matrix_world, dtype=np.float64)
        return ends

