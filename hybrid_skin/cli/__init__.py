"""Command line: ``python -m hybrid_skin <command>`` (headless, with Blender as the bpy module).

Each command is a module with ``add_arguments(parser)`` and ``run(args) -> int``; add new ones to
:data:`COMMANDS`. Command modules import bpy inside ``run`` only, so ``--help`` stays instant. A command
runs inside a runtime session (:func:`..runtime.session`) — the bind cache and the core's threads need
their runtime — or, when it uses the add-on's operators and settings as a user does (the demo), with the
whole add-on registered for its duration.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Iterator
from contextlib import contextmanager

from .. import register, runtime, unregister
from .console import quiet

#: command name → (module, one-line help, needs the whole add-on registered)
COMMANDS: dict[str, tuple[str, str, bool]] = {
    "demo": (
        ".demo",
        "a rigged glTF with Hybrid Skin: Blender comparison, picture, textures, shape keys and a .blend",
        True,
    ),
    "bake-textures": (".textures", "bake animation textures (PNG/EXR + JSON) of actions in a .blend", False),
}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m hybrid_skin", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, (module_name, help_text, needs_addon) in COMMANDS.items():
        module = importlib.import_module(module_name, __package__)
        command = sub.add_parser(name, help=help_text, description=help_text)
        module.add_arguments(command)
        command.set_defaults(run=module.run, needs_addon=needs_addon)
    return parser


@contextmanager
def addon_registered() -> Iterator[None]:
    """The whole add-on registered for a block (unless it is already, e.g. installed and enabled)."""
    if runtime.current() is not None:
        yield
        return
    register()
    try:
        yield
    finally:
        unregister()


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    with quiet():
        import bpy  # noqa: F401  (Blender 5.x logs its colour management set-up to stdout on import)
    with addon_registered() if args.needs_addon else runtime.session():
        return int(args.run(args) or 0)


if __name__ == "__main__":
    sys.exit(main())
