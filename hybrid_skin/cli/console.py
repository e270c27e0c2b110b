"""Console output of the command line: Blender's own chatter kept out of the lines a person reads."""

from __future__ import annotations

import os
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def quiet(*, echo_on_failure: bool = True) -> Iterator[None]:
    """Keep Blender's console chatter (operator reports, importer and GPU driver logs, which C code writes
    to the process's stdout and stderr) out of the progress lines; shown on stderr if the step fails
    (unless ``echo_on_failure`` is False: the caller's one error line carries Blender's reason)."""
    sys.stdout.flush()
    sys.stderr.flush()
    saved = os.dup(1), os.dup(2)
    with tempfile.TemporaryFile(mode="w+") as log:
        os.dup2(log.fileno(), 1)
        os.dup2(log.fileno(), 2)
        failed = True
        try:
            yield
            failed = False
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            for fd in saved:
                os.close(fd)
            if failed and echo_on_failure:
                log.seek(0)
                chatter = log.read().strip()
                if chatter:
                    print(f"\n{chatter}", file=sys.stderr)
