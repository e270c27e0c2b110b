"""Timing, memory and reporting for the benchmarks (no Blender data is touched here).

Honest timing on a shared machine: the functions being compared run in alternating rounds (ours,
Blender's, ours, …) so load that comes and goes hits both alike; each figure is the *minimum* over at
least :data:`MIN_ROUNDS` rounds (the least disturbed run), and the spread (median and maximum) is
printed next to it. Peak memory is Python's and numpy's heap as ``tracemalloc`` sees it, taken in one
extra untimed run (tracemalloc slows allocation down, so it never runs while timing); Blender's own C
allocations are invisible to it.
"""

from __future__ import annotations

import datetime
import os
import platform
import statistics
import time
import tracemalloc
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

MIN_ROUNDS = 7


@dataclass
class Timing:
    """Seconds of every round of one function."""

    seconds: list[float]

    @property
    def best(self) -> float:
        return min(self.seconds)

    @property
    def median(self) -> float:
        return statistics.median(self.seconds)

    @property
    def worst(self) -> float:
        return max(self.seconds)

    def spread(self, scale: float = 1e3) -> str:
        """``min / median / max`` in ms (or whatever ``scale`` turns seconds into)."""
        return f"{self.best * scale:.3g} / {self.median * scale:.3g} / {self.worst * scale:.3g}"


def interleaved(
    fns: dict[str, Callable[[], object]],
    rounds: int,
    before: dict[str, Callable[[], object]] | None = None,
    warmup: int = 1,
) -> dict[str, Timing]:
    """Time each function once per round, alternating their order every round; ``before[name]`` runs
    untimed right before ``name`` (e.g. to reset what the previous round left)."""
    rounds = max(rounds, MIN_ROUNDS)
    before = before or {}
    names = list(fns)
    for _ in range(warmup):
        for name in names:
            before.get(name, _nothing)()
            fns[name]()
    times: dict[str, list[float]] = {name: [] for name in names}
    for r in range(rounds):
        for name in names if r % 2 == 0 else names[::-1]:
            before.get(name, _nothing)()
            t0 = time.perf_counter()
            fns[name]()
            times[name].append(time.perf_counter() - t0)
    return {name: Timing(t) for name, t in times.items()}


def _nothing() -> None:
    return None


def peak_bytes(fn: Callable[[], object], before: Callable[[], object] = _nothing) -> int:
    """Peak Python/numpy heap (tracemalloc) above what was allocated before, over one call of ``fn``."""
    before()
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        fn()
        return tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()


def mib(n_bytes: float) -> str:
    return f"{n_bytes / 2**20:.0f} MiB" if n_bytes >= 2**20 else f"{n_bytes / 2**10:.0f} KiB"


@dataclass
class Figure:
    """One line of the results: ``ratio = ours / blender`` (or a plain value when there is no Blender
    counterpart), compared with ``target`` (and ``stretch``, a better target)."""

    key: str
    name: str
    ours: Timing | None
    blender: Timing | None
    ratio: float
    target: float | None
    meaning: str
    stretch: float | None = None
    unit: str = "ms"
    value_label: str = ""
    notes: list[str] = field(default_factory=list)
    peak: int | None = None

    @property
    def median_ratio(self) -> float | None:
        if self.ours is None or self.blender is None:
            return None
        return self.ours.median / self.blender.median

    def verdict(self) -> str:
        if self.target is None:
            return "info"
        if self.stretch is not None and self.ratio <= self.stretch:
            return "met (stretch)"
        return "met" if self.ratio <= self.target else "NOT met"


def machine() -> dict[str, str]:
    model = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    try:
        load = "{:.2f} {:.2f} {:.2f}".format(*os.getloadavg())
    except OSError:
        load = "?"
    return {
        "date": datetime.date.today().isoformat(),
        "cpu": f"{model}, {os.cpu_count()} logical cores",
        "numpy": np.__version__,
        "load": load,
    }


def _ms(t: Timing | None) -> str:
    return "—" if t is None else f"{t.best * 1e3:.3g} ms"


def _target(fig: Figure) -> str:
    if fig.target is None:
        return "—"
    return f"≤ {fig.target:g}" + (f" (stretch {fig.stretch:g})" if fig.stretch is not None else "")


def record(figures: list[Figure], header: dict[str, str]) -> dict:
    """The run as ``docs/measured.json`` keeps it: the one source of the measured numbers in the docs
    (``tools/docs_figures.py`` writes them into the pages)."""
    rows = []
    for fig in figures:
        rows.append({
            "key": fig.key,
            "name": fig.name,
            "ours_ms": None if fig.ours is None else round(fig.ours.best * 1e3, 6),
            "blender_ms": None if fig.blender is None else round(fig.blender.best * 1e3, 6),
            "ratio": round(fig.ratio, 6),
            "median_ratio": None if fig.median_ratio is None else round(fig.median_ratio, 6),
            "value_label": fig.value_label,
            "target": fig.target,
            "stretch": fig.stretch,
            "verdict": fig.verdict(),
        })  # fmt: skip
    return {"run": {**header, "min_rounds": MIN_ROUNDS}, "figures": rows}


def text_table(figures: list[Figure]) -> str:
    lines = []
    for fig in figures:
        ratio = f"{fig.ratio:.3g}" + (
            "" if fig.median_ratio is None else f" (medians {fig.median_ratio:.3g})"
        )
        lines.append(f"{fig.key:<5} {fig.name}")
        ours = "—" if fig.ours is None else f"{fig.ours.spread()} ms"
        blender = "—" if fig.blender is None else f"{fig.blender.spread()} ms"
        lines.append(f"      ours min/med/max {ours};  Blender {blender}")
        peak = "" if fig.peak is None else f";  peak memory (ours) {mib(fig.peak)}"
        lines.append(
            f"      {fig.value_label or 'ratio'} {ratio};  target {_target(fig)}: {fig.verdict()}{peak}"
        )
        for note in fig.notes:
            lines.append(f"      {note}")
        lines.append(f"      → {fig.meaning}")
    return "\n".join(lines)


def markdown_table(figures: list[Figure], header: dict[str, str]) -> str:
    out = [
        f"Measured {header['date']} on {header['cpu']}; Blender {header['blender']} (bpy module), numpy "
        f"{header['numpy']}, OpenGL renderer {header['renderer']}; load average {header['load']} at the "
        f"start, {header['load_end']} at the end. Minimum of ≥ {MIN_ROUNDS} interleaved rounds per figure.",
        "",
        "| | figure | ours | Blender | ratio (of medians) | target | |",
        "|---|---|---|---|---|---|---|",
    ]
    for fig in figures:
        ratio = f"{fig.ratio:.3g}" + ("" if fig.median_ratio is None else f" ({fig.median_ratio:.3g})")
        if fig.value_label:
            ratio = f"{ratio} {fig.value_label}"
        mark = {"met": "✔", "met (stretch)": "✔ stretch", "NOT met": "✘", "info": ""}[fig.verdict()]
        cells = [fig.key, fig.name, _ms(fig.ours), _ms(fig.blender), ratio, _target(fig), mark]
        out.append("| " + " | ".join(cells) + " |")
    return "\n".join(out)
