"""What a bake added to an object, so Clear Bake removes exactly that: one versioned record.

Saved in ``Object.hybrid_skin.bake_state`` (:mod:`..saved`): it stays in the .blend with the bake. Version 0
(builds before versions) stored ``bypassed`` as ``{name: [viewport, render]}`` and had no ``action``; its
shape keys' action is then the one their animation data holds.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..saved import SavedRecord

__all__ = ["BakeRecord"]


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
