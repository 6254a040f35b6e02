"""float32 simulations: the observables that keep their meaning agree with
float64, the integration stays in float32, and what would lose it is refused."""

from dataclasses import replace

import numpy as np
import pytest

import symdyn as sd
from symdyn.model.scheme import LayerRule
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


def _spied(scheme, seen):
    """``scheme`` with its layer rule wrapped: every token array it returns is
    recorded in ``seen`` (dtype)."""
    rule = scheme.layer.update

    def spy(*args):
        out = rule(*args)
        seen.append(out.dtype)
        return out

    return replace(scheme, layer=LayerRule(scheme.layer.name, spy))


@pytest.mark.parametrize("name", sd.schemes())
@pytest.mark.parametrize("kappa", [None, 4.0])
def test_every_layer_rule_computes_in_float32(name, kappa):
    # a rule that mixed a float64 numpy scalar into float32 tokens ran the whole
    # run in float64 (LN-Scaling's 1/sqrt(1 + t_k) did)
    seen = []
    X0 = sd.init.sphere(6, 3, batch=2, seed=0).astype(np.float32)
    out = sd.simulate(_spied(sd.scheme(name), seen), X0, 1.0, [0.0, 0.05], step=0.01,
                      dtype=np.float32, kappa=kappa, seed=None if kappa is None else 0,
                      save_x=True)
    assert len(seen) == 5 and set(seen) == {np.dtype(np.float32)}
    assert np.isfinite(out.X).all()


def test_a_rule_that_leaves_float32_is_seen_and_cast_back():
    # negative control of the spy above, and the layer loop's guard behind it
    def upcast(s, x, h, tk, A, field):
        return (x + h * A(x)) / np.float64(1.0 + h)

    seen = []
    leaky = _spied(replace(sd.scheme("pre-ln"), layer=LayerRule("upcast", upcast)), seen)
    X0 = sd.init.sphere(6, 3, seed=0).astype(np.float32)
    out = sd.simulate(leaky, X0, 1.0, [0.0, 0.03], step=0.01, dtype=np.float32,
                      kappa=4.0, seed=0, save_x=True)
    assert set(seen) == {np.dtype(np.float64)}
    assert len(seen) == 3 and np.isfinite(out.X).all()
