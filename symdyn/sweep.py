"""Declarative parameter sweeps, cached per task, on local cores or Dask.

A sweep is the product of its grid axes. It is cut into tasks; a simulation
task runs one grid point for a vectorized batch of seeds, and a solver task
runs a batch of grid points through one :func:`~symdyn.solve.solve` call.
Each finished task is stored under a key that hashes its parameters and the
symdyn version, so an interrupted sweep, run again, computes only what is
missing. Rows are assembled in grid order whatever the order in which tasks
finish, so every executor gives the same table.

Starts are common random numbers: seed ``s`` draws the same ``X0`` at every
grid point with the same ``(init, scale, gamma0, n, d)``, whatever the scheme
or ``beta``; random weights are drawn from ``weight_seed``, once per point.
"""

from __future__ import annotations

import math
import os
import time
from pathlib import Path

import numpy as np

from .checks import integer, is_integer
from .executors import backend
from .grid import AXES, COLUMNS, Task, grid_axes, label, tasks_of  # noqa: F401  (AXES: re-exported)
from .progress import progress_bar


def _start(p, seed):
    from . import init

    n, d, scale = p["n"], p["d"], p["scale"]
    if p["init"] == "sphere":
        return scale * init.sphere(n, d, seed=seed)
    if p["init"] == "gaussian":
        return init.gaussian(n, d, scale=scale, seed=seed)
    return init.equiangular(n, d, p["gamma0"], r0=scale, seed=seed)


def _weights(p, times):
    from . import weights

    d, heads = p["d"], p["heads"]
    if p["weights"] == "identity":
        return weights.identity(d, heads)
    T = times[-1]
    layers = None
    if p["weights"] == "kaiming-untied":          # one draw per layer / unit of time
        layers = max(1, round(T / p["step"]) if p["step"] else math.ceil(T))
    return weights.kaiming(d, heads, layers=layers, seed=p["weight_seed"])


def run_task(task: Task):
    """Compute one task: ``(columns, seconds)``; rows are seed-major, then time."""
    from .particles import simulate
    from .solve import solve

    start = time.perf_counter()
    opts = dict(task.options)
    t = np.asarray(task.t)
    K = len(t)
    if task.kind == "simulate":
        p = task.points[0]
        X0 = np.stack([_start(p, s) for s in task.seeds])
        extra = {k: v for k, v in opts.items() if v is not None}
        sim = simulate(p["scheme"], X0, p["beta"], t, weights=_weights(p, t),
                       attention=p["attention"], step=p["step"], **extra)
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


# --------------------------------------------------------------------------
# cache
# --------------------------------------------------------------------------

def _load(cache, key):
    if cache is None:
        return None
    path = cache / f"{key}.npz"
    if not path.exists():
        return None
    with np.load(path) as f:
        return {k: f[k] for k in f.files}


def _store(cache, key, cols):
    """Write atomically: a crash leaves either the whole file or none."""
    if cache is None:
        return
    tmp = cache / f"{key}.{os.getpid()}.tmp.npz"
    np.savez(tmp, **cols)
    os.replace(tmp, cache / f"{key}.npz")


# --------------------------------------------------------------------------
# the sweep
# --------------------------------------------------------------------------

def _seeds(kind, seeds):
    if kind == "solve":
        if seeds is not None:
            raise ValueError("seeds: solver sweeps are deterministic; leave seeds=None")
        return ()
    if seeds is None:
        return (0,)
    if is_integer(seeds):
        if seeds < 1:
            raise ValueError(f"seeds must be an integer >= 1 or a list of seeds, got {seeds!r}")
        return tuple(range(int(seeds)))
    values = list(seeds) if hasattr(seeds, "__iter__") else [seeds]
    if not values or not all(is_integer(s) and s >= 0 for s in values) \
            or len(set(values)) != len(values):
        raise ValueError(f"seeds: expected a non-empty list of distinct integers >= 0, "
                         f"got {seeds!r}")
    return tuple(int(s) for s in values)


def _out_path(out):
    if out is None:
        return None
    out = Path(out)
    if out.suffix not in (".csv", ".parquet"):
        raise ValueError(f"out: the file name must end in .csv or .parquet, got {str(out)!r}")
    if out.suffix == ".parquet":
        try:
            import pyarrow  # noqa: F401
        except ImportError:
            raise ValueError("out: writing Parquet needs pyarrow; install it with "
                             "pip install 'symdyn[dask]', or write .csv") from None
    return out


def sweep(grid, t, *, kind="simulate", seeds=None, batch=None, rtol=None, atol=None,
          cluster_threshold=0.999, executor=None, workers=None, scheduler=None,
          cache=None, out=None, progress=False):
    """Run a grid of simulations (or reduced solves) and return a tidy table.

    Parameters
    ----------
    grid : dict
        Axis -> value or list of values. ``kind="simulate"``: ``scheme`` (a
        name, ``"none"`` or a Scheme), ``n``, ``d``, ``beta``, ``init``
        (``"sphere"``, ``"gaussian"``, ``"equiangular"``), ``scale`` (the
        tokens' norm, the Gaussian's std, or ``r0``), ``gamma0``
        (equiangular), ``weights`` (``"identity"``, ``"kaiming"``,
        ``"kaiming-untied"``), ``weight_seed``, ``heads``, ``attention``,
        ``step`` (``None``: continuous). ``kind="solve"``: ``scheme``, ``n``,
        ``beta``, ``gamma0``, ``r0``, ``attention``. Missing axes take the
        defaults of :data:`AXES`.
    t : float or 1-D array
        Saved times (``>= 0``, increasing).
    seeds : int or list of int
        ``K``: seeds ``0..K-1`` (default one seed); simulations only.
    batch : int, optional
        Seeds per simulation task (default: all), or grid points per solve
        task (default 256).
    rtol, atol, cluster_threshold
        Passed to :func:`~symdyn.simulate` / :func:`~symdyn.solve`
        (``None``: their defaults).
    executor : None, "local", "serial", dask.distributed.Client or Executor
        Where tasks run (default: local processes, ``workers`` of them).
    scheduler : str, optional
        A Dask scheduler address; the same sweep runs on that cluster.
    cache : path, optional
        Directory of finished tasks; a rerun computes only the missing ones.
    out : path, optional
        Also write the table (``.csv`` or ``.parquet``).
    progress : bool or callable
        A progress bar on stderr, or ``progress(done, total)`` per task.

    Returns
    -------
    pandas.DataFrame
        One row per grid point, seed and saved time: the axes, ``seed``, ``t``
        and the observables of :data:`COLUMNS` (``step`` is NaN for the
        continuous dynamics). ``attrs`` holds ``tasks``, ``computed``,
        ``cached``, ``compute_seconds`` and ``wall_seconds``.

    Examples
    --------
    >>> import symdyn as sd
    >>> df = sd.sweep({"scheme": ["post-ln", "pre-ln"], "beta": [1.0, 4.0]},
    ...               t=[0, 10], kind="solve", executor="serial")
    >>> df[["scheme", "beta", "t", "gamma"]].round(4).values.tolist()[:2]
    [['post-ln', 1.0, 0.0, 0.0], ['post-ln', 1.0, 10.0, 1.0]]
    """
    from .checks import output_times

    started = time.perf_counter()
    axes = grid_axes(kind, grid)
    seed_list = _seeds(kind, seeds)
    times = output_times(t)
    batch = integer(batch, "batch", 1, optional=True)
    for name, tol in (("rtol", rtol), ("atol", atol)):
        if tol is not None and not (isinstance(tol, (int, float)) and 0 < tol < 1):
            raise ValueError(f"{name} must be None or lie in (0, 1), got {tol!r}")
    if not (isinstance(cluster_threshold, (int, float)) and 0 <= cluster_threshold <= 1):
        raise ValueError(f"cluster_threshold must lie in [0, 1], got {cluster_threshold!r}")
    options = (("rtol", rtol), ("atol", atol), ("cluster_threshold", float(cluster_threshold)))
    if kind == "solve":
        options = options[:2]
    out = _out_path(out)
    runner = backend(executor, workers, scheduler)
    tasks = tasks_of(kind, axes, seed_list, times, options, batch)
    if cache is not None:
        cache = Path(cache)
        cache.mkdir(parents=True, exist_ok=True)

    keys = [task.key for task in tasks]
    results = [_load(cache, k) for k in keys]
    cached = sum(r is not None for r in results)
    todo = [i for i, r in enumerate(results) if r is None]
    report = progress_bar(progress, len(tasks), "sweep")
    report(cached)
    seconds = []

    def on_result(j, value):
        i = todo[j]
        if results[i] is not None:            # already delivered: never twice
            return
        cols, sec = value
        _store(cache, keys[i], cols)
        results[i] = cols
        seconds.append(sec)
        report(cached + len(seconds))

    try:
        if todo:
            runner.run(run_task, [tasks[i] for i in todo], on_result)
    finally:
        report(None)
    table = _table(kind, axes, tasks, results)
    table.attrs.update(tasks=len(tasks), computed=len(seconds), cached=cached,
                       compute_seconds=float(sum(seconds)),
                       wall_seconds=time.perf_counter() - started)
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        if out.suffix == ".csv":
            table.to_csv(out, index=False)
        else:
            table.to_parquet(out, index=False)
    return table


def _table(kind, axes, tasks, results):
    import pandas as pd

    names = list(axes)
    parts = {name: [] for name in names}
    parts.update({c: [] for c in ("seed", "t") + COLUMNS[kind]})
    if kind == "solve":
        del parts["seed"]
    for task, cols in zip(tasks, results, strict=True):
        rows = len(cols["t"])
        if kind == "simulate":
            owner = np.zeros(rows, dtype=int)
        else:
            owner = cols["point"].astype(int)
        for name in names:
            values = [label(p[name]) for p in task.points]
            if name == "step":
                values = [np.nan if v is None else v for v in values]
            parts[name].append(np.asarray(values, dtype=object)[owner])
        for c in parts:
            if c not in names:
                parts[c].append(cols[c])
    frame = {c: np.concatenate(v) for c, v in parts.items()}
    table = pd.DataFrame(frame)
    for name in names:                   # object columns back to their natural dtype
        table[name] = table[name].infer_objects()
        if name in ("scheme", "init", "weights", "attention"):
            table[name] = table[name].astype(str)
    return table
