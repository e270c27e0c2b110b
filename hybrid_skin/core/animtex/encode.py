"""Build animation texture pixels ``(H, W, 4)`` from baked arrays (Johansson 2021, §3.4, §3.5.1, §3.5.2).

Texel contents per kind (RGBA, decoded with ``value = offset + scale * channel``, see
:mod:`.quantize`):

* ``VERTEX`` - slot 0: position offset from the rest pose ``(dx, dy, dz, 1)`` inside one AABB for
  the whole animation; slot 1: unit normal ``(nx, ny, nz, 1)``. The positions are whatever the caller
  skinned, i.e. the hybrid result with the object's deform factor baked in.
* ``BONE_MATRIX`` - slots 0..2: row ``r`` of the bone's 3x4 transform as ``(A[r,0], A[r,1], A[r,2],
  u[r])``; ``A`` is the linear part (scale and shear preserved), ``u`` the translation. Its DQS part is
  derived by the decoder as ``s_b R_b`` (rotation of ``A`` and mean column length, FORMAT.md section 5),
  so non-uniform scale, shear and mirroring reach only the LBS part: ``non_rigid_residual`` (``max |A -
  s_b R_b|``) says how much the DQS part loses.
* ``BONE_DQ`` - slot 0: rotation quaternion ``(w, x, y, z)``; slot 1: ``(u.x, u.y, u.z, s)``.

**Pivots (the thesis's §4.10 / §5.2.1 fix).** The stored translation ``u = A @ c + t`` is where the
bone's *pivot* ``c`` (e.g. its rest head in mesh space) goes, not the matrix translation ``t``, and
for dual quaternions it replaces the raw dual part. A decoder rebuilds ``t = u - A @ c``. Rotation
quantisation error then scales with a vertex's distance from its bone instead of from the mesh
origin, and each per-bone AABB spans the bone's actual path, which is small. With zero pivots
(the default) ``u = t`` and the matrix is stored as given.

**Non-rigid matrices in BONE_DQ.** A dual quaternion holds rotation and translation only. We keep
the closest rotation ``R`` (polar decomposition) and the least-squares uniform scale
``s = trace(R^T A) / 3`` (alpha of slot 1), applied about the pivot before the rigid motion, so
``A ≈ s R``. Uniform scale round-trips within the precision bound; non-uniform scale and shear are
lost, and ``AnimationTexture.non_rigid_residual`` (``max |A - s R|``) says how much. Mirroring
matrices (negative determinant) are rejected.

**Auto** (:mod:`.auto`): given an :class:`.auto.AutoBake`, a bone texture also stores each bone's Auto
data per frame, two texels in the Auto rows of each frame band (:mod:`.layout`), quantised per bone, slot
and channel like the translations.

**Quaternion signs** are chosen per clip so that consecutive frames (and the guard band after the
last frame) lie in the same hemisphere: linear interpolation between stored frames then never
passes near zero, as it would between ``q`` and ``-q``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from ..dualquat import quaternion_from_matrix, quaternion_to_matrix
from ..small_linalg import unit
from .auto import AutoBake, TextureAuto
from .header import embedded_float_count, embedded_floats
from .layout import AUTO_SLOTS, GUARD_FRAMES, TEXELS_PER_ITEM, Clip, Kind, TextureLayout, plan_layout
from .quantize import (
    Precision,
    decode_terms,
    encode_channels,
    float32_to_bytes,
    stored_from_channels,
)
from .texture import AnimationTexture

__all__ = [
    "encode_bone_dq_animation",
    "encode_bone_matrix_animation",
    "encode_vertex_animation",
]

#: Values processed per chunk when quantising: bounds peak memory on large meshes, and a chunk of
#: a few MB keeps the float64 working arrays in cache across the quantiser's passes (100k vertices:
#: one frame per chunk encodes ~1.5x faster than five).
_CHUNK_VALUES = 1 << 20


def _chunks(count: int, values_per_frame: int) -> list[slice]:
    step = max(1, _CHUNK_VALUES // max(1, values_per_frame))
    return [slice(s, min(s + step, count)) for s in range(0, count, step)]


def _check_clips(clips: Sequence[Clip], arrays: Sequence[np.ndarray], name: str) -> None:
    if len(clips) != len(arrays) or not clips:
        raise ValueError(f"need one {name} array per clip: {len(arrays)} arrays for {len(clips)} clips")
    for clip, arr in zip(clips, arrays):
        if arr.shape[0] != clip.frame_count:
            raise ValueError(
                f"clip {clip.name!r} has {clip.frame_count} samples but {name} has {arr.shape[0]}"
            )
        if not np.all(np.isfinite(arr)):
            raise ValueError(f"clip {clip.name!r}: {name} contains NaN or infinity")


def _guard_source(clip: Clip) -> int:
    """Frame repeated in the guard band: the first for loops (wrap), the last otherwise (clamp)."""
    return 0 if clip.loop else clip.frame_count - 1


def _band_frames(clip: Clip) -> np.ndarray:
    return np.r_[np.arange(clip.frame_count), _guard_source(clip)]


def _place(
    pixels: np.ndarray, layout: TextureLayout, row0: int, stored: np.ndarray, row_offset: int = 0
) -> None:
    """Write ``(k, N, S, 4)`` texels (the first ``S`` slots of each item) of ``k`` consecutive frame bands
    from ``row0``, ``row_offset`` rows into each band (the Auto rows), by the layout formula as one copy of
    whole rows and one of the last, partial row; padding texels are left untouched.
    """
    k, n, slots = stored.shape[:3]
    per_row, rows_per_frame = layout.items_per_row, layout.rows_per_frame
    rows = pixels[row0 : row0 + k * rows_per_frame, : layout.data_width]
    grid = rows.reshape(k, rows_per_frame, per_row, layout.texels_per_item, 4)[:, row_offset:, :, :slots]
    full = n // per_row
    grid[:, :full] = stored[:, : full * per_row].reshape(k, full, per_row, *stored.shape[2:])
    if n % per_row:
        grid[:, full, : n % per_row] = stored[:, full * per_row :]


def _encode_slot(
    values: np.ndarray, offset: np.ndarray, scale: np.ndarray, precision: Precision, out: np.ndarray
) -> None:
    """Quantise ``(k, N, C)`` values (scratch: overwritten) into the first ``C`` channels of ``out``
    ``(k, N, 4)``; the others must be constant (``scale == 0``) and get the code every value of a
    constant channel gets."""
    c = values.shape[-1]
    encode_channels(values, offset[..., :c], scale[..., :c], precision, out=out[..., :c], overwrite=True)
    if c < 4:
        if np.any(scale[..., c:]):
            raise ValueError(f"values left out channels {c}..3, which are not constant")
        out[..., c:] = encode_channels(np.zeros(1), offset[..., c:], scale[..., c:], precision)


def _assemble(
    kind: Kind,
    precision: Precision,
    clips: Sequence[Clip],
    item_count: int,
    values: Callable[[int, np.ndarray], Sequence[np.ndarray]],
    lo: np.ndarray,
    hi: np.ndarray,
    symmetric: np.ndarray,
    *,
    max_width: int,
    power_of_two: bool,
    embed_metadata: bool,
    auto: AutoBake | None = None,
    **extra: object,
) -> AnimationTexture:
    """Lay out, quantise and place every clip; ``values(clip, bands)`` gives one ``(k, N, C)`` float
    array per texel slot (separate arrays: the quantiser's passes then run over contiguous memory),
    new arrays the quantiser may overwrite. ``auto``: the Auto data to carry too (bone kinds).

    ``C < 4`` leaves out trailing channels whose range is a single value: they store the opaque code
    whatever the value (see :func:`.quantize.encode_channels`), so nobody needs to compute them.
    """
    precision = Precision(precision)
    t = lo.shape[1]  # one texel per slot: TEXELS_PER_ITEM[kind], or 3 for a VERTEX texture with tangents
    if t < TEXELS_PER_ITEM[kind]:
        raise ValueError(f"{kind.value} needs {TEXELS_PER_ITEM[kind]} slots, got {t}")
    bones = item_count if kind is not Kind.VERTEX else 0
    n_floats = embedded_float_count(len(clips), bones, auto=auto is not None)
    layout = plan_layout(
        item_count,
        t,
        [c.frame_count for c in clips],
        max_width=max_width,
        power_of_two=power_of_two,
        metadata_floats=n_floats if embed_metadata else 0,
        auto=auto is not None,
    )
    offset, scale = decode_terms(lo, hi, precision, symmetric)
    texture_auto = None
    if auto is not None:
        if kind is Kind.VERTEX or len(auto.bones) != len(clips):
            raise ValueError("Auto data goes with a bone texture: one (F, B, 8) array per clip")
        for clip, data in zip(clips, auto.bones):
            if data.shape[:2] != (clip.frame_count, item_count):
                raise ValueError(
                    f"clip {clip.name!r}: Auto data {data.shape} for {clip.frame_count} frames and "
                    f"{item_count} bones"
                )
        auto_lo, auto_hi, auto_symmetric = TextureAuto.ranges(auto)
        auto_offset, auto_scale = decode_terms(auto_lo, auto_hi, precision, auto_symmetric)
        texture_auto = TextureAuto(
            auto.profile, auto_lo.astype(np.float32), auto_hi.astype(np.float32), auto_offset, auto_scale,
            vertex_floats=int(auto.vertex_floats),
        )  # fmt: skip
    pixels = np.zeros((layout.height, layout.width, 4), dtype=precision.dtype)
    for ci, clip in enumerate(clips):
        bands = np.arange(clip.frame_count + GUARD_FRAMES)
        for part in _chunks(len(bands), item_count * t * 4):
            slots = values(ci, bands[part])
            stored = np.empty(slots[0].shape[:2] + (t, 4), dtype=precision.dtype)
            for slot, v in enumerate(slots):
                _encode_slot(v, offset[:, slot], scale[:, slot], precision, stored[:, :, slot])
            row0 = layout.clip_first_rows[ci] + part.start * layout.rows_per_frame
            _place(pixels, layout, row0, stored)
            if auto is not None:
                data = auto.bones[ci][_band_frames(clip)[bands[part]]].astype(np.float64)
                data = data.reshape(data.shape[0], item_count, AUTO_SLOTS, 4)
                stored = np.empty(data.shape, dtype=precision.dtype)
                for slot in range(AUTO_SLOTS):
                    slot_values = np.ascontiguousarray(data[:, :, slot])
                    terms = auto_offset[:, slot], auto_scale[:, slot]
                    _encode_slot(slot_values, *terms, precision, stored[:, :, slot])
                _place(pixels, layout, row0, stored, layout.auto_row_offset)
    texture = AnimationTexture(
        kind=kind,
        precision=precision,
        layout=layout,
        clips=tuple(clips),
        pixels=pixels,
        value_min=np.asarray(lo, dtype=np.float32),
        value_max=np.asarray(hi, dtype=np.float32),
        decode_offset=offset,
        decode_scale=scale,
        embedded_metadata=embed_metadata,
        auto=texture_auto,
        **extra,
    )
    if embed_metadata:
        raw = float32_to_bytes(embedded_floats(texture)).astype(np.float64) / 255.0
        flat = pixels[: layout.metadata_rows].reshape(-1, 4)
        flat[: raw.shape[0]] = stored_from_channels(raw, precision)
    return texture


def encode_vertex_animation(
    rest_positions: np.ndarray,
    positions: Sequence[np.ndarray],
    normals: Sequence[np.ndarray],
    clips: Sequence[Clip],
    *,
    precision: Precision = Precision.PNG16,
    max_width: int = 8192,
    power_of_two: bool = False,
    embed_metadata: bool = True,
    deform_factor: float | None = None,
    tangents: Sequence[np.ndarray] | None = None,
) -> AnimationTexture:
    """Vertex animation texture from rest ``(N, 3)`` and per clip skinned ``(F, N, 3)`` positions/normals.

    Offsets from the rest pose share one AABB (Johansson 2021, §3.4), which is what PNG quantises within.
    Normals are renormalised before storage (the decoders renormalise after interpolation anyway).
    ``tangents`` (per clip ``(F, N, 4)``: unit tangent and bitangent sign, for normal maps) add a third
    texel per item, decoded with the normal's terms (both hold unit vectors and signs in [-1, 1]).
    """
    rest = np.asarray(rest_positions, dtype=np.float64)
    n = rest.shape[0]
    positions = [np.asarray(p) for p in positions]
    normals = [np.asarray(v) for v in normals]
    _check_clips(clips, positions, "positions")
    _check_clips(clips, normals, "normals")
    for arr in (*positions, *normals):
        if arr.shape[1:] != (n, 3):
            raise ValueError(f"expected (F, {n}, 3) arrays for {n} rest vertices, got {arr.shape}")
    if tangents is not None:
        tangents = [np.asarray(t) for t in tangents]
        _check_clips(clips, tangents, "tangents")
        if any(t.shape[1:] != (n, 4) for t in tangents):
            raise ValueError(f"expected (F, {n}, 4) tangents (tangent and sign) for {n} rest vertices")
    lo = np.full(3, np.inf)
    hi = np.full(3, -np.inf)
    for p in positions:
        for part in _chunks(p.shape[0], n * 3):
            d = np.subtract(p[part], rest, dtype=np.float64)
            # per column: reducing (..., 3) over the leading axes is ~20x slower in numpy
            lo = np.minimum(lo, [d[..., c].min() for c in range(3)])
            hi = np.maximum(hi, [d[..., c].max() for c in range(3)])

    def values(ci: int, bands: np.ndarray) -> list[np.ndarray]:
        """Offsets and unit normals ``(k, N, 3)``; alpha is constant (filled in by :func:`_assemble`)."""
        frames = _band_frames(clips[ci])[bands]
        offsets = np.subtract(positions[ci][frames], rest, dtype=np.float64)
        out = [offsets, unit(normals[ci][frames].astype(np.float64))]  # zero normals stay zero
        if tangents is not None:
            t = tangents[ci][frames].astype(np.float64)
            sign = np.where(t[..., 3:] < 0, -1.0, 1.0)
            out.append(np.concatenate([unit(t[..., :3]), sign], axis=-1))
        return out

    range_lo = [[*lo, 1.0], [-1.0, -1.0, -1.0, 1.0]]
    range_hi = [[*hi, 1.0], [1.0, 1.0, 1.0, 1.0]]
    symmetric = [[False] * 4, [True, True, True, False]]
    if tangents is not None:  # the normal's term for all four channels: unit vector components and ±1
        range_lo.append([-1.0] * 4)
        range_hi.append([1.0] * 4)
        symmetric.append([True] * 4)
    return _assemble(
        Kind.VERTEX, precision, clips, n, values, np.array(range_lo)[None], np.array(range_hi)[None],
        np.array(symmetric)[None], max_width=max_width, power_of_two=power_of_two,
        embed_metadata=embed_metadata, deform_factor=deform_factor,
    )  # fmt: skip


def _prepare_bones(
    matrices: Sequence[np.ndarray],
    clips: Sequence[Clip],
    bone_names: Sequence[str],
    bone_pivots: np.ndarray | None,
) -> tuple[list[np.ndarray], np.ndarray, int]:
    mats = [np.asarray(m, dtype=np.float64) for m in matrices]
    _check_clips(clips, mats, "matrices")
    b = len(bone_names)
    for m in mats:
        if m.shape[1:] != (b, 4, 4):
            raise ValueError(f"expected (F, {b}, 4, 4) matrices for {b} bones, got {m.shape}")
        if not np.allclose(m[..., 3, :], [0.0, 0.0, 0.0, 1.0], atol=1e-6):
            raise ValueError("bone matrices must be affine (last row 0, 0, 0, 1)")
    pivots = np.zeros((b, 3)) if bone_pivots is None else np.asarray(bone_pivots, dtype=np.float64)
    if pivots.shape != (b, 3):
        raise ValueError(f"bone_pivots must be ({b}, 3), got {pivots.shape}")
    return mats, pivots, b


def _pivot_positions(m: np.ndarray, pivots: np.ndarray) -> np.ndarray:
    """``u = A @ c + t``: where each bone's pivot goes, ``(F, B, 3)``."""
    return np.einsum("fbij,bj->fbi", m[..., :3, :3], pivots) + m[..., :3, 3]


def _per_bone_range(per_clip: Sequence[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Min/max over frames of all clips of ``(F, B, k)`` arrays → two ``(B, k)`` arrays."""
    return (
        np.min([x.min(axis=0) for x in per_clip], axis=0),
        np.max([x.max(axis=0) for x in per_clip], axis=0),
    )


def encode_bone_matrix_animation(
    matrices: Sequence[np.ndarray],
    clips: Sequence[Clip],
    bone_names: Sequence[str],
    *,
    bone_pivots: np.ndarray | None = None,
    precision: Precision = Precision.PNG16,
    max_width: int = 8192,
    power_of_two: bool = False,
    embed_metadata: bool = True,
    deform_factor: float | None = None,
    auto: AutoBake | None = None,
) -> AnimationTexture:
    """Bone matrix texture (3 texels per bone per frame, Johansson 2021 §3.5.1) from ``(F, B, 4, 4)``
    per clip.

    Matrices are the bones' skinning (deform) matrices in mesh space, column-vector convention.
    The linear part is stored in ``[-L, L]`` with ``L = max(1, max |A|)``; translations per bone AABB.
    ``auto``: the Auto data to carry too (module docstring).
    """
    mats, pivots, b = _prepare_bones(matrices, clips, bone_names, bone_pivots)
    pivot_pos = [_pivot_positions(m, pivots) for m in mats]
    u_lo, u_hi = _per_bone_range(pivot_pos)
    limit = max(1.0, max(float(np.abs(m[..., :3, :3]).max()) for m in mats))
    residual = max(dual_quaternion_residual(m[..., :3, :3]) for m in mats)

    def values(ci: int, bands: np.ndarray) -> list[np.ndarray]:
        frames = _band_frames(clips[ci])[bands]
        out = np.empty((len(frames), b, 3, 4))
        out[..., :3] = mats[ci][frames][:, :, :3, :3]
        out[..., 3] = pivot_pos[ci][frames]
        return [out[:, :, row] for row in range(3)]

    range_lo = np.concatenate([np.full((b, 3, 3), -limit), u_lo[:, :, None]], axis=2)
    range_hi = np.concatenate([np.full((b, 3, 3), limit), u_hi[:, :, None]], axis=2)
    symmetric = np.broadcast_to(np.array([True, True, True, False]), (b, 3, 4))
    return _assemble(
        Kind.BONE_MATRIX, precision, clips, b, values, range_lo, range_hi, symmetric,
        max_width=max_width, power_of_two=power_of_two, embed_metadata=embed_metadata, auto=auto,
        bone_names=tuple(bone_names), bone_pivots=pivots.astype(np.float32), deform_factor=deform_factor,
        non_rigid_residual=residual,
    )  # fmt: skip


def dual_quaternion_residual(linear: np.ndarray) -> float:
    """``max |A - s_b R_b|`` over ``(..., 3, 3)`` linear parts, with ``R_b``, ``s_b`` what a BONE_MATRIX
    decoder gives its DQS part (FORMAT.md section 5): the rotation of ``A`` (negated first when mirrored)
    and the mean column length. 0 for rigid or uniformly scaled bones."""
    a = np.asarray(linear, dtype=np.float64)
    rotation = quaternion_to_matrix(quaternion_from_matrix(a))
    scale = np.linalg.norm(a, axis=-2).mean(axis=-1)
    return float(np.abs(a - scale[..., None, None] * rotation).max()) if a.size else 0.0


def polar_rotation_scale(linear: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(..., 3, 3)`` → closest rotation ``R`` (polar factor) and least-squares uniform scale ``s``.

    Raises ``ValueError`` for mirroring matrices (negative determinant): no rotation is close to them.
    """
    a = np.asarray(linear, dtype=np.float64)
    if np.any(np.linalg.det(a) < 0):
        raise ValueError(
            "BONE_DQ cannot store mirroring bone matrices (negative determinant); use BONE_MATRIX"
        )
    u, sigma, vt = np.linalg.svd(a)
    flip = np.linalg.det(u @ vt) < 0  # only for singular A (det 0): keep R a proper rotation
    u[flip, :, 2] *= -1.0
    sigma[flip, 2] *= -1.0
    return u @ vt, sigma.sum(axis=-1) / 3.0


def continuous_quaternions(q: np.ndarray) -> np.ndarray:
    """Flip signs along axis 0 of ``(F, ..., 4)`` so each frame is within 90° (4D) of the previous one."""
    dots = np.einsum("f...c,f...c->f...", q[1:], q[:-1])
    signs = np.cumprod(np.where(dots < 0, -1.0, 1.0), axis=0)
    out = q.copy()
    out[1:] *= signs[..., None]
    return out


def encode_bone_dq_animation(
    matrices: Sequence[np.ndarray],
    clips: Sequence[Clip],
    bone_names: Sequence[str],
    *,
    bone_pivots: np.ndarray | None = None,
    precision: Precision = Precision.PNG16,
    max_width: int = 8192,
    power_of_two: bool = False,
    embed_metadata: bool = True,
    deform_factor: float | None = None,
    auto: AutoBake | None = None,
) -> AnimationTexture:
    """Dual quaternion bone texture (2 texels per bone per frame, Johansson 2021 §3.5.2 with the §4.10 fix).

    Stores rotation + pivot position (+ uniform scale) instead of the raw dual part; see the module
    docstring for pivots, signs, scaled bones and ``auto``.
    """
    mats, pivots, b = _prepare_bones(matrices, clips, bone_names, bone_pivots)
    quats, pivot_pos, scales, residual = [], [], [], 0.0
    for m in mats:
        rot, s = polar_rotation_scale(m[..., :3, :3])
        residual = max(residual, float(np.abs(m[..., :3, :3] - s[..., None, None] * rot).max()))
        q = continuous_quaternions(quaternion_from_matrix(rot))
        # Frame 0 again, in the last frame's hemisphere: the guard band a loop interpolates into.
        wrap = q[:1] * np.where(np.einsum("fbc,fbc->fb", q[-1:], q[:1]) < 0, -1.0, 1.0)[..., None]
        quats.append(np.concatenate([q, wrap]))
        pivot_pos.append(_pivot_positions(m, pivots))
        scales.append(s[..., None])
    u_lo, u_hi = _per_bone_range(pivot_pos)
    s_lo = min(float(s.min()) for s in scales)
    s_hi = max(float(s.max()) for s in scales)

    def values(ci: int, bands: np.ndarray) -> list[np.ndarray]:
        clip = clips[ci]
        frames = _band_frames(clip)[bands]
        out = np.empty((len(frames), b, 2, 4))
        # Loops use the sign-aligned copy of frame 0 stored after the last frame; clamps repeat the last.
        out[:, :, 0] = quats[ci][
            np.where(bands == clip.frame_count, clip.frame_count if clip.loop else frames, frames)
        ]
        out[:, :, 1, :3] = pivot_pos[ci][frames]
        out[:, :, 1, 3] = scales[ci][frames][..., 0]
        return [out[:, :, 0], out[:, :, 1]]

    range_lo = np.zeros((b, 2, 4))
    range_hi = np.zeros((b, 2, 4))
    range_lo[:, 0], range_hi[:, 0] = -1.0, 1.0
    range_lo[:, 1, :3], range_hi[:, 1, :3] = u_lo, u_hi
    range_lo[:, 1, 3], range_hi[:, 1, 3] = s_lo, s_hi
    symmetric = np.zeros((b, 2, 4), dtype=bool)
    symmetric[:, 0] = True
    return _assemble(
        Kind.BONE_DQ, precision, clips, b, values, range_lo, range_hi, symmetric,
        max_width=max_width, power_of_two=power_of_two, embed_metadata=embed_metadata, auto=auto,
        bone_names=tuple(bone_names), bone_pivots=pivots.astype(np.float32), deform_factor=deform_factor,
        non_rigid_residual=residual,
    )  # fmt: skip
