"""What a bake added to an object, so Clear Bake removes exactly that: one versioned record.

Saved in ``Object.hybrid_skin.bake_state`` (:mod:`..saved`): it stays in the .blend with the bake. Version 0
(builds before versions) stored ``bypassed`` as ``{name: [viewport, render]}`` and had no ``action``; its
shape keys' action is then the one their animation data holds.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..errors import HybridSkinError
from ..saved import SavedRecord

__all__ = ["BakeRecord", "unreadable"]


@dataclass
class BakeRecord(SavedRecord):
    """One bake of one object (see the module docstring)."""

    VERSION = 1
    WHAT = "bake"

    #: ``SHAPE_KEYS``, ``CURRENT``, ``PC2`` or ``MDD``.
    target: str = "SHAPE_KEYS"
    #: The scene frames baked.
    frames: list = field(default_factory=list)
    #: Modifiers the bake bypasses, each ``[uid, name, user's show_viewport, user's show_render]``.
    bypassed: list = field(default_factory=list)
    #: Names of the shape keys the bake created, in frame order.
    keys: list = field(default_factory=list)
    #: The Mesh Cache modifier a point-cache bake added, ``[uid, name]``.
    cache_modifier: list | None = None
    #: The user's active shape key index before the bake.
    active_key: int = -1
    #: Whether the bake created the Basis key, the shape keys' animation data, their action.
    created_basis: bool = False
    created_animation_data: bool = False
    created_action: bool = False
    #: The animation data's slot name before the bake (Blender ≥ 4.4).
    last_slot: str = ""
    #: The action the baked keys' F-Curves are in; None in records of version 0.
    action: str | None = None


def _from_version_0(data: dict) -> dict:
    bypassed = data.get("bypassed", [])
    if isinstance(bypassed, dict):
        data["bypassed"] = [[0, name, *flags] for name, flags in bypassed.items()]
    return data


BakeRecord.MIGRATIONS = {0: _from_version_0}


#: Each field's JSON shape, checked before a record's bake is taken off or baked over (a damaged record
#: must be refused in one sentence, never half-cleared).
_SHAPES = {
    "target": lambda v: v in ("SHAPE_KEYS", "CURRENT", "PC2", "MDD"),
    "frames": lambda v: isinstance(v, list) and all(isinstance(f, int) for f in v),
    "bypassed": lambda v: isinstance(v, list)
    and all(isinstance(b, list) and len(b) == 4 and isinstance(b[1], str) for b in v),
    "keys": lambda v: isinstance(v, list) and all(isinstance(k, str) for k in v),
    "cache_modifier": lambda v: v is None or isinstance(v, str) or (isinstance(v, list) and len(v) == 2),
    "active_key": lambda v: isinstance(v, int),
    "action": lambda v: v is None or isinstance(v, str),
    "last_slot": lambda v: isinstance(v, str),
}


def unreadable(text: str) -> str | None:
    """Why the saved bake record ``text`` cannot be read by this build (a clause for a sentence: damaged,
    or from a newer Hybrid Skin), or None when it can (or there is none). The record is left as it is."""
    try:
        record = BakeRecord.load(text)
    except HybridSkinError:
        return "it was saved by a newer Hybrid Skin"
    except (ValueError, TypeError, AttributeError, KeyError):
        return "it is damaged"
    if record is None:
        return None
    bad = [name for name, fits in _SHAPES.items() if not fits(getattr(record, name))]
    return f"it is damaged ({', '.join(bad)})" if bad else None
