"""The causal mask (``mask="causal"``) against closed subsystems and a direct field.

Under the mask token k sees only tokens j <= k, so tokens 1..k form a closed
system for every k. Witnesses (docs/model.md, section 6): token 1 attends to
itself alone, so its direction never moves; the pair (1, 2) is a
one-dimensional ODE for u = <theta_1, theta_2> (with r_2 for a radial scheme),
solved here by scipy's solve_ivp, and for Post-LN in closed form through the
exponential integral Ei. Each with a negative control (full attention).
"""

import numpy as np
import pytest
from direct import field as direct_field
from direct import laws
from scipy.integrate import solve_ivp
from scipy.optimize import brentq
from scipy.special import expi

import symdyn as sd


def _units(X):
    return X / np.linalg.norm(X, axis=-1, keepdims=True)


def _cosines12(sim):
    th = _units(sim.X)
    return np.einsum("...d,...d->...", th[..., 0, :], th[..., 1, :])


def pair_ode(scheme, beta, n, u0, r2_0, t, attention="softmax"):
    """u = <theta_1, theta_2> and r_2 of the causal pair by solve_ivp (the
    scheme's laws read through direct.laws; token 2 sees theta_1 and itself)."""
    s = sd.scheme(scheme) if isinstance(scheme, str) else scheme
    speed, radial = laws(s)
    tau = (lambda x: 1.0 / (1.0 + x)) if s.name == "ln-scaling" else (lambda x: 1.0)
    assert s.name != "ln-scaling" or str(s.temperature) == "1/(t + 1)"

    def rhs(tt, y):
        u, r2 = y
        b = beta * tau(tt)
        e1, e2 = np.exp(b * u), np.exp(b)
        Z = e1 + e2 if attention == "softmax" else 2.0
        a2 = (u * e1 + e2) / Z
        norm = np.sqrt(e1**2 + e2**2 + 2 * u * e1 * e2) / Z
        sk = float(speed(tt, r2, a2, norm, n, beta))
        rho = float(radial(tt, r2, a2, norm, n, beta))
        return [e1 * (1 - u * u) / (Z * sk), rho]
    sol = solve_ivp(rhs, (0, t[-1]), [u0, r2_0], t_eval=t, rtol=1e-12, atol=1e-13,
                    method="DOP853")
    return sol.y[0], sol.y[1]


def post_ln_pair(beta, u0, t, attention="softmax"):
    """Post-LN's causal pair in closed form: t = F(u) - F(u0) with
    softmax: F = atanh u + (e^{2b} Ei(-b(1+u)) - Ei(b(1-u)))/2,
    unnormalized: F = e^{b} Ei(-b(1+u)) - e^{-b} Ei(b(1-u))."""
    b = beta
    if attention == "softmax":
        def F(u):
            return np.arctanh(u) + 0.5 * (np.exp(2 * b) * expi(-b * (1 + u)) - expi(b * (1 - u)))
    else:
        def F(u):
            return np.exp(b) * expi(-b * (1 + u)) - np.exp(-b) * expi(b * (1 - u))
    return np.array([brentq(lambda u, tt=tt: F(u) - F(u0) - tt, u0, 1 - 1e-15, xtol=1e-15)
                     if tt > 0 else u0 for tt in t])


def _start(n, d, seed, scale=None):
    X = sd.init.sphere(n, d, seed=seed)
    if scale is not None:
        X = X * scale
    return X


# --- token 1 -------------------------------------------------------------------

@pytest.mark.parametrize("scheme", ["post-ln", "pre-ln", "peri-ln", "ngpt", "ln-scaling"])
@pytest.mark.parametrize("step", [None, 0.05])
def test_token_one_stands_still(scheme, step):
    X0 = _start(6, 3, 2, scale=np.linspace(0.6, 1.4, 6)[:, None])
    t = [0.0, 1.0, 4.0]
    sim = sd.simulate(scheme, X0, 2.0, t, step=step, mask="causal", save_x=True)
    th = _units(sim.X)
    assert np.abs(th[:, 0] - th[0, 0]).max() < 1e-12
    # its norm by its own law: a = |A| = 1 (softmax, token 1 sees itself)
    if scheme == "pre-ln" and step is None:
        assert np.allclose(sim.r[0], 0.6 + np.array(t), rtol=1e-9)
    full = sd.simulate(scheme, X0, 2.0, t, step=step, save_x=True)      # control
    assert np.abs(_units(full.X)[:, 0] - th[0, 0]).max() > 1e-2


# --- the pair (1, 2) -------------------------------------------------------------

@pytest.mark.parametrize("attention", ["softmax", "unnormalized"])
def test_post_ln_pair_closed_form(attention):
    X0 = _start(5, 3, 7)        # tokens 3..5 must not matter
    t = np.array([0.0, 0.5, 1.0, 2.0, 3.0])
    beta = 3.0 if attention == "softmax" else 1.0       # (1 - u stays above 1e-6)
    sim = sd.simulate("post-ln", X0, beta, t, mask="causal", save_x=True, attention=attention)
    u = _cosines12(sim)
    exact = post_ln_pair(beta, u[0], t, attention)
    assert np.abs(u - exact).max() < 1e-8
    full = sd.simulate("post-ln", X0, beta, t, save_x=True, attention=attention)
    assert np.abs(_cosines12(full) - exact).max() > 1e-2     # control: full attention


@pytest.mark.parametrize("scheme", ["pre-ln", "peri-ln", "ngpt", "sqrt-scaling",
                                    "ln-scaling"])
def test_pair_ode_by_solve_ivp(scheme):
    n = 4
    X0 = _start(n, 3, 11, scale=np.array([[0.8], [1.3], [1.0], [0.7]]))
    t = np.linspace(0.0, 3.0, 7)
    sim = sd.simulate(scheme, X0, 2.0, t, mask="causal", save_x=True)
    u = _cosines12(sim)
    r2_0 = 1.0 if sd.scheme(scheme).starts_on_sphere else 1.3
    u_ode, r2_ode = pair_ode(scheme, 2.0, n, u[0], r2_0, t)
    assert np.abs(u - u_ode).max() < 1e-8
    assert np.allclose(sim.r[1], r2_ode, rtol=1e-8)
    wrong = pair_ode("post-ln" if scheme != "post-ln" else "pre-ln", 2.0, n, u[0], r2_0, t)
    assert np.abs(u - wrong[0]).max() > 1e-3               # control: another scheme's law


def test_pair_in_layers_converges_at_first_order():
    X0 = _start(4, 3, 5)
    t = np.array([0.0, 2.0])
    exact = post_ln_pair(2.0, float(_units(X0)[0] @ _units(X0)[1]), t)[-1]
    errors = [abs(_cosines12(sd.simulate("post-ln", X0, 2.0, t, step=h, mask="causal",
                                         save_x=True))[-1] - exact) for h in (0.02, 0.01)]
    assert 1.8 < errors[0] / errors[1] < 2.2
    full = sd.simulate("post-ln", X0, 2.0, t, step=0.01, save_x=True)
    assert abs(_cosines12(full)[-1] - exact) > 50 * errors[1]


# --- the whole masked field against the direct numpy field -------------------------

@pytest.mark.parametrize("scheme,attention", [("post-ln", "softmax"), ("peri-ln", "softmax"),
                                              ("pre-ln", "unnormalized")])
def test_masked_field_matches_direct(scheme, attention):
    n, d, beta, h = 5, 3, 1.5, 1e-3
    X0 = _start(n, d, 3, scale=np.linspace(0.7, 1.2, n)[:, None])
    s = sd.scheme(scheme)
    sim = sd.simulate(scheme, X0, beta, [0.0, h], mask="causal", save_x=True,
                      attention=attention, rtol=1e-13, atol=1e-15)
    th0 = _units(sim.X[0])
    r0 = np.linalg.norm(sim.X[0], axis=-1)
    v_sim = (_units(sim.X[1]) - th0) / h
    v, _ = direct_field(s, th0, r0, 0.0, beta, attention, causal=True)
    assert np.abs(v_sim - v).max() < 5e-3 * np.abs(v).max()
    v_full, _ = direct_field(s, th0, r0, 0.0, beta, attention, causal=False)
    assert np.abs(v_sim - v_full).max() > 0.1 * np.abs(v).max()     # control


def test_masked_heads_match_a_loop():
    """Random weights and two heads: the masked attention against a plain loop."""
    from symdyn.particles.attention import attention
    rng = np.random.default_rng(0)
    m, n, d, H = 2, 5, 3, 2
    Y = rng.normal(size=(m, n, d))
    Q, K, V = (rng.normal(size=(H, d, d)) / np.sqrt(d) for _ in range(3))
    got = attention(Y, np.array([1.3, 0.4]), (Q, K, V), "softmax", causal=True)
    want = np.zeros_like(Y)
    for b, beta in enumerate((1.3, 0.4)):
        for k in range(n):
            for hh in range(H):
                sc = np.array([beta * (Q[hh] @ Y[b, k]) @ (K[hh] @ Y[b, j])
                               for j in range(k + 1)])
                w = np.exp(sc - sc.max())
                want[b, k] += sum(w[j] * V[hh] @ Y[b, j] for j in range(k + 1)) / w.sum() / H
    assert np.allclose(got, want, rtol=1e-12, atol=1e-13)
    full = attention(Y, np.array([1.3, 0.4]), (Q, K, V), "softmax")
    assert not np.allclose(full, want, atol=1e-3)


# --- arguments ----------------------------------------------------------------------

def test_bad_mask_and_merge():
    X0 = _start(3, 2, 0)
    with pytest.raises(ValueError, match="mask must be one of 'full', 'causal'"):
        sd.simulate("post-ln", X0, 1.0, [0.0, 1.0], mask="decoder")
    # merging under the mask: schemes on the sphere in the clock t only (causal.py)
    with pytest.raises(ValueError, match="merge: under mask='causal'"):
        sd.simulate("pre-ln", X0, 1.0, [0.0, 1.0], mask="causal", merge=1e-8)
    with pytest.raises(ValueError, match="merge: under mask='causal'"):
        sd.simulate("post-ln", X0, 1.0, [0.0, 1.0], mask="causal", merge=1e-8, clock="log")
    assert sd.simulate("post-ln", X0, 1.0, [0.0, 1.0], mask="causal", merge=1e-8).nfev > 0


# --- the proofs_check claim -------------------------------------------------------------

def test_causal_collapse_claim_fails_under_full_attention():
    """Control of proofs_check's causal-collapse (its PASS runs in test_proofs_check):
    under full attention the tokens do not converge to x_1(0)."""
    from proofs_check import causal
    res = causal.check(quick=True, mask="full")
    assert res.verdict == "FAIL"
    assert {f.split(":")[0] for f in res.failures} == {"particles", "layers"}
