"""A validated Taylor integrator for :math:`dy/du = F(u, y)`, in Arb.

The independent variable is :math:`u = -\\log(1-\\gamma)` (the solver's
:math:`-\\log\\varepsilon`: the field stays bounded as :math:`\\gamma \\to 1`)
and the state :math:`y = (t, r)`; the fields come from
:mod:`symdyn.certify.forms` as functions of :math:`\\gamma = 1 - e^{-u}`.
One step from :math:`c` (a ball) to :math:`c + h`:

1. **A priori enclosure** (Picard, in the complex plane). With
   :math:`D` the square of half-side :math:`\\rho` about :math:`c`, find
   complex boxes :math:`Y` with
   :math:`y(c) + D_0 \\cdot F(D, Y) \\subset \\operatorname{int} Y`
   (:math:`D_0` the square about 0). Along each ray from :math:`c` the
   solution cannot leave :math:`Y` (first exit), so it is analytic on the
   disk of radius :math:`\\rho` with
   :math:`|y(z) - y(c)| \\le M = \\sup|D_0 \\cdot F(D, Y)|`.
2. **Taylor coefficients** :math:`y_0 \\ldots y_K` at :math:`c` by Picard
   iteration on truncated power series with ball coefficients
   (``arb_series``: iteration :math:`j` makes coefficient :math:`j` exact).
3. **Remainder** by Cauchy's estimate :math:`|y_k| \\le M/\\rho^k`: for
   :math:`|h| \\le q\\rho`, the tail is at most :math:`M q^{K+1}/(1-q)`.

So :math:`y(c+h) \\in \\sum_{k\\le K} y_k h^k \\pm M q^{K+1}/(1-q)`,
rigorously, for every starting value in the ball :math:`y(c)` and every
parameter in its ball. The step is chosen so that the tail stays below the
tolerance; where no enclosure is found the square shrinks.

Layer 3, certify.
"""

from __future__ import annotations

import math

import flint
from flint import acb, arb, arb_series

Q_MAX = 0.25           # |h| / rho at most
INFLATE = 0.1          # epsilon-inflation of the a priori boxes


class Uncertified(ArithmeticError):
    """No certificate within what was allowed: the integrator could not
    enclose the solution (a singularity, a field that does not evaluate, a
    step below the limit), a quadrature did not converge, or an enclosure
    stayed wider than its target (``rel_width``) up to ``max_prec`` bits.
    Not bad input (that is a ``ValueError``) and not a wrong answer: the
    message says what to raise (``max_prec=``, ``rel_width=``, ``prec=``).
    ``more_bits``: whether a higher precision may help (a step limit does not:
    more bits only make each step dearer)."""

    def __init__(self, message: str, more_bits: bool = True):
        super().__init__(message)
        self.more_bits = more_bits


def gamma_of(u):
    return 1 - (-u).exp()


def identity(x):
    """The variable itself: ``integrate(..., variable=identity)`` hands a field its
    independent variable (a time) rather than :func:`gamma_of` it."""
    return x


def _eval(field, u, y, params, analytic=False, variable=gamma_of):
    """``field(variable(u), *y, *params)``: a state of any length; ``variable``
    maps the independent variable to the field's first argument (``gamma_of``
    for a field in :math:`\\gamma`, the identity for one in :math:`t`)."""
    return field(variable(u), *y, *params, analytic=analytic)


def _square(rho: float) -> acb:
    w = arb(0, rho)
    return acb(w, w)


def _inside(Z: acb, Y: acb) -> bool:
    return bool(Y.real.contains_interior(Z.real) and Y.imag.contains_interior(Z.imag))


def a_priori(field, c: arb, y, params, rho: float, variable=gamma_of):
    """``M`` per component (upper bounds of :math:`\\sup_D |y - y(c)|`), or None."""
    D = acb(arb(c.mid(), c.rad() + rho), arb(0, rho))
    box = _square(rho)
    Y = [acb(v) for v in y]
    for _ in range(12):
        try:
            F = _eval(field, D, Y, params, analytic=True, variable=variable)
        except (ZeroDivisionError, ValueError):
            return None
        if not all(v.is_finite() for v in F):
            return None
        step = [box * v for v in F]
        Z = [acb(v) + s for v, s in zip(y, step, strict=True)]
        grown = [z + _square(INFLATE * float(s.abs_upper()) + 1e-30)
                 for z, s in zip(Z, step, strict=True)]
        if all(_inside(z, g) for z, g in zip(Z, Y, strict=True)):
            return [s.abs_upper() for s in step]
        Y = grown
    return None


def taylor(field, c: arb, y, params, K: int, passes=None, variable=gamma_of):
    """Coefficients ``[y_k for k <= K]`` per component at ``c`` (Picard on series).

    Iteration ``j`` makes coefficient ``j + 1`` exact; a triangular field
    (component ``i`` depends on the components before it alone) is exact
    after ``passes`` = its number of components, each at full length.
    Arb truncates transcendental series at ``flint.ctx.cap`` terms: the cap
    is raised to the length needed, and a series that comes back shorter
    than ``K + 1`` terms is an error, never zeros."""
    ys = [arb_series([v], prec=1) for v in y]
    cap = flint.ctx.cap
    flint.ctx.cap = K + 2
    try:
        for j in range(K if passes is None else passes):
            L = j + 2 if passes is None else K + 1
            u = arb_series([c, 1], prec=L)
            ys = [arb_series(s.coeffs(), prec=L) for s in ys]
            F = [f if isinstance(f, arb_series) else arb_series([f], prec=L)   # constants
                 for f in _eval(field, u, ys, params, variable=variable)]
            ys = [v + arb_series(f.integral().coeffs(), prec=L)
                  for v, f in zip(y, F, strict=True)]
            if any(f.prec < L - 1 for f in F):
                raise Uncertified(f"a series was truncated at {min(f.prec for f in F)} terms")
    finally:
        flint.ctx.cap = cap
    return [s.coeffs() + [arb(0)] * (K + 1 - len(s.coeffs())) for s in ys]


def _horner(coeffs, h):
    out = arb(0)
    for ck in reversed(coeffs):
        out = out * h + ck
    return out


def integrate(field, u0: arb, u1: arb, y0, params, *, tol: float, order: int,
              max_steps: int = 4000, stop_above=None, passes=None, variable=gamma_of):
    """``(y(u1), steps, stopped)``: the state at ``u1`` enclosed, from
    ``y(u0) = y0``; each step's remainder at most ``tol`` relative to the
    state, Taylor polynomials of degree ``order``. With ``stop_above``, the
    walk stops (``stopped`` True) once ``y[0]`` is certainly above it: ``y[0]``
    (the time) increases with ``u``, so then ``y[0](u1)`` is above it too.
    ``variable``: see :func:`_eval`. ``u0`` may be a ball (a start that
    depends on the parameters): the first expansion point is that ball."""
    K = int(order)
    c, y, steps = u0, list(y0), 0
    rho = 0.25
    while True:
        left = float((u1 - c).upper())
        if left <= 0:
            break
        rho, M, q = _choose(field, c, y, params, rho, left, tol, K, variable)
        last = q * rho >= left
        h = (u1 - c) if last else arb(q * rho)
        qb = h.abs_upper() / rho
        coeffs = taylor(field, c, y, params, K, passes, variable)
        tails = [m * qb ** (K + 1) / (1 - qb) for m in M]
        y = [_horner(cs, h) + arb(0, float(tl.upper()) * (1 + 1e-15))
             for cs, tl in zip(coeffs, tails, strict=True)]
        if not all(v.is_finite() for v in y):
            raise Uncertified(f"the enclosure blew up near u = {float(c.mid()):.6g}")
        steps += 1
        if stop_above is not None and y[0].lower() > stop_above:
            return y, steps, True
        if last or steps >= max_steps:
            if not last:
                raise Uncertified(f"more than {max_steps} steps (the field changes faster "
                                  f"than its Taylor series reach near u = "
                                  f"{float(c.mid()):.6g})", more_bits=False)
            break
        c = c + h
    return y, steps, False


def _reach(M, y, tol: float, K: int) -> float:
    """``q = |h|/rho`` with the tail :math:`M q^{K+1}/(1-q)` within ``tol`` (relative)."""
    Mf = max(max(float(m) for m in M), 1e-300)
    scale = max(1.0, max(float(v.abs_upper()) for v in y))
    return min(Q_MAX, (tol * scale * (1 - Q_MAX) / Mf) ** (1 / (K + 1)))


def _choose(field, c, y, params, rho: float, left: float, tol: float, K: int,
            variable=gamma_of):
    """``(rho, M, q)``: of the squares of half-side ``rho/2``, ``rho``, ``2 rho``
    with an a priori enclosure, the one whose step ``q rho`` is longest
    (halving ``rho`` until one is found). Near a singularity of the field a
    larger square has a much larger ``M``: the step is chosen, not the square."""
    rho = min(rho, 4 * left / Q_MAX)
    while True:
        if rho < 1e-12:
            raise Uncertified(f"no a priori enclosure near u = {float(c.mid()):.6g} "
                              f"(gamma = {1 - math.exp(-float(c.mid())):.6g})")
        M = a_priori(field, c, y, params, rho, variable)
        if M is not None:
            break
        rho /= 2
    best = (rho, M, _reach(M, y, tol, K))
    for other in (rho / 2, 2 * rho):
        if other > 4 * left / Q_MAX:
            continue
        Mo = a_priori(field, c, y, params, other, variable)
        if Mo is not None:
            qo = _reach(Mo, y, tol, K)
            if qo * other > best[2] * best[0]:
                best = (other, Mo, qo)
    return best
