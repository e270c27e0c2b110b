"""How much work an operation did, counted rather than timed: frames Blender played, and the largest
amount of memory Python held at once (``tracemalloc``, which numpy reports its arrays to).

A refusal that knows the size of a bake before it starts plays no frame and holds next to nothing, on
any machine, however busy; a bake's peak is held to what it said it would need. Wall-clock time is kept
too, for the failure message only (a shared machine makes it a poor bound).
"""

from __future__ import annotations

import time
import tracemalloc
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import bpy


@dataclass
class Work:
    frames: int = 0  # frame changes Blender evaluated (scene.frame_set, playback)
    peak_bytes: int = 0  # the most Python (numpy included) held at once, above what it held before
    seconds: float = 0.0

    def __str__(self) -> str:
        return f"{self.frames} frames played, peak {self.peak_bytes / 1e6:.1f} MB, {self.seconds:.2f} s"


@contextmanager
def work_done() -> Iterator[Work]:
    """Count the work done inside the block (see the module docstring)."""
    work = Work()

    def count(*_args) -> None:
        work.frames += 1

    handlers = bpy.app.handlers.frame_change_pre
    handlers.append(count)
    started = not tracemalloc.is_tracing()
    if started:
        tracemalloc.start()
    tracemalloc.reset_peak()
    base = tracemalloc.get_traced_memory()[0]
    clock = time.perf_counter()
    try:
        yield work
    finally:
        work.seconds = time.perf_counter() - clock
        work.peak_bytes = max(0, tracemalloc.get_traced_memory()[1] - base)
        if started:
            tracemalloc.stop()
        handlers.remove(count)
