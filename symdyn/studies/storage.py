"""The files of a sweep: its cache of finished tasks and the table it writes.

Each finished task is stored under a key that hashes its parameters and the
symdyn version, with those parameters and a SHA-256 of its arrays inside the
file; a file that fails the check or cannot be read is reported
(:class:`CacheWarning`) and recomputed. The check is against damage and
mix-ups, not forgery: the cache is a cache, not a signature (see
:func:`~symdyn.studies.sweeps.sweep`'s ``cache``). Every file is written
atomically (a new temporary file renamed into place).

Layer 3, studies.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import math
import os
import secrets
import stat
import warnings
import zipfile
from pathlib import Path

import numpy as np


class CacheWarning(UserWarning):
    """A cache file that was not used (named with the reason; its task is recomputed),
    or a cache folder that stopped taking files (the results are still returned)."""


class _Refused(Exception):
    """A cache file refused before its arrays are read (the message says why)."""


def checksum(cols):
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


def load(cache, task):
    """The task's stored columns, or ``None`` (absent, or reported and to be recomputed)."""
    if cache is None:
        return None
    path = cache / f"{task.key}.npz"
    if not os.path.lexists(path):
        return None
    try:
        cols = _read(path, entry_bytes(task))
        doc, stored = (str(cols.pop(k, "")) for k in ("__task__", "__sha256__"))
        problem = ("it holds another task's parameters" if doc != task.doc else
                   "its arrays do not match their checksum" if stored != checksum(cols)
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


def store(cache, task, cols):
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
        np.savez(fh, __task__=np.array(task.doc), __sha256__=np.array(checksum(cols)),
                 **cols)
    return True


class Saver:
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
            self.stored += store(self.cache, task, cols)
        except OSError as e:
            self.failed = True
            warnings.warn(f"cache: cannot write to {self.cache} ({e.strerror or e}); the "
                          f"sweep goes on and returns every result, but the tasks that "
                          f"finish from now on are not stored", CacheWarning, stacklevel=2)


def interrupted(cache, saved, done, total, failed):
    """The line of a Ctrl-C: what is kept, and how to resume."""
    if cache is None:
        return (f"{done} of {total} tasks finished, no cache: pass cache= to keep "
                f"finished tasks")
    broken = " (the folder stopped taking files: see the CacheWarning)" if failed else ""
    return (f"{saved} of {total} tasks saved in {cache}{broken}; rerun with the same "
            f"cache to resume")


def write_table(table, out):
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

