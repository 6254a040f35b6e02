"""Certified comparisons: the order of crossing times, and region certificates.

:func:`order` ranks schemes by certified crossing times: ``<`` where the
enclosures are disjoint, ``~`` (a tie, undecided) where they still overlap
at the highest precision tried. :func:`region` proves "A before B" (A's
crossing time is smaller) over a box of ``(n, beta)``, ``n`` taken as real,
by branch and bound. Each sub-box is first tried by pointwise dominance
(:mod:`symdyn.certify.dominance`: an interval holding :math:`T_B - T_A`
from the sign of the integrands' difference, no crossing time enclosed);
then by enclosures valid for every parameter in it
(:mod:`symdyn.certify.boxes`): proven where ``T_A < T_B`` over the sub-box,
disproven where a point of it (the witness) has ``T_A > T_B`` certified,
split otherwise, undecided at the split limit.

Layer 3, certify.
"""

from __future__ import annotations

import math
import re
import time
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from numbers import Real

from ..base.checks import BadInput
from ..base.progress import progress_bar
from . import dominance
from .arith import Enclosure, working
from .boxes import time_over_box
from .crossing import Certification, crossing_time
from .printer import NotCertifiable
from .taylor import Uncertified

Box = tuple[tuple[float, float], tuple[float, float]]


@dataclass(frozen=True, kw_only=True)
class Ordering:
    """``names`` in increasing crossing time, ``relations[i]`` between names i
    and i+1 (``"<"`` proven, ``"~"`` undecided), and the enclosures.
    ``unranked``: schemes not enclosed before the ``seconds=`` budget ran out;
    ``complete``: False when the budget stopped the work (``note`` says where)."""

    names: list[str]
    relations: list[str]
    enclosures: dict
    unranked: list[str] = field(default_factory=list)
    complete: bool = True
    note: str = ""

    @property
    def proven(self) -> bool:
        return self.complete and not self.unranked and all(r == "<" for r in self.relations)

    def __str__(self) -> str:
        if not self.names:
            out = "nothing ranked"
        else:
            out = self.names[0]
            for rel, name in zip(self.relations, self.names[1:], strict=True):
                out += f" {rel} {name}"
        if self.unranked:
            out += f"; not ranked: {', '.join(self.unranked)}"
        return out + (f" ({self.note})" if self.note else "")


#: the clock of ``seconds=`` budgets: CPU seconds of this process
CLOCK = time.process_time


class _Budget:
    """CPU seconds (:data:`CLOCK`) left of ``seconds`` (None: no bound)."""

    def __init__(self, seconds: float | None, name: str = "seconds"):
        if seconds is not None:
            ok = isinstance(seconds, Real) and not isinstance(seconds, bool) \
                and 0 < float(seconds) < math.inf
            if not ok:
                raise BadInput(f"{name}: a CPU-time budget in seconds, > 0 and finite, or "
                               f"None, got {seconds!r}")
        self.seconds = None if seconds is None else float(seconds)
        self.start = CLOCK()

    def used(self) -> float:
        return CLOCK() - self.start

    def over(self, share: float = 1.0) -> bool:
        return self.seconds is not None and self.used() > share * self.seconds


def order(schemes: Sequence, level: object, *, n: object, beta: object, gamma0: object = 0,
          r0: object = 1, prec: int = 128, max_prec: int = 512, attention: str = "softmax",
          seconds: float | None = None,
          progress: bool | Callable[[int, int], None] = False) -> Ordering:
    """The certified ranking of ``schemes`` by the time they reach ``level``.

    Each crossing time is enclosed at ``prec`` bits; a pair of neighbours whose
    enclosures overlap is enclosed again at twice the bits, up to ``max_prec``
    (then ``~``). ``seconds``: a CPU-time budget checked before each
    enclosure; when it runs out the ranking so far is returned with
    ``complete=False`` and the schemes not yet enclosed in ``unranked``.
    ``progress``: ``True`` (a bar on stderr) or a callable ``(done, total)``.

    >>> import symdyn as sd
    >>> str(sd.certify.order(["post-ln", "ngpt"], "0.99", n=8, beta=1))
    'ngpt < post-ln'
    """
    clock = _Budget(seconds)
    schemes = list(schemes)
    names = [s if isinstance(s, str) else s.name for s in schemes]
    if len(set(names)) != len(names):
        raise BadInput(f"schemes: distinct names, got {names!r}")
    by_name = dict(zip(names, schemes, strict=True))
    steps = 2 * len(names) - 1
    report = progress_bar(progress, steps, "certify.order")
    done = [0]

    def enclose(name, bits):
        # rel_width=1: one precision per call; the doubling is done here, under the budget
        return crossing_time(by_name[name], level, n=n, beta=beta, gamma0=gamma0, r0=r0,
                             prec=bits, max_prec=bits, rel_width=1, attention=attention)

    encs, note = {}, ""
    for name in names:
        if clock.over():
            note = f"the budget of {seconds:g} s CPU ran out after {len(encs)} enclosures"
            break
        encs[name] = enclose(name, prec)
        done[0] += 1
        report(done[0])
    ranked = sorted(encs, key=lambda k: encs[k].center)
    relations = []
    for a, b in zip(ranked[:-1], ranked[1:], strict=True):
        p = prec
        while not encs[a].hi < encs[b].lo and p < max_prec and not clock.over():
            p = min(2 * p, max_prec)
            for k in (a, b):
                encs[k] = enclose(k, p)
        if not encs[a].hi < encs[b].lo and p < max_prec and not note:
            note = f"the budget of {seconds:g} s CPU ran out refining {a} against {b}"
        relations.append("<" if encs[a].hi < encs[b].lo else "~")
        done[0] += 1
        report(done[0])
    report(None)
    return Ordering(names=ranked, relations=relations, enclosures=encs,
                    unranked=[k for k in names if k not in encs], complete=not note, note=note)


@dataclass(frozen=True, kw_only=True)
class Witness:
    """A point ``(n, beta)`` where B reaches the level certainly first:
    ``T_B.hi < T_A.lo`` (the certified times, first-order enclosures at the
    point). Unpacks as ``n, beta``."""

    n: float
    beta: float
    T_A: Enclosure
    T_B: Enclosure

    def __iter__(self) -> Iterator[float]:
        return iter((self.n, self.beta))

    def __str__(self) -> str:
        return f"n = {self.n:.6g}, beta = {self.beta:.6g}: T_A in {self.T_A}, T_B in {self.T_B}"


@dataclass(kw_only=True)
class Region:
    """A region certificate of ``claim`` (A before B) over ``n`` x ``beta``: a map.

    ``proven_boxes``: A first everywhere in them. ``disproven``: ``(box,
    witness)`` pairs, the claim false in the box at its :class:`Witness`;
    ``reversed_boxes`` (a subset of their boxes): B first everywhere in them.
    ``undecided``: boxes neither way. ``.proven`` is True only when every
    sub-box is proven. The order of the two times can change only inside the
    **strip**: the undecided boxes and the disproven ones not reversed
    everywhere; ``strip_width`` bounds its boxes (the largest ratio
    ``n_hi/n_lo`` and width in ``beta``). Areas (``undecided_fraction``,
    ``strip_fraction``) are measured in ``(log n, beta)``, the coordinates in
    which boxes are split and drawn. ``boxes`` counts the sub-boxes
    evaluated; ``certificates`` maps each decided box to what decided it;
    ``complete`` is False when the ``seconds=`` budget stopped the work
    (``note`` says so), ``seconds`` the CPU seconds spent.
    """

    claim: str
    n: tuple[float, float]
    beta: tuple[float, float]
    level: object
    proven_boxes: list[Box] = field(default_factory=list)
    disproven: list[tuple[Box, Witness]] = field(default_factory=list)
    reversed_boxes: list[Box] = field(default_factory=list)
    undecided: list[Box] = field(default_factory=list)
    boxes: int = 0
    certificates: dict = field(default_factory=dict)
    complete: bool = True
    note: str = ""
    seconds: float = 0.0

    @property
    def method(self) -> str:
        """How the decided boxes were decided, e.g. ``"pointwise dominance: 1 box"``."""
        counts: dict[str, int] = {}
        for how in self.certificates.values():
            counts[how] = counts.get(how, 0) + 1
        return "; ".join(f"{k}: {_boxes(v)}"
                         for k, v in sorted(counts.items())) or "nothing decided"

    @property
    def proven(self) -> bool:
        return not self.disproven and not self.undecided and bool(self.proven_boxes)

    def _area(self, boxes: Sequence[Box]) -> float:
        total = math.log(self.n[1] / self.n[0]) * (self.beta[1] - self.beta[0])
        return sum(math.log(b[0][1] / b[0][0]) * (b[1][1] - b[1][0]) for b in boxes) / total

    @property
    def strip(self) -> list[Box]:
        """Where the order may change: undecided boxes and disproven ones not
        reversed everywhere."""
        rev = set(self.reversed_boxes)
        return self.undecided + [b for b, _ in self.disproven if b not in rev]

    @property
    def undecided_fraction(self) -> float:
        """The undecided boxes' share of the area in ``(log n, beta)``."""
        return self._area(self.undecided)

    @property
    def strip_fraction(self) -> float:
        """The strip's share of the area in ``(log n, beta)``."""
        return self._area(self.strip)

    @property
    def strip_width(self) -> tuple[float, float] | None:
        """``(ratio, width)``: every box of the strip spans at most ``ratio`` in
        ``n_hi/n_lo`` and ``width`` in ``beta``; None without a strip."""
        strip = self.strip
        if not strip:
            return None
        return (max(b[0][1] / b[0][0] for b in strip), max(b[1][1] - b[1][0] for b in strip))

    def __str__(self) -> str:
        verdict = "PROVEN" if self.proven else "DISPROVEN" if self.disproven else "UNDECIDED"
        text = (f"{self.claim} at level {self.level}, n in {self.n}, beta in {self.beta}: "
                f"{verdict} ({_boxes(len(self.proven_boxes))} proven, {len(self.disproven)} "
                f"disproven ({len(self.reversed_boxes)} reversed everywhere), "
                f"{len(self.undecided)} undecided, {self.boxes} evaluated; {self.method})")
        w = self.strip_width
        if w is not None:
            text += (f"; the order changes, if anywhere, in a strip of "
                     f"{100 * self.strip_fraction:.3g}% of the area (log n, beta; "
                     f"{100 * self.undecided_fraction:.3g}% undecided), boxes at most "
                     f"x{w[0]:.4g} in n and {w[1]:.3g} in beta")
        if self.disproven:
            text += f"; witness {self.disproven[0][1]}"
        return text + (f"; {self.note}" if self.note else "")

    def plot(self, ax=None):
        """The certified map: proven boxes green, disproven red (witness: a
        cross; reversed everywhere: darker), undecided grey; ``n`` on a log axis."""
        import matplotlib.pyplot as plt
        from matplotlib.patches import Patch, Rectangle
        if ax is None:
            _, ax = plt.subplots(figsize=(5.2, 4.2), layout="constrained")
        rev = set(self.reversed_boxes)
        kinds = [(self.proven_boxes, "#2ca02c"),
                 ([b for b, _ in self.disproven if b not in rev], "#ff9896"),
                 (self.reversed_boxes, "#d62728"), (self.undecided, "#999999")]
        for boxes, colour in kinds:
            for (n0, n1), (b0, b1) in boxes:
                ax.add_patch(Rectangle((n0, b0), n1 - n0, b1 - b0, facecolor=colour,
                                       edgecolor="white", linewidth=0.3, alpha=0.9))
        if self.disproven:
            ax.plot([w.n for _, w in self.disproven], [w.beta for _, w in self.disproven],
                    "kx", markersize=3, linestyle="none")
        _log_axis(ax, self.n)
        ax.set_ylim(*self.beta)
        ax.set_xlabel("$n$")
        ax.set_ylabel(r"$\beta$")
        handles = [Patch(color=colour, label=f"{text}: {_boxes(len(boxes))}")
                   for (boxes, colour), text in zip(kinds, (
                       "proven", "disproven at the witness (x)",
                       "disproven: B first throughout", "undecided"), strict=True) if boxes]
        ax.legend(handles=handles, fontsize=6, loc="upper center", bbox_to_anchor=(0.5, -0.16),
                  ncol=2, frameon=False)           # only the kinds the map holds
        import textwrap  # a long method wraps within the axes' width
        ax.set_title(f"{self.claim}, level {self.level}\n" + textwrap.fill(self.method, 70),
                     fontsize=8)
        return ax


def _log_axis(ax, lims):
    """``n`` on a log axis with plain numbers (``8``, ``100``, not ``8x10^0``):
    five geometric ticks over a narrow range, 1-2-5 ticks over up to three
    decades, the decades' ticks over a wider one."""
    from matplotlib import ticker
    ax.set_xscale("log")
    ax.set_xlim(*lims)
    plain = ticker.FuncFormatter(lambda v, _: f"{v:.3g}" if v < 1000 else f"{v:.0f}")
    decades = math.log10(lims[1] / lims[0])
    if decades < 1.5:
        ax.xaxis.set_major_locator(ticker.FixedLocator(
            [lims[0] * (lims[1] / lims[0]) ** (k / 4) for k in range(5)]))
    elif decades <= 3:
        ax.xaxis.set_major_locator(ticker.LogLocator(base=10, subs=(1, 2, 5)))
    ax.xaxis.set_major_formatter(plain)
    ax.xaxis.set_minor_formatter(ticker.NullFormatter())


_CLAIM = re.compile(r"^\s*([\w.-]+)\s+before\s+([\w.-]+)\s*$")


def _box_time(name, level, nb, bb, stop_above=None):
    with working(53):
        prob = Certification(name, level, nb, bb, 0, 1, "softmax", {})
        return time_over_box(prob, -(1 - prob.level).log(), stop_above)


def _decide(a, b, level: object, nb: tuple[float, float],
            bb: tuple[float, float]) -> tuple[str | None, str]:
    """``(verdict, certificate)`` for one sub-box, the verdict ``"proven"``,
    ``"disproven"`` (B first everywhere in it) or ``None``: pointwise dominance
    where the schemes have its form (then enclosures only where it claims
    nothing: its interval is the tighter), enclosures otherwise."""
    if dominance.applies(a, b):
        diff = dominance.difference(a, b, level, n=nb, beta=bb)      # holds T_B - T_A
        if diff is not None and diff.lo > 0:
            return "proven", dominance.NAME
        if diff is not None and diff.hi < 0:
            return "disproven", dominance.NAME
        if diff is not None:
            return None, dominance.NAME
    return _enclosed(a, b, level, nb, bb), "enclosures"


def _enclosed(a, b, level: object, nb: tuple[float, float],
              bb: tuple[float, float]) -> str | None:
    """``"proven"``, ``"disproven"`` or ``None`` by enclosing both times over the box."""
    try:
        TA = _box_time(a, level, nb, bb)
        TB = _box_time(b, level, nb, bb, stop_above=TA.upper())
    except (Uncertified, ArithmeticError):
        return None
    if TA.upper() < TB.lower():
        return "proven"
    if TB.upper() < TA.lower():
        return "disproven"
    return None


def _centre(nb: tuple[float, float], bb: tuple[float, float]) -> tuple[float, float]:
    return math.sqrt(nb[0] * nb[1]), (bb[0] + bb[1]) / 2


def _point_fails(a, b, level: object, wn: float, wb: float) -> Witness | None:
    """A :class:`Witness` at ``(wn, wb)`` if B is certainly first there, else None:
    first-order enclosures at the point (cheap), then, where they overlap,
    :func:`~symdyn.certify.crossing_time` at 64 bits."""
    try:
        TA = _box_time(a, level, (wn, wn), (wb, wb))
        TB = _box_time(b, level, (wn, wn), (wb, wb))
        how = "first-order enclosure at the point"
        if not (TB.upper() < TA.lower() or TA.upper() < TB.lower()):
            TA, TB = (crossing_time(s, level, n=wn, beta=wb, prec=64, max_prec=64,
                                    rel_width=1).ball for s in (a, b))
            how = "crossing_time at 64 bits"
    except (Uncertified, ArithmeticError, NotCertifiable):
        return None
    if not TB.upper() < TA.lower():
        return None
    return Witness(n=wn, beta=wb, T_A=Enclosure(TA, how, 53), T_B=Enclosure(TB, how, 53))


def _split(nb: tuple[float, float], bb: tuple[float, float]) -> list[Box]:
    """Halves of the box: ``n`` split geometrically when its ``log2`` width is at
    least the width in ``beta`` (square boxes in ``(log2 n, beta)``), else ``beta``."""
    if math.log2(nb[1] / nb[0]) >= bb[1] - bb[0]:
        m = math.sqrt(nb[0] * nb[1])
        return [((nb[0], m), bb), ((m, nb[1]), bb)]
    m = (bb[0] + bb[1]) / 2
    return [(nb, (bb[0], m)), (nb, (m, bb[1]))]


def _inside(w: Witness, box: Box) -> bool:
    return box[0][0] <= w.n <= box[0][1] and box[1][0] <= w.beta <= box[1][1]


#: the share of a ``seconds=`` budget kept for the counterexample search
WITNESS_SHARE = 0.25


def region(claim: str | tuple, *, level: object = "0.99",
           n: tuple[float, float] = (2, 1024), beta: tuple[float, float] = (0, 16),
           max_depth: int = 14, max_boxes: int = 2000, seconds: float | None = None,
           progress: bool | Callable[[int, int], None] = False) -> Region:
    """Prove ``claim`` (``"A before B"``: A's crossing time of ``level`` is the
    smaller; or a pair ``(A, B)`` of schemes, custom ones too) for every
    ``(n, beta)`` in the box, by branch and bound, and map the box.

    ``level`` defaults to ``"0.99"`` (Figure 2's level, the one the docs use).
    First the centre of the whole box is tried for a counterexample; then the
    boxes are split breadth first (each proven, reversed, or split) until
    ``max_depth``, ``max_boxes`` or ``1 - WITNESS_SHARE`` of ``seconds`` (CPU
    time) is spent; the rest of the budget searches the boxes left for
    counterexamples at their centres (a witness: certified times with
    ``T_B < T_A``). What is left is undecided, and said so, never guessed.
    ``progress``: ``True`` (a bar on stderr: the permille of the area decided)
    or a callable ``(done, total)``.

    >>> import symdyn as sd
    >>> sd.certify.region("post-ln before pre-ln", level="0.9", n=(8, 9), beta=(1, 1.25)).proven
    True
    """
    if isinstance(claim, tuple) and len(claim) == 2:
        a, b = claim
        claim = " before ".join(s if isinstance(s, str) else s.name for s in claim)
    else:
        m = _CLAIM.match(claim) if isinstance(claim, str) else None
        if m is None:
            raise BadInput(f"claim: 'A before B' with two scheme names, or a pair "
                           f"(A, B), got {claim!r}")
        a, b = m.groups()
    try:
        nb, bb = (float(n[0]), float(n[1])), (float(beta[0]), float(beta[1]))
    except (TypeError, ValueError, IndexError):
        nb = bb = (math.nan, math.nan)
    if not (2 <= nb[0] < nb[1] < math.inf and 0 <= bb[0] < bb[1] < math.inf):
        raise BadInput(f"n, beta: boxes (lo, hi) with 2 <= n_lo < n_hi and 0 <= beta_lo "
                       f"< beta_hi, finite, got n={n!r}, beta={beta!r}")
    for name, v, lo in (("max_depth", max_depth, 0), ("max_boxes", max_boxes, 1)):
        if isinstance(v, bool) or not isinstance(v, int) or v < lo:
            raise BadInput(f"{name}: an int >= {lo}, got {v!r}")
    clock = _Budget(seconds)
    out = Region(claim=claim.strip(), n=nb, beta=bb, level=level)
    report = progress_bar(progress, 1000, f"certify.region {out.claim}",
                          unit="permille of the area decided")
    decided = [0.0]

    def tick(box):
        decided[0] += out._area([box])
        report(min(1000, int(1000 * decided[0])))

    found: list[Witness] = []
    w = _point_fails(a, b, level, *_centre(nb, bb))
    if w is not None:
        found.append(w)
    stack, left = deque([(nb, bb, 0)]), []
    while stack:
        if clock.over(1 - WITNESS_SHARE):
            left.extend((x, y) for x, y, _ in stack)
            out.note = (f"the budget of {seconds:g} s CPU ran out while splitting: "
                        f"{_boxes(len(stack))} searched for counterexamples only")
            break
        box_n, box_b, depth = stack.popleft()         # breadth first: the budget spreads
        out.boxes += 1
        verdict, how = _decide(a, b, level, box_n, box_b)
        if verdict is not None:
            out.certificates[(box_n, box_b)] = how
        if verdict == "proven":
            out.proven_boxes.append((box_n, box_b))
            tick((box_n, box_b))
            continue
        if verdict == "disproven":              # B first everywhere in it: its centre
            wit = _point_fails(a, b, level, *_centre(box_n, box_b))
            if wit is not None:
                out.disproven.append(((box_n, box_b), wit))
                out.reversed_boxes.append((box_n, box_b))
                tick((box_n, box_b))
                continue
        if depth >= max_depth or out.boxes + len(stack) >= max_boxes:
            left.append((box_n, box_b))
            continue
        stack.extend((x, y, depth + 1) for x, y in _split(box_n, box_b))
    # the counterexample search: the boxes left, the largest first
    left.sort(key=lambda bx: -out._area([bx]))
    for k, box in enumerate(left):
        wit = next((w for w in found if _inside(w, box)), None)
        if wit is None and not clock.over():
            wit = _point_fails(a, b, level, *_centre(*box))
        elif wit is None:
            out.undecided.extend(left[k:])
            out.note += ("; " if out.note else "") + (
                f"the budget of {seconds:g} s CPU ran out in the counterexample search "
                f"({_boxes(len(left) - k)} not searched)")
            break
        if wit is None:
            out.undecided.append(box)
            continue
        out.disproven.append((box, wit))
        out.certificates[box] = "enclosures at the witness"
        tick(box)
    report(None)
    out.complete = "budget" not in out.note
    out.seconds = clock.used()
    return out


def _boxes(k: int) -> str:
    """``1 box``, ``3 boxes``."""
    return f"{k} box{'' if k == 1 else 'es'}"
