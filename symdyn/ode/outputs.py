"""Where the driver's members stop and what they save.

:class:`Stops`: the times every member must end a step on (breakpoints,
the last output time; :func:`land`: what happens there); :class:`Output`:
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

from dataclasses import dataclass

import numpy as np

from .methods import interpolate

#: Output states interpolated at once (rows x components): bounds the memory
#: of a step that holds many output times (100,000 in one step of a batch).
OUTPUT_FLOATS = 1 << 18
#: Only the accepted steps that hold an output time make DOP853's continuous
#: extension.
SOME = "some"


def count(t):
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
    def build(cls, t_out, breakpoints):
        bps = np.array(sorted(b for b in breakpoints if 0 < b < t_out[-1]), dtype=float)
        times = np.union1d(t_out[-1:][t_out[-1:] > 0], bps)
        return cls(times, np.isin(times, bps), bps)

    def phase(self, t):
        """Number of breakpoints at or before ``t``."""
        if not self.breakpoints.size:
            return np.zeros(np.shape(t), dtype=np.intp)
        return np.searchsorted(self.breakpoints, t, side="right")

    def dense(self, t_out):
        """Whether accepted DOP853 steps may need their continuous extension:
        ``SOME`` (the steps that hold an output make it) if an output time lies
        strictly inside the steps' span, else None."""
        inner = np.count_nonzero((t_out > 0) & ~np.isin(t_out, self.times))
        return SOME if inner else None


class Output:
    """Stores states at output times, or hands them to ``record``."""

    def __init__(self, record, M, K, dim):
        self.record = record
        self.y = None if record is not None else np.full((M, K, dim), np.nan)

    def save(self, members, k_out, rows):
        """Output ``k_out[i]`` of member ``members[i]`` is ``rows[i]``: stored,
        or handed to ``record`` in one call for all rows."""
        if self.record is None:
            self.y[members, k_out] = rows
        else:
            self.record(k_out, members, rows)


def _inside(t_out, following, idx, t_end):
    """The outputs strictly before ``t_end`` of members ``idx`` (rows of a
    step), in time order per member: their rows, the members and the output
    indices; ``following`` moves past them."""
    K = len(t_out)
    nxt = following[idx]
    inside = (nxt < K) & (t_out[np.minimum(nxt, K - 1)] < t_end)
    if not inside.any():
        return None
    p, m = np.flatnonzero(inside), idx[inside]
    first = following[m]
    count = np.searchsorted(t_out, t_end[p], side="left") - first
    following[m] += count
    row = np.repeat(np.arange(len(p)), count)           # one row per output
    k = np.repeat(first - np.cumsum(count) + count, count) + np.arange(count.sum())
    return p[row], m[row], k


def _chunks(found, dim):
    """``found`` (:func:`_inside`) in pieces of at most :data:`OUTPUT_FLOATS` floats."""
    if found is None:
        return
    size = max(1, OUTPUT_FLOATS // dim)
    for lo in range(0, len(found[0]), size):
        yield tuple(a[lo:lo + size] for a in found)


def read(t_out, out, following, project, idx, ta, ya, step, t_end, F):
    """Save the outputs strictly inside the accepted DOP853 steps (rows of
    ``ta``, ... ; members ``idx``; ``F`` their continuous extensions), read
    from the continuous extension, chunk by chunk of :data:`OUTPUT_FLOATS`."""
    for q, m, k in _chunks(_inside(t_out, following, idx, t_end), ya.shape[1]):
        x = (t_out[k] - ta[q]) / step[q]
        cuts = np.flatnonzero(np.diff(q)) + 1       # q: runs of one step each
        if len(cuts) + 1 > len(q) // 16:            # few outputs a step: gather F's rows
            y = interpolate([c[q] for c in F], ya[q], x)
        else:                   # many: each step's rows broadcast (the same arithmetic)
            y = np.empty((len(q), ya.shape[1]), dtype=ya.dtype)
            for a, b in zip(np.r_[0, cuts], np.r_[cuts, len(q)], strict=True):
                i = q[a:a + 1]
                polynomial_at([c[i] for c in F], ya[i], x[a:b], y[a:b])
        out.save(m, k, y if project is None else project(y))


def polynomial_at(F, y, x, out):
    """:func:`~symdyn.ode.methods.interpolate` of one step (``F``, ``y`` of
    one row) at many fractions ``x``: the same operations, broadcast, into
    the rows ``out`` (the batched driver and the one-member path read steps
    with many outputs through it)."""
    x = x[:, None]
    out[...] = 0.0
    for i, row in enumerate(reversed(F)):
        out += row
        out *= x if i % 2 == 0 else 1 - x
    out += y                # in place: a fresh array of a chunk's size costs page faults
    return out


def serve_ends(t_out, out, following, project, idx, t_new, y_new):
    """Save ``y_new`` of the accepted steps that end on an output time."""
    nxt = following[idx]
    ends = (nxt < len(t_out)) & (t_out[np.minimum(nxt, len(t_out) - 1)] == t_new)
    if ends.any():
        rows = y_new[ends]
        out.save(idx[ends], nxt[ends], rows if project is None else project(rows))
        following[idx[ends]] += 1


def land(f, args, stops, landed, stop, t, y, fy, last_err):
    """Members ``landed`` on their next stop move on to the next one; after a
    breakpoint the stages restart. Returns the evaluations spent."""
    if not landed.size:
        return 0
    k = stop[landed]
    stop[landed] += 1
    # new phase: no first-same-as-last reuse, and no error prediction across it
    return restart(f, args, stops, landed[stops.is_break[k]], t, y, fy, last_err)


def restart(f, args, stops, members, t, y, fy, last_err):
    """A new right-hand side for ``members``: evaluate their first stage anew."""
    if not members.size:
        return 0
    fy[members] = f(t[members], y[members], stops.phase(t[members]),
                    *(a[members] for a in args))
    last_err[members] = 0.0
    return 1
