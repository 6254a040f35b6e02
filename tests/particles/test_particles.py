"""The particle simulator against the reduced solver, itself, and a loop oracle."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from test_reduction import schemes as scheme_strategy

import symdyn as sd
from symdyn.particles.attention import attention

# --- the witness agrees with the reduced ODE --------------------------------

@given(scheme_strategy(), st.integers(2, 16), st.floats(0.01, 10.0), st.floats(0.0, 1.0),
       st.integers(0, 2**32 - 1))
def test_equiangular_simulation_matches_solve(scheme, n, beta, u, seed):
    lower = -1 / (n - 1)
    gamma0 = lower + (0.02 + 0.98 * u) * (1 - lower)   # off the unstable simplex
    times = np.linspace(0, 5, 11)
    X0 = sd.init.equiangular(n, n, gamma0, r0=1.0, seed=seed)
    sim = sd.simulate(scheme, X0, beta=beta, t=times)
    tr = sd.solve(scheme, n=n, beta=beta, gamma0=gamma0, r0=1.0, t=times)
    assert np.abs(sim.gamma - tr.gamma).max() < 1e-7
    assert np.allclose(sim.r, tr.r[None, :], rtol=1e-7)


def test_cross_check_negative_control():
    X0 = sd.init.equiangular(6, 6, 0.0, seed=0)
    sim = sd.simulate("peri-ln", X0, beta=1.0, t=[1.0, 3.0])
    tr = sd.solve("pre-ln", n=6, beta=1.0, gamma0=0.0, t=[1.0, 3.0])
    assert np.abs(sim.gamma - tr.gamma).max() > 1e-2


def test_unnormalized_kernel_matches_solve():
    X0 = sd.init.equiangular(5, 7, 0.2, seed=4)
    sim = sd.simulate("pre-ln", X0, beta=0.7, t=[1.0, 4.0], attention="unnormalized")
    tr = sd.solve("pre-ln", n=5, beta=0.7, gamma0=0.2, t=[1.0, 4.0],
                  attention="unnormalized")
    assert np.abs(sim.gamma - tr.gamma).max() < 1e-8


# --- attention against a per-token loop --------------------------------------

def loop_attention(Y, beta, Q, K, V, kind):
    """Attention written as a research script would: loops over heads and tokens."""
    heads, n = Q.shape[0], Y.shape[0]
    A = np.zeros_like(Y)
    for h in range(heads):
        for k in range(n):
            scores = [beta * (Q[h] @ Y[k]) @ (K[h] @ Y[j]) for j in range(n)]
            w = np.exp(scores)
            Z = w.sum() if kind == "softmax" else n
            A[k] += sum(w[j] * (V[h] @ Y[j]) for j in range(n)) / Z
    return A / heads


@pytest.mark.parametrize("kind", ["softmax", "unnormalized"])
@pytest.mark.parametrize("heads", [1, 3])
def test_attention_matches_loop(kind, heads):
    w = sd.weights.kaiming(6, heads=heads, seed=2)
    Y = sd.init.sphere(5, 6, batch=2, seed=3)
    A = attention(Y, np.array([1.5, 0.5]), w.at(0), kind)
    for m, b in enumerate([1.5, 0.5]):
        Q, K, V = w.at(0)
        assert np.allclose(A[m], loop_attention(Y[m], b, Q, K, V, kind), rtol=1e-12,
                           atol=1e-14)


def test_softmax_is_stable_at_huge_beta():
    Y = sd.init.sphere(4, 3, seed=0)
    A = attention(Y[None], np.array([1e6]), None, "softmax", identity=True)
    assert np.allclose(A[0], Y)       # each token attends to itself only


@pytest.mark.parametrize("beta", [0.3, 4.0, 900.0])
def test_unit_tokens_shift_their_scores_by_beta(beta):
    """``unit=True`` shifts the scores by beta instead of each row's maximum:
    the same attention as the per-token loop (with masses, one of them 0, as a
    token of mass 2 and one of mass 0), and at beta = 900, where exp(beta)
    overflows, still finite. Control: rows of norm 2 break the promise, and
    the same call overflows at large beta."""
    rng = np.random.default_rng(5)
    Y = sd.init.sphere(6, 4, seed=1)
    Y[4] = Y[1] + 1e-9 * rng.normal(size=4)          # a near-copy that will carry mass 0
    Y /= np.linalg.norm(Y, axis=-1, keepdims=True)
    eye = np.eye(4)[None]
    with np.errstate(over="ignore", invalid="ignore"):
        ref = loop_attention(Y, beta, eye, eye, eye, "softmax")
    A = attention(Y[None], np.array([beta]), None, "softmax", identity=True, unit=True)
    if np.isfinite(ref).all():
        assert np.allclose(A[0], ref, rtol=1e-12, atol=1e-14)
    else:                                   # the loop overflows; the shifted sum does not
        assert beta > 700 and np.isfinite(A).all()
        assert np.allclose(A[0], attention(Y[None], np.array([beta]), None, "softmax",
                                           identity=True)[0], rtol=1e-12, atol=1e-14)
    mass = np.array([[1.0, 2.0, 1.0, 1.0, 0.0, 1.0]])
    weighed = attention(Y[None], np.array([beta]), None, "softmax", identity=True,
                        mass=mass, unit=True)
    kept = [0, 1, 1, 2, 3, 5]                   # token 1 twice stands for mass 2
    alone = attention(Y[None, kept], np.array([beta]), None, "softmax", identity=True)
    assert np.allclose(weighed[0, [0, 1, 2, 3, 5]], alone[0, [0, 1, 3, 4, 5]],
                       rtol=1e-12, atol=1e-14)
    assert np.isfinite(weighed).all()       # the mass-0 token's row is defined
    with np.errstate(over="ignore", invalid="ignore"):       # control: rows of norm 2
        broken = attention(2 * Y[None], np.array([beta]), None, "softmax", identity=True,
                           unit=True)
    assert np.isfinite(broken).all() == (beta < 200)     # break the bound, and overflow


def test_unit_softmax_hands_out_its_row_sums():
    """``row_sums``: Z_k = sum_j m_j e^{beta(<y_k, y_j> - 1)}, summed here term by
    term (a token of mass 2 counted twice, one of mass 0 not at all). Control:
    scores shifted by each row's maximum, or masked, have no such sums, and say so."""
    Y = sd.init.sphere(5, 3, batch=2, seed=4)
    beta = np.array([2.0, 30.0])
    mass = np.array([[1.0, 2.0, 0.0, 1.0, 1.0], [1.0] * 5])
    Z = np.empty((2, 5))
    attention(Y, beta, None, "softmax", identity=True, mass=mass, unit=True, row_sums=Z)
    G = np.einsum("mkd,mjd->mkj", Y, Y)
    ref = np.einsum("mkj,mj->mk", np.exp(beta[:, None, None] * (G - 1)), mass)
    assert np.allclose(Z, ref, rtol=1e-13, atol=0)
    for kind in ({}, {"causal": True, "unit": True}):
        with pytest.raises(ValueError, match="row_sums"):
            attention(Y, beta, None, "softmax", identity=True, row_sums=Z, **kind)

# --- layer rules converge to the continuous dynamics with order 1 ------------

LAYER_CASES = sd.schemes() + ["none", sd.custom_scheme("soft-peri", "r*(1 + A_norm)", "a"),
                              sd.scheme("ngpt", alpha="1 + t")]


@pytest.mark.parametrize("scheme", LAYER_CASES, ids=str)
def test_layer_rules_converge_with_order_one(scheme):
    X0 = sd.init.gaussian(6, 5, scale=1 / np.sqrt(5), seed=3)
    w = sd.weights.kaiming(5, heads=2, seed=7)
    ref = sd.simulate(scheme, X0, beta=1.0, t=[1.0, 2.0], weights=w, save_x=True)
    errors = [np.abs(sd.simulate(scheme, X0, beta=1.0, t=[1.0, 2.0], weights=w, step=h,
                                 save_x=True).X - ref.X).max() for h in (0.02, 0.01, 0.005)]
    for coarse, fine in zip(errors[:-1], errors[1:], strict=True):
        assert 1.8 < coarse / fine < 2.2


def test_untied_layers_use_a_new_draw_per_layer():
    X0 = sd.init.sphere(4, 3, seed=0)
    untied = sd.weights.kaiming(3, layers=4, seed=1)
    first = sd.weights.Weights(*(M[:1] for M in (untied.Q, untied.K, untied.V)))
    a = sd.simulate("post-ln", X0, beta=1.0, t=[1.0], weights=untied, step=1.0, save_x=True)
    b = sd.simulate("post-ln", X0, beta=1.0, t=[1.0], weights=first, step=1.0, save_x=True)
    assert np.array_equal(a.X, b.X)        # layer 0 uses draw 0
    a = sd.simulate("post-ln", X0, beta=1.0, t=[4.0], weights=untied, step=1.0, save_x=True)
    b = sd.simulate("post-ln", X0, beta=1.0, t=[4.0], weights=first, step=1.0, save_x=True)
    assert not np.allclose(a.X, b.X)
    with pytest.raises(ValueError, match="weights"):
        sd.simulate("post-ln", X0, beta=1.0, t=[5.0], weights=untied, step=1.0)


def test_untied_continuous_switches_draw_each_unit_of_time():
    X0 = sd.init.sphere(4, 3, seed=0)
    untied = sd.weights.kaiming(3, layers=3, seed=1)
    first = sd.weights.Weights(*(M[:1] for M in (untied.Q, untied.K, untied.V)))
    a = sd.simulate("pre-ln", X0, beta=1.0, t=[0.5, 2.5], weights=untied, save_x=True)
    b = sd.simulate("pre-ln", X0, beta=1.0, t=[0.5, 2.5], weights=first, save_x=True)
    assert np.allclose(a.X[0], b.X[0], atol=1e-12)
    assert not np.allclose(a.X[1], b.X[1], atol=1e-3)


# --- invariants ----------------------------------------------------------------

@pytest.mark.parametrize("name", ["post-ln", "ngpt", "sqrt-scaling", "mix-ln"])
def test_sphere_schemes_keep_unit_norm(name):
    X0 = sd.init.sphere(7, 4, batch=3, seed=5)
    for step in (None, 0.05):
        sim = sd.simulate(name, X0, beta=2.0, t=[0.5, 0.95], step=step, save_x=True)
        assert np.abs(np.linalg.norm(sim.X, axis=-1) - 1).max() < 1e-12


@pytest.mark.parametrize("name", sd.schemes() + ["none"])
def test_permutation_equivariance(name):
    X0 = sd.init.gaussian(6, 4, scale=0.5, seed=8)
    perm = np.random.default_rng(0).permutation(6)
    w = sd.weights.kaiming(4, seed=1)
    a = sd.simulate(name, X0, beta=1.0, t=[1.0, 3.0], weights=w, save_x=True)
    b = sd.simulate(name, X0[perm], beta=1.0, t=[1.0, 3.0], weights=w, save_x=True)
    assert np.allclose(a.X[:, perm], b.X, rtol=1e-9, atol=1e-11)
    assert np.allclose(a.gamma, b.gamma, rtol=0, atol=1e-11)


@pytest.mark.parametrize("name", sd.schemes() + ["none"])
def test_rotation_invariance_with_identity_weights(name):
    X0 = sd.init.gaussian(6, 4, scale=0.5, seed=9)
    R = sd.init.random_rotation(4, np.random.default_rng(1))
    # two runs on different steps, each within its tolerance: 1e-12, so that
    # they agree to 1e-10 (at rtol 1e-10 they differ by 1.1e-10, nGPT)
    a = sd.simulate(name, X0, beta=1.0, t=[1.0, 3.0], rtol=1e-12, atol=1e-14)
    b = sd.simulate(name, X0 @ R.T, beta=1.0, t=[1.0, 3.0], rtol=1e-12, atol=1e-14)
    assert np.allclose(a.gamma, b.gamma, rtol=0, atol=1e-10)
    # negative control: a non-orthogonal map changes gamma(t)
    c = sd.simulate(name, X0 @ np.diag([3.0, 1.0, 1.0, 0.2]), beta=1.0, t=[1.0, 3.0])
    assert not np.allclose(a.gamma, c.gamma, atol=1e-4)


def test_same_seed_bit_identical():
    def run(seed):
        X0 = sd.init.gaussian(5, 4, batch=2, seed=seed)
        w = sd.weights.kaiming(4, heads=2, seed=seed)
        return sd.simulate("peri-ln", X0, beta=1.0, t=[1.0, 2.0], weights=w, save_x=True)
    a, b, c = run(11), run(11), run(12)
    assert np.array_equal(a.X, b.X) and np.array_equal(a.gamma, b.gamma)
    assert not np.array_equal(a.X, c.X)


def test_batch_matches_single_runs():
    X0 = sd.init.gaussian(5, 4, batch=3, seed=2)
    betas = np.array([0.5, 1.0, 4.0])
    batch = sd.simulate("pre-ln", X0, beta=betas, t=[1.0, 2.0], save_x=True)
    for i in range(3):
        one = sd.simulate("pre-ln", X0[i], beta=betas[i], t=[1.0, 2.0], save_x=True)
        assert np.array_equal(batch.X[i], one.X)


def test_observables():
    X0 = sd.init.sphere(8, 3, seed=1)
    sim = sd.simulate("post-ln", X0, beta=1.0, t=[0.0, 30.0], save_x=True)
    G = X0 @ X0.T
    assert sim.gamma[0] == pytest.approx((G.sum() - 8) / 56, abs=1e-14)
    assert sim.min_cosine[0] == pytest.approx(G[~np.eye(8, dtype=bool)].min(), abs=1e-14)
    assert sim.clusters[0] == 8 and sim.clusters[-1] == 1     # Theorem 3.1: one cluster
    assert sim.r.shape == (8, 2) and sim.speed.shape == (8, 2)
    assert sim.speed[:, -1].max() < 1e-10 < sim.speed[:, 0].min()


def test_linked_fraction_counts_pairs():
    X0 = sd.init.sphere(7, 3, seed=5)
    sim = sd.simulate("post-ln", X0, beta=2.0, t=[0.0, 2.0, 40.0], save_x=True,
                      cluster_threshold=0.9)
    for k in range(3):
        G = sim.X[k] @ sim.X[k].T
        pairs = [G[i, j] >= 0.9 for i in range(7) for j in range(i + 1, 7)]
        assert sim.linked[k] == pytest.approx(np.mean(pairs), abs=1e-15)
    assert sim.linked[0] < 1 and sim.linked[-1] == 1


@pytest.mark.parametrize("scheme", ["post-ln", "pre-ln", "mix-ln", "none"])
@pytest.mark.parametrize("step", [None, 0.25])
def test_identity_weights_in_span_coordinates(scheme, step):
    # d > n with identity weights runs in orthonormal coordinates of span(X0);
    # the same matrices without the identity flag take the general path in R^d.
    X0 = sd.init.gaussian(5, 23, batch=2, seed=9)
    t = [0.0, 1.0, 4.0]
    fast = sd.simulate(scheme, X0, beta=1.5, t=t, step=step, save_x=True)
    eye = np.eye(23)[None, None]
    full = sd.simulate(scheme, X0, beta=1.5, t=t, step=step, save_x=True,
                       weights=sd.weights.Weights(eye, eye, eye))
    assert fast.X.shape == full.X.shape == (2, 3, 5, 23)
    scale = np.linalg.norm(full.X, axis=-1, keepdims=True)
    assert np.abs((fast.X - full.X) / scale).max() < 1e-9
    assert np.abs(fast.gamma - full.gamma).max() < 1e-10


# --- bad input -----------------------------------------------------------------

@pytest.mark.parametrize("kwargs, culprit", [
    (dict(X0=np.zeros((3, 2))), "X0"),
    (dict(X0=np.ones(3)), "X0"),
    (dict(X0=np.full((3, 2), np.nan)), "X0"),
    (dict(step=0.0), "step"),
    (dict(step=-0.1), "step"),
    (dict(t=[0.15], step=0.1), "multiples"),
    (dict(beta=np.nan), "beta"),
    (dict(beta=-1.0), "beta"),
    (dict(weights=(np.eye(3), np.eye(3), np.eye(3))), "weights"),
    (dict(weights=(np.eye(2), np.eye(2), np.ones((2, 3)))), "weights"),
    (dict(weights=(np.eye(2), np.eye(2), np.full((2, 2), np.inf))), "weights"),
    (dict(weights=(np.eye(2), np.eye(2), np.eye(2) + 0j)), "weights: V"),
    (dict(weights=sd.weights.Weights(*(np.eye(2)[None, None] + 0j,) * 3)), "weights: Q"),
    (dict(attention="linear"), "attention"),
    (dict(t=[1.0, 0.5]), "t"),
    (dict(scheme="layernorm"), "scheme"),
])
def test_bad_input(kwargs, culprit):
    args = dict(scheme="pre-ln", X0=np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]),
                beta=1.0, t=[1.0])
    args.update(kwargs)
    with pytest.raises(ValueError, match=culprit):
        sd.simulate(args.pop("scheme"), args.pop("X0"), **args)


@pytest.mark.parametrize("call, culprit", [
    (lambda: sd.init.equiangular(5, 3, 0.0), "d"),
    (lambda: sd.init.equiangular(5, 5, -0.5), "gamma0"),
    (lambda: sd.init.sphere(1, 3), "n"),
    (lambda: sd.init.gaussian(3, 3, scale=0.0), "scale"),
    (lambda: sd.weights.kaiming(3, heads=0), "heads"),
    (lambda: sd.weights.kaiming(3, layers=0), "layers"),
    (lambda: sd.init.sphere(4, 3, seed="a"), "seed"),
    (lambda: sd.init.gaussian(4, 3, seed=1.5), "seed"),
    (lambda: sd.init.equiangular(4, 4, 0.0, seed="a"), "seed"),
    (lambda: sd.weights.kaiming(3, seed="a"), "seed"),
    (lambda: sd.init.equiangular(4, 4, "a"), "gamma0"),
    (lambda: sd.init.equiangular(4, 4, 0.1j), "gamma0"),
    (lambda: sd.init.equiangular(4, 4, 0.0, r0="a"), "r0"),
    (lambda: sd.init.gaussian(4, 3, scale=1j), "scale"),
    (lambda: sd.weights.kaiming(3, std="a"), "std"),
    # sizes are estimated before allocation (a MemoryError, or worse, before)
    (lambda: sd.init.sphere(10**6, 10**6), "GiB"),
    (lambda: sd.init.gaussian(10**5, 10**5, batch=100), "GiB"),
    (lambda: sd.init.equiangular(4, 10**6, 0.0), "GiB"),
    (lambda: sd.weights.kaiming(10**6), "GiB"),
    (lambda: sd.weights.identity(10**6), "GiB"),
])
def test_generator_bad_input(call, culprit):
    with pytest.raises(ValueError, match=culprit):
        call()


def test_on_sphere_steps_are_not_limited_by_the_normal_direction():
    # Regression (evaluation count, not time): reading the field at theta/|theta|
    # keeps the stages' small excursions off the sphere from limiting the steps;
    # Post-LN from uniform starts to t = 1000 took 10,790 evaluations before.
    X0 = np.stack([sd.init.sphere(32, 8, seed=s) for s in range(8)])
    sim = sd.simulate("post-ln", X0, 0.0, [0.0, 1000.0], rtol=1e-8, atol=1e-10)
    assert sim.clusters[:, -1].tolist() == [1] * 8
    assert sim.nfev < 4000


# --- the layer loop's buffers, the observables' graph ----------------------------

def _softmax_attention(Y, beta):
    """A(Y) written plainly: softmax of beta <y_k, y_j> over j, averaging the y_j."""
    S = beta * Y @ np.swapaxes(Y, -1, -2)
    W = np.exp(S - S.max(axis=-1, keepdims=True))
    return (W @ Y) / W.sum(axis=-1, keepdims=True)


def _custom_layer(name, rule):
    import sympy as sp

    from symdyn.model.scheme import LayerRule, Scheme
    return Scheme(name, sp.Integer(1), sp.Integer(0), sp.Integer(0),
                  layer=LayerRule(name, rule))


def test_post_ln_layers_match_a_plain_loop():
    X0 = sd.init.sphere(12, 5, batch=3, seed=8)
    h, layers = 0.1, 40
    sim = sd.simulate("post-ln", X0, beta=2.0, t=[h * 7, h * layers], step=h, save_x=True)
    X = X0 / np.linalg.norm(X0, axis=-1, keepdims=True)
    for k in range(layers):
        Y = X + h * _softmax_attention(X, 2.0)
        X = Y / np.linalg.norm(Y, axis=-1, keepdims=True)
        if k == 6:
            early = X
    assert np.abs(sim.X[:, 0] - early).max() < 1e-13
    assert np.abs(sim.X[:, 1] - X).max() < 1e-13
    # control: one layer fewer is visibly elsewhere
    assert np.abs(sim.X[:, 1] - early).max() > 1e-3


def _alternate(s, x, h, tk, A, field):
    # every other layer returns what A returned; the next one reads x after calling A
    return A(x) if round(tk / h) % 2 == 0 else x + h * A(x)


def _rules():
    """Rules that keep what A returns: the output itself, and two calls in a layer."""
    return {"returns A": _alternate,
            "A twice": lambda s, x, h, tk, A, field: x + h * (A(x) - A(0.5 * x))}


@pytest.mark.parametrize("name", ["returns A", "A twice"])
def test_a_rule_may_keep_what_attention_returns(name):
    X0 = sd.init.gaussian(6, 4, batch=2, seed=1)
    h, layers, beta = 0.2, 5, 1.5
    sim = sd.simulate(_custom_layer(name, _rules()[name]), X0, beta=beta, t=[h * layers],
                      step=h, save_x=True)
    X = X0.copy()
    for k in range(layers):
        X = _rules()[name](None, X, h, k * h, lambda y: _softmax_attention(y, beta), None)
    assert np.abs(sim.X[:, -1] - X).max() < 1e-12


def test_control_a_kept_buffer_would_be_overwritten(monkeypatch):
    # without the copy of a rule's output that lives in a buffer, the next layer's
    # attention writes over its own input
    from symdyn.particles import layers
    monkeypatch.setattr(layers.Attend, "holds", lambda self, x: False)
    X0 = sd.init.gaussian(6, 4, batch=2, seed=1)
    h, beta = 0.2, 1.5
    rule = _rules()["returns A"]
    sim = sd.simulate(_custom_layer("returns A", rule), X0, beta=beta, t=[5 * h], step=h,
                      save_x=True)
    X = X0.copy()
    for k in range(5):
        X = rule(None, X, h, k * h, lambda y: _softmax_attention(y, beta), None)
    assert np.abs(sim.X[:, -1] - X).max() > 1e-2


def test_cluster_count_matches_scipy():
    """The recorder's labels (``clusters.linked_labels``: the transitive closure
    up to 16 tokens, label propagation up to 64) count scipy's components, on
    random graphs and chains in a random order (the longest label paths)."""
    from scipy.sparse.csgraph import connected_components

    from symdyn.particles.clusters import SMALL_GRAPH, linked_labels
    rng = np.random.default_rng(5)
    for trial in range(300):
        n = int(rng.integers(2, SMALL_GRAPH + 1))
        A = rng.random((3, n, n)) < rng.choice([0.02, 0.1, 0.3])
        if trial % 3 == 0:          # chains in a random order: the longest label paths
            A[:] = False
            order = rng.permutation(n)
            A[:, order[:-1], order[1:]] = True
        A |= np.swapaxes(A, 1, 2)
        A[:, np.arange(n), np.arange(n)] = True
        expected = [connected_components(g, directed=False)[0] for g in A]
        assert (linked_labels(A).max(axis=-1) + 1).tolist() == expected
        if trial % 3 == 0:          # control: cutting a chain makes two components
            i, j = order[n // 2 - 1], order[n // 2]
            A[0, i, j] = A[0, j, i] = False
            assert (linked_labels(A).max(axis=-1) + 1).tolist() == [2, 1, 1]


@pytest.mark.parametrize("n", [1, 2, 3, 5, 8, 9, 16])
def test_closure_and_propagation_find_the_same_leaders(n):
    """Two methods for each token's leader (the smallest index of its
    component): the transitive closure by squaring and label propagation,
    on random graphs and on chains in a random order. Control: one squaring
    too few leaves the far end of a chain of n tokens apart from token 0."""
    from symdyn.particles.clusters import closure_leaders, propagated_leaders
    rng = np.random.default_rng(n)
    A = rng.random((200, n, n)) < rng.choice([0.05, 0.2, 0.4], size=(200, 1, 1))
    order = rng.permutation(n)
    A[:50] = False
    A[:50, order[:-1], order[1:]] = True                    # chains
    A |= np.swapaxes(A, 1, 2)
    A[:, np.arange(n), np.arange(n)] = True
    assert np.array_equal(closure_leaders(A), propagated_leaders(A))
    if n > 2:                       # control: the chain 0 - 1 - ... - (n-1), one short
        chain = np.eye(n, dtype=bool) | np.eye(n, k=1, dtype=bool) | np.eye(n, k=-1, dtype=bool)
        short = closure_leaders(chain[None], squarings=int(np.ceil(np.log2(n - 1))) - 1)
        assert short[0, -1] > 0 and closure_leaders(chain[None])[0, -1] == 0


def test_weights_by_name_as_the_sweep_names_them():
    # issue 28: sweep took weights="kaiming", simulate refused it
    X0 = sd.init.sphere(8, 4, batch=2, seed=0)
    named = sd.simulate("post-ln", X0, beta=1.0, t=[0.0, 1.0, 2.0], weights="kaiming")
    drawn = sd.simulate("post-ln", X0, beta=1.0, t=[0.0, 1.0, 2.0],
                        weights=sd.weights.kaiming(4, seed=0))
    ident = sd.simulate("post-ln", X0, beta=1.0, t=[0.0, 1.0, 2.0], weights="identity")
    assert np.array_equal(named.gamma, drawn.gamma)          # the same draw, the same path
    assert not np.allclose(named.gamma, ident.gamma)         # control: the name was used
    with pytest.raises(ValueError, match="weights: expected one of identity, kaiming"):
        sd.simulate("post-ln", X0, beta=1.0, t=[1.0], weights="xavier")
