"""The claims a finite computation decides, certified in ball arithmetic.

Run by ``python -m symdyn.proofs_check --certify`` (needs python-flint, the
``symdyn[certify]`` extra). Every :class:`~.result.Result` here has
``kind="certified"``: a PASS is a proof (the enclosures of
:mod:`symdyn.certify`, every rounding directed), not a float within a tolerance.

* ``fig2-order``: the order in which the paper's six schemes reach
  gamma = 0.99 at Figure 2's parameters, each ``<`` proved by disjoint
  enclosures of the crossing times; the caption "Pre-LN and Peri-LN converge
  last" is then decided (it is false here: Mix-LN is slower than Peri-LN).
* ``fig2-early``: "Post-LN, nGPT and Peri-LN are ahead of Pre-LN at t = 1":
  gamma increases, so ``T_A(L) < 1 < T_B(L)`` for one level ``L`` proves
  ``gamma_A(1) > L > gamma_B(1)``.
* ``regions``: "A before B" over the paper's ``n`` in [2, 1024], ``beta`` in
  [0, 16] by branch and bound (:func:`symdyn.certify.region`): pointwise
  dominance decides each in one box.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from symdyn.output.claims import PAPER_SIX, gamma_at, reach_times

from .result import Result

#: Figure 2's parameters (``figures.figure2_data``'s defaults), the caption's level and depth.
FIG2 = {"n": 32, "beta": 1, "level": "0.99", "depth": 1}
#: (claim, level, n box, beta box): the region certificates, over the paper's
#: range; each decided in one box by pointwise dominance (docs/certify.md).
REGIONS = (("post-ln before pre-ln", "0.99", (2, 1024), (0, 16)),
           ("ngpt before pre-ln", "0.99", (2, 1024), (0, 16)))


def _certify():
    try:
        import symdyn.certify.compare as compare
    except ModuleNotFoundError as exc:
        if exc.name != "flint":
            raise
        raise ModuleNotFoundError("--certify needs python-flint: pip install "
                                  "'symdyn[certify]'", name="flint") from None
    return compare


def fig2_order(n=FIG2["n"], beta=FIG2["beta"], level=FIG2["level"], claimed=None) -> Result:
    """Certify ``claimed`` (names in increasing crossing time; default: the
    order of the float crossing times, ``reach_times``) at ``(n, beta)``."""
    compare = _certify()
    floats = reach_times(PAPER_SIX, n=n, beta=beta, level=float(level))
    claimed = list(claimed or sorted(floats, key=floats.get))
    res = Result("fig2-order", f"At Figure 2's parameters the paper's six schemes reach "
                 f"gamma = {level} in the order {' < '.join(claimed)} (every '<' proved)",
                 {"n": n, "beta": beta, "level": level, "gamma0": 0}, "disjoint enclosures",
                 ["enclosures"], kind="certified")
    ordering = compare.order(claimed, level, n=n, beta=beta)
    enc = ordering.enclosures
    for a, b in zip(claimed[:-1], claimed[1:], strict=True):
        res.row("enclosures", enc[a].hi < enc[b].lo, before=a, after=b,
                T_before=str(enc[a]), T_after=str(enc[b]))
    last = ordering.names[-2:]
    caption = ("certified true" if set(last) == {"pre-ln", "peri-ln"} and ordering.proven
               else "certified false here" if ordering.proven else "undecided")
    res.key_figures = (f"{ordering} (each '<' proved); so the caption 'Pre-LN and Peri-LN "
                       f"converge last' is {caption} (the last two: {last[0]}, {last[1]})")
    return res


def fig2_early(first=("post-ln", "ngpt", "peri-ln"), then=("pre-ln",), t=FIG2["depth"],
               n=FIG2["n"], beta=FIG2["beta"]) -> Result:
    """Certify gamma_A(t) > gamma_B(t) for A in ``first``, B in ``then``: a
    level L between the float values, and ``T_A(L) < t < T_B(L)`` proved."""
    crossing_time = _certify().crossing_time
    g = gamma_at(list(first) + list(then), t, n=n, beta=beta)
    res = Result("fig2-early", f"At Figure 2's parameters {', '.join(first)} are ahead of "
                 f"{', '.join(then)} at t = {t} (gamma larger)",
                 {"n": n, "beta": beta, "t": t, "gamma0": 0}, "disjoint enclosures",
                 ["level between"], kind="certified")
    for a in first:
        for b in then:
            level = _between(g[b], g[a])
            Ta, Tb = (crossing_time(s, level, n=n, beta=beta) for s in (a, b))
            res.row("level between", Ta.hi < t < Tb.lo, ahead=a, behind=b,
                    level=str(level), T_ahead=str(Ta), T_behind=str(Tb))
    res.key_figures = f"gamma at t = {t}: " + "; ".join(
        f"{e['ahead']} > {e['level']} > {e['behind']}" for e in res.evidence)
    return res


def _between(lo: float, hi: float) -> str:
    """The shortest decimal strictly between ``lo`` and ``hi`` (their midpoint
    when ``hi <= lo``: the certificate then fails, as it should)."""
    mid = (lo + hi) / 2
    for digits in range(1, 17):
        text = f"{mid:.{digits}g}"
        if lo < float(text) < hi:
            return text
    return repr(mid)


def regions(claims=REGIONS, seconds=None) -> Result:
    """Region certificates: each claim proved over its whole box (FAIL where a
    sub-box is disproven or left undecided). No CPU budget by default: the
    split limits alone decide, so the verdict does not depend on the machine."""
    region = _certify().region
    res = Result("regions", "The paper's comparative statements over boxes of (n, beta), "
                 "n taken as real, proved by branch and bound",
                 {"boxes": [list(c) for c in claims]}, "every sub-box proven",
                 ["branch and bound"], kind="certified")
    for claim, level, nb, bb in claims:
        reg = region(claim, level=level, n=nb, beta=bb, seconds=seconds)
        res.row("branch and bound", reg.proven, claim=claim, level=level, n=nb, beta=bb,
                proven=len(reg.proven_boxes), disproven=len(reg.disproven),
                undecided=len(reg.undecided), certificate=reg.method,
                witness=reg.disproven[0][1] if reg.disproven else "")
    res.key_figures = "; ".join(
        f"{e['claim']} over n {e['n']}, beta {e['beta']}: "
        f"{e['proven']} box{'' if e['proven'] == 1 else 'es'} proven" for e in res.evidence)
    res.notes.append("certificates: " + "; ".join(f"{e['claim']}: {e['certificate']}"
                                                  for e in res.evidence))
    return res


#: name -> the certified check (run by ``--certify``; not in ``CHECKS``: needs python-flint).
CERTIFIED = {"fig2-order": fig2_order, "fig2-early": fig2_early, "regions": regions}


def run(only=None, progress: Callable[[str], None] | None = None):
    """The certified checks (all, or those of ``only``): ``[(result, seconds)]``."""
    out = []
    for name in only or CERTIFIED:
        if progress:
            progress(f"certifying {name}")
        t0 = time.perf_counter()
        out.append((CERTIFIED[name](), time.perf_counter() - t0))
    return out
