"""What Hybrid Skin set up on an object and what of the user's it changed: one versioned record.

The record is saved in ``Object.hybrid_skin.saved_state`` (:mod:`..saved`), with the setup itself: saved files
hold Blender's own hybrid (version 2). Earlier builds wrote an untyped dict (lifted by :func:`_migrate`) and,
in version 1, set up a Multi Modifier Armature modifier mixing by a vertex group, which the record still
names so that it is taken off exactly. Modifiers are referred to as ``[persistent_uid, name]``
(``stack.modifier_ref``): a rename keeps them found.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..saved import SavedRecord

__all__ = ["FACTOR_GROUP", "MIX_MODIFIER", "DisplayRecord", "load", "save"]

#: The name of the Preserve Volume Armature modifier Hybrid Skin adds (Blender appends ``.001`` when the
#: user has one of that name).
MIX_MODIFIER = "HybridSkin DQS"
#: Version 1's vertex group that held every vertex's deform factor (``.001`` … likewise).
FACTOR_GROUP = "HybridSkin Factor"


@dataclass
class DisplayRecord(SavedRecord):
    """Hybrid Skin's setup of one mesh object (see the module docstring)."""

    VERSION = 2
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
    #: Version 1: the Multi Modifier Preserve Volume modifier it added after the followed one; None: none.
    mix: list | None = None
    #: Version 1: the vertex group that modifier mixed by (every vertex's deform factor).
    factor_group: str = ""
    #: Whether Remove deletes the factor group (records of early builds reused a group of the user's).
    owns_group: bool = True
    #: Version 2: Hybrid Skin's modifiers by role (``parts.ROLES``), each ``[persistent_uid, name]``.
    parts: dict = field(default_factory=dict)
    #: Node trees made for this object (its Mix tree), removed with the setup when nothing else uses them.
    trees: list = field(default_factory=list)
    #: Point attributes the bind stored on the mesh for the Mix tree, removed with the setup.
    attributes: list = field(default_factory=list)
    #: Copies of the settings' animation on the Mix modifier's inputs (``mirror.sync``).
    mirrored: list = field(default_factory=list)
    #: How Auto is evaluated: "TREE" (by Blender, from the pose) or "ATTRIBUTE" (written by the add-on at
    #: each evaluation), and why not by the tree.
    auto: str = ""
    auto_reason: str = ""
    #: Modifiers hidden in the viewport, each ``[uid, name, user's value]``: by the GPU display while it
    #: draws, or ("PAINT" in ``hidden_for``) Hybrid Skin's parts while the object is painted.
    hidden: list = field(default_factory=list)
    hidden_for: str = ""
    #: Why the GPU display lets Blender draw the object now (a code of ``setup.ASIDE``), "" if it draws.
    aside: str = ""
    #: The factor group is due to be written back in Object Mode (the mode it was left from).
    factors_due: str = ""

    @property
    def gpu_draws(self) -> bool:
        """Blender's deformation and drawing of the mesh are hidden: the add-on draws it."""
        return bool(self.hidden) and self.hidden_for != "PAINT"


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


def _from_version_1(data: dict) -> dict:
    """Version 1 set up a Multi Modifier mix by a vertex group: its ``mix`` and ``factor_group`` stay in the
    record, which takes them off exactly; the handlers then set the object up again as today."""
    return data


DisplayRecord.MIGRATIONS = {0: _migrate, 1: _from_version_1}
