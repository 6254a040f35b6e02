"""Continuous runs in the cluster's frame against stored unit vectors.

Run: ``python benchmarks/frame.py [--repeat 3]``. Each case runs twice in
one process: as ``sd.simulate`` runs it (identity weights: each member in
its own frame, symdyn.particles.continuous) and with the frame turned off
(``Field.frames`` patched to False: the directions stored as unit vectors,
the formulation before the frame). Prints per case the evaluations, the
best wall time of ``--repeat`` runs, their ratios (frame over unit vectors)
and the worst relative error of ``epsilon`` against the reduced ODE where
there is one (equiangular starts; ``sd.solve`` at rtol 1e-13), with the
value each formulation reports at the last time:

- Post-LN, n = 8, d = 8, beta = 1, equiangular, t = 0 ... 117 (epsilon to 1e-100);
- Pre-LN in the log clock, the same start, tau = 0 ... 120;
- Post-LN, n = 32, d = 8, beta = 9, 2 random seeds, t to 1e12 (merging,
  metastable clusters; docs/model.md's example);
- Post-LN, n = 12, d = 3, beta = 4, 2 random seeds to t = 200 (clusters
  forming, rtol 1e-12);
- Post-LN, n = 64, d = 32, beta = 1, 4 random seeds to t = 20 (a larger field).
"""

import argparse
from contextlib import contextmanager

import numpy as np
from solve import best  # benchmarks/solve.py: best of a few timed calls

import symdyn as sd
from symdyn.particles.field import Field


@contextmanager
def unit_vectors():
    """The continuous runs store unit vectors (the frame off)."""
    saved = Field.frames
    Field.frames = property(lambda self: False)
    try:
        yield
    finally:
        Field.frames = saved


def cases():
    eq = sd.init.equiangular(8, 8, 0.0, seed=1)
    return [
        ("post-ln equiangular to 1e-100", "post-ln", eq, 1.0,
         np.linspace(0.0, 117.0, 10), {}, "t"),
        ("pre-ln log clock, tau to 120", "pre-ln", eq, 1.0,
         np.linspace(0.0, 120.0, 7), {"clock": "log"}, "log"),
        ("post-ln n=32 d=8 beta=9 to 1e12", "post-ln",
         sd.init.sphere(32, 8, batch=2, seed=3), 9.0, [0.0, 1e3, 1e6, 1e9, 1e12], {}, None),
        ("post-ln n=12 d=3 beta=4 to 200", "post-ln",
         sd.init.sphere(12, 3, batch=2, seed=3), 4.0, [5.0, 20.0, 60.0, 200.0],
         {"rtol": 1e-12, "atol": 1e-14}, None),
        ("post-ln n=64 d=32 beta=1 to 20", "post-ln",
         sd.init.sphere(64, 32, batch=4, seed=0), 1.0, [0.0, 5.0, 20.0], {}, None),
    ]



def error(sim, scheme, t, clock):
    if clock is None:
        return "", ""
    tt = np.expm1(t) if clock == "log" else np.asarray(t)
    exact = sd.solve(scheme, n=8, beta=1.0, gamma0=0.0, t=tt, rtol=1e-13,
                     atol=1e-300).epsilon
    return f"{np.abs(sim.epsilon / exact - 1).max():.2g}", f"{sim.epsilon[-1]:.3g}"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    print(f"{'case':34s} {'nfev frame/unit':>18s} {'time frame/unit (s)':>22s} "
          f"{'ratio':>6s} {'error frame/unit':>20s} {'last epsilon frame/unit':>26s}")
    for name, scheme, X0, beta, t, kw, clock in cases():
        def run(scheme=scheme, X0=X0, beta=beta, t=t, kw=kw):
            return sd.simulate(scheme, X0, beta=beta, t=t, **kw)
        tf, frame = best(run, args.repeat)
        with unit_vectors():
            tu, unit = best(run, args.repeat)
        ef, lf = error(frame, scheme, t, clock)
        eu, lu = error(unit, scheme, t, clock)
        print(f"{name:34s} {frame.nfev:>8d}/{unit.nfev:<9d} {tf:>10.3f}/{tu:<11.3f} "
              f"{tf / tu:>6.2f} {ef:>9s}/{eu:<10s} {lf:>12s}/{lu:<13s}")


if __name__ == "__main__":
    main()
