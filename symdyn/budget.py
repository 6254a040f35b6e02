"""A time budget for symbolic work on user expressions.

sympy has no notion of a deadline: integrating ``2/(1 + t**16)`` or factoring
a high power can run for minutes. :func:`time_limit` bounds such work with a
real-time alarm and turns the overrun into a ``ValueError`` naming what was
being derived and the limit. The alarm is a POSIX signal, so the bound holds
in the main thread (the CLI, notebooks, scripts); in other threads (Dask
workers, thread pools) the work runs unbounded.
"""

from __future__ import annotations

import signal
import threading
from contextlib import contextmanager

#: Seconds a public derivation (reduce, terminal, initial velocity, leading
#: order, derive) may take before it is stopped; ``None``: no bound.
SECONDS = {"derivation": 120.0}

_active = threading.local()


class _Overrun(BaseException):
    """Raised by the alarm; a BaseException so sympy's ``except Exception`` lets it pass."""


def _alarm(signum, frame):
    if getattr(_active, "on", False):
        raise _Overrun


@contextmanager
def time_limit(what: str):
    """Stop the enclosed symbolic work after ``SECONDS["derivation"]`` seconds.

    Nested uses share the outermost budget. Raises ``ValueError`` naming
    ``what`` on overrun.
    """
    seconds = SECONDS["derivation"]
    usable = (seconds is not None and hasattr(signal, "setitimer")
              and threading.current_thread() is threading.main_thread()
              and not getattr(_active, "on", False))
    if not usable:
        yield
        return
    previous = signal.signal(signal.SIGALRM, _alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    _active.on = True
    try:
        yield
    except _Overrun:
        raise ValueError(f"{what}: the derivation did not finish within {seconds:g} s "
                         f"(symdyn.budget.SECONDS['derivation']); simplify the law or "
                         f"raise the limit") from None
    finally:
        _active.on = False
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
