"""The tokens a log-clock run records: directions, with ``r`` holding log r.

Oracle: the same run in the clock t at t = e^tau - 1, whose tokens are
theta r; control: the product theta log r the log clock recorded before
(its norms are log r, not r).
"""

import numpy as np

import symdyn as sd


def _runs():
    X0 = 2.0 * sd.init.sphere(6, 3, seed=0)
    tau = np.array([0.0, 0.5, 1.0])
    log = sd.simulate("pre-ln", X0, beta=1.0, t=tau, clock="log", merge=0.0, save_x=True,
                      rtol=1e-12, atol=1e-14)
    lin = sd.simulate("pre-ln", X0, beta=1.0, t=np.expm1(tau), merge=0.0, save_x=True,
                      rtol=1e-12, atol=1e-14)
    return log, lin


def test_log_clock_records_directions_and_log_norms():
    log, lin = _runs()
    assert np.allclose(np.linalg.norm(log.X, axis=-1), 1.0, atol=1e-14)
    tokens = np.exp(log.r).T[..., None] * log.X                # (K, n, d): e^{log r} theta
    assert np.allclose(tokens, lin.X, rtol=1e-8, atol=1e-10)
    # control: theta * log r, what was recorded before, is not the run's tokens
    wrong = log.r.T[..., None] * log.X
    assert not np.allclose(wrong, lin.X, rtol=1e-3)


def test_a_saved_function_sees_the_same_directions():
    X0 = 2.0 * sd.init.sphere(6, 3, seed=0)
    sim = sd.simulate("pre-ln", X0, beta=1.0, t=[0.0, 1.0], clock="log", merge=0.0,
                      save=["tokens", lambda t, X: np.linalg.norm(X, axis=-1)])
    assert np.allclose(sim.values, 1.0, atol=1e-14)
    assert np.allclose(sim.values, np.linalg.norm(sim.X, axis=-1))
