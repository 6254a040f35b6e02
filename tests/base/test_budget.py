"""The time bounds of symbolic work hold even when a library swallows the alarm.

mpmath's ``from_float`` wraps ``math.frexp`` in a bare ``except:``; an alarm
ringing there is lost, and an unbounded trigsimp then grew by 175 MB/s until
a CI machine killed the test run. The bounds now ring again every
``budget.REPEAT`` seconds until their block is left. Each test runs a block
that swallows the first ring (as that ``except:`` does) and keeps working; its
negative control rings once and sees the block run to its end. What is
asserted is how far the work got, never how long it took.
"""

from __future__ import annotations

import contextlib
import signal
import sys

import pytest

from symdyn.base import budget
from symdyn.reduced import bounded

#: Iterations of work after the swallowed ring: 0.3-0.7 s of pure Python, many
#: times ``budget.REPEAT`` (0.05 s), so that a repeated ring lands in them.
AFTER = 3 * 10**7
#: A hang guard: iterations to wait for the first ring (it comes after 0.2 s).
WAIT = 10**9


def _spin(iterations: int) -> None:
    for _ in range(iterations):
        pass


def _deaf_once(log: list) -> str:
    """Wait for the first ring and swallow it like a bare ``except:``, then work
    :data:`AFTER` iterations; ``log`` gets "rung", then "finished" at the end."""
    try:
        _spin(WAIT)
        return "never rung"
    except BaseException:   # noqa: BLE001 -- the point: a library that swallows
        log.append("rung")
    _spin(AFTER)
    log.append("finished")
    return "finished"


@pytest.fixture
def short_budget(monkeypatch):
    monkeypatch.setitem(budget.SECONDS, "derivation", 0.2)


def test_time_limit_stops_a_block_that_swallows_the_first_ring(short_budget):
    log = []
    with pytest.raises(ValueError, match="did not finish within 0.2 s"), \
            budget.time_limit("deaf"):
        _deaf_once(log)
    assert log == ["rung"]                        # the next ring cut the work short
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)


def test_control_one_ring_is_lost_to_a_block_that_swallows_it(short_budget, monkeypatch):
    monkeypatch.setattr(budget, "REPEAT", None)
    log = []
    with budget.time_limit("deaf"):
        assert _deaf_once(log) == "finished"
    assert log == ["rung", "finished"]


def test_within_and_steps_stop_a_block_that_swallows_the_first_ring():
    log = []
    assert budget.within(_deaf_once, log, otherwise="cut", seconds=0.2) == "cut"
    assert log == ["rung"]
    steps = bounded.Steps()
    steps.step = 0.2
    log = []
    assert steps.run(_deaf_once, log) is None and steps.timed_out
    assert log == ["rung"]


def test_control_within_and_steps_ringing_once_run_to_the_end(monkeypatch):
    monkeypatch.setattr(budget, "REPEAT", None)
    log = []
    assert budget.within(_deaf_once, log, otherwise="cut", seconds=0.2) == "finished"
    steps = bounded.Steps()
    steps.step = 0.2
    assert steps.run(_deaf_once, log) == "finished" and not steps.timed_out
    assert log == ["rung", "finished"] * 2


def _dense_rings(monkeypatch, rounds: int) -> int:
    """Rings every 20 us after a 1 ms budget; how many rounds let a ring escape
    the bound (a BaseException instead of its ValueError)."""
    monkeypatch.setattr(budget, "REPEAT", 2e-5)
    monkeypatch.setitem(budget.SECONDS, "derivation", 1e-3)
    escaped = 0
    for _ in range(rounds):
        try:
            with budget.time_limit("dense"):
                _deaf_once([])
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
    def __init__(self, log):
        self.log = log

    def __del__(self):          # where Python cannot raise: "Exception ignored in ..."
        _spin(WAIT)             # until the first ring lands here
        self.log.append("never rung")


def _finalizer_then_work(log: list) -> str:
    _SlowFinalizer(log)         # collected at once; the first ring lands in its __del__
    _spin(AFTER)
    log.append("finished")
    return "finished"


def _unraisable_seen(monkeypatch) -> list:
    seen, log = [], []
    monkeypatch.setattr(sys, "unraisablehook", seen.append)
    monkeypatch.setitem(budget.SECONDS, "derivation", 0.2)
    with pytest.raises(ValueError, match="did not finish"), budget.time_limit("finalizer"):
        _finalizer_then_work(log)
    assert log == []            # the first ring ended __del__, the next stopped the work
    return [u.exc_type for u in seen]


def test_a_ring_lost_in_a_finalizer_is_not_reported(monkeypatch):
    assert _unraisable_seen(monkeypatch) == []


def test_control_without_the_quiet_hook_the_lost_ring_is_reported(monkeypatch):
    monkeypatch.setattr(budget, "quiet_rings", contextlib.nullcontext)
    assert _unraisable_seen(monkeypatch) == [budget.Overrun]
