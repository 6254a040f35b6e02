"""Causal collapse (Karagodin, Polyanskiy, Rigollet 2024, arXiv:2411.04990, Theorem 4.1).

Causal self-attention on the sphere (Post-LN, softmax, token k attends to
j <= k) with V = I and any Q, K: every token converges to the first token's
initial position x_1(0). (Token 1 attends to itself alone, so it never moves;
the others follow, one after the other.)

Method "particles": ``sd.simulate(..., mask="causal")``, continuous, from
uniform starts, identity and random Gaussian Q, K (entries N(0, 1/d)); a run
passes when max_k |theta_k(T) - x_1(0)| < 1e-6, with T the first of the
horizons 1e2, 1e3 (quick), 1e4 (full) where every seed did. Method "layers":
one grid point with the layer rule (step 0.1). Method "full-control" (the
negative control): the same starts under full attention also end in one
cluster, but not at x_1(0) (|limit - x_1(0)| > 1e-2), so the check can tell
the mask's limit from clustering alone.
"""

from __future__ import annotations

import numpy as np

import symdyn as sd

from .result import Result

NAME = "causal-collapse"
STATEMENT = ("Causal masking (arXiv:2411.04990, Theorem 4.1): with V = I and any Q, K, "
             "all tokens of causal self-attention converge to x_1(0)")
TOL = 1e-6


def _weights(d, kind, seed):
    if kind == "identity":
        return None
    rng = np.random.default_rng(seed)
    Q, K = (rng.normal(0.0, 1.0 / np.sqrt(d), (1, d, d)) for _ in range(2))
    return (Q, K, np.eye(d)[None])


def _gap(X, x1):
    """max_k |theta_k - x_1(0)| of each member (X: (M, n, d); a distance, not
    1 - cosine, which rounds to 0 below 1e-8)."""
    th = X / np.linalg.norm(X, axis=-1, keepdims=True)
    return np.linalg.norm(th - x1[:, None], axis=-1).max(axis=1)


def check(quick: bool = True, mask: str = "causal") -> Result:
    """``mask="full"`` checks the statement under full attention (a control: FAIL)."""
    grid = [(8, 2, 1.0, "identity"), (12, 3, 2.0, "identity"), (6, 4, 1.0, "random QK")]
    if not quick:
        grid += [(16, 2, 4.0, "identity"), (24, 8, 1.0, "random QK"), (32, 3, 1.0, "identity")]
    horizons = (1e2, 1e3) if quick else (1e2, 1e3, 1e4)
    seeds = 3 if quick else 6
    res = Result(NAME, STATEMENT, {"(n, d, beta, Q K)": grid, "seeds": seeds,
                                   "horizons": horizons, "scheme": "post-ln", "mask": mask},
                 f"max_k |theta_k(T) - x_1(0)| < {TOL:g}; control: full attention's "
                 f"limit at |. - x_1(0)| > 1e-2", ["particles", "layers", "full-control"])
    worst = 0.0
    for n, d, beta, kind in grid:
        X0 = sd.init.sphere(n, d, batch=seeds, seed=100 * n + d)
        x1 = X0[:, 0] / np.linalg.norm(X0[:, 0], axis=-1, keepdims=True)
        w = _weights(d, kind, seed=n)
        for T in horizons:
            sim = sd.simulate("post-ln", X0, beta, [0.0, T], weights=w, mask=mask,
                              save_x=True)
            gap = _gap(sim.X[:, -1], x1)
            if (gap < TOL).all():
                break
        worst = max(worst, float(gap.max()))
        res.row("particles", bool((gap < TOL).all()), n=n, d=d, beta=beta, QK=kind, T=T,
                max_gap=float(gap.max()))
        if mask == "causal":
            full = sd.simulate("post-ln", X0, beta, [0.0, horizons[-1]], weights=w,
                               save_x=True)
            fgap = _gap(full.X[:, -1], x1)
            res.row("full-control", bool((fgap > 1e-2).all() and (full.min_cosine[:, -1]
                                                                  > 0.999).all()),
                    n=n, d=d, beta=beta, QK=kind, T=horizons[-1], min_gap=float(fgap.min()))
    n, d, beta = 8, 3, 1.0
    X0 = sd.init.sphere(n, d, batch=seeds, seed=7)
    x1 = X0[:, 0] / np.linalg.norm(X0[:, 0], axis=-1, keepdims=True)
    sim = sd.simulate("post-ln", X0, beta, [0.0, 400.0], step=0.1, mask=mask, save_x=True)
    gap = _gap(sim.X[:, -1], x1)
    res.row("layers", bool((gap < TOL).all()), n=n, d=d, beta=beta, step=0.1, T=400.0,
            max_gap=float(gap.max()))
    res.key_figures = f"max |theta_k(T) - x_1(0)| = {max(worst, float(gap.max())):.1e}"
    return res
