"""Output times for free: sd.simulate at 11, 1,001 and 100,000 output times.

Run: ``python benchmarks/output_times.py [--quick]``.

Post-LN, n = 16, d = 8, beta = 1, ``t = linspace(0, 50, k)``, one member
(``sd.init.sphere(16, 8, seed=0)``) and a batch of 8, ``method="auto"`` (the
default) and ``"dop853"``. Side by side with the baseline of 11 output times:

* the field evaluations and their ratio to k = 11 (issue 45's target: at
  most 1.3; output times neither end nor change a step, and the steps that
  hold one spend the 3 evaluations of Hairer's ``contd8``, the default
  dense output; ``dense_output="order6"`` would spend none, at up to 23x
  the error, ``benchmarks/output_accuracy.py``);
* the wall time, and the microseconds per output time per member beyond the
  k = 11 run (target <= 5 us; about 8.7 us here): per output (n = 16, chunks
  of ~1,900 outputs) the field's speeds ~3.9 us (1.7 of them its 256
  exponentials, whose row sums also give the energy: ``Field.shares_normalizers``),
  the other observables (``particles.result.Recorder``) ~1.5 us (0.5 the Gram
  matrix), reading the states ~0.9 us, projecting them ~0.5 us, the rest
  (~1.8 us) the recorder's arrays and the merging bookkeeping; on a CPU without
  AVX-512 numpy's float64 exp is libm's, ~6.6 ns, so the exponentials, Gram
  matrices, attention products, polynomial and projection alone come to ~4.5 us;
* for reference, ``scipy.integrate.solve_ivp`` (DOP853, ``dense_output=True``,
  the same tolerances 1e-10 / 1e-12) on the same field, one member, its
  dense output read at the k times (states only, no observables).

Then the same count in a metastable run (beta = 9: clusters 16 -> 7 -> 4, merged
tokens), where the cluster labels and the merging bounds of every output
cost as much as the rest (:func:`metastable`).

Best of 3 (``--quick``: 1, and k = 100,000 left out).
"""

import argparse
import time

import numpy as np
from scipy.integrate import solve_ivp

import symdyn as sd
from symdyn.model.registry import scheme
from symdyn.particles.field import Field
from symdyn.particles.weights import identity

N, D, T_END = 16, 8, 50.0


def best(f, repeat):
    out, res = [], None
    for _ in range(repeat):
        t0 = time.perf_counter()
        res = f()
        out.append(time.perf_counter() - t0)
    return min(out), res


def simulate(X0, k, method):
    return sd.simulate("post-ln", X0, beta=1.0, t=np.linspace(0, T_END, k), method=method)


def reference(k):
    """solve_ivp on the same field (one member): evaluations, and the time of
    the solve plus reading its dense output at the k times."""
    F = Field(scheme("post-ln"), identity(D, 1), "softmax", [], None)
    one = np.ones(1)

    def rhs(t, y):
        th, rr = y[:N * D].reshape(1, N, D), y[N * D:].reshape(1, N)
        dth, drr = F.grouped(one * t, th, rr, one, F.phase_at(one * t))
        return np.concatenate([dth.ravel(), drr.ravel()])
    X0 = sd.init.sphere(N, D, seed=0)
    y0 = np.concatenate([(X0 / np.linalg.norm(X0, axis=-1, keepdims=True)).ravel(),
                         np.ones(N)])

    def run():
        sol = solve_ivp(rhs, (0, T_END), y0, method="DOP853", rtol=1e-10, atol=1e-12,
                        dense_output=True)
        sol.sol(np.linspace(0, T_END, k))
        return sol.nfev
    return run


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    quick = ap.parse_args().quick
    repeat = 1 if quick else 3
    ks = (11, 1001) if quick else (11, 1001, 100_000)
    print(f"Post-LN n={N} d={D} beta=1, t = linspace(0, {T_END:g}, k); best of {repeat}")
    print(f"{'run':<18}{'k':>8}{'nfev':>7}{'x k=11':>8}{'time s':>9}{'us/out/member':>15}"
          f"{'solve_ivp nfev':>16}{'time s':>9}")
    ivp = {k: best(reference(k), repeat) for k in ks}
    for M in (1, 8):
        X0 = sd.init.sphere(N, D, seed=0) if M == 1 else sd.init.sphere(N, D, batch=M, seed=0)
        for method in ("auto", "dop853"):
            base = None
            for k in ks:
                t, sim = best(lambda k=k, X0=X0, method=method: simulate(X0, k, method),
                              repeat if k < 10**5 else 1)
                if base is None:
                    base = (t, sim.nfev)
                per = (t - base[0]) / ((k - 11) * M) * 1e6 if k > 11 else 0.0
                ti, nf = ivp[k]
                print(f"{f'{method}, batch {M}':<18}{k:>8,}{sim.nfev:>7}"
                      f"{sim.nfev / base[1]:>8.3f}{t:>9.3f}{per:>15.1f}{nf:>16}{ti:>9.3f}")
    print("targets: x k=11 <= 1.05; us/out/member <= 5 (solve_ivp: one member, states only)")
    metastable(ks, repeat)


def metastable(ks, repeat):
    """The same count in a metastable run: Post-LN, n = 16, d = 8, beta = 9,
    ``sd.init.sphere(16, 8, seed=1)`` to t = 200 (clusters 16 -> 7 -> 4, merged tokens:
    the cluster labels and the merging bounds at every output)."""
    X0 = sd.init.sphere(N, D, seed=1)

    def run(k):
        return sd.simulate("post-ln", X0, beta=9.0, t=np.linspace(0, 200.0, k))
    print(f"\nmetastable: Post-LN n={N} d={D} beta=9, t = linspace(0, 200, k); best of "
          f"{repeat}")
    base = None
    for k in ks:
        t, sim = best(lambda k=k: run(k), repeat if k < 10**5 else 1)
        base = base or t
        per = (t - base) / (k - 11) * 1e6 if k > 11 else 0.0
        print(f"{k:>8,} outputs {t:7.3f} s {per:6.1f} us/out   clusters "
              f"{sim.clusters[0]} -> {sim.clusters[-1]}, {sim.merged} tokens merged")


if __name__ == "__main__":
    main()
