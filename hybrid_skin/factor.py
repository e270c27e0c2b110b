"""Per-vertex deform factors from an object's Hybrid Skin settings."""

from __future__ import annotations

import bpy
import numpy as np

from .bridge import HybridSkinError
from .skin.bind import SkinRig

#: Seed 000 recommends about 0.5 for bends; also the property's default.
DEFAULT_FACTOR = 0.5


def _check(value: float | np.ndarray, n: int) -> float | np.ndarray:
    if np.ndim(value) == 0:
        f = float(value)
        if not 0.0 <= f <= 1.0:
            raise HybridSkinError(f"deform_factor must lie in [0, 1] (0 = LBS, 1 = DQS), got {f}")
        return f
    arr = np.asarray(value, dtype=np.float32)
    if arr.shape != (n,):
        raise HybridSkinError(f"a per-vertex deform_factor needs shape ({n},), got {arr.shape}")
    return np.clip(arr, 0.0, 1.0)


def vertex_factors(obj: bpy.types.Object, rig: SkinRig, override: float | np.ndarray | None = None):
    """The factor to skin ``obj`` with: ``override`` if given, else from ``obj.hybrid_skin``.

    Returns a scalar, an ``(N,)`` array, or ``"AUTO"`` (computed per frame from the pose)."""
    n = rig.vertex_count
    if override is not None:
        return _check(override, n)
    settings = getattr(obj, "hybrid_skin", None)
    if settings is None:
        return DEFAULT_FACTOR
    base = float(settings.deform_factor)
    if settings.factor_mode == "AUTO":
        return "AUTO"  # resolved per frame from the pose by SkinRig.evaluate
    if settings.factor_mode == "VERTEX_GROUP":
        return (base * factor_group_weights(obj, rig)).astype(np.float32)
    return base


def factor_group_weights(obj: bpy.types.Object, rig: SkinRig) -> np.ndarray:
    """``(N,)`` weights of the object's factor vertex group (bound with the rig), or a clear error."""
    name = obj.hybrid_skin.factor_vertex_group
    weights = rig.group_weights.get(obj.vertex_groups.find(name))
    if weights is None:
        raise HybridSkinError(
            f"'{obj.name}': factor vertex group '{name}' does not exist; "
            "pick one in the Hybrid Skin panel or use the global factor"
        )
    return weights
