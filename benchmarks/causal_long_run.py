"""The causal long run of issue 38 item 4, with and without its speed-ups, side by side.

Run: ``python benchmarks/causal_long_run.py [--quick] [--only fast|slow] [--then TREE]``.

Post-LN, n = 32, d = 3, beta = 9, two seeds (``sd.init.sphere(32, 3, batch=2,
seed=0)``), causal mask, merge=0 (the plain causal field: nothing merged,
nothing approximated), method="auto", output times 0 and 37 geometric from 1
to 1e6 (``--quick``: to 1e5). Where the time went (measured before the
speed-ups, ``OPENBLAS_NUM_THREADS=1`` against the default): the run is stiff
(intra-cluster contraction at rate ~0.5 holds DOP853 at h ~ 6.6) and
``method="auto"`` steps the plateaus with ROS34PW2 (h ~ 1e3); its 96 x 96
inversions ran on OpenBLAS's threads, which on two shared cores spun for
most of the run's CPU (74 CPU s, 126 s wall, against 10 CPU s on one thread).
The two speed-ups:

* ``rosenbrock.BLAS_THREADS = 1``: ROS34PW2's linear algebra on one BLAS
  thread (baseline: ``None``, the library's threads), by LU factors and
  solves instead of the inverse (not switchable: ``--then`` times the
  inverse);
* ``stiffness.MAX_WAIT = 60``: the doubled wait before a member switches to
  ROS34PW2 again stops at 60 explicit steps (baseline: unbounded; the second
  seed waited 960 explicit steps after its last merge).

``--then TREE``: also the same run on the code of a tree holding the
package before the speed-ups (``mkdir TREE && git archive da62022 symdyn |
tar -x -C TREE``), in a subprocess. Prints evaluations, steps, CPU seconds
(``time.process_time``: every thread of the process, the figure the shared
machine cannot inflate by waiting) and wall seconds of each, their ratios,
and whether the labels and events (and so the counts and plateaus) are the
same. Target: <= 10 s.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time

import numpy as np

import symdyn as sd
from symdyn.ode import rosenbrock, stiffness

FAST = {"BLAS_THREADS": rosenbrock.BLAS_THREADS, "MAX_WAIT": stiffness.MAX_WAIT}
SLOW = {"BLAS_THREADS": None, "MAX_WAIT": 10**9}


def run(t, setting):
    rosenbrock.BLAS_THREADS = setting["BLAS_THREADS"]
    stiffness.MAX_WAIT = setting["MAX_WAIT"]
    X0 = sd.init.sphere(32, 3, batch=2, seed=0)
    c0, w0 = time.process_time(), time.perf_counter()
    sim = sd.simulate("post-ln", X0, beta=9.0, t=t, mask="causal", merge=0.0)
    cpu, wall = time.process_time() - c0, time.perf_counter() - w0
    print(f"  {'fast' if setting is FAST else 'slow'}: {sim.nfev:,} evaluations, "
          f"{sim.steps:,} steps ({sim.stiff_steps:,} ROS34PW2), {cpu:.1f} CPU s, "
          f"{wall:.1f} s wall", flush=True)
    return sim, cpu, wall


THEN = """
import time, numpy as np, symdyn as sd
X0 = sd.init.sphere(32, 3, batch=2, seed=0)
t = np.r_[0.0, np.geomspace(1.0, 10.0**{top}, 6 * {top} + 1)]
c0, w0 = time.process_time(), time.perf_counter()
sim = sd.simulate("post-ln", X0, beta=9.0, t=t, mask="causal", merge=0.0)
cpu, wall = time.process_time() - c0, time.perf_counter() - w0
np.save({path!r}, sim.labels)
np.save({path!r}[:-4] + "_cost.npy", np.array([sim.nfev, cpu, wall]))
print(f"  then: {{sim.nfev:,}} evaluations, {{sim.steps:,}} steps ({{sim.stiff_steps:,}} "
      f"ROS34PW2), {{cpu:.1f}} CPU s, {{wall:.1f}} s wall", flush=True)
"""


def then(tree, top, fast):
    """The run on the code in ``tree`` (a subprocess), against ``fast``'s labels."""
    path = os.path.join(os.path.abspath(tree), "causal_long_run_labels.npy")
    env = {**os.environ, "PYTHONPATH": os.path.abspath(tree)}
    subprocess.run([sys.executable, "-c", THEN.format(top=top, path=path)], env=env, cwd=tree,
                   check=True)
    if fast is not None:
        nfev, cpu, wall = np.load(path[:-4] + "_cost.npy")
        print(f"  then / fast: {nfev / fast[0].nfev:.2f}x evaluations, {cpu / fast[1]:.1f}x "
              f"CPU, {wall / fast[2]:.1f}x wall; same labels: "
              f"{np.array_equal(np.load(path), fast[0].labels)}")


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="to t = 1e5")
    p.add_argument("--only", choices=("fast", "slow"), help="one of the two runs")
    p.add_argument("--then", metavar="TREE", help="also the code before the speed-ups")
    a = p.parse_args()
    top = 5 if a.quick else 6
    t = np.r_[0.0, np.geomspace(1.0, 10.0**top, 6 * top + 1)]
    print(f"causal Post-LN, n = 32, d = 3, beta = 9, 2 seeds, to t = {t[-1]:g}")
    runs = {}
    for name, setting in (("fast", FAST), ("slow", SLOW)):
        if a.only in (None, name):
            runs[name] = run(t, setting)
    rosenbrock.BLAS_THREADS, stiffness.MAX_WAIT = FAST["BLAS_THREADS"], FAST["MAX_WAIT"]
    fast = runs.get("fast")
    if fast:
        print(f"  counts {fast[0].clusters[:, -1].tolist()} at t = {t[-1]:g}; "
              f"{len(fast[0].events)} events; target <= 10 s: "
              f"{'met' if fast[1] <= 10 else 'NOT met'} ({fast[1]:.1f} CPU s)")
    if a.then:
        then(a.then, top, fast)
    if len(runs) == 2:
        (f, cf, wf), (s, cs, ws) = runs["fast"], runs["slow"]
        energies = ["energy_before", "energy_after"]       # rounding apart: not compared
        same = np.array_equal(f.labels, s.labels) and \
            f.events.drop(columns=energies).equals(s.events.drop(columns=energies))
        print(f"  slow / fast: {s.nfev / f.nfev:.2f}x evaluations, {cs / cf:.1f}x CPU, "
              f"{ws / wf:.1f}x wall; same labels and events: {same}")


if __name__ == "__main__":
    main()
