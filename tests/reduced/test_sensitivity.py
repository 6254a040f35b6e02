"""Forward sensitivities d gamma / d q, derived by sympy and integrated with
the reduced ODE, against central finite differences and mpmath."""

import numpy as np
import pytest

import symdyn as sd
import symdyn.reduced.problem as problem_module
from symdyn.reduced import variational

T = [0.5, 2.0, 5.0]


def damped():
    return sd.custom_scheme("damped", speed="A_norm/(1 + c*t)", params={"c": 0.5})


def ngpt_affine():
    return sd.scheme("ngpt", alpha="a0 + a1*t", params={"a0": 1, "a1": 0.5})


CASES = [  # scheme, base values, parameters
    (damped, dict(n=8, beta=1.0, gamma0=0.0, c=0.5), ["c", "beta", "gamma0"]),
    (damped, dict(n=32, beta=3.0, gamma0=0.3, c=2.0), ["c", "beta", "n"]),
    (ngpt_affine, dict(n=8, beta=1.0, gamma0=-0.1, a0=1.0, a1=0.5), ["a0", "a1", "beta"]),
    (lambda: "pre-ln", dict(n=8, beta=1.0, gamma0=0.2, r0=2.0), ["r0", "n", "gamma0"]),
    (lambda: "mix-ln", dict(n=16, beta=2.0, gamma0=0.0), ["beta", "gamma0"]),
    (lambda: "peri-ln", dict(n=8, beta=0.5, gamma0=0.5, r0=0.5), ["beta", "r0"]),
]


MODEL = ("n", "beta", "gamma0", "r0")


def solve(scheme, values, **options):
    """sd.solve with ``values`` split into the model's arguments and params=."""
    model = {k: v for k, v in values.items() if k in MODEL}
    params = {k: v for k, v in values.items() if k not in MODEL}
    return sd.solve(scheme, **model, params=params, **options)


def central_difference(scheme, values, q, h):
    """d gamma/dq = -epsilon d log(epsilon)/dq, the latter by central
    differences of the solver's log epsilon (gamma itself rounds near 1)."""
    up, down = dict(values), dict(values)
    up[q] += h
    down[q] -= h
    u = [solve(scheme, v, t=T, rtol=1e-13).log_epsilon for v in (up, down)]
    eps = solve(scheme, values, t=T, rtol=1e-13).epsilon
    return -eps * (u[0] - u[1]) / (2 * h)


def relative(a, b):
    return np.abs(a - b) / np.abs(b)


@pytest.mark.parametrize("make, values, wrt", CASES)
def test_sensitivities_match_finite_differences(make, values, wrt):
    scheme = make()
    tr = solve(scheme, values, t=T, sensitivities=wrt)
    assert set(tr.sensitivities) == set(wrt)
    for q in wrt:
        fd = central_difference(scheme, values, q, 1e-4 * max(1.0, abs(values[q])))
        assert relative(tr.sensitivities[q], fd).max() < 1e-6, q


@pytest.mark.parametrize("make, values, wrt", [CASES[0], CASES[2], CASES[3]])
def test_sensitivities_match_mpmath(make, values, wrt):
    scheme = make()
    tr = solve(scheme, values, t=T[:2], sensitivities=wrt)
    hp = solve(scheme, values, t=T[:2], sensitivities=wrt, dps=20)
    for q in wrt:
        exact = np.array(hp.sensitivities[q], dtype=float)
        assert relative(tr.sensitivities[q], exact).max() < 1e-9, q


def test_sensitivities_batch_like_gamma():
    fam = damped()
    tr = sd.solve(fam, n=[8, 64], beta=1.0, gamma0=0.0, t=T, params={"c": [[0.0], [1.0]]},
                  sensitivities=True)
    assert tr.sensitivities.keys() == {"c", "beta", "gamma0"}
    assert all(v.shape == (2, 2, 3) for v in tr.sensitivities.values())
    # the same state (all three sensitivities ride along and enter the error
    # norm), so the same steps: a member does not depend on its batch
    one = sd.solve(fam, n=64, beta=1.0, gamma0=0.0, t=T, params={"c": 1.0}, sensitivities=True)
    assert relative(tr.sensitivities["c"][1, 1], one.sensitivities["c"]).max() < 1e-12


def test_cluster_start_has_zero_sensitivity():
    tr = sd.solve("post-ln", n=8, beta=1.0, gamma0=[1.0, 0.0], t=T, sensitivities=["beta"])
    assert np.all(tr.sensitivities["beta"][0] == 0) and np.all(tr.sensitivities["beta"][1] != 0)


def test_bad_sensitivity_names():
    with pytest.raises(ValueError, match="wrt"):
        sd.solve(damped(), n=8, beta=1.0, gamma0=0.0, t=T, sensitivities=["k"])
    with pytest.raises(ValueError, match="wrt"):
        sd.solve("post-ln", n=8, beta=1.0, gamma0=0.0, t=T, sensitivities=["beta", "beta"])


def test_negative_control_a_wrong_system_fails_the_check(monkeypatch):
    """Drop the Jacobian term of the sensitivity equation: the check must fail."""
    def forcing_only(values, sigma):
        return [(values[4 + 2 * i], values[5 + 2 * i]) for i in range(len(sigma))]

    monkeypatch.setattr(problem_module, "rates", forcing_only)
    scheme, values = damped(), dict(n=8, beta=1.0, gamma0=0.0, c=0.5)
    tr = solve(scheme, values, t=T, sensitivities=["c"])
    fd = central_difference(scheme, values, "c", 1e-4)
    assert relative(tr.sensitivities["c"], fd).max() > 1e-3
    assert variational.rates is not forcing_only
