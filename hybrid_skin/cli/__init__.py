"""Command line: ``python -m hybrid_skin <command>`` (headless, with Blender as the bpy module).

Each command is a module with ``add_arguments(parser)`` and ``run(args) -> int``; add new ones to
:data:`COMMANDS`. Command modules import bpy inside ``run`` only, so ``--help`` stays instant. A command
runs inside a runtime session (:func:`..runtime.session`): the add-on is not registered here, yet the
bind cache and the core's threads need their runtime.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from .. import runtime

#: command name → (module, one-line help)
COMMANDS: dict[str, tuple[str, str]] = {
    "demo": (".demo", "import a rigged glTF, compare hybrid skinning with Blender's own LBS/DQS/mix"),
    "bake-textures": (".textures", "bake animation textures (PNG/EXR + JSON) of actions in a .blend"),
}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m hybrid_skin", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, (module_name, help_text) in COMMANDS.items():
        module = importlib.import_module(module_name, __package__)
        command = sub.add_parser(name, help=help_text, description=help_text)
        module.add_arguments(command)
        command.set_defaults(run=module.run)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    with runtime.session():
        return int(args.run(args) or 0)


if __name__ == "__main__":
    sys.exit(main())
