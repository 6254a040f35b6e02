"""sd.sweep under hostile or careless use: a cache that cannot be trusted,
outputs that cannot be written, Ctrl-C, killed parents, sizes beyond memory,
and arguments of the wrong type. Every fault is reported as a ValueError (or
a CacheWarning, or a one-line KeyboardInterrupt) before any work is lost."""

import multiprocessing
import os
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pandas as pd
import pytest
import test_sweep

import symdyn as sd
import symdyn.grid as grid_module
import symdyn.sweeps as sweep_module
from symdyn.figures import write_phase_diagrams
from symdyn.phase_diagram import phase_diagram
from symdyn.sweeps import CacheWarning

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
            p.join(5)
            assert not p.is_alive()


_ORPHAN_SCRIPT = textwrap.dedent("""
    import os, time
    import symdyn
    import symdyn.sweeps

    def slow(task):
        print(os.getpid(), flush=True)
        time.sleep(120)

    if __name__ == "__main__":
        symdyn.sweeps.run_task = slow
        symdyn.sweep({"n": 3, "d": 2}, [0.0, 1.0], seeds=2, batch=1, workers=2)
""")


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
    proc = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True)
    workers = []
    try:
        lines = [proc.stdout.readline() for _ in range(2)]
        assert all(lines), f"the sweep script ended early (exit {proc.poll()})"
        workers = [int(line) for line in lines]
        assert all(_alive(pid) for pid in workers)
        proc.kill()
        proc.wait()
        for _ in range(100):                     # up to 10 s
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
    import itertools

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

