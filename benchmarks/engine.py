"""The engine room's speed before and after a change, side by side (issue 47, item 6).

Run: ``python benchmarks/engine.py [--baseline REV] [--rounds 3]``.

The same workloads run, alternately, on this checkout and on ``REV``
(default ``72b57a7``: the last commit before the one stage loop of
:mod:`symdyn.ode.rk`), the latter from a ``git worktree`` in a temporary
folder, each in its own process. Per workload the least CPU time per
evaluation of the right-hand side over the rounds, and the ratio
now / before (target: at most 1.15 for each):

* ``one member``: ``sd.solve("post-ln", n=8, beta=3, gamma0=0, t=[20])``,
  the scalar path (Python floats), 200 calls;
* ``small run``: ``sd.simulate("post-ln", sphere(16, 8), beta=1,
  t=linspace(0, 50, 11), merge=0)``, one member of 128 components; since
  issue 45 it is integrated in its cluster's frame (a different right-hand
  side, resolving epsilon down to 1e-280: its cost is ``benchmarks/frame.py``'s),
  so against a baseline before that it measures the frame, not the engine;
* ``small vectors``: the same size from 8 tokens and their near-antipodes
  (mean direction shorter than ``FRAME_CENTRE``: unit vectors stored as
  such on both sides), the engine on the same right-hand side;
* ``solve 1k / 3k / 10k``: Post-LN from orthogonal starts to t = 20 on that
  many members (n and beta on a grid), the batched path;
* ``particles B=8``: ``sd.simulate`` of 8 runs of n = 256 tokens in
  d = 512 to t = 1 (the stages too large for the ahead sums: on-demand sums);
  since issue 45 a random start is integrated in its cluster's frame (its
  mean direction is longer than ``FRAME_CENTRE``), so against a baseline
  before that it too measures the frame;
* ``particles B=8 vectors``: the same size from 128 tokens and their
  near-antipodes, held as unit vectors on both sides: the engine alone.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def _cpu(call, repeat):
    """The least CPU time of ``repeat`` calls and the last result (solve.best)."""
    from solve import best  # benchmarks/solve.py: best of a few timed calls
    return best(call, repeat, clock=time.process_time)


def measure():
    """CPU seconds per evaluation of every workload, in this process's symdyn."""
    import numpy as np

    import symdyn as sd
    out = {}

    def one():
        last = None
        for _ in range(200):
            last = sd.solve("post-ln", n=8, beta=3.0, gamma0=0.0, t=[20.0])
        return last
    t, tr = _cpu(one, 3)
    out["one member"] = t / (200 * tr.nfev)
    X0 = sd.init.sphere(16, 8, seed=0)
    t, sim = _cpu(lambda: sd.simulate("post-ln", X0, beta=1.0, t=np.linspace(0, 50, 11),
                                      merge=0.0), 3)
    out["small run"] = t / sim.nfev
    x = sd.init.sphere(8, 8, seed=0)
    far = -x + 1e-5 * sd.init.sphere(8, 8, seed=1)
    Xv = np.concatenate([x, far / np.linalg.norm(far, axis=-1, keepdims=True)])
    t, sim = _cpu(lambda: sd.simulate("post-ln", Xv, beta=1.0, t=np.linspace(0, 50, 11),
                                      merge=0.0), 3)
    out["small vectors"] = t / sim.nfev
    for M in (1000, 3000, 10000):
        k = int(round(M ** 0.5))
        n, beta = np.meshgrid(np.geomspace(2, 1e4, k), np.linspace(0.1, 20, M // k))
        t, tr = _cpu(lambda n=n, beta=beta: sd.solve("post-ln", n=n, beta=beta, gamma0=0.0,
                                                     t=[20.0]), 2)
        out[f"solve {M // 1000}k"] = t / tr.nfev
    Xb = np.stack([sd.init.sphere(256, 512, seed=s) for s in range(8)])
    t, sim = _cpu(lambda: sd.simulate("post-ln", Xb, beta=1.0, t=[0.0, 1.0], merge=0.0), 1)
    out["particles B=8"] = t / sim.nfev

    def far_pair(seed):
        x = sd.init.sphere(128, 512, seed=seed)
        far = -x + 1e-5 * sd.init.sphere(128, 512, seed=seed + 100)
        return np.concatenate([x, far / np.linalg.norm(far, axis=-1, keepdims=True)])
    Xf = np.stack([far_pair(s) for s in range(8)])
    t, sim = _cpu(lambda: sd.simulate("post-ln", Xf, beta=1.0, t=[0.0, 1.0], merge=0.0), 1)
    out["particles B=8 vectors"] = t / sim.nfev
    return out


def _worktree(rev):
    path = tempfile.mkdtemp(prefix="symdyn-before-")
    subprocess.run(["git", "-C", ROOT, "worktree", "add", "--detach", path, rev], check=True,
                   capture_output=True)
    return path


def _run(path):
    """``measure()`` in a fresh process importing symdyn from ``path``."""
    code = (f"import json, sys; sys.path.insert(0, {HERE!r}); sys.path.insert(0, {path!r}); "
            "import engine; print(json.dumps(engine.measure()))")
    res = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True,
                         text=True, cwd=path)
    return json.loads(res.stdout.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--baseline", default="72b57a7")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--now", default=ROOT, help="the checkout measured as now")
    args = ap.parse_args()
    before_path = _worktree(args.baseline)
    try:
        now, before = {}, {}
        for _ in range(args.rounds):        # alternately: a busy spell hits both
            for path, into in ((args.now, now), (before_path, before)):
                for k, v in _run(path).items():
                    into[k] = min(v, into.get(k, float("inf")))
    finally:
        subprocess.run(["git", "-C", ROOT, "worktree", "remove", "--force", before_path],
                       capture_output=True)
    print(f"CPU time per evaluation, least of {args.rounds} rounds; before = {args.baseline}")
    print(f"{'workload':<22}{'before us':>11}{'now us':>10}{'now/before':>12}")
    for k in now:
        print(f"{k:<22}{before[k] * 1e6:>11.2f}{now[k] * 1e6:>10.2f}{now[k] / before[k]:>12.2f}")
    print("target (issue 47): now/before <= 1.15 for every workload ('small run' and "
          "'particles B=8' against a baseline before issue 45: the frame's cost, not the "
          "engine's; 'small vectors' and 'particles B=8 vectors' are the engine's)")


if __name__ == "__main__":
    main()
