"""Test oracles: the n-particle vector field evaluated directly with numpy.

Nothing here uses the symbolic reduction; only the scheme's own laws
(speed, radial, temperature: the things every path shares by design) are
read, through sympy.lambdify. The attention runs at beta * tau(t); the laws
get the plain beta. ``causal=True`` masks it: token k sees j <= k (softmax
over those; the unnormalized kernel divides by their number, k + 1 from 0).
"""

from __future__ import annotations

import numpy as np
import sympy as sp

from symdyn.model.symbols import A_norm, a, beta, n, r, t


def equiangular(n_tokens: int, gamma0: float) -> np.ndarray:
    """Unit vectors (rows) in R^n with pairwise inner products gamma0."""
    G = (1 - gamma0) * np.eye(n_tokens) + gamma0 * np.ones((n_tokens, n_tokens))
    w, V = np.linalg.eigh(G)
    X = V * np.sqrt(np.clip(w, 0, None))
    return X / np.linalg.norm(X, axis=1, keepdims=True)


def laws(scheme):
    """Numeric speed and radial rate of a scheme: f(t, r, a, A_norm, n, beta)."""
    args = (t, r, a, A_norm, n, beta)
    speed = sp.lambdify(args, scheme.speed, "numpy")
    radial = sp.lambdify(args, scheme.radial, "numpy")
    return speed, radial


def parts(scheme, theta, radius, time, beta_value, attention="softmax", causal=False):
    """Attention A_k, speed s_k and radial rate of every token (docs/model.md, section 1)."""
    speed, radial = laws(scheme)
    tau = float(sp.lambdify(t, scheme.temperature, "numpy")(time))
    k = len(theta)
    scores = beta_value * tau * theta @ theta.T
    seen = np.tril(np.ones((k, k))) if causal else np.ones((k, k))
    if attention == "softmax":
        w = np.zeros((k, k))
        for i in range(k):          # row by row, over the tokens row i sees
            row = scores[i, seen[i] > 0]
            w[i, seen[i] > 0] = np.exp(row - row.max())
        A = (w @ theta) / w.sum(axis=1, keepdims=True)
    else:
        A = ((np.exp(scores) * seen) @ theta) / seen.sum(axis=1, keepdims=True)
    a_k = np.einsum("kd,kd->k", A, theta)
    norm = np.linalg.norm(A, axis=1)
    s = np.broadcast_to(speed(time, radius, a_k, norm, k, beta_value), (k,))
    rho = np.broadcast_to(radial(time, radius, a_k, norm, k, beta_value), (k,))
    return A, a_k, s, np.asarray(rho, dtype=float)


def field(scheme, theta, radius, time, beta_value, attention="softmax", causal=False):
    """(d theta/dt, dr/dt) of every token: d theta/dt = P_theta A / s."""
    A, a_k, s, rho = parts(scheme, theta, radius, time, beta_value, attention, causal)
    return (A - a_k[:, None] * theta) / s[:, None], rho


def rk4_step(scheme, theta, radius, time, h, beta_value, attention="softmax", causal=False):
    """One classical Runge-Kutta step of the direct (theta, r) system."""
    def f(th, rr, tt):
        return field(scheme, th, rr, tt, beta_value, attention, causal)
    k1 = f(theta, radius, time)
    k2 = f(theta + h / 2 * k1[0], radius + h / 2 * k1[1], time + h / 2)
    k3 = f(theta + h / 2 * k2[0], radius + h / 2 * k2[1], time + h / 2)
    k4 = f(theta + h * k3[0], radius + h * k3[1], time + h)
    theta = theta + h / 6 * (k1[0] + 2 * k2[0] + 2 * k3[0] + k4[0])
    radius = radius + h / 6 * (k1[1] + 2 * k2[1] + 2 * k3[1] + k4[1])
    return theta, radius


def mean_cosine(theta: np.ndarray) -> float:
    """Mean over pairs i != j of <theta_i, theta_j>."""
    k = len(theta)
    G = theta @ theta.T
    return float((G.sum() - np.trace(G)) / (k * (k - 1)))
