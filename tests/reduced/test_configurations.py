"""Symmetric configurations (sd.configuration): the derived closed ODEs against
the particle simulator from the configuration's start, and the equiangular
reduction as the simplex with one token per vertex."""

import numpy as np
import pytest
import sympy as sp
from direct import field

import symdyn as sd
from symdyn.model.symbols import n as n_sym
from symdyn.reduced.configurations import configuration

SCHEMES = list(sd.schemes())
CUSTOM = sd.custom_scheme("custom-radial", speed="A_norm*(1 + t)", radial="a*r")
TIMES = np.array([0.5, 1.0, 2.0, 3.0])


def _two_cluster_start(n, m, rho0, rA, rB, d=3):
    xA = np.zeros(d)
    xA[0] = 1
    xB = np.zeros(d)
    xB[:2] = rho0, np.sqrt(1 - rho0**2)
    return np.array([rA * xA] * m + [rB * xB] * (n - m))


def _cosines(sim, i, j):
    X = np.asarray(sim.X)
    th = X / np.linalg.norm(X, axis=-1, keepdims=True)
    return np.einsum("ki,ki->k", th[:, i], th[:, j])


@pytest.mark.parametrize("name", [*SCHEMES, "custom"])
@pytest.mark.parametrize("n, m, beta", [(5, 2, 1.5), (7, 5, 4.0)])
def test_two_clusters_follow_the_simulator(name, n, m, beta):
    s = CUSTOM if name == "custom" else sd.scheme(name)
    rA, rB = (1.0, 1.0) if s.starts_on_sphere else (1.3, 0.8)
    X0 = _two_cluster_start(n, m, 0.2, rA, rB)
    sim = sd.simulate(s, X0, beta=beta, t=TIMES, merge=0.0, rtol=1e-12, atol=1e-14,
                      save_x=True)
    red = configuration("two-clusters").reduce(s)
    start = {"rho": 0.2} if s.on_sphere else {"rho": 0.2, "r_A": rA, "r_B": rB}
    y = red.solve(TIMES, start, n=n, m=m, beta=beta)
    assert np.abs(y[:, 0] - _cosines(sim, 0, n - 1)).max() < 1e-8
    if not s.on_sphere:
        r = np.linalg.norm(np.asarray(sim.X), axis=-1)
        assert np.abs(y[:, 1] - r[:, 0]).max() < 1e-8
        assert np.abs(y[:, 2] - r[:, -1]).max() < 1e-8
    # control: a wrong mass (one token moved from A to B; not the swap m <-> n - m,
    # a symmetry of the schemes on the sphere) misses
    assert m - 1 not in (0, n - m)
    wrong = red.solve(TIMES, start, n=n, m=m - 1, beta=beta)
    assert np.abs(wrong[:, 0] - _cosines(sim, 0, n - 1)).max() > 1e-5


@pytest.mark.parametrize("name", ["post-ln", "pre-ln"])     # (Peri-LN, nGPT: A/|A|, Z cancels)
def test_two_clusters_under_the_unnormalized_kernel(name):
    s = sd.scheme(name)
    n, m, beta = 5, 2, 1.5
    sim = sd.simulate(s, _two_cluster_start(n, m, 0.2, 1.0, 1.0), beta=beta, t=TIMES,
                      attention="unnormalized", merge=0.0, rtol=1e-12, atol=1e-14,
                      save_x=True)
    red = configuration("two-clusters").reduce(s, attention="unnormalized")
    start = {"rho": 0.2} if s.on_sphere else {"rho": 0.2, "r_A": 1.0, "r_B": 1.0}
    y = red.solve(TIMES, start, n=n, m=m, beta=beta)
    assert np.abs(y[:, 0] - _cosines(sim, 0, n - 1)).max() < 1e-8
    # control: the softmax law from the same start misses
    soft = configuration("two-clusters").reduce(s).solve(TIMES, start, n=n, m=m, beta=beta)
    assert np.abs(soft[:, 0] - _cosines(sim, 0, n - 1)).max() > 1e-4


@pytest.mark.parametrize("name", [*SCHEMES, "custom"])
def test_simplex_of_clusters_follows_the_simulator(name):
    s = CUSTOM if name == "custom" else sd.scheme(name)
    k, per, beta, g0 = 3, 2, 2.0, 0.1
    r0 = 1.0 if s.starts_on_sphere else 1.3
    centres = sd.init.equiangular(k, 3, g0, r0=r0, seed=0)
    X0 = np.repeat(centres, per, axis=0)                 # tokens 0, 1 at vertex 0, ...
    sim = sd.simulate(s, X0, beta=beta, t=TIMES, merge=0.0, rtol=1e-12, atol=1e-14,
                      save_x=True)
    red = configuration("simplex", k=k).reduce(s)
    start = {"gamma": g0} if s.on_sphere else {"gamma": g0, "r": r0}
    y = red.solve(TIMES, start, n=k * per, beta=beta)
    assert np.abs(y[:, 0] - _cosines(sim, 0, per)).max() < 1e-8
    if not s.on_sphere:
        assert np.abs(y[:, 1] - np.linalg.norm(np.asarray(sim.X)[:, 0], axis=-1)).max() < 1e-8
    # control: the equiangular reduction of the n tokens (one per vertex) misses
    eq = configuration("equiangular").reduce(s).solve(TIMES, start, n=k * per, beta=beta)
    assert np.abs(eq[:, 0] - _cosines(sim, 0, per)).max() > 1e-4


@pytest.mark.parametrize("name", [*SCHEMES, "custom"])
def test_equiangular_is_the_simplex_with_unit_masses(name):
    s = CUSTOM if name == "custom" else sd.scheme(name)
    red = configuration("equiangular").reduce(s)
    old = sd.reduce(s)
    assert red.rate("gamma") == old.gamma_dot          # the same expression, not just equal
    if not s.on_sphere:
        assert red.rate("r") == old.r_dot
    # the simplex with k = n vertices is the same field
    simplex = configuration("simplex").reduce(s).rate("gamma").subs(sd.symbols.n, n_sym)
    k = sp.Symbol("k", positive=True)
    point = {sd.symbols.gamma: sp.Rational(1, 7), sd.symbols.beta: sp.Rational(3, 2),
             n_sym: 6, sd.symbols.r: sp.Rational(5, 4), sd.symbols.t: sp.Rational(1, 3)}
    assert abs(float((simplex.subs(k, n_sym) - old.gamma_dot).subs(point))) < 1e-14
    # control: another number of vertices is another field
    assert abs(float((simplex.subs(k, 3) - old.gamma_dot).subs(point))) > 1e-4
    # k clusters of n/k tokens under softmax: the equiangular law with n -> k
    # (the weights n/k cancel; these speed laws do not contain n)
    assert not s.speed.has(n_sym)
    assert abs(float((simplex.subs(k, 3) - old.gamma_dot.subs(n_sym, 3)).subs(point))) < 1e-14


def test_post_ln_two_clusters_at_equal_masses_is_the_great_circle_law():
    # theta' = -2 sin(theta) / (1 + e^{beta (1 - cos theta)}) (metastability.py):
    # rho' = -sin(theta) theta' = 2 (1 - rho^2) / (1 + e^{beta (1 - rho)})
    from symdyn.reduced.configurations import m, rho
    red = configuration("two-clusters").reduce("post-ln")
    b = sd.symbols.beta
    law = 2 * (1 - rho**2) / (1 + sp.exp(b * (1 - rho)))
    assert sp.simplify(red.rate("rho").subs(sd.symbols.n, 2 * m) - law) == 0
    # control: unequal masses give another law
    assert sp.simplify(red.rate("rho").subs(sd.symbols.n, 3 * m) - law) != 0


def test_bad_input_names_the_argument():
    with pytest.raises(ValueError, match="name"):
        configuration("three-rings")
    with pytest.raises(ValueError, match="m"):
        configuration("two-clusters", m=0)
    with pytest.raises(ValueError, match="k"):
        configuration("simplex", k=1)
    for masses in [(1,), (0, 2), (1.5, 2), (sp.Integer(-1), 2), "12", None, (True, 2)]:
        with pytest.raises(ValueError, match="masses"):
            configuration("clusters", masses=masses)
    red = configuration("two-clusters", m=3).reduce("post-ln")
    with pytest.raises(ValueError, match="n"):
        red.solve(TIMES, {"rho": 0.2}, n=2, beta=1.0)
    with pytest.raises(ValueError, match="rho"):
        red.solve(TIMES, {"rho": 1.5}, n=5, beta=1.0)
    with pytest.raises(ValueError, match="name"):
        red.rate("gamma")


# --------------------------------------------------------------------------
# merge laws (symdyn.reduced.merge)
# --------------------------------------------------------------------------

def test_post_ln_merge_time_at_equal_masses_is_the_hand_typed_formula():
    from symdyn.reduced.merge import merge_time
    from symdyn.studies.metastability import two_cluster_merge_time
    for beta, theta0 in [(0.0, 1.0), (1.0, np.pi / 2), (4.0, 2.5), (9.0, np.pi / 2),
                         (9.0, 2.5)]:
        T = merge_time("post-ln", beta, theta0, n=8, level=0.999)
        assert abs(T / two_cluster_merge_time(beta, theta0, 0.999) - 1) < 1e-10
        # control: unequal masses (2 and 6) merge at another time
        T_unequal = merge_time("post-ln", beta, theta0, n=8, m=2, level=0.999)
        if beta > 0:
            assert abs(T_unequal / T - 1) > 1e-3


@pytest.mark.parametrize("name", SCHEMES)
def test_merge_time_is_where_the_simulator_reaches_the_level(name):
    from symdyn.reduced.merge import merge_time
    s = sd.scheme(name)
    n, m, beta, theta0 = 6, 2, 2.0, 0.8
    rA, rB = (1.0, 1.0) if s.starts_on_sphere else (1.3, 0.8)
    T = merge_time(s, beta, theta0, n=n, m=m, level=0.999, r0=(rA, rB))
    X0 = _two_cluster_start(n, m, np.cos(theta0), rA, rB)
    sim = sd.simulate(s, X0, beta=beta, t=[T * (1 - 1e-3), T], merge=0.0, rtol=1e-12,
                      atol=1e-14, save_x=True)
    c = _cosines(sim, 0, n - 1)
    assert abs(c[1] - 0.999) < 1e-9
    assert 0.999 - c[0] > 1e-7       # control: a time 0.1% earlier is short of the level


def test_merge_time_by_events_agrees_with_the_quadrature():
    # Mix-LN is Post-LN until t_switch: its merge time is found by the ODE's event
    from symdyn.reduced.merge import autonomous, merge_time
    late = sd.scheme("mix-ln", t_switch=1e6)
    assert not autonomous(late) and autonomous("post-ln")
    for beta, theta0, m in [(3.0, 1.4, 3), (6.0, 2.0, 1)]:
        T = merge_time("post-ln", beta, theta0, n=7, m=m)
        assert abs(merge_time(late, beta, theta0, n=7, m=m) / T - 1) < 1e-9
    # control: an early switch to Pre-LN changes it
    assert abs(merge_time(sd.scheme("mix-ln", t_switch=0.5), 3.0, 1.4, n=7, m=3) / T - 1) > 1e-3


def test_merge_times_of_clock_changes():
    # DeepNorm is Post-LN on a clock slowed by (2N)^(1/4); sqrt-scaling moves as
    # Post-LN in the clock 2 (sqrt(1 + t) - 1)
    from symdyn.reduced.merge import merge_time
    beta, theta0, n, m = 2.5, 1.7, 9, 4
    post = merge_time("post-ln", beta, theta0, n=n, m=m)
    deep = merge_time(sd.scheme("deepnorm", layers=8), beta, theta0, n=n, m=m)
    assert abs(deep / (16 ** 0.25 * post) - 1) < 1e-12
    root = merge_time("sqrt-scaling", beta, theta0, n=n, m=m)
    assert abs(root / ((1 + post / 2) ** 2 - 1) - 1) < 1e-9
    assert abs(root / post - 1) > 0.1          # control: the clocks differ


def test_post_ln_large_beta_merge_law_at_equal_masses():
    from symdyn.reduced.configurations import m as m_sym
    from symdyn.reduced.merge import epsilon, merge_asymptotics
    law = merge_asymptotics("post-ln")
    b = sd.symbols.beta
    # Laplace's endpoint law of metastability.two_cluster_merge_time's integral,
    # e^{beta (1 - cos)} / (2 beta sin^2), as log T = beta (1 - cos) - log beta + O(1)
    equal = law.subs(m_sym, sd.symbols.n / 2)
    assert sp.simplify(equal - sp.exp(b * epsilon) / (2 * b * epsilon * (2 - epsilon))) == 0
    # control: at masses 1 and 3 the prefactor differs
    assert sp.simplify(law.subs(m_sym, sd.symbols.n / 4) - equal) != 0


@pytest.mark.parametrize("name", ["post-ln", "ngpt", "deepnorm"])
def test_large_beta_merge_law_against_the_merge_time(name):
    from symdyn.reduced.configurations import m as m_sym
    from symdyn.reduced.merge import epsilon, merge_asymptotics, merge_time
    law = merge_asymptotics(name)
    b = sd.symbols.beta
    theta0 = 1.2

    def asymptotic(n, m):
        return sp.lambdify(b, law.subs({epsilon: 1 - sp.cos(theta0), sd.symbols.n: n,
                                        m_sym: m}))
    for n, m in [(8, 4), (6, 2)]:
        f = asymptotic(n, m)
        gap = [abs(merge_time(name, x, theta0, n=n, m=m) / f(x) - 1) for x in (20, 40, 80)]
        assert gap[0] > gap[1] > gap[2] and gap[2] < 0.02       # ~ 1/beta
        assert abs(gap[1] / gap[2] - 2) < 0.2          # halves as beta doubles
    # control: the law of other masses misses by a constant factor
    assert abs(merge_time(name, 80, theta0, n=6, m=2) / asymptotic(6, 1)(80) - 1) > 0.2


def test_merge_time_bad_input():
    from symdyn.reduced.merge import merge_asymptotics, merge_time
    with pytest.raises(ValueError, match="theta0"):
        merge_time("post-ln", 1.0, 4.0, n=4)
    with pytest.raises(ValueError, match="m"):
        merge_time("post-ln", 1.0, 1.0, n=4, m=4)
    with pytest.raises(ValueError, match="level"):
        merge_time("post-ln", 1.0, 1.0, n=4, level=1.0)
    with pytest.raises(ValueError, match="scheme"):
        merge_asymptotics("pre-ln")
    with pytest.raises(ValueError, match="attention"):
        merge_asymptotics("post-ln", attention="unnormalized")


@pytest.mark.parametrize("name", ["post-ln", "pre-ln", "custom"])
def test_clusters_of_given_masses_follow_the_simulator(name):
    s = CUSTOM if name == "custom" else sd.scheme(name)
    masses, beta = (1, 2, 3), 1.7
    C = np.random.default_rng(0).normal(size=(3, 3))
    C /= np.linalg.norm(C, axis=1, keepdims=True)
    radii = np.ones(3) if s.starts_on_sphere else np.array([1.2, 0.9, 1.1])
    sim = sd.simulate(s, np.repeat(C * radii[:, None], masses, axis=0), beta=beta, t=TIMES,
                      merge=0.0, rtol=1e-12, atol=1e-14, save_x=True)
    first = [0, 1, 3]                                 # a token of each cluster
    measured = np.stack([_cosines(sim, first[i], first[j])
                         for i, j in [(0, 1), (0, 2), (1, 2)]], 1)
    G = C @ C.T
    start = {"c_12": G[0, 1], "c_13": G[0, 2], "c_23": G[1, 2]}
    if not s.on_sphere:
        start.update({f"r_{i + 1}": radii[i] for i in range(3)})
    y = configuration("clusters", masses=masses).reduce(s).solve(TIMES, start, beta=beta)
    assert np.abs(y[:, :3] - measured).max() < 1e-8
    # control: the masses in reverse order
    wrong = configuration("clusters", masses=masses[::-1]).reduce(s).solve(TIMES, start,
                                                                          beta=beta)
    assert np.abs(wrong[:, :3] - measured).max() > 1e-4


def test_three_cluster_saddle_rate_of_post_ln_is_the_hand_typed_formula():
    from symdyn.reduced.merge import saddle_rate
    from symdyn.studies.metastability import three_cluster_rate
    lam = sp.lambdify(sd.symbols.beta, saddle_rate("post-ln"))
    for beta in (0.5, 2.0, 8.0, 20.0):
        assert abs(lam(beta) / three_cluster_rate(beta) - 1) < 1e-10
    # control: the formula at a beta off by 1% misses
    assert abs(lam(2.0) / three_cluster_rate(2.02) - 1) > 1e-3


@pytest.mark.parametrize("name", ["post-ln", "ngpt", "sqrt-scaling"])
def test_saddle_rate_against_the_direct_field(name):
    # d c_12/dt of the n-token field (numpy, tests/direct.py) at the in-plane
    # perturbation phi_2 = 2 pi/3 + delta, divided by c_12 + 1/2, is the rate
    from symdyn.reduced.merge import saddle_rate
    s, beta, time, per = sd.scheme(name), 1.3, 0.5, 2
    lam = float(saddle_rate(name).subs({sd.symbols.beta: beta, sd.symbols.t: time,
                                        sd.symbols.n: 3 * per}))

    def c12_rate(delta):
        phi = np.array([0, 2 * np.pi / 3 + delta, 4 * np.pi / 3])
        theta = np.repeat(np.stack([np.cos(phi), np.sin(phi), 0 * phi], 1), per, axis=0)
        v, _ = field(s, theta, np.ones(3 * per), time, beta)
        return v[0] @ theta[per] + theta[0] @ v[per], theta[0] @ theta[per] + 0.5
    (up, cu), (down, cd) = c12_rate(1e-5), c12_rate(-1e-5)
    measured = (up - down) / (cu - cd)
    assert abs(measured / lam - 1) < 1e-6
    assert lam > 0
    # control: the rate at another beta misses
    other = float(saddle_rate(name).subs({sd.symbols.beta: beta + 0.5, sd.symbols.t: time,
                                          sd.symbols.n: 3 * per}))
    assert abs(measured / other - 1) > 1e-2
