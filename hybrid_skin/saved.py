"""State saved in the .blend as small versioned records: one way to load and save them all.

A record is a dataclass; its fields are the table of what is stored (one JSON object in a hidden string
property, so it survives save, reload, undo and files written without the add-on's handlers).
:meth:`SavedRecord.load` reads every shape ever saved: each record class lists, per older version, the
function that lifts a dict of that version to the next (:attr:`SavedRecord.MIGRATIONS`; records written
before versions existed are version 0), and unknown keys are dropped. :meth:`SavedRecord.save` writes the
current version. No bpy here: the records are plain data, tested without Blender.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import asdict, dataclass, fields
from typing import Any, ClassVar, TypeVar

from .errors import HybridSkinError

__all__ = ["SavedRecord"]

R = TypeVar("R", bound="SavedRecord")


@dataclass
class SavedRecord:
    """Base of the saved records (see the module docstring)."""

    #: The version :meth:`save` writes.
    VERSION: ClassVar[int] = 1
    #: ``version -> function(dict) -> dict`` of the next version, for every version below ``VERSION``.
    MIGRATIONS: ClassVar[dict[int, Callable[[dict[str, Any]], dict[str, Any]]]] = {}
    #: What the record is, for the one message a record from a newer build gets.
    WHAT: ClassVar[str] = "Hybrid Skin data"

    @classmethod
    def load(cls: type[R], text: str) -> R | None:
        """The record saved as ``text`` (any version up to this build's), or None for "" (none saved)."""
        if not text:
            return None
        data = json.loads(text)
        version = int(data.pop("version", 0))
        if version > cls.VERSION:
            raise HybridSkinError(
                f"This {cls.WHAT} was saved by a newer Hybrid Skin (version {version}): update the add-on"
            )
        while version < cls.VERSION:
            data = cls.MIGRATIONS[version](data)
            version += 1
        known = {f.name for f in fields(cls)}
        return cls(**{key: value for key, value in data.items() if key in known})

    def save(self) -> str:
        return json.dumps({"version": self.VERSION, **asdict(self)})
