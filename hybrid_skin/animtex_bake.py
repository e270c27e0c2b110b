"""Bake actions into vertex or bone animation textures (seed 002): sample, encode, check, write, tag.

A :class:`TextureBake` runs as a generator (:meth:`TextureBake.run` yields progress in 0..1) so the
operator can show a progress bar and cancel between frames; scripts call :func:`bake`.

1. **Target**: an armature and every mesh it deforms, or one mesh with an Armature modifier; one clip
   per action, sampled every ``frame_step`` scene frames over the action's frame range.
2. **Sampling**: each action is assigned to the armature in turn (NLA off; everything restored after).
   At every stored frame and halfway between stored frames the add-on's own skinning gives the truth.
3. **Encoding** (:mod:`.core.animtex`): VERTEX stores each vertex's offset from the mesh's own
   coordinates (what an engine has) and its normal, all meshes in one texture; bone kinds store the
   palette's skinning matrices ``inv(T2A) @ deform @ T2A`` in mesh space, pivots at the rest heads.
4. **Error report**: the texture is decoded as the shaders do and compared with the truth at every
   stored and halfway frame, in scene units (world space) and in % of the truth's bounding-box
   diagonal. With a tolerance, the cheapest (frame step, precision) within it is picked from the
   same samples (:func:`.core.animtex.choose_encoding`).
5. **Writing**: image and JSON go to temporary names in the output folder; the image is read back and
   must hold exactly the encoded values; then both are renamed into place. A failure leaves nothing.
6. **Mesh data**: each vertex's texel index and texel UV (VERTEX), or its 4 palette indices and
   weights (bone kinds), as attributes named in the sidecar's ``mesh_attributes``.
"""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

import bpy
import numpy as np

from . import bridge, rig, state
from .core.animtex import (
    AnimationTexture,
    Clip,
    Kind,
    Precision,
    build_metadata,
    choose_encoding,
    clip_errors,
    decode_bone_frames,
    decode_vertex_frames,
    dumps,
    encode_bone_dq_animation,
    encode_bone_matrix_animation,
    encode_vertex_animation,
    error_bound,
    error_report,
    mid_samples,
)
from .core.animtex.decode import skin_with_bone_frames
from .core.animtex.metadata import DEFAULT_MESH_ATTRIBUTES
from .core.animtex.quantize import stored_from_channels
from .factors import DEFAULT_FACTOR, vertex_factors

__all__ = ["BakeOptions", "BakeResult", "TextureBake", "bake", "compatible_actions", "last_summary"]

HybridSkinError = bridge.HybridSkinError
#: Frame steps tried by the tolerance search, cheapest first.
AUTO_STEPS = (8, 4, 3, 2, 1)
#: Smallest frame step: sub-frame steps (e.g. 0.5) sample fast actions finer than the scene's frame rate.
MIN_FRAME_STEP = 0.05
#: Vertices x samples decoded at once for the error report (bounds the decoders' working memory).
DECODE_CHUNK = 1 << 18
#: Influences per vertex stored on the mesh for the bone kinds (what engines skin with).
BONE_SLOTS = 4
#: Palette entry added when some vertex is only partly skinned (mask group, no weights): the identity.
REST_BONE = "HS_rest"
#: ID property (hidden: leading underscore) holding the last bake's summary for the UI.
SUMMARY_PROPERTY = "_hybrid_skin_animtex"
VERTEX_ATTRIBUTES = {k: DEFAULT_MESH_ATTRIBUTES[k] for k in ("texel_index", "texel_uv")}
BONE_ATTRIBUTES = {k: DEFAULT_MESH_ATTRIBUTES[k] for k in ("bone_indices", "bone_weights")}


@dataclass(frozen=True)
class BakeOptions:
    """What to write. ``tolerance > 0`` (scene units) replaces ``frame_step``/``precision`` by the
    cheapest pair whose max error stays within it."""

    directory: str
    kind: Kind = Kind.VERTEX
    precision: Precision = Precision.PNG16
    frame_step: float = 1.0
    tolerance: float = 0.0
    max_width: int = 8192
    power_of_two: bool = False
    embed_metadata: bool = True
    write_mesh_data: bool = True
    name: str = ""


@dataclass
class BakeResult:
    image_path: str
    json_path: str
    texture: AnimationTexture
    metadata: dict
    report: dict
    tried: tuple = ()
    warnings: list[str] = field(default_factory=list)


@dataclass
class _Part:
    """One baked mesh: its data at bake start and its slice of the texture's items."""

    obj: bpy.types.Object
    modifier: str
    groups: tuple[str, ...]
    base: np.ndarray  # (N, 3) the mesh's own vertex coordinates
    normals: np.ndarray  # (N, 3) its vertex normals
    start: int  # first item of this mesh in a VERTEX texture
    bone_indices: np.ndarray | None = None  # (N, 4) palette indices (bone kinds)
    bone_weights: np.ndarray | None = None  # (N, 4)

    @property
    def stop(self) -> int:
        return self.start + len(self.base)


@dataclass
class _Sample:
    positions: np.ndarray  # (N_total, 3) truth, mesh-local, all parts concatenated
    normals: np.ndarray
    matrices: np.ndarray | None  # (B, 4, 4) palette skinning matrices in mesh space (bone kinds)
    world: np.ndarray  # (P, 4, 4) each part's object matrix at this frame: errors are in scene units


def bulk_read(collection, attr: str, count: int, width: int) -> np.ndarray:
    buf = np.empty(count * width, dtype=np.float32)
    collection.foreach_get(attr, buf)
    return buf.reshape(count, width)


def _settings(obj: bpy.types.Object):
    return getattr(obj, "hybrid_skin", None)


def _uses(obj: bpy.types.Object, arm: bpy.types.Object) -> bool:
    return obj.type == "MESH" and any(
        m.type == "ARMATURE" and m.object == arm and m.name != state.DQS_MODIFIER for m in obj.modifiers
    )


def find_target(obj: bpy.types.Object | None, scene: bpy.types.Scene) -> tuple[bpy.types.Object, list]:
    """``(armature, meshes)`` for the active object: an armature and the meshes it deforms, or a mesh."""
    if obj is not None and obj.type == "ARMATURE":
        meshes = sorted((o for o in scene.objects if _uses(o, obj)), key=lambda o: o.name)
        if not meshes:
            raise HybridSkinError(
                f"Armature '{obj.name}' deforms no mesh in this scene: "
                "parent a mesh to it with an Armature modifier"
            )
        return obj, meshes
    if obj is None or obj.type != "MESH":
        raise HybridSkinError("Select an armature or a skinned mesh to bake animation textures")
    settings = _settings(obj)
    mod = bridge.armature_modifier(obj, settings.modifier_name if settings is not None else "")
    return bridge.validate(obj, mod), [obj]


def _action_data_paths(action: bpy.types.Action) -> Iterator[str]:
    layers = getattr(action, "layers", None)
    if layers:  # slotted actions (Blender >= 4.4)
        for layer in layers:
            for strip in layer.strips:
                for bag in strip.channelbags:
                    yield from (fc.data_path for fc in bag.fcurves)
    else:
        yield from (fc.data_path for fc in getattr(action, "fcurves", ()))


def compatible_actions(arm: bpy.types.Object) -> list[bpy.types.Action]:
    """Actions that animate at least one pose bone of ``arm``, by name."""
    prefixes = tuple(f'pose.bones["{b.name}"]' for b in arm.pose.bones)
    return [a for a in bpy.data.actions if any(p.startswith(prefixes) for p in _action_data_paths(a))]


def resolve_actions(arm: bpy.types.Object, names: Sequence[str] | None) -> list[bpy.types.Action]:
    """The named actions, or the armature's active action when ``names`` is empty."""
    if names:
        missing = [n for n in names if n not in bpy.data.actions]
        if missing:
            raise HybridSkinError(f"No action named {missing}: check the names (they are case-sensitive)")
        return [bpy.data.actions[n] for n in dict.fromkeys(names)]
    anim = arm.animation_data
    if anim is None or anim.action is None:
        raise HybridSkinError(
            f"Armature '{arm.name}' has no active action: pick one in the Dope Sheet ▸ Action editor "
            "or list the actions to bake"
        )
    return [anim.action]


def clip_for(action: bpy.types.Action, fps: float, step: float) -> Clip:
    start, end = (float(x) for x in action.frame_range)
    loop = bool(action.use_frame_range and action.use_cyclic)
    return Clip(action.name, start, end, fps=fps, loop=loop, frame_step=float(step))


def _frame_key(frame: float) -> float:
    return round(float(frame), 6)


def _clip_frames(clip: Clip) -> tuple[np.ndarray, np.ndarray]:
    """Scene frames of the stored samples and of the halfway samples of ``clip``."""
    mids = clip.frame_start + clip.frame_step * mid_samples(clip.frame_count, clip.loop)
    return clip.sample_frames(), mids


#: Pose channels and their rest values: each clip starts from the rest pose, so channels an action
#: does not key hold their rest value (as in an engine) instead of whatever the last action left.
POSE_CHANNELS = {
    "location": (0.0, 0.0, 0.0),
    "rotation_quaternion": (1.0, 0.0, 0.0, 0.0),
    "rotation_euler": (0.0, 0.0, 0.0),
    "rotation_axis_angle": (0.0, 0.0, 1.0, 0.0),
    "scale": (1.0, 1.0, 1.0),
}


class _AnimationState:
    """The armature's animation settings, pose channels and the scene frame, put back by :meth:`restore`."""

    def __init__(self, scene: bpy.types.Scene, arm: bpy.types.Object):
        self.scene, self.arm = scene, arm
        self.frame = (scene.frame_current, scene.frame_subframe)
        anim = arm.animation_data
        if anim is not None and anim.use_tweak_mode:
            raise HybridSkinError(f"'{arm.name}' is in NLA tweak mode: leave tweak mode before baking")
        self.had_anim = anim is not None
        keys = (
            "action",
            "action_slot",
            "use_nla",
            "action_influence",
            "action_blend_type",
            "action_extrapolation",
        )
        self.saved = {k: getattr(anim, k) for k in keys if anim is not None and hasattr(anim, k)}
        bones = arm.pose.bones
        self.pose = {k: bulk_read(bones, k, len(bones), len(v)) for k, v in POSE_CHANNELS.items()}
        self.restored = False

    def _set_pose(self, values: dict[str, np.ndarray]) -> None:
        for key, value in values.items():
            self.arm.pose.bones.foreach_set(key, np.ascontiguousarray(value, dtype=np.float32).ravel())

    def play(self, action: bpy.types.Action) -> None:
        anim = self.arm.animation_data or self.arm.animation_data_create()
        anim.use_nla = False
        anim.action_influence, anim.action_blend_type, anim.action_extrapolation = 1.0, "REPLACE", "HOLD"
        anim.action = action
        count = len(self.arm.pose.bones)
        self._set_pose({k: np.tile(v, (count, 1)) for k, v in POSE_CHANNELS.items()})
        if getattr(anim, "action_slot", True) is None:  # Blender >= 4.4: pick the object slot
            slot = next((s for s in action.slots if s.target_id_type in {"OBJECT", "UNSPECIFIED"}), None)
            if slot is not None:
                anim.action_slot = slot

    def set_frame(self, frame: float) -> None:
        whole = int(np.floor(frame))
        self.scene.frame_set(whole, subframe=float(frame - whole))

    def restore(self) -> None:
        if self.restored:
            return
        self.restored = True
        anim = self.arm.animation_data
        if not self.had_anim:
            if anim is not None:
                self.arm.animation_data_clear()
        elif anim is not None:
            for key, value in self.saved.items():
                if key != "action_slot" or value is not None:
                    setattr(anim, key, value)
        self._set_pose(self.pose)
        self.scene.frame_set(self.frame[0], subframe=self.frame[1])


class TextureBake:
    """One bake: validate in ``__init__`` (raises :class:`HybridSkinError`), then exhaust :meth:`run`."""

    def __init__(
        self,
        context: bpy.types.Context,
        obj: bpy.types.Object | None,
        options: BakeOptions,
        action_names: Sequence[str] | None = None,
    ):
        self.scene, self.options = context.scene, options
        self.kind, self.precision = _enum(Kind, options.kind), _enum(Precision, options.precision)
        self.armature, meshes = find_target(obj, self.scene)
        self.target = obj
        self.actions = resolve_actions(self.armature, action_names)
        self.fps = self.scene.render.fps / self.scene.render.fps_base
        if not options.frame_step >= MIN_FRAME_STEP:
            raise HybridSkinError(f"Frame step must be at least {MIN_FRAME_STEP}, got {options.frame_step}")
        if not 1 <= options.max_width <= 16384:
            raise HybridSkinError(f"Max width must be 1..16384, got {options.max_width}")
        self.directory = _check_directory(options.directory)
        self.stem = bpy.path.clean_name(options.name or f"{obj.name}_{self.kind.value.lower()}")
        self.steps = AUTO_STEPS if options.tolerance > 0 else (options.frame_step,)
        self.parts = self._parts(meshes)
        self.samples: dict[tuple[int, float], _Sample] = {}
        self.warnings: list[str] = []
        self.result: BakeResult | None = None

    # --------------------------------------------------------------------------------- setup
    def _parts(self, meshes: list[bpy.types.Object]) -> list[_Part]:
        parts, start, data = [], 0, {}
        for obj in meshes:
            if self.options.write_mesh_data and obj.data in data:
                raise HybridSkinError(
                    f"'{obj.name}' and '{data[obj.data]}' share mesh data '{obj.data.name}': make it "
                    "single-user (Object ▸ Relations ▸ Make Single User) so each gets its own texel data"
                )
            data[obj.data] = obj.name
            settings = _settings(obj)
            modifier = settings.modifier_name if settings is not None else ""
            bridge.validate(obj, bridge.armature_modifier(obj, modifier))
            vertex_group = settings is not None and settings.factor_mode == "VERTEX_GROUP"
            groups = (settings.factor_vertex_group,) if vertex_group else ()
            n = len(obj.data.vertices)
            base = bulk_read(obj.data.vertices, "co", n, 3)
            normals = bulk_read(obj.data.vertex_normals, "vector", n, 3)
            parts.append(_Part(obj, modifier, groups, base, normals, start))
            start += n
        return parts

    @property
    def bone_factor(self) -> float:
        """Runtime deform factor of the bone kinds: the first mesh's global factor."""
        settings = _settings(self.parts[0].obj)
        return float(settings.deform_factor) if settings is not None else DEFAULT_FACTOR

    def _vertex_factor(self) -> float | None:
        """The factor baked into a VERTEX texture when it is one number for every mesh, else ``None``."""
        values = set()
        for part in self.parts:
            settings = _settings(part.obj)
            if settings is not None and settings.factor_mode != "GLOBAL":
                return None
            values.add(float(settings.deform_factor) if settings is not None else DEFAULT_FACTOR)
        return values.pop() if len(values) == 1 else None

    def _frames_to_sample(self) -> list[tuple[int, float]]:
        needed: dict[tuple[int, float], None] = {}
        for ci, action in enumerate(self.actions):
            for step in self.steps:
                for frames in _clip_frames(clip_for(action, self.fps, step)):
                    needed.update({(ci, _frame_key(f)): None for f in frames})
        return list(needed)

    # ------------------------------------------------------------------------------ sampling
    def _rigs(self, depsgraph) -> list[rig.SkinRig]:
        return [rig.cached_rig(p.obj, depsgraph, p.modifier, p.groups) for p in self.parts]

    def _evaluate(self, depsgraph) -> _Sample:
        positions, normals = [], []
        bones = self.kind is not Kind.VERTEX
        rigs = self._rigs(depsgraph)
        for part, bound in zip(self.parts, rigs):
            factor = vertex_factors(part.obj, bound, self.bone_factor if bones else None)
            p, n = bound.evaluate(depsgraph, factor, normals=True)
            positions.append(p)
            normals.append(n)
        matrices = self._palette(depsgraph, rigs) if bones else None
        world = np.array([p.obj.evaluated_get(depsgraph).matrix_world for p in self.parts], dtype=np.float64)
        return _Sample(np.concatenate(positions), np.concatenate(normals), matrices, world)

    def _target_to_armature(self, depsgraph, bound: rig.SkinRig, part: _Part) -> np.ndarray:
        arm_eval = self.armature.evaluated_get(depsgraph)
        return bound.target_to_armature(part.obj.evaluated_get(depsgraph), arm_eval)

    def _palette(self, depsgraph, rigs: list[rig.SkinRig]) -> np.ndarray:
        t2a = self._target_to_armature(depsgraph, rigs[0], self.parts[0])
        deform = rigs[0].deform_matrices(self.armature.evaluated_get(depsgraph))
        mats = np.linalg.inv(t2a) @ deform @ t2a
        if self.rest_bone:
            mats = np.concatenate([mats, np.eye(4)[None]])
        return mats

    def _prepare_bones(self, depsgraph) -> None:
        """Palette names, pivots and per-vertex influences (bone kinds), checked at the start frame."""
        rigs = self._rigs(depsgraph)
        t2a = [self._target_to_armature(depsgraph, b, p) for b, p in zip(rigs, self.parts)]
        for part, m in zip(self.parts[1:], t2a[1:]):
            if not np.allclose(m, t2a[0], atol=1e-6):
                raise HybridSkinError(
                    f"'{part.obj.name}' and '{self.parts[0].obj.name}' sit differently relative to "
                    f"'{self.armature.name}': bone textures hold one palette in mesh space. Apply their "
                    "transforms (Ctrl+A) or bake each mesh on its own"
                )
        bones = rigs[0].bones
        names = []
        for name, count in zip(bones.names, bones.virtual_counts):
            names += [name] if count == 1 else [f"{name}.bbone{j}" for j in range(count)]
        self.rest_bone = any(np.any(b.binding.influence < 1.0) for b in rigs)
        heads = np.linalg.inv(t2a[0])[:3] @ np.c_[rigs[0].virtual_rest[:, :3, 3], np.ones(len(names))].T
        self.bone_names = names + [REST_BONE] * self.rest_bone
        self.bone_pivots = np.concatenate([heads.T, np.zeros((int(self.rest_bone), 3))])
        truncated = 0
        for part, bound in zip(self.parts, rigs):
            part.bone_indices, part.bone_weights, cut = vertex_influences(
                bound.binding, len(names) if self.rest_bone else -1
            )
            truncated += cut
        if truncated:
            self.warnings.append(
                f"{truncated} vertices have more than {BONE_SLOTS} influences: kept the largest "
                f"{BONE_SLOTS}, renormalised (the error report includes the difference)"
            )

    def run(self) -> Iterator[float]:
        """Sample, encode, report, write; yields progress in [0, 1]. Closing it cancels cleanly."""
        anim = _AnimationState(self.scene, self.armature)
        try:
            todo = self._frames_to_sample()
            anim.set_frame(self.scene.frame_current)
            self.rest_bone = False
            if self.kind is not Kind.VERTEX:
                self._prepare_bones(bpy.context.evaluated_depsgraph_get())
            current = None
            for done, (ci, frame) in enumerate(todo):
                if ci != current:
                    anim.play(self.actions[ci])
                    current = ci
                anim.set_frame(frame)
                self.samples[(ci, frame)] = self._evaluate(bpy.context.evaluated_depsgraph_get())
                yield 0.9 * (done + 1) / len(todo)
        finally:
            anim.restore()
        self.diagonal = self._diagonal()
        texture, report, tried = yield from self._choose()
        yield 0.95
        self.result = self._write(texture, report, tried)
        yield 1.0

    # ------------------------------------------------------------------------ encode, report
    def _clips(self, step: float) -> list[Clip]:
        return [clip_for(a, self.fps, step) for a in self.actions]

    def _stack(self, clip_index: int, frames: np.ndarray, what: str) -> np.ndarray:
        return np.stack([getattr(self.samples[(clip_index, _frame_key(f))], what) for f in frames])

    def encode(self, step: float, precision: Precision) -> AnimationTexture:
        clips = self._clips(step)
        kwargs = dict(
            precision=precision,
            max_width=self.options.max_width,
            power_of_two=self.options.power_of_two,
            embed_metadata=self.options.embed_metadata,
        )
        frames = [c.sample_frames() for c in clips]
        try:
            if self.kind is Kind.VERTEX:
                base = np.concatenate([p.base for p in self.parts])
                positions = [self._stack(ci, f, "positions") for ci, f in enumerate(frames)]
                normals = [self._stack(ci, f, "normals") for ci, f in enumerate(frames)]
                return encode_vertex_animation(
                    base, positions, normals, clips, deform_factor=self._vertex_factor(), **kwargs
                )
            encoder = encode_bone_dq_animation if self.kind is Kind.BONE_DQ else encode_bone_matrix_animation
            matrices = [self._stack(ci, f, "matrices") for ci, f in enumerate(frames)]
            return encoder(
                matrices,
                clips,
                self.bone_names,
                bone_pivots=self.bone_pivots,
                deform_factor=self.bone_factor,
                **kwargs,
            )
        except ValueError as err:
            raise HybridSkinError(f"Cannot encode {self.kind.value} {precision.value}: {err}") from err

    def _world(self, positions: np.ndarray, world: np.ndarray) -> np.ndarray:
        """Mesh-local ``(S, N, 3)`` → scene space with each part's object matrix ``world (S, P, 4, 4)``
        at the sample's frame: what the viewport shows, so errors and the bounding box are in scene units."""
        out = np.empty(positions.shape, dtype=np.float64)
        for i, p in enumerate(self.parts):
            m = world[:, i, None]
            out[:, p.start : p.stop] = np.einsum(
                "snij,snj->sni", m[..., :3, :3], positions[:, p.start : p.stop]
            )
            out[:, p.start : p.stop] += m[..., :3, 3]
        return out

    def _diagonal(self) -> float:
        lo, hi = np.full(3, np.inf), np.full(3, -np.inf)
        for sample in self.samples.values():
            w = self._world(sample.positions[None], sample.world[None])[0]
            lo, hi = np.minimum(lo, w.min(0)), np.maximum(hi, w.max(0))
        return float(np.linalg.norm(hi - lo))

    def decode(
        self, texture: AnimationTexture, clip: int, samples: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """Positions (mesh-local) and normals ``(S, N, 3)`` as playback shows them at ``samples``.

        Samples are decoded a few at a time: the bone decoder's intermediates are ~100 floats per
        vertex and sample, which for a 320k-vertex mesh would otherwise take gigabytes.
        """
        n = sum(len(p.base) for p in self.parts)
        positions = np.empty((len(samples), n, 3), np.float32)
        normals = np.empty((len(samples), n, 3), np.float32)
        step = max(1, DECODE_CHUNK // n)
        for at in range(0, len(samples), step):
            part = slice(at, at + step)
            if texture.kind is Kind.VERTEX:
                base = np.concatenate([p.base for p in self.parts])
                positions[part], normals[part] = decode_vertex_frames(texture, base, clip, samples[part])
                continue
            frames = decode_bone_frames(texture, clip, samples[part])
            for p in self.parts:
                skinned = skin_with_bone_frames(
                    frames, p.base, p.bone_indices, p.bone_weights, self.bone_factor, p.normals
                )
                positions[part, p.start : p.stop], normals[part, p.start : p.stop] = skinned
        return positions, normals

    def report(self, texture: AnimationTexture) -> dict:
        """The sidecar's ``error_report``: every stored frame and every halfway sample of every clip."""
        clips = []
        for ci, clip in enumerate(texture.clips):
            stored_frames, mid_frames = _clip_frames(clip)
            stored, mids = (
                np.arange(clip.frame_count, dtype=np.float64),
                mid_samples(clip.frame_count, clip.loop),
            )
            frames = [f for f in (stored_frames, mid_frames) if len(f)]
            world = [self._stack(ci, f, "world") for f in frames]
            truth = [self._world(self._stack(ci, f, "positions"), w) for f, w in zip(frames, world)]
            truth_n = [self._stack(ci, f, "normals") for f in frames]
            got = [self.decode(texture, ci, s) for s in (stored, mids) if len(s)]
            got_p = [self._world(g[0], w) for g, w in zip(got, world)]
            truth_mid, got_mid = (truth[1], got_p[1]) if len(mids) else (None, None)
            clips.append(
                clip_errors(
                    clip.name,
                    truth[0],
                    got_p[0],
                    truth_mid,
                    got_mid,
                    diagonal=self.diagonal,
                    truth_normals=np.concatenate(truth_n),
                    decoded_normals=np.concatenate([g[1] for g in got]),
                )
            )
        return error_report(clips, diagonal=self.diagonal, encoding_bound=self.encoding_bound(texture))

    def encoding_bound(self, texture: AnimationTexture) -> float:
        """Largest position error quantisation alone causes at stored frames, in scene units.

        VERTEX: the length of the per-axis bound. Bone kinds: first order in the bone errors,
        ``max_v sum_k w_k (e_lin,k |p - c_k| + e_u,k)``, with ``e_lin`` the Frobenius bound of the
        3x3 part (matrix entries, or ``8 e_q + e_s`` for unit quaternions and scale) and ``e_u``
        the length of the translation bound.
        """
        eb = error_bound(
            texture.value_min,
            texture.value_max,
            texture.decode_offset,
            texture.decode_scale,
            texture.precision,
        )
        scale = max(
            float(np.linalg.norm(s.world[:, :3, :3], 2, axis=(1, 2)).max()) for s in self.samples.values()
        )
        # float32 skinning and decoding round a few times at the size of the coordinates
        arithmetic = 2.0**-20 * max(float(np.abs(s.positions).max()) for s in self.samples.values()) * scale
        if texture.kind is Kind.VERTEX:
            return float(np.linalg.norm(eb[0, 0, :3])) * scale + arithmetic
        if texture.kind is Kind.BONE_MATRIX:
            e_lin, e_u = np.linalg.norm(eb[:, :, :3], axis=(1, 2)), np.linalg.norm(eb[:, :, 3], axis=1)
        else:
            e_lin = 8.0 * eb[:, 0].max(axis=1) + eb[:, 1, 3]
            e_u = np.linalg.norm(eb[:, 1, :3], axis=1)
        worst = 0.0
        for p in self.parts:
            dist = np.linalg.norm(p.base[:, None, :] - texture.bone_pivots[p.bone_indices], axis=-1)
            per_vertex = (p.bone_weights * (e_lin[p.bone_indices] * dist + e_u[p.bone_indices])).sum(axis=1)
            worst = max(worst, float(per_vertex.max()))
        return worst * scale + arithmetic

    def _choose(self):
        """Generator returning ``(texture, report, tried)``: the fixed encoding, or the tolerance search.

        The search keeps only each candidate's report; the winner is encoded again (deterministic),
        so at most one texture is held at a time.
        """
        if self.options.tolerance <= 0:
            texture = self.encode(self.steps[0], self.precision)
            yield 0.92
            return texture, self.report(texture), ()
        reports: dict[tuple[int, Precision], dict] = {}

        def evaluate(step: int, precision: Precision) -> float:
            try:
                texture = self.encode(step, precision)
            except HybridSkinError:  # e.g. too tall at this step: not a candidate
                return float("inf")
            reports[(step, precision)] = self.report(texture)
            return reports[(step, precision)]["overall"]["max"]

        choice = choose_encoding(self.options.tolerance, evaluate, steps=self.steps)
        yield 0.92
        if (choice.step, choice.precision) not in reports:
            raise HybridSkinError("No frame step and precision can encode this animation: bake fewer actions")
        if not choice.met:
            self.warnings.append(
                f"No encoding meets the tolerance {self.options.tolerance:g}; using the most accurate "
                f"(step {choice.step}, {choice.precision.value}: max error {choice.max_error:.4g})"
            )
        tried = tuple((s, p.value, e) for s, p, e in choice.tried)
        return self.encode(choice.step, choice.precision), reports[(choice.step, choice.precision)], tried

    # -------------------------------------------------------------------------------- output
    def _write(self, texture: AnimationTexture, report: dict, tried: tuple) -> BakeResult:
        attributes = VERTEX_ATTRIBUTES if self.kind is Kind.VERTEX else BONE_ATTRIBUTES
        ext = ".png" if texture.precision.normalized else ".exr"
        image_path = os.path.join(self.directory, self.stem + ext)
        json_path = os.path.join(self.directory, self.stem + ".json")
        meta = build_metadata(
            texture, image=os.path.basename(image_path), mesh_attributes=attributes, error_report=report
        )
        write_files(texture, image_path, json_path, dumps(meta))
        if self.options.write_mesh_data:
            for part in self.parts:
                write_mesh_data(part, texture)
        result = BakeResult(image_path, json_path, texture, meta, report, tried, self.warnings)
        if self.target is not None:
            self.target[SUMMARY_PROPERTY] = json.dumps(summary(result))
        return result


def vertex_influences(binding, rest_bone: int) -> tuple[np.ndarray, np.ndarray, int]:
    """``(N, 4)`` palette indices and weights per vertex, in Blender's stored order (DQS signs).

    The binding's partial influence ``i`` (mask group; 0 for unweighted vertices) becomes weight
    ``1 - i`` on the identity bone ``rest_bone`` (exact for ``i`` in {0, 1}, which is what real rigs
    have). More than 4 influences keep the 4 largest, renormalised; returns how many vertices that cut.
    """
    idx = binding.bone_indices.astype(np.int32)
    w = binding.weights.astype(np.float64) * binding.influence[:, None]
    if rest_bone >= 0:
        idx = np.c_[idx, np.full(len(idx), rest_bone, np.int32)]
        w = np.c_[w, 1.0 - binding.influence]
    k = idx.shape[1]
    cut = int(np.count_nonzero((w > 0).sum(axis=1) > BONE_SLOTS))
    if k > BONE_SLOTS:
        keep = np.sort(np.argsort(-w, axis=1, kind="stable")[:, :BONE_SLOTS], axis=1)
        idx, w = np.take_along_axis(idx, keep, 1), np.take_along_axis(w, keep, 1)
    elif k < BONE_SLOTS:
        idx = np.c_[idx, np.zeros((len(idx), BONE_SLOTS - k), np.int32)]
        w = np.c_[w, np.zeros((len(w), BONE_SLOTS - k))]
    total = w.sum(axis=1, keepdims=True)
    w = np.divide(w, total, out=np.zeros_like(w), where=total > 0)
    return idx, w.astype(np.float32), cut


def _enum(cls, value):
    try:
        return cls(getattr(value, "value", value))
    except ValueError as err:
        raise HybridSkinError(
            f"Unknown {cls.__name__.lower()} '{value}': use one of {[m.value for m in cls]}"
        ) from err


def _check_directory(directory: str) -> str:
    path = os.path.abspath(bpy.path.abspath(directory)) if directory else ""
    if not directory or not os.path.isdir(path):
        raise HybridSkinError(f"Output folder '{directory}' does not exist: choose an existing folder")
    try:  # os.access is not enough (root, read-only mounts, network shares): really create a file
        probe = os.path.join(path, f".hybrid_skin_probe_{uuid.uuid4().hex[:8]}")
        with open(probe, "wb"):
            pass
        os.remove(probe)
    except OSError as err:
        raise HybridSkinError(f"Cannot write to '{path}' ({err.strerror}): choose a writable folder") from err
    return path


# ---------------------------------------------------------------------------------- image files
def _save_image(texture: AnimationTexture, path: str) -> None:
    """Write the pixels with Blender's image API: Non-Color, alpha as data, exact codes."""
    height, width = texture.pixels.shape[:2]
    precision = texture.precision
    channels = texture.channels()
    if precision is Precision.PNG16:
        # Float buffers are premultiplied inside Blender and un-premultiplied when written to PNG;
        # multiplying first makes the file hold the channels exactly (alpha 0 is left alone by Blender).
        alpha = channels[..., 3:4]
        channels = np.concatenate(
            [np.where(alpha > 0, channels[..., :3] * alpha, channels[..., :3]), alpha], -1
        )
    image = bpy.data.images.new(
        ".hybrid_skin_animtex", width, height, alpha=True, float_buffer=precision is not Precision.PNG8
    )
    try:
        image.colorspace_settings.name = "Non-Color"
        image.alpha_mode = "CHANNEL_PACKED"
        image.pixels.foreach_set(np.ascontiguousarray(channels, dtype=np.float32).ravel())
        if precision.normalized:  # byte buffer → 8 bits, float buffer → 16 bits
            image.filepath_raw = path
            image.file_format = "PNG"
            image.save()
        else:  # only render settings choose half or full float
            scene = bpy.data.scenes.new(".hybrid_skin_animtex")
            try:
                settings = scene.render.image_settings
                settings.file_format = "OPEN_EXR"
                settings.color_mode = "RGBA"
                settings.color_depth = "16" if precision is Precision.EXR16 else "32"
                settings.exr_codec = "ZIP"
                image.save_render(path, scene=scene)
            finally:
                bpy.data.scenes.remove(scene)
    except RuntimeError as err:
        raise HybridSkinError(f"Blender could not write '{path}': {err}") from err
    finally:
        bpy.data.images.remove(image)


def read_image(path: str) -> np.ndarray:
    """``(H, W, 4)`` float32 channels of a texture as Blender loads it (Non-Color, alpha as data)."""
    image = bpy.data.images.load(path, check_existing=False)
    try:
        image.colorspace_settings.name = "Non-Color"
        image.alpha_mode = "CHANNEL_PACKED"
        width, height = image.size
        buf = np.empty(width * height * 4, dtype=np.float32)
        image.pixels.foreach_get(buf)
    finally:
        bpy.data.images.remove(image)
    return buf.reshape(height, width, 4)


def write_files(texture: AnimationTexture, image_path: str, json_path: str, json_text: str) -> None:
    """Image and sidecar, atomically: temporary names in the folder, checked, then renamed into place."""
    token = uuid.uuid4().hex[:8]
    folder = os.path.dirname(image_path)
    temps = [
        os.path.join(folder, f".{os.path.basename(p)}.{token}.partial{os.path.splitext(p)[1]}")
        for p in (image_path, json_path)
    ]
    try:
        _save_image(texture, temps[0])
        back = read_image(temps[0])
        if back.shape != texture.pixels.shape or not np.array_equal(
            stored_from_channels(back, texture.precision), texture.pixels
        ):
            raise HybridSkinError(
                f"'{image_path}' did not read back with the values written ({texture.precision.value}, "
                f"Blender {bpy.app.version_string}); nothing was saved: try another precision"
            )
        with open(temps[1], "w", encoding="utf-8") as fh:
            fh.write(json_text)
        os.replace(temps[0], image_path)
        os.replace(temps[1], json_path)
    except OSError as err:
        raise HybridSkinError(
            f"Cannot write to '{folder}' ({err.strerror}): choose a writable folder"
        ) from err
    finally:
        for temp in temps:
            if os.path.exists(temp):
                os.remove(temp)


# ------------------------------------------------------------------------------------ mesh data
def _attribute(mesh: bpy.types.Mesh, name: str, data_type: str, field_name: str, values: np.ndarray) -> None:
    attr = mesh.attributes.get(name)
    if attr is not None and (attr.data_type != data_type or attr.domain != "POINT"):
        mesh.attributes.remove(attr)
        attr = None
    if attr is None:
        mesh.attributes.new(name, data_type, "POINT")
    mesh.attributes[name].data.foreach_set(field_name, np.ascontiguousarray(values).ravel())


def write_mesh_data(part: _Part, texture: AnimationTexture) -> None:
    """Texel index + UV map (VERTEX), or palette indices + weights (bone kinds), per vertex."""
    mesh = part.obj.data
    if texture.kind is not Kind.VERTEX:
        _attribute(
            mesh,
            BONE_ATTRIBUTES["bone_indices"],
            "FLOAT_COLOR",
            "color",
            part.bone_indices.astype(np.float32),
        )
        _attribute(mesh, BONE_ATTRIBUTES["bone_weights"], "FLOAT_COLOR", "color", part.bone_weights)
        return
    items = np.arange(part.start, part.stop, dtype=np.int32)
    _attribute(mesh, VERTEX_ATTRIBUTES["texel_index"], "INT", "value", items)
    name = VERTEX_ATTRIBUTES["texel_uv"]
    layer = mesh.uv_layers.get(name) or mesh.uv_layers.new(name=name, do_init=False)
    if layer is None:
        raise HybridSkinError(f"'{part.obj.name}' already has 8 UV maps: remove one for '{name}'")
    corner_vertex = np.empty(len(mesh.loops), dtype=np.int32)
    mesh.loops.foreach_get("vertex_index", corner_vertex)
    uv = texture.layout.item_uv()[part.start + corner_vertex]
    mesh.uv_layers[name].uv.foreach_set("vector", np.ascontiguousarray(uv, dtype=np.float32).ravel())


# ------------------------------------------------------------------------------------- summary
def summary(result: BakeResult) -> dict:
    """What the UI shows about the last bake (stored on the baked object)."""
    tex, overall = result.texture, result.report["overall"]
    return {
        "kind": tex.kind.value,
        "precision": tex.precision.value,
        "frame_step": tex.clips[0].frame_step,
        "clips": len(tex.clips),
        "size": [tex.layout.width, tex.layout.height],
        "image": result.image_path,
        "json": result.json_path,
        "max": overall["max"],
        "mean": overall["mean"],
        "max_percent": overall["max_percent"],
        "mean_percent": overall["mean_percent"],
        "warnings": result.warnings,
    }


def last_summary(obj: bpy.types.Object | None) -> dict | None:
    text = obj.get(SUMMARY_PROPERTY) if obj is not None else None
    return json.loads(text) if isinstance(text, str) else None


def bake(
    context: bpy.types.Context,
    obj: bpy.types.Object | None,
    options: BakeOptions,
    action_names: Sequence[str] | None = None,
) -> BakeResult:
    """Bake synchronously (scripts, command line); raises :class:`HybridSkinError` on bad input."""
    job = TextureBake(context, obj, options, action_names)
    for _ in job.run():
        pass
    return job.result
