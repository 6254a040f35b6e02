"""The reduction against published formulas and against the direct field."""

import mpmath
import numpy as np
import pytest
import sympy as sp
from direct import equiangular, field, parts
from hypothesis import given
from hypothesis import strategies as st

import symdyn as sd
from symdyn.model.symbols import beta, gamma, n, r, t

# --- published formulas (docs/model.md, section 4), as oracles ----------------------------

POST_LN_SOFTMAX = (2 * sp.exp(beta * gamma) * (1 - gamma) * (1 + (n - 1) * gamma)
                   / (sp.exp(beta) + (n - 1) * sp.exp(beta * gamma)))
POST_LN_UNNORMALIZED = 2 / n * sp.exp(beta * gamma) * (1 - gamma) * (1 + (n - 1) * gamma)


@pytest.mark.parametrize("attention, published", [
    ("softmax", POST_LN_SOFTMAX), ("unnormalized", POST_LN_UNNORMALIZED)])
def test_post_ln_matches_published(attention, published):
    red = sd.reduce("post-ln", attention)
    assert sp.simplify(red.gamma_dot - published) == 0
    assert red.r_dot == 0


def test_negative_control_published_formula_distinguishes_kernels():
    red = sd.reduce("post-ln", "unnormalized")
    assert sp.simplify(red.gamma_dot - POST_LN_SOFTMAX) != 0


def test_pre_ln_is_post_ln_slowed_by_r():
    red = sd.reduce("pre-ln")
    assert sp.simplify(red.gamma_dot - POST_LN_SOFTMAX / r) == 0


def test_beta_as_expression_in_n():
    c = sp.Symbol("c", positive=True)
    red = sd.reduce("post-ln", beta=c * sp.log(n))
    expected = POST_LN_SOFTMAX.subs(beta, c * sp.log(n))
    assert sp.simplify(red.gamma_dot - expected) == 0
    assert not red.gamma_dot.has(beta)


def test_two_tokens():
    # n = 2: d gamma/dt = 2 e^{beta gamma}(1 - gamma^2)/(e^beta + e^{beta gamma})
    red = sd.reduce("post-ln")
    two = (2 * sp.exp(beta * gamma) * (1 - gamma**2)
           / (sp.exp(beta) + sp.exp(beta * gamma)))
    assert sp.simplify(red.gamma_dot.subs(n, 2) - two) == 0


def test_unknown_attention():
    with pytest.raises(ValueError, match="attention"):
        sd.reduce("post-ln", attention="linear")


# --- hypothesis: the reduction against the direct n-particle field ---------

SPEED_ATOMS = ["1", "r", "A_norm", "sqrt(1 + t)", "(1 + t)", "exp(a)", "(2 + a)",
               "A_norm^2", "(1 + beta/n)", "r^2"]
RADIAL_RATES = [None, "a", "a/A_norm", "r*a", "A_norm", "a*exp(-t)", "0",
                "1/(r + t)"]


@st.composite
def schemes(draw):
    if draw(st.booleans()):
        name = draw(st.sampled_from(sd.schemes()))
        if name == "ngpt":
            alpha = draw(st.sampled_from(["1", "1 + t", "sqrt(1 + t)", "2 + sin(4*t)"]))
            return sd.scheme(name, alpha=alpha)
        if name == "mix-ln":
            return sd.scheme(name, t_switch=draw(st.sampled_from([0.0, 0.5, 2.0])))
        return sd.scheme(name)
    atoms = draw(st.lists(st.sampled_from(SPEED_ATOMS), min_size=1, max_size=3))
    return sd.custom_scheme("random", "*".join(atoms),
                            draw(st.sampled_from(RADIAL_RATES)))


@st.composite
def starts(draw):
    k = draw(st.integers(2, 10))
    g0 = draw(st.floats(-1 / (k - 1), 1.0))
    return (k, g0, draw(st.floats(0.05, 10.0)), draw(st.floats(0.01, 20.0)),
            draw(st.floats(0.0, 5.0)))


def _reference(expr, values):
    """High-precision value of a derived expression (mpmath, 30 digits)."""
    f = sp.lambdify(tuple(values), expr, "mpmath")
    with mpmath.workdps(30):
        return float(f(*[mpmath.mpf(v) for v in values.values()]))


@given(schemes(), starts(), st.sampled_from(["softmax", "unnormalized"]))
def test_reduction_matches_direct_field(scheme, start, attention):
    k, g0, r0, b, time = start
    theta = equiangular(k, g0)
    radius = np.full(k, r0)
    theta_dot, r_dot = field(scheme, theta, radius, time, b, attention)
    gd_direct = theta_dot[0] @ theta[1] + theta[0] @ theta_dot[1]
    speed_direct = np.linalg.norm(theta_dot[0])

    red = sd.reduce(scheme, attention)
    values = {gamma: theta[0] @ theta[1], r: r0, t: time, n: k, beta: b}
    gd = _reference(red.gamma_dot, values)
    rd = _reference(red.r_dot, values)
    ts2 = _reference(red.token_speed**2, values)   # smooth; may round below 0
    # Floating-point floor of the direct evaluation: 1e-13 of the size of the
    # terms it subtracts: |A_k| / s_k (they cancel near gamma = 1), and the
    # summands w_kj theta_j of A_k, of total size sum_j w_kj (they cancel at
    # the regular simplex, where A_k itself is O(beta)).
    A, _, s, _ = parts(scheme, theta, radius, time, b, attention)
    scores = b * theta @ theta.T
    summands = 1.0 if attention == "softmax" else np.exp(scores).sum(axis=1) / k
    scale = np.max(np.maximum(np.linalg.norm(A, axis=1), summands) / s)
    assert abs(gd - gd_direct) <= 1e-10 * abs(gd) + 1e-13 * scale
    # The speed is sqrt of a smooth function of gamma; compare its square,
    # which (unlike the root at gamma = 1) is Lipschitz in the rounding.
    assert abs(ts2 - speed_direct**2) <= 1e-10 * abs(ts2) + 1e-13 * scale**2
    assert np.allclose(r_dot, rd, rtol=1e-10, atol=1e-14)


def test_direct_field_negative_control():
    # A wrong reduction (Post-LN formula for Pre-LN at r = 2) must be caught.
    k, g0, r0, b = 5, 0.2, 2.0, 1.5
    theta = equiangular(k, g0)
    theta_dot, _ = field(sd.scheme("pre-ln"), theta, np.full(k, r0), 0.0, b)
    gd_direct = theta_dot[0] @ theta[1] + theta[0] @ theta_dot[1]
    wrong = _reference(sd.reduce("post-ln").gamma_dot,
                       {gamma: g0, r: r0, t: 0.0, n: k, beta: b})
    assert abs(wrong - gd_direct) > 1e-3 * abs(gd_direct)
