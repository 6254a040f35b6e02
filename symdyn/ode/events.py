"""Events of the driver: where a function of the state changes sign.

An :class:`Event` is ``g(t, y, *args) -> (m,)``, one value per member (the
driver's ``args``, the members' own rows). After every accepted DOP853 step
the driver evaluates ``g`` at the new state; where its sign changes (in the
event's ``direction``) the root is located on the step's continuous
extension (:func:`locate`: bisection on ``x`` in ``[0, 1]``, to the last
bit), and the member's first root is kept (``BatchSolution.t_events``,
``y_events``). A ``terminal`` event stops its member there: outputs after it
stay NaN (as ``scipy.integrate.solve_ivp``'s terminal events, which this
follows; diffrax's ``Event`` likewise).

Layer 1, ode.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

#: bisection steps on the step fraction x: 2**-60 below a float's resolution
BISECTIONS = 60


@dataclass(frozen=True)
class Event:
    """``g(t, y, *args)``: per member, a value whose sign change is the event.

    ``direction``: +1 only rising through 0, -1 only falling, 0 both.
    ``terminal``: the member stops at its first root.
    """

    g: object
    terminal: bool = True
    direction: int = 0

    def __post_init__(self):
        if not callable(self.g):
            raise ValueError(f"Event.g: expected a callable g(t, y, *args), got {self.g!r}")
        if self.direction not in (-1, 0, 1):
            raise ValueError(f"Event.direction must be -1, 0 or 1, got {self.direction!r}")


def check(events):
    """The events as a tuple of :class:`Event` (a bare callable: terminal, both ways)."""
    if events is None:
        return ()
    if isinstance(events, Event) or callable(events):
        events = (events,)
    out = tuple(e if isinstance(e, Event) else Event(e) for e in events)
    return out


def values(events, t, y, args):
    """``g`` of every event at the states: shape ``(m, n_events)``."""
    if not events:
        return np.empty((len(t), 0))
    return np.stack([np.asarray(e.g(t, y, *args), dtype=float) for e in events], axis=1)


def crossed(events, g_old, g_new):
    """Per member and event: did ``g`` cross 0 on the step (its direction)?"""
    up = (g_old < 0) & (g_new >= 0)
    down = (g_old > 0) & (g_new <= 0)
    direction = np.array([e.direction for e in events])
    return np.where(direction > 0, up, np.where(direction < 0, down, up | down))


def locate(g, t, y, h, F, interpolate, args, g_old):
    """The root of ``g`` on each step: ``(t_root, y_root)``.

    ``F``: the steps' continuous extension (``interpolate(F, y, x)`` is the
    state at fraction ``x``), ``g_old``: ``g`` at the steps' start (the sign
    at ``x = 0``; there is a root in ``(0, 1]``). Bisection keeps the root
    bracketed: the answer is the right end, where ``g`` has the sign it has
    after the crossing (or is 0).
    """
    lo, hi = np.zeros(len(t)), np.ones(len(t))
    left = np.sign(g_old)
    for _ in range(BISECTIONS):
        mid = 0.5 * (lo + hi)
        if not np.any((mid > lo) & (mid < hi)):
            break
        gm = np.asarray(g(t + mid * h, interpolate(F, y, mid), *args), dtype=float)
        same = np.sign(gm) == left
        lo, hi = np.where(same, mid, lo), np.where(same, hi, mid)
    return t + hi * h, interpolate(F, y, hi)
