"""Declarative parameter sweeps, cached per task, on local cores or Dask.

A sweep is the product of its grid axes. It is cut into tasks; a simulation
task runs one grid point for a vectorized batch of seeds, and a solver task
runs a batch of grid points through one :func:`~symdyn.solver.solve` call.
Each finished task is stored under a key that hashes its parameters and the
symdyn version, with those parameters and a SHA-256 of its arrays inside the
file; a file that fails the check or cannot be read is reported
(:class:`CacheWarning`) and recomputed. An interrupted sweep, run again,
computes only what is missing. Rows are assembled in grid order whatever the
order in which tasks finish, so every executor gives the same table.

Starts are common random numbers: seed ``s`` draws the same ``X0`` at every
grid point with the same ``(init, scale, gamma0, n, d)``, whatever the scheme
or ``beta``; random weights are drawn from ``weight_seed``, once per point.
"""

from __future__ import annotations

import hashlib
import math
import os
import time
import warnings
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import ArrayLike

if TYPE_CHECKING:
    import pandas as pd

from . import init, weights
from .checks import integer, is_integer, is_real, output_times, writable_path
from .executors import backend
from .grid import AXES, COLUMNS, Task, grid_axes, label, tasks_of  # noqa: F401
from .particles import simulate
from .progress import progress_bar
from .solver import solve


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


def run_task(task: Task):
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


# --------------------------------------------------------------------------
# cache
# --------------------------------------------------------------------------

class CacheWarning(UserWarning):
    """A cache file that was not used (named with the reason); its task is recomputed."""


def _checksum(cols):
    """SHA-256 of the arrays: names, dtypes, shapes and bytes."""
    h = hashlib.sha256()
    for name in sorted(cols):
        a = np.ascontiguousarray(cols[name])
        h.update(f"{name}:{a.dtype.str}:{a.shape};".encode())
        h.update(a.tobytes())
    return h.hexdigest()


def _load(cache, task):
    """The task's stored columns, or ``None`` (absent, or reported and to be recomputed)."""
    if cache is None:
        return None
    path = cache / f"{task.key}.npz"
    if not os.path.lexists(path):
        return None
    try:
        with open(path, "rb") as fh, np.load(fh, allow_pickle=False) as f:
            cols = {k: f[k] for k in f.files}
        doc, checksum = (str(cols.pop(k, "")) for k in ("__task__", "__sha256__"))
        problem = ("it holds another task's parameters" if doc != task.doc else
                   "its arrays do not match their checksum" if checksum != _checksum(cols)
                   else None)
    except Exception as e:                  # truncated, empty, a folder, garbage, ...
        problem = f"it cannot be read ({type(e).__name__}: {e})"
    if problem is None:
        return cols
    warnings.warn(f"cache: {path}: {problem}; recomputing the task", CacheWarning,
                  stacklevel=3)
    return None


def _store(cache, task, cols):
    """Write atomically (a crash leaves either the whole file or none), with the
    task's parameters and the arrays' checksum inside."""
    if cache is None:
        return
    path = cache / f"{task.key}.npz"
    if path.is_dir():
        warnings.warn(f"cache: {path} is a folder; this task is not stored", CacheWarning,
                      stacklevel=3)
        return
    tmp = cache / f"{task.key}.{os.getpid()}.tmp.npz"
    np.savez(tmp, __task__=np.array(task.doc), __sha256__=np.array(_checksum(cols)), **cols)
    os.replace(tmp, path)


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
        return range(int(seeds))              # not built: its size is checked first
    values = list(seeds) if hasattr(seeds, "__iter__") else [seeds]
    if not values or not all(is_integer(s) and s >= 0 for s in values) \
            or len(set(values)) != len(values):
        raise ValueError(f"seeds: expected a non-empty list of distinct integers >= 0, "
                         f"got {seeds!r}")
    return tuple(int(s) for s in values)


def _in_range(value, name, low, high, *, closed):
    """``value`` (a real number, or ``None`` with ``closed=False``) as a float in
    ``[low, high]`` (``closed``) or ``(low, high)``."""
    if value is None and not closed:
        return None
    if not (is_real(value) and (low <= value <= high if closed else low < value < high)):
        rng = f"a number in [{low}, {high}]" if closed else f"None or a number in ({low}, {high})"
        raise ValueError(f"{name} must be {rng}, got {value!r}")
    return float(value)


def _out_path(out):
    if out is None:
        return None
    if not isinstance(out, (str, os.PathLike)) or not str(out).strip():
        raise ValueError(f"out: expected a path ending in .csv or .parquet, got {out!r}")
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


def sweep(grid: dict, t: ArrayLike, *, kind: str = "simulate", seeds=None,
          batch: int | None = None, rtol: float | None = None, atol: float | None = None,
          cluster_threshold: float = 0.999, executor=None, workers: int | None = None,
          scheduler: str | None = None, cache: str | os.PathLike | None = None,
          out: str | os.PathLike | None = None, progress: bool = False) -> pd.DataFrame:
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
        ``step`` (``None``: continuous), ``precision`` (``"float64"``, or
        ``"float32"``: half the cost, see :func:`~symdyn.simulate`'s
        ``dtype``). ``kind="solve"``: ``scheme``, ``n``,
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
        Each file holds its task's parameters and a checksum of its arrays; a
        file that fails the check or cannot be read is recomputed, with a
        :class:`CacheWarning` naming it.
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

    Raises
    ------
    ValueError
        A bad argument (named), a grid or task too large for this machine's
        memory (with the estimate), or an output path that cannot be written;
        all before any task runs.
    KeyboardInterrupt
        On Ctrl-C, with one line: how many tasks are saved in ``cache`` and
        how to resume. Local workers are stopped without waiting.

    Examples
    --------
    >>> import symdyn as sd
    >>> df = sd.sweep({"scheme": ["post-ln", "pre-ln"], "beta": [1.0, 4.0]},
    ...               t=[0, 10], kind="solve", executor="serial")
    >>> df[["scheme", "beta", "t", "gamma"]].round(4).values.tolist()[:2]
    [['post-ln', 1.0, 0.0, 0.0], ['post-ln', 1.0, 10.0, 1.0]]
    """

    started = time.perf_counter()
    axes = grid_axes(kind, grid)
    seed_list = _seeds(kind, seeds)
    times = output_times(t)
    batch = integer(batch, "batch", 1, optional=True)
    options = (("rtol", _in_range(rtol, "rtol", 0, 1, closed=False)),
               ("atol", _in_range(atol, "atol", 0, 1, closed=False)),
               ("cluster_threshold", _in_range(cluster_threshold, "cluster_threshold", 0, 1,
                                               closed=True)))
    if kind == "solve":
        options = options[:2]
    out = _out_path(out)
    runner = backend(executor, workers, scheduler)
    tasks = tasks_of(kind, axes, seed_list, times, options, batch)
    if out is not None:
        writable_path(out, "out")
    if cache is not None:
        cache = writable_path(cache, "cache", folder=True)

    results = [_load(cache, task) for task in tasks]
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
        _store(cache, tasks[i], cols)
        results[i] = cols
        seconds.append(sec)
        report(cached + len(seconds))

    try:
        if todo:
            runner.run(run_task, [tasks[i] for i in todo], on_result)
    except KeyboardInterrupt:
        done = cached + len(seconds)
        where = (f"{done} of {len(tasks)} tasks saved in {cache}; rerun with the same cache "
                 f"to resume" if cache is not None else
                 f"{done} of {len(tasks)} tasks finished, no cache: pass cache= to keep "
                 f"finished tasks")
        raise KeyboardInterrupt(where) from None
    finally:
        report(None)
    table = _table(kind, axes, tasks, results)
    table.attrs.update(tasks=len(tasks), computed=len(seconds), cached=cached,
                       compute_seconds=float(sum(seconds)),
                       wall_seconds=time.perf_counter() - started)
    if out is not None:
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
        if name in ("scheme", "init", "weights", "attention", "precision"):
            table[name] = table[name].astype(str)
    return table
