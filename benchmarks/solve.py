"""sd.solve on 10,000 parameter sets against a loop of solve_ivp calls.

Run: ``python benchmarks/solve.py [--full]``.

The grid: the six built-in schemes x 40 values of n (2 .. 1e4, geometric) x
42 values of beta (0.1 .. 20) = 10,080 sets, orthogonal start, to t = 20.
``sd.solve`` runs once per scheme on its whole batch. The baseline is the
usual research-script loop: one ``scipy.integrate.solve_ivp`` (DOP853, same
tolerances) per parameter set on the same lambdified right-hand side, called
with scalars. Without ``--full`` the baseline runs on a random 600 of the
sets and its time is scaled to all of them (its cost is linear in the
count by construction); both results are compared on that sample.

Then one member (issue 35, item 5): ``sd.solve("post-ln", n=8, beta=1,
gamma0=0, t=[20])`` against one ``solve_ivp`` (DOP853) at the same
tolerances on the compiled right-hand side called with floats (the script a
researcher writes), CPU time, interleaved, median of 9 rounds of 50 calls
(target: at most 1.05x; ``--one`` prints only this table).

Second table, the fixed costs (issue 25, item 9): Post-LN, orthogonal start,
to t = 20 on 1,000 / 3,000 / 10,000 members (n, beta from the grid). Per
evaluation of the right-hand side, ``sd.solve``'s time against its floor,
the compiled right-hand side alone on the same members (best of 20 calls;
target: within 3x); against the same solve with the per-member diagnostics
of every evaluation switched back on (the old ``seen[:3, member] = ...``
line); and against one ``solve_ivp`` (DOP853, same tolerances, vectorized)
on the stacked system of all members. ``--fixed`` prints only this table;
``--before DIR`` adds the time per evaluation of the symdyn in ``DIR`` (a
checkout of an earlier commit, e.g. ``git worktree add /tmp/old 530a1e4``),
run in a subprocess on the same members.
"""

import argparse
import contextlib
import math
import os
import subprocess
import sys
import tempfile
import time

import numpy as np
from scipy.integrate import solve_ivp

import symdyn as sd
from symdyn.reduced import problem
from symdyn.reduced.problem import u_atol

T_END, RTOL, ATOL = 20.0, 1e-11, 1e-12


def grid():
    n = np.geomspace(2, 1e4, 40)
    beta = np.linspace(0.1, 20, 42)
    return np.meshgrid(n, beta, indexing="ij")


def baseline_one(name, n, beta):
    system = sd.stable_system(name)
    phases = system.phases("numpy")
    bps = system.breakpoints
    r0 = 1.0

    def rhs(t, y):
        f_u, f_r = phases[int(np.searchsorted(bps, t, side="right"))]
        eps = np.exp(y[0])
        return [f_u(t, eps, y[1], n, beta), f_r(t, eps, y[1], n, beta)]

    # the same tolerances sd.solve uses for this member
    atol_u = float(u_atol(np.array(1.0), np.array(n), RTOL))
    sol = solve_ivp(rhs, (0, T_END), [0.0, r0], method="DOP853",
                    rtol=[100 * np.finfo(float).eps, RTOL], atol=[atol_u, ATOL],
                    t_eval=[T_END])
    return sol.y[0, -1]


def best(call, repeat=3, clock=time.perf_counter):
    """The least time of ``repeat`` calls by ``clock`` (wall, or
    ``time.process_time``), and the last result."""
    times = []
    for _ in range(repeat):
        t0 = clock()
        out = call()
        times.append(clock() - t0)
    return min(times), out


@contextlib.contextmanager
def diagnostics_always():
    """The solve as before: every evaluation records each member's state."""
    build = problem.BatchProblem.build.__func__

    def keep(cls, *args):
        pb = build(cls, *args)
        pb.field.remember = True
        return pb

    problem.BatchProblem.build = classmethod(keep)
    try:
        yield
    finally:
        problem.BatchProblem.build = classmethod(build)


def stacked_solve_ivp(n, beta):
    """One solve_ivp on the 2M-component system of all members."""
    f = sd.stable_system("post-ln").rates("numpy")[0]
    M = len(n)

    def rhs(t, y):
        u, r = y[:M], y[M:]
        du, dr = f(np.full(M, t), np.exp(u), r, n, beta)
        return np.concatenate([du, np.broadcast_to(dr, (M,))])

    atol = np.concatenate([u_atol(np.ones(M), n, RTOL), np.full(M, ATOL)])
    rtol = np.concatenate([np.full(M, 100 * np.finfo(float).eps), np.full(M, RTOL)])
    return solve_ivp(rhs, (0, T_END), np.concatenate([np.zeros(M), np.ones(M)]),
                     method="DOP853", rtol=rtol, atol=atol, t_eval=[T_END])


BEFORE = """
import sys, time, numpy as np, symdyn as sd
members = np.load(sys.argv[1])
n, beta, t_end = members["n"], members["beta"], float(members["t_end"])
sd.solve("post-ln", n=4, beta=1.0, gamma0=0.0, t=[1.0])
ts = []
for _ in range(3):
    t0 = time.perf_counter()
    tr = sd.solve("post-ln", n=n, beta=beta, gamma0=0.0, t=[t_end])
    ts.append(time.perf_counter() - t0)
print(min(ts) / tr.nfev)
"""


def per_eval_in(checkout, n, beta):
    """Time per evaluation of sd.solve on these members, in another checkout."""
    env = dict(os.environ, PYTHONPATH=os.path.abspath(checkout))
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "members.npz")
        np.savez(path, n=n, beta=beta, t_end=T_END)
        out = subprocess.run([sys.executable, "-c", BEFORE, path], capture_output=True,
                             text=True, env=env, cwd=checkout, check=True)
    return float(out.stdout.split()[-1])


def one_member(rounds=9, calls=50):
    """sd.solve of one parameter set against solve_ivp on the same compiled
    rates: CPU time per call, interleaved rounds, their medians and ratio."""
    f = sd.stable_system("post-ln").rates("numpy")[0]
    n, beta = 8.0, 1.0
    atol_u = float(u_atol(np.array(1.0), np.array(n), RTOL))

    def rhs(t, y):
        du, dr = f(t, math.exp(y[0]), y[1], n, beta)
        return [du, dr]

    def ivp():
        return solve_ivp(rhs, (0, T_END), [0.0, 1.0], method="DOP853",
                         rtol=[100 * np.finfo(float).eps, RTOL], atol=[atol_u, ATOL],
                         t_eval=[T_END])

    def ours():
        return sd.solve("post-ln", n=n, beta=beta, gamma0=0.0, t=[T_END])

    def cpu(call):
        t0 = time.process_time()
        for _ in range(calls):
            call()
        return (time.process_time() - t0) / calls
    a, b = ours(), ivp()
    times = np.array([(cpu(ours), cpu(ivp)) for _ in range(rounds)])
    mine, theirs = np.median(times, axis=0)
    print(f"one member, Post-LN n = 8, beta = 1, t = 0 .. {T_END:g} (CPU, median of "
          f"{rounds} x {calls} calls)")
    print(f"{'':<12}{'ms/call':>9}{'nfev':>7}{'log eps(T)':>22}")
    print(f"{'sd.solve':<12}{mine * 1e3:>9.3f}{a.nfev:>7}{a.log_epsilon[-1]:>22.15f}")
    print(f"{'solve_ivp':<12}{theirs * 1e3:>9.3f}{b.nfev:>7}{b.y[0, -1]:>22.15f}")
    print(f"ratio {mine / theirs:.3f}   (target <= 1.05)\n")


@contextlib.contextmanager
def counting_rows(rows):
    """Count the members of every right-hand-side evaluation (appended to ``rows``):
    the full path and the lean one the solve calls."""
    saved = {name: getattr(problem.ReducedRates, name) for name in ("__call__", "lean_rates")}

    def counting(call):
        def counted(self, tt, *args):
            rows.append(len(tt))
            return call(self, tt, *args)
        return counted
    for name, call in saved.items():
        setattr(problem.ReducedRates, name, counting(call))
    try:
        yield
    finally:
        for name, call in saved.items():
            setattr(problem.ReducedRates, name, call)


def fixed_costs(before=None):
    N, B = grid()
    rng = np.random.default_rng(1)
    f = sd.stable_system("post-ln").rates("numpy")[0]
    print(f"{'members':>8}{'active':>8}{'solve':>10}{'per eval':>10}{'RHS':>9}{'x RHS':>7}"
          f"{'diag. on':>11}{'x now':>7}{'stacked ivp':>13}{'x now':>7}"
          + (f"{'before':>10}{'x now':>7}" if before else ""))
    for M in (1000, 3000, 10000):
        pick = rng.choice(N.size, M, replace=M > N.size)
        n, beta = N.ravel()[pick], B.ravel()[pick]

        def run(n=n, beta=beta):
            return sd.solve("post-ln", n=n, beta=beta, gamma0=0.0, t=[T_END])

        t_now, tr = best(run)
        rows = []
        with counting_rows(rows):
            run()
        active = np.mean(rows)
        with diagnostics_always():
            t_old, old = best(run)
        assert np.array_equal(old.log_epsilon, tr.log_epsilon)
        state = (np.full(M, 1.0), np.full(M, 0.5), np.ones(M), n, beta)
        t_rhs = best(lambda state=state: f(*state), 20)[0]
        t_ivp, sol = best(lambda n=n, beta=beta: stacked_solve_ivp(n, beta), 1)
        per = t_now / tr.nfev
        print(f"{M:>8}{active:>8.0f}{t_now:>9.3f}s{per * 1e6:>8.0f}us{t_rhs * 1e6:>7.0f}us"
              f"{per / t_rhs:>6.1f}x{t_old:>10.3f}s{t_old / t_now:>6.1f}x"
              f"{t_ivp:>12.3f}s{t_ivp / t_now:>6.1f}x", end="")
        if before:
            old = per_eval_in(before, n, beta)
            print(f"{old * 1e6:>8.0f}us{old / per:>6.1f}x", end="")
        print()
    print("active: the mean count of members an evaluation holds (finished members "
          "leave the batch); x RHS: solve time per evaluation / the compiled right-hand "
          "side's time on all the members "
          "(target <= 3); x now: that time / the solve's; diag. on: the solve with the "
          "per-member diagnostics of every evaluation; before: per evaluation in --before")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--full", action="store_true", help="run the whole baseline")
    parser.add_argument("--fixed", action="store_true", help="only the fixed costs")
    parser.add_argument("--before", metavar="DIR", help="a checkout to compare with")
    parser.add_argument("--one", action="store_true", help="only the one-member table")
    args = parser.parse_args()
    sd.solve("post-ln", n=4, beta=1.0, gamma0=0.0, t=[1.0])
    one_member()
    if args.one:
        return
    fixed_costs(args.before)
    if args.fixed:
        return
    N, B = grid()
    total = N.size * len(sd.schemes())
    for name in sd.schemes():             # compile once, outside the timings
        sd.solve(name, n=4, beta=1.0, gamma0=0.0, t=[1.0])

    t0 = time.perf_counter()
    results = {name: sd.solve(name, n=N, beta=B, gamma0=0.0, t=[T_END])
               for name in sd.schemes()}
    t_batch = time.perf_counter() - t0

    rng = np.random.default_rng(0)
    sample = [(name, idx) for name in sd.schemes() for idx in np.ndindex(N.shape)]
    if not args.full:
        sample = [sample[i] for i in rng.choice(len(sample), 600, replace=False)]
    t0 = time.perf_counter()
    worst = 0.0
    for name, idx in sample:
        u = baseline_one(name, N[idx], B[idx])
        worst = max(worst, abs(np.expm1(u - results[name].log_epsilon[idx][-1])))
    t_loop = (time.perf_counter() - t0) * total / len(sample)

    label = "measured" if args.full else f"scaled from {len(sample)}"
    print(f"parameter sets: {total} (six schemes x {N.shape[0]} n x {N.shape[1]} beta), "
          f"t = 0 .. {T_END:g}")
    print(f"{'sd.solve, one batch per scheme':<44}{t_batch:>10.2f} s")
    print(f"{'loop of solve_ivp (' + label + ')':<44}{t_loop:>10.2f} s")
    print(f"{'speed-up':<44}{t_loop / t_batch:>10.0f} x   (target >= 100)")
    print(f"{'max relative difference in 1 - gamma':<44}{worst:>10.1e}")


if __name__ == "__main__":
    main()
