"""The add-on's session state: one :class:`Runtime`, created at register and dropped at unregister.

Everything the add-on keeps between calls lives here instead of in module globals, so that registering
twice, disabling, or reloading scripts can never leave stale caches behind. Each layer and feature keeps
its own typed state (a dataclass it defines, e.g. the bind cache, the viewport's skins, the crowd
preview) through :meth:`Runtime.state`, created on first use and keyed by its class; per-object records
are keyed by ``Object.session_uid`` (never a name: a rename must keep them). This module knows none of
those types, so nothing here imports upwards.

Scripts that use the add-on without registering it (the command line) wrap their work in
:func:`session`. The numpy core's worker threads (``core.skinning``) are stopped by :func:`stop`.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

from .core import skinning
from .errors import HybridSkinError

__all__ = ["Runtime", "current", "get", "session", "start", "stop"]

S = TypeVar("S")


class Runtime:
    """State of one registered session (see the module docstring)."""

    def __init__(self) -> None:
        self._states: dict[type, Any] = {}
        #: ``(object session_uid, message)`` already printed by a callback: each problem once per object,
        #: not per redraw (an object of the same name, e.g. linked again, is another object, told again).
        self.reported: set[tuple[int, str]] = set()

    def state(self, kind: type[S]) -> S:
        """The session's one instance of ``kind`` (a feature's state dataclass), created on first use."""
        found = self._states.get(kind)
        if found is None:
            found = self._states[kind] = kind()
        return found

    def report_once(self, obj, error: Exception) -> None:
        """Print a problem found by a callback (draw, property update, handler), once per object and text.

        Callbacks cannot show an operator report, and raising in them prints a traceback on every redraw.
        """
        key = (obj.session_uid, str(error))
        if key not in self.reported:
            self.reported.add(key)
            print(f"Hybrid Skin: {error}")


_current: Runtime | None = None


def start() -> Runtime:
    """Create the session's runtime (register); raises if one exists, which would hide a missed stop."""
    global _current
    if _current is not None:
        raise RuntimeError("Hybrid Skin's runtime already exists: unregister before registering again")
    _current = Runtime()
    return _current


def stop() -> None:
    """Drop the runtime (unregister, after every module freed what it owns) and stop the core's threads."""
    global _current
    _current = None
    skinning.shutdown()


def current() -> Runtime | None:
    """The runtime, or None while the add-on is not registered."""
    return _current


def get() -> Runtime:
    """The runtime; a clear error when the add-on is not registered (a script imported it directly)."""
    if _current is None:
        raise HybridSkinError(
            "Hybrid Skin is not enabled: enable it in Preferences ▸ Add-ons "
            "(scripts that import it directly call hybrid_skin.register() first)"
        )
    return _current


@contextmanager
def session() -> Iterator[Runtime]:
    """A runtime for the duration of a block (command line), unless the add-on is registered already."""
    if _current is not None:
        yield _current
        return
    runtime = start()
    try:
        yield runtime
    finally:
        stop()
