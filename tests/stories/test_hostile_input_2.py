"""Hostile input, round three (issue 34, item 5): inputs that were answered
wrongly, each now a ValueError naming the argument and what it may be, with
a control that the same call without the fault answers.

* Booleans are not coordinates: ``X0`` holding ``True`` (a list, a list of
  boolean arrays) is refused like ``t``, ``beta`` and object arrays are.
* A leading order of an expression that is not real (``sqrt(1 - n)``) is no
  order: refused, never a coefficient ``I``.
* Masks ignore case as scheme names do.
"""

from __future__ import annotations

import numpy as np
import pytest

import symdyn as sd

X_REAL = [[1.0, 0.5], [0.3, 0.9]]


@pytest.mark.parametrize("X0", [
    [[True, 0.5], [0.3, 0.9]],
    [[1.0, 0.5], [0.3, False]],
    [[[1.0, 0.5], [0.3, 0.9]], [[1.0, 0.5], [True, 0.9]]],
    [np.array([True, False]), np.array([0.3, 0.9])],
    np.array([[True, False], [False, True]]),
    np.array([[True, 0.5], [0.3, 0.9]], dtype=object),
], ids=["list", "last", "batch", "bool-rows", "bool-array", "object"])
def test_booleans_in_X0_are_refused(X0):
    with pytest.raises(ValueError, match=r"^X0: expected real.*booleans"):
        sd.simulate("post-ln", X0, beta=1.0, t=[1.0])


def test_control_the_same_tokens_as_numbers_run():
    # True read as 1.0 was the bug: the numbers it stood for give a result
    # (oracle: the cosine of the two unit tokens stays in [-1, 1] and grows)
    got = sd.simulate("post-ln", X_REAL, beta=1.0, t=[0.0, 1.0]).gamma
    x, y = (np.array(v) / np.linalg.norm(v) for v in X_REAL)
    assert got[0] == pytest.approx(x @ y, abs=1e-12)
    assert x @ y < got[1] <= 1


@pytest.mark.parametrize("text", ["sqrt(1 - n)", "(1 - n)**(1/3)", "n + sqrt(1 - n)",
                                  "sqrt(beta - n)"])
def test_leading_order_of_a_non_real_expression_is_refused(text):
    with pytest.raises(ValueError, match=r"^expr: .* is not real as n -> oo"):
        sd.leading_order(text)


@pytest.mark.parametrize("text, coefficient, exponent", [
    ("sqrt(n - 1)", 1, 0.5), ("-sqrt(n)", -1, 0.5), ("n - sqrt(n + 1)", 1, 1),
    ("sqrt(n - beta)", 1, 0.5)])
def test_control_real_expressions_keep_their_order(text, coefficient, exponent):
    lo = sd.leading_order(text)
    assert (lo.coefficient, float(lo.exponent)) == (coefficient, exponent)


@pytest.mark.parametrize("mask", ["Causal", "CAUSAL", "Full"])
def test_masks_ignore_case(mask):
    X0 = sd.init.sphere(4, 3, seed=0)
    got = sd.simulate("post-ln", X0, beta=1.0, t=[1.0], mask=mask).gamma
    ref = sd.simulate("post-ln", X0, beta=1.0, t=[1.0], mask=mask.lower()).gamma
    np.testing.assert_array_equal(got, ref)


def test_control_an_unknown_mask_is_refused_naming_the_masks():
    with pytest.raises(ValueError, match=r"^mask must be one of 'full', 'causal'"):
        sd.simulate("post-ln", X_REAL, beta=1.0, t=[1.0], mask="causl")


# --- a silent Dask scheduler is named within the probe's one deadline -------------------


class _Clock:
    """A clock that moves only when a socket waits out its timeout."""

    def __init__(self):
        self.now = 0.0

    def monotonic(self):
        return self.now


class _SilentSocket:
    """Accepts the connection, never sends: every read waits its whole timeout."""

    def __init__(self, clock, *args):
        self.clock, self.timeout, self.waits = clock, None, []

    def settimeout(self, seconds):
        self.timeout = seconds

    def connect(self, where):
        pass

    def sendall(self, data):
        pass

    def recv(self, n):
        self.clock.now += self.timeout
        self.waits.append(self.timeout)
        raise TimeoutError

    def close(self):
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def _probe_silent(monkeypatch, seconds=None):
    import socket
    import types

    from symdyn.studies import executors

    clock, made = _Clock(), []
    monkeypatch.setattr(executors, "time", types.SimpleNamespace(monotonic=clock.monotonic))
    monkeypatch.setattr(socket, "socket",
                        lambda *a: made.append(_SilentSocket(clock, *a)) or made[-1])
    with pytest.raises(ValueError, match=r"^scheduler: tcp://127.0.0.1:8786 accepted the "
                                         r"connection but sent nothing"):
        executors.probe_scheduler("tcp://127.0.0.1:8786", seconds)
    return clock.now, [w for s in made for w in s.waits]


def test_a_silent_scheduler_is_named_within_the_probe_s_budget(monkeypatch):
    from symdyn.studies import executors

    spent, waits = _probe_silent(monkeypatch)
    # the waits the probe configures (handshake, then the HTTP question) add up to
    # at most its one deadline, PROBE_SECONDS < 5 s (they were 4 s + 1 s, plus work)
    assert len(waits) == 2 and spent <= executors.PROBE_SECONDS < 5
    assert waits[1] == pytest.approx(executors.HTTP_SECONDS)


def test_control_the_fake_clock_counts_every_configured_wait(monkeypatch):
    spent, waits = _probe_silent(monkeypatch, seconds=12.0)
    assert spent == pytest.approx(12.0) and spent > 5        # a larger budget is spent


# --- what benchmarks/fuzz.py found in the entry points it now covers ---------------------


@pytest.mark.parametrize("call, match", [
    (lambda: sd.mean_field(1.0, [1.0], [1, 0.3], modes=10**9), r"^modes: 1,000,000,000 .*GiB"),
    (lambda: sd.mean_field(1.0, [1.0], [True, 0.3], modes=8), r"^mu0: .*booleans"),
    (lambda: sd.mean_field(1.0, [1.0], [1, 0.3], kappa=10**400, modes=8), r"^kappa must be"),
    (lambda: sd.mean_field_zonal(1.0, [1.0], [1, 0.1], d=3, modes=10**6), r"^modes: .*GiB"),
    (lambda: sd.mean_field_zonal(1.0, [1.0], [True, 0.1], d=3, modes=8), r"^mu0: "),
    (lambda: sd.mean_field_zonal(1.0, [1.0], [1, 0.1j], d=3, modes=8), r"^mu0: "),
    (lambda: sd.critical_kappa(1.0, 2, symbolic="yes"), r"^symbolic must be True or False"),
    (lambda: sd.mean_field(1e9, [1.0], [1, 0.3], modes=8), r"^beta must be in \[0, 1e\+08\]"),
    (lambda: sd.mean_field(700.0, [0.0, 1.0], [1, 0.3], attention="unnormalized", modes=16),
     r"^beta: the flow is not resolved at t = 0 .*e\^beta = 1.01e\+304"),   # was 'not finite'
    (lambda: sd.mean_field(700.0, [1e250], [1, 0.3], kappa=4.0, modes=16),
     r"^t: mean_field runs to t <= 1e\+150"),
    (lambda: sd.mean_field_zonal(1.0, [1e200], [1, 0.1], d=3, modes=8),
     r"^t: mean_field_zonal runs to t <= 1e\+150"),
    (lambda: sd.mean_field(1.0, [1.0], [1, 0.3], modes=8, tol=1e-300),     # was a hang
     r"^tol must be .* at least 2.22e-14"),
    (lambda: sd.mean_field_zonal(1.0, [1.0], [1, 0.1], d=3, modes=8, tol=1e-20),
     r"^tol must be .* at least 2.22e-14"),
    (lambda: sd.mean_field(1.0, [1.0], lambda x: 1 / 0, modes=8),
     r"^mu0: the density function failed .*ZeroDivisionError"),
    (lambda: sd.mean_field(1.0, [1.0], np.ones((2, 2)), modes=8),
     r"^mu0: .*got array\(\[\[1., 1.\], \[1., 1.\]\]\)$"),        # one line
])
def test_mean_field_inputs_the_fuzz_found(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_control_the_same_mean_field_calls_with_good_values_answer():
    a = sd.mean_field(1.0, [1.0], [1, 0.3], modes=8, kappa=4.0).order
    b = sd.mean_field(1.0, [1.0], [1.0, 0.3], modes=8, kappa=4.0).order
    assert a == b and 0 < a[0] < 1
    z = sd.mean_field_zonal(1.0, [1.0], [1, 0.1], d=3, modes=8)
    assert z.moments[0, 0] == 1
    last = sd.mean_field(700.0, [0.0, 1e150], [1, 0.15], kappa=4.0, modes=16).order
    assert last[1] < 1e-300                     # control: at t = 1e150 the noise has won
    ok = sd.mean_field(5.0, [0.0, 0.1], [1, 0.01], attention="unnormalized", modes=32)
    rate = sd.mean_field_rates(1, 5.0, None, "unnormalized")     # early growth: e^(lambda_1 t)
    assert ok.order[1] / ok.order[0] == pytest.approx(np.exp(0.1 * rate), rel=1e-2)
    # at the smallest tol the steps end (counted, not timed): 50 steps to t = 1 at 256 modes
    from symdyn.base.checks import RTOL_FLOOR
    floor = sd.mean_field(1.0, [0.0, 1.0], lambda x: 1 + 0.3 * np.cos(x), kappa=3.0,
                          modes=32, tol=RTOL_FLOOR)
    loose = sd.mean_field(1.0, [0.0, 1.0], lambda x: 1 + 0.3 * np.cos(x), kappa=3.0,
                          modes=32, tol=1e-8)
    assert floor.steps < 200 and abs(floor.order[1] - loose.order[1]) < 1e-7
    # at the largest beta the solver still runs: softmax at beta -> oo moves the law by
    # U'/(beta U) -> 0, so only the noise acts: c_1(t) = c_1(0) exp(-t/kappa) (closed form)
    big = sd.mean_field(1e8, [0.0, 1.0], [1, 0.15], kappa=4.0, modes=16, tol=1e-8).order
    assert big[1] == pytest.approx(0.15 * np.exp(-1 / 4), rel=1e-3)


def test_critical_kappa_refuses_before_deriving(monkeypatch):
    from symdyn.meanfield import stability

    # the derived law, compiled (cached: spied on where it is asked for, so
    # the spy sees it whatever an earlier test derived)
    calls = []
    monkeypatch.setattr(stability, "_numeric", lambda a, w: calls.append((a, w)) or 1 / 0)
    for d in (0, 1, 2.5, True):
        with pytest.raises(ValueError, match="^d must be an integer >= 2"):
            sd.critical_kappa(1.0, d)
    assert calls == []                     # no derivation was asked for
    with pytest.raises(ZeroDivisionError):         # control: a good d derives
        sd.critical_kappa(1.0, 2)
    assert calls == [("softmax", "critical")]


def test_cli_points_of_400_digits_is_one_short_line(capsys):
    from symdyn.cli import main

    assert main(["simulate", "post-ln", "--points", "1" * 400]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and len(err) < 200 and "--points" in err
