"""Caches never keep an answer a time budget cut short (issue 25, item 5):
``sd.derive``, ``sd.terminal`` and the CLI agree within one process."""

from __future__ import annotations

import time
from functools import lru_cache

import symdyn as sd
from symdyn.base import budget
from symdyn.reduced import bounded, summary


def _cut_then_full(monkeypatch, derive, speed):
    s = sd.custom_scheme("cache-probe", speed=speed)   # a scheme no other test derives
    sd.reduce(s)                                          # the reduction itself is complete
    monkeypatch.setitem(budget.SECONDS, "derivation", 1e-3)
    cut = derive(s)
    monkeypatch.setitem(budget.SECONDS, "derivation", 120.0)
    return s, cut, derive(s)


def test_a_derivation_cut_short_is_derived_again_with_a_larger_budget(monkeypatch):
    s, cut, full = _cut_then_full(monkeypatch, sd.derive, "1 + t/3")
    assert cut.terminal.law == "undecided" and "did not finish" in cut.terminal.reason
    assert full.terminal.law == sd.terminal(s).law == "polynomial"
    assert sd.derive(s) is full                           # a complete answer is kept


def test_control_a_plain_lru_cache_keeps_the_cut_answer(monkeypatch):
    # Negative control: the cache of symdyn 0.1 (functools.lru_cache) returns
    # the undecided answer again where sd.terminal decides.
    stale = lru_cache(maxsize=8)(summary.derive_scheme.__wrapped__)
    monkeypatch.setattr(summary, "derive_scheme", stale)
    s, cut, again = _cut_then_full(monkeypatch, sd.derive, "1 + t/5")
    assert again.terminal.law == "undecided" != sd.terminal(s).law


def test_the_counter_of_cuts_counts_a_caught_overrun():
    before = budget.cuts()
    assert budget.within(lambda: sum(i * i for i in range(10**9)), otherwise="cut",
                         seconds=0.05) == "cut"
    assert budget.cuts() == before + 1


def _a_step_that_outlasts_its_alarm(fn, *args):
    # Spins (in Python, where the step's alarm can interrupt it) for up to a
    # minute of CPU; a step of this law takes about 1 ms on a warm sympy
    # cache, too close to the 1 ms alarm to time out on every CPU.
    end = time.process_time() + 60.0
    while time.process_time() < end:
        pass
    return fn(*args)          # reached only when the alarm did not ring


def test_an_answer_whose_bounded_steps_timed_out_is_not_kept(monkeypatch):
    # terminal's own bounded steps (bounded.Steps, a fraction of the
    # budget each) time out without any overrun of the derivation budget:
    # that "undecided" is not kept either.
    s = sd.custom_scheme("cache-probe", speed="1 + t/7")
    sd.reduce(s)
    before = budget.cuts()
    with monkeypatch.context() as m:
        m.setattr(bounded, "STEP_FRACTION", 1e-9)          # every step: 1 ms
        m.setattr(bounded, "call", _a_step_that_outlasts_its_alarm)
        cut = sd.derive(s)
    assert cut.terminal.law == "undecided" and budget.cuts() > before
    assert sd.derive(s).terminal.law == sd.terminal(s).law == "polynomial"
