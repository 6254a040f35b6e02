"""Crossing times over a box of parameters: :func:`time_over_box` (the
enclosure :func:`symdyn.certify.compare.region` uses), and a first-order,
robust fallback.

Over a box (``n`` and ``beta`` intervals) Arb's quadrature and the Taylor
integrator, which aim at many digits, spend their effort on the width of
the parameters. Here the :math:`u`-interval :math:`[u_0, u_1]` is cut into
pieces and each piece is bounded by the mean value theorem:

* a separable phase: :math:`\\int_{piece} F \\in |piece| \\cdot F(piece, box)`;
* an ODE phase (interval Euler with an a priori box): find a real box
  :math:`Y` with :math:`y + [0, h]\\,F([c, c+h], Y) \\subset
  \\operatorname{int} Y`, then :math:`y(c+h) \\in y + h\\,F([c, c+h], Y)`.

Both are rigorous for every parameter in the box; they are accurate to
first order in the piece length, which is enough to separate crossing
times that differ. Used by :func:`symdyn.certify.compare.region`.

Layer 3, certify.
"""

from __future__ import annotations

import sympy as sp
from flint import arb

from .taylor import Uncertified, gamma_of


def _hull(a: arb, b: arb) -> arb:
    """The smallest-radius ball (to rounding) holding ``a`` and ``b``
    (``arb.union`` keeps a midpoint that may double the width)."""
    lo, hi = a.lower().min(b.lower()), a.upper().max(b.upper())
    half = float(((hi - lo) / 2).upper()) * (1 + 2.0**-50)
    return arb(((lo + hi) / 2).mid()) + arb(0, half)


def separable_integral(F, u0: arb, u1: arb, pieces: int = 96) -> arb:
    """:math:`\\int_{u_0}^{u_1} F` enclosed piecewise (``F`` of a real ball)."""
    total, c = arb(0), u0
    h = (u1 - u0) / pieces
    for k in range(pieces):
        d = u1 if k == pieces - 1 else u0 + h * (k + 1)
        total += (d - c) * F(_hull(c, d))
        c = d
    if not total.is_finite():
        raise Uncertified("the velocity may vanish in the box")
    return total


def _a_priori(field, c: arb, d: arb, y, params):
    """A real box ``Y`` holding the solution on ``[c, d]``, or None."""
    span = arb(0).union(d - c)
    g = gamma_of(_hull(c, d))
    Y = list(y)
    for _ in range(10):
        F = field(g, Y[0], Y[1], *params)
        if not all(v.is_finite() for v in F):
            return None, None
        Z = [v + span * f for v, f in zip(y, F, strict=True)]
        if all(Yk.contains_interior(Zk) for Yk, Zk in zip(Y, Z, strict=True)):
            return Z, F
        Y = [z + arb(0, 0.1 * float(z.rad()) + 1e-12 * (1 + float(z.abs_upper()))) for z in Z]
    return None, None


def euler(field, u0: arb, u1: arb, y0, params, *, rel: float = 0.02, stop_above=None,
          max_steps: int = 20000):
    """``(y(u1), stopped)`` by interval Euler steps of relative size ``rel``."""
    c, y, h = u0, list(y0), 1e-3
    for _ in range(max_steps):
        left = float((u1 - c).upper())
        if left <= 0:
            return y, False
        last = h >= left
        d = u1 if last else c + h
        Y, F = _a_priori(field, c, d, y, params)
        if Y is None:
            h /= 4
            if h < 1e-14:
                raise Uncertified(f"no a priori box near u = {float(c.mid()):.6g}")
            continue
        span = d - c
        y = [v + span * f for v, f in zip(y, F, strict=True)]
        if stop_above is not None and y[0].lower() > stop_above:
            return y, True
        if last:
            return y, False
        change = max(float((span * f).abs_upper()) / max(1.0, float(v.abs_lower()))
                     for v, f in zip(y, F, strict=True))
        h = h * min(2.0, max(0.5, rel / max(change, 1e-300)))
        c = d
    raise Uncertified(f"more than {max_steps} steps")


def time_over_box(prob, u1: arb, stop_above=None) -> arb:
    """The crossing time over ``prob``'s box (``n``, ``beta`` intervals), a
    ball that holds it for every parameter in the box, at the working
    precision: the mean-value form with proved monotonicity
    (:func:`symdyn.certify.crossing.box_enclosure`, whose width follows the
    box), or at a point the point certificate; where that does not certify,
    the first-order enclosure of :func:`first_order_time`. ``stop_above``:
    the first-order path may stop once the time is certainly above it (then
    only the lower end is meaningful)."""
    import flint

    from .crossing import box_enclosure, point_time
    prec = flint.ctx.prec
    try:
        if prob.boxed:
            return box_enclosure(prob, u1, prec).time
        return point_time(prob, u1, prec, stop_above)
    except ArithmeticError:
        return first_order_time(prob, u1, stop_above)


def first_order_time(prob, u1: arb, stop_above=None) -> arb:
    """The crossing time over ``prob``'s parameter balls (first order); with
    ``stop_above`` the lower end alone may be meaningful (a lower bound)."""
    u = -(1 - prob.g0).log()
    t, r = arb(0), prob.r0
    for ph in prob.phases:
        rest = (prob.n, prob.beta, *prob.params)
        if ph.kind == "separable":
            F = prob.rate(ph, r)
            total = separable_integral(F, u, u1)
            if ph.end == sp.oo or total.upper() < ph.S_at(arb(int(ph.end.p)) / int(ph.end.q),
                                                           *rest).lower():
                return ph.S_inv_at(total, *rest)
            raise Uncertified("a switch inside the box is not handled over boxes")
        if ph.end != sp.oo:
            raise Uncertified("a switch after an ODE phase is not handled over boxes")
        state, rest = ([t, arb(0)], (*rest, r)) if ph.nested else ([t, r], rest)
        y, _ = euler(ph.field, u, u1, state, rest, stop_above=stop_above, max_steps=2000)
        return y[0]
    raise Uncertified("no phase reaches the level")
