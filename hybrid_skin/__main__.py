"""``python -m hybrid_skin``: see :mod:`hybrid_skin.cli`."""

import sys

from .cli.console import quiet

# Blender prints its own start-up log lines as the module loads (e.g. Blender 5.2's "color_management |
# Using OCIO=..." in a fresh user folder): kept out of the command's output, shown if the import fails.
with quiet():
    import bpy  # noqa: F401

from .cli import main  # noqa: E402

sys.exit(main())
