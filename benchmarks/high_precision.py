"""The mpmath path (``sd.solve(..., dps=D)``): evaluations and CPU time, now
against a baseline revision side by side.

Run: ``python benchmarks/high_precision.py [--baseline REV]``.

Each revision runs in its own process (the baseline from a ``git worktree``
in a temporary folder): the right-hand-side evaluations of the
Gragg-Bulirsch-Stoer extrapolation (:mod:`symdyn.ode.extrapolation`) and the
CPU seconds of one solve, for the reduced ODE of two schemes (n = 6,
beta = 1.5, gamma0 = 0.1, t = [1, 10], as ``tests/reduced/test_solve.py``'s
self-convergence check) and for the rotation ``y'' = -y`` to t = 20, with the
digits each result agrees with the closed form (rotation) or with the other
revision's result at the same ``dps`` (schemes; ``-`` when not compared).
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

MEASURE = r"""
import json, sys, time
import mpmath
import symdyn as sd
from symdyn.ode import extrapolation
from symdyn.reduced import solve_mp

calls = [0]
plain = solve_mp.integrate_mp


def counted(f, *args, **kwargs):
    def g(*a):
        calls[0] += 1
        return f(*a)
    return plain(g, *args, **kwargs)


solve_mp.integrate_mp = counted
rows = []
for name in ("post-ln", "peri-ln"):
    sd.solve(name, n=6, beta=1.5, gamma0=0.1, r0=1.0, t=[1, 10], dps=15)   # derived, compiled
    for dps in (30, 50, 80):
        calls[0] = 0
        start = time.process_time()
        tr = sd.solve(name, n=6, beta=1.5, gamma0=0.1, r0=1.0, t=[1, 10], dps=dps)
        rows.append(dict(case=f"{name} dps={dps}", evals=calls[0],
                         cpu=time.process_time() - start,
                         value=mpmath.nstr(tr.epsilon[-1], dps + 5)))
for dps in (30, 60, 100):
    calls[0] = 0

    def f(t, y, phase):
        calls[0] += 1
        return [y[1], -y[0]]
    start = time.process_time()
    (y,) = extrapolation.integrate_mp(f, [20], [1, 0], dps)
    cpu = time.process_time() - start
    with mpmath.workdps(dps + 20):
        err = abs(y[0] - mpmath.cos(20)) + abs(y[1] + mpmath.sin(20))
        digits = float(-mpmath.log10(err)) if err else float("inf")
    rows.append(dict(case=f"rotation dps={dps}", evals=calls[0], cpu=cpu, digits=digits))
json.dump(rows, sys.stdout)
"""


def measure(path):
    env = dict(os.environ, PYTHONPATH=path, OMP_NUM_THREADS="1")
    out = subprocess.run([sys.executable, "-c", MEASURE], env=env, cwd=path, check=True,
                         capture_output=True, text=True).stdout
    return json.loads(out)


def digits_between(a, b):
    import mpmath
    with mpmath.workdps(120):
        x, y = mpmath.mpf(a), mpmath.mpf(b)
        d = abs(x / y - 1)
        return "all" if d == 0 else f"{float(-mpmath.log10(d)):.1f}"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--baseline", default="bfa6f34",
                    help="revision to compare with (default: before the ODEX-style controller)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        before_path = os.path.join(tmp, "before")
        subprocess.run(["git", "-C", ROOT, "worktree", "add", "--detach", before_path,
                        args.baseline], check=True, capture_output=True)
        try:
            before = measure(before_path)
        finally:
            subprocess.run(["git", "-C", ROOT, "worktree", "remove", "--force", before_path],
                           check=True, capture_output=True)
    now = measure(ROOT)
    print(f"sd.solve(..., dps=D) and the rotation to t = 20; before = {args.baseline}")
    print(f"{'case':22s} {'evals before':>12s} {'now':>8s} {'ratio':>6s}   "
          f"{'CPU s before':>12s} {'now':>7s} {'ratio':>6s}   agreeing digits")
    for b, n in zip(before, now, strict=True):
        agree = (f"{n['digits']:.1f} (closed form; before {b['digits']:.1f})" if "digits" in n
                 else f"{digits_between(n['value'], b['value'])} (now vs before, of dps + 5)")
        print(f"{n['case']:22s} {b['evals']:12d} {n['evals']:8d} {n['evals'] / b['evals']:6.2f}   "
              f"{b['cpu']:12.2f} {n['cpu']:7.2f} {n['cpu'] / b['cpu']:6.2f}   {agree}")


if __name__ == "__main__":
    main()
