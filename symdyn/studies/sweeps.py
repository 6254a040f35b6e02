"""Declarative parameter sweeps, cached per task, on local cores or Dask.

A sweep is the product of its grid axes. It is cut into tasks; a simulation
task runs one grid point for a vectorized batch of seeds, and a solver task
runs a batch of grid points through one :func:`~symdyn.reduced.solver.solve` call.
Each finished task is stored under a key that hashes its parameters and the
symdyn version, with those parameters and a SHA-256 of its arrays inside the
file; a file that fails the check or cannot be read is reported
(:class:`CacheWarning`) and recomputed. An interrupted sweep, run again,
computes only what is missing. The check is against damage and mix-ups, not
forgery: the cache is a cache, not a signature (see ``sweep``'s ``cache``).
Rows are assembled in grid order whatever the order in which tasks finish, so
every executor gives the same table.

Starts are common random numbers: seed ``s`` draws the same ``X0`` at every
grid point with the same ``(init, scale, gamma0, n, d)``, whatever the scheme
or ``beta``; random weights are drawn from ``weight_seed``, once per point.

Layer 3, studies.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import math
import os
import secrets
import shutil
import stat
import time
import warnings
import zipfile
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import ArrayLike

if TYPE_CHECKING:
    import pandas as pd

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
from ..particles import init, weights
from ..particles.simulation import simulate
from ..reduced.solver import solve
from .executors import backend
from .grid import AXES, COLUMNS, Task, grid_axes, label, tasks_of  # noqa: F401
from .progress import progress_bar


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
    """A cache file that was not used (named with the reason; its task is recomputed),
    or a cache folder that stopped taking files (the results are still returned)."""


class _Refused(Exception):
    """A cache file refused before its arrays are read (the message says why)."""


def _checksum(cols):
    """SHA-256 of the arrays: names, dtypes, shapes and bytes."""
    h = hashlib.sha256()
    for name in sorted(cols):
        a = np.ascontiguousarray(cols[name])
        h.update(f"{name}:{a.dtype.str}:{a.shape};".encode())
        h.update(a.tobytes())
    return h.hexdigest()


def entry_bytes(task) -> int:
    """The most a task's cache file can hold unpacked: 16 columns of 8 bytes per
    row (there are at most 8), its parameters as numpy text, and 64 KiB for the
    headers. A file that declares more is refused unread."""
    rows = len(task.t) * (len(task.seeds) if task.kind == "simulate" else len(task.points))
    return 16 * 8 * rows + 4 * len(task.doc) + 2**16


def _declared_sizes(fh, limit):
    """Refuse an archive whose members declare more than ``limit`` bytes unpacked
    (the zip central directory's sizes, which also cap what zipfile will
    inflate), or an array header that claims more than its member holds (numpy
    allocates by the header)."""
    with zipfile.ZipFile(fh) as z:
        infos = z.infolist()
        declared = sum(i.file_size for i in infos)
        if declared > limit:
            raise _Refused(f"it declares {declared:,} bytes unpacked, more than the "
                           f"{limit:,} this task can fill; not read")
        for info in infos:
            with z.open(info) as member:
                version = np.lib.format.read_magic(member)
                if version not in ((1, 0), (2, 0)):
                    raise ValueError(f"{info.filename}: .npy format {version}")
                header = (np.lib.format.read_array_header_1_0 if version == (1, 0) else
                          np.lib.format.read_array_header_2_0)
                shape, _, dtype = header(member)
                if dtype.hasobject:
                    raise ValueError(f"{info.filename} holds Python objects (a pickle); "
                                     f"never loaded")
                need = math.prod(shape) * dtype.itemsize
                if need > info.file_size:
                    raise _Refused(f"{info.filename} declares {shape} {dtype} "
                                   f"({need:,} bytes) in {info.file_size:,}; not read")


def _read(path, limit):
    """The arrays of a cache file, trusting nothing in it: a regular file (a FIFO
    or a device is not waited on), sizes checked before anything is inflated,
    no pickles."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    with os.fdopen(fd, "rb") as fh:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise ValueError("not a regular file")
        _declared_sizes(fh, limit)
        fh.seek(0)
        with np.load(fh, allow_pickle=False) as f:
            return {k: f[k] for k in f.files}


def _load(cache, task):
    """The task's stored columns, or ``None`` (absent, or reported and to be recomputed)."""
    if cache is None:
        return None
    path = cache / f"{task.key}.npz"
    if not os.path.lexists(path):
        return None
    try:
        cols = _read(path, entry_bytes(task))
        doc, checksum = (str(cols.pop(k, "")) for k in ("__task__", "__sha256__"))
        problem = ("it holds another task's parameters" if doc != task.doc else
                   "its arrays do not match their checksum" if checksum != _checksum(cols)
                   else None)
    except _Refused as e:
        problem = str(e)
    except Exception as e:                  # truncated, empty, a folder, garbage, ...
        problem = f"it cannot be read ({type(e).__name__}: {e})"
    if problem is None:
        return cols
    warnings.warn(f"cache: {path}: {problem}; recomputing the task", CacheWarning,
                  stacklevel=3)
    return None


def _exclusive(folder: Path, prefix: str):
    """A new file in ``folder`` open for writing, and its path: a random name and
    ``O_CREAT | O_EXCL`` (an existing file or symlink there is never opened, so
    nothing planted is written through), the umask's permissions."""
    flags = (os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
             | getattr(os, "O_BINARY", 0))
    for _ in range(100):
        path = folder / f"{prefix}{secrets.token_hex(8)}.tmp"
        try:
            return os.open(path, flags, 0o666), path
        except FileExistsError:
            continue
    raise FileExistsError(errno.EEXIST, "no unused temporary name", str(folder))


@contextlib.contextmanager
def _replacing(path: Path, mode: str = "wb"):
    """Write ``path`` atomically: into a new temporary file beside it
    (:func:`_exclusive`), renamed over ``path`` when the block ends (a
    symlink at ``path`` is replaced, not followed). On failure the temporary
    file is removed and ``path`` is left as it was."""
    fd, tmp = _exclusive(path.parent, f".{path.name}.")
    try:
        text = {} if "b" in mode else {"newline": "", "encoding": "utf-8"}
        with os.fdopen(fd, mode, **text) as fh:
            yield fh
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _store(cache, task, cols):
    """Write atomically (a crash leaves either the whole file or none), with the
    task's parameters and the arrays' checksum inside. The temporary file is
    new (``O_EXCL``, a random name: a planted file or symlink is never written
    through) and renamed over the entry (a symlink there is replaced, not
    followed). A write that fails removes its temporary file and raises."""
    path = cache / f"{task.key}.npz"
    if path.is_dir():
        warnings.warn(f"cache: {path} is a folder; this task is not stored", CacheWarning,
                      stacklevel=3)
        return False
    with _replacing(path) as fh:
        np.savez(fh, __task__=np.array(task.doc), __sha256__=np.array(_checksum(cols)),
                 **cols)
    return True


class _Saver:
    """Stores finished tasks in ``cache`` (if any). The first write that fails (a
    folder turned read-only, a full disk) is reported once, as a
    :class:`CacheWarning`; then storing stops and the sweep goes on: its
    results are returned, not lost."""

    def __init__(self, cache):
        self.cache = cache
        self.stored = 0
        self.failed = False

    def __call__(self, task, cols):
        if self.cache is None or self.failed:
            return
        try:
            self.stored += _store(self.cache, task, cols)
        except OSError as e:
            self.failed = True
            warnings.warn(f"cache: cannot write to {self.cache} ({e.strerror or e}); the "
                          f"sweep goes on and returns every result, but the tasks that "
                          f"finish from now on are not stored", CacheWarning, stacklevel=2)


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
            raise ValueError(f"seeds must be an integer >= 1 or a list of seeds, "
                             f"got {shown(seeds)}")
        return range(int(seeds))              # not built: its size is checked first
    values = list(seeds) if hasattr(seeds, "__iter__") else [seeds]
    if not values or not all(is_integer(s) and s >= 0 for s in values) \
            or len(set(values)) != len(values):
        raise ValueError(f"seeds: expected a non-empty list of distinct integers >= 0, "
                         f"got {shown(seeds)}")
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


def _out_path(out):
    if out is None:
        return None
    if not isinstance(out, (str, os.PathLike)) or not str(out).strip():
        raise ValueError(f"out: expected a path ending in .csv or .parquet, got {shown(out, 200)}")
    out = Path(out)
    if out.suffix not in (".csv", ".parquet"):
        raise ValueError(f"out: the file name must end in .csv or .parquet, "
                         f"got {shown(str(out), 200)}")
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
    pandas.DataFrame
        One row per grid point, seed and saved time: the axes, ``seed``, ``t``
        and the observables of :data:`COLUMNS` (``step`` is NaN for the
        continuous dynamics). ``attrs`` holds ``tasks``, ``computed``,
        ``cached``, ``compute_seconds`` and ``wall_seconds``.

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
    out = _out_path(out)
    tasks = tasks_of(kind, axes, seed_list, times, options, batch)
    runner = backend(executor, workers, scheduler)    # a scheduler is probed here
    if out is not None:
        writable_path(out, "out")
    if cache is not None:
        cache = writable_path(cache, "cache", folder=True)

    results = [_load(cache, task) for task in tasks]
    cached = sum(r is not None for r in results)
    todo = [i for i, r in enumerate(results) if r is None]
    _room(out, cache, tasks, todo, len(axes))
    report = progress_bar(progress, len(tasks), "sweep")
    report(cached)
    seconds = []
    save = _Saver(cache)

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
        raise KeyboardInterrupt(_interrupted(cache, cached + save.stored, cached + len(seconds),
                                             len(tasks), save.failed)) from None
    finally:
        report(None)
    table = _table(kind, axes, tasks, results)
    table.attrs.update(tasks=len(tasks), computed=len(seconds), cached=cached,
                       compute_seconds=float(sum(seconds)),
                       wall_seconds=time.perf_counter() - started)
    if out is not None:
        _write_table(table, out)
    return table


def _interrupted(cache, saved, done, total, failed):
    """The line of a Ctrl-C: what is kept, and how to resume."""
    if cache is None:
        return (f"{done} of {total} tasks finished, no cache: pass cache= to keep "
                f"finished tasks")
    broken = " (the folder stopped taking files: see the CacheWarning)" if failed else ""
    return (f"{saved} of {total} tasks saved in {cache}{broken}; rerun with the same "
            f"cache to resume")


#: Bytes per value of a written table, about: CSV text (17 digits, sign,
#: exponent, separator), Parquet (8-byte values, before compression).
VALUE_BYTES = {".csv": 24, ".parquet": 8}


def _rows(task) -> int:
    return len(task.t) * (len(task.seeds) if task.kind == "simulate" else len(task.points))


def _room(out, cache, tasks, todo, axes):
    """Refuse, before any task runs, outputs that would not fit on their disk:
    the table (``out``: its rows times :data:`VALUE_BYTES` per value) and the
    cache files of the tasks still to compute, summed per file system."""
    needs = []
    if out is not None:
        values = sum(map(_rows, tasks)) * (axes + 2 + max(map(len, COLUMNS.values())))
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


def _write_table(table, out):
    """Write the table atomically (a failure leaves any earlier file as it was).
    A write that fails after the sweep (the disk filled up meanwhile) is a
    warning: the table is returned either way, nothing computed is lost."""
    try:
        with _replacing(out, "w" if out.suffix == ".csv" else "wb") as fh:
            if out.suffix == ".csv":
                table.to_csv(fh, index=False)
            else:
                table.to_parquet(fh, index=False)
    except OSError as e:
        warnings.warn(f"out: cannot write {out} ({e.strerror or e}); the table is "
                      f"returned but not written", UserWarning, stacklevel=3)


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
