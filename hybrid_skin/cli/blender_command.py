"""``blender -b scene.blend --command hybrid_skin <command> …``: the command line through the Blender binary.

Registered with the add-on (``bpy.utils.register_cli_command``, Blender 4.2+), so a farm node with the
extension installed runs the same commands, flags, exit codes and ``error:`` lines as
``python -m hybrid_skin`` (:mod:`.`), without Blender as a Python module. Blender calls :func:`execute` with
the arguments after the command id, in a session where the add-on is enabled and the file given before
``--command`` is open (``bake-textures`` bakes it when no .blend is named). Blender exits with the int
returned, so nothing may escape as an exception: argparse's own exit (bad flags: 2, ``--help``: 0) is
turned into that int too.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import bpy

from .. import runtime
from . import main

__all__ = ["COMMAND_ID", "execute", "register", "unregister"]

#: The id after ``--command`` (Blender requires an identifier).
COMMAND_ID = "hybrid_skin"


@dataclass
class BlenderCommandState:
    """The handle Blender returned for the registered command (unregister gives it back)."""

    handle: Any = None


def _state() -> BlenderCommandState:
    return runtime.get().state(BlenderCommandState)


def execute(argv: list[str]) -> int:
    """What Blender calls for ``--command hybrid_skin …``: ``argv`` is every argument after the id."""
    try:
        return main(list(argv), blender=True)
    except SystemExit as done:  # argparse: --help (0) or a bad flag (2, its usage line already printed)
        code = done.code
        return code if isinstance(code, int) else (0 if code is None else 1)


def register() -> None:
    _state().handle = bpy.utils.register_cli_command(COMMAND_ID, execute)


def unregister() -> None:
    state = _state()
    if state.handle is not None:
        bpy.utils.unregister_cli_command(state.handle)
        state.handle = None
