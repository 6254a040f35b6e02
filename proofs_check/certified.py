"""The claims a finite computation decides, certified in ball arithmetic.

Run by ``python -m symdyn.proofs_check --certify`` (needs python-flint, the
``symdyn[certify]`` extra). Every :class:`~.result.Result` here has
``kind="certified"``: a PASS is a proof (the enclosures of
:mod:`symdyn.certify`, every rounding directed), not a float within a tolerance.

* ``fig2-order``: the order in which the paper's six schemes reach
  gamma = 0.99 at Figure 2's parameters, each ``<`` proved by disjoint
  enclosures of the crossing times; the caption "Pre-LN and Peri-LN converge
  last" is then decided (it is false here: Mix-LN is slower than Peri-LN),
  stated with the model it holds in (every scheme's parameters: Mix-LN's
  ``t_switch``, nGPT's ``alpha``) and the certified value of ``t_switch``
  at which it flips (by bisection on certified comparisons).
* ``fig2-early``: "Post-LN, nGPT and Peri-LN are ahead of Pre-LN at t = 1":
  gamma increases, so ``T_A(L) < 1 < T_B(L)`` for one level ``L`` proves
  ``gamma_A(1) > L > gamma_B(1)``.
* ``regions``: "A before B" over the paper's ``n`` in [2, 1024], ``beta`` in
  [0, 16] by branch and bound (:func:`symdyn.certify.region`): pointwise
  dominance decides each in one box.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from fractions import Fraction

from symdyn.output.claims import PAPER_SIX, gamma_at, reach_times

from .result import Result

#: Figure 2's parameters (``figures.figure2_data``'s defaults), the caption's level and depth.
FIG2 = {"n": 32, "beta": 1, "level": "0.99", "depth": 1, "t_switch": 1}
#: the range of Mix-LN's t_switch over which fig2-order locates the caption's flip,
#: and the width to which it is located (bisection on exact dyadic values)
T_SWITCH_RANGE = (Fraction(1, 2), Fraction(4))
T_SWITCH_WIDTH = Fraction(1, 1024)
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


def model_text(schemes: Sequence) -> str:
    """Every modelling parameter the schemes carry, with its value:
    ``mix-ln: t_switch = 1; ngpt: alpha = 1`` (Mix-LN's ``t_switch``, nGPT's
    ``alpha``, DeepNorm's ``N``; "no parameters" when none has one)."""
    from symdyn.model.registry import BUILTINS, scheme
    parts = []
    for s in schemes:
        sc = scheme(s)
        values = dict(sc.params)
        entry = BUILTINS.get(sc.name)
        given = [(p.symbol or p.name, values[p.name]) for p in (entry.parameters if entry else ())
                 if p.kind != "free" and p.name in values]
        if given:
            parts.append(f"{sc.name}: " + ", ".join(f"{k} = {_value(v)}" for k, v in given))
    return "; ".join(parts) or "no parameters"


def _value(v) -> str:
    """A parameter's value: a number to 10 significant digits, an expression as text."""
    try:
        return f"{float(v):.10g}"
    except (TypeError, ValueError):
        return str(v)


def caption_true(ordering) -> bool | None:
    """Figure 2's caption "Pre-LN and Peri-LN converge last" on a certified
    ordering: True or False when every '<' is proved, None otherwise."""
    if not ordering.proven:
        return None
    return set(ordering.names[-2:]) == {"pre-ln", "peri-ln"}


def mix_before_peri(t_switch, n=FIG2["n"], beta=FIG2["beta"], level=FIG2["level"],
                    prec=64, max_prec=256) -> bool | None:
    """Certified ``T_Mix-LN(t_switch) < T_Peri-LN`` (True), ``>`` (False), or None
    (the enclosures overlap at ``max_prec`` bits)."""
    from symdyn.model.registry import scheme
    mix = scheme("mix-ln", t_switch=Fraction(t_switch))
    ordering = _certify().order([mix, "peri-ln"], level, n=n, beta=beta, prec=prec,
                                max_prec=max_prec)
    if not ordering.proven:
        return None
    return ordering.names[0] == "mix-ln"


def switch_flip(lo=T_SWITCH_RANGE[0], hi=T_SWITCH_RANGE[1], width=T_SWITCH_WIDTH,
                n=FIG2["n"], beta=FIG2["beta"],
                level=FIG2["level"]) -> tuple[Fraction, Fraction] | None:
    """``(lo, hi)``: a value of Mix-LN's ``t_switch`` where Figure 2's verdict
    flips lies in ``[lo, hi]`` (``hi - lo <= width``), by bisection on certified
    comparisons of Mix-LN's and Peri-LN's crossing times (exact dyadic
    ``t_switch``): the verdict is certified false at ``lo`` (Mix-LN after
    Peri-LN) and true at ``hi``. None when the ends do not differ (or a
    comparison stays undecided)."""
    lo, hi = Fraction(lo), Fraction(hi)
    ends = mix_before_peri(lo, n, beta, level), mix_before_peri(hi, n, beta, level)
    if ends != (False, True):
        return None
    while hi - lo > width:
        mid = (lo + hi) / 2
        side = mix_before_peri(mid, n, beta, level)
        if side is None:
            return None
        lo, hi = (lo, mid) if side else (mid, hi)
    return lo, hi


def fig2_order(n=FIG2["n"], beta=FIG2["beta"], level=FIG2["level"], claimed=None,
               t_switch=FIG2["t_switch"], flip=True) -> Result:
    """Certify ``claimed`` (names in increasing crossing time; default: the
    order of the float crossing times, ``reach_times``) at ``(n, beta)`` with
    Mix-LN's switch at ``t_switch``; the caption's verdict names the model
    (every scheme's parameters) and, with ``flip``, the certified value of
    ``t_switch`` in :data:`T_SWITCH_RANGE` where it flips (:func:`switch_flip`)."""
    from symdyn.model.registry import scheme
    compare = _certify()
    t_switch = Fraction(t_switch)
    schemes = {k: scheme(k, t_switch=t_switch) if k == "mix-ln" else scheme(k)
               for k in PAPER_SIX}
    floats = {k: T for k, T in zip(PAPER_SIX, reach_times([schemes[k] for k in PAPER_SIX], n=n,
                                                          beta=beta, level=float(level)).values(),
                                   strict=True)}
    claimed = list(claimed or sorted(floats, key=floats.get))
    model = model_text([schemes[k] for k in PAPER_SIX])
    res = Result("fig2-order", f"At Figure 2's parameters the paper's six schemes reach "
                 f"gamma = {level} in the order {' < '.join(claimed)} (every '<' proved)",
                 {"n": n, "beta": beta, "level": level, "gamma0": 0, "t_switch": str(t_switch),
                  "model": model}, "disjoint enclosures", ["enclosures"], kind="certified")
    ordering = compare.order([schemes[k] for k in claimed], level, n=n, beta=beta)
    enc = ordering.enclosures
    for a, b in zip(claimed[:-1], claimed[1:], strict=True):
        res.row("enclosures", enc[a].hi < enc[b].lo, before=a, after=b,
                T_before=str(enc[a]), T_after=str(enc[b]))
    last = ordering.names[-2:]
    verdict = caption_true(ordering)
    caption = {True: "certified true here", False: "certified false here",
               None: "undecided"}[verdict]
    res.key_figures = (f"{ordering} (each '<' proved) with {model}; so the caption 'Pre-LN "
                       f"and Peri-LN converge last' is {caption} (the last two: {last[0]}, "
                       f"{last[1]})")
    if flip and verdict is not None and ordering.names[-1] in ("pre-ln", "peri-ln"):
        # the verdict turns on Mix-LN against Peri-LN alone (the others' times do
        # not depend on t_switch): bisection on that certified comparison
        where = switch_flip(n=n, beta=beta, level=level)
        lo, hi = T_SWITCH_RANGE
        if where is None:
            res.key_figures += (f"; over t_switch in [{lo}, {hi}] no flip was certified")
        else:
            res.parameters["t_switch flip"] = [str(where[0]), str(where[1])]
            res.key_figures += (
                f"; it depends on Mix-LN's t_switch: over [{lo}, {hi}] the verdict flips at "
                f"t_switch in [{float(where[0]):.6g}, {float(where[1]):.6g}] (certified: "
                f"Mix-LN after Peri-LN at {float(where[0]):.6g}, before it at "
                f"{float(where[1]):.6g})")
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
                witness=str(reg.disproven[0][1]) if reg.disproven else "")
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
