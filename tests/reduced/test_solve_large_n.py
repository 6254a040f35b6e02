"""sd.solve at large n and n = inf keeps full float precision (issue 45, item 3).

gamma = 1 - epsilon is read from u = log(epsilon) as -expm1(u) (never as
1 - exp(u), which loses gamma's digits where it is tiny and n multiplies it),
u's tolerance follows gamma's scale 1/n, members from n = 1e100 on are solved
in 1/n (no n**2 overflows) and n = inf is the n -> inf limit. Checked against
dps=50 (the same derivation in mpmath) and against closed forms that share
no code with the solver.
"""

import mpmath
import numpy as np
import pytest

import symdyn as sd
import symdyn.reduced.compile as compiled
import symdyn.reduced.problem as problem
import symdyn.reduced.solver as solver

NS = [1e10, 1e13, 1e20, 1e100, 1e300]
T = [1.0, 10.0]
INF = float("inf")


def _relative(fast, exact):
    """max |fast/exact - 1| over the entries (mpf exact, float fast)."""
    return max(float(abs(mpmath.mpf(float(a)) / b - 1))
               for a, b in zip(np.ravel(fast), np.ravel(exact), strict=True))


# (scheme, gamma0): Peri-LN from gamma0 = 0 leaves 0 on the time scale n^-1/2
# (below the float's resolution from n ~ 1e28: test_unresolved_time_scale_names_dps)
CASES = [("post-ln", 0.0), ("post-ln", 0.5), ("pre-ln", 0.0), ("pre-ln", 0.5),
         ("peri-ln", 0.5)]


@pytest.mark.parametrize("name, gamma0", CASES)
def test_agrees_with_dps_50_up_to_n_1e300(name, gamma0):
    # one batch over n (members grouped by compiled form), each against mpmath
    fast = sd.solve(name, n=NS, beta=1.0, gamma0=gamma0, t=T)
    exact = sd.solve(name, n=NS, beta=1.0, gamma0=gamma0, t=T, dps=50)
    for i, n in enumerate(NS):
        assert _relative(fast.gamma[i], exact.gamma[i]) < 1e-9, n
        assert _relative(fast.epsilon[i], exact.epsilon[i]) < 1e-9, n
        assert _relative(fast.gamma_dot[i], exact.gamma_dot[i]) < 1e-8, n
    if gamma0 == 0:            # the scale that 1 - exp(u) could not hold
        assert float(exact.gamma[-1, 0]) < 1e-299 and fast.gamma[-1, 0] > 0


def _post_ln_beta0(n, gamma0, t, dps=60):
    """Post-LN at beta = 0: (1 + (n-1) gamma)/(1 - gamma) = C e^{2t}, solved for
    gamma and epsilon at ``dps`` digits."""
    with mpmath.workdps(dps):
        n, g0 = mpmath.mpf(n), mpmath.mpf(gamma0)
        C = (1 + (n - 1) * g0) / (1 - g0)
        out = []
        for x in t:
            k = C * mpmath.exp(2 * mpmath.mpf(x))
            out.append(((k - 1) / (n - 1 + k), n / (n - 1 + k)))
        return out


@pytest.mark.parametrize("gamma0", [0.0, 0.5])
@pytest.mark.parametrize("n", [1e13, 1e20, 1e300])
def test_post_ln_closed_form_at_beta_0(n, gamma0):
    tr = sd.solve("post-ln", n=n, beta=0.0, gamma0=gamma0, t=T)
    for k, (g, e) in enumerate(_post_ln_beta0(n, gamma0, T)):
        assert _relative(tr.gamma[k], g) < 1e-9
        assert _relative(tr.epsilon[k], e) < 1e-9


def test_dps_path_keeps_tiny_gamma():
    # the mpmath path integrates u at its own scale: gamma ~ 1e-300 keeps its digits
    tr = sd.solve("post-ln", n=1e300, beta=0.0, gamma0=0.0, t=T, dps=30)
    for k, (g, _) in enumerate(_post_ln_beta0(1e300, 0.0, T)):
        assert abs(tr.gamma[k] / g - 1) < 1e-25


def test_negative_control_the_old_gamma_misses_at_n_1e13(monkeypatch):
    # G = 1 - exp(u) (and the tolerance that held u to 1e-18 absolute): 1e-4 off
    def old_atol(eps0, n, rtol):
        delta0 = np.abs(n - (n - 1) * eps0)
        return rtol * np.clip(delta0 / np.maximum((n - 1) * eps0, 1e-300), 1e-7, 1.0)
    old = lambda u: 1 - np.exp(u)               # noqa: E731
    monkeypatch.setattr(problem, "u_atol", old_atol)
    monkeypatch.setattr(problem, "gamma_of", old)
    monkeypatch.setattr(solver, "gamma_of", old)
    kw = dict(n=1e13, beta=1.0, gamma0=0.0, t=T)
    exact = sd.solve("post-ln", dps=50, **kw)
    assert _relative(sd.solve("post-ln", **kw).gamma, exact.gamma) > 1e-6


def test_negative_control_the_old_tolerance_misses_at_n_1e20(monkeypatch):
    def old_atol(eps0, n, rtol):
        delta0 = np.abs(n - (n - 1) * eps0)
        return rtol * np.clip(delta0 / np.maximum((n - 1) * eps0, 1e-300), 1e-7, 1.0)
    monkeypatch.setattr(problem, "u_atol", old_atol)
    tr = sd.solve("post-ln", n=1e20, beta=0.0, gamma0=0.0, t=T)
    assert _relative(tr.gamma, [g for g, _ in _post_ln_beta0(1e20, 0.0, T)]) > 1e-6


def test_negative_control_without_the_1_over_n_form_peri_ln_stalls(monkeypatch):
    # in n (the form "gamma") |A_k|^2 holds n**2 gamma: it overflows at n = 1e300
    monkeypatch.setattr(compiled, "LARGE_N", INF)
    with np.errstate(all="ignore"):
        tr = sd.solve("peri-ln", n=1e300, beta=1.0, gamma0=0.5, t=T)
    assert tr.gamma[-1] < 0.9          # the truth: 0.9957


def test_gamma0_zero_is_not_held_as_the_simplex_at_large_n():
    # 1 + (n-1) gamma0 = 1 is not within rounding of 0, whatever n
    tr = sd.solve("post-ln", n=1e15, beta=1.0, gamma0=0.0, t=T)
    assert tr.gamma[0] > 6e-15


# --------------------------------------------------------------------------
# n = inf: the long-context limit
# --------------------------------------------------------------------------

def test_n_inf_is_the_logistic_limit_of_post_ln():
    # n -> inf: u' = -2 gamma, so gamma' = 2 gamma (1 - gamma) whatever beta
    g0, t = 0.3, np.array(T)
    tr = sd.solve("post-ln", n=INF, beta=[0.0, 1.0, 50.0], gamma0=g0, t=t)
    with mpmath.workdps(40):
        for k, x in enumerate(t):
            grow = mpmath.exp(2 * mpmath.mpf(x))
            den = 1 - mpmath.mpf(g0) + g0 * grow
            assert _relative(tr.gamma[:, k], [g0 * grow / den] * 3) < 1e-10
            assert _relative(tr.epsilon[:, k], [(1 - mpmath.mpf(g0)) / den] * 3) < 1e-9


@pytest.mark.parametrize("name", ["post-ln", "pre-ln", "peri-ln"])
def test_n_inf_agrees_with_dps_and_with_n_1e300(name):
    kw = dict(beta=1.0, gamma0=0.5, t=T)
    limit = sd.solve(name, n=INF, **kw)
    exact = sd.solve(name, n=INF, dps=50, **kw)
    assert _relative(limit.gamma, exact.gamma) < 1e-9
    assert _relative(limit.epsilon, exact.epsilon) < 1e-9
    near = sd.solve(name, n=1e300, **kw)
    assert np.allclose(near.log_epsilon, limit.log_epsilon, rtol=1e-12, atol=0)


def test_n_inf_from_gamma0_zero_stays_where_the_limit_is_lipschitz():
    # Post-LN: gamma ~ (e^{2t} - 1)/n -> 0
    tr = sd.solve("post-ln", n=INF, beta=1.0, gamma0=0.0, t=T)
    assert np.all(tr.gamma == 0) and np.all(tr.epsilon == 1)


def test_a_batch_mixes_forms_and_each_member_is_its_own():
    ns = [8.0, 1e20, 1e200, INF]
    batch = sd.solve("pre-ln", n=ns, beta=1.0, gamma0=0.5, t=T)
    for i, n in enumerate(ns):
        one = sd.solve("pre-ln", n=n, beta=1.0, gamma0=0.5, t=T)
        assert np.array_equal(one.log_epsilon, batch.log_epsilon[i]), n
        assert np.array_equal(one.r, batch.r[i]), n


def test_large_n_form_is_the_gamma_form_where_both_hold(monkeypatch):
    kw = dict(n=1e50, beta=1.0, gamma0=0.25, t=T)
    default = sd.solve("peri-ln", **kw)
    monkeypatch.setattr(compiled, "LARGE_N", 1e10)
    assert np.allclose(sd.solve("peri-ln", **kw).log_epsilon, default.log_epsilon,
                       rtol=1e-12, atol=0)


@pytest.mark.parametrize("kwargs, culprit", [
    (dict(scheme="peri-ln", gamma0=0.0), r"n, gamma0: .*not Lipschitz at gamma = 0"),
    (dict(scheme="post-ln", gamma0=0.5, sensitivities=True), r"n, sensitivities: "),
])
def test_n_inf_refusals(kwargs, culprit):
    with pytest.raises(ValueError, match=culprit):
        sd.solve(n=INF, beta=1.0, t=T, **kwargs)


def test_sensitivities_below_1e100_only():
    with pytest.raises(ValueError, match=r"n, sensitivities: .*below 1e\+100"):
        sd.solve("post-ln", n=1e200, beta=1.0, gamma0=0.5, t=T, sensitivities=True)


def test_gamma0_zero_is_refused_only_at_n_inf():
    tr = sd.solve("peri-ln", n=[8.0, INF], beta=1.0, gamma0=[0.0, 0.5], t=T)
    assert np.all(tr.gamma > 0.5)


def test_n_inf_without_a_limit_names_n_and_dps():
    s = sd.custom_scheme("grows", speed="n*A_norm")
    with pytest.raises(ValueError, match=r"^n: .*no finite limit.*dps="):
        sd.solve(s, n=INF, beta=1.0, gamma0=0.5, t=T)


def test_unresolved_time_scale_names_dps():
    # Peri-LN from gamma0 = 0 leaves 0 within ~n^-1/2: below a float step at n = 1e40
    with pytest.raises(ValueError, match=r"^n: .*n = 1e\+40.*dps="):
        sd.solve("peri-ln", n=1e40, beta=1.0, gamma0=0.0, t=T)


def test_other_entry_points_still_refuse_infinite_n():
    with pytest.raises(ValueError, match=r"n must be finite"):
        sd.crossing_time("post-ln", 0.9, n=INF, beta=1.0, gamma0=0.5)
    with pytest.raises(ValueError, match=r"n must be finite or \+inf"):
        sd.solve("post-ln", n=float("nan"), beta=1.0, gamma0=0.5, t=T)
