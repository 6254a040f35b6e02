"""Coincident tokens as one weighted token (symdyn.merging): exact attention,
observables unchanged beyond the stated threshold, and the cost it saves."""

import numpy as np
import pytest

import symdyn as sd
from symdyn import merging
from symdyn.attention import attention


def _weights(d, heads, seed=0):
    rng = np.random.default_rng(seed)
    return tuple(rng.normal(size=(heads, d, d)) / np.sqrt(d) for _ in range(3))


@pytest.mark.parametrize("kind", ["softmax", "unnormalized"])
@pytest.mark.parametrize("heads", [None, 1, 3])
def test_k_identical_tokens_attend_as_one_token_of_mass_k(kind, heads):
    rng = np.random.default_rng(1)
    Y = rng.normal(size=(2, 5, 4))
    Y /= np.linalg.norm(Y, axis=-1, keepdims=True)
    full = np.concatenate([Y, Y[:, :1], Y[:, :1], Y[:, 3:4]], axis=1)   # 0 x3, 3 x2
    mass = np.array([[3, 1, 1, 2, 1, 0, 0, 0]] * 2, dtype=float)
    qkv = None if heads is None else _weights(4, heads)
    beta = np.array([2.0, 7.0])
    A_full = attention(full, beta, qkv, kind, identity=heads is None)
    A_mass = attention(full, beta, qkv, kind, identity=heads is None, mass=mass)
    assert np.allclose(A_mass[:, :5], A_full[:, :5], rtol=1e-14, atol=1e-15)
    # negative control: without the masses the answer differs
    A_plain = attention(Y, beta, qkv, kind, identity=heads is None)
    assert not np.allclose(A_plain, A_full[:, :5], rtol=1e-6, atol=0)


def _runs(merge, scheme="post-ln", **kw):
    X0 = sd.init.sphere(12, 3, batch=2, seed=3)
    T = [5.0, 20.0, 60.0, 200.0]
    return sd.simulate(scheme, X0, beta=4.0, t=T, rtol=1e-12, atol=1e-14, merge=merge,
                       **kw)


OBSERVABLES = ("gamma", "epsilon", "min_cosine", "linked", "r", "speed")


def _change(a, b):
    return {k: np.abs(getattr(a, k) - getattr(b, k)).max() for k in OBSERVABLES}


@pytest.mark.parametrize("scheme", ["post-ln", "ngpt"])
def test_merging_changes_no_observable_beyond_the_threshold(scheme):
    plain = _runs(0.0, scheme)
    merged = _runs(None, scheme)            # default: 100 rtol = 1e-10
    assert plain.merged == 0 and merged.merged >= 10      # tokens do merge
    assert np.array_equal(plain.clusters, merged.clusters)
    change = _change(plain, merged)
    assert max(change.values()) < 1e-10, change
    assert merged.nfev < plain.nfev


def test_merging_test_sees_a_too_large_threshold():
    change = _change(_runs(0.0), _runs(1e-6))
    assert max(change.values()) > 1e-10


def test_masses_add_up_and_representatives_carry_the_state():
    c = merging.Coalescence(1, 4, 1e-9)
    theta = np.array([[[1.0, 0, 0], [1.0, 1e-10, 0], [0, 1.0, 0], [1.0, -5e-10, 0]]])
    theta /= np.linalg.norm(theta, axis=-1, keepdims=True)
    rad = np.ones((1, 4))
    assert c.merge(np.array([0]), theta, rad).tolist() == [True]
    assert c.mass.tolist() == [[3.0, 0.0, 1.0, 0.0]] and c.rep.tolist() == [[0, 0, 2, 0]]
    (th,) = c.expand(np.array([0]), theta)
    assert np.array_equal(th[0, 3], theta[0, 0])
    # different norms never merge
    c2 = merging.Coalescence(1, 4, 1e-9)
    assert not c2.merge(np.array([0]), theta, np.array([[1.0, 2.0, 1.0, 3.0]])).any()


def test_merge_threshold_is_checked():
    X0 = sd.init.sphere(4, 3, seed=0)
    with pytest.raises(ValueError, match="merge"):
        sd.simulate("post-ln", X0, beta=1.0, t=[1.0], merge=1e-3)


def _two_clusters(beta=15.0, cos=-0.78):
    theta = np.array([[[1.0, 0.0, 0.0], [cos, np.sqrt(1 - cos * cos), 0.0]]])
    R, _ = np.linalg.qr(np.random.default_rng(5).normal(size=(3, 3)))   # no aligned axes
    theta = theta @ R.T
    theta /= np.linalg.norm(theta, axis=-1, keepdims=True)
    return theta, np.array([[20.0, 12.0]]), beta


def _exact_velocity(theta, mass, beta):
    """Token 0's velocity, two weighted tokens, in 40 digits (mpmath)."""
    import mpmath
    with mpmath.workdps(40):
        t0, t1 = (mpmath.matrix(theta[0, k].tolist()) for k in (0, 1))
        c = (t0.T * t1)[0]
        w = mass[0, 1] * mpmath.exp(beta * (c - 1))
        v = (w / (mass[0, 0] + w)) * (t1 - c * t0)
        return np.array([float(x) for x in v])


def test_far_clusters_move_with_full_relative_precision():
    # velocity ~1e-12: the token's own O(1) attention term is split off, not
    # subtracted after the fact (that left 1e-16 noise, 1e-4 relative)
    from symdyn.particles import _Field
    theta, mass, beta = _two_clusters()
    field = _Field(sd.scheme("post-ln"), sd.weights.identity(3), "softmax", (), None)
    v, _ = field(np.zeros(1), theta, np.ones((1, 2)), np.array([beta]), 0, mass=mass)
    exact = _exact_velocity(theta, mass, beta)
    assert np.linalg.norm(exact) < 1e-10
    assert np.linalg.norm(v[0, 0] - exact) < 1e-12 * np.linalg.norm(exact)


def test_velocity_test_sees_the_subtracted_form():
    theta, mass, beta = _two_clusters()
    A = attention(theta, np.array([beta]), None, "softmax", identity=True, mass=mass)
    v = A[0, 0] - (A[0, 0] @ theta[0, 0]) * theta[0, 0]
    exact = _exact_velocity(theta, mass, beta)
    assert np.linalg.norm(v - exact) > 1e-9 * np.linalg.norm(exact)
