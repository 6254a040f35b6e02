"""Events of the driver: where a function of the state changes sign.

An :class:`Event` is ``g(t, y, *args) -> (m,)``, one value per member (the
driver's ``args``, the members' own rows). After every accepted DOP853 step
the driver evaluates ``g`` at the new state; where its sign changes (in the
event's ``direction``) the root is located on the step's continuous
extension (:func:`locate`: the Illinois method on ``x`` in ``[0, 1]``, to
the last bits), and the member's first root is kept (``BatchSolution.t_events``,
``y_events``). A ``terminal`` event stops its member there: outputs after it
stay NaN (as ``scipy.integrate.solve_ivp``'s terminal events, which this
follows; diffrax's ``Event`` likewise).

Layer 1, ode.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

#: at most this many evaluations of ``g`` to locate a root on a step
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

    def __post_init__(self) -> None:
        if not callable(self.g):
            raise ValueError(f"Event.g: expected a callable g(t, y, *args), got {self.g!r}")
        if self.direction not in (-1, 0, 1):
            raise ValueError(f"Event.direction must be -1, 0 or 1, got {self.direction!r}")


def check(events: Any) -> Any:
    """The events as a tuple of :class:`Event` (a bare callable: terminal, both ways)."""
    if events is None:
        return ()
    if isinstance(events, Event) or callable(events):
        events = (events,)
    out = tuple(e if isinstance(e, Event) else Event(e) for e in events)
    return out


def values(events: Any, t: Any, y: Any, args: Any) -> Any:
    """``g`` of every event at the states: shape ``(m, n_events)``."""
    if not events:
        return np.empty((len(t), 0))
    return np.stack([np.asarray(e.g(t, y, *args), dtype=float) for e in events], axis=1)


def crossed(events: Any, g_old: Any, g_new: Any) -> Any:
    """Per member and event: did ``g`` cross 0 on the step (its direction)?"""
    up = (g_old < 0) & (g_new >= 0)
    down = (g_old > 0) & (g_new <= 0)
    direction = np.array([e.direction for e in events])
    return np.where(direction > 0, up, np.where(direction < 0, down, up | down))


def locate(g: Callable[..., Any], t: Any, y: Any, h: Any, F: Any, interpolate: Callable[..., Any],
           args: Any, g_old: Any) -> Any:
    """The root of ``g`` on each step: ``(t_root, y_root)``.

    ``F``: the steps' continuous extension (``interpolate(F, y, x)`` is the
    state at fraction ``x``), ``g_old``: ``g`` at the steps' start (there is
    a sign change in ``(0, 1]``). The Illinois method (regula falsi whose
    retained end's value is halved, Dowell & Jarratt 1971) keeps the root
    bracketed in ``[lo, hi]`` and converges superlinearly; it stops when the
    bracket is a few ulps wide or ``g`` is 0, after at most
    :data:`BISECTIONS` evaluations. The answer is the right end, where ``g``
    has the sign it has after the crossing (or is 0).
    """
    m = len(t)
    lo, hi = np.zeros(m), np.ones(m)
    g_lo = np.asarray(g_old, dtype=float)
    g_hi = np.asarray(g(t + h, interpolate(F, y, hi), *args), dtype=float)
    side = np.zeros(m)                      # the end kept last time: -1 lo, +1 hi
    live = (g_hi != 0) & (np.sign(g_hi) != np.sign(g_lo))
    for _ in range(BISECTIONS):
        live &= hi - lo > 4 * np.finfo(float).eps
        if not live.any():
            break
        with np.errstate(all="ignore"):
            x = (lo * g_hi - hi * g_lo) / (g_hi - g_lo)
        bad = ~((x > lo) & (x < hi))
        x = np.where(bad, 0.5 * (lo + hi), x)
        gx = np.asarray(g(t + x * h, interpolate(F, y, x), *args), dtype=float)
        right = (np.sign(gx) != np.sign(g_lo)) & live        # root in [lo, x]
        left = ~right & live                                 # root in [x, hi]
        hit = live & (gx == 0)
        # Illinois: the end kept twice in a row has its value halved
        g_lo = np.where(right & (side == -1), 0.5 * g_lo, g_lo)
        g_hi = np.where(left & (side == 1), 0.5 * g_hi, g_hi)
        hi, g_hi = np.where(right, x, hi), np.where(right, gx, g_hi)
        lo, g_lo = np.where(left, x, lo), np.where(left, gx, g_lo)
        side = np.where(right, -1, np.where(left, 1, side))
        live &= ~hit
    return t + hi * h, interpolate(F, y, hi)
