"""Sampled curves: when a curve first reaches a level.

Layer 3, studies.
"""

from __future__ import annotations

import numpy as np


def first_reach(t, y, level, *, log_interpolate: bool = False) -> float:
    """First time the samples ``y(t)`` reach ``level`` (``y >= level``); ``inf``: never.

    Without interpolation, the first sample time at or above the level. With
    ``log_interpolate``, linear in ``log t`` between that sample and the one
    before it (when both times are > 0). Either way a reading off the
    samples, late by up to one grid step without interpolation: for a claim
    about the reduced ODE, solve the crossing instead
    (:func:`symdyn.reduced.solve_crossing.crossing_time`, which the report's
    caption checks use).

    Examples
    --------
    >>> first_reach([1.0, 10.0, 100.0], [0.0, 0.25, 0.75], 0.5, log_interpolate=True)
    31.62...
    >>> first_reach([1.0, 10.0], [0.0, 0.1], 0.5)
    inf
    """
    t, y = np.asarray(t, dtype=float), np.asarray(y, dtype=float)
    above = np.flatnonzero(y >= level)
    if above.size == 0:
        return np.inf
    k = above[0]
    if not log_interpolate or k == 0 or t[k - 1] <= 0:
        return float(t[k])
    x0, x1 = np.log(t[k - 1]), np.log(t[k])
    return float(np.exp(x0 + (level - y[k - 1]) * (x1 - x0) / (y[k] - y[k - 1])))
