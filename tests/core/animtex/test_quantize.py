"""Channel precision: every precision decodes within the bound its encoding implies, and no better."""

from __future__ import annotations

import numpy as np
import pytest

from hybrid_skin.core.animtex.quantize import (
    Precision,
    channel_values,
    decode_channels,
    decode_terms,
    encode_channels,
    error_bound,
    float32_from_bytes,
    float32_to_bytes,
    stored_from_channels,
)

RNG = np.random.default_rng(7)
LO = np.array([-0.37, 2.5, -120.0, 0.0])
HI = np.array([0.91, 2.75, -95.0, 1e-3])


def _roundtrip(values: np.ndarray, precision: Precision, symmetric: np.ndarray | bool = False) -> np.ndarray:
    lo, hi = values.min(axis=0), values.max(axis=0)
    offset, scale = decode_terms(lo, hi, precision, symmetric)
    stored = encode_channels(values, offset, scale, precision)
    assert stored.dtype == precision.dtype
    return decode_channels(channel_values(stored, precision), offset, scale)


def _independent_bound(precision: Precision) -> np.ndarray:
    """Bound derived here from first principles, not from the module's error_bound."""
    centred = (HI - LO) / 2  # floats store value - centre, at most half the extent
    exponent = np.floor(np.log2(centred))
    storage = {
        Precision.PNG8: (HI - LO) / (2 * 255),  # half a step of 255 steps across the AABB
        Precision.PNG16: (HI - LO) / (2 * 65535),
        Precision.EXR16: 2.0 ** (np.maximum(exponent, -14) - 11),  # half ulp, 10-bit mantissa
        Precision.EXR32: 2.0 ** (exponent - 24),  # half ulp, 23-bit mantissa
    }[precision]
    return storage + 2.0**-23 * np.maximum(np.abs(LO), np.abs(HI))  # float32 decode arithmetic


@pytest.mark.parametrize("precision", list(Precision))
def test_aabb_channels_decode_within_half_step(precision: Precision) -> None:
    values = LO + (HI - LO) * RNG.random((20000, 4))
    values[0], values[1] = LO, HI
    err = np.abs(_roundtrip(values, precision) - values).max(axis=0)
    bound = _independent_bound(precision)
    assert np.all(err <= bound), (err, bound)
    # The bound is tight, not vacuous: random data reaches at least 80% of the storage half-step.
    if precision.normalized:
        assert np.all(err >= 0.8 * (HI - LO) / (2 * precision.max_code))
    lo, hi = values.min(axis=0), values.max(axis=0)
    offset, scale = decode_terms(lo, hi, precision)
    np.testing.assert_allclose(error_bound(lo, hi, offset, scale, precision), bound, rtol=1e-6)


@pytest.mark.parametrize("precision", [Precision.PNG8, Precision.PNG16])
def test_symmetric_channels_hit_zero_and_ends_exactly(precision: Precision) -> None:
    q = precision.max_code
    values = np.array([[-1.0], [0.0], [1.0], [0.3], [-0.77]])
    offset, scale = decode_terms(-1.0, 1.0, precision, True)
    stored = encode_channels(values, offset, scale, precision)
    np.testing.assert_array_equal(stored[:3, 0], [0, (q - 1) // 2, q - 1])
    decoded = decode_channels(channel_values(stored, precision), offset, scale)
    np.testing.assert_allclose(decoded[:3], values[:3], atol=1e-7)
    # Signed mapping: Q - 1 steps across [-1, 1], half step 1 / (Q - 1).
    assert np.abs(decoded - values).max() <= 1.0 / (q - 1) + 1e-7


@pytest.mark.parametrize("precision", list(Precision))
def test_constant_channel_is_exact_and_opaque(precision: Precision) -> None:
    offset, scale = decode_terms(np.array([1.0, 0.25]), np.array([1.0, 0.25]), precision)
    np.testing.assert_array_equal(scale, [0.0, 0.0])
    stored = encode_channels(np.array([[1.0, 0.25]]), offset, scale, precision)
    np.testing.assert_array_equal(channel_values(stored, precision), [[1.0, 1.0]])  # opaque alpha
    np.testing.assert_array_equal(
        decode_channels(channel_values(stored, precision), offset, scale), [[1.0, 0.25]]
    )


def test_half_float_overflow_is_an_error() -> None:
    offset, scale = decode_terms(-1e6, 1e6, Precision.EXR16)
    with pytest.raises(ValueError, match="EXR16"):
        encode_channels(np.array([9e5]), offset, scale, Precision.EXR16)


@pytest.mark.parametrize("precision", list(Precision))
def test_float32_bytes_survive_every_precision(precision: Precision) -> None:
    # The embedded metadata block stores exact float32 bit patterns as bytes / 255.
    values = np.array([0.0, -1.5, 3.14159265, 1e-30, 16383.0, 24.0, np.nan], dtype=np.float32)
    channels = float32_to_bytes(values).astype(np.float64) / 255.0
    as_read = channel_values(stored_from_channels(channels, precision), precision)
    back = float32_from_bytes(as_read)
    np.testing.assert_array_equal(back.view(np.uint32), values.view(np.uint32))


@pytest.mark.parametrize("precision", [Precision.PNG8, Precision.PNG16])
def test_blender_float_pixels_requantise_to_the_same_codes(precision: Precision) -> None:
    stored = RNG.integers(0, precision.max_code + 1, size=1000).astype(precision.dtype)
    np.testing.assert_array_equal(stored_from_channels(channel_values(stored, precision), precision), stored)
