"""Command line, two ways in with the same commands, flags, exit codes and ``error:`` lines:

* ``blender -b scene.blend --command hybrid_skin <command> …`` — the farm's way: the Blender binary
  with the extension installed (:mod:`.blender_command` registers it with ``bpy.utils.register_cli_command``);
* ``python -m hybrid_skin <command> …`` — a source checkout with Blender as the ``bpy`` module.

Each command is a module with ``add_arguments(parser)`` and ``run(args) -> int``; add new ones to
:data:`COMMANDS`. Command modules import bpy inside ``run`` only, so ``--help`` stays instant. A command
runs inside a runtime session (:func:`..runtime.session`) — the bind cache and the core's threads need
their runtime — or, when it uses the add-on's operators and settings as a user does (the demo), with the
whole add-on registered for its duration. The demo is a source checkout's only (it needs ``assets/``, and
it starts Blender afresh): the extension zip leaves it out, and Blender's ``--command`` never offers it.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from .. import register, runtime, unregister
from .console import quiet

#: How each way in names itself in ``--help`` and usage lines.
PYTHON_PROG = "python -m hybrid_skin"
BLENDER_PROG = "blender -b scene.blend --command hybrid_skin"


@dataclass(frozen=True)
class Command:
    """One command: its module (relative to this package), its one-line help, and how it runs."""

    module: str
    help: str
    #: the whole add-on registered for its duration (it uses the operators as a user does)
    needs_addon: bool = False
    #: offered by ``blender --command`` (False: a source checkout's ``python -m hybrid_skin`` only)
    in_blender: bool = True


COMMANDS: dict[str, Command] = {
    "bake-textures": Command(
        ".textures", "bake animation textures (vertex animation textures, VAT; PNG/EXR + JSON) of actions"
    ),
    "demo": Command(
        ".demo",
        "a rigged glTF with Hybrid Skin: Blender comparison, picture, textures, shape keys and a .blend",
        needs_addon=True,
        in_blender=False,
    ),
}

#: Where the source-only commands come from, for the one line a zip install prints instead of them.
SOURCE_ONLY = "runs from a source checkout of Hybrid Skin (`make demo` there): the extension leaves it out"


def available(name: str) -> bool:
    """Whether this install has the command's module (the extension zip leaves the demo out)."""
    return importlib.util.find_spec(COMMANDS[name].module, __package__) is not None


def build_parser(*, blender: bool = False) -> argparse.ArgumentParser:
    """The parser of one way in (``blender``: Blender's ``--command``, which offers only its commands)."""
    parser = argparse.ArgumentParser(
        prog=BLENDER_PROG if blender else PYTHON_PROG,
        description="Hybrid Skin from the command line (headless)",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, command in COMMANDS.items():
        if blender and not command.in_blender:
            continue
        parser_of_command = sub.add_parser(name, help=command.help, description=command.help)
        if not available(name):
            parser_of_command.add_argument("ignored", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)
            parser_of_command.set_defaults(run=_source_only(name), needs_addon=False)
            continue
        module = importlib.import_module(command.module, __package__)
        module.add_arguments(parser_of_command)
        parser_of_command.set_defaults(run=module.run, needs_addon=command.needs_addon)
    return parser


def _source_only(name: str):
    def run(_args: argparse.Namespace) -> int:
        print(f"error: '{name}' {SOURCE_ONLY}", file=sys.stderr)
        return 2

    return run


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


def main(argv: list[str] | None = None, *, blender: bool = False) -> int:
    """Parse ``argv`` and run the command; its exit code (argparse exits 2 on bad flags, 0 on ``--help``)."""
    args = build_parser(blender=blender).parse_args(argv)
    with quiet():
        import bpy  # noqa: F401  (Blender 5.x logs its colour management set-up to stdout on import)
    with addon_registered() if args.needs_addon else runtime.session():
        return int(args.run(args) or 0)


if __name__ == "__main__":
    sys.exit(main())
