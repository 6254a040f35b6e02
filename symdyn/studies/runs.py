"""What the studies run: a sweep task (simulations of a grid point for a
batch of seeds, or reduced solves of a batch of grid points), the
simulator's check of a designed schedule (:func:`simulated_check`) and the
starts of the command line's ``simulate`` (:func:`batch_start`).

Starts are common random numbers: seed ``s`` draws the same ``X0`` at every
grid point with the same ``(init, scale, gamma0, n, d)``, whatever the scheme
or ``beta``; random weights are drawn from ``weight_seed``, once per point.
:data:`KINDS` tells the grid (:mod:`symdyn.studies.grid`, which imports no
runner) how each kind resolves a scheme and which times it takes.

Layer 3, studies.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import NamedTuple

import numpy as np

from ..model.baseline import resolve
from ..model.registry import scheme
from ..particles import init, weights
from ..particles.simulation import layer_times, simulate
from ..reduced.solver import solve


class Kind(NamedTuple):
    """What the grid checks of one kind of run before any work."""

    resolve: Callable          # an axis value -> a Scheme (a ValueError when it is none)
    max_times: int | None = None    # the most output times (None: memory decides)
    check_step: Callable | None = None     # check_step(times, step): a ValueError if unfit


#: The kinds of sweep: ``simulate`` (the particle system, ``"none"`` allowed)
#: and ``solve`` (the reduced ODE).
KINDS = {"simulate": Kind(resolve, None, layer_times),
         "solve": Kind(scheme)}


def _start(p, seed):

    n, d, scale = p["n"], p["d"], p["scale"]
    if p["init"] == "sphere":
        return scale * init.sphere(n, d, seed=seed)
    if p["init"] == "gaussian":
        return init.gaussian(n, d, scale=scale, seed=seed)
    return init.equiangular(n, d, p["gamma0"], r0=scale, seed=seed)


def _weights(p, times):

    d, heads = p["d"], p["heads"]
    if p["weights"] == "identity":
        return weights.identity(d, heads)
    T = times[-1]
    layers = None
    if p["weights"] == "kaiming-untied":          # one draw per layer / unit of time
        layers = max(1, round(T / p["step"]) if p["step"] else math.ceil(T))
    return weights.kaiming(d, heads, layers=layers, seed=p["weight_seed"])


def run_task(task):
    """Compute one task: ``(columns, seconds)``; rows are seed-major, then time."""

    start = time.perf_counter()
    opts = dict(task.options)
    t = np.asarray(task.t)
    K = len(t)
    if task.kind == "simulate":
        p = task.points[0]
        X0 = np.stack([_start(p, s) for s in task.seeds])
        extra = {k: v for k, v in opts.items() if v is not None}
        sim = simulate(p["scheme"], X0, p["beta"], t, weights=_weights(p, t),
                       attention=p["attention"], step=p["step"],
                       dtype=np.dtype(p["precision"]).type, **extra)
        cols = {"seed": np.repeat(np.asarray(task.seeds), K), "t": np.tile(t, len(task.seeds)),
                "gamma": sim.gamma, "epsilon": sim.epsilon, "min_cosine": sim.min_cosine,
                "linked": sim.linked, "clusters": sim.clusters, "r_mean": sim.r.mean(axis=1)}
    else:
        extra = {k: v for k, v in opts.items()
                 if k in ("rtol", "atol") and v is not None}
        P = task.points
        tr = solve(P[0]["scheme"], n=[p["n"] for p in P], beta=[p["beta"] for p in P],
                   gamma0=[p["gamma0"] for p in P], r0=[p["r0"] for p in P], t=t,
                   attention=P[0]["attention"], **extra)
        cols = {"point": np.repeat(np.arange(len(P)), K), "t": np.tile(t, len(P)),
                "gamma": tr.gamma, "log_epsilon": tr.log_epsilon,
                "gamma_dot": tr.gamma_dot, "r": tr.r}
    cols = {k: np.ascontiguousarray(v).ravel() for k, v in cols.items()}
    return cols, time.perf_counter() - start


def simulated_check(s, params, L, n, d, beta, gamma0, attention, seed) -> dict:
    """gamma(L) of the particle simulator for ``s`` at ``params`` from one
    equiangular start (``n`` tokens in dimension ``d``): with identity
    weights (``"identity"``) and with Kaiming weights (``"kaiming"``)."""
    X0 = init.equiangular(n, d, gamma0, seed=seed)
    out = {}
    for name, w in (("identity", None), ("kaiming", weights.kaiming(d, seed=seed))):
        sim = simulate(s, X0, beta=beta, t=[L], weights=w, attention=attention,
                       params=params)
        out[name] = float(sim.gamma[-1])
    return out


def batch_start(start: str, n: int, d: int, gamma0: float, seeds: int, weight: str,
                start_seed: int = 0):
    """``(X0, weights)`` of one batch of ``seeds`` starts (the command line's
    ``simulate``), member ``m`` drawn from seed ``start_seed + m`` alone (so
    ``--seeds 1 --start-seed 3`` is member 3 of ``--seeds 4``): ``start``
    ``"sphere"``, ``"standard-gaussian"`` (``N(0, I_d)``, Theorem 3.1's start:
    norms near ``sqrt(d)``), ``"gaussian"`` (``N(0, I_d/d)``: norms near 1) or
    ``"equiangular"`` (cosine ``gamma0``); ``weight`` ``"identity"``
    (``None``) or ``"kaiming"`` (simulate's name for Kaiming weights of seed 0)."""
    def one(seed):
        if start == "equiangular":
            return init.equiangular(n, d, gamma0, seed=seed)
        if start == "standard-gaussian":
            return init.gaussian(n, d, scale=1.0, seed=seed)
        if start == "gaussian":
            return init.gaussian(n, d, scale=d**-0.5, seed=seed)
        return init.sphere(n, d, seed=seed)
    X0 = np.stack([one(start_seed + m) for m in range(seeds)])
    return X0, ("kaiming" if weight == "kaiming" else None)
