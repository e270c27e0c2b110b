"""Auto at runtime for the bone kinds: the per-bone data of Auto's round profiles, per frame, in the texture.

A bone texture plays one runtime deform factor per instance; Auto's round profiles ("ROUND", "KEEP_VOLUME",
:mod:`..autofactor`) need a factor per vertex, computed from the pose. Everything per frame that the
factor needs is per bone (:func:`..autofactor.bone_factor_data`: twist ``tau``, swing vector ``sigma``,
swing angle path length ``A`` and ``H``, ``A`` times the joints' rest heads), and everything per vertex is
rest data (:func:`..autofactor.vertex_geometry`). So a bake that carries Auto stores, per bone and stored
frame, two more texels, ``(tau, sigma_xyz)`` and ``(A, H_xyz)``, in *Auto rows* of each frame band
(:mod:`.layout`: the band's rows doubled, each bone's Auto texels ``auto_row_offset`` rows above its own),
and the meshes get each vertex's rest data as an attribute. A runtime then computes the factor per vertex
exactly as the live display's ``hs_round_factor`` does (``shaders/hybrid_skin_round.glsl``, shared by the
display, the animation texture decoders and the engine ports) and skins with it.

**Decoding and interpolation.** Every channel decodes with the format's one rule ``offset + scale *
channel`` (per bone, per slot, per channel: :class:`TextureAuto`), and between stored frames the decoded
values are interpolated linearly, like every other value of the format; a cross-fade lerps them by its
weight. The runtime therefore evaluates the profile at the interpolated *data*, not at the interpolated
pose: the two differ where a bone's accumulated twist or swing is not linear in time between samples
(fast motion; a twist passing 180°, where the stored twist jumps by a turn). The bake's error report
measures exactly that, against the core evaluated at the same sub-frame time (``error_report.auto``:
the factors' distance, and the positions' in the report's own figures).

**Precision.** ``tau`` and ``sigma`` (0 at rest) use the signed mapping of :mod:`.quantize`, so the rest
pose decodes to exactly 0 and gives ``f = 1`` exactly, as the core does; ``A`` and ``H`` map their
per-bone range. The data is in the armature's rest space (``H`` like :func:`..autofactor.vertex_geometry`'s
positions): the profile uses differences and ratios only, so engines convert nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..autofactor import (
    ANGLE_EPSILON,
    BONE_DATA_WIDTH,
    PRESENCE_WEIGHT,
    QUARTER_TURN_SQ,
    ROUND_SHAPES,
    RoundShape,
    round_factors,
    vertex_geometry,
)
from .layout import AUTO_SLOTS, frame_pair
from .quantize import channel_values, decode_channels

__all__ = [
    "AUTO_CHANNELS",
    "AUTO_PROFILES",
    "AutoBake",
    "TextureAuto",
    "blend_auto",
    "crossfade_auto",
    "decode_auto",
    "frame_auto",
    "texture_factors",
    "vertex_floats",
]

#: The profiles a bone texture can carry (the round ones; "JOINT", Auto 0.1, is for old files only).
AUTO_PROFILES = ("ROUND", "KEEP_VOLUME")
#: The Auto texels' slots and channels, as the sidecar's ``auto.slots`` names them.
AUTO_CHANNELS = (
    ("twist_swing", ("tau", "sigma_x", "sigma_y", "sigma_z")),
    ("angle_head", ("A", "H_x", "H_y", "H_z")),
)
#: Channels stored with the signed mapping (0 decodes exactly): ``tau`` and ``sigma``.
_SYMMETRIC = np.array([[True] * 4, [False] * 4])


@dataclass(frozen=True)
class AutoBake:
    """What a bone encoder needs to carry Auto: the round ``profile``, per clip the ``(F, B, 8)`` bone
    data of :func:`..autofactor.bone_factor_data` at its stored frames (palette order), and how many
    floats of rest data each vertex has (the columns of :func:`..autofactor.vertex_geometry`)."""

    profile: str
    bones: Sequence[np.ndarray]
    vertex_floats: int

    def __post_init__(self) -> None:
        if self.profile not in AUTO_PROFILES:
            raise ValueError(
                f"a bone texture carries the round Auto profiles {AUTO_PROFILES}, not {self.profile!r}"
            )
        for data in self.bones:
            if np.ndim(data) != 3 or np.shape(data)[2] != BONE_DATA_WIDTH:
                raise ValueError(f"Auto bone data must be (F, B, {BONE_DATA_WIDTH}), got {np.shape(data)}")
            if not np.all(np.isfinite(data)):
                raise ValueError("Auto bone data contains NaN or infinity")


@dataclass(frozen=True)
class TextureAuto:
    """The Auto a bone texture carries: its profile and constants, and per bone ``(B, 2, 4)`` the data
    ranges and decode terms of its two Auto texels (``value = offset + scale * channel``)."""

    profile: str
    value_min: np.ndarray
    value_max: np.ndarray
    decode_offset: np.ndarray
    decode_scale: np.ndarray
    vertex_floats: int = 4
    #: The profile's constants as baked (the texture carries them: runtimes hard-code none).
    shape: RoundShape | None = None
    epsilon_sq: float = float(np.float32(ANGLE_EPSILON**2))
    quarter_turn_sq: float = float(np.float32(QUARTER_TURN_SQ))
    #: The swinging weight over which the profile fades in (:data:`..autofactor.PRESENCE_WEIGHT`).
    presence: float = float(np.float32(PRESENCE_WEIGHT))

    def __post_init__(self) -> None:
        if self.shape is None:
            object.__setattr__(self, "shape", ROUND_SHAPES[self.profile])

    @classmethod
    def ranges(cls, bake: AutoBake) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Per bone ``(B, 2, 4)`` data ranges over every stored frame, and which channels are signed."""
        lo = np.min([d.min(axis=0) for d in bake.bones], axis=0).reshape(-1, AUTO_SLOTS, 4)
        hi = np.max([d.max(axis=0) for d in bake.bones], axis=0).reshape(-1, AUTO_SLOTS, 4)
        symmetric = np.broadcast_to(_SYMMETRIC, lo.shape)
        return lo.astype(np.float64), hi.astype(np.float64), symmetric


def vertex_floats() -> int:
    """Floats of Auto rest data per vertex: the columns :func:`..autofactor.vertex_geometry` gives (asked
    of one vertex, so the attributes a bake writes follow the rest data wherever the core takes it)."""
    one = np.ones((1, 1))
    rest = vertex_geometry(np.zeros((1, 3)), np.zeros((1, 1), np.int32), one, np.eye(4)[None], one[0])
    return int(rest.shape[1])


# ---------------------------------------------------------------------------------------------- decode
def frame_auto(texture, clip: int, frames: np.ndarray, channels: np.ndarray | None = None) -> np.ndarray:
    """Decoded Auto data ``(S, B, 8)`` float32 at whole clip-local ``frames`` (guard band allowed)."""
    auto = _auto(texture)
    lay = texture.layout
    item_rows = lay.auto_row_offset
    rows = lay.frame_rows(clip, np.atleast_1d(frames))[:, None] + item_rows + np.arange(item_rows)
    source = texture.pixels if channels is None else np.asarray(channels, dtype=np.float32)
    band = source[rows, : lay.data_width]  # (S, R_b, P * T, 4): the Auto rows
    texels = band.reshape(rows.shape[0], -1, lay.texels_per_item, 4)[:, : lay.item_count, :AUTO_SLOTS]
    if channels is None:
        texels = channel_values(texels, texture.precision)
    values = decode_channels(texels, auto.decode_offset, auto.decode_scale)
    return values.reshape(values.shape[0], values.shape[1], BONE_DATA_WIDTH)


def decode_auto(
    texture, clip: int, samples: np.ndarray | float, channels: np.ndarray | None = None
) -> np.ndarray:
    """Auto data ``(S, B, 8)`` float32 at fractional ``samples``: decoded, then lerped between the two
    stored frames around each sample in float32, as the shaders do."""
    c = texture.clips[clip]
    f0, f1, alpha = frame_pair(c.frame_count, c.loop, np.atleast_1d(samples))
    v0 = frame_auto(texture, clip, f0, channels)
    if not np.any(alpha):
        return v0
    v1 = frame_auto(texture, clip, f1, channels)
    v1 -= v0
    v1 *= alpha.reshape(-1, 1, 1)
    v1 += v0
    return v1


def blend_auto(a: np.ndarray, b: np.ndarray, weight: np.ndarray | float) -> np.ndarray:
    """Cross-fade: ``a + w (b - a)`` per sample in float32; exactly ``a`` at ``w <= 0`` and ``b`` at
    ``w >= 1`` (as the cross-fades of :mod:`.crossfade`)."""
    w = np.broadcast_to(np.asarray(weight, dtype=np.float32), (a.shape[0],)).reshape(-1, 1, 1)
    blended = a + w * (b - a)
    return np.where(w <= 0, a, np.where(w >= 1, b, blended))


def crossfade_auto(
    texture, clip_a: int, samples_a: np.ndarray | float, clip_b: int, samples_b: np.ndarray | float,
    weight: np.ndarray | float,
) -> np.ndarray:  # fmt: skip
    """Auto data ``(S, B, 8)`` of clip ``a`` at ``samples_a`` blended towards clip ``b`` at ``samples_b``."""
    sa, sb = np.broadcast_arrays(np.atleast_1d(samples_a), np.atleast_1d(samples_b))
    return blend_auto(decode_auto(texture, clip_a, sa), decode_auto(texture, clip_b, sb), weight)


def texture_factors(
    texture,
    bone_data: np.ndarray,
    bone_indices: np.ndarray,
    weights: np.ndarray,
    vertex_rest: np.ndarray,
    dtype: type = np.float32,
) -> np.ndarray:
    """The runtime's Auto factors ``(S, N)`` float32 from decoded Auto data ``(S, B, 8)``, the vertices'
    stored influences ``(N, 4)`` and rest data ``(N, vertex_floats)``: the core's own
    :func:`..autofactor.round_factors` with the texture's profile constants (its presence included);
    ``dtype`` ``np.float64``: the same formula without float32 rounding (the error report's reference)."""
    auto = _auto(texture)
    return np.stack([
        round_factors(d, bone_indices, weights, vertex_rest, auto.shape, presence=auto.presence, dtype=dtype)
        for d in bone_data
    ])


def _auto(texture) -> TextureAuto:
    if texture.auto is None:
        raise ValueError("the texture carries no Auto data (bake a bone kind with the factor mode Auto)")
    return texture.auto
