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


def output_times(t):
    """Output times: a non-empty 1-D array, ``>= 0``, strictly increasing."""
    times = finite_array(t, "t", 0.0)
    times = np.atleast_1d(times)
    if times.ndim != 1 or times.size == 0:
        raise ValueError("t must be a non-empty 1-D array of times >= 0")
    if np.any(np.diff(times) <= 0):
        raise ValueError("t must be strictly increasing")
    return times
