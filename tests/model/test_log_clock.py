"""The radial schemes in the log clock tau = log(1 + t) (symdyn.model.log_clock):
derived laws, agreement with the t clock, and runs far beyond float times."""

import numpy as np
import pytest
import sympy as sp

import symdyn as sd
from symdyn.model import log_clock
from symdyn.model.log_clock import TAU, U
from symdyn.model.symbols import A_norm, a


def test_laws_are_the_chain_rule_with_exponentials_combined():
    (pre,) = log_clock.laws(sd.scheme("pre-ln"))
    assert pre == (sp.exp(U), a * sp.exp(-U) - 1)
    (peri,) = log_clock.laws(sd.scheme("peri-ln"))
    assert sp.simplify(peri[0] - A_norm * sp.exp(U)) == 0
    early, late = log_clock.laws(sd.scheme("mix-ln"))
    assert early == (sp.exp(-TAU), -1) and late == pre
    assert np.allclose(log_clock.breakpoints(sd.scheme("mix-ln")), [np.log(2.0)])
    # after the switch every law is a function of u = log r - tau (and a, |A|):
    # no exp(tau) to overflow, no log r ~ tau to lose digits in
    for s_tau, du in (pre, peri, late):
        assert TAU not in (s_tau.free_symbols | du.free_symbols)


def _pair(name, shift=0.0):
    X0 = sd.init.gaussian(8, 3, scale=1.0, batch=2, seed=5)
    T = np.array([0.5, 3.0, 20.0, 200.0])
    kw = dict(beta=2.0, rtol=1e-12, atol=1e-14)
    return (sd.simulate(name, X0, t=T, **kw),
            sd.simulate(name, X0, t=np.log1p(T) + shift, clock="log", **kw))


@pytest.mark.parametrize("name", ["pre-ln", "mix-ln", "peri-ln"])
def test_log_clock_agrees_with_the_t_clock(name):
    in_t, in_tau = _pair(name)
    assert in_tau.clock == "log"
    assert np.abs(in_t.gamma - in_tau.gamma).max() < 1e-11
    assert np.abs(np.log(in_t.r) - in_tau.r).max() < 1e-11
    # the speed in tau is (1 + t) times the speed in t
    T = in_t.t
    assert np.allclose(in_tau.speed, in_t.speed * (1 + T), rtol=1e-9, atol=0)


def test_agreement_test_sees_a_wrong_clock():
    in_t, in_tau = _pair("pre-ln", shift=1e-6)
    assert np.abs(in_t.gamma - in_tau.gamma).max() > 1e-11


def test_runs_reach_tau_1e4_far_beyond_float_times():
    X0 = sd.init.gaussian(8, 2, scale=1.0, batch=2, seed=8002)
    sim = sd.simulate("pre-ln", X0, beta=4.0, t=[10.0, 1e3, 1e4], clock="log")
    assert np.isfinite(sim.gamma).all() and np.isfinite(sim.r).all()
    assert sim.r[..., -1].min() > 9000        # log r ~ tau: r ~ t = e^10000
    assert sim.clusters[:, -1].tolist() == [1, 1]


@pytest.mark.parametrize("kw, match", [
    (dict(scheme="post-ln"), "on the sphere"),
    (dict(scheme="none"), "raw tokens"),
    (dict(step=0.5), "continuous"),
    (dict(clock="tau"), "clock must be"),
])
def test_log_clock_is_refused_where_it_does_not_apply(kw, match):
    args = dict(scheme="pre-ln", X0=sd.init.gaussian(4, 3, seed=0), beta=1.0, t=[1.0],
                clock="log") | kw
    with pytest.raises(ValueError, match=match):
        sd.simulate(**args)
