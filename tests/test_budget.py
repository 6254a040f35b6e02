"""The time bounds of symbolic work hold even when a library swallows the alarm.

mpmath's ``from_float`` wraps ``math.frexp`` in a bare ``except:``; an alarm
ringing there is lost, and an unbounded trigsimp then grew by 175 MB/s until
a CI machine killed the test run. The bounds now ring again every
``budget.REPEAT`` seconds until their block is left. Each test runs a block
that swallows the first ring (as that ``except:`` does) and keeps working; its
negative control rings once and sees the block run to its end.
"""

from __future__ import annotations

import contextlib
import signal
import sys
import time

import pytest

from symdyn.base import budget
from symdyn.reduced import bounded


def _deaf_once(seconds: float) -> str:
    """Work for ``seconds``, swallowing the first interruption like a bare ``except:``."""
    start = time.monotonic()
    try:
        while time.monotonic() - start < seconds:
            pass
    except BaseException:   # noqa: BLE001 -- the point: a library that swallows
        pass
    while time.monotonic() - start < seconds:
        pass
    return "finished"


@pytest.fixture
def short_budget(monkeypatch):
    monkeypatch.setitem(budget.SECONDS, "derivation", 0.2)


def test_time_limit_stops_a_block_that_swallows_the_first_ring(short_budget):
    start = time.monotonic()
    with pytest.raises(ValueError, match="did not finish within 0.2 s"), \
            budget.time_limit("deaf"):
        _deaf_once(1.5)
    assert time.monotonic() - start < 0.6
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)


def test_control_one_ring_is_lost_to_a_block_that_swallows_it(short_budget, monkeypatch):
    monkeypatch.setattr(budget, "REPEAT", None)
    start = time.monotonic()
    with budget.time_limit("deaf"):
        assert _deaf_once(1.0) == "finished"
    assert time.monotonic() - start >= 1.0


def test_within_and_steps_stop_a_block_that_swallows_the_first_ring():
    start = time.monotonic()
    assert budget.within(_deaf_once, 1.5, otherwise="cut", seconds=0.2) == "cut"
    assert time.monotonic() - start < 0.6
    steps = bounded.Steps()
    start = time.monotonic()
    steps.step = 0.2
    assert steps.run(_deaf_once, 1.5) is None and steps.timed_out
    assert time.monotonic() - start < 0.6


def test_control_within_and_steps_ringing_once_run_to_the_end(monkeypatch):
    monkeypatch.setattr(budget, "REPEAT", None)
    assert budget.within(_deaf_once, 0.6, otherwise="cut", seconds=0.2) == "finished"
    steps = bounded.Steps()
    steps.step = 0.2
    assert steps.run(_deaf_once, 0.6) == "finished" and not steps.timed_out


def _dense_rings(monkeypatch, rounds: int) -> int:
    """Rings every 20 us after a 1 ms budget; how many rounds let a ring escape
    the bound (a BaseException instead of its ValueError)."""
    monkeypatch.setattr(budget, "REPEAT", 2e-5)
    monkeypatch.setitem(budget.SECONDS, "derivation", 1e-3)
    escaped = 0
    for _ in range(rounds):
        try:
            with budget.time_limit("dense"):
                _deaf_once(0.2)
        except ValueError:
            pass
        except BaseException:   # noqa: BLE001 -- what this test counts
            escaped += 1
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
    return escaped


def test_rings_in_the_bounds_own_clean_up_wait_for_the_next(monkeypatch):
    assert _dense_rings(monkeypatch, 200) == 0


def test_control_rings_in_the_clean_up_escape_without_the_guard(monkeypatch):
    monkeypatch.setattr(budget, "in_cleanup", lambda frame, files=None: False)
    assert _dense_rings(monkeypatch, 200) > 0


class _SlowFinalizer:
    def __del__(self):          # where Python cannot raise: "Exception ignored in ..."
        end = time.monotonic() + 0.3
        while time.monotonic() < end:
            pass


def _finalizer_then_work(seconds: float) -> str:
    _SlowFinalizer()            # collected at once; the first ring lands in its __del__
    start = time.monotonic()
    while time.monotonic() - start < seconds:
        pass
    return "finished"


def _unraisable_seen(monkeypatch) -> list:
    seen = []
    monkeypatch.setattr(sys, "unraisablehook", seen.append)
    monkeypatch.setitem(budget.SECONDS, "derivation", 0.2)
    start = time.monotonic()
    with pytest.raises(ValueError, match="did not finish"), budget.time_limit("finalizer"):
        _finalizer_then_work(1.5)
    assert time.monotonic() - start < 0.8          # the next ring stopped the work
    return [u.exc_type for u in seen]


def test_a_ring_lost_in_a_finalizer_is_not_reported(monkeypatch):
    assert _unraisable_seen(monkeypatch) == []


def test_control_without_the_quiet_hook_the_lost_ring_is_reported(monkeypatch):
    monkeypatch.setattr(budget, "quiet_rings", contextlib.nullcontext)
    assert _unraisable_seen(monkeypatch) == [budget._Overrun]
