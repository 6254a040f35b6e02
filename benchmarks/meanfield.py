"""The mean-field solver on the circle: its speed, and particles converging to it.

Run: ``python benchmarks/meanfield.py [--figure docs/meanfield_particles.png] [--quick]``.

1. Speed: ``symdyn.meanfield.mean_field`` at 256 modes, milliseconds per unit
   of time (best of 3), both kernels, with noise (kappa = 2 kappa_c, to t = 5)
   and without (to t = 1, where 256 modes still resolve the law), tol 1e-10
   and 1e-8; and the milliseconds per step.
2. Convergence in n: n particles (plain-numpy Euler-Maruyama, h = 0.01,
   velocities from the particles' own moments, exact to 1e-33 and checked
   against pairwise sums) with i.i.d. initial angles from rho0 ~ 1 + 0.6 cos(theta), softmax,
   beta = 1, kappa = 2 kappa_c, to t = 2, against the mean-field law at t = 2.
   Distance: the H^-1 norm ``D = (sum_{k>=1} |c_k - c_k^mf|^2 / k^2)^{1/2}``
   over 64 moments (up to a factor the L^2 distance of the two cumulative
   distribution functions, finite for an empirical measure); E D^2 is
   averaged over seeds. Expect ``D ~ n^{-1/2}``: the fitted slope is printed.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from scipy.special import ive

from symdyn.meanfield import critical_kappa, mean_field


def best(f, repeat=3):
    out = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        res = f()
        out.append(time.perf_counter() - t0)
    return min(out), res


def speed():
    def rho0(x):
        return 1 + 0.4 * np.cos(x) + 0.2 * np.sin(3 * x)

    print("mean_field, 256 modes: ms per unit time (best of 3)")
    print(f"{'kernel':>13} {'beta':>5} {'kappa':>7} {'t':>4} {'tol':>6} {'ms/unit t':>10} "
          f"{'steps':>6} {'ms/step':>8}")
    for attention in ("softmax", "unnormalized"):
        for beta in (1.0, 2.0):
            kap = 2 * critical_kappa(beta, 2, attention)
            for kappa, t in ((kap, 5.0), (None, 1.0)):
                for tol in (1e-10, 1e-8):
                    def run(beta=beta, t=t, kappa=kappa, attention=attention, tol=tol):
                        return mean_field(beta, [t], rho0, kappa=kappa, attention=attention,
                                          modes=256, tol=tol)
                    sec, res = best(run)
                    k = "none" if kappa is None else f"{kappa:.3f}"
                    print(f"{attention:>13} {beta:5.1f} {k:>7} {t:4.0f} {tol:6.0e} "
                          f"{1e3 * sec / t:10.2f} {res.steps:6d} {1e3 * sec / res.steps:8.3f}")


def pairwise(th, beta):
    """Softmax velocities by pairwise sums (the check of :func:`fourier`)."""
    c, s = np.cos(th), np.sin(th)
    w = np.exp(beta * (np.outer(c, c) + np.outer(s, s) - 1))
    return (c * (w @ s) - s * (w @ c)) / w.sum(1)


def fourier(th, beta, m=24):
    """Softmax velocities in O(n m): (1/n) sum_j e^{beta cos(th_i - th_j)} =
    sum_{|k| <= m} I_k(beta) chat_k e^{i k th_i}, chat_k = mean_j e^{-i k th_j},
    and the same with sin, i (I_{k-1} - I_{k+1})/2 for I_k; the dropped terms
    are below I_25(beta)/I_0(beta) ~ 1e-33 at beta = 1."""
    k = np.arange(m + 2)
    ik = ive(k, beta)
    waves = np.cumprod(np.repeat(np.exp(1j * th)[:, None], m, axis=1), axis=1)   # e^{ik th}
    chat = waves.conj().mean(0)
    u = ik[0] + 2 * (waves @ (ik[1:m + 1] * chat)).real
    lower = ik[:m]                                               # I_{k-1}, k = 1..m
    v = 2 * (waves @ (1j * (lower - ik[2:m + 2]) / 2 * chat)).real
    return v / u


def particles(n, beta, kappa, t, h, rng):
    """Softmax particles on the circle from i.i.d. angles of rho0 (rejection)."""
    th = rng.uniform(0, 2 * np.pi, 4 * n)
    th = th[rng.uniform(size=4 * n) * 1.6 < 1 + 0.6 * np.cos(th)][:n]
    for _ in range(round(t / h)):
        th = th + h * fourier(th, beta) + np.sqrt(2 * h / kappa) * rng.standard_normal(n)
    return th


def convergence(ns, seeds, figure=None):
    beta, t, h, modes = 1.0, 2.0, 0.01, 64
    kappa = 2 * critical_kappa(beta, 2)
    mf = mean_field(beta, [t], lambda x: 1 + 0.6 * np.cos(x), kappa=kappa, modes=modes)
    ks = np.arange(1, modes + 1)
    rows, last = [], None
    th = np.random.default_rng(0).uniform(0, 2 * np.pi, 500)
    print(f"\nFourier vs pairwise particle velocities: max difference "
          f"{np.abs(fourier(th, beta) - pairwise(th, beta)).max():.1e}")
    print(f"particles vs mean field at t = {t}: softmax, beta = {beta}, kappa = {kappa:.3f} "
          f"(2 kappa_c), h = {h}")
    print(f"{'n':>6} {'seeds':>5} {'rms D':>9} {'sd of mean D^2':>15} {'sqrt(n) D':>10} {'s':>6}")
    for n in ns:
        t0, d2 = time.perf_counter(), []
        for seed in range(seeds(n)):
            th = particles(n, beta, kappa, t, h, np.random.default_rng(seed))
            c = np.mean(np.exp(-1j * np.outer(ks, th)), axis=1)
            d2.append(np.sum(np.abs(c - mf.moments[0, 1:]) ** 2 / ks ** 2))
            last = th
        d2 = np.array(d2)
        rms = np.sqrt(d2.mean())
        rows.append((n, rms, d2.std() / np.sqrt(len(d2)) / d2.mean()))
        print(f"{n:6d} {len(d2):5d} {rms:9.4f} {rows[-1][2]:14.1%} {np.sqrt(n) * rms:10.3f} "
              f"{time.perf_counter() - t0:6.1f}")
    n_arr, rms_arr = np.array([r[0] for r in rows]), np.array([r[1] for r in rows])
    slope = np.polyfit(np.log(n_arr), np.log(rms_arr), 1)[0]
    print(f"fitted slope of log D against log n: {slope:.3f} (expected -0.5)")
    if figure:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        fig, (a, b) = plt.subplots(1, 2, figsize=(10, 4))
        a.loglog(n_arr, rms_arr, "o-", label="particles: rms $H^{-1}$ distance")
        a.loglog(n_arr, rms_arr[0] * np.sqrt(n_arr[0] / n_arr), "k--", label=r"$n^{-1/2}$")
        a.set_xlabel("n (tokens)")
        a.set_ylabel(r"$D(\hat\mu^n_t, \mu_t)$ at t = 2")
        a.set_title(f"fitted slope {slope:.2f}")
        a.legend()
        theta = np.linspace(0, 2 * np.pi, 400)
        b.hist(np.mod(last, 2 * np.pi), bins=60, density=True, alpha=0.4,
               label=f"n = {n_arr[-1]} particles")
        b.plot(theta, mf.density(theta)[0], "r", label="mean field, t = 2")
        b.plot(theta, (1 + 0.6 * np.cos(theta)) / (2 * np.pi), "k:", label="initial law")
        b.set_xlabel(r"$\theta$")
        b.set_ylabel("density")
        b.legend()
        fig.suptitle(f"softmax, beta = {beta}, kappa = 2 kappa_c = {kappa:.2f}")
        fig.tight_layout()
        fig.savefig(figure, dpi=110)
        print(f"figure: {figure}")


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--figure", default=None, help="write the convergence figure here")
    p.add_argument("--quick", action="store_true", help="n up to 800 only")
    args = p.parse_args()
    speed()
    ns = [100, 200, 400, 800] + ([] if args.quick else [1600, 3200, 6400])
    convergence(ns, lambda n: max(8, 51200 // n), args.figure)


if __name__ == "__main__":
    main()
