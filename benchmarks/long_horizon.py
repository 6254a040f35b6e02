"""Long horizons and small problems: each new path against its baseline, side by side.

Run: ``python benchmarks/long_horizon.py [--quick]``. Prints, in one run:

(a) metastable Post-LN (n = 32, d = 8, beta = 9, 2 seeds, uniform start):
    to t = 1e12 with coincident tokens merged (target < 20,000 evaluations);
    beta = 15 to t = 1e15;
    and to t = 1e6 merged vs not merged (ratio of evaluations and of time;
    ``--quick`` stops the unmerged run at t = 1e4); issue 34.3's starts
    (batch 2 seed 3, batch 1 seed 3, batch 1 seed 0) to t = 1e12 against
    the recorded evaluations and the target 8,000, and the largest
    differences of epsilon and the cluster counts from merge=0 to t = 1e5
    (``--quick``: 1.5e3);
(b) output times: 20,001 against 11 over [0, 50] (target: the same
    evaluations, ratio <= 1.05; no cap on their count since issue 34),
    sd.solve and sd.simulate (``benchmarks/output_times.py`` measures more);
(c) the log clock: Pre-LN d = 2, n = 8, beta = 4 (8 seeds, Theorem 3.1's
    slowest grid point) to tau = 1e4, i.e. t = e^10000;
(d) equiangular_time for 10 betas against the one-beta-at-a-time brentq of
    the previous version (target >= 5x), run on today's one-member solves
    (the scalar path) and on the batched path (how one-member solves ran
    when the issue was filed), and their agreement; ``--then TREE`` also
    times the code of a checkout ``TREE`` of that time (``git worktree add
    TREE f6d5d83``);
(e) one-member sd.solve against one solve_ivp call on the same compiled
    right-hand side with the tolerances sd.solve gives each component
    (target: ratio <= 1);
(f) float32 against float64: the particle field at batch 8, n = 256,
    d = 512, and a phase-diagram sweep (n = 32, d = 128, 10 betas, 8 seeds,
    t to 1e3, one worker): time ratio and the largest difference of the
    linked fractions (target <= 1e-3);
(g) stiff stretches: method="auto" (DOP853, switching to ROS34PW2 where its
    steps are held by stability) against method="dop853": the log clock
    after clustering (Pre-LN, n = 8, d = 2, beta = 4, 8 seeds, to tau = 1e5)
    and unmerged Post-LN contraction (beta = 9, 2 seeds, merge=0, to t = 1e5;
    n = 8, d = 4, and the issue's n = 32, d = 8); ``--quick`` stops all at 1e4.
(h) causal Post-LN (n = 32, d = 3, beta = 9, 2 seeds, to t = 1e6; ``--quick``
    1e4): merge=1e-8 under the mask (symdyn.particles.causal, opt-in) against merge=0,
    evaluations and CPU seconds (process_time: the CPU is shared), and
    whether the labels and events are the same (target <= 10 s).
"""

import argparse
import subprocess
import sys
import time

import numpy as np
from scipy.integrate import solve_ivp
from scipy.optimize import brentq

import symdyn as sd
import symdyn.reduced.problem as problem
import symdyn.reduced.solver as solver
from symdyn.reduced.compile import stable_system
from symdyn.studies.phase_diagram import equiangular_time


def timed(f):
    t0 = time.perf_counter()
    out = f()
    return out, time.perf_counter() - t0


def part_a(quick):
    X0 = sd.init.sphere(32, 8, batch=2, seed=0)

    def run(T, merge):
        return sd.simulate("post-ln", X0, beta=9.0, t=T, merge=merge)

    far, sec = timed(lambda: run([1e3, 1e6, 1e9, 1e12], None))
    print(f"(a) to t = 1e12, merged: {far.nfev:,} evaluations, {sec:.1f} s, "
          f"{far.merged} tokens merged, clusters at 1e3: {far.clusters[:, 0].tolist()}, "
          f"at 1e12: {far.clusters[:, -1].tolist()}  (target < 20,000)")
    X15 = sd.init.sphere(32, 8, batch=1, seed=0)
    deep, sec = timed(lambda: sd.simulate("post-ln", X15, beta=15.0,
                                          t=[1e2, 1e6, 1e9, 1e12, 1e15]))
    print(f"    beta = 15, 1 seed, to t = 1e15: {deep.nfev:,} evaluations, {sec:.1f} s, "
          f"clusters at t = 1e2, 1e6, 1e9, 1e12, 1e15: {deep.clusters[0].tolist()}")
    T = 1e4 if quick else 1e6
    merged, t_m = timed(lambda: run([T], None))
    plain, t_p = timed(lambda: run([T], 0.0))
    print(f"    to t = {T:g}: merged {merged.nfev:,} evaluations in {t_m:.1f} s, "
          f"unmerged {plain.nfev:,} in {t_p:.1f} s: ratio {plain.nfev / merged.nfev:.0f}x "
          f"evaluations, {t_p / t_m:.0f}x time; |gamma diff| "
          f"{np.abs(merged.gamma - plain.gamma).max():.1e}")


#: Issue 34.3: evaluations to t = 1e12 recorded per start (batch, seed): under
#: the merge rule that falsified values, and under the exact rule before its
#: offsets relaxed; the target for all three
ISSUE_34 = {(2, 3): (7_541, 25_651), (1, 3): (None, 24_080), (1, 0): (None, 6_661)}
TARGET_34 = 8_000


def _against_unmerged(merged, plain):
    """Largest differences from merge=0: epsilon relative where exact, how far
    the unmerged epsilon exceeds epsilon + spread where a bound (<= 0: within),
    and the cluster counts."""
    b = merged.bound["epsilon"]
    rel = np.abs(merged.epsilon - plain.epsilon) / plain.epsilon
    over = plain.epsilon - (merged.epsilon + merged.spread)
    return (rel[~b].max() if (~b).any() else 0.0, over[b].max() if b.any() else None,
            int(np.abs(merged.clusters - plain.clusters).max()))


def part_a_issue(quick):
    """(a) issue 34.3's three starts: evaluations to 1e12, and merge=0 agreement."""
    T = [0, 1e3, 1e6, 1e9, 1e12]
    shared = [0, 30, 300, 1e3, 1.5e3] if quick else [0, 30, 300, 1e3, 3e3, 1e4, 3e4, 1e5]
    print(f"    issue 34.3, n = 32, d = 8, beta = 9 to t = 1e12 (target <= {TARGET_34:,}); "
          f"against merge=0 to t = {shared[-1]:g}:")
    for (batch, seed), (falsifying, blocked) in ISSUE_34.items():
        X0 = sd.init.sphere(32, 8, batch=batch, seed=seed)
        run, sec = timed(lambda X0=X0: sd.simulate("post-ln", X0, beta=9.0, t=T))
        # the same steps without the inner outputs: no continuous extensions
        ends = sd.simulate("post-ln", X0, beta=9.0, t=[T[0], T[-1]])
        then = f"{falsifying:,} falsifying, " if falsifying else ""
        merged = sd.simulate("post-ln", X0, beta=9.0, t=shared)
        plain = sd.simulate("post-ln", X0, beta=9.0, t=shared, merge=0.0)
        rel, over, clusters = _against_unmerged(merged, plain)
        bound = "no bound" if over is None else f"unmerged - (eps + spread) <= {over:.1e}"
        print(f"    batch {batch} seed {seed}: {run.nfev:,} evaluations ({sec:.1f} s; "
              f"{then}{blocked:,} before relaxation; {run.nfev / TARGET_34:.2f} of the "
              f"target; outputs only at the ends {ends.nfev:,}, {ends.nfev / TARGET_34:.2f}, "
              f"steps {ends.steps:,} vs {run.steps:,}); vs merge=0 ({plain.nfev:,} "
              f"evaluations): epsilon {rel:.1e} relative where exact, {bound}, "
              f"clusters {clusters}")


def part_b():
    def solve(k):
        return sd.solve("post-ln", n=[8, 9], beta=1.0, gamma0=0.0, t=np.linspace(0, 50, k))

    few, t_few = timed(lambda: solve(11))
    many, t_many = timed(lambda: solve(20_001))
    print(f"(b) sd.solve, 11 vs 20,001 output times: {few.nfev} vs {many.nfev} evaluations "
          f"(ratio {many.nfev / few.nfev:.2f}, target <= 1.05), {t_few:.2f} vs {t_many:.2f} s")
    X0 = sd.init.sphere(8, 4, batch=2, seed=0)
    few, t_few = timed(lambda: sd.simulate("post-ln", X0, beta=1.0, t=np.linspace(0, 50, 11)))
    many, t_many = timed(lambda: sd.simulate("post-ln", X0, beta=1.0,
                                             t=np.linspace(0, 50, 20_001)))
    print(f"    sd.simulate: {few.nfev} vs {many.nfev} evaluations "
          f"(ratio {many.nfev / few.nfev:.2f}, target <= 1.05), {t_few:.2f} vs {t_many:.2f} s")


def part_c():
    X0 = sd.init.gaussian(8, 2, scale=1.0, batch=8, seed=8002)
    sim, sec = timed(lambda: sd.simulate("pre-ln", X0, beta=4.0, t=[1e2, 1e3, 1e4],
                                         clock="log"))
    print(f"(c) Pre-LN d=2 n=8 beta=4, 8 seeds, log clock to tau = 1e4: {sim.nfev:,} "
          f"evaluations, {sec:.1f} s; clusters at tau = 1e2, 1e3, 1e4: "
          f"{sim.clusters.max(axis=0).tolist()} (worst seed)")


def equiangular_time_brentq(scheme, n, beta, level=0.999, t_max=1e6):
    """The previous version: one bracketing solve, then brentq per beta."""
    target = np.log1p(-level)
    grid = np.concatenate([[0.0], np.geomspace(1e-3, t_max, 200)])
    tr = sd.solve(scheme, n=n, beta=beta, gamma0=0.0, t=grid)
    out = np.full(len(beta), np.inf)
    for i, b in enumerate(beta):
        below = np.flatnonzero(tr.log_epsilon[i] <= target)
        if below.size == 0:
            continue
        k = below[0]

        def f(logt, b=b):
            return sd.solve(scheme, n=n, beta=b, gamma0=0.0,
                            t=[np.exp(logt)]).log_epsilon[0] - target

        lo = np.log(grid[k - 1]) if k > 1 else np.log(1e-12)
        out[i] = np.exp(brentq(f, lo, np.log(grid[k]), xtol=1e-12, rtol=1e-10))
    return out


def part_d(then=None):
    betas = np.linspace(0.5, 9.0, 10)
    for scheme in ("post-ln", "pre-ln"):
        new, t_new = timed(lambda scheme=scheme: equiangular_time(scheme, 32, betas))
        old, t_old = timed(lambda scheme=scheme: equiangular_time_brentq(scheme, 32, betas))
        scalar_path = solver.solve_one
        solver.solve_one = lambda *args: None      # every solve on the batched path
        try:
            _, t_then = timed(lambda scheme=scheme: equiangular_time_brentq(scheme, 32, betas))
        finally:
            solver.solve_one = scalar_path
        fin = np.isfinite(old)
        agree = np.abs(new[fin] / old[fin] - 1).max()
        print(f"(d) equiangular_time {scheme}, 10 betas: batched {t_new:.2f} s; brentq on "
              f"today's one-member solves {t_old:.2f} s ({t_old / t_new:.1f}x), on the "
              f"batched path as when the issue was filed {t_then:.2f} s "
              f"({t_then / t_new:.1f}x); agree to {agree:.1e}")
        if then:
            best_new = min(timed(lambda scheme=scheme: equiangular_time(scheme, 32, betas))[1]
                           for _ in range(3))
            best_then = _time_in(then, scheme)
            print(f"    against the code in {then}: {best_then:.2f} s, ours {best_new:.2f} s "
                  f"(best of 3): {best_then / best_new:.1f}x (target >= 5)")


def _time_in(tree, scheme):
    """Best of 3 of equiangular_time for 10 betas, run from another checkout."""
    code = ("import sys, time, numpy as np; sys.path.insert(0, sys.argv[1])\n"
            "try:\n    from symdyn.studies.phase_diagram import equiangular_time as f\n"
            "except ImportError:   # a checkout from before the subpackages\n"
            "    from symdyn.phase_diagram import equiangular_time as f\n"
            "b = np.linspace(0.5, 9, 10)\n"
            "ts = []\nfor _ in range(3):\n    t0 = time.perf_counter(); f(sys.argv[2], 32, b)"
            "; ts.append(time.perf_counter() - t0)\nprint(min(ts))")
    run = subprocess.run([sys.executable, "-c", code, tree, scheme], capture_output=True,
                         text=True, check=True, cwd=tree)
    return float(run.stdout.split()[-1])


def part_e():
    system = stable_system("post-ln")
    ((f_u, f_r),) = system.phases()

    def rhs(t, y):
        eps = np.exp(y[0])
        return [f_u(t, eps, y[1], 8.0, 1.0), f_r(t, eps, y[1], 8.0, 1.0)]

    def ours():
        return sd.solve("post-ln", n=8, beta=1.0, gamma0=0.0, t=[0.0, 5.0, 20.0])

    # the tolerances sd.solve gives its state (u = log(1 - gamma), r)
    rtol = [problem.U_RTOL, 1e-11]
    atol = [float(problem.u_atol(np.array(1.0), np.array(8.0), 1e-11)), 1e-12]

    def theirs():
        return solve_ivp(rhs, (0, 20), [0.0, 1.0], method="DOP853", rtol=rtol, atol=atol,
                         t_eval=[0.0, 5.0, 20.0])

    ours()
    reps = 20
    _, t_ours = timed(lambda: [ours() for _ in range(reps)])
    _, t_theirs = timed(lambda: [theirs() for _ in range(reps)])
    a, b = ours(), theirs()
    print(f"(e) one-member sd.solve {t_ours / reps * 1e3:.1f} ms ({a.nfev} evaluations), "
          f"solve_ivp {t_theirs / reps * 1e3:.1f} ms ({b.nfev}): ratio "
          f"{t_ours / t_theirs:.1f} (target <= 1); |u diff| "
          f"{np.abs(a.log_epsilon - b.y[0]).max():.1e}")


def part_f(quick):
    from symdyn.particles.field import Field

    m, n, d = 8, 256, 512
    X = sd.init.sphere(n, d, batch=m, seed=0)
    beta, tm = np.full(m, np.sqrt(d)), np.zeros(m)
    cost = {}
    for dt in (np.float64, np.float32):
        field = Field(sd.scheme("peri-ln"), sd.weights.identity(d), "softmax", (), None,
                       dtype=dt)
        Xd, rd = X.astype(dt), np.ones((m, n), dtype=dt)
        field(tm, Xd, rd, beta, 0)
        cost[dt] = min(timed(lambda f=field, Xd=Xd, rd=rd: f(tm, Xd, rd, beta, 0))[1]
                       for _ in range(5))
    print(f"(f) field at batch 8, n = 256, d = 512: float64 {cost[np.float64] * 1e3:.1f} ms, "
          f"float32 {cost[np.float32] * 1e3:.1f} ms: {cost[np.float64] / cost[np.float32]:.1f}x")
    grid = {"n": 32, "d": 128, "beta": list(np.linspace(1.0, 10.0, 4 if quick else 10))}
    t = np.geomspace(0.1, 1e3, 40)
    tables, secs = {}, {}
    for precision in ("float64", "float32"):
        tables[precision], secs[precision] = timed(
            lambda p=precision: sd.sweep(grid | {"precision": p}, t=t, seeds=8, workers=1))
    mean = {p: tab.groupby(["beta", "t"])["linked"].mean().to_numpy()
            for p, tab in tables.items()}
    a, b = (tables[p]["linked"].to_numpy() for p in ("float64", "float32"))
    per_run, worst, pairs = a != b, np.abs(a - b).max(), 32 * 31 // 2
    print(f"    sweep {len(grid['beta'])} betas x 8 seeds: float64 {secs['float64']:.1f} s, "
          f"float32 {secs['float32']:.1f} s: {secs['float64'] / secs['float32']:.1f}x; "
          f"phase-diagram colour (mean over seeds) max |diff| "
          f"{np.abs(mean['float64'] - mean['float32']).max():.1e} (target <= 1e-3); "
          f"{per_run.sum()} of {per_run.size} single-run fractions differ, by at most "
          f"{round(worst * pairs)} of {pairs} pairs (a cosine within float32's error of "
          f"the threshold)")


def part_g(quick):
    T = 1e4 if quick else 1e5
    cases = {
        "log clock, Pre-LN n = 8, d = 2, 8 seeds": lambda method: sd.simulate(
            "pre-ln", sd.init.sphere(8, 2, batch=8, seed=3), beta=4.0, t=[10.0, 1e3, T],
            clock="log", method=method),
        "unmerged Post-LN n = 8, d = 4, 2 seeds": lambda method: sd.simulate(
            "post-ln", sd.init.sphere(8, 4, batch=2, seed=0), beta=9.0, t=[1e2, T],
            merge=0.0, method=method),
        "unmerged Post-LN n = 32, d = 8, 2 seeds": lambda method: sd.simulate(
            "post-ln", sd.init.sphere(32, 8, batch=2, seed=0), beta=9.0, t=[1e2, T],
            merge=0.0, method=method),
    }
    print(f"(g) stiff stretches, to {T:g}: method='auto' vs 'dop853'")
    for name, run in cases.items():
        auto, t_a = timed(lambda run=run: run("auto"))
        explicit, t_e = timed(lambda run=run: run("dop853"))
        print(f"    {name}: {auto.nfev:,} vs {explicit.nfev:,} evaluations "
              f"({explicit.nfev / auto.nfev:.1f}x), {t_a:.1f} vs {t_e:.1f} s "
              f"({t_e / t_a:.1f}x); {auto.stiff_steps} of {auto.steps} steps stiff; "
              f"max |diff| gamma {np.abs(auto.gamma - explicit.gamma).max():.1e}, "
              f"r {np.abs(auto.r - explicit.r).max():.1e}, "
              f"speed {np.abs(auto.speed - explicit.speed).max():.1e}")


def part_h(quick):
    X0 = sd.init.sphere(32, 3, batch=2, seed=0)
    t = [0.0, 1e1, 1e2, 1e3, 1e4] + ([] if quick else [1e5, 1e6])

    def run(merge):
        t0 = time.process_time()
        sim = sd.simulate("post-ln", X0, beta=9.0, t=t, mask="causal", merge=merge)
        return sim, time.process_time() - t0

    (merged, c_m), (plain, c_p) = run(1e-8), run(0.0)       # merging is opt-in there
    energies = ["energy_before", "energy_after"]           # rounding apart: not compared
    same = (np.array_equal(merged.labels, plain.labels) and
            merged.events.drop(columns=energies).equals(plain.events.drop(columns=energies)))
    print(f"(h) causal Post-LN, n = 32, d = 3, beta = 9, 2 seeds, to t = {t[-1]:g}: merged (1e-8) "
          f"{merged.nfev:,} evaluations, {c_m:.1f} CPU s ({merged.merged} tokens merged); "
          f"merge=0 {plain.nfev:,}, {c_p:.1f} CPU s: ratio {plain.nfev / merged.nfev:.1f}x "
          f"evaluations, {c_p / c_m:.1f}x CPU; same labels and events: {same}; clusters "
          f"{merged.clusters.tolist()}  (target <= 10 s)")


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true")
    p.add_argument("--then", metavar="TREE", help="a checkout of the code when the issue was "
                   "filed (git worktree add TREE f6d5d83): (d) also times its equiangular_time")
    args = p.parse_args()
    quick = args.quick
    part_a(quick)
    part_a_issue(quick)
    part_b()
    part_c()
    part_d(args.then)
    part_e()
    part_f(quick)
    part_g(quick)
    part_h(quick)


if __name__ == "__main__":
    main()
