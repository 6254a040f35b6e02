"""Declarative parameter sweeps, cached per task, on local cores or Dask.

A sweep is the product of its grid axes (:mod:`~symdyn.studies.grid`). It is
cut into tasks; a simulation task runs one grid point for a vectorized batch
of seeds, and a solver task runs a batch of grid points through one
:func:`~symdyn.reduced.solver.solve` call (:mod:`~symdyn.studies.runs`).
Each finished task is stored in the cache (:mod:`~symdyn.studies.storage`:
keyed by its parameters and the symdyn version, checked when read, reported
with a :class:`CacheWarning` and recomputed when damaged). An interrupted
sweep, run again, computes only what is missing. Rows are assembled in grid
order whatever the order in which tasks finish, so every executor gives the
same table. Everything is checked before any task runs: the arguments, the
sizes (:mod:`~symdyn.studies.grid`) and the room on disk for the outputs
(:func:`room`).

Layer 3, studies.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import time
from pathlib import Path
from typing import TYPE_CHECKING

from numpy.typing import ArrayLike

if TYPE_CHECKING:
    from .sweep_table import SweepTable

from ..base.checks import (
    RTOL_FLOOR,
    integer,
    is_integer,
    is_real,
    output_times,
    shown,
    tolerance,
    writable_path,
)
from ..base.provenance import Provenance
from . import grid as _grid
from .executors import backend
from .grid import COLUMNS, Task
from .progress import progress_bar
from .runs import KINDS, run_task
from .storage import (
    Saver,
    interrupted,
    load,
    write_table,
)

_grid.KINDS.update(KINDS)        # the grid's default kinds: the runners of runs


def grid_axes(kind, grid) -> dict:
    """``grid`` checked and completed with defaults: axis -> tuple of values
    (:func:`symdyn.studies.grid.grid_axes` with the kinds of :mod:`~symdyn.studies.runs`)."""
    return _grid.grid_axes(kind, grid, KINDS)


def tasks_of(kind, axes, seeds, times, options, batch) -> list[Task]:
    """The sweep cut into tasks, in grid order, its size checked first
    (:func:`symdyn.studies.grid.tasks_of` with the kinds of :mod:`~symdyn.studies.runs`)."""
    return _grid.tasks_of(kind, axes, seeds, times, options, batch, KINDS)


def _seeds(kind, seeds):
    if kind == "solve":
        if seeds is not None:
            raise ValueError("seeds: solver sweeps are deterministic; leave seeds=None")
        return ()
    if seeds is None:
        return (0,)
    if is_integer(seeds):
        if seeds < 1:
            raise ValueError(f"seeds must be an integer >= 1 or a list of seeds, "
                             f"got {shown(seeds)}")
        return range(int(seeds))              # not built: its size is checked first
    values = list(seeds) if hasattr(seeds, "__iter__") else [seeds]
    if not values or not all(is_integer(s) and 0 <= s < 2**63 for s in values) \
            or len(set(values)) != len(values):       # the table's int64 column holds them
        raise ValueError(f"seeds: expected a non-empty list of distinct integers in "
                         f"[0, 2**63), got {shown(seeds)}")
    return tuple(int(s) for s in values)


def _in_range(value, name, low, high, *, closed):
    """``value`` (a real number, or ``None`` with ``closed=False``) as a float in
    ``[low, high]`` (``closed``) or ``(low, high)``."""
    if value is None and not closed:
        return None
    if not (is_real(value) and (low <= value <= high if closed else low < value < high)):
        rng = f"a number in [{low}, {high}]" if closed else f"None or a number in ({low}, {high})"
        raise ValueError(f"{name} must be {rng}, got {shown(value)}")
    return float(value)



def sweep(grid: dict, t: ArrayLike, *, kind: str = "simulate", seeds=None,
          batch: int | None = None, rtol: float | None = None, atol: float | None = None,
          cluster_threshold: float = 0.999, executor=None, workers: int | None = None,
          scheduler: str | None = None, cache: str | os.PathLike | None = None,
          out: str | os.PathLike | None = None, progress: bool = False) -> SweepTable:
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
        file that fails the check, cannot be read, is not a regular file, or
        declares more bytes than its task can fill (a zip bomb) is recomputed,
        with a :class:`CacheWarning` naming it; nothing in it is unpickled.
        Files are written to a new temporary file (random name, ``O_EXCL``)
        renamed into place. If the folder stops taking files mid-sweep
        (read-only, full), one :class:`CacheWarning` says so and the sweep
        still returns every result.
        **What the cache trusts**: the checksum catches damage and swapped
        files, not forgery. Anyone who can write to the folder can store a
        file with other numbers and a recomputed checksum, and the sweep will
        return those numbers. It is a cache, not a signature: keep the folder
        as private as the code you run, and do not use caches from others.
    out : path, optional
        Also write the table (``.csv`` or ``.parquet``). The folder is probed
        for writing and its free space compared with the table's size (and
        the cache's) before any task runs; the file is written atomically. A
        write that still fails at the end is a warning, and the table is
        returned.
    progress : bool or callable
        A progress bar on stderr, or ``progress(done, total)`` per task.

    Returns
    -------
    SweepTable
        A ``pandas.DataFrame``, one row per grid point, seed and saved time:
        the axes, ``seed``, ``t`` and the observables of :data:`COLUMNS`
        (``step`` is NaN for the continuous dynamics). ``attrs`` holds
        ``tasks``, ``computed``, ``cached``, ``compute_seconds``,
        ``wall_seconds`` and ``provenance`` (JSON of a
        :class:`~symdyn.base.provenance.Provenance`: the grid, its schemes by
        registry name and parameters, seeds, times and options, the symdyn
        version), which ``table.provenance`` reads; ``table.save(path)``,
        ``sd.load(path)`` and ``sd.rerun(table)`` (the same columns, bit for
        bit) as for every result (:mod:`~symdyn.studies.sweep_table`).

    Raises
    ------
    ValueError
        A bad argument (named), a grid or task too large for this machine's
        memory (with the estimate), an output path that cannot be written or
        a disk without room for the table or the cache, a Dask scheduler
        address that does not answer as one (in seconds, naming it); all
        before any task runs.
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
    options = (("rtol", None if rtol is None else tolerance(rtol, "rtol", RTOL_FLOOR)),
               ("atol", _in_range(atol, "atol", 0, 1, closed=False)),
               ("cluster_threshold", _in_range(cluster_threshold, "cluster_threshold", 0, 1,
                                               closed=True)))
    if kind == "solve":
        options = options[:2]
    out = out_path(out)
    tasks = tasks_of(kind, axes, seed_list, times, options, batch)
    runner = backend(executor, workers, scheduler)    # a scheduler is probed here
    if out is not None:
        writable_path(out, "out")
    if cache is not None:
        cache = writable_path(cache, "cache", folder=True)

    results = [load(cache, task) for task in tasks]
    cached = sum(r is not None for r in results)
    todo = [i for i, r in enumerate(results) if r is None]
    room(out, cache, tasks, todo, len(axes) + 2 + max(map(len, COLUMNS.values())))
    report = progress_bar(progress, len(tasks), "sweep")
    report(cached)
    seconds = []
    save = Saver(cache)

    def on_result(j, value):
        i = todo[j]
        if results[i] is not None:            # already delivered: never twice
            return
        cols, sec = value
        save(tasks[i], cols)
        results[i] = cols
        seconds.append(sec)
        report(cached + len(seconds))

    try:
        if todo:
            runner.run(run_task, [tasks[i] for i in todo], on_result)
    except KeyboardInterrupt:
        raise KeyboardInterrupt(interrupted(cache, cached + save.stored, cached + len(seconds),
                                             len(tasks), save.failed)) from None
    finally:
        report(None)
    from .sweep_table import SweepTable, scheme_record  # pandas, on use

    table = SweepTable(_grid.table(kind, axes, tasks, results))
    grid = {**grid, "scheme": scheme_record(grid["scheme"])} if "scheme" in grid else grid
    table.attrs.update(tasks=len(tasks), computed=len(seconds), cached=cached,
                       compute_seconds=float(sum(seconds)),
                       wall_seconds=time.perf_counter() - started,
                       provenance=Provenance.of("sweep", None, {
                           "kind": kind, "grid": grid, "seeds": list(seed_list), "t": times,
                           "batch": batch, **dict(options)}).to_json())
    if out is not None:
        write_table(table, out)
    return table


def out_path(out):
    """``out`` checked: ``None``, or a path ending in ``.csv`` or ``.parquet``
    (Parquet only with pyarrow installed)."""
    if out is None:
        return None
    if not isinstance(out, (str, os.PathLike)) or not str(out).strip():
        raise ValueError(f"out: expected a path ending in .csv or .parquet, got {shown(out, 200)}")
    out = Path(out)
    if out.suffix not in (".csv", ".parquet"):
        raise ValueError(f"out: the file name must end in .csv or .parquet, "
                         f"got {shown(str(out), 200)}")
    if out.suffix == ".parquet":
        if importlib.util.find_spec("pyarrow") is None:
            raise ValueError("out: writing Parquet needs pyarrow; install it with "
                             "pip install 'symdyn[dask]', or write .csv")
    return out


#: Bytes per value of a written table, about: CSV text (17 digits, sign,
#: exponent, separator), Parquet (8-byte values, before compression).
VALUE_BYTES = {".csv": 24, ".parquet": 8}


def _rows(task) -> int:
    return len(task.t) * (len(task.seeds) if task.kind == "simulate" else len(task.points))


def room(out, cache, tasks, todo, width):
    """Refuse, before any task runs, outputs that would not fit on their disk:
    the table (``out``: its rows times ``width`` values of :data:`VALUE_BYTES`)
    and the cache files of the tasks still to compute, summed per file system."""
    needs = []
    if out is not None:
        values = sum(map(_rows, tasks)) * width
        needs.append(("out", "the table", out.parent, values * VALUE_BYTES[out.suffix]))
    if cache is not None and todo:
        nbytes = sum(8 * 10 * _rows(tasks[i]) + 4 * len(tasks[i].doc) + 2048 for i in todo)
        needs.append(("cache", f"{len(todo):,} cache files", cache, nbytes))
    disks = {}
    for name, what, folder, nbytes in needs:
        try:
            device, free = os.stat(folder).st_dev, shutil.disk_usage(folder).free
        except OSError:                         # cannot tell: the write will say
            continue
        disk = disks.setdefault(device, {"free": free, "need": 0, "parts": []})
        disk["need"] += nbytes
        disk["parts"].append((name, what, folder, nbytes))
    for disk in disks.values():
        if disk["need"] > disk["free"]:
            name, _, folder, _ = disk["parts"][0]
            parts = " and ".join(f"{what} ({_size(n)} in {shown(str(f), 200)})"
                                 for _, what, f, n in disk["parts"])
            raise ValueError(f"{name}: not enough free space: {parts} need about "
                             f"{_size(disk['need'])}, the disk has {_size(disk['free'])} "
                             f"free; free some space or choose another folder")


def _size(nbytes) -> str:
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if nbytes >= scale:
            return f"{nbytes / scale:.3g} {unit}"
    return f"{int(nbytes)} bytes"
