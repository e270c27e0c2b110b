"""Bake actions into vertex or bone animation textures (Johansson 2021): plan, sample, encode, check, write.

A :class:`TextureBake` runs as a generator (:meth:`TextureBake.steps` yields progress in 0..1) so the
operator can show a progress bar and cancel between frames; scripts call :func:`bake`. This module is
the orchestration; sampling each frame lives in :mod:`.sampling`, the scene side in :mod:`.scene`, the
bone palette in :mod:`.palette`, the size before sampling in :mod:`.bounds`, the error
report in :mod:`..core.animtex.verify`, the files in :mod:`.writing`, :mod:`.outputs` and :mod:`.files`, the
factors in :mod:`.factors`, the user's modifiers after the skinning in :mod:`.tail`, and the UI summary in
:mod:`.summary`.

1. **Target**: an armature and every mesh it deforms, or one mesh with an Armature modifier; one clip
   per action, sampled every ``frame_step`` scene frames over the action's frame range.
2. **Plan** (:mod:`.bounds`): every check that can fail runs in ``__init__``, and the texture's layout
   and the bytes the bake will hold are computed from counts alone: a texture taller than 16,384 rows or
   a bake over the memory budget is refused in one sentence before a frame is played.
3. **Sampling** (:mod:`.sampling`): each action is assigned to the armature in turn (NLA off; everything
   restored after); bones it does not key keep the scene's pose at bake start (or rest:
   ``unkeyed_bones_at_rest``). At every stored frame, what the encoder needs is kept (VERTEX: the
   add-on's own skinning, the truth; bone kinds: the palette's matrices). The baked meshes' Armature
   modifier and everything after it are hidden meanwhile: Blender need not deform the mesh at every
   sample for a result nobody reads (restored after, as the pose is).
4. **Encoding** (:mod:`.core.animtex`): VERTEX stores each vertex's offset from the mesh's own
   coordinates (what an engine has) and its normal, all meshes in one texture; bone kinds store the
   palette's skinning matrices ``inv(T2A) @ deform @ T2A`` in mesh space, pivots at the rest heads.
   A bone bake of meshes in factor mode Auto (a round profile, ``runtime_auto``) also stores each palette
   bone's Auto data per frame and each vertex's Auto rest data (:mod:`..core.animtex.auto`): runtimes
   compute Auto per vertex; the truth is then the add-on's skinning with its Auto factors.
5. **Error report**: the clips are played again; at every stored and halfway frame the truth (VERTEX
   stored frames: what step 3 kept) is compared with the texture decoded as the shaders do, one sample at a
   time, in scene units (world space) and in % of the truth's bounding-box diagonal. With a tolerance,
   the cheapest (frame step, precision) within it is picked (:func:`.core.animtex.encoding_candidates`
   order), every precision of a step checked in one pass over its frames.
6. **Writing** (:mod:`.writing`): the image (read back), the mesh data (the attributes named in
   ``mesh_attributes``), the exports and the sidecar, as one transaction committed with the sidecar last
   (:mod:`.outputs`): a failure puts the folder and the meshes back; files of another source are never
   replaced unless asked.
Options and result types, and the phases timed in :attr:`BakeResult.timings`, are in :mod:`.options`.
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

import bpy
import numpy as np

from ..core.animtex import (
    AnimationTexture,
    AutoBake,
    Clip,
    Kind,
    Precision,
    encode_bone_dq_animation,
    encode_bone_matrix_animation,
    encode_vertex_animation,
    encoding_candidates,
    pick_encoding,
    verify,
)
from ..core.animtex.auto import vertex_floats
from ..core.animtex.plan import TexturePlan
from ..core.animtex.samples import StoredFrames
from ..core.budget import memory_budget
from ..errors import HybridSkinError
from ..rig import bind
from ..rig.state import hold
from . import bounds
from .corners import CornerItems
from .engine_data import EngineData
from .export import check_exporter, check_names, check_placement
from .factors import Factors
from .files import (
    VERTEX_ATTRIBUTES,
    bone_attributes,
    check_directory,
    check_mesh_data,
)
from .options import AUTO_STEPS, MIN_FRAME_STEP, PHASES, BakeOptions, BakeResult, option_enum
from .oracle import OracleGap, with_oracle_gap
from .outputs import Source, default_stem, plan_outputs
from .sampling import Sampling
from .scene import (
    AnimationState,
    clip_for,
    compatible_actions,
    find_target,
    mesh_parts,
    resolve_actions,
    rigid_warning,
)
from .summary import last_summary
from .tail import TailBake, tail_warning, tails
from .writing import Writing

__all__ = ["MIN_FRAME_STEP", "PHASES", "BakeOptions", "BakeResult", "TextureBake", "bake"]


class TextureBake(Sampling, Factors, Writing):
    """One bake: validate in ``__init__`` (raises :class:`HybridSkinError`), then exhaust :meth:`run`."""

    def __init__(
        self,
        context: bpy.types.Context,
        obj: bpy.types.Object | None,
        options: BakeOptions,
        action_names: Sequence[str] | None = None,
    ):
        self.scene, self.options = context.scene, options
        self.kind, self.precision = option_enum(Kind, options.kind), option_enum(Precision, options.precision)
        self.armature, meshes = find_target(obj, self.scene)
        self.target = obj
        self.actions = resolve_actions(self.armature, action_names)
        self.fps = self.scene.render.fps / self.scene.render.fps_base
        options.validate()
        self.directory = check_directory(options.directory)
        given = bpy.path.clean_name(options.file_name) if options.file_name else ""
        self.stem = given or default_stem(obj.name, self.kind.value)
        self.frame_steps = AUTO_STEPS if options.tolerance > 0 else (options.frame_step,)
        if options.export_gltf and not options.write_mesh_data:
            raise HybridSkinError("The glTF export carries the mesh data: turn Mesh Data on to export glTF")
        if options.export_babylon and (self.kind is Kind.VERTEX or not options.export_gltf):
            raise HybridSkinError(
                "Babylon.js plays bone matrices on the glTF export: bake BONE_MATRIX or BONE_DQ with glTF on "
                "to export for Babylon.js"
            )
        self.parts = mesh_parts(meshes, single_user=options.write_mesh_data)
        if options.write_mesh_data:
            check_mesh_data(self.parts, self.kind)  # refused before anything is written
        self.warnings: list[str] = []
        #: Meshes without Hybrid Skin: the factor Blender shows them at (their Armature modifier's).
        self._shown = self.shown_factors()
        for part in self.parts:  # a bad number or mode, or a missing factor group: refused before sampling
            self._factor(part.obj)
        self.warnings += [
            f"Action '{a.name}' keys none of the bones of '{self.armature.name}': "
            "its clip holds still (the bones as the scene poses them)"
            for a in self.actions
            if a not in compatible_actions(self.armature)
        ]
        if (left_out := rigid_warning(self.armature, self.scene)) is not None:
            self.warnings.append(left_out)
        #: The round Auto profile a bone texture carries (its meshes in factor mode Auto), else None.
        self.auto_profile = self._runtime_auto()
        self.one_factor_warnings()
        if self.auto_profile and options.export_babylon:
            self.warnings.append(
                "Babylon.js's own player plays LBS only: the Auto this texture carries plays in the three.js "
                "runtime and the shader ports, not in Babylon.js"
            )
        if options.export_gltf:  # before anything is written: the exporter, its names, the placement
            check_exporter()
            check_names(self.parts, self._attributes()[1])
            if self.kind is not Kind.VERTEX:
                check_placement(self.parts)
        # Tangents, culling boxes, the instancing mesh: their refusals before anything is sampled or written
        self.engine = EngineData(self.parts, self.kind, options, self.auto_profile is not None)
        # VERTEX: one item per vertex and per further corner group (hard edges, custom normals, UV seams)
        vertex = self.kind is Kind.VERTEX
        self.items = CornerItems.of(self.parts, self.engine.rest_tangents) if vertex else None
        #: VERTEX: the meshes whose own modifiers after the Armature modifier Blender applies to the
        #: skinning at every sample (:mod:`.tail`), by part index.
        self.tails: dict[int, TailBake] = {}
        if self.kind is Kind.VERTEX:
            found, said = tails(self.parts, bpy.context.evaluated_depsgraph_get())
            self.tails = {i: TailBake(self.parts[i], names) for i, names in found.items()}
            self.warnings += said
        elif (cannot := tail_warning(self.parts)) is not None:
            self.warnings.append(cannot)
        self.timings: dict[str, float] = defaultdict(float)
        self.result: BakeResult | None = None
        # Bone kinds: the palette (names, mesh-space pivots, whether the identity rest bone is in it).
        self.bone_names: list[str] = []
        self.bone_pivots: np.ndarray | None = None
        self.rest_bone = False
        if self.kind is not Kind.VERTEX:
            self._prepare_bones(bpy.context.evaluated_depsgraph_get())
        #: What each (frame step, precision) the bake may encode will be, checked before any frame is played.
        self.plans = self._plan()
        #: Its files: the names checked, and what it may replace there (its own previous bake only).
        endings = tuple(dict.fromkeys(".png" if p.normalized else ".exr" for _, p in self.plans))
        own = last_summary(obj)
        self.outputs = plan_outputs(
            self.directory, self.stem, image_endings=endings, gltf=options.export_gltf,
            babylon=options.export_babylon, source=Source(obj.name, bpy.data.filepath, self.kind.value),
            instancing=options.export_instancing,
            own_sidecar=own.sidecar if own is not None else None, replace=options.replace_files,
        )  # fmt: skip
        # While :meth:`steps` samples: the armature's animation state (restored at the end), the clip
        # playing, the progress scale, Blender's own evaluation at the frames measured (the report's
        # oracle gap), the first mesh's world matrix at each looping clip's end frame (root motion), and
        # how many frames were played (``evaluated``: which).
        self._anim: AnimationState | None = None
        self._playing: int | None = None
        self._planned = 1
        self._cycle_end: dict[int, np.ndarray] = {}
        self._oracle: OracleGap | None = None
        self.gaps: dict[tuple[int, float], np.ndarray] = {}
        self.evaluations = 0
        self.evaluated: set[tuple[int, float]] = set()

    @contextmanager
    def _phase(self, name: str):
        start = time.perf_counter()
        try:
            yield
        finally:
            self.timings[name] += time.perf_counter() - start

    # --------------------------------------------------------------------------------- setup
    def _attributes(self) -> tuple[dict[str, str], list[str]]:
        """The sidecar's ``mesh_attributes`` and every attribute the bake writes on the meshes."""
        if self.kind is Kind.VERTEX:
            return dict(VERTEX_ATTRIBUTES), list(VERTEX_ATTRIBUTES.values())
        return bone_attributes(vertex_floats() if self.auto_profile else 0)

    def _plan(self) -> dict[tuple[float, Precision], TexturePlan]:
        """The texture of every (frame step, precision) the bake may encode, from counts alone; refused in
        one sentence (the frame range and what would fit) when none can be baked. The tolerance search
        keeps the steps whose rows fit and whose search fits the memory budget (a warning names the
        others)."""
        budget = memory_budget(self.options.memory_budget)
        counts = {
            "item_count": self.items.item_count if self.items is not None else len(self.bone_names),
            "vertex_count": sum(len(p.base) for p in self.parts),
            "part_count": len(self.parts),
        }

        def plan(step: float, precision: Precision) -> TexturePlan:
            return bounds.texture_plan(
                self.kind, precision, self._clips(step), options=self.options,
                auto=self.auto_profile is not None, **counts,
            )  # fmt: skip

        if self.options.tolerance <= 0:
            fixed = plan(self.frame_steps[0], self.precision)
            if (why := bounds.refusal(fixed, budget)) is not None:
                raise HybridSkinError(why)
            return {(self.frame_steps[0], self.precision): fixed}
        plans = {key: plan(*key) for key in encoding_candidates(self.frame_steps)}
        kept, first_refusal = {}, None
        for step in dict.fromkeys(s for s, _ in plans):
            fitting = [p for (s, _), p in plans.items() if s == step and p.fits]
            why = next((bounds.refusal(p, budget) for (s, _), p in plans.items() if s == step), None)
            if fitting and budget.allows(bounds.search_peak(fitting)):
                kept.update({(step, p.precision): p for p in fitting})
            else:
                first_refusal = first_refusal or why
        if not kept:
            raise HybridSkinError(first_refusal or "No frame step and precision can encode this animation")
        if left := sorted({s for s, _ in plans} - {s for s, _ in kept}):
            self.warnings.append(
                f"The tolerance search leaves out frame step(s) {', '.join(f'{s:g}' for s in left)}: their "
                f"texture or their search would not fit ({first_refusal})"
            )
        return kept

    def steps(self) -> Iterator[float]:
        """Sample, encode, report, write; yields progress in [0, 1]. Closing it cancels cleanly.

        Frames are sampled when an encoding needs them: a fixed step samples its stored frames once, then
        its stored (bone kinds) and halfway frames once more for the report; the tolerance search samples
        each step only when it reaches it (a tolerance met at step 4 never pays for step 1, a sub-frame
        step is sampled only if no whole-frame step is good enough).
        """
        self._anim = AnimationState(
            self.scene, self.armature, unkeyed_at_rest=self.options.unkeyed_bones_at_rest
        )
        self._playing = None
        # Progress scale: every sample of the fixed step, or of the whole-frame steps of the search.
        planned = [p for (s, _), p in self.plans.items() if s >= 1] or list(self.plans.values())
        per_step = {p.clips[0].frame_step: p for p in planned}
        twice = self.kind is not Kind.VERTEX
        self._planned = max(
            1, sum(p.checked_samples + twice * p.stored_samples for p in per_step.values())
        )
        self._oracle = OracleGap(self.parts, self._planned, self.kind is not Kind.VERTEX, skip=self.tails)
        # Held: the rig's handlers must not mend the setups of the meshes while the bake hides and shows
        # their modifiers (Hybrid Skin's DQS part follows the Armature modifier's visibility: shown with it
        # for the oracle's LBS, it made Blender's "LBS" the hybrid).
        with hold(p.obj for p in self.parts):
            try:
                # Hiding and showing the modifiers is not an edit of what a bind read (edits made before, e.g.
                # weights by a script, are evaluated first and mark their binds).
                with self._phase("sample"), bind.own_edits(p.obj for p in self.parts):
                    keep = {t.obj.name: t.names for t in self.tails.values()}
                    self._anim.hide_deformation([(p.obj, p.modifier) for p in self.parts], keep)
                    for tail in self.tails.values():
                        tail.set_up()
                    self._anim.set_frame(self.scene.frame_current)
                stored, texture, report, tried = yield from self._choose()
                if (lost := verify.non_rigid_warning(texture)) is not None:
                    self.warnings.append(lost)
                with self._phase("sample"):
                    self._cycle_end = self._loop_end_worlds(texture.clips)
            finally:
                with self._phase("sample"), bind.own_edits(p.obj for p in self.parts):
                    for tail in self.tails.values():
                        tail.remove()
                    self._anim.restore()
        yield 0.95
        self.result = self._write(stored, texture, report, tried)
        yield 1.0

    # ------------------------------------------------------------------------ encode, report
    def _clips(self, step: float) -> list[Clip]:
        return [clip_for(a, self.fps, step) for a in self.actions]

    def encode(self, stored: StoredFrames, precision: Precision) -> AnimationTexture:
        with self._phase("encode"):
            return self._encode(stored, precision)

    def _encode(self, stored: StoredFrames, precision: Precision) -> AnimationTexture:
        clips = list(stored.clips)
        kwargs = dict(
            precision=precision,
            max_width=self.options.max_width,
            power_of_two=self.options.power_of_two,
            embed_metadata=self.options.embed_metadata,
        )
        try:
            if self.kind is Kind.VERTEX:
                base = self.items.rest_positions(np.concatenate([p.base for p in self.parts]))
                tangents = stored["tangents"] if self.options.tangents else None
                return encode_vertex_animation(
                    base, stored["positions"], stored["normals"], clips, deform_factor=self._vertex_factor(),
                    tangents=tangents,
                    **kwargs,
                )  # fmt: skip
            encoder = encode_bone_dq_animation if self.kind is Kind.BONE_DQ else encode_bone_matrix_animation
            auto = None
            if self.auto_profile is not None:
                auto = AutoBake(self.auto_profile, stored["auto_bones"], self.parts[0].auto_rest.shape[1])
            return encoder(
                stored["matrices"],
                clips,
                self.bone_names,
                bone_pivots=self.bone_pivots,
                deform_factor=self.bone_factor,
                auto=auto,
                **kwargs,
            )
        except ValueError as err:
            raise HybridSkinError(f"Cannot encode {self.kind.value} {precision.value}: {err}") from err

    def decode(
        self, texture: AnimationTexture, clip: int, samples: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """Positions (mesh-local) and normals ``(S, N, 3)`` as playback shows them at ``samples``."""
        return verify.decode(texture, self.parts, clip, samples, self.bone_factor, self._rest_items)

    @property
    def _rest_items(self) -> np.ndarray | None:
        """VERTEX: every item's rest position (the vertices, then the extra corner groups')."""
        if self.items is None:
            return None
        return self.items.rest_positions(np.concatenate([p.base for p in self.parts]))

    def _reports(self, stored: StoredFrames, textures: list[AnimationTexture]):
        """Generator returning the sidecar's ``error_report`` of each texture: every stored frame and every
        halfway sample of every clip (:meth:`check`); bone kinds are skinned at :attr:`bone_factor` (its
        ``deform_factor``; VERTEX: ``None``, baked in), and the gap to Blender's own evaluation is added."""
        reports = yield from self.check(stored, textures)
        # VERTEX: baked in; Auto: the runtime's Auto factors (report["auto"])
        factor_value = None if self.kind is Kind.VERTEX or self.auto_profile else self.bone_factor
        for report, texture in zip(reports, textures):
            report["deform_factor"] = factor_value
            with_oracle_gap(report, texture, self.gaps)
        return reports

    def _choose(self):
        """Generator returning ``(stored frames, texture, report, tried)``: the fixed encoding, or the
        tolerance search (:func:`.core.animtex.encoding_candidates` order among :attr:`plans`, sampling each
        step when first reached and comparing all its precisions in one pass over its frames).

        The search keeps only each candidate's report and one step's stored frames; the winner is encoded
        again (deterministic), its step sampled again if the search moved past it.
        """
        if self.options.tolerance <= 0:
            stored = yield from self.sample_stored(self.frame_steps[0])
            texture = self.encode(stored, self.precision)
            yield 0.5
            (report,) = yield from self._reports(stored, [texture])
            yield 0.92
            return stored, texture, report, ()
        tolerance = self.options.tolerance
        reports: dict[tuple[float, Precision], dict] = {}
        tried: list[tuple[float, Precision, float]] = []
        stored = None
        for step, precision in self.plans:  # encoding_candidates order
            if (step, precision) not in reports:
                stored = None  # one step's frames at a time
                stored = yield from self.sample_stored(step)
                textures = {p: self.encode(stored, p) for s, p in self.plans if s == step}
                found = yield from self._reports(stored, list(textures.values()))
                reports.update({(step, p): r for p, r in zip(textures, found)})
                del textures
            tried.append((step, precision, reports[(step, precision)]["overall"]["max"]))
            if tried[-1][2] <= tolerance:
                break
        choice = pick_encoding(tolerance, tried)
        yield 0.92
        if not choice.met:
            self.warnings.append(
                f"No encoding meets the tolerance {tolerance:g}; using the most accurate "
                f"(step {choice.step:g}, {choice.precision.value}: max error {choice.max_error:.4g})"
            )
        if stored.step != choice.step:
            stored = None
            stored = yield from self.sample_stored(choice.step)
        texture = self.encode(stored, choice.precision)
        return stored, texture, reports[(choice.step, choice.precision)], tuple(
            (s, p.value, e) for s, p, e in choice.tried
        )


def bake(
    context: bpy.types.Context,
    obj: bpy.types.Object | None,
    options: BakeOptions,
    action_names: Sequence[str] | None = None,
) -> BakeResult:
    """Bake synchronously (scripts, command line); raises :class:`HybridSkinError` on bad input."""
    job = TextureBake(context, obj, options, action_names)
    for _ in job.steps():
        pass
    return job.result
