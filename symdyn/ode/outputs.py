"""Where the driver's members stop and what they save.

:class:`Stops`: the times every member must end a step on (breakpoints,
the last output time; the driver's ``land``: what happens there); :class:`Output`:
the states at the output times, kept or handed to a ``record`` callback;
:func:`read`: output times inside the accepted steps, read from DOP853's
continuous extension (:func:`symdyn.ode.methods.dense_coefficients`: no step
ends there, so the steps do not depend on the output times; a step that holds
one spends the three evaluations of ``contd8``).

Reading the outputs is arithmetic on arrays: every output time inside the
accepted steps of a sweep, for every member, in one call per chunk of
:data:`OUTPUT_FLOATS` floats (a 7th-degree polynomial per component), handed
to ``record`` in one call per chunk.

Layer 1, ode.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from .methods import interpolate

#: Output states interpolated at once (rows x components): bounds the memory
#: of a step that holds many output times (100,000 in one step of a batch).
OUTPUT_FLOATS = 1 << 18
#: Only the accepted steps that hold an output time make DOP853's continuous
#: extension.
SOME = "some"


def count(t: Any) -> Any:
    """How many output times ``t`` holds, counted before anything is
    converted (a range of a billion costs nothing to count)."""
    if isinstance(t, (list, tuple, range)):
        return len(t)
    return int(np.size(t)) if isinstance(t, np.ndarray) else 1


@dataclass
class Stops:
    """Where every member must end a step: the breakpoints and the last output
    time. Output times in between cost no step (dense output)."""

    times: np.ndarray       # sorted stop times > 0
    is_break: np.ndarray
    breakpoints: np.ndarray

    @classmethod
    def build(cls, t_out: np.ndarray, breakpoints: Any) -> Any:
        bps = np.array(sorted(b for b in breakpoints if 0 < b < t_out[-1]), dtype=float)
        times = np.union1d(t_out[-1:][t_out[-1:] > 0], bps)
        return cls(times, np.isin(times, bps), bps)

    def phase(self, t: Any) -> Any:
        """Number of breakpoints at or before ``t``."""
        if not self.breakpoints.size:
            return np.zeros(np.shape(t), dtype=np.intp)
        return np.searchsorted(self.breakpoints, t, side="right")

    def dense(self, t_out: np.ndarray) -> Any:
        """Whether accepted DOP853 steps may need their continuous extension:
        ``SOME`` (the steps that hold an output make it) if an output time lies
        strictly inside the steps' span, else None."""
        inner = np.count_nonzero((t_out > 0) & ~np.isin(t_out, self.times))
        return SOME if inner else None


class Output:
    """Stores states at output times, or hands them to ``record``."""

    def __init__(self, record: Callable[..., Any] | None, M: int, K: int, dim: int) -> None:
        self.record = record
        self.y = None if record is not None else np.full((M, K, dim), np.nan)

    def save(self, members: np.ndarray, k_out: np.ndarray, rows: Any) -> None:
        """Output ``k_out[i]`` of member ``members[i]`` is ``rows[i]``: stored,
        or handed to ``record`` in one call for all rows."""
        if self.record is not None:
            self.record(k_out, members, rows)
        elif self.y is not None:
            self.y[members, k_out] = rows


@dataclass(frozen=True, slots=True)
class Moved:
    """Members whose next output (the driver's ``following``) moved, and
    the index it moved to: the driver writes it (these functions only read
    its state)."""

    members: np.ndarray
    following: np.ndarray

    @classmethod
    def none(cls) -> Moved:
        empty = np.zeros(0, dtype=np.intp)
        return cls(empty, empty)


@dataclass(frozen=True, slots=True)
class _Inside:
    """Outputs inside steps: per output its step's row ``q``, member and
    output index ``k``; and where each member's next output moves."""

    q: np.ndarray
    members: np.ndarray
    k: np.ndarray
    moved: Moved


def _inside(t_out: np.ndarray, following: np.ndarray, idx: np.ndarray,
            t_end: np.ndarray) -> _Inside | None:
    """The outputs strictly before ``t_end`` of members ``idx`` (rows of a
    step), in time order per member."""
    K = len(t_out)
    nxt = following[idx]
    inside = (nxt < K) & (t_out[np.minimum(nxt, K - 1)] < t_end)
    if not inside.any():
        return None
    p, m = np.flatnonzero(inside), idx[inside]
    first = following[m]
    count = np.searchsorted(t_out, t_end[p], side="left") - first
    row = np.repeat(np.arange(len(p)), count)           # one row per output
    k = np.repeat(first - np.cumsum(count) + count, count) + np.arange(count.sum())
    return _Inside(p[row], m[row], k, Moved(m, first + count))


def _chunks(found: _Inside, dim: int) -> Any:
    """``found`` (:func:`_inside`) in pieces of at most :data:`OUTPUT_FLOATS`
    floats: ``(q, members, k)`` each."""
    size = max(1, OUTPUT_FLOATS // dim)
    for lo in range(0, len(found.q), size):
        yield found.q[lo:lo + size], found.members[lo:lo + size], found.k[lo:lo + size]


def read(t_out: np.ndarray, out: Output, following: np.ndarray,
         project: Callable[..., Any] | None,
         idx: np.ndarray, ta: np.ndarray, ya: np.ndarray, step: Any, t_end: np.ndarray,
         F: Any) -> Moved:
    """Save the outputs strictly inside the accepted DOP853 steps (rows of
    ``ta``, ... ; members ``idx``; ``F`` their continuous extensions), read
    from the continuous extension, chunk by chunk of :data:`OUTPUT_FLOATS`.
    Returns where the members' next outputs moved."""
    found = _inside(t_out, following, idx, t_end)
    if found is None:
        return Moved.none()
    for q, m, k in _chunks(found, ya.shape[1]):
        x = (t_out[k] - ta[q]) / step[q]
        cuts = np.flatnonzero(np.diff(q)) + 1       # q: runs of one step each
        if len(cuts) + 1 > len(q) // 16:            # few outputs a step: gather F's rows
            y = interpolate([c[q] for c in F], ya[q], x)
        else:                   # many: each step's rows broadcast (the same arithmetic)
            y = np.empty((len(q), ya.shape[1]), dtype=ya.dtype)
            for a, b in zip(np.r_[0, cuts], np.r_[cuts, len(q)], strict=True):
                i = q[a:a + 1]
                interpolate([c[i] for c in F], ya[i], x[a:b], y[a:b])
        out.save(m, k, y if project is None else project(y))
    return found.moved


def serve_ends(t_out: np.ndarray, out: Output, following: np.ndarray,
               project: Callable[..., Any] | None,
               idx: np.ndarray, t_new: np.ndarray, y_new: np.ndarray) -> Moved:
    """Save ``y_new`` of the accepted steps that end on an output time;
    returns where those members' next outputs moved."""
    nxt = following[idx]
    ends = (nxt < len(t_out)) & (t_out[np.minimum(nxt, len(t_out) - 1)] == t_new)
    if not ends.any():
        return Moved.none()
    rows = y_new[ends]
    out.save(idx[ends], nxt[ends], rows if project is None else project(rows))
    return Moved(idx[ends], nxt[ends] + 1)
