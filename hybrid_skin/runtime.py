"""The add-on's session state: one :class:`Runtime`, created at register and dropped at unregister.

Everything the add-on keeps between calls lives here instead of in module globals, so that registering
twice, disabling, or reloading scripts can never leave stale caches behind: the bind cache, what the
viewport shows, the compiled shaders, panel statistics, analysis results and the crowd preview. The
modules that own each piece read and write it through :func:`get`; nothing registers listeners.

Scripts that use the add-on without registering it (the command line) wrap their work in
:func:`session`. The numpy core's worker threads (``core.skinning``) are stopped by :func:`stop`.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .core import skinning
from .errors import HybridSkinError

if TYPE_CHECKING:
    from .animtex.crowd import CrowdPreview
    from .core.analysis import Analysis
    from .draw.shaders import Program
    from .skin.bind import MeshBind
    from .skin.factors import Written
    from .skin.viewport import ShownSkin

__all__ = ["Runtime", "current", "get", "hold", "session", "start", "stop"]


@dataclass(eq=False)
class Runtime:
    """State of one registered session (see the module docstring)."""

    #: ``Object.session_uid`` → the mesh's bind state (:mod:`.skin.bind`).
    binds: dict[int, MeshBind] = field(default_factory=dict)
    #: ``Object.session_uid`` → what the viewport draws for it (:mod:`.skin.viewport`).
    shown: dict[int, ShownSkin] = field(default_factory=dict)
    #: Bumped by depsgraph and frame-change handlers: shown skins re-read their pose when it changed.
    generation: int = 0
    #: The viewport's draw handler, while registered.
    draw_handle: Any = None
    #: Object name → CPU milliseconds of its last per-frame update (the panel shows it).
    update_ms: dict[str, float] = field(default_factory=dict)
    #: Object name → its last analysis (:mod:`.analyze`).
    analyses: dict[str, Analysis] = field(default_factory=dict)
    #: The crowd preview being drawn, and its two draw handlers (:mod:`.animtex.crowd`).
    crowd: CrowdPreview | None = None
    crowd_handles: list[Any] = field(default_factory=list)
    #: ``(kind, variant)`` → compiled shader (:mod:`.draw.shaders`), built on first use.
    shaders: dict[tuple[str, str], Program] = field(default_factory=dict)
    #: ``(object session_uid, message)`` already printed by a callback: each problem once per object, not
    #: per redraw (an object of the same name, e.g. linked again, is another object and is told again).
    reported: set[tuple[int, str]] = field(default_factory=set)
    #: ``Mesh.session_uid`` of meshes the add-on is changing without changing what a bind read
    #: (:func:`.skin.bind.own_edits`): their depsgraph update leaves the binds trusted.
    own_mesh_edits: set[int] = field(default_factory=set)
    #: ``Mesh.session_uid`` of meshes a depsgraph update showed in Edit Mode (:mod:`.skin.handlers`): when
    #: one is out of it, its edits are in the mesh and its binds are compared before their next use.
    edit_mode_meshes: set[int] = field(default_factory=set)
    #: ``Object.session_uid`` → what its factor group holds (:class:`.skin.factors.Written`): a write is
    #: skipped when nothing it depends on changed.
    factors_written: dict[int, Written] = field(default_factory=dict)
    #: ``Object.session_uid`` → (factor group name, ``(N,)`` values it was last given): a write changes only
    #: the vertices whose value moved (Auto at 1M vertices: most of a frame's cost was writing them all).
    factor_values: dict[int, tuple[str, Any]] = field(default_factory=dict)
    #: ``Object.session_uid`` of objects whose factor group a timer writes (after a stroke, playback or a
    #: modal tool): :func:`.skin.factors.queue_write`.
    factors_queued: set[int] = field(default_factory=set)
    #: Bumped when a depsgraph update reports an armature (a pose changed): Auto factors follow it.
    pose_generation: int = 0
    #: ``Object.session_uid`` → why the GPU display failed to skin it (one sentence) and its modifier
    #: stack then: it steps aside until the stack or the settings change (:mod:`.skin.viewport`).
    draw_failures: dict[int, tuple[str, tuple]] = field(default_factory=dict)
    #: A handler of the add-on is running: an evaluation it starts (a rebind) must not re-enter it.
    in_handler: bool = False
    #: Between ``save_pre`` and ``save_post``: objects hold the user's own setup for the file.
    saving: bool = False
    #: ``Object.session_uid`` of objects a job of the add-on is changing for a while (a bake hides their
    #: modifiers, the native oracle adds one): the handlers leave their setup alone until it is done.
    held: set[int] = field(default_factory=set)
    #: ``Object.session_uid`` → its texture bake summary before a save into another folder rebased its paths
    #: (:mod:`.skin.handlers`): put back when the open file stays the old one (Save Copy, a failed save).
    summaries_before_save: dict[int, str] = field(default_factory=dict)

    def bump(self) -> None:
        """Something in the scene changed: every shown skin re-checks its bind and pose at its next draw."""
        self.generation += 1

    def report_once(self, obj, error: Exception) -> None:
        """Print a problem found by a callback (draw, property update, handler), once per object and text.

        Callbacks cannot show an operator report, and raising in them prints a traceback on every redraw.
        """
        key = (obj.session_uid, str(error))
        if key not in self.reported:
            self.reported.add(key)
            print(f"Hybrid Skin: {error}")


_current: Runtime | None = None


@contextmanager
def hold(objects) -> Iterator[None]:
    """Within the block, the handlers leave the setup of ``objects`` alone (see ``Runtime.held``)."""
    state = get()
    uids = {o.session_uid for o in objects} - state.held
    state.held |= uids
    try:
        yield
    finally:
        state.held -= uids


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
