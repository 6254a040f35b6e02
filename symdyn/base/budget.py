"""A time budget for symbolic work on user expressions.

sympy has no notion of a deadline: integrating ``2/(1 + t**16)`` or factoring
a high power can run for minutes. :func:`time_limit` bounds such work with a
real-time alarm and turns the overrun into a ``ValueError`` naming what was
being derived and the limit. The alarm is a POSIX signal, so the bound holds
in the main thread (the CLI, notebooks, scripts); in other threads (Dask
workers, thread pools) the work runs unbounded.

Once the deadline has passed the alarm rings again every :data:`REPEAT`
seconds until the bounded block is left: a library that swallows the first
interruption (mpmath's ``from_float`` has a bare ``except:`` around
``math.frexp``) would otherwise run on without a bound (a trigsimp that grows
by 175 MB/s filled a 24 GB machine that way). The ring is skipped while the
interrupted frame is the bound's own clean-up (:func:`in_cleanup`).

Layer 0, base.
"""

from __future__ import annotations

import contextlib
import functools
import signal
import sys
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Collection, Hashable, Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Protocol, TypeVar, cast

from .trampoline import call

T = TypeVar("T")
U = TypeVar("U")
T_co = TypeVar("T_co", covariant=True)

#: Seconds a public derivation (reduce, terminal, initial velocity, leading
#: order, derive) may take before it is stopped; ``None``: no bound.
#: ``"tidy"``: seconds a cosmetic simplification may take (``Reduction.at``)
#: before the unsimplified, equal expression is returned instead.
SECONDS: dict[str, float | None] = {"derivation": 120.0, "tidy": 1.0}

#: Seconds between the rings of an alarm whose deadline has passed (None: ring once).
REPEAT: float | None = 0.05

#: The files whose frames are a bound's clean-up, where a ring waits for the next.
CLEANUP_FILES = {__file__, contextlib.__file__}

_active = threading.local()
_cuts = [0]      # how many times a budget has cut work short, in this process


def cuts() -> int:
    """How many times a time bound cut work short so far (:func:`note_cut`)."""
    return _cuts[0]


def note_cut() -> None:
    """Record that a time bound cut work short: :func:`time_limit`,
    :func:`within` and any other bound of symbolic work (the bounded steps of
    :mod:`symdyn.reduced.asymptotics`) call it, so :func:`complete_cache`
    does not keep what they returned."""
    _cuts[0] += 1


class Ring(BaseException):
    """What an alarm raises into the bounded work (a BaseException, so that
    sympy's ``except Exception`` lets it pass)."""


@contextmanager
def quiet_rings() -> Iterator[None]:
    """Within the block, a ring raised where Python cannot raise it (a
    finalizer, a weakref callback: "Exception ignored in ...") is dropped
    instead of reported: the next ring stops the work. Other unraisable
    exceptions go to the hook that was in place."""
    previous = sys.unraisablehook

    def hook(unraisable: sys.UnraisableHookArgs) -> None:
        if not isinstance(unraisable.exc_value, Ring):
            previous(unraisable)
    sys.unraisablehook = hook
    try:
        yield
    finally:
        sys.unraisablehook = previous


class Overrun(Ring):
    """Raised by the alarm; a BaseException so sympy's ``except Exception`` lets it pass."""


def in_cleanup(frame: FrameType | None, files: Collection[str] = CLEANUP_FILES) -> bool:
    """Whether the interrupted ``frame`` runs in one of ``files`` (the bound's own
    ``except``/``finally`` and ``contextlib``'s ``__exit__``): an alarm ringing
    there again would escape the handler that is turning the first ring into
    a ``ValueError``."""
    return frame is not None and frame.f_code.co_filename in files


def arm(seconds: float) -> None:
    """Ring after ``seconds``, then every :data:`REPEAT` seconds until disarmed."""
    signal.setitimer(signal.ITIMER_REAL, max(seconds, 1e-3), REPEAT or 0.0)


def _alarm(signum: int, frame: FrameType | None) -> None:
    if getattr(_active, "on", False) and not in_cleanup(frame):
        raise Overrun


@contextmanager
def time_limit(what: str) -> Iterator[None]:
    """Stop the enclosed symbolic work after ``SECONDS["derivation"]`` seconds.

    Nested uses share the outermost budget. Raises ``ValueError`` naming
    ``what`` on overrun.
    """
    seconds = SECONDS["derivation"]
    usable = (hasattr(signal, "setitimer")
              and threading.current_thread() is threading.main_thread()
              and not getattr(_active, "on", False))
    if seconds is None or not usable:
        yield
        return
    previous = signal.signal(signal.SIGALRM, _alarm)
    arm(seconds)
    _active.on = True
    try:
        with quiet_rings():
            yield
    except Overrun:
        _active.on = False
        note_cut()
        raise ValueError(f"{what}: the derivation did not finish within {seconds:g} s "
                         f"(symdyn.base.budget.SECONDS['derivation']); simplify the law or "
                         f"raise the limit") from None
    finally:
        _active.on = False
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def within(f: Callable[..., T], *args: object, otherwise: U,
           seconds: float | None = None) -> T | U:
    """``f(*args)``, or ``otherwise`` when it takes longer than ``seconds``
    (default ``SECONDS["tidy"]``): for work that only tidies a result.

    Inside :func:`time_limit`, the outer deadline still holds (its overrun
    propagates). Outside the main thread the work runs unbounded, as there.
    """
    seconds = SECONDS["tidy"] if seconds is None else seconds
    if seconds is None or not hasattr(signal, "setitimer") \
            or threading.current_thread() is not threading.main_thread():
        return f(*args)
    outer = getattr(_active, "on", False)
    left = signal.getitimer(signal.ITIMER_REAL)[0] if outer else 0.0
    ours = not outer or left == 0.0 or seconds < left
    previous = None if outer else signal.signal(signal.SIGALRM, _alarm)
    start = time.monotonic()
    arm(seconds if ours else left)
    _active.on, overran = True, False
    try:
        with quiet_rings():
            return call(f, *args)
    except Overrun:
        overran = True
        note_cut()
        if not ours:
            raise
        return otherwise
    finally:
        if not outer:
            _active.on = False      # first: a ring still pending now is ignored
        signal.setitimer(signal.ITIMER_REAL, 0)
        if outer and left and not (overran and not ours):
            arm(left - (time.monotonic() - start))
        if not outer:
            signal.signal(signal.SIGALRM, previous)


class CompleteCache(Protocol[T_co]):
    """A function cached by :func:`complete_cache` (positional, hashable
    arguments) and its ``cache_clear``."""

    cache_clear: Callable[[], None]

    def __call__(self, *args: Hashable) -> T_co: ...


def complete_cache(maxsize: int = 128) -> Callable[[Callable[..., T]], CompleteCache[T]]:
    """``functools.lru_cache`` that keeps only complete answers: a call during
    which a budget cut work short (a derivation stopped, a simplification
    skipped, even if caught inside) is returned but not stored, so the next
    call with a larger budget derives it again. Exceptions are never stored.
    """
    def decorate(f: Callable[..., T]) -> CompleteCache[T]:
        store: OrderedDict[tuple[Hashable, ...], T] = OrderedDict()
        lock = threading.Lock()

        @functools.wraps(f)
        def cached(*args: Hashable) -> T:
            with lock:
                if args in store:
                    store.move_to_end(args)
                    return store[args]
            before = cuts()
            value = f(*args)
            if cuts() == before:
                with lock:
                    store[args] = value
                    while len(store) > maxsize:
                        store.popitem(last=False)
            return value

        wrapped = cast(CompleteCache[T], cached)   # a function with an attribute set now
        wrapped.cache_clear = store.clear
        return wrapped
    return decorate
