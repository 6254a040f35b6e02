"""Certified enclosures (symdyn.certify) against the float and mpmath answers, side by side.

Run: ``python benchmarks/certify.py [--seconds S]`` (needs ``symdyn[certify]``).
CPU seconds (``time.process_time``: the machine may be shared), each beside
its baseline, the float crossing time of ``sd.solve`` (rtol 1e-11) and the
mpmath path (``sd.solve(..., dps=50)`` at one time), and the issue's target:

(a) one quadrature form at 128 bits: Post-LN, n = 8, beta = 1, level 0.99
    (target <= 50 ms; the sympy derivation of the form is cached and timed
    apart, once per scheme);
(b) the nested ones (Pre-LN, Peri-LN, Mix-LN; target <= 1 s each);
(c) LN-Scaling by the validated Taylor integrator (target <= 10 s);
(d) the region certificate "post-ln before pre-ln" at level 0.99 over
    n in [2, 1024], beta in [0, 16] (target <= 60 s): the boxes proven,
    disproven (with witnesses) and undecided when the budget ``--seconds``
    (default 60) runs out, and the picture in ``/tmp/certify_region.png``.
"""

import argparse
import time

import symdyn as sd
import symdyn.certify as C
from symdyn.certify.forms import forms
from symdyn.reduced.solve_crossing import crossing_time as float_crossing


def cpu(f, repeat=1):
    best, out = float("inf"), None
    for _ in range(repeat):
        t0 = time.process_time()
        out = f()
        best = min(best, time.process_time() - t0)
    return best, out


def one(scheme, target, repeat=3):
    derive, _ = cpu(lambda: forms(scheme))
    t_cert, enc = cpu(lambda: C.crossing_time(scheme, "0.99", n=8, beta=1), repeat)
    t_float, tf = cpu(lambda: float(float_crossing(scheme, n=8, beta=1.0, level=0.99)), repeat)
    t_mp, _ = cpu(lambda: sd.solve(scheme, n=8, beta=1.0, gamma0=0.0, t=[enc.mid], dps=50))
    ok = "ok" if t_cert <= target else "MISSED"
    print(f"  {scheme:13s} certified {t_cert * 1e3:9.1f} ms  float {t_float * 1e3:7.1f} ms "
          f"(x{t_cert / t_float:6.1f})  mpmath dps=50 {t_mp * 1e3:8.1f} ms "
          f"(x{t_cert / t_mp:5.2f})  target {target * 1e3:6.0f} ms {ok}; "
          f"form derived once in {derive:.2f} s")
    print(f"  {'':13s} T* in {enc}  (rel. width {enc.relative_width:.1e}; float {tf!r})")
    print(f"  {'':13s} {enc.method}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=60.0)
    args = ap.parse_args()
    print("(a) a quadrature form at 128 bits")
    one("post-ln", 0.05, repeat=5)
    print("(b) nested forms (validated Taylor series in u = -log(1 - gamma))")
    for s in ("pre-ln", "peri-ln", "mix-ln"):
        one(s, 1.0)
    print("(c) LN-Scaling, the validated integrator")
    one("ln-scaling", 10.0, repeat=1)
    print(f"(d) region certificate, CPU budget {args.seconds:g} s")
    t, reg = cpu(lambda: C.region("post-ln before pre-ln", level="0.99", n=(2, 1024),
                                  beta=(0, 16), seconds=args.seconds))
    print(f"  {reg}")
    print(f"  {t:.1f} s CPU (target 60 s); proven area fraction "
          f"{_area(reg.proven_boxes, reg):.3f}")
    for box, w in reg.disproven[:5]:
        print(f"  disproven: box {box}, witness n = {w[0]:.6g}, beta = {w[1]:.6g}")
    for box in reg.undecided[:5]:
        print(f"  undecided: {box}")
    import matplotlib
    matplotlib.use("Agg")
    ax = reg.plot()
    ax.figure.savefig("/tmp/certify_region.png", dpi=150, bbox_inches="tight")
    print("  picture: /tmp/certify_region.png")


def _area(boxes, reg):
    import math
    total = math.log(reg.n[1] / reg.n[0]) * (reg.beta[1] - reg.beta[0])
    return sum(math.log(n1 / n0) * (b1 - b0) for (n0, n1), (b0, b1) in boxes) / total


if __name__ == "__main__":
    main()
