"""float32 simulations: the observables that keep their meaning agree with
float64, the integration stays in float32, and what would lose it is refused."""

import numpy as np
import pytest

import symdyn as sd
from symdyn.ode import integrate as integ


def _pair(scheme="post-ln", **kw):
    X0 = sd.init.sphere(24, 16, batch=3, seed=2)
    T = [1.0, 5.0, 20.0, 60.0]
    return [sd.simulate(scheme, X0, beta=4.0, t=T, dtype=dt, **kw)
            for dt in (np.float64, np.float32)]


@pytest.mark.parametrize("scheme, kw", [
    ("post-ln", {}),
    ("peri-ln", {"weights": sd.weights.kaiming(16, heads=2, seed=0)}),
    ("pre-ln", {"step": 0.1}),
])
def test_float32_keeps_gamma_linked_and_clusters(scheme, kw):
    f64, f32 = _pair(scheme, **kw)
    assert np.abs(f64.gamma - f32.gamma).max() < 1e-5
    assert np.abs(f64.min_cosine - f32.min_cosine).max() < 1e-4
    assert np.abs(f64.linked - f32.linked).max() <= 1e-3
    assert np.array_equal(f64.clusters, f32.clusters)


def test_float32_epsilon_near_a_cluster_is_noise():
    # what the docs say: epsilon near a cluster has no float32 meaning
    f64, f32 = _pair()
    near = f64.epsilon < 1e-9
    assert near.any()
    assert np.all(np.abs(f32.epsilon[near] - f64.epsilon[near]) > 10 * f64.epsilon[near])


def test_integration_stays_in_float32():
    seen = set()

    def f(t, y, phase):
        seen.add(y.dtype)
        return -y

    sol = integ.integrate(f, [1.0], np.ones((2, 3), dtype=np.float32), rtol=1e-5, atol=1e-6)
    assert seen == {np.dtype(np.float32)}
    assert np.allclose(sol.y[:, -1], np.exp(-1.0), rtol=1e-4)


@pytest.mark.parametrize("kw, match", [
    (dict(rtol=1e-8), "rtol"),
    (dict(cluster_threshold=0.99999), "cluster_threshold"),
    (dict(dtype=np.float16), "dtype"),
    (dict(dtype="float128"), "dtype"),
])
def test_float32_refuses_what_it_cannot_resolve(kw, match):
    kw = {"dtype": np.float32} | kw
    with pytest.raises(ValueError, match=match):
        sd.simulate("post-ln", sd.init.sphere(4, 3, seed=0), beta=1.0, t=[1.0], **kw)


def test_sweep_has_a_precision_axis():
    table = sd.sweep({"n": 12, "d": 8, "beta": [1.0, 4.0],
                      "precision": ["float64", "float32"]}, t=[5.0, 30.0], seeds=2)
    wide = table.pivot_table(index=["beta", "seed", "t"], columns="precision",
                             values="linked")
    assert np.abs(wide["float64"] - wide["float32"]).max() <= 1e-3
    assert set(table["precision"]) == {"float64", "float32"}
