"""How much memory a bake may hold, and sizes in words (standard library only).

Every bake knows the size of its work before it starts (issue 35): what it will keep in memory is checked
against a budget, by default half of this machine's physical memory (:func:`memory_budget`), so a bake that
would swap or be killed is refused in one sentence instead, with nothing sampled. Where the machine does
not say how much memory it has (:func:`physical_memory` returns ``None``), the budget is
:data:`FALLBACK_BUDGET`.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

__all__ = ["FALLBACK_BUDGET", "MIB", "MemoryBudget", "bytes_text", "memory_budget", "physical_memory"]

MIB = 1 << 20
#: The budget where the machine's memory is unknown.
FALLBACK_BUDGET = 4 << 30


@dataclass(frozen=True)
class MemoryBudget:
    """Bytes a bake may hold, and where the number comes from (for the refusal's sentence)."""

    bytes: int
    origin: str

    def allows(self, needed: int) -> bool:
        return needed <= self.bytes

    def __str__(self) -> str:
        return f"{bytes_text(self.bytes)} ({self.origin})"


def physical_memory() -> int | None:
    """This machine's physical memory in bytes, where the system says (Linux, macOS, BSD), else None."""
    try:
        pages, size = os.sysconf("SC_PHYS_PAGES"), os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, ValueError, OSError):  # Windows has no sysconf
        return None
    return pages * size if pages > 0 and size > 0 else None


def memory_budget(requested_mib: float = 0) -> MemoryBudget:
    """The budget: ``requested_mib`` MiB when above 0, else half of the physical memory (or
    :data:`FALLBACK_BUDGET` where it is unknown)."""
    if requested_mib > 0:
        return MemoryBudget(int(requested_mib * MIB), "the budget asked for")
    total = physical_memory()
    if total is None:
        return MemoryBudget(FALLBACK_BUDGET, "this system does not say how much memory it has")
    return MemoryBudget(total // 2, f"half of this machine's {bytes_text(total)}")


def bytes_text(count: float) -> str:
    """``1.2 GB``, ``640 KB``, ``12 bytes``: decimal units, as file browsers show sizes."""
    count = float(count)
    for unit, size in (("TB", 1e12), ("GB", 1e9), ("MB", 1e6), ("KB", 1e3)):
        if count >= size:
            value = count / size
            return f"{value:.3g} {unit}" if value < 100 else f"{value:,.0f} {unit}"
    return f"{int(count)} bytes"
