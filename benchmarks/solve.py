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
"""

import argparse
import time

import numpy as np
from scipy.integrate import solve_ivp

import symdyn as sd
from symdyn.reduced.solver import _u_atol

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
    u_atol = float(_u_atol(np.array(1.0), np.array(n), RTOL))
    sol = solve_ivp(rhs, (0, T_END), [0.0, r0], method="DOP853",
                    rtol=[100 * np.finfo(float).eps, RTOL], atol=[u_atol, ATOL],
                    t_eval=[T_END])
    return sol.y[0, -1]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--full", action="store_true", help="run the whole baseline")
    args = parser.parse_args()
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
