"""``python -m hybrid_skin``: see :mod:`hybrid_skin.cli`."""

import sys

from .cli import main

sys.exit(main())
