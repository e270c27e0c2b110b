"""The files one texture bake writes: checked before it samples, written as one transaction, and never over
a file it cannot prove is its own (issue 35).

A bake's **set** is its image (``<stem>.png`` or ``<stem>.exr``), its JSON sidecar (``<stem>.json``) and,
where asked, ``<stem>.glb``, ``<stem>.babylon.json`` and ``<stem>_instancing.glb``. The sidecar is the
commit point: it names the bake's ``source`` (the object, the .blend file, the kind) and lists the set in
``files``.

* **Before sampling** (:func:`plan_outputs`): every name fits the file system (its name limit; on Windows
  also the 260-character path), and every file already at one of the set's paths (either image
  extension: the precision may change) is the previous bake of the same source: the sidecar there is one
  of the add-on's whose ``source`` names this object and this .blend (or the object's own last bake named
  that sidecar: bakes of an unsaved file, bakes of builds before ``source``), and the file is in its set.
  Anything else (another object's bake, a JSON file the add-on did not write, an image with no sidecar)
  is refused in one sentence, unless the bake is asked to replace files (``replace_files``).
* **Writing** (:class:`Transaction`): each output goes to a temporary file in the folder, with a short
  name of its own (``.hs-<token>-<role>.partial...``: a long stem cannot make it too long). The commit
  moves aside every file the set replaces and every file of the previous set the new one does not write
  (a ``.glb`` of a bake exported before, which no longer matches), renames the new files into place, the
  sidecar last, then deletes what it moved aside. A failure at any point (a file held open by an engine,
  a full disk) puts the old files back and removes the new: the folder is as it was, and the message
  says so.
"""

from __future__ import annotations

import json
import os
import sys
import uuid
from dataclasses import dataclass, field

from ..core.animtex.metadata import FORMAT_NAME
from ..errors import HybridSkinError
from ..rig import checks

__all__ = ["ROLES", "OutputSet", "Source", "Transaction", "default_stem", "plan_outputs"]

#: The set's files, in the order they are committed: the sidecar, which names the others, last.
ROLES = ("image", "gltf", "babylon", "instancing", "sidecar")
#: Each role's ending after the stem (the image's is the precision's: ``.png`` or ``.exr``).
ENDINGS = {"gltf": ".glb", "babylon": ".babylon.json", "instancing": "_instancing.glb", "sidecar": ".json"}
IMAGE_ENDINGS = (".png", ".exr")
#: The longest path Windows programs accept without long-path support.
WINDOWS_MAX_PATH = 259


@dataclass(frozen=True)
class Source:
    """What a bake is of: recorded in its sidecar (``source``), compared by the next bake of those names."""

    object: str
    file: str
    kind: str

    def record(self) -> dict[str, str]:
        return {"object": self.object, "file": self.file, "kind": self.kind}

    def owns(self, other: dict) -> bool:
        """Whether a sidecar's ``source`` is this one's: the same object, in the same .blend file (an
        unsaved file's bake has none)."""
        if not isinstance(other, dict) or other.get("object") != self.object:
            return False
        theirs, ours = other.get("file") or "", self.file
        return not theirs or not ours or os.path.normcase(theirs) == os.path.normcase(ours)


def default_stem(name: str, kind: str) -> str:
    """``<object>_<kind>`` as a file name (:func:`..rig.checks.file_name_for`: names that clean alike stay
    apart)."""
    return checks.file_name_for(f"{name}_{kind.lower()}")


@dataclass
class OutputSet:
    """Where a bake's files go and what it may replace there (see the module docstring)."""

    folder: str
    stem: str
    roles: tuple[str, ...]
    #: Files of the previous bake of the same source, by name: replaced, or removed when the new set has
    #: no file of that name (they would no longer match it). Nothing else in the folder is removed.
    previous: set[str] = field(default_factory=set)

    def path(self, role: str, image_ending: str = ".png") -> str:
        return os.path.join(self.folder, self.stem + (image_ending if role == "image" else ENDINGS[role]))

    def names(self, image_ending: str) -> dict[str, str]:
        """Each role's file name, for a texture of ``image_ending``."""
        return {role: os.path.basename(self.path(role, image_ending)) for role in self.roles}


def _name_limit(folder: str) -> int:
    try:
        return int(os.pathconf(folder, "PC_NAME_MAX"))
    except (AttributeError, ValueError, OSError):  # Windows has no pathconf: NTFS allows 255
        return 255


def _check_lengths(folder: str, stem: str, roles: tuple[str, ...]) -> None:
    limit = _name_limit(folder)
    names = [stem + e for e in IMAGE_ENDINGS] + [stem + ENDINGS[r] for r in roles if r != "image"]
    longest = max(names, key=lambda n: len(n.encode("utf-8")))
    if len(longest.encode("utf-8")) > limit:
        raise HybridSkinError(
            f"The file name '{longest}' is {len(longest.encode('utf-8'))} bytes, longer than the {limit} "
            "this folder allows: choose a shorter Name"
        )
    path = os.path.join(folder, longest)
    if sys.platform == "win32" and len(path) > WINDOWS_MAX_PATH:
        raise HybridSkinError(
            f"'{path}' is {len(path)} characters, longer than the {WINDOWS_MAX_PATH} Windows programs "
            "accept: choose a shorter Name or a folder nearer the drive's root"
        )


def _read_sidecar(path: str) -> dict | None:
    """The sidecar at ``path`` if it is one of the add-on's (any version), else None (another file)."""
    try:
        with open(path, encoding="utf-8") as fh:
            meta = json.load(fh)
    except (OSError, ValueError):
        return None
    return meta if isinstance(meta, dict) and meta.get("format") == FORMAT_NAME else None


def _set_names(stem: str) -> set[str]:
    """Every name a set of ``stem`` can have: only these are ever replaced or removed as its own."""
    return {stem + e for e in IMAGE_ENDINGS} | {stem + e for e in ENDINGS.values()}


def _previous_set(meta: dict, stem: str) -> set[str]:
    """The file names of the bake a sidecar describes: those its ``files`` lists (before ``files``: its
    image and the exports a bake of that stem wrote beside it), among the names a set of ``stem`` has (a
    damaged or hand-edited sidecar can name no other file for removal)."""
    files = meta.get("files")
    if isinstance(files, dict):
        named = {name for name in files.values() if isinstance(name, str)}
    else:
        image = meta.get("image")
        named = {stem + ENDINGS["gltf"], stem + ENDINGS["babylon"], stem + ENDINGS["instancing"]}
        named |= {image} if isinstance(image, str) else set()
    return named & _set_names(stem)


def plan_outputs(
    folder: str,
    stem: str,
    *,
    image_endings: tuple[str, ...],
    gltf: bool,
    babylon: bool,
    source: Source,
    instancing: bool = False,
    own_sidecar: str | None = None,
    replace: bool = False,
) -> OutputSet:
    """The bake's :class:`OutputSet` in ``folder`` (checked to exist and be writable), refused in one
    sentence where a name is too long or a file at one of the paths it writes is not this source's (unless
    ``replace``). ``image_endings``: the image's possible endings (the tolerance search may pick PNG or EXR);
    ``own_sidecar``: the sidecar the bake's object says its last bake wrote (its summary)."""
    wanted = {"image": True, "sidecar": True, "gltf": gltf, "babylon": babylon, "instancing": instancing}
    roles = tuple(r for r in ROLES if wanted[r])
    _check_lengths(folder, stem, roles)
    outputs = OutputSet(folder, stem, roles)
    sidecar = outputs.path("sidecar")
    meta = _read_sidecar(sidecar) if os.path.isfile(sidecar) else None
    named_by_object = own_sidecar is not None and _same_path(own_sidecar, sidecar)
    if meta is not None and (source.owns(meta.get("source")) or named_by_object):
        outputs.previous = _previous_set(meta, stem) | {os.path.basename(sidecar)}
    written = [stem + e for e in image_endings] + [stem + ENDINGS[r] for r in roles if r != "image"]
    foreign = [n for n in written if os.path.lexists(os.path.join(folder, n)) and n not in outputs.previous]
    if foreign and not replace:
        raise HybridSkinError(_not_ours(folder, foreign, meta, sidecar))
    return outputs


def _same_path(a: str, b: str) -> bool:
    return os.path.normcase(os.path.abspath(a)) == os.path.normcase(os.path.abspath(b))


def _not_ours(folder: str, names: list[str], meta: dict | None, sidecar: str) -> str:
    what = f"'{names[0]}'" + (f" (and {len(names) - 1} more)" if len(names) > 1 else "")
    if meta is not None and isinstance(meta.get("source"), dict):
        src = meta["source"]
        where = os.path.basename(src.get("file") or "") or "an unsaved file"
        why = f"the bake of '{src.get('object')}' from {where}"
    elif meta is not None:
        why = "a bake that does not name its object (an earlier build's, or another object's)"
    elif os.path.isfile(sidecar):
        why = "not a sidecar Hybrid Skin wrote"
    else:
        why = "not part of a bake Hybrid Skin can prove is this object's (no sidecar beside it)"
    return (
        f"{what} in '{folder}' is {why}: choose another Name or folder, or tick Replace Files to replace it"
    )


class Transaction:
    """The set's files written to temporary names, then committed together (see the module docstring)."""

    def __init__(self, outputs: OutputSet):
        self.outputs = outputs
        self.token = uuid.uuid4().hex[:8]
        self.written: dict[str, str] = {}  # role -> temporary path

    def temporary(self, role: str, ending: str) -> str:
        """A temporary path for ``role`` in the folder (kept until :meth:`commit` or :meth:`discard`)."""
        path = os.path.join(self.outputs.folder, f".hs-{self.token}-{role}.partial{ending}")
        self.written[role] = path
        return path

    def discard(self) -> None:
        for path in self.written.values():
            if os.path.lexists(path):
                os.remove(path)
        self.written.clear()

    def commit(self, image_ending: str) -> list[str]:
        """Move the new files into place, the sidecar last; returns the names of the previous set's files
        removed because the new set has none of that name. On failure nothing is changed."""
        folder = self.outputs.folder
        names = self.outputs.names(image_ending)
        targets = [(self.written[r], os.path.join(folder, names[r])) for r in ROLES if r in self.written]
        stale = sorted(self.outputs.previous - {names[r] for r in self.written})
        aside: list[tuple[str, str]] = []
        placed: list[str] = []
        current = ""
        try:
            for n, final in enumerate([t for _, t in targets] + [os.path.join(folder, s) for s in stale]):
                if os.path.lexists(final):
                    current = final
                    backup = os.path.join(folder, f".hs-{self.token}-{n}.previous")
                    os.replace(final, backup)
                    aside.append((final, backup))
            for temp, final in targets:
                current = final
                os.replace(temp, final)
                placed.append(final)
        except OSError as err:
            for final in placed:
                os.remove(final)
            for final, backup in reversed(aside):
                os.replace(backup, final)
            self.discard()
            raise HybridSkinError(
                f"Cannot replace '{os.path.basename(current)}' ({err.strerror or err}; is it open in another "
                "program, such as an engine or an image viewer?)"
            ) from err
        for _final, backup in aside:
            try:
                os.remove(backup)
            except OSError:  # the new set is in place; an old copy left beside it is only clutter
                pass
        self.written.clear()
        return stale
