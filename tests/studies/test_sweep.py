"""sd.sweep: rows against direct calls, executors against each other,
resumption by counting task executions, lost workers, and bad grids."""

import multiprocessing
import os
import signal

import numpy as np
import pandas as pd
import pytest

import symdyn as sd
import symdyn.studies.sweeps as sweep_module
from symdyn.base import version

GRID = {"scheme": ["post-ln", "pre-ln"], "beta": [1.0, 4.0], "d": [4, 9], "n": 6}
T = [0.0, 0.5, 3.0]


@pytest.fixture(scope="module")
def reference():
    return sd.sweep(GRID, T, seeds=3, executor="serial")


# --- rows against direct calls ----------------------------------------------------

def test_rows_are_the_simulations_of_their_grid_points(reference):
    assert len(reference) == 2 * 2 * 2 * 3 * 3
    assert reference.attrs["tasks"] == 8 and reference.attrs["computed"] == 8
    for (scheme, beta, d), part in reference.groupby(["scheme", "beta", "d"]):
        X0 = np.stack([sd.init.sphere(6, d, seed=s) for s in range(3)])
        sim = sd.simulate(scheme, X0, beta, T, cluster_threshold=0.999)
        for s in range(3):
            rows = part[part.seed == s]
            assert rows.t.tolist() == T
            np.testing.assert_array_equal(rows.gamma, sim.gamma[s])
            np.testing.assert_array_equal(rows.linked, sim.linked[s])
            np.testing.assert_array_equal(rows.r_mean, sim.r[s].mean(axis=0))


def test_seed_batches_do_not_change_rows(reference):
    one_by_one = sd.sweep(GRID, T, seeds=3, batch=1, executor="serial")
    assert one_by_one.attrs["tasks"] == 24
    pd.testing.assert_frame_equal(one_by_one, reference)


def test_solve_sweep_matches_solve():
    grid = {"scheme": ["pre-ln", "mix-ln"], "n": [4, 64], "beta": [0.5, 2.0],
            "gamma0": [0.0, 0.3]}
    df = sd.sweep(grid, [0.0, 1.0, 8.0], kind="solve", batch=3, executor="serial")
    assert len(df) == 2 * 2 * 2 * 2 * 3
    for (scheme, n, beta, g0), part in df.groupby(["scheme", "n", "beta", "gamma0"]):
        tr = sd.solve(scheme, n=n, beta=beta, gamma0=g0, t=[0.0, 1.0, 8.0])
        # a member's arithmetic does not depend on its batch (symdyn.base.arithmetic)
        np.testing.assert_array_equal(part.gamma, tr.gamma)
        np.testing.assert_array_equal(part.log_epsilon, tr.log_epsilon)


def test_weights_and_inits_reach_the_simulator():
    grid = {"weights": ["kaiming", "kaiming-untied"], "init": ["gaussian", "equiangular"],
            "d": 6, "n": 4, "heads": 2, "weight_seed": 7, "scale": 0.5, "gamma0": 0.2}
    df = sd.sweep(grid, [0.0, 2.0], seeds=[5], executor="serial")
    row = df[(df.weights == "kaiming") & (df.init == "equiangular") & (df.t == 2.0)]
    X0 = sd.init.equiangular(4, 6, 0.2, r0=0.5, seed=5)
    sim = sd.simulate("post-ln", X0, 1.0, [0.0, 2.0],
                      weights=sd.weights.kaiming(6, 2, seed=7))
    assert row.gamma.item() == sim.gamma[-1]
    untied = df[(df.weights == "kaiming-untied") & (df.init == "equiangular") & (df.t == 2.0)]
    assert untied.gamma.item() != sim.gamma[-1]          # other draws after t = 1


# --- executors --------------------------------------------------------------------

def test_local_processes_give_the_same_table(reference):
    local = sd.sweep(GRID, T, seeds=3, workers=2)
    pd.testing.assert_frame_equal(local, reference)


@pytest.fixture(scope="module")
def dask_client():
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        yield client


def test_dask_local_cluster_gives_the_same_table(reference, dask_client):
    on_dask = sd.sweep(GRID, T, seeds=3, executor=dask_client)
    pd.testing.assert_frame_equal(on_dask, reference)


def test_dask_scheduler_address_and_a_caller_pool(reference, dask_client):
    from concurrent.futures import ThreadPoolExecutor

    by_address = sd.sweep(GRID, T, seeds=3, scheduler=dask_client.scheduler.address)
    pd.testing.assert_frame_equal(by_address, reference)
    with ThreadPoolExecutor(2) as pool:
        pd.testing.assert_frame_equal(sd.sweep(GRID, T, seeds=3, executor=pool), reference)


def test_dask_worker_killed_mid_sweep(reference, dask_client):
    pids = list(dask_client.run(os.getpid).values())
    killed = []

    def kill_once(done, total):
        if done >= 2 and not killed:
            os.kill(pids[0], signal.SIGKILL)
            killed.append(pids[0])

    df = sd.sweep(GRID, T, seeds=3, batch=1, executor=dask_client, progress=kill_once)
    assert killed
    assert df.attrs["computed"] == 24
    pd.testing.assert_frame_equal(df, reference)          # nothing lost, nothing twice


def test_local_worker_killed_mid_sweep(reference, monkeypatch):
    from symdyn.studies.executors import Local

    pools = []
    build = Local._pool
    monkeypatch.setattr(Local, "_pool", lambda self: pools.append(1) or build(self))
    before = {p.pid for p in multiprocessing.active_children()}
    killed = []

    def kill_once(done, total):
        if done >= 2 and not killed:
            new = [p for p in multiprocessing.active_children() if p.pid not in before]
            os.kill(new[0].pid, signal.SIGKILL)
            killed.append(new[0].pid)

    df = sd.sweep(GRID, T, seeds=3, batch=1, workers=2, progress=kill_once)
    assert killed and len(pools) == 2                     # the broken pool was rebuilt
    pd.testing.assert_frame_equal(df, reference)


# --- resumption -------------------------------------------------------------------

class Interrupt(Exception):
    pass


@pytest.fixture
def calls(monkeypatch):
    """The keys of the tasks that run."""
    seen = []
    real = sweep_module.run_task

    def counting(task):
        seen.append(task.key)
        return real(task)

    monkeypatch.setattr(sweep_module, "run_task", counting)
    return seen


def test_interrupted_sweep_resumes_without_recomputing(reference, tmp_path, monkeypatch, calls):
    def stop_after_three(done, total):
        if done == 3:
            raise Interrupt

    with pytest.raises(Interrupt):
        sd.sweep(GRID, T, seeds=3, executor="serial", cache=tmp_path, progress=stop_after_three)
    assert len(calls) == 3 and len(list(tmp_path.glob("*.npz"))) == 3

    calls.clear()
    resumed = sd.sweep(GRID, T, seeds=3, executor="serial", cache=tmp_path)
    assert len(calls) == 5                                 # only the missing tasks
    assert resumed.attrs["cached"] == 3 and resumed.attrs["computed"] == 5
    pd.testing.assert_frame_equal(resumed, reference)

    calls.clear()
    again = sd.sweep(GRID, T, seeds=3, executor="serial", cache=tmp_path)
    assert calls == [] and again.attrs["cached"] == 8
    pd.testing.assert_frame_equal(again, reference)

    # negative control: another version of symdyn shares no cached task
    monkeypatch.setattr(version, "__version__", "0.0.0-other")
    sd.sweep(GRID, T, seeds=3, executor="serial", cache=tmp_path)
    assert len(calls) == 8


def test_interrupted_local_sweep_resumes(reference, tmp_path):
    def stop(done, total):
        if done == 2:
            raise Interrupt

    with pytest.raises(Interrupt):
        sd.sweep(GRID, T, seeds=3, workers=2, batch=1, cache=tmp_path, progress=stop)
    stored = len(list(tmp_path.glob("*.npz")))
    assert stored == 2 and not list(tmp_path.glob("*.tmp*"))
    resumed = sd.sweep(GRID, T, seeds=3, workers=2, batch=1, cache=tmp_path)
    assert resumed.attrs["computed"] == 24 - stored
    pd.testing.assert_frame_equal(resumed, reference)


def test_keys_depend_on_every_parameter():
    axes = sweep_module.grid_axes("simulate", {"beta": [1.0, 1.5], "d": [3, 4]})
    tasks = sweep_module.tasks_of("simulate", axes, (0, 1), np.array([0.0, 1.0]), (), None)
    keys = {task.key for task in tasks}
    assert len(keys) == 4
    again = sweep_module.tasks_of("simulate", axes, (0, 1), np.array([0.0, 1.0]), (), None)
    assert [task.key for task in again] == [task.key for task in tasks]
    later = sweep_module.tasks_of("simulate", axes, (0, 1), np.array([0.0, 2.0]), (), None)
    assert not keys & {task.key for task in later}


# --- files ------------------------------------------------------------------------

@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_table_written_to_disk(reference, tmp_path, suffix):
    path = tmp_path / f"table{suffix}"
    df = sd.sweep(GRID, T, seeds=3, executor="serial", out=path)
    back = pd.read_csv(path) if suffix == ".csv" else pd.read_parquet(path)
    assert len(back) == len(df)
    np.testing.assert_array_equal(back.gamma, df.gamma)
    assert back.scheme.tolist() == df.scheme.tolist()


# --- bad grids --------------------------------------------------------------------

@pytest.mark.parametrize("grid, kw, match", [
    ({"beta": []}, {}, "grid axis 'beta' is empty"),
    ({"temperature": [1.0]}, {}, "unknown axis 'temperature'"),
    ({"beta": [1.0, -2.0]}, {}, "grid axis 'beta'.*>= 0"),
    ({"n": [1]}, {}, "grid axis 'n'.*>= 2"),
    ({"d": [4, 2.5]}, {}, "grid axis 'd'.*integers"),
    ({"scale": [0.0]}, {}, "grid axis 'scale'.*> 0"),
    ({"step": [-0.1]}, {}, "grid axis 'step'"),
    ({"step": [0.3]}, {}, "grid axis 'step'.*multiples"),
    ({"scheme": ["post-ln", "batch-ln"]}, {}, "grid axis 'scheme'.*unknown"),
    ({"init": ["uniform"]}, {}, "grid axis 'init'"),
    ({"weights": ["xavier"]}, {}, "grid axis 'weights'"),
    ({"beta": [1.0, 1.0]}, {}, "grid axis 'beta'.*repeated"),
    ({"init": "equiangular", "n": 8, "d": [8, 4]}, {}, "grid axis 'd'.*d >= n"),
    ({"init": "equiangular", "gamma0": [0.0, -0.5], "n": 8, "d": 8}, {},
     "grid axis 'gamma0'"),
    ({}, {"seeds": 0}, "seeds"),
    ({}, {"seeds": [1, 1]}, "seeds"),
    ({}, {"batch": 0}, "batch"),
    ({}, {"out": "table.xlsx"}, "out"),
    ({}, {"workers": 0, "executor": None}, "workers"),
    ({}, {"executor": "threads"}, "executor"),
    ({"d": 4}, {"kind": "solve"}, "unknown axis 'd'"),
    ({}, {"kind": "solve", "seeds": 2}, "seeds"),
    ([1.0], {}, "grid: expected a dict"),
])
def test_bad_grids_raise_before_any_work(grid, kw, match, monkeypatch):
    def no_work(task):
        raise AssertionError("a task ran")

    monkeypatch.setattr(sweep_module, "run_task", no_work)
    kw.setdefault("executor", "serial")
    with pytest.raises(ValueError, match=match):
        sd.sweep(grid, [0.0, 1.0], **kw)


def test_parametrized_schemes_need_their_own_names():
    import dataclasses

    fast, plain = sd.scheme("ngpt", alpha="2"), sd.scheme("ngpt")
    with pytest.raises(ValueError, match="share a name"):
        sd.sweep({"scheme": [fast, plain]}, [0.0, 1.0], executor="serial")
    fast = dataclasses.replace(fast, name="ngpt-2")
    df = sd.sweep({"scheme": [fast, plain, "none"], "n": 4, "d": 4}, [0.0, 1.0],
                  executor="serial")
    g = df[df.t == 1.0].set_index("scheme").gamma
    assert g["ngpt-2"] > g["ngpt"] > 0          # alpha = 2 moves twice as fast
    X0 = sd.init.sphere(4, 4, seed=0)
    assert g["none"] == sd.simulate("none", X0, 1.0, [0.0, 1.0]).gamma[-1]


def _blas_threads():
    from threadpoolctl import threadpool_info

    return [pool["num_threads"] for pool in threadpool_info() if pool["user_api"] == "blas"]


def test_local_workers_share_the_cores_between_their_blas_threads():
    from symdyn.studies.executors import Local

    cores = os.cpu_count() or 1
    with Local(2)._pool() as pool:
        threads = pool.submit(_blas_threads).result()
    assert threads and all(k == max(1, cores // 2) for k in threads)


def test_unreachable_scheduler_is_a_value_error():
    pytest.importorskip("distributed")
    from symdyn.studies.executors import Dask

    with pytest.raises(ValueError, match="scheduler: cannot reach tcp://127.0.0.1:1"):
        Dask(address="tcp://127.0.0.1:1", timeout="1s").run(len, [()], print)


def test_the_grid_takes_its_kinds_from_the_caller():
    from symdyn.studies import grid, runs

    assert grid.KINDS == runs.KINDS                     # the default, registered by sweeps
    axes = grid.grid_axes("solve", {"scheme": "pre-ln"})
    assert axes["scheme"] == (sd.scheme("pre-ln"),)
    # control: a caller's kinds are the ones used (here a resolver that refuses all)
    def refuse(v):
        raise ValueError("not here")
    kinds = {"solve": runs.Kind(refuse, 10)}
    with pytest.raises(ValueError, match="grid axis 'scheme': not here"):
        grid.grid_axes("solve", {"scheme": "pre-ln"}, kinds)
    with pytest.raises(ValueError, match="more than the 10"):
        grid.tasks_of("solve", axes, (), np.arange(11.0), (), None, kinds)
