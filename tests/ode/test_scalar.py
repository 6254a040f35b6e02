"""The scalar path (symdyn.ode.scalar): one member in Python floats, the same
method as the batched integrator; it agrees with it and with mpmath, and
hands failures to the batched path."""

import gc
import sys
from dataclasses import replace

import numpy as np
import pytest

import symdyn as sd
import symdyn.ode.scalar as scalar
import symdyn.reduced.solver as solve_module
from symdyn.ode import control, methods, rk
from symdyn.ode.integrate import integrate

CASES = [(name, att) for name in sd.schemes() for att in ("softmax", "unnormalized")]


def _members(seed):
    rng = np.random.default_rng(seed)
    for _ in range(3):
        n = float(rng.uniform(2, 64))
        yield n, float(rng.uniform(0, 6)), float(rng.uniform(0.0, 0.9)), float(
            rng.uniform(0.5, 3))


def _worst(name, att, seed=0):
    worst = 0.0
    for n, b, g, r0 in _members(seed):
        T = [0.3, 2.0, 15.0]
        one = sd.solve(name, n=n, beta=b, gamma0=g, r0=r0, t=T, attention=att)
        two = sd.solve(name, n=[n, n + 1], beta=b, gamma0=g, r0=r0, t=T, attention=att)
        worst = max(worst, np.abs(one.log_epsilon - two.log_epsilon[0]).max(),
                    np.abs(one.r / two.r[0] - 1).max())
    return worst


@pytest.mark.parametrize("name, att", CASES)
def test_one_member_agrees_with_the_batched_path(name, att):
    # the same steps, the same sums in the same order, numpy's ufuncs on both
    # (symdyn.base.arithmetic): equal bit for bit on every CPU (tests/base/test_arithmetic.py)
    assert _worst(name, att) == 0


def test_agreement_test_sees_a_wrong_weight(monkeypatch):
    # the float path's new states moved by 1e-12 relative (the batched path untouched)
    real = rk.FloatSums.point

    def off(self, r, y, h, fresh):
        out = real(self, r, y, h, fresh)
        return [v * (1 + 1e-12) for v in out] if fresh else out
    monkeypatch.setattr(rk.FloatSums, "point", off)
    assert _worst("post-ln", "softmax") > 1e-13


def test_the_scalar_path_is_taken_and_counts_its_evaluations(monkeypatch):
    calls = []
    real = solve_module.integrate_one
    monkeypatch.setattr(solve_module, "integrate_one",
                        lambda *a, **k: calls.append(1) or real(*a, **k))
    one = sd.solve("pre-ln", n=8, beta=1.0, gamma0=0.0, t=[5.0])
    assert calls == [1]
    batched = sd.solve("pre-ln", n=[8, 8], beta=1.0, gamma0=0.0, t=[5.0])
    assert calls == [1] and one.nfev == batched.nfev + 1      # its own first stage


def test_the_slip_member_holds_against_mpmath():
    kw = dict(n=3.9804911500983042, beta=1.9090909090909092, gamma0=0.0, t=[20.0])
    fast = sd.solve("post-ln", **kw)
    exact = sd.solve("post-ln", dps=30, **kw)
    assert abs(fast.log_epsilon[0] - float(exact.log_epsilon[0])) < 1e-9


def test_a_refused_law_is_reported_by_the_batched_path():
    s = sd.custom_scheme("shrink", speed="r", radial="-1")      # r = 1 - t
    with pytest.raises(ValueError, match=r"radial: .* at t = 1 "):
        sd.solve(s, n=8, beta=1.0, gamma0=0.0, t=[0.5, 3.0])


def test_a_law_math_cannot_evaluate_goes_to_the_batched_path():
    import sympy as sp

    from symdyn.model.scheme import Scheme
    from symdyn.model.symbols import A_norm, t
    s = Scheme("signed", A_norm * (2 + sp.sign(sp.sin(t))), sp.Integer(0), sp.oo)
    one = sd.solve(s, n=8, beta=1.0, gamma0=0.0, t=[3.0])
    two = sd.solve(s, n=[8, 9], beta=1.0, gamma0=0.0, t=[3.0])
    assert abs(one.log_epsilon[0] - two.log_epsilon[0, 0]) < 1e-12


# --------------------------------------------------------------------------
# one controller for both paths
# --------------------------------------------------------------------------

def _duffing(t, y, phase):
    """y'' = -y - 0.3 y' - y^3 + 0.5 t/(1 + t): + - * / only (both paths round alike)."""
    if isinstance(y, list):
        return [y[1], -y[0] - 0.3 * y[1] - y[0] * y[0] * y[0] + 0.5 * t / (1 + t)]
    return np.stack([y[:, 1], -y[:, 0] - 0.3 * y[:, 1] - y[:, 0] * y[:, 0] * y[:, 0]
                     + 0.5 * t / (1 + t)], axis=1)


def _both(one_controller, batch_controller=None):
    """The member (1, 0) alone on the scalar path and in a batch of two."""
    T, rtol, atol = [0.5, 7.0, 30.0], 1e-9, 1e-12
    y0 = np.array([[1.0, 0.0], [0.3, 2.0]])
    phase = np.zeros(1, dtype=int)
    h0 = methods.initial_step(_duffing, y0[:1], _duffing(np.zeros(1), y0[:1], phase), (phase,),
                              rtol, atol, T[-1])
    one = scalar.integrate_one(_duffing, T, [1.0, 0.0], float(h0[0]), rtol=[rtol] * 2,
                               atol=[atol] * 2, controller=one_controller)
    batch = integrate(_duffing, T, y0, rtol=rtol, atol=atol,
                      controller=one_controller if batch_controller is None
                      else batch_controller)
    return one, batch


def test_a_changed_controller_changes_both_paths_alike():
    base_one, base_batch = _both(control.DEFAULT)
    one, batch = _both(replace(control.DEFAULT, safety=0.8))
    assert np.array_equal(base_one.states, base_batch.y[0])
    assert base_one.nsteps == base_batch.nsteps[0]
    assert np.array_equal(one.states, batch.y[0]) and one.nsteps == batch.nsteps[0]
    assert one.nsteps > base_one.nsteps          # a smaller safety: more, shorter steps
    # both within the tolerance of each other (an independent check of the field)
    np.testing.assert_allclose(one.states, base_one.states, rtol=1e-7, atol=1e-9)


def test_control_a_controller_changed_in_one_path_only_shows():
    one, batch = _both(replace(control.DEFAULT, safety=0.8), control.DEFAULT)
    assert one.nsteps != batch.nsteps[0]
    assert not np.array_equal(one.states, batch.y[0])


def _sympy_calls(call):
    """The sympy functions (other than hashing, for cache lookups) that ``call``
    runs, by name."""
    seen = []

    def profile(frame, event, arg):
        if (event == "call" and "/sympy/" in frame.f_code.co_filename
                and frame.f_code.co_name != "__hash__"):
            seen.append(frame.f_code.co_name)
    # the collector closing another test's unfinished sympy generator would
    # show here as a call (a generator's frame runs to close): collect first
    gc.collect()
    gc.disable()
    sys.setprofile(profile)
    try:
        call()
    finally:
        sys.setprofile(None)
        gc.enable()
    return seen


@pytest.mark.parametrize("name", ["post-ln", "pre-ln", "mix-ln", "ngpt", "deepnorm"])
def test_a_repeated_one_member_solve_does_nothing_symbolic(name):
    def solve():
        return sd.solve(name, n=8, beta=1.0, gamma0=0.0, t=[5.0])
    solve()
    # at most an assumption look-up and an int() of a cached number
    assert len(_sympy_calls(solve)) <= 3


def test_control_a_first_solve_of_a_new_scheme_is_seen_walking_its_laws():
    # the counter sees symbolic work: a Mix-LN switch never asked for before
    # builds its laws, compiles them and checks them
    calls = _sympy_calls(lambda: sd.solve(sd.scheme("mix-ln", t_switch=0.6180339887), n=8,
                                          beta=1.0, gamma0=0.0, t=[5.0]))
    assert len(calls) > 100
