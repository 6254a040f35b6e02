"""sd.sweep on 1 and 2 local worker processes, and its per-task overhead.

Run: ``python benchmarks/sweep.py [--dask] [--repeat 3]`` (best of the repeats).

The fixed sweep: Post-LN and sqrt-scaling, identity weights, n = 32,
d in {16, 64}, 6 values of beta, 8 uniform seeds per task (24 tasks), 41
saved times to t = 60, continuous dynamics. Printed side by side:

* bare: every task's ``run_task`` called here, one after the other (the
  simulation alone, after one warm-up task);
* the same sweep through ``sd.sweep`` with ``workers=1`` and ``workers=2``
  (the pool starts inside the call and is included in its wall time).

The speed-up is wall(1) / wall(2) (target >= 1.7 on 2 cores). The per-task
overhead is (wall(1) - bare) / bare: scheduling, pickling, the pool's start
and the table (target < 5%). ``--dask`` adds a ``LocalCluster`` with two
single-threaded workers (warmed up first).
"""

import argparse
import time

import numpy as np

import symdyn as sd
import symdyn.studies.sweeps as sweep_module

GRID = {"scheme": ["post-ln", "sqrt-scaling"], "n": 32, "d": [16, 64],
        "beta": [0.5, 1.0, 2.0, 3.0, 4.0, 5.0]}
T = np.concatenate([[0.0], np.geomspace(0.1, 60.0, 40)])
SEEDS = 8


def bare():
    axes = sweep_module.grid_axes("simulate", GRID)
    tasks = sweep_module.tasks_of("simulate", axes, tuple(range(SEEDS)), T,
                                  (("rtol", None), ("atol", None),
                                   ("cluster_threshold", 0.999)), None)
    sweep_module.run_task(tasks[0])                      # warm-up (lambdify caches)
    start = time.perf_counter()
    for task in tasks:
        sweep_module.run_task(task)
    return time.perf_counter() - start, len(tasks)


def timed(**kw):
    start = time.perf_counter()
    table = sd.sweep(GRID, T, seeds=SEEDS, **kw)
    return time.perf_counter() - start, table


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dask", action="store_true", help="also a Dask LocalCluster")
    parser.add_argument("--repeat", type=int, default=3, help="best of this many runs")
    args = parser.parse_args()

    t_bare, tasks = min(bare() for _ in range(args.repeat))
    t1, table1 = min((timed(workers=1) for _ in range(args.repeat)), key=lambda r: r[0])
    t2, table2 = min((timed(workers=2) for _ in range(args.repeat)), key=lambda r: r[0])
    assert table1.equals(table2), "1 and 2 workers gave different tables"
    print(f"fixed sweep: {tasks} tasks x {SEEDS} seeds, {len(table1)} rows")
    print(f"{'run':<28}{'wall [s]':>10}{'ratio':>10}")
    print(f"{'bare run_task loop':<28}{t_bare:>10.2f}{1.0:>10.2f}")
    print(f"{'sd.sweep, 1 worker':<28}{t1:>10.2f}{t1 / t_bare:>10.3f}")
    print(f"{'sd.sweep, 2 workers':<28}{t2:>10.2f}{t2 / t_bare:>10.3f}")
    if args.dask:
        from distributed import Client, LocalCluster

        with LocalCluster(n_workers=2, threads_per_worker=1, dashboard_address=None) as c, \
                Client(c) as client:
            sd.sweep({"d": 4, "n": 4}, [0.0, 1.0], executor=client)      # warm-up
            td, table_d = timed(executor=client)
            assert table_d.equals(table1), "Dask gave a different table"
            print(f"{'sd.sweep, Dask 2 workers':<28}{td:>10.2f}{td / t_bare:>10.3f}")
    speedup = t1 / t2
    overhead = (t1 - t_bare) / t_bare
    print(f"speed-up 2 vs 1 workers: {speedup:.2f}x (target >= 1.7): "
          f"{'met' if speedup >= 1.7 else 'NOT met'}")
    print(f"per-task overhead: {overhead:+.1%} of the bare simulation time "
          f"({(t1 - t_bare) / tasks * 1e3:+.1f} ms per task; target < 5%): "
          f"{'met' if overhead < 0.05 else 'NOT met'}")


if __name__ == "__main__":
    main()
