"""The temperature law in the particle simulator: the attention at beta tau(t).

Oracles: the particle ODE written here in plain numpy (attention at
``beta tau(t)``), integrated by scipy's ``solve_ivp``; for the layer path the
explicit Euler layers of the generic rule written here. Negative controls:
the same oracles with ``tau`` ignored are far off.
"""

import numpy as np
import pytest
from scipy.integrate import solve_ivp

import symdyn as sd

N, D, BETA, T = 5, 5, 3.0, 6.0
TIMES = np.linspace(0.0, T, 7)


def cooling():
    return sd.custom_scheme("cooling", speed="1", temperature="1/(1 + t)")


def direct_field(beta_of_t):
    """d theta/dt = P_theta A at beta(t): softmax attention over the directions."""
    def f(t, y):
        X = y.reshape(N, D)
        S = beta_of_t(t) * X @ X.T
        W = np.exp(S - S.max(axis=1, keepdims=True))
        A = (W @ X) / W.sum(axis=1, keepdims=True)
        return (A - np.sum(A * X, axis=1, keepdims=True) * X).ravel()
    return f


def direct(X0, beta_of_t):
    X0 = X0 / np.linalg.norm(X0, axis=-1, keepdims=True)
    sol = solve_ivp(direct_field(beta_of_t), (0.0, T), X0.ravel(), method="DOP853",
                    t_eval=TIMES, rtol=1e-12, atol=1e-13)
    X = sol.y.T.reshape(len(TIMES), N, D)
    return X / np.linalg.norm(X, axis=-1, keepdims=True)


@pytest.mark.parametrize("start", ["equiangular", "sphere"])
def test_continuous_field_runs_the_attention_at_beta_tau(start):
    X0 = (sd.init.equiangular(N, D, 0.1, seed=4) if start == "equiangular"
          else sd.init.sphere(N, D, seed=4))
    sim = sd.simulate(cooling(), X0, beta=BETA, t=TIMES, save_x=True, rtol=1e-12,
                      atol=1e-13)
    hot = direct(X0, lambda t: BETA / (1 + t))
    cold = direct(X0, lambda t: BETA)           # negative control: tau ignored
    gap = np.abs(sim.X - hot).max()
    control = np.abs(sim.X - cold).max()
    assert gap < 1e-10, gap
    assert control > 1e-2, control
    # the equiangular start stays equiangular: gamma is the mean cosine of the oracle
    G = np.einsum("knd,kmd->knm", hot, hot)
    gamma = (G.sum(axis=(1, 2)) - N) / (N * (N - 1))
    assert np.abs(sim.gamma - gamma).max() < 1e-9


def test_untempered_scheme_is_unchanged_by_a_unit_law():
    # tau = 1 written out is no temperature at all: same run as the plain scheme
    X0 = sd.init.sphere(N, D, seed=1)
    plain = sd.custom_scheme("plain", speed="1")
    sim = sd.simulate(plain, X0, beta=BETA, t=TIMES, save_x=True, rtol=1e-12, atol=1e-13)
    assert np.abs(sim.X - direct(X0, lambda t: BETA)).max() < 1e-9


def test_generic_layer_rule_gets_the_field_at_beta_tau_of_t_k():
    h, layers = 0.05, 60
    X0 = sd.init.sphere(N, D, seed=2)
    sim = sd.simulate(cooling(), X0, beta=BETA, t=[layers * h], step=h, save_x=True)

    def euler(beta_of_t):
        X = X0 / np.linalg.norm(X0, axis=-1, keepdims=True)
        f = direct_field(beta_of_t)
        for k in range(layers):
            X = X + h * f(k * h, X.ravel()).reshape(N, D)
            X = X / np.linalg.norm(X, axis=-1, keepdims=True)
        return X

    gap = np.abs(sim.X[-1] - euler(lambda t: BETA / (1 + t))).max()
    control = np.abs(sim.X[-1] - euler(lambda t: BETA)).max()
    assert gap < 1e-12, gap
    assert control > 1e-2, control


def test_log_clock_reads_the_temperature_at_t_of_tau():
    # ln-scaling (tau = 1/(1 + t)) in the log clock agrees with the clock t
    X0 = sd.init.equiangular(4, 4, 0.1, seed=0)
    T_ = np.array([0.0, 1.0, 5.0, 20.0])
    in_t = sd.simulate("ln-scaling", X0, beta=2.0, t=T_)
    in_log = sd.simulate("ln-scaling", X0, beta=2.0, t=np.log1p(T_), clock="log")
    assert np.abs(in_t.gamma - in_log.gamma).max() < 1e-9
    # negative control: the same laws without the temperature move elsewhere
    wrong = sd.custom_scheme("no-tau", speed="r*sqrt(1 + t)", radial="a/sqrt(1 + t)")
    off = sd.simulate(wrong, X0, beta=2.0, t=T_)
    assert np.abs(off.gamma - in_t.gamma).max() > 1e-2


def test_a_piecewise_temperature_switches_at_its_breakpoint():
    import sympy as sp

    from symdyn.model.symbols import t
    s = sd.custom_scheme("quench", speed="1",
                         temperature=sp.Piecewise((1, t < 2), (sp.Rational(1, 4), True)))
    X0 = sd.init.sphere(N, D, seed=4)
    sim = sd.simulate(s, X0, beta=BETA, t=TIMES, save_x=True, rtol=1e-12, atol=1e-13)
    # the oracle integrates the two phases separately, restarting at t = 2
    X = X0 / np.linalg.norm(X0, axis=-1, keepdims=True)
    first = solve_ivp(direct_field(lambda t: BETA), (0.0, 2.0), X.ravel(), method="DOP853",
                      rtol=1e-12, atol=1e-13, dense_output=True)
    second = solve_ivp(direct_field(lambda t: BETA / 4), (2.0, T), first.y[:, -1],
                       method="DOP853", rtol=1e-12, atol=1e-13, dense_output=True)
    ref = np.array([(first if tk <= 2 else second).sol(tk) for tk in TIMES]).reshape(-1, N, D)
    ref /= np.linalg.norm(ref, axis=-1, keepdims=True)
    assert np.abs(sim.X - ref).max() < 1e-9
    assert np.abs(sim.X - direct(X0, lambda t: BETA)).max() > 1e-2     # control: no switch
