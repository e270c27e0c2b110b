"""The rig layer's session state that is not a cache of one object's data: evaluation counters, what the
handlers are doing, and objects a job holds (:meth:`..runtime.Runtime.state`)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from .. import runtime

__all__ = ["RIG_IN_EDIT_MODE", "RigState", "hold", "rig_state"]


#: The stack signature kept with a draw failure (``RigState.draw_failures``) met while the object's rig
#: was in Edit Mode: the GPU display tries again once Edit Mode is left.
RIG_IN_EDIT_MODE = ("the rig in Edit Mode",)


@dataclass
class RigState:
    """See the module docstring; per-object entries are keyed by ``Object.session_uid``."""

    #: Bumped by every evaluation the handlers see: cached GPU state re-checks itself at its next draw.
    generation: int = 0
    #: Bumped when an evaluation may have moved a pose (an armature reported, a frame change): Auto follows.
    pose_generation: int = 0
    #: A handler of the add-on is running: an evaluation it starts (a rebind) must not re-enter it.
    in_handler: bool = False
    #: Between ``save_pre`` and ``save_post``: objects hold the user's own setup for the file.
    saving: bool = False
    #: Objects a job of the add-on is changing for a while (a bake hides their modifiers, the native oracle
    #: adds one): the handlers leave their setup alone until it is done.
    held: set[int] = field(default_factory=set)
    #: Why the GPU preview failed to skin an object (one sentence) and its modifier stack then
    #: (``stack.signature``): it steps aside until the stack or the settings change.
    draw_failures: dict[int, tuple[str, tuple]] = field(default_factory=dict)
    #: The bind (``MeshBind.serial``) whose data each object's mesh holds for its Mix tree: a rebind
    #: (weights edited) writes it again.
    vertex_data: dict[int, int] = field(default_factory=dict)
    #: The Auto source (``trees.auto_tree``) each object's Mix tree was built from in this session.
    tree_sources: dict[int, object] = field(default_factory=dict)
    #: Objects whose Auto factors the add-on writes (``auto_follow``) and the pose generation written.
    auto_written: dict[int, tuple] = field(default_factory=dict)
    #: Objects whose Auto write waits for a timer (after a stroke, playback or a modal tool).
    auto_queued: set[int] = field(default_factory=set)
    #: What each object's setup depended on when the handlers last saw it (``handlers._signature``).
    seen: dict[int, tuple] = field(default_factory=dict)
    #: Objects whose Auto is the attribute path (written by the add-on at each evaluation).
    attribute_auto: dict[int, bool] = field(default_factory=dict)
    #: A viewport render (playblast) is under way: the GPU display steps aside for it.
    viewport_render: bool = False

    def bump(self) -> None:
        """Something in the scene changed: every shown skin re-checks its bind and pose at its next draw."""
        self.generation += 1


def rig_state() -> RigState:
    return runtime.get().state(RigState)


@contextmanager
def hold(objects) -> Iterator[None]:
    """Within the block, the handlers leave the setup of ``objects`` alone (see ``RigState.held``)."""
    state = rig_state()
    uids = {o.session_uid for o in objects} - state.held
    state.held |= uids
    try:
        yield
    finally:
        state.held -= uids
