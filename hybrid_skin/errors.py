"""The one error type of the add-on's user-facing checks."""

from __future__ import annotations

__all__ = ["HybridSkinError"]


class HybridSkinError(ValueError):
    """Bad input from the user's scene; the message says what is wrong and how to fix it.

    Operators show it with ``report``, property callbacks and handlers print it once, and the scripting
    API lets it propagate.
    """
