"""The driver's events: equiangular_time against an event-based solve_ivp loop.

Run: ``python benchmarks/driver.py``.

:math:`T_*(\\beta)`, the first time :math:`\\gamma(t) = 0.999` from
:math:`\\gamma_0 = 0` (``symdyn.studies.phase_diagram.equiangular_time``), for
10 values of beta (0 .. 9), n = 32, t_max = 1e6, best of 3, for Post-LN and
Pre-LN. Side by side:

* ``equiangular_time``: one batched solve in which every member stops at its
  crossing (a terminal event of the driver, issue 25 item 9; target: no
  slower than the loop below);
* the same answer as it was computed before (four batched ``sd.solve``
  passes from ``t = 0``: a logarithmic grid to ``t_max``, 33 points in the
  bracket, Newton steps), kept here as :func:`four_passes`;
* the usual script: one ``scipy.integrate.solve_ivp`` (DOP853, the same
  tolerances) per beta with a terminal event on ``u = log(1 - gamma)``.

The largest relative difference of the three answers is printed too.

Second table, one member (``sd.solve`` of a single parameter set, Post-LN
and Pre-LN to t = 20): the scalar path (:mod:`symdyn.ode.scalar`, the
driver's arithmetic on Python floats) against the driver itself on a batch
of one, and that the two answers are equal bit for bit.

Third table, the step's own cost (issue 35, item 5): on a field that costs
next to nothing (``dy/dt = lambda y``, two components per member, every
member active), the CPU time per DOP853 step of
:func:`symdyn.ode.integrate.integrate` minus its 12 evaluations, for 1, 10
and 300 members, beside ``solve_ivp`` (DOP853, one member) on the same field:
what a small run pays per step whatever its field.
"""


import time

import numpy as np
from scipy.integrate import solve_ivp
from solve import best  # benchmarks/solve.py: best of a few timed calls

import symdyn as sd
from symdyn.ode.dop853 import N_STAGES
from symdyn.ode.integrate import integrate
from symdyn.reduced import solver
from symdyn.reduced.problem import U_RTOL, u_atol
from symdyn.studies.phase_diagram import equiangular_time

LEVEL, N, T_MAX, RTOL, ATOL = 0.999, 32, 1e6, 1e-11, 1e-12
BETAS = np.arange(10.0)


def four_passes(scheme, n, beta, level=LEVEL, gamma0=0.0, t_max=T_MAX):
    """equiangular_time as it was before the driver located events."""
    target = np.log1p(-level)

    def at(times):
        grid, where = np.unique(times, return_inverse=True)
        tr = sd.solve(scheme, n=n, beta=beta, gamma0=gamma0, t=grid)
        where = where.reshape(np.shape(times))
        with np.errstate(all="ignore"):
            return tr.log_epsilon[:, where], -tr.gamma_dot[:, where] / tr.epsilon[:, where]

    grid = np.concatenate([[0.0], np.geomspace(1e-3, t_max, 200)])
    u, _ = at(grid)
    out = np.full(beta.shape, np.inf)
    crossed = np.flatnonzero((u <= target).any(axis=1))
    if crossed.size == 0:
        return out
    k = np.argmax(u[crossed] <= target, axis=1)
    lo = np.where(k > 1, grid[k - 1], 1e-12)
    inner = np.geomspace(lo, grid[k], 33, axis=1)
    rows = np.arange(len(crossed))
    u_in = at(inner)[0][crossed, rows]
    j = np.maximum(np.argmax(u_in <= target, axis=1), 1)
    a_, b_ = np.log(inner[rows, j - 1]), np.log(inner[rows, j])
    ua, ub = u_in[rows, j - 1], u_in[rows, j]
    est = np.exp(a_ + (target - ua) / (ub - ua) * (b_ - a_))
    for _ in range(6):
        u_k, du = at(est)
        new = est - (u_k[crossed, rows] - target) / du[crossed, rows]
        done = np.abs(new - est) <= 1e-11 * est
        est = new
        if done.all():
            break
    out[crossed] = est
    return out


def solve_ivp_loop(scheme, betas):
    """One solve_ivp per beta, stopped by a terminal event."""
    system = sd.stable_system(scheme)
    phases, bps = system.phases("numpy"), system.breakpoints
    target = np.log1p(-LEVEL)
    out = []
    for beta in betas:
        def rhs(t, y, beta=beta):
            f_u, f_r = phases[int(np.searchsorted(bps, t, side="right"))]
            eps = np.exp(y[0])
            return [f_u(t, eps, y[1], N, beta), f_r(t, eps, y[1], N, beta)]

        def event(t, y):
            return y[0] - target
        event.terminal, event.direction = True, -1
        atol_u = float(u_atol(np.array(1.0), np.array(float(N)), RTOL))
        sol = solve_ivp(rhs, (0, T_MAX), [0.0, 1.0], method="DOP853", events=event,
                        rtol=[U_RTOL, RTOL], atol=[atol_u, ATOL])
        out.append(sol.t_events[0][0] if sol.t_events[0].size else np.inf)
    return np.array(out)


def main():
    print(f"T_*(beta) for {len(BETAS)} betas (0 .. 9), n = {N}, level {LEVEL}, "
          f"t_max = {T_MAX:g}; best of 3")
    print(f"{'scheme':<9}{'events':>9}{'4 passes':>10}{'x':>6}{'solve_ivp loop':>16}{'x':>6}"
          f"{'max rel diff':>14}")
    for scheme in ("post-ln", "pre-ln"):
        equiangular_time(scheme, N, BETAS[:1])          # compile outside the timings
        t_new, new = best(lambda scheme=scheme: equiangular_time(scheme, N, BETAS))
        t_old, old = best(lambda scheme=scheme: four_passes(scheme, N, BETAS))
        t_ivp, ivp = best(lambda scheme=scheme: solve_ivp_loop(scheme, BETAS))
        finite = np.isfinite(new)
        assert np.array_equal(finite, np.isfinite(old)) and np.array_equal(finite,
                                                                           np.isfinite(ivp))
        diff = max(np.max(np.abs(new[finite] / old[finite] - 1), initial=0),
                   np.max(np.abs(new[finite] / ivp[finite] - 1), initial=0))
        print(f"{scheme:<9}{t_new:>8.3f}s{t_old:>9.3f}s{t_old / t_new:>5.1f}x"
              f"{t_ivp:>15.3f}s{t_ivp / t_new:>5.1f}x{diff:>14.1e}")
    print("x: that time / equiangular_time's (target: solve_ivp loop x >= 1)")
    one_member()


def one_member():
    print("\none member to t = 20 (n = 8, beta = 3), best of 5")
    print(f"{'scheme':<9}{'scalar path':>13}{'batch of one':>14}{'x':>6}{'equal':>7}")
    for scheme in ("post-ln", "pre-ln"):
        def run(scheme=scheme):
            return sd.solve(scheme, n=8, beta=3.0, gamma0=0.0, t=[1.0, 20.0])

        t_scalar, a = best(run, 5)
        scalar_path = solver.solve_one
        solver.solve_one = lambda *args: None        # every solve on the driver
        try:
            t_batch, b = best(run, 5)
        finally:
            solver.solve_one = scalar_path
        same = np.array_equal(a.log_epsilon, b.log_epsilon) and np.array_equal(a.r, b.r)
        print(f"{scheme:<9}{t_scalar * 1e3:>11.1f}ms{t_batch * 1e3:>12.1f}ms"
              f"{t_batch / t_scalar:>5.1f}x{str(same):>7}")
    print("x: the driver on a batch of one / the scalar path")


def step_cost():
    print("\nthe step's own cost: dy/dt = lambda y, 2 components a member, to t = 50, "
          "CPU time, best of 10")
    print(f"{'members':>8}{'steps':>7}{'us/step':>9}{'field us':>10}{'own us/step':>13}")
    for M in (1, 10, 300):
        lam = np.full(M, -1.5)          # one rate: every member takes the same steps
        y0 = np.ones((M, 2))

        def f(t, y, phase, lam=lam):
            return y * lam[:, None]

        def run(f=f, y0=y0):
            return integrate(f, np.array([50.0]), y0, rtol=RTOL, atol=ATOL)
        t_run, sol = best(run, 10, time.process_time)
        steps = int(sol.nsteps.max())
        t_f = best(lambda f=f, y0=y0: [f(0.0, y0, None) for _ in range(1000)], 5,
                   time.process_time)[0] / 1000
        own = t_run / steps - N_STAGES * t_f
        print(f"{M:>8}{steps:>7}{t_run / steps * 1e6:>9.1f}{t_f * 1e6:>10.2f}{own * 1e6:>13.1f}")
    def g(t, y):
        return y * -1.5
    y1 = np.ones(2)
    t_run, sol = best(lambda: solve_ivp(g, (0.0, 50.0), y1, method="DOP853", rtol=RTOL,
                                        atol=ATOL), 10, time.process_time)
    steps = (sol.nfev - 2) / 12
    t_f = best(lambda: [g(0.0, y1) for _ in range(1000)], 5, time.process_time)[0] / 1000
    print(f"{'solve_ivp':>8}{steps:>7.0f}{t_run / steps * 1e6:>9.1f}{t_f * 1e6:>10.2f}"
          f"{(t_run / steps - N_STAGES * t_f) * 1e6:>13.1f}")
    print(f"own: per step, less the field's {N_STAGES} evaluations of a DOP853 step "
          f"(first stage the last's, as in solve_ivp)")


if __name__ == "__main__":
    main()
    step_cost()
