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
from dataclasses import dataclass, field

from . import dominance
from .arith import working
from .boxes import time_over_box
from .crossing import Certification, crossing_time
from .taylor import Uncertified


@dataclass(frozen=True)
class Ordering:
    """``names`` in increasing crossing time, ``relations[i]`` between names i
    and i+1 (``"<"`` proven, ``"~"`` undecided), and the enclosures."""

    names: list
    relations: list
    enclosures: dict

    @property
    def proven(self) -> bool:
        return all(r == "<" for r in self.relations)

    def __str__(self) -> str:
        out = self.names[0]
        for rel, name in zip(self.relations, self.names[1:], strict=True):
            out += f" {rel} {name}"
        return out


def order(schemes, level, *, n, beta, gamma0=0, r0=1, prec=128, max_prec=512,
          attention="softmax") -> Ordering:
    """The certified ranking of ``schemes`` by the time they reach ``level``.

    >>> import symdyn as sd
    >>> str(sd.certify.order(["post-ln", "ngpt"], "0.99", n=8, beta=1))
    'ngpt < post-ln'
    """
    names = [s if isinstance(s, str) else s.name for s in schemes]
    encs = {}
    for name, s in zip(names, schemes, strict=True):
        encs[name] = crossing_time(s, level, n=n, beta=beta, gamma0=gamma0, r0=r0, prec=prec,
                                   attention=attention)
    ranked = sorted(names, key=lambda k: encs[k].center)
    relations = []
    for a, b in zip(ranked[:-1], ranked[1:], strict=True):
        p = prec
        while not encs[a].hi < encs[b].lo and p < max_prec:
            p *= 2
            for k, s in ((a, schemes[names.index(a)]), (b, schemes[names.index(b)])):
                encs[k] = crossing_time(s, level, n=n, beta=beta, gamma0=gamma0, r0=r0,
                                        prec=p, attention=attention)
        relations.append("<" if encs[a].hi < encs[b].lo else "~")
    return Ordering(ranked, relations, encs)


@dataclass
class Region:
    """A region certificate of ``claim`` (A before B) over ``n`` x ``beta``.

    ``proven``, ``disproven`` (each ``(box, witness)``, the witness an
    ``(n, beta)`` where B is certainly first), ``undecided``: lists of boxes
    ``((n_lo, n_hi), (beta_lo, beta_hi))``; ``.proven`` is True only when
    every sub-box is proven. ``boxes`` counts the sub-boxes evaluated;
    ``certificates`` maps each proven or disproven box to the certificate that
    decided it (``"pointwise dominance"`` or ``"enclosures"``), summed up by
    ``method``.
    """

    claim: str
    n: tuple
    beta: tuple
    level: object
    proven_boxes: list = field(default_factory=list)
    disproven: list = field(default_factory=list)
    undecided: list = field(default_factory=list)
    boxes: int = 0
    certificates: dict = field(default_factory=dict)

    @property
    def method(self) -> str:
        """How the decided boxes were decided, e.g. ``"pointwise dominance: 1 box"``."""
        counts = {}
        for how in self.certificates.values():
            counts[how] = counts.get(how, 0) + 1
        return "; ".join(f"{k}: {_boxes(v)}"
                         for k, v in sorted(counts.items())) or "nothing decided"

    @property
    def proven(self) -> bool:
        return not self.disproven and not self.undecided and bool(self.proven_boxes)

    def __str__(self) -> str:
        verdict = "PROVEN" if self.proven else "DISPROVEN" if self.disproven else "UNDECIDED"
        return (f"{self.claim} at level {self.level}, n in {self.n}, beta in {self.beta}: "
                f"{verdict} ({_boxes(len(self.proven_boxes))} proven, {len(self.disproven)} "
                f"disproven, {len(self.undecided)} undecided, {self.boxes} evaluated; "
                f"{self.method})")

    def plot(self, ax=None):
        """The certified phase diagram: proven boxes green, disproven red
        (witness: a cross), undecided grey; ``n`` on a log axis."""
        import matplotlib.pyplot as plt
        from matplotlib.patches import Rectangle
        if ax is None:
            _, ax = plt.subplots(figsize=(5, 3.5))
        kinds = [(self.proven_boxes, "#2ca02c"), ([b for b, _ in self.disproven], "#d62728"),
                 (self.undecided, "#999999")]
        for boxes, colour in kinds:
            for (n0, n1), (b0, b1) in boxes:
                ax.add_patch(Rectangle((n0, b0), n1 - n0, b1 - b0, facecolor=colour,
                                       edgecolor="white", linewidth=0.3, alpha=0.8))
        for _, (wn, wb) in self.disproven:
            ax.plot([wn], [wb], "kx", markersize=4)
        _log_axis(ax, self.n)
        ax.set_ylim(*self.beta)
        ax.set_xlabel("$n$")
        ax.set_ylabel(r"$\beta$")
        ax.set_title(f"{self.claim}, level {self.level}\ngreen proven, red disproven "
                     f"(x: witness), grey undecided\n{self.method}", fontsize=8)
        return ax


def _log_axis(ax, lims):
    """``n`` on a log axis with plain numbers (``8``, ``100``, not ``8x10^0``):
    the decades' ticks over a wide range, five geometric ticks over a narrow one."""
    from matplotlib import ticker
    ax.set_xscale("log")
    ax.set_xlim(*lims)
    plain = ticker.FuncFormatter(lambda v, _: f"{v:.3g}" if v < 1000 else f"{v:.0f}")
    if math.log10(lims[1] / lims[0]) < 1.5:
        ax.xaxis.set_major_locator(ticker.FixedLocator(
            [lims[0] * (lims[1] / lims[0]) ** (k / 4) for k in range(5)]))
    ax.xaxis.set_major_formatter(plain)
    ax.xaxis.set_minor_formatter(ticker.NullFormatter())


_CLAIM = re.compile(r"^\s*([\w.-]+)\s+before\s+([\w.-]+)\s*$")


def _box_time(name, level, nb, bb, stop_above=None):
    with working(53):
        prob = Certification(name, level, nb, bb, 0, 1, "softmax", {})
        return time_over_box(prob, -(1 - prob.level).log(), stop_above)


def _decide(a, b, level, nb, bb):
    """``(verdict, certificate)`` for one sub-box, the verdict ``"proven"``,
    ``"disproven"`` or ``None``: pointwise dominance first, then enclosures."""
    if dominance.applies(a, b):
        diff = dominance.difference(a, b, level, n=nb, beta=bb)      # holds T_B - T_A
        if diff is not None and diff.lo > 0:
            return "proven", dominance.NAME
        if diff is not None and diff.hi < 0:
            return "disproven", dominance.NAME
    return _enclosed(a, b, level, nb, bb), "enclosures"


def _enclosed(a, b, level, nb, bb):
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


def _point_fails(a, b, level, nb, bb):
    """A witness ``(n, beta)`` (the box's centre) where B is certainly first, or None."""
    wn, wb = math.sqrt(nb[0] * nb[1]), (bb[0] + bb[1]) / 2
    try:                        # the first-order enclosures at a point: cheap, certified
        TA = _box_time(a, level, (wn, wn), (wb, wb))
        TB = _box_time(b, level, (wn, wn), (wb, wb), stop_above=TA.upper())
    except (Uncertified, ArithmeticError):
        return None
    return (wn, wb) if TB.upper() < TA.lower() else None


def _split(nb, bb):
    if math.log2(nb[1] / nb[0]) >= (bb[1] - bb[0]) / 2:
        m = math.sqrt(nb[0] * nb[1])
        return [((nb[0], m), bb), ((m, nb[1]), bb)]
    m = (bb[0] + bb[1]) / 2
    return [(nb, (bb[0], m)), (nb, (m, bb[1]))]


def region(claim, *, level, n=(2, 1024), beta=(0, 16), max_depth=14,
           max_boxes=2000, seconds=None) -> Region:
    """Prove ``claim`` (``"A before B"``: A's crossing time of ``level`` is the
    smaller; or a pair ``(A, B)`` of schemes, custom ones too) for every
    ``(n, beta)`` in the box, by branch and bound.
    Splitting stops at ``max_depth``, ``max_boxes`` or after ``seconds`` of
    CPU time: what is left is undecided (and said so), never guessed.

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
            raise ValueError(f"claim: 'A before B' with two scheme names, or a pair "
                             f"(A, B), got {claim!r}")
        a, b = m.groups()
    nb, bb = (float(n[0]), float(n[1])), (float(beta[0]), float(beta[1]))
    if not (2 <= nb[0] < nb[1] and 0 <= bb[0] < bb[1]):
        raise ValueError(f"n, beta: boxes (lo, hi) with 2 <= n_lo < n_hi and 0 <= beta_lo "
                         f"< beta_hi, got n={n!r}, beta={beta!r}")
    out = Region(claim.strip(), nb, bb, level)
    stack, start = [(nb, bb, 0)], time.process_time()
    while stack:
        if seconds is not None and time.process_time() - start > seconds:
            out.undecided.extend((x, y) for x, y, _ in stack)
            break
        box_n, box_b, depth = stack.pop(0)         # breadth first: the budget spreads
        out.boxes += 1
        verdict, how = _decide(a, b, level, box_n, box_b)
        if verdict is not None:
            out.certificates[(box_n, box_b)] = how
        if verdict == "proven":
            out.proven_boxes.append((box_n, box_b))
            continue
        if verdict == "disproven":              # B first everywhere in it: its centre
            out.disproven.append(((box_n, box_b), (math.sqrt(box_n[0] * box_n[1]),
                                                   (box_b[0] + box_b[1]) / 2)))
            continue
        if depth >= max_depth or out.boxes + len(stack) >= max_boxes:
            witness = _point_fails(a, b, level, box_n, box_b)
            if witness:
                out.disproven.append(((box_n, box_b), witness))
                out.certificates[(box_n, box_b)] = "enclosures at the witness"
            else:
                out.undecided.append((box_n, box_b))
            continue
        stack.extend((x, y, depth + 1) for x, y in _split(box_n, box_b))
    return out


def _boxes(k: int) -> str:
    """``1 box``, ``3 boxes``."""
    return f"{k} box{'' if k == 1 else 'es'}"
