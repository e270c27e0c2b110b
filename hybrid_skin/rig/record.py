"""What Hybrid Skin set up on an object and what of the user's it changed: one versioned record.

The record is saved in ``Object.hybrid_skin.saved_state`` (:mod:`..saved`) so that it survives undo and the
files Blender writes without the add-on's save handler (autosave, ``quit.blend``); earlier builds wrote an
untyped dict, lifted by :func:`_migrate`. Modifiers are referred to as ``[persistent_uid, name]``
(``stack.modifier_ref``): a rename keeps them found.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..saved import SavedRecord

__all__ = ["FACTOR_GROUP", "MIX_MODIFIER", "DisplayRecord", "load", "save"]

#: The name of the Preserve Volume Armature modifier Hybrid Skin adds (Blender appends ``.001`` when the
#: user has one of that name).
MIX_MODIFIER = "HybridSkin DQS"
#: The name of the vertex group that holds every vertex's deform factor (``.001`` … likewise).
FACTOR_GROUP = "HybridSkin Factor"


@dataclass
class DisplayRecord(SavedRecord):
    """Hybrid Skin's setup of one mesh object (see the module docstring)."""

    VERSION = 1
    WHAT = "display setup"

    #: The object's name when the setup was made: a copy (Duplicate, Separate) carries the record with
    #: another name, which is how a copy is told from the original.
    object_name: str
    #: The Armature modifier Hybrid Skin follows.
    armature: list
    #: The user's display type (the GPU display shows the object as bounds while it draws).
    display_type: str
    #: The user's active vertex group index when the factor group was added.
    active_group: int = -1
    #: The user's Preserve Volume on the followed modifier (Hybrid Skin sets it off: that one is the LBS
    #: part); None when it was not changed.
    preserve_volume: bool | None = None
    #: The Preserve Volume modifier Hybrid Skin added after the followed one (the DQS part); None: none.
    mix: list | None = None
    #: The vertex group the added modifier mixes by: every vertex's deform factor.
    factor_group: str = ""
    #: Whether Remove deletes the factor group (records of early builds reused a group of the user's).
    owns_group: bool = True
    #: Modifiers the GPU display hides in the viewport while it draws, each ``[uid, name, user's value]``.
    hidden: list = field(default_factory=list)
    #: Why the GPU display lets Blender draw the object now (a code of ``setup.ASIDE``), "" if it draws.
    aside: str = ""
    #: The factor group is due to be written back in Object Mode (the mode it was left from).
    factors_due: str = ""

    @property
    def gpu_draws(self) -> bool:
        """Blender's deformation and drawing of the mesh are hidden: the add-on draws it."""
        return bool(self.hidden)


def load(text: str) -> DisplayRecord | None:
    """The record saved as ``text`` (any shape ever saved), or None for "" (nothing set up)."""
    return DisplayRecord.load(text)


def save(record: DisplayRecord | None) -> str:
    return "" if record is None else record.save()


def _migrate(data: dict) -> dict:
    """A record of an earlier build (no ``version``), as the fields of one that restores exactly.

    Its keys: ``armature_modifier`` (a name) or ``armature_ref``; ``display_type``; ``object``;
    ``active_group``; GPU display: ``show_viewport`` ({name: value}, later [[uid, name, value]]) or
    ``aside``; Evaluated display: ``added_modifier`` (True for the name :data:`MIX_MODIFIER`, later a ref;
    False when a modifier of the user's was reused), ``added_group``, ``factor_group`` (absent: the name
    :data:`FACTOR_GROUP`), ``preserve_volume``, ``factors_due``."""
    shown = data.get("show_viewport", [])
    hidden = shown if isinstance(shown, list) else [[0, name, value] for name, value in shown.items()]
    added = data.get("added_modifier")
    evaluated = "added_modifier" in data
    return dict(
        object_name=data.get("object", ""),
        armature=data.get("armature_ref") or [0, data.get("armature_modifier", "")],
        display_type=data.get("display_type", "TEXTURED"),
        active_group=int(data.get("active_group", -1)),
        preserve_volume=data.get("preserve_volume"),
        mix=added if isinstance(added, list) else ([0, MIX_MODIFIER] if added else None),
        factor_group=data.get("factor_group", FACTOR_GROUP) if evaluated else "",
        owns_group=bool(data.get("added_group", False)),
        hidden=[list(entry) for entry in hidden],
        aside=data.get("aside", "") or "",
        factors_due=data.get("factors_due", "") or "",
    )


DisplayRecord.MIGRATIONS = {0: _migrate}
