"""What each output records: ``sd.simulate(..., save=)`` at 100,000 output times.

Run: ``python benchmarks/observables.py [--quick] [--repeat 3]``.

Post-LN, n = 16, d = 8, beta = 1, ``t = linspace(0, 50, k)``, one member
(``sd.init.sphere(16, 8, seed=0)``) and a batch of 8, the default method.
For each record -- ``save="tokens"`` (the tokens only), ``save=None`` (every
observable, the default) and every observable with the tokens
(``save_x=True``) -- the least CPU time at k = 11 and at k = 100,000, and
the microseconds per output time per member beyond the k = 11 run, side by
side (issue 48's target for the tokens only: at most 5 us). The field
evaluations of the two runs of a record are printed too: the integration
does not depend on what is recorded, so they are equal across records.

``--quick``: k = 10,000 and one repetition.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import symdyn as sd

N, D, T_END = 16, 8, 50.0
RECORDS = {"tokens only": {"save": "tokens"}, "every observable": {},
           "every observable + tokens": {"save_x": True}}


def run(X0, k, kw):
    return sd.simulate("post-ln", X0, beta=1.0, t=np.linspace(0.0, T_END, k), **kw)


def best(f, repeat):
    """The least CPU time of ``repeat`` calls and the last result (solve.best)."""
    from solve import best as least  # benchmarks/solve.py: best of a few timed calls
    return least(f, repeat, clock=time.process_time)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    k_many = 10_000 if args.quick else 100_000
    repeat = 1 if args.quick else args.repeat
    print(f"Post-LN n = {N}, d = {D}, t = linspace(0, {T_END:g}, k); per output: "
          f"(time(k = {k_many:,}) - time(k = 11)) / ({k_many:,} - 11) / members")
    many_head = f"cpu(k={k_many:,}) s"
    print(f"{'members':>7s}  {'record':<26s} {'cpu(k=11) s':>12s} {many_head:>17s}"
          f" {'us/output/member':>17s} {'nfev 11 / many':>16s}")
    for M in (1, 8):
        X0 = sd.init.sphere(N, D, batch=M, seed=0) if M > 1 else sd.init.sphere(N, D, seed=0)
        costs = {}
        for name, kw in RECORDS.items():
            t_few, few = best(lambda kw=kw, X0=X0: run(X0, 11, kw), repeat)
            t_many, many = best(lambda kw=kw, X0=X0: run(X0, k_many, kw), repeat)
            per = (t_many - t_few) / (k_many - 11) / M * 1e6
            costs[name] = per
            print(f"{M:>7d}  {name:<26s} {t_few:>12.3f} {t_many:>17.3f} {per:>17.2f} "
                  f"{few.nfev:>7d} / {many.nfev:<7d}")
        print(f"{'':>7s}  tokens only / every observable: "
              f"{costs['tokens only'] / costs['every observable']:.2f}  "
              f"(target for the tokens only: <= 5 us per output per member)")


if __name__ == "__main__":
    main()
