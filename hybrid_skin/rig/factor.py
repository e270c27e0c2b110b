"""The deform factor: one small type (:class:`DeformFactor`, from the core) and one resolver from an
object's settings.

Per vertex ``f`` (0 = LBS, 1 = DQS) is one of: the global number (factor mode Global, or a number given
by a script); the number times per-vertex weights (mode Vertex Group: the slider scales the group's
weights, so dragging it uploads nothing to the GPU; a script's ``(N,)`` array is weights with number 1);
or Auto, computed per vertex from the pose at each frame. :func:`resolve` is the only place that reads
the settings into one; every feature (API, viewport, Evaluated display, bakes, analysis, comparison) asks
it, so a missing factor group is the same clear error everywhere.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import bpy
import numpy as np

from ..core.deform_factor import DEFAULT_FACTOR, DeformFactor
from ..errors import HybridSkinError
from . import bind as skin_bind

if TYPE_CHECKING:
    from .mesh_bind import MeshBind

__all__ = [
    "DEFAULT_FACTOR",
    "FACTOR_MODES",
    "DeformFactor",
    "global_value",
    "group_weights",
    "missing_group",
    "resolve",
]

#: The factor modes, as ``obj.hybrid_skin.factor_mode`` names them.
FACTOR_MODES = ("GLOBAL", "VERTEX_GROUP", "AUTO")


def _override(value: float | np.ndarray, n: int) -> DeformFactor:
    """A script's factor, checked by one rule for a number and for every value of an array: a number in
    [0, 1] (NaN is none), never clipped or passed on silently."""
    try:
        if isinstance(value, str | bytes) or np.asarray(value).dtype.kind in "USVO":
            raise TypeError  # text is not a number, even "0.5" (numpy would read it as one)
        arr = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        raise HybridSkinError(
            f"deform_factor must be a number in [0, 1], an array of one per vertex, or None for the "
            f"object's own settings (Auto included), got {value!r}"
        ) from None
    if arr.ndim == 0:
        f = float(arr)
        if not 0.0 <= f <= 1.0:
            raise HybridSkinError(f"deform_factor must lie in [0, 1] (0 = LBS, 1 = DQS), got {f}")
        return DeformFactor(f)
    if arr.shape != (n,):
        raise HybridSkinError(f"a per-vertex deform_factor needs shape ({n},), got {arr.shape}")
    bad = np.flatnonzero(~((arr >= 0.0) & (arr <= 1.0)))  # NaN fails both comparisons
    if bad.size:
        raise HybridSkinError(
            f"a per-vertex deform_factor must lie in [0, 1] (0 = LBS, 1 = DQS): {bad.size} value(s) do not, "
            f"first at vertex {bad[0]} ({arr[bad[0]]})"
        )
    return DeformFactor.per_vertex(arr.astype(np.float32))


def group_weights(obj: bpy.types.Object, bound: MeshBind) -> np.ndarray:
    """``(N,)`` weights of the object's factor vertex group (read with the bind), or a clear error."""
    name = obj.hybrid_skin.factor_vertex_group
    weights = bound.group_weights.get(obj.vertex_groups.find(name)) if name else None
    if weights is None:
        raise missing_group(obj)
    return weights


def missing_group(obj: bpy.types.Object) -> HybridSkinError:
    """The one sentence for a factor vertex group that is not set or not there."""
    name = obj.hybrid_skin.factor_vertex_group
    missing = f"factor vertex group '{name}' does not exist" if name else "no factor vertex group is set"
    return HybridSkinError(
        f"'{obj.name}': {missing}; pick one in the Hybrid Skin panel or use the Global factor mode"
    )


def resolve(
    obj: bpy.types.Object,
    bound: MeshBind | None = None,
    override: float | np.ndarray | None = None,
    *,
    value: float | None = None,
    mode: str | None = None,
) -> DeformFactor:
    """The factor to skin ``obj`` with: ``override`` if given (a number in [0, 1] or an ``(N,)`` array,
    checked), else from ``obj.hybrid_skin`` (the default factor for objects without the settings), its
    slider number replaced by ``value`` and its factor mode by ``mode`` where given (the command line's
    ``--deform-factor`` and ``--factor-mode``).

    ``bound`` is the object's bind, needed for a vertex group's weights and an override's length; it is
    taken from the cache (:func:`..skin.bind.cached_bind`) when not given. Raises
    :class:`..errors.HybridSkinError` for a bad override or a missing factor group.
    """
    settings = getattr(obj, "hybrid_skin", None)
    if mode is not None and mode not in FACTOR_MODES:
        raise HybridSkinError(f"Unknown factor mode '{mode}': use one of {list(FACTOR_MODES)}")
    if value is not None and not 0.0 <= float(value) <= 1.0:
        raise HybridSkinError(f"deform_factor must lie in [0, 1] (0 = LBS, 1 = DQS), got {value}")
    mode = mode or (settings.factor_mode if settings is not None else "GLOBAL")
    needs_bind = override is not None and np.ndim(override) > 0
    needs_bind = needs_bind or (override is None and mode == "VERTEX_GROUP")
    if bound is None and needs_bind:
        bound = skin_bind.cached_bind(obj, bpy.context.evaluated_depsgraph_get())
    if override is not None:
        return _override(override, bound.vertex_count if bound is not None else 0)
    if value is None:
        value = DEFAULT_FACTOR if settings is None else float(settings.deform_factor)
    value = float(value)
    if mode == "AUTO":
        return DeformFactor.automatic(value)
    _check_setting(obj, value)
    if mode == "VERTEX_GROUP":
        return DeformFactor(value, group_weights(obj, bound))
    return DeformFactor(value)


def global_value(obj: bpy.types.Object) -> float:
    """The object's one number, the Deform Factor slider, whatever its factor mode (the default for an
    object without settings): what a runtime that takes a single factor plays (bone textures)."""
    settings = getattr(obj, "hybrid_skin", None)
    return DEFAULT_FACTOR if settings is None else _check_setting(obj, float(settings.deform_factor))


def _check_setting(obj: bpy.types.Object, value: float) -> float:
    """The slider's number, which a script can set to NaN (the property's range does not stop it): refused
    like a script's factor, never skinned (NaN positions) or clamped."""
    if not 0.0 <= value <= 1.0:
        raise HybridSkinError(
            f"'{obj.name}': its Deform Factor is {value}, not a number in [0, 1] (0 = LBS, 1 = DQS); "
            f"set it in the Hybrid Skin panel"
        )
    return value
