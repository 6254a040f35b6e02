"""Bounded symbolic work: sympy steps that give up instead of running on.

A step of a derivation (an integral, a limit, a series) may take minutes on
an innocent-looking law. :class:`Steps` runs each step within a fraction
(:data:`STEP_FRACTION`) of the derivation budget and ends all of them before
the enclosing :func:`~symdyn.base.budget.time_limit` does, so that running
out of time answers :data:`UNDECIDED` rather than an error; :func:`tidy`
simplifies within ``SECONDS["tidy"]`` or leaves the (equal) expression.

Layer 2, reduced.
"""

from __future__ import annotations

import signal
import threading
import time
from contextlib import contextmanager

import sympy as sp

from ..base.budget import (
    CLEANUP_FILES,
    SECONDS,
    Ring,
    arm,
    in_cleanup,
    note_cut,
    quiet_rings,
    within,
)
from ..base.trampoline import call

#: The answer when the asymptotic comparison cannot be decided (see ``Terminal.reason``).
UNDECIDED = "undecided"

#: Each sympy step of the comparison (the integral, one limit, the expansion)
#: may take at most this fraction of ``symdyn.base.budget.SECONDS["derivation"]``;
#: all of them end before that budget does (then the law is ``undecided``).
STEP_FRACTION = 0.25


class _GiveUp(Ring):
    """A step ran out of time (a BaseException, so sympy's ``except Exception``
    lets it pass)."""


_stepping = threading.local()     # .on: a step's alarm is armed and may interrupt


def _give_up(signum, frame):
    if getattr(_stepping, "on", False) and not in_cleanup(frame, _CLEANUP):
        raise _GiveUp


_CLEANUP = CLEANUP_FILES | {__file__}


class Steps:
    """Runs the sympy steps of one comparison, each bounded in time.

    Every step gets at most ``STEP_FRACTION`` of the derivation budget, and
    all of them end a margin before the budget of the enclosing
    :func:`~symdyn.base.budget.time_limit` does, so that running out of time gives
    ``undecided`` rather than an error. Without a usable alarm (budget None,
    not the main thread) steps run unbounded, like ``time_limit``.
    """

    def __init__(self):
        total = SECONDS["derivation"]
        self.usable = (total is not None and hasattr(signal, "setitimer")
                       and threading.current_thread() is threading.main_thread())
        self.step = STEP_FRACTION * total if self.usable else None
        self.deadline = None
        self.timed_out = False
        self.failure = ""
        if self.usable:
            left = signal.getitimer(signal.ITIMER_REAL)[0] or total
            self.deadline = time.monotonic() + left - min(2.0, 0.1 * left)

    def run(self, fn, *args):
        """``fn(*args)``, or None when it fails or runs out of time."""
        seconds = None
        if self.usable:
            seconds = min(self.step, self.deadline - time.monotonic())
            if seconds <= 0:
                self.timed_out = True
                return None
        try:
            with self._alarm(seconds):
                return call(fn, *args)
        except _GiveUp:
            self.timed_out = True
            note_cut()
        except Exception as exc:   # noqa: BLE001 -- sympy's failures: not decided
            self.failure = " ".join(str(exc).split())[:160] or type(exc).__name__
        return None

    @contextmanager
    def _alarm(self, seconds):
        if seconds is None:
            yield
            return
        outer = signal.getitimer(signal.ITIMER_REAL)[0]
        start = time.monotonic()
        previous = signal.signal(signal.SIGALRM, _give_up)
        _stepping.on = True
        arm(seconds)                # rings again until disarmed (budget.REPEAT)
        try:
            with quiet_rings():
                yield
        finally:
            _stepping.on = False    # first: a ring still pending now is ignored
            try:
                signal.setitimer(signal.ITIMER_REAL, 0)
            finally:
                signal.signal(signal.SIGALRM, previous)
                if outer > 0:       # re-arm the enclosing budget's alarm
                    arm(outer - (time.monotonic() - start))


@contextmanager
def sympy_failures(message):
    """sympy's "no method for this" (NotImplementedError, and TypeError or
    AttributeError from comparisons it cannot decide) as a ValueError."""
    try:
        yield
    except (NotImplementedError, TypeError, AttributeError, RecursionError) as exc:
        detail = " ".join(str(exc).split()) or type(exc).__name__
        raise ValueError(f"{message} (sympy: {detail[:200]})") from None



def tidy(expr):
    """``simplify(expr)``, or ``expr`` itself (equal, only untidy) when
    simplify takes longer than ``SECONDS["tidy"]``: trigsimp expands
    ``sin(10**8*t)`` into multiple angles for minutes."""
    return within(sp.simplify, expr, otherwise=expr)

