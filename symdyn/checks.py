"""Argument checks shared by the solvers and the simulator.

Bad input raises ``ValueError`` naming the argument and the allowed range.
"""

from __future__ import annotations

import numpy as np


def finite_array(value, name, low=None, low_open=False):
    """``value`` as a float array, finite and ``>= low`` (``> low`` if ``low_open``)."""
    try:
        arr = np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        raise ValueError(f"{name}: expected numbers, got {value!r}") from None
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must be finite, got {value!r}")
    if low is not None and (np.any(arr <= low) if low_open else np.any(arr < low)):
        rng = f"> {low}" if low_open else f">= {low}"
        raise ValueError(f"{name} must be {rng}, got {value!r}")
    return arr


def is_integer(value) -> bool:
    """An ``int`` or numpy integer, not a ``bool``."""
    return isinstance(value, (int, np.integer)) and not isinstance(value, bool)


def integer(value, name, low, *, optional=False, none_means=""):
    """``value`` as an ``int >= low``; ``None`` passes (returned) when ``optional``."""
    if optional and value is None:
        return None
    if not is_integer(value) or value < low:
        what = f"None{none_means} or an integer" if optional else "an integer"
        raise ValueError(f"{name} must be {what} >= {low}, got {value!r}")
    return int(value)


def output_times(t):
    """Output times: a non-empty 1-D array, ``>= 0``, strictly increasing."""
    times = finite_array(t, "t", 0.0)
    times = np.atleast_1d(times)
    if times.ndim != 1 or times.size == 0:
        raise ValueError("t must be a non-empty 1-D array of times >= 0")
    if np.any(np.diff(times) <= 0):
        raise ValueError("t must be strictly increasing")
    return times
