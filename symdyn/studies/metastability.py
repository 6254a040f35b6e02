r"""Predictions of metastability beside their measurements by the particle simulator
(docs/metastability.md derives each formula).

1. **Clusters from a uniform start on the circle**: the fastest-growing mode
   of the uniform state, ``k*(beta) = argmax_k lambda_k``, ``lambda_k = k^2
   I_k(beta) / (beta I_0(beta))`` (softmax, no noise; :func:`sd.mean_field_rates
   <symdyn.meanfield.stability.mean_field_rates>`); for large beta
   ``I_k/I_0 ~ e^{-k^2/(2 beta)}``, so ``k* ~ sqrt(2 beta)``
   (:func:`fastest_mode`), against the count of the first plateau of a run
   (:func:`first_clusters`).
2. **First merge of k point clusters** (Post-LN, equal masses): two clusters
   at angle ``theta`` close by ``theta' = -2 sin(theta) / (1 + e^{beta (1 - cos
   theta)})``, so the time to reach the cluster threshold is
   :func:`two_cluster_merge_time` and ``log T = beta (1 - cos theta_0) - log
   beta + O(1)``; three equally spaced clusters sit on a saddle left at the
   rate :func:`three_cluster_rate` ``~ (9 beta / 4) e^{-3 beta / 2}``. Both
   slopes of ``log T`` in beta tend to ``1 - cos`` (closest angle).
   Measured by :func:`first_merge_times`.
3. **Rényi centres** of n i.i.d. uniform tokens on the circle:
   :func:`expected_renyi_centres` ``= (1 - (1 - p)^n) / p``, ``p = delta / pi``.

Layer 3, studies.
"""

from __future__ import annotations

import numpy as np
from scipy.integrate import quad

from ..base.checks import integer, number
from ..meanfield.stability import growth_rate, mean_field_rates
from ..particles import clusters
from ..particles.simulation import simulate


def fastest_mode(beta: float) -> int:
    """``k*``: the k >= 1 of the largest linear growth rate of the uniform state on
    the circle (softmax, no noise), searched over ``k <= 4 sqrt(beta) + 8``."""
    b = number(beta, "beta", 0, low_open=True)
    ks = np.arange(1, int(4 * np.sqrt(b)) + 9)
    return int(ks[np.argmax(mean_field_rates(ks, b))])


def fastest_degree(beta: float, d: int = 3) -> int:
    """``l*``: the degree l >= 1 of the largest linear growth rate of the uniform
    law on S^{d-1} (softmax, no noise; :func:`sd.growth_rate
    <symdyn.meanfield.stability.growth_rate>`, the zonal modes' rates),
    searched over ``l <= 4 sqrt(beta) + 8``; ``d = 2`` is :func:`fastest_mode`."""
    b = number(beta, "beta", 0, low_open=True)
    ls = np.arange(1, int(4 * np.sqrt(b)) + 9)
    return int(ls[np.argmax(growth_rate(ls, b, d=integer(d, "d", 2)))])


def pattern_maxima(X0, degree: int, points: int = 8000) -> int:
    """The local maxima of the start's degree-``l`` pattern on S^2, the part of
    the empirical law the linearization amplifies (addition theorem):
    :math:`f(x) = \\sum_i P_l(\\langle x, x_i\\rangle)`, on ``points``
    Fibonacci points, a maximum where ``f`` exceeds its 6 nearest neighbours.
    On the circle the same pattern, :math:`\\sum_i \\cos k(\\phi - \\phi_i)`, has
    exactly ``k`` maxima; on S^2 the count depends on the start."""
    from scipy.spatial import cKDTree
    from scipy.special import eval_legendre
    X0 = clusters.directions(X0)
    if X0.ndim != 2 or X0.shape[1] != 3:
        raise ValueError(f"X0 must have shape (n, 3), got {X0.shape}")
    k = np.arange(points) + 0.5
    z, phi = 1 - 2 * k / points, np.pi * (1 + 5**0.5) * k
    rho = np.sqrt(1 - z * z)
    grid = np.stack([rho * np.cos(phi), rho * np.sin(phi), z], -1)
    f = eval_legendre(integer(degree, "degree", 1), np.clip(grid @ X0.T, -1, 1)).sum(-1)
    near = cKDTree(grid).query(grid, k=7)[1][:, 1:]
    return int(np.count_nonzero(f > f[near].max(axis=1)))


def expected_renyi_centres(n: int, delta: float) -> float:
    """E[# strong Rényi centres] of ``n`` i.i.d. uniform tokens on the circle.

    Token ``i`` (1-based) is one iff none of the ``i - 1`` earlier tokens lies in
    the arc of length ``2 delta`` about it, probability ``(1 - p)^{i-1}``,
    ``p = delta / pi``: the sum is ``(1 - (1 - p)^n) / p`` (``n`` at p = 0)."""
    nn = integer(n, "n", 1)
    p = number(delta, "delta", 0, np.pi) / np.pi
    return float(nn) if p == 0 else float(-np.expm1(nn * np.log1p(-p)) / p) if p < 1 else 1.0


def two_cluster_merge_time(beta: float, theta0: float, threshold: float = clusters.THRESHOLD):
    """Time for two equal point clusters at angle ``theta0`` (Post-LN, softmax,
    any dimension: they stay on their great circle) to come within
    ``arccos(threshold)``: :math:`T = \\int_{\\theta_c}^{\\theta_0}
    \\frac{1 + e^{\\beta(1-\\cos\\theta)}}{2\\sin\\theta}\\,d\\theta`: the equal-mass
    Post-LN case of :func:`sd.merge_time <symdyn.reduced.merge.merge_time>`, derived per
    scheme and masses (tests/reduced/test_configurations.py checks that they agree)."""
    b = number(beta, "beta", 0)
    th0 = number(theta0, "theta0", 0, np.pi, high_open=True)
    tc = float(np.arccos(number(threshold, "threshold", -1, 1)))
    if th0 <= tc:
        return 0.0

    def f(x):
        return (1 + np.exp(b * (1 - np.cos(x)))) / (2 * np.sin(x))
    return quad(f, tc, th0, limit=200, epsrel=1e-10)[0]


def three_cluster_rate(beta: float) -> float:
    """The unstable rate of three equal point clusters equally spaced on a great
    circle (Post-LN, softmax): with ``f(g) = sin g e^{beta (cos g - 1)} / (1 + 2
    e^{-3 beta/2})`` the pull at gap ``g``, a gap obeys ``g_1' = f(g_2) - 2 f(g_1)
    + f(g_3)``, so ``lambda = -3 f'(2 pi / 3) = 3 (1/2 + 3 beta/4) e^{-3 beta/2} /
    (1 + 2 e^{-3 beta/2})``."""
    b = number(beta, "beta", 0)
    w = np.exp(-1.5 * b)
    return float(3 * (0.5 + 0.75 * b) * w / (1 + 2 * w))


def predicted_slope(k: int, betas) -> float:
    """The least-squares slope of the predicted ``log T`` on ``betas``: ``k = 2``
    at angle pi/2 (:func:`two_cluster_merge_time`), ``k = 3`` equally spaced
    (``log(1/lambda)``, :func:`three_cluster_rate`; the log of the start's
    offset is constant in beta)."""
    b = np.asarray(betas, dtype=float)
    if k == 2:
        logT = [np.log(two_cluster_merge_time(x, np.pi / 2)) for x in b]
    elif k == 3:
        logT = [-np.log(three_cluster_rate(x)) for x in b]
    else:
        raise ValueError(f"k must be 2 or 3, got {k!r}")
    return float(np.polyfit(b, logT, 1)[0])


def cluster_start(k: int, m: int, d: int, width: float, seed: int) -> np.ndarray:
    """``k`` clusters of ``m`` tokens each, centres equally spaced on a great
    circle (k = 2: at angle pi/2), each token jittered by ``width`` (Gaussian,
    in the tangent directions) about its centre; tokens interleaved so that
    cluster ``c`` holds tokens ``c, c + k, ...``."""
    angles = np.pi / 2 * np.arange(2) if k == 2 else 2 * np.pi * np.arange(k) / k
    C = np.zeros((k, d))
    C[:, 0], C[:, 1] = np.cos(angles), np.sin(angles)
    X = np.tile(C, (m, 1))
    X += width * np.random.default_rng(seed).normal(size=X.shape)
    return X / np.linalg.norm(X, axis=-1, keepdims=True)


def first_merge_times(k, betas, d=2, m=4, width=1e-3, seeds=(0, 1, 2), t_max=1e12,
                      times=400):
    """First time the cluster count falls below ``k`` (Post-LN, softmax), from
    :func:`cluster_start`, per beta and seed: arrays ``(lo, hi)`` of shape
    (len(betas), len(seeds)), the output times bracketing it (geometric grid
    of ``times`` points from 1e-2 to ``t_max``); NaN where no merge happened."""
    t = np.geomspace(1e-2, t_max, times)
    betas = np.asarray(betas, dtype=float)
    X0 = np.stack([cluster_start(k, m, d, width, s) for s in seeds])
    lo, hi = np.full((2, len(betas), len(seeds)), np.nan)
    for i, b in enumerate(betas):
        sim = simulate("post-ln", X0, beta=b, t=t)
        below = sim.clusters < k
        for j in range(len(seeds)):
            after = np.flatnonzero(below[j] & (np.arange(len(t)) > 0))
            if len(after) and sim.clusters[j, 0] == k:
                lo[i, j], hi[i, j] = t[after[0] - 1], t[after[0]]
    return lo, hi


def uniform_circle(n: int, seeds) -> np.ndarray:
    """``n`` i.i.d. uniform tokens on the circle per seed (len(seeds), n, 2)."""
    phi = np.stack([np.random.default_rng(s).uniform(0, 2 * np.pi, n) for s in seeds])
    return np.stack([np.cos(phi), np.sin(phi)], -1)


def formed(labels, t, share: float = 0.01) -> int:
    """The count when the first clusters have formed: at the first output time
    after the count's peak at which every cluster holds at least ``share`` of
    the tokens (at least 2: no stragglers, no fragments); -1 if never.
    ``labels`` (K, n) at the output times ``t`` (K,)."""
    labels = np.asarray(labels)
    n = labels.shape[-1]
    counts = clusters.count(labels)
    size = clusters.sizes(labels)
    small = np.where(np.arange(n) < counts[:, None], size, n).min(-1)
    ok = (small >= max(2, share * n)) & (np.arange(len(t)) >= np.argmax(counts))
    return int(counts[np.argmax(ok)]) if ok.any() else -1


def uniform_sphere(n: int, seeds, d: int = 3) -> np.ndarray:
    """``n`` i.i.d. uniform tokens on S^{d-1} per seed (len(seeds), n, d)."""
    X = np.stack([np.random.default_rng(s).normal(size=(n, d)) for s in seeds])
    return X / np.linalg.norm(X, axis=-1, keepdims=True)


def first_clusters(beta, n=400, seeds=(0, 1, 2), t_max=100.0, rtol=1e-6, d=2):
    """The clusters that first form from a uniform start on the circle (``d =
    3``: :func:`uniform_sphere`), per seed: :func:`formed` on a run (Post-LN,
    softmax, DOP853 at ``rtol``; 50 geometric output times from 0.5 to ``t_max``)."""
    t = np.geomspace(0.5, t_max, 50)
    X0 = uniform_circle(n, seeds) if d == 2 else uniform_sphere(n, seeds, d)
    sim = simulate("post-ln", X0, beta=beta, t=t, rtol=rtol,
                   atol=rtol * 1e-2, save_x=True, method="dop853")
    labels = clusters.cluster_labels(sim.X, sim.cluster_threshold)
    return np.array([formed(lab, t) for lab in labels])
