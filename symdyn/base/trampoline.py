"""A call made from its own file, so that an alarm can tell work from clean-up.

The time bounds of :mod:`symdyn.base.budget` ignore a ring whose interrupted
frame is their own clean-up (their file, or ``contextlib``). Work they bound
is called through :func:`call`, so that work done in C (``time.sleep``, a
long ``sum``) is interrupted in this file's frame, not in the bound's.

Layer 0, base.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def call(f: Callable[..., T], *args: object) -> T:
    """``f(*args)``."""
    return f(*args)
