"""Channel precision: how a float becomes a stored texel channel and back.

Every channel of every texel decodes with one rule, the same in numpy and in the shaders::

    value = offset + scale * channel

where ``channel`` is what a sampler returns: ``stored / Q`` for the normalised integer formats
(``Q = 255`` for PNG8, ``65535`` for PNG16) and the stored float itself for EXR16/EXR32. Only
``offset`` and ``scale`` differ per precision, which keeps a single decode path in every decoder.

* **PNG8 / PNG16** map the data range ``[lo, hi]`` onto ``[0, Q]`` (``offset = lo``,
  ``scale = hi - lo``), the thesis's AABB normalisation (Johansson 2021, §3.4, §3.5.1). Channels whose range
  is symmetric about zero (rotation entries, quaternion components, normals) use a *signed* mapping
  instead: ``scale = 2 L Q / (Q - 1)`` so that code ``(Q - 1) / 2`` is exactly 0 and codes
  ``0`` / ``Q - 1`` are exactly ``-L`` / ``+L``. The rest pose (identity rotation) then decodes
  exactly, which the thesis's ``[-1, 1] → [0, 255]`` map cannot do (0 falls between two codes).
* **EXR16 / EXR32** store ``value - centre`` as a half or single float (``scale = 1``). Centring on the
  data range costs nothing at decode time and keeps the stored magnitudes small, where floats are
  densest: a bone 1.7 m from the origin moving ±10 cm is stored to ±3e-5 m in half floats instead
  of ±5e-4 m.

Error bounds (per channel, before the decoder's own float32 arithmetic, see :func:`error_bound`):
normalised formats round to the nearest code, so the error is half a step, ``scale / (2 Q)``; float
formats round to nearest, so the error is half a unit in the last place of the largest stored
magnitude ``m``: ``2**(floor(log2 m) - 11)`` for half floats, ``2**(floor(log2 m) - 24)`` for single.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from enum import Enum

import numpy as np

__all__ = [
    "CHEAPEST_FIRST",
    "Precision",
    "bytes_per_texel",
    "channel_values",
    "decode_channels",
    "decode_terms",
    "encode_channels",
    "error_bound",
    "float32_from_bytes",
    "float32_to_bytes",
    "stored_from_channels",
]


class Precision(str, Enum):
    """Storage precision of the texture file. Cheapest first (see :data:`CHEAPEST_FIRST`)."""

    PNG8 = "PNG8"
    PNG16 = "PNG16"
    EXR16 = "EXR16"
    EXR32 = "EXR32"

    @property
    def normalized(self) -> bool:
        """True for the integer formats a sampler returns as ``stored / Q``."""
        return self in (Precision.PNG8, Precision.PNG16)

    @property
    def dtype(self) -> np.dtype:
        """numpy dtype of the stored channels."""
        return np.dtype(_DTYPES[self])

    @property
    def max_code(self) -> int:
        """``Q``: the largest stored integer (normalised formats only; 0 for floats)."""
        return {Precision.PNG8: 255, Precision.PNG16: 65535}.get(self, 0)


_DTYPES = {
    Precision.PNG8: np.uint8,
    Precision.PNG16: np.uint16,
    Precision.EXR16: np.float16,
    Precision.EXR32: np.float32,
}

#: Cheapest first by bytes per texel; PNG16 before EXR16 at equal size because 16 uniform bits
#: inside an AABB beat an 11-bit mantissa, and PNG loads everywhere.
CHEAPEST_FIRST = (Precision.PNG8, Precision.PNG16, Precision.EXR16, Precision.EXR32)

_HALF_MAX = float(np.finfo(np.float16).max)


def bytes_per_texel(precision: Precision) -> int:
    """Uncompressed size of one RGBA texel."""
    return 4 * Precision(precision).dtype.itemsize


def decode_terms(
    lo: np.ndarray, hi: np.ndarray, precision: Precision, symmetric: np.ndarray | bool = False
) -> tuple[np.ndarray, np.ndarray]:
    """``(offset, scale)`` per channel for data ranges ``[lo, hi]`` (same shapes, broadcast).

    ``symmetric`` marks channels whose range is ``[-L, L]`` by construction; they get the signed
    mapping described in the module docstring for normalised formats. A zero-width range (a
    constant channel: unused alpha, a bone that never moves along an axis) gets ``scale = 0`` in
    every precision and decodes to ``lo`` exactly whatever is stored.
    """
    precision = Precision(precision)
    lo = np.asarray(lo, dtype=np.float64)
    hi = np.asarray(hi, dtype=np.float64)
    lo, hi = np.broadcast_arrays(lo, hi)
    if precision.normalized:
        q = precision.max_code
        half = np.maximum(np.abs(lo), np.abs(hi))
        signed = np.broadcast_to(np.asarray(symmetric, dtype=bool), lo.shape)
        offset = np.where(signed, -half, lo)
        scale = np.where(signed, 2.0 * half * q / (q - 1), hi - lo)
    else:
        offset = np.where(hi > lo, 0.5 * (lo + hi), lo)
        scale = np.where(hi > lo, 1.0, 0.0)
    return offset.astype(np.float32), scale.astype(np.float32)


def encode_channels(
    values: np.ndarray,
    offset: np.ndarray,
    scale: np.ndarray,
    precision: Precision,
    out: np.ndarray | None = None,
    overwrite: bool = False,
) -> np.ndarray:
    """Float values → stored channels in ``precision.dtype`` (round to nearest, clamp to the codes).

    ``out`` (``precision.dtype``, any strides) receives the codes instead of a new array, e.g. some
    channels of a texel buffer: the conversion writes them directly, saving a copy. ``overwrite``: the
    caller's ``values`` are scratch; a C-contiguous float64 array of the result's shape is then worked
    on in place instead of copied (the same arithmetic, one pass over the values fewer).

    Constant channels (``scale == 0``) store the opaque value (``Q`` or 1.0), so a texture whose
    alpha carries nothing is fully opaque and no image tool is tempted to drop its colour.
    Raises ``ValueError`` for half floats whose centred magnitude exceeds 65504 (they would become
    infinities, which no decoder could recover from).
    """
    precision = Precision(precision)
    v = np.asarray(values, dtype=np.float64)
    off = np.asarray(offset, dtype=np.float64)
    sc = np.asarray(scale, dtype=np.float64)
    constant = sc == 0
    # one working array, updated in place (these run over whole textures); per-channel terms tiled
    # (see per_channel), the masked copy only where some channel is constant
    shape = np.broadcast(v, off, sc).shape
    if overwrite and v.shape == shape and v.flags.c_contiguous and v.flags.writeable:
        work = v
    else:
        work = np.empty(shape)
        np.copyto(work, v)
    per_channel(np.subtract, work, off)
    if precision.normalized:
        q = precision.max_code
        per_channel(np.true_divide, work, np.where(constant, 1.0, sc))  # a masked divide costs 3x
        if constant.any():
            per_channel(np.copyto, work, constant)
        work *= q
        np.rint(work, out=work)
        np.clip(work, 0, q, out=work)
        return _cast(work, precision, out)
    if constant.any():
        per_channel(np.copyto, work, constant)
    if precision is Precision.EXR16 and work.size and max(work.max(), -work.min()) > _HALF_MAX:
        raise ValueError(
            f"EXR16 cannot hold {np.abs(work).max():.6g} (half float max {_HALF_MAX}); use EXR32 or PNG16"
        )
    return _cast(work, precision, out)


def _cast(work: np.ndarray, precision: Precision, out: np.ndarray | None) -> np.ndarray:
    """``work`` in the stored dtype: a new array, or written into ``out``."""
    if out is None:
        return work.astype(precision.dtype)
    if out.dtype != precision.dtype:
        raise ValueError(f"out must be {precision.dtype}, got {out.dtype}")
    if out.ndim and not out.flags.c_contiguous and work.shape == out.shape:
        # a few channels of a texel buffer: one long strided loop per channel (numpy's loop over 3 or 4
        # channels at a time costs twice as much); the same conversion as astype
        for c in range(out.shape[-1]):
            np.copyto(out[..., c], work[..., c], casting="unsafe")
    else:
        np.copyto(out, work, casting="unsafe")  # the same conversion as astype
    return out


def channel_values(stored: np.ndarray, precision: Precision) -> np.ndarray:
    """Stored channels → float32 channels as a shader's sampler returns them (``stored / Q`` or the float)."""
    precision = Precision(precision)
    if precision.normalized:
        channels = np.array(stored, dtype=np.float32)  # a new array, divided in place
        channels /= np.float32(precision.max_code)
        return channels
    return np.asarray(stored, dtype=np.float32)


def stored_from_channels(channels: np.ndarray, precision: Precision) -> np.ndarray:
    """Inverse of :func:`channel_values`: float pixels (as ``Image.pixels`` holds them) → stored dtype."""
    precision = Precision(precision)
    c = np.asarray(channels, dtype=np.float64)
    if precision.normalized:
        q = precision.max_code
        return np.clip(np.rint(c * q), 0, q).astype(precision.dtype)
    return c.astype(precision.dtype)


def decode_channels(channels: np.ndarray, offset: np.ndarray, scale: np.ndarray) -> np.ndarray:
    """``offset + scale * channel`` in float32, exactly as the GLSL decoders evaluate it.

    Computed in one new array, ``*= scale`` then ``+= offset``: float addition and multiplication
    commute, so the values are those of the expression, without its temporaries.
    """
    c = np.asarray(channels, dtype=np.float32)
    off = np.asarray(offset, dtype=np.float32)
    sc = np.asarray(scale, dtype=np.float32)
    out = np.empty(np.broadcast(off, sc, c).shape, dtype=np.float32)
    np.copyto(out, c)
    per_channel(np.multiply, out, sc)
    per_channel(np.add, out, off)
    return out


#: Elements per inner loop that :func:`per_channel` aims for.
_ROW = 4096


def per_channel(op: Callable[..., object], work: np.ndarray, term: np.ndarray) -> None:
    """``work = op(work, term)`` in place, for a ``term`` that broadcasts along the leading axes of
    ``work`` (per-channel offsets, scales, masks); ``np.copyto`` as ``op`` sets ``1.0`` where ``term``
    is true.

    numpy's innermost loop runs along the last axis, which for per-channel terms is 3 or 4 channels
    long, and then the loop overhead costs several times the arithmetic (0.33 ms instead of 0.08 ms
    for 600k float32 products). Seen as rows of a few thousand elements, ``work`` repeats ``term``
    with a fixed period, so a tiled ``term`` gives long inner loops, element by element the same
    arithmetic. (A ``work`` that is not C-contiguous has no such rows: it is broadcast plainly.)
    """
    term = np.asarray(term)
    if not work.flags.c_contiguous:  # a flat view would be a copy: plain broadcasting then
        parts = [(work, term)]
    else:
        parts = _periods(work, term)
    for rows, t in parts:
        if op is np.copyto:
            np.copyto(rows, 1.0, where=t)
        else:
            op(rows, t, out=rows)


def _periods(work: np.ndarray, term: np.ndarray) -> list[tuple[np.ndarray, np.ndarray]]:
    """C-contiguous ``work`` as ``(rows, L)`` plus a remainder, with ``term`` tiled to length ``L``."""
    lead = next((i for i, size in enumerate(term.shape) if size != 1), term.ndim)
    block = work.shape[work.ndim - (term.ndim - lead) :]
    period = math.prod(block)
    if work.size == 0 or period == 0:
        return []
    flat_term = np.broadcast_to(term.reshape(term.shape[lead:]), block).reshape(-1)
    tiled = np.tile(flat_term, max(1, _ROW // period))
    flat = work.reshape(-1)
    full = flat.size - flat.size % tiled.size
    return [(flat[:full].reshape(-1, tiled.size), tiled), (flat[full:], tiled[: flat.size - full])]


def _half_ulp(magnitude: np.ndarray, mantissa_bits: int, min_exponent: int) -> np.ndarray:
    """Half a unit in the last place for floats up to ``magnitude`` (round-to-nearest error)."""
    m = np.asarray(magnitude, dtype=np.float64)
    exponent = np.floor(np.log2(np.maximum(m, np.finfo(np.float64).tiny)))
    exponent = np.maximum(exponent, min_exponent)
    return np.where(m > 0, np.exp2(exponent - mantissa_bits - 1), 0.0)


def error_bound(
    lo: np.ndarray, hi: np.ndarray, offset: np.ndarray, scale: np.ndarray, precision: Precision
) -> np.ndarray:
    """Largest ``|decoded - value|`` per channel for any value in ``[lo, hi]``.

    The storage term is half a quantisation step (normalised) or half an ulp of the largest stored
    magnitude (floats). The decoder's float32 ``offset + scale * c`` adds at most two roundings of
    magnitude ``max(|lo|, |hi|)``, i.e. ``2**-23 * max(|lo|, |hi|)``, included here so that the
    bound holds for the numpy decoder (and a GPU evaluating in float32) without fudge factors.
    """
    precision = Precision(precision)
    lo = np.asarray(lo, dtype=np.float64)
    hi = np.asarray(hi, dtype=np.float64)
    off = np.asarray(offset, dtype=np.float64)
    sc = np.asarray(scale, dtype=np.float64)
    if precision.normalized:
        storage = np.abs(sc) / (2.0 * precision.max_code)
    else:
        stored_max = np.maximum(np.abs(lo - off), np.abs(hi - off))
        bits, emin = (10, -14) if precision is Precision.EXR16 else (23, -126)
        storage = _half_ulp(stored_max, bits, emin)
    arithmetic = 2.0**-23 * np.maximum(np.abs(lo), np.abs(hi))
    return storage + arithmetic


def float32_to_bytes(values: np.ndarray) -> np.ndarray:
    """float32 values ``(M,)`` → ``(M, 4)`` little-endian bytes, one float per RGBA texel.

    The embedded metadata block stores exact float32 bit patterns this way in every precision:
    channel ``k`` holds byte ``k`` as ``byte / 255`` (written by :func:`float32_from_bytes`' inverse),
    which survives PNG8, PNG16 (as ``byte * 257``) and half floats, and GLSL 330 rebuilds the float
    with ``uintBitsToFloat``.
    """
    return np.ascontiguousarray(np.asarray(values, dtype="<f4")).view(np.uint8).reshape(-1, 4)


def float32_from_bytes(channels: np.ndarray) -> np.ndarray:
    """``(M, 4)`` sampler channels holding ``byte / 255`` → float32 values ``(M,)``."""
    b = np.clip(np.rint(np.asarray(channels, dtype=np.float64) * 255.0), 0, 255).astype(np.uint8)
    return np.ascontiguousarray(b).view("<f4").reshape(-1)
