"""Where the driver's members stop and what they save.

:class:`_Stops`: the times every member must end a step on (breakpoints,
the last output time); :class:`_Output`: the states at the output times, kept
or handed to a ``record`` callback; :func:`_serve`: output times inside an
accepted step, read from the continuous extension (no step ends there).

Layer 1, ode.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .methods import dense_coefficients, interpolate


@dataclass
class _Stops:
    """Where every member must end a step: the breakpoints and the last output
    time. Output times in between cost no step (dense output)."""

    times: np.ndarray       # sorted stop times > 0
    is_break: np.ndarray
    breakpoints: np.ndarray

    @classmethod
    def build(cls, t_out, breakpoints):
        bps = np.array(sorted(b for b in breakpoints if 0 < b < t_out[-1]), dtype=float)
        times = np.union1d(t_out[-1:][t_out[-1:] > 0], bps)
        return cls(times, np.isin(times, bps), bps)

    def phase(self, t):
        """Number of breakpoints at or before ``t``."""
        if not self.breakpoints.size:
            return np.zeros(np.shape(t), dtype=np.intp)
        return np.searchsorted(self.breakpoints, t, side="right")


class _Output:
    """Stores states at output times, or hands them to ``record``."""

    def __init__(self, record, M, K, dim):
        self.record = record
        self.y = None if record is not None else np.full((M, K, dim), np.nan)

    def save(self, members, k_out, rows):
        if self.record is None:
            self.y[members, k_out] = rows
            return
        for k in np.unique(k_out):
            sel = k_out == k
            self.record(int(k), members[sel], rows[sel])


def _serve(f, t_out, out, following, project, accept, idx, ta, ya, step, t_new, y_new,
           arga, Ka):
    """Save the outputs strictly inside the accepted DOP853 steps, from the
    continuous extension. Returns the evaluations spent (3 when some step has
    an output inside)."""
    pos = np.flatnonzero(accept)
    nxt = following[idx]
    pending = nxt < len(t_out)
    inside = pending & (t_out[np.minimum(nxt, len(t_out) - 1)] < t_new[pos])
    if not inside.any():
        return 0
    p, m = pos[inside], idx[inside]
    Kp = Ka[:, p]
    with np.errstate(all="ignore"):
        F = dense_coefficients(f, ta[p], ya[p], step[p], y_new[p],
                               tuple(a[p] for a in arga), Kp)
    first = following[m]
    count = np.searchsorted(t_out, t_new[p], side="left") - first
    row = np.repeat(np.arange(len(p)), count)           # one row per output
    k = np.repeat(first - np.cumsum(count) + count, count) + np.arange(count.sum())
    x = (t_out[k] - ta[p][row]) / step[p][row]
    rows = interpolate([c[row] for c in F], ya[p][row], x)
    out.save(m[row], k, rows if project is None else project(rows))
    following[m] += count
    return 3


def _serve_ends(t_out, out, following, project, idx, t_new, y_new):
    """Save ``y_new`` of the accepted steps that end on an output time."""
    nxt = following[idx]
    ends = (nxt < len(t_out)) & (t_out[np.minimum(nxt, len(t_out) - 1)] == t_new)
    if ends.any():
        rows = y_new[ends]
        out.save(idx[ends], nxt[ends], rows if project is None else project(rows))
        following[idx[ends]] += 1
