"""The causal long run's speed-ups (issue 38 item 4; benchmarks/causal_long_run.py).

* ``rosenbrock.BLAS_THREADS = 1``: the LU solves of ``W x = b`` on one BLAS
  thread equal ``numpy.linalg.solve`` on the library's threads (within 1e-12
  relative), leave the thread count as they found it, and give NaN for a
  singular or non-finite ``W``. Control: a W changed in one entry by 1e-6
  gives a solution farther than that.
* ``stiffness.MAX_WAIT``: a causal Post-LN run (n = 12, d = 3, beta = 9, two
  seeds, to t = 1e5) with the capped wait reports the labels and events of the
  unbounded wait (the run before the cap), with fewer evaluations: the two
  runs stepped differently (control that the comparison is not of one run
  with itself), and a run at beta = 9.5 has other events (control that the
  comparison can fail).
"""

from __future__ import annotations

import numpy as np
import pytest
from threadpoolctl import threadpool_info

import symdyn as sd
from symdyn.ode import rosenbrock, stiffness


def _blas_threads():
    return [lib["num_threads"] for lib in threadpool_info() if lib["user_api"] == "blas"]


@pytest.mark.parametrize("dim", [96, 8])      # LU per member; one batched inverse
def test_one_thread_lu_solves(monkeypatch, dim):
    assert (dim >= rosenbrock.LU_DIM) == (dim == 96)
    rng = np.random.default_rng(0)
    W = np.eye(dim) + 0.05 * rng.normal(size=(3, dim, dim))
    W[1, 7] = 0.0                            # singular
    W[2, 0, 0] = np.nan                      # not finite
    b = rng.normal(size=(3, dim))
    before = _blas_threads()
    with rosenbrock.few_threads():
        assert set(_blas_threads()) == {1}
        one = rosenbrock.factor(W)(b)
    assert _blas_threads() == before
    exact = np.linalg.solve(W[0], b[0])      # numpy on the library's threads
    assert np.abs(one[0] - exact).max() <= 1e-12 * np.abs(exact).max()
    assert np.isnan(one[1:]).all()           # those steps are rejected
    monkeypatch.setattr(rosenbrock, "BLAS_THREADS", None)
    many = rosenbrock.factor(W)(b)
    assert np.abs(many[0] - exact).max() <= 1e-12 * np.abs(exact).max()
    V = W[:1].copy()
    V[0, 3, 5] += 1e-6                       # control: another W, another solution
    assert np.abs(rosenbrock.factor(V)(b[:1])[0] - exact).max() > 1e-9


def _run(beta=9.0):
    X0 = sd.init.sphere(12, 3, batch=2, seed=0)
    t = np.r_[0.0, np.geomspace(1.0, 1e5, 31)]
    return sd.simulate("post-ln", X0, beta=beta, t=t, mask="causal", merge=0.0)


def _structure(sim):
    """The event table without the energies (two integrations differ in the last bits)."""
    return sim.events.drop(columns=["energy_before", "energy_after"])


@pytest.fixture(scope="module")
def capped_and_unbounded():
    assert stiffness.MAX_WAIT == 4 * stiffness.STIFF_STEPS
    capped = _run()
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(stiffness, "MAX_WAIT", 10**9)
        unbounded = _run()
    return capped, unbounded


def test_capped_wait_reports_the_same_clusters_and_events(capped_and_unbounded):
    capped, unbounded = capped_and_unbounded
    assert len(capped.events) > 5
    np.testing.assert_array_equal(capped.labels, unbounded.labels)
    assert _structure(capped).equals(_structure(unbounded))
    # the runs stepped differently: fewer evaluations with the cap
    assert capped.nfev < 0.9 * unbounded.nfev
    assert capped.stiff_steps != unbounded.stiff_steps


def test_control_other_beta_other_events(capped_and_unbounded):
    capped, _ = capped_and_unbounded
    assert not _structure(_run(9.5)).equals(_structure(capped))
