"""sd.sweep under hostile or careless use: a cache that cannot be trusted,
outputs that cannot be written, Ctrl-C, killed parents, sizes beyond memory,
and arguments of the wrong type. Every fault is reported as a ValueError (or
a CacheWarning, or a one-line KeyboardInterrupt) before any work is lost."""

import builtins
import contextlib
import errno
import fnmatch
import gc
import io
import itertools
import math
import multiprocessing
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import textwrap
import threading
import time
import warnings
import zipfile

import numpy as np
import pandas as pd
import pytest
import test_sweep

import symdyn as sd
import symdyn.studies.executors as executors
import symdyn.studies.grid as grid_module
import symdyn.studies.storage as storage
import symdyn.studies.sweeps as sweep_module
from symdyn.cli import write_phase_diagrams
from symdyn.studies.phase_diagram import phase_diagram
from symdyn.studies.storage import CacheWarning

run_task = sweep_module.run_task                # the real one, before any monkeypatch
calls = test_sweep.calls                        # fixture: the keys of the tasks that run

GRID = {"n": 4, "d": 3, "beta": [1.0, 2.0]}
T = [0.0, 1.0]
RUN = {"seeds": 2, "batch": 1, "executor": "serial"}      # four tasks


@pytest.fixture(scope="module")
def reference():
    return sd.sweep(GRID, T, **RUN)


@pytest.fixture
def no_work(monkeypatch):
    def refuse(task):
        raise AssertionError("a task ran")

    monkeypatch.setattr(sweep_module, "run_task", refuse)


# --- 3. the cache can be trusted ------------------------------------------------------

def test_swapped_cache_files_are_recomputed(reference, tmp_path, calls):
    sd.sweep(GRID, T, cache=tmp_path, **RUN)
    a, b = sorted(tmp_path.glob("*.npz"))[:2]
    data_a, data_b = a.read_bytes(), b.read_bytes()
    a.write_bytes(data_b)
    b.write_bytes(data_a)
    calls.clear()
    with pytest.warns(CacheWarning, match="another task's parameters") as record:
        df = sd.sweep(GRID, T, cache=tmp_path, **RUN)
    assert sorted(str(w.message).split(":")[1].strip() for w in record) == [str(a), str(b)]
    assert len(calls) == 2 and df.attrs["cached"] == 2
    pd.testing.assert_frame_equal(df, reference)
    calls.clear()
    sd.sweep(GRID, T, cache=tmp_path, **RUN)               # repaired: all four trusted
    assert calls == []


class _Payload:
    def __init__(self, sentinel):
        self.sentinel = sentinel

    def __reduce__(self):
        return (os.mkdir, (self.sentinel,))


def _tampered(path):
    with np.load(path) as f:
        cols = dict(f)
    cols["gamma"] = cols["gamma"] + 0.125
    np.savez(path, **cols)


def _pickled(path):
    sentinel = str(path.parent.parent / "sentinel")
    with open(path, "wb") as f:
        np.savez(f, gamma=np.array([_Payload(sentinel)], dtype=object))


@pytest.mark.parametrize("damage, reason", [
    (lambda p: p.write_bytes(p.read_bytes()[: p.stat().st_size // 2]), "cannot be read"),
    (lambda p: p.write_bytes(b""), "cannot be read"),
    (lambda p: p.write_bytes(os.urandom(500)), "cannot be read"),
    (lambda p: (p.unlink(), p.mkdir()), "cannot be read"),
    (lambda p: np.savez(p, seed=np.zeros(2, int), t=np.array([0.0, 5.0])), "another task"),
    (_tampered, "do not match their checksum"),
    (_pickled, "cannot be read"),
], ids=["truncated", "empty", "garbage", "folder", "foreign", "tampered", "pickle"])
def test_damaged_cache_file_is_reported_and_recomputed(reference, tmp_path, calls, damage,
                                                        reason):
    cache = tmp_path / "cache"
    sd.sweep(GRID, T, cache=cache, **RUN)
    victim = sorted(cache.glob("*.npz"))[1]
    damage(victim)
    calls.clear()
    with pytest.warns(CacheWarning, match=f"{victim}: .*{reason}"):
        df = sd.sweep(GRID, T, cache=cache, **RUN)
    assert calls == [victim.stem] and df.attrs["cached"] == 3
    pd.testing.assert_frame_equal(df, reference)
    assert not (tmp_path / "sentinel").exists()            # nothing was unpickled


def test_cache_must_be_a_writable_folder(tmp_path, no_work):
    (tmp_path / "file").write_text("x")
    for cache in ["", "  ", 5, tmp_path / "file", tmp_path / "file" / "sub"]:
        with pytest.raises(ValueError, match="^cache: "):
            sd.sweep(GRID, T, cache=cache, **RUN)


# --- 4. nothing computed is thrown away ----------------------------------------------

def test_outputs_are_checked_before_any_task_runs(tmp_path, no_work):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    for out in [blocker / "table.csv", tmp_path, 5]:
        with pytest.raises(ValueError, match="^out: "):
            sd.sweep(GRID, T, out=out, **RUN)
    with pytest.raises(ValueError, match="^out: "):
        write_phase_diagrams(blocker, d=[4], beta=[1.0], seeds=1, points=3, executor="serial")
    with pytest.raises(ValueError, match="^cache: "):
        write_phase_diagrams(tmp_path / "pd", d=[4], beta=[1.0], seeds=1, points=3,
                             executor="serial", cache=blocker)


def _interrupt_fourth(monkeypatch):
    real = sweep_module.run_task
    count = []

    def task(t):
        count.append(1)
        if len(count) == 4:
            raise KeyboardInterrupt
        return real(t)

    monkeypatch.setattr(sweep_module, "run_task", task)


def test_ctrl_c_says_what_was_saved_and_the_rerun_resumes(reference, tmp_path, monkeypatch):
    _interrupt_fourth(monkeypatch)
    with pytest.raises(KeyboardInterrupt,
                       match=f"^3 of 4 tasks saved in {tmp_path}; rerun with the same cache"):
        sd.sweep(GRID, T, cache=tmp_path, **RUN)
    assert len(list(tmp_path.glob("*.npz"))) == 3
    monkeypatch.undo()
    df = sd.sweep(GRID, T, cache=tmp_path, **RUN)
    assert df.attrs["cached"] == 3 and df.attrs["computed"] == 1
    pd.testing.assert_frame_equal(df, reference)


def test_ctrl_c_without_cache_says_how_to_keep_results(monkeypatch):
    _interrupt_fourth(monkeypatch)
    with pytest.raises(KeyboardInterrupt, match="no cache: pass cache= to keep"):
        sd.sweep(GRID, T, **RUN)


def _second_task_sleeps(task):
    """Module level, so that local workers unpickle it by name under any start
    method (fork, spawn, forkserver); every task leaves a trace that it ran."""
    open(os.environ["SYMDYN_TEST_MARKER"] + ".reached", "a").close()
    if task.seeds == (1,):
        time.sleep(30)
        open(os.environ["SYMDYN_TEST_MARKER"], "w").close()
    return run_task(task)


def test_ctrl_c_stops_local_workers_without_waiting(tmp_path, monkeypatch):
    marker = tmp_path / "finished"
    monkeypatch.setenv("SYMDYN_TEST_MARKER", str(marker))
    monkeypatch.setattr(sweep_module, "run_task", _second_task_sleeps)
    before = {p.pid for p in multiprocessing.active_children()}

    def ctrl_c(done, total):
        if done == 1:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt, match="^1 of 2 tasks saved in "):
        sd.sweep(GRID | {"beta": 1.0}, T, seeds=2, batch=1, workers=2, cache=tmp_path,
                 progress=ctrl_c)
    # the patched task ran in the workers (so the test means something whatever
    # the start method), and the sleeping one was not waited for
    assert (tmp_path / "finished.reached").exists()
    assert not marker.exists()
    for p in multiprocessing.active_children():
        if p.pid not in before:
            p.join(60)                           # a hang guard: killed, they end at once
            assert not p.is_alive()


_ORPHAN_SCRIPT = textwrap.dedent("""
    import faulthandler, os, threading
    import symdyn
    import symdyn.studies.sweeps

    def slow(task):
        print(os.getpid(), flush=True)
        threading.Event().wait()    # until killed: never returns, whatever the load (a
                                    # sleep that ended returned None to the sweep)

    if __name__ == "__main__":
        faulthandler.dump_traceback_later(240)     # where it waits, if it hangs
        symdyn.studies.sweeps.run_task = slow
        symdyn.sweep({"n": 3, "d": 2}, [0.0, 1.0], seeds=2, batch=1, workers=2)
""")


def _line(proc, seconds, log):
    """The next line of ``proc``'s unbuffered output (nothing read ahead, so the
    wait sees every line); a hang guard of ``seconds`` (it fails, never waits
    for ever: the workers block until killed), showing ``proc``'s stderr
    (``log``: where the script's traceback dump lands)."""
    import selectors
    with selectors.DefaultSelector() as sel:
        sel.register(proc.stdout, selectors.EVENT_READ)
        if not sel.select(seconds):
            raise AssertionError(f"no worker reported within {seconds} s; the sweep's "
                                 f"stderr:\n{log.read_text()}")
    return proc.stdout.readline().decode()


def _alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_killed_sweep_leaves_no_orphaned_workers(tmp_path):
    script = tmp_path / "sweep_script.py"
    script.write_text(_ORPHAN_SCRIPT)
    log = tmp_path / "stderr.txt"
    with open(log, "wb") as err:
        proc = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE,
                                stderr=err, bufsize=0)
    workers = []
    try:
        for _ in range(50):          # the workers' pids, past anything else on stdout
            line = _line(proc, 300, log)
            assert line, f"the sweep script ended early (exit {proc.poll()})"
            if line.strip().isdigit():
                workers.append(int(line))
            if len(workers) == 2:
                break
        assert len(workers) == 2
        assert all(_alive(pid) for pid in workers)
        proc.kill()
        proc.wait()
        for _ in range(600):                     # a hang guard: up to 60 s
            if not any(_alive(pid) for pid in workers):
                break
            time.sleep(0.1)
        assert not [pid for pid in workers if _alive(pid)]
    finally:
        proc.kill()
        proc.stdout.close()
        for pid in workers:
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)


# --- 5. sizes are checked before allocation ------------------------------------------

def test_a_trillion_point_grid_fails_before_its_product_is_built(monkeypatch, no_work):
    def product(*args):
        raise AssertionError("the product was built")

    monkeypatch.setattr(grid_module.itertools, "product", product)
    grid = {"beta": [float(b) for b in range(10**4)], "d": range(1, 10**4 + 1),
            "n": range(2, 10**4 + 2)}
    with pytest.raises(ValueError, match=r"sweep table \(1,000,000,000,000 grid points.*GiB"):
        sd.sweep(grid, T, **RUN)
    monkeypatch.setattr(grid_module.itertools, "product", itertools.product)


@pytest.mark.parametrize("grid, kw, match", [
    ({}, {"seeds": 10**12}, r"sweep table .*1,000,000,000,000 seeds.*GiB"),
    ({"n": 10**5, "d": 10**5}, {}, r"one task .*n = 100000, d = 100000.*GiB"),
    ({"weights": "kaiming-untied", "d": 512, "step": 1e-6}, {},
     r"one task .*1,000,000 weight draws.*GiB"),
])
def test_sizes_beyond_memory_are_value_errors_with_the_estimate(grid, kw, match, no_work):
    with pytest.raises(ValueError, match=match):
        sd.sweep(grid, T, executor="serial", **kw)


def test_workers_are_capped_at_a_multiple_of_the_cores(no_work):
    cap = 4 * (os.cpu_count() or 1)
    with pytest.raises(ValueError, match=rf"workers must be .*\[1, {cap}\]"):
        sd.sweep(GRID, T, workers=cap + 1)
    with pytest.raises(ValueError, match=rf"workers must be .*\[1, {cap}\]"):
        sd.sweep(GRID, T, workers=10**6, executor="serial")


def test_phase_diagram_points_are_checked_before_the_times_are_built(no_work):
    with pytest.raises(ValueError, match=r"points = 1,000,000,000,000.*GiB"):
        write_phase_diagrams("unused", d=[4], points=10**12, executor="serial")
    assert not os.path.exists("unused")


# --- 6. wrong types give ValueError naming the argument ------------------------------

@pytest.mark.parametrize("kw, name", [
    ({"rtol": "a"}, "rtol"), ({"atol": [1e-3]}, "atol"), ({"rtol": float("nan")}, "rtol"),
    ({"cluster_threshold": "0.5"}, "cluster_threshold"),
    ({"cluster_threshold": None}, "cluster_threshold"),
    ({"seeds": "a"}, "seeds"), ({"seeds": 2.5}, "seeds"), ({"batch": 2.5}, "batch"),
    ({"workers": "x", "executor": None}, "workers"), ({"kind": ["simulate"]}, "kind"),
    ({"kind": {}}, "kind"), ({"cache": 2.5}, "cache"), ({"out": 5}, "out"),
    ({"out": b"t.csv"}, "out"), ({"scheduler": 5, "executor": None}, "scheduler"),
])
def test_wrong_types_are_value_errors_naming_the_argument(kw, name, no_work):
    kw = {"executor": "serial", **kw}
    with pytest.raises(ValueError, match=f"^{name}"):
        sd.sweep(GRID, T, **kw)


def test_numpy_scalars_are_accepted():
    df = sd.sweep({"n": np.int64(4), "d": np.int32(3), "beta": [np.float32(1.0), 2.0]}, T,
                  seeds=np.int64(2), batch=np.int64(1), executor="serial",
                  cluster_threshold=np.float32(0.5), rtol=np.float64(1e-10),
                  atol=np.float32(1e-12))
    pd.testing.assert_frame_equal(df, sd.sweep(GRID, T, **RUN, cluster_threshold=0.5,
                                               rtol=1e-10, atol=float(np.float32(1e-12))))


def test_phase_diagram_takes_single_values():
    kw = dict(t=[0.0, 1.0, 10.0], n=4, seeds=1, executor="serial")
    one, table = phase_diagram("post-ln", d=4, beta=2.0, **kw)
    listed, table_listed = phase_diagram(["post-ln"], d=[4], beta=[2.0], **kw)
    pd.testing.assert_frame_equal(table, table_listed)
    assert list(one) == ["post-ln"]
    assert one["post-ln"].prediction.tolist() == listed["post-ln"].prediction.tolist()



# --- 7. files and caches under attack or failure (issue 24, item 6) -----------------
# Tests run as root here, so chmod does not make a folder read-only: the faults are
# injected at the os level (os.open, io.open, os.mkdir, os.fdopen), below every code
# path of symdyn, as a read-only mount or a full disk would raise them.

def _inside(path, folder):
    if not isinstance(path, (str, bytes, os.PathLike)):
        return False                           # a file descriptor
    p = os.path.realpath(os.fsdecode(path))
    return p == folder or p.startswith(folder + os.sep)


def refuse_writes(monkeypatch, folder, code=errno.EROFS, allow=0, names="*"):
    """Writes under ``folder`` (files matching ``names``) raise ``OSError(code)``
    after the first ``allow`` of them: new or opened-for-writing files, folders."""
    folder = os.path.realpath(folder)
    real_os_open, real_open, real_mkdir = os.open, io.open, os.mkdir
    seen = []

    def refused(path):
        if not _inside(path, folder) or not fnmatch.fnmatch(os.path.basename(path), names):
            return False
        seen.append(path)
        return len(seen) > allow

    def error(path):
        return OSError(code, os.strerror(code), os.fsdecode(path))

    def os_open(path, flags, mode=0o777, *, dir_fd=None):
        if flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT) and refused(path):
            raise error(path)
        return real_os_open(path, flags, mode, dir_fd=dir_fd)

    def io_open(file, mode="r", *args, **kw):
        if set(mode) & set("wax+") and refused(file):
            raise error(file)
        return real_open(file, mode, *args, **kw)

    def mkdir(path, mode=0o777, *, dir_fd=None):
        if refused(path):
            raise error(path)
        return real_mkdir(path, mode, dir_fd=dir_fd)

    monkeypatch.setattr(os, "open", os_open)
    monkeypatch.setattr(io, "open", io_open)
    monkeypatch.setattr(builtins, "open", io_open)
    monkeypatch.setattr(os, "mkdir", mkdir)
    return seen


class _FullDisk(io.RawIOBase):
    """A file whose writes fail with ENOSPC after ``room`` bytes."""

    def __init__(self, fh, room):
        self.fh, self.room = fh, room

    def writable(self):
        return True

    def write(self, data):
        if len(data) > self.room:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        self.room -= len(data)
        return self.fh.write(data)

    def close(self):
        self.fh.close()
        super().close()


def fill_disk(monkeypatch, folder, files_that_fit):
    """Files opened by descriptor under ``folder`` (symdyn's temporaries) hit a
    full disk after ``files_that_fit`` of them, 100 bytes into the next."""
    if not os.path.isdir("/proc/self/fd"):
        # the full disk is simulated per file, found from its descriptor in
        # /proc/self/fd (Linux); elsewhere this test cannot run, and says so
        pytest.skip("simulating a full disk needs /proc/self/fd (Linux)")
    folder = os.path.realpath(folder)
    real = os.fdopen
    opened = []

    def fdopen(fd, mode="r", *args, **kw):
        fh = real(fd, mode, *args, **kw)
        if _inside(os.readlink(f"/proc/self/fd/{fd}"), folder):
            opened.append(fd)
            if len(opened) > files_that_fit:
                return _FullDisk(fh, 100)
        return fh

    monkeypatch.setattr(os, "fdopen", fdopen)


# 6a. temporaries: a random name created with O_EXCL, never a planted symlink's target

def _alternating_names(monkeypatch):
    """Every temporary's first name is ".<entry>.planted.tmp" (as if guessed)."""
    count = itertools.count()

    def token_hex(nbytes):
        k = next(count)
        return "planted" if k % 2 == 0 else f"{k:016x}"

    monkeypatch.setattr(storage.secrets, "token_hex", token_hex)


def _planted_symlinks(tmp_path, monkeypatch):
    """Plant, for every entry, symlinks to a victim file at the old predictable
    temporary name and at the first name the sweep will try; run the sweep and
    return the table and the victim's bytes."""
    keys = [p.stem for p in sorted((tmp_path / "first").glob("*.npz"))]
    victim = tmp_path / "victim"
    victim.write_bytes(b"precious")
    cache = tmp_path / "cache"
    cache.mkdir()
    for key in keys:
        (cache / f"{key}.{os.getpid()}.tmp.npz").symlink_to(victim)
        (cache / f".{key}.npz.planted.tmp").symlink_to(victim)
    _alternating_names(monkeypatch)
    df = sd.sweep(GRID, T, cache=cache, **RUN)
    return df, victim.read_bytes(), [cache / f"{key}.npz" for key in keys]


def test_cache_temporaries_never_write_through_a_planted_symlink(reference, tmp_path,
                                                                 monkeypatch):
    sd.sweep(GRID, T, cache=tmp_path / "first", **RUN)
    df, victim, entries = _planted_symlinks(tmp_path, monkeypatch)
    assert victim == b"precious"
    pd.testing.assert_frame_equal(df, reference)
    assert all(p.is_file() and not p.is_symlink() for p in entries)
    planted = sorted(entries[0].parent.glob(".*.planted.tmp"))
    assert len(planted) == 4 and all(p.is_symlink() for p in planted)   # left alone
    monkeypatch.undo()
    assert sd.sweep(GRID, T, cache=entries[0].parent, **RUN).attrs["cached"] == 4


def _old_store(cache, task, cols):
    tmp = cache / f"{task.key}.{os.getpid()}.tmp.npz"
    np.savez(tmp, __task__=np.array(task.doc), __sha256__=np.array(storage.checksum(cols)),
             **cols)
    os.replace(tmp, cache / f"{task.key}.npz")
    return True


def _exclusive_without_o_excl(folder, prefix):
    path = folder / f"{prefix}{storage.secrets.token_hex(8)}.tmp"
    return os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o666), path


@pytest.mark.parametrize("unsafe", [("store", _old_store),
                                    ("_exclusive", _exclusive_without_o_excl)],
                         ids=["predictable name", "no O_EXCL"])
def test_control_planted_symlinks_are_written_through_by_unsafe_temporaries(
        tmp_path, monkeypatch, unsafe):
    sd.sweep(GRID, T, cache=tmp_path / "first", **RUN)
    monkeypatch.setattr(storage, *unsafe)
    _, victim, _ = _planted_symlinks(tmp_path, monkeypatch)
    assert victim != b"precious"


# 6b. an entry is refused by its declared sizes before anything is inflated

@pytest.fixture(scope="module")
def bomb(tmp_path_factory):
    """A real zip bomb: 256 MiB of zeros as gamma.npy in a ~1 MiB file."""
    path = tmp_path_factory.mktemp("bomb") / "bomb.npz"
    n = 2**28
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as z, \
            z.open("gamma.npy", "w", force_zip64=True) as m:
        np.lib.format.write_array_header_1_0(
            m, {"descr": "<f8", "fortran_order": False, "shape": (n // 8,)})
        chunk = bytes(2**22)
        for _ in range(n // len(chunk)):
            m.write(chunk)
    return path


def _lying_header(path):
    """An array header that claims 2**40 float64s in a member of a few bytes."""
    with zipfile.ZipFile(path, "w") as z, z.open("gamma.npy", "w") as m:
        np.lib.format.write_array_header_1_0(
            m, {"descr": "<f8", "fortran_order": False, "shape": (2**40,)})
        m.write(bytes(16))


def _bomb_scenario(tmp_path, monkeypatch, damage):
    """Damage one entry, spy on numpy's array reader, rerun: (warnings, arrays read)."""
    cache = tmp_path / "cache"
    sd.sweep(GRID, T, cache=cache, **RUN)
    victim = sorted(cache.glob("*.npz"))[1]
    damage(victim)
    inflated = []
    real = np.lib.format.read_array

    def spy(fp, *args, **kw):
        np.lib.format.read_magic(fp)
        shape = np.lib.format.read_array_header_1_0(fp)[0]
        inflated.append(shape)
        if math.prod(shape) > 2**20:
            raise MemoryError(f"the test's spy: an array of {shape} was inflated")
        fp.seek(0)
        return real(fp, *args, **kw)

    monkeypatch.setattr(np.lib.format, "read_array", spy)
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        df = sd.sweep(GRID, T, cache=cache, **RUN)
    return df, [str(w.message) for w in record if w.category is CacheWarning], inflated


@pytest.mark.parametrize("damage, reason", [
    (None, r"declares 268,435,5\d\d bytes unpacked, more than the [\d,]+ this task can "
           r"fill; not read"),
    (_lying_header, r"gamma.npy declares \(1099511627776,\) float64 \(8,796,093,022,208 "
                    r"bytes\) in 144; not read"),
], ids=["zip bomb", "lying header"])
def test_cache_entry_refused_by_its_declared_size(reference, tmp_path, monkeypatch, bomb,
                                                  damage, reason):
    damage = damage or (lambda p: shutil.copy(bomb, p))
    df, messages, inflated = _bomb_scenario(tmp_path, monkeypatch, damage)
    assert len(messages) == 1 and re.search(reason, messages[0]), messages
    assert all(math.prod(s) < 100 for s in inflated)           # only the 3 good entries
    pd.testing.assert_frame_equal(df, reference)


def test_control_without_the_size_check_the_bomb_is_inflated(tmp_path, monkeypatch, bomb):
    monkeypatch.setattr(storage, "_declared_sizes", lambda fh, limit: None)
    _, messages, inflated = _bomb_scenario(tmp_path, monkeypatch,
                                           lambda p: shutil.copy(bomb, p))
    assert (2**25,) in inflated and "the test's spy" in messages[0]


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no named pipes")
def test_a_fifo_in_the_cache_is_not_waited_on(reference, tmp_path, calls):
    sd.sweep(GRID, T, cache=tmp_path, **RUN)
    victim = sorted(tmp_path.glob("*.npz"))[2]
    victim.unlink()
    os.mkfifo(victim)
    calls.clear()
    with pytest.warns(CacheWarning, match=f"{victim}: it cannot be read .*not a regular"):
        df = sd.sweep(GRID, T, cache=tmp_path, **RUN)
    assert calls == [victim.stem]
    pd.testing.assert_frame_equal(df, reference)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no named pipes")
def test_control_a_blocking_open_waits_on_the_fifo(tmp_path, monkeypatch):
    sd.sweep(GRID, T, cache=tmp_path, **RUN)
    victim = sorted(tmp_path.glob("*.npz"))[2]
    victim.unlink()
    os.mkfifo(victim)
    monkeypatch.delattr(os, "O_NONBLOCK")               # the open as it was: blocking
    runner = threading.Thread(target=sd.sweep, args=(GRID, T),
                              kwargs=dict(cache=tmp_path, **RUN), daemon=True)
    runner.start()
    runner.join(1.0)
    assert runner.is_alive()                            # stuck in open()
    with open(victim, "wb"):                            # a writer releases it
        pass
    runner.join(120)                                    # a hang guard
    assert not runner.is_alive()


# 6c. a cache folder that stops taking files mid-sweep loses nothing

def _faulty_cache_scenario(tmp_path, monkeypatch, fault):
    """The cache takes two entries, then fails (read-only, or full): the table,
    the CacheWarnings, the files left in the cache."""
    cache = tmp_path / "cache"
    cache.mkdir()
    if fault == "read-only":
        refuse_writes(monkeypatch, cache, errno.EROFS, allow=2, names=".*.tmp")
    else:
        fill_disk(monkeypatch, cache, files_that_fit=2)
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        df = sd.sweep(GRID, T, cache=cache, **RUN)
    return df, [str(w.message) for w in record if w.category is CacheWarning], \
        sorted(p.name for p in cache.iterdir())


@pytest.mark.parametrize("fault, reason", [("read-only", "Read-only file system"),
                                           ("disk full", "No space left on device")])
def test_a_cache_that_stops_taking_files_loses_no_result(reference, tmp_path, monkeypatch,
                                                         fault, reason):
    df, messages, files = _faulty_cache_scenario(tmp_path, monkeypatch, fault)
    pd.testing.assert_frame_equal(df, reference)
    assert len(messages) == 1, messages                 # warned once
    assert messages[0].startswith(f"cache: cannot write to {tmp_path / 'cache'} ({reason}); "
                                  f"the sweep goes on and returns every result")
    assert len(files) == 2 and all(f.endswith(".npz") for f in files)   # no temporaries
    monkeypatch.undo()
    again = sd.sweep(GRID, T, cache=tmp_path / "cache", **RUN)
    assert again.attrs["cached"] == 2 and again.attrs["computed"] == 2


def test_ctrl_c_after_the_cache_failed_counts_only_what_is_stored(tmp_path, monkeypatch):
    cache = tmp_path / "cache"
    cache.mkdir()
    refuse_writes(monkeypatch, cache, errno.EROFS, allow=2, names=".*.tmp")
    _interrupt_fourth(monkeypatch)
    with pytest.warns(CacheWarning, match="cannot write"), \
            pytest.raises(KeyboardInterrupt, match=r"^2 of 4 tasks saved in .*cache \(the "
                                                   r"folder stopped taking files"):
        sd.sweep(GRID, T, cache=cache, **RUN)


def _store_without_a_net(self, task, cols):
    if self.cache is not None:
        self.stored += storage.store(self.cache, task, cols)


@pytest.mark.parametrize("fault", ["read-only", "disk full"])
def test_control_a_cache_error_without_the_net_loses_the_sweep(tmp_path, monkeypatch, fault):
    monkeypatch.setattr(storage.Saver, "__call__", _store_without_a_net)
    with pytest.raises(OSError):
        _faulty_cache_scenario(tmp_path, monkeypatch, fault)


# 6d. out= on a read-only or full disk is refused before the work

def test_out_on_a_read_only_folder_is_refused_before_any_task_runs(tmp_path, monkeypatch,
                                                                   no_work):
    ro = tmp_path / "ro"
    ro.mkdir()
    refuse_writes(monkeypatch, ro)
    for kw, match in [({"out": ro / "table.csv"}, f"^out: cannot write to '{ro}'"),
                      ({"out": ro / "sub" / "t.parquet"}, f"^out: cannot create '{ro}/sub'"),
                      ({"cache": ro}, f"^cache: cannot write to '{ro}'"),
                      ({"cache": ro / "cache"}, f"^cache: cannot create '{ro}/cache'")]:
        with pytest.raises(ValueError, match=match + r" \(Read-only file system\)"):
            sd.sweep(GRID, T, **kw, **RUN)


def test_control_without_the_probe_the_read_only_out_is_found_after_the_work(
        tmp_path, monkeypatch, no_work):
    monkeypatch.setattr(sweep_module, "writable_path", lambda path, name, folder=False: path)
    refuse_writes(monkeypatch, tmp_path)
    with pytest.raises(AssertionError, match="a task ran"):
        sd.sweep(GRID, T, out=tmp_path / "table.csv", **RUN)


def _disk(free):
    real = shutil.disk_usage

    def usage(path):
        u = real(path)
        return type(u)(u.total, u.total - free, free)
    return usage


@pytest.mark.parametrize("kw, match", [
    ({"out": "table.csv"}, r"^out: not enough free space: the table \(\d+(\.\d+)? kB in "
                           r"'.*'\) need about .* kB, the disk has 500 bytes free"),
    ({"cache": "cache"}, r"^cache: not enough free space: 4 cache files \(.* kB in "),
    ({"out": "table.parquet", "cache": "cache"},
     r"^out: not enough free space: the table \(.*\) and 4 cache files \(.*\) need about"),
])
def test_out_and_cache_on_a_full_disk_are_refused_before_any_task_runs(
        tmp_path, monkeypatch, no_work, kw, match):
    monkeypatch.setattr(sweep_module.shutil, "disk_usage", _disk(500))
    kw = {k: tmp_path / v for k, v in kw.items()}
    with pytest.raises(ValueError, match=match):
        sd.sweep(GRID, T, **kw, **RUN)


def test_control_with_room_on_the_disk_the_sweep_writes(reference, tmp_path, monkeypatch):
    monkeypatch.setattr(sweep_module.shutil, "disk_usage", _disk(10**6))  # 1 MB is enough
    out = tmp_path / "table.csv"
    df = sd.sweep(GRID, T, out=out, cache=tmp_path / "cache", **RUN)
    pd.testing.assert_frame_equal(df, reference)
    assert pd.read_csv(out).gamma.tolist() == reference.gamma.tolist()
    monkeypatch.setattr(sweep_module, "room", lambda *args: None)       # the check removed
    monkeypatch.setattr(sweep_module.shutil, "disk_usage", _disk(500))
    monkeypatch.setattr(sweep_module, "run_task", lambda task: 1 / 0)
    with pytest.raises(ZeroDivisionError):
        sd.sweep(GRID, T, out=out, cache=tmp_path / "empty", **RUN)


def test_a_table_that_cannot_be_written_at_the_end_is_returned(reference, tmp_path,
                                                                monkeypatch):
    out = tmp_path / "table.csv"
    out.write_text("an earlier table\n")
    refuse_writes(monkeypatch, tmp_path, errno.ENOSPC, names=".table.csv.*.tmp")
    with pytest.warns(UserWarning, match=f"^out: cannot write {out} \\(No space left on "
                                         f"device\\); the table is returned but not written"):
        df = sd.sweep(GRID, T, out=out, **RUN)
    pd.testing.assert_frame_equal(df, reference)
    assert out.read_text() == "an earlier table\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["table.csv"]


def _old_write_table(table, out):
    table.to_csv(out, index=False)


def test_control_a_direct_write_at_the_end_loses_the_table(tmp_path, monkeypatch):
    monkeypatch.setattr(sweep_module, "write_table", _old_write_table)
    out = tmp_path / "table.csv"
    out.write_text("an earlier table\n")
    refuse_writes(monkeypatch, tmp_path, errno.ENOSPC, allow=1, names="table.csv")  # probe
    with pytest.raises(OSError, match="No space left"):
        sd.sweep(GRID, T, out=out, **RUN)


# 6e. a scheme name is never a path

def test_a_scheme_named_with_a_slash_gets_a_safe_file_name(tmp_path):
    s = sd.custom_scheme("a/b", "r*A_norm**2")
    _, files = write_phase_diagrams(tmp_path, schemes=[s], d=[4], beta=[1.0], n=4, seeds=1,
                                    points=3, executor="serial")
    assert [p.name for p in files["a/b"]] == ["phase_diagram_a_b.png", "phase_diagram_a_b.svg"]
    assert all(p.parent == tmp_path and p.stat().st_size > 1000 for p in files["a/b"])


def test_control_the_raw_name_fails_after_the_sweep(tmp_path, monkeypatch, calls):
    import symdyn.output.diagrams as diagrams

    monkeypatch.setattr(diagrams, "file_part", str)
    s = sd.custom_scheme("a/b", "r*A_norm**2")
    with pytest.raises(FileNotFoundError, match="phase_diagram_a/b"):
        write_phase_diagrams(tmp_path, schemes=[s], d=[4], beta=[1.0], n=4, seeds=1,
                             points=3, executor="serial")
    assert calls                                        # after the work


# --- 8. a Dask scheduler address that is wrong fails in seconds (issue 24, item 7) ------

HTTP_400 = b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"


@contextlib.contextmanager
def peer(kind):
    """A local address: "closed" (nobody listens), "silent" (accepts, never
    answers), "http" (a web server: answers a request with a 400), "banner"
    (speaks first, in HTTP), "ssh" (speaks first, an SSH banner). Yields
    ``tcp://127.0.0.1:PORT``."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    address = f"tcp://127.0.0.1:{sock.getsockname()[1]}"
    if kind == "closed":
        sock.close()
        yield address
        return
    sock.listen(16)                    # the kernel completes the TCP handshakes
    stop = threading.Event()

    def answer(conn):
        with conn:
            conn.settimeout(30)
            try:
                if kind == "ssh":
                    conn.sendall(b"SSH-2.0-OpenSSH_9.2\r\n")
                elif kind == "banner" or conn.recv(65536):
                    conn.sendall(HTTP_400)
                stop.wait(30)
            except OSError:
                pass

    def serve():
        sock.settimeout(0.05)
        while not stop.is_set():
            try:
                conn, _ = sock.accept()
            except OSError:
                continue
            threading.Thread(target=answer, args=(conn,), daemon=True).start()

    if kind != "silent":
        threading.Thread(target=serve, daemon=True).start()
    try:
        yield address
    finally:
        stop.set()
        sock.close()


@pytest.fixture
def quick_probe(monkeypatch):
    pytest.importorskip("distributed")
    monkeypatch.setattr(executors, "PROBE_SECONDS", 1.0)


@pytest.fixture
def no_client(monkeypatch):
    """The addresses a Dask client was asked to connect to. "In seconds" means:
    the probe, each of its steps bounded (PROBE_SECONDS), answers before any
    client waits on the address (the client's wait is what hung)."""
    asked = []

    def connect(self):
        asked.append(self.address)
        raise ValueError(f"scheduler: the test's stand-in client for {self.address}")

    monkeypatch.setattr(executors.Dask, "_connect", connect)
    return asked


@pytest.mark.parametrize("kind, reason", [
    ("closed", "cannot reach {}: Connection refused"),
    ("silent", "{} accepted the connection but sent nothing within 1 s"),
    ("http", r"{} is a web server \(it answers HTTP\), not a Dask scheduler; the "
             r"scheduler listens on port 8786 by default, its dashboard on 8787"),
    ("banner", r"{} is a web server \(it answers HTTP\)"),
    ("ssh", r"{} does not speak Dask's protocol \(its first bytes are b'SSH-2.0-'\)"),
])
def test_a_wrong_scheduler_address_fails_in_seconds_naming_it(quick_probe, no_work, no_client,
                                                              kind, reason):
    with peer(kind) as address:
        with pytest.raises(ValueError, match="^scheduler: " + reason.format(address)):
            sd.sweep(GRID, T, scheduler=address)
    assert no_client == []


def test_an_unknown_or_slow_to_resolve_host_fails_in_seconds(quick_probe, no_work, no_client,
                                                             monkeypatch):
    with pytest.raises(ValueError, match="^scheduler: cannot reach tcp://no-such-host.invalid"
                                         ":8786: .*resolve"):
        sd.sweep(GRID, T, scheduler="tcp://no-such-host.invalid:8786")
    hang = threading.Event()
    monkeypatch.setattr(socket, "getaddrinfo", lambda *a, **k: hang.wait(60))
    with pytest.raises(ValueError, match="^scheduler: cannot reach tcp://scheduler.example:"
                                         "8786: 'scheduler.example' did not resolve within 1 s"):
        sd.sweep(GRID, T, scheduler="tcp://scheduler.example:8786")
    hang.set()
    assert no_client == []


def _connect_as_before(self):
    """Dask's client as symdyn called it before the probe: only OSError caught."""
    try:
        return self._distributed.Client(self.address, timeout=self.timeout)
    except OSError as e:
        raise ValueError(f"scheduler: cannot reach {self.address}: {e}") from None


def test_without_the_probe_the_client_still_names_an_http_peer(monkeypatch):
    pytest.importorskip("distributed")
    monkeypatch.setattr(executors, "probe_scheduler", lambda address: None)
    with peer("http") as address:
        with pytest.raises(ValueError, match=f"^scheduler: cannot reach {address}: it does "
                                             f"not speak Dask's protocol"):
            executors.Dask(address=address).run(abs, [1], print)


def test_control_unprobed_peers_give_a_memory_error_or_a_hang(monkeypatch):
    pytest.importorskip("distributed")
    monkeypatch.setattr(executors, "probe_scheduler", lambda address: None)
    monkeypatch.setattr(executors.Dask, "_connect", _connect_as_before)
    with peer("http") as address, pytest.raises(MemoryError, match="EiB") as info:
        executors.Dask(address=address).run(abs, [1], print)
    del info            # the half-built client: collected here, not on another thread
    gc.collect()
    errors = []

    def connect(address):
        try:
            executors.Dask(address=address, timeout="2s").run(abs, [1], print)
        except BaseException as e:
            errors.append(e)

    with peer("silent") as address:
        hung = threading.Thread(target=connect, args=(address,), daemon=True)
        hung.start()
        hung.join(4)                   # twice the client's own timeout
        assert hung.is_alive() and not errors
    hung.join(10)                      # the listener closed: the connection is reset
    errors.clear()
    gc.collect()


def test_a_real_scheduler_passes_the_probe(reference):
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=False,
                                  protocol="tcp://", dashboard_address=None) as cluster:
        assert cluster.scheduler_address.startswith("tcp://")
        executors.probe_scheduler(cluster.scheduler_address)
        df = sd.sweep(GRID, T, seeds=2, batch=1, scheduler=cluster.scheduler_address)
    pd.testing.assert_frame_equal(df, reference)
