"""Certified crossing times :math:`T_*` (first time :math:`\\gamma = ` level) and
certified :math:`\\gamma(t)`.

Each phase of the scheme (:mod:`symdyn.certify.forms`) is crossed in
:math:`u = -\\log(1-\\gamma)`: a separable phase by Arb's rigorous
quadrature (``flint.acb.integral``) of
:math:`\\int d\\gamma/f = \\int e^{-u}/f(1-e^{-u})\\,du` and the inverse of
:math:`S`; a switch time inside a separable phase (Mix-LN's ``t = 1``) by an
interval Newton iteration on that integral; an ODE phase by the validated
Taylor integrator (:mod:`symdyn.certify.taylor`).

Layer 3, certify.
"""

from __future__ import annotations

import math

import sympy as sp
from flint import acb, arb

from ..model.registry import scheme as get_scheme
from .arith import Enclosure, ball, exact, working
from .forms import forms
from .printer import NotCertifiable
from .taylor import Uncertified, integrate


class Certification:
    """The balls of one certification: parameters, start and level."""

    def __init__(self, scheme, level, n, beta, gamma0, r0, attention, params):
        self.scheme = get_scheme(scheme)
        self.phases = forms(self.scheme, attention)
        self.n, self.beta = ball(n, "n"), ball(beta, "beta")
        if not exact(n[0] if isinstance(n, tuple) else n, "n") >= 2:
            raise ValueError(f"n: must be >= 2, got {n!r}")
        if not exact(beta[0] if isinstance(beta, tuple) else beta, "beta") >= 0:
            raise ValueError(f"beta: must be >= 0, got {beta!r}")
        names = [x.name for x in self.scheme.symbols]
        unknown = sorted(set(params) - set(names))
        if unknown:
            raise ValueError(f"{', '.join(unknown)}: not a parameter of {self.scheme.name} "
                             f"(its parameters: {', '.join(names) or 'none'})")
        values = {**self.scheme.defaults, **params}
        self.params = [ball(values[k], k) for k in names]
        self.g0 = ball(gamma0, "gamma0")
        self.r0 = arb(1) if self.scheme.starts_on_sphere else ball(r0, "r0")
        if level is not None:
            self.level = ball(level, "level")
            if not (self.level.upper() < 1 and self.level.lower() > self.g0.upper()):
                raise ValueError(f"level: must lie in (gamma0, 1) = ({gamma0}, 1), got {level!r}")
        if not (self.g0 * (self.n - 1) + 1).lower() > 0:
            raise ValueError(f"gamma0: must lie above -1/(n-1), got {gamma0!r}")
        if not self.r0.lower() > 0:
            raise ValueError(f"r0: must be > 0, got {r0!r}")

    def args(self, r):
        return (r, self.n, self.beta, *self.params)

    def rate(self, phase, r):
        """``F(u) = e^{-u} / f(1 - e^{-u})``: dS/du of a separable phase, for balls."""
        rest = self.args(r)

        def F(u, analytic=False):
            return phase.rate(1 - (-u).exp(), *rest, analytic=analytic)
        return F


def _quad(F, a: arb, b: arb, prec: int) -> arb:
    """:math:`\\int_a^b F` for ball ends: Arb's quadrature between the exact
    midpoints, plus each end's ball times ``F`` over that ball (mean value)."""
    am, bm = arb(a.mid()), arb(b.mid())
    tol = arb(2) ** (-prec)
    loose = not F(bm).rel_accuracy_bits() > prec // 2     # ball parameters: wide anyway
    if loose:
        tol = arb(2) ** -20
    core = acb.integral(lambda z, an: F(z, an), am, bm, rel_tol=tol, abs_tol=tol,
                        eval_limit=2000 if loose else 200000)
    out = core.real + (b - bm) * F(b) - (a - am) * F(a)
    if not out.is_finite():
        raise Uncertified("the quadrature did not converge (the velocity may vanish "
                          "on the way, or the parameters' balls are too wide)")
    return out


def _solve_for(F, a: arb, target: arb, guess: float, prec: int, upper=None) -> arb:
    """The ``v`` with :math:`\\int_a^v F = ` target, by interval Newton
    (``F > 0``): :math:`N(X) = m - (\\int_a^m F - target)/F(X) \\subset X`
    proves a unique root in :math:`N(X)`. The midpoint comes from float
    Newton kept in the bracket ``(a, upper)`` (bisection where a step leaves it)."""
    v, lo, hi = arb(guess), float(a.mid()), None if upper is None else float(upper.mid())
    for _ in range(200):                      # float Newton for the midpoint
        g = _quad(F, a, v, 60) - target
        lo, hi = (float(v.mid()), hi) if float(g.mid()) < 0 else (lo, float(v.mid()))
        step = g / F(v)
        new = float((v - step).mid())
        if abs(float(step.mid())) < 1e-15 * (1 + abs(new)):
            v = arb(new)
            break
        if not lo < new < (hi if hi is not None else math.inf):
            new = (lo + (hi if hi is not None else float(v.mid()))) / 2
        v = arb(new)
    X = arb(v.mid(), 1e-12 * (1 + abs(float(v.mid()))))
    for k in range(6):
        m = arb(X.mid())
        N = m - (_quad(F, a, m, prec) - target) / F(X)
        if k == 0 and not X.contains(N):
            raise Uncertified("interval Newton did not contract: no certified root")
        X = N.intersection(X) if X.contains(N) else N
    return X


def _phases(prob: Certification, u1, prec: int, stop_above=None):
    """``(T, methods)``: walk the phases from ``u0`` to ``u1``."""
    u = -(1 - prob.g0).log()
    t, r, methods = arb(0), prob.r0, []
    tol = 2.0 ** (-(prec - 20) // 2)      # ODE phases: ~5e-20 at 128 bits
    for ph in prob.phases:
        end = None if ph.end == sp.oo else ball(sp.Rational(ph.end), "t_switch")
        if ph.kind == "separable":
            F = prob.rate(ph, r)
            rest = (prob.n, prob.beta, *prob.params)
            total = _quad(F, u, u1, prec)
            methods.append(f"{ph.text}; Arb acb.integral in u = -log(1 - gamma)")
            if end is None or total.upper() < ph.S_at(end, *rest).lower():
                return ph.S_inv_at(total, *rest), methods
            S_end = ph.S_at(end, *rest)
            if not total.lower() > S_end.upper():
                raise Uncertified(f"the level is reached at the switch t = {ph.end} within "
                                  f"{prec} bits")
            guess = float(u.mid()) + (float(u1.mid()) - float(u.mid())) * float(
                (S_end / total).mid())
            u = _solve_for(F, u, S_end, guess, prec, upper=u1)
            t = end
            methods.append(f"switch at t = {ph.end}: u by interval Newton")
        else:
            if end is not None:
                raise NotCertifiable(f"{prob.scheme.name}: a switch in t after a phase "
                                     f"without a separable form is not supported")
            if ph.nested:        # state (t, q), r = r0 e^q: triangular, two passes
                order, state, rest = max(8, prec // 3), [t, arb(0)], (*prob.args(r)[1:], r)
                ntol, passes = 2.0 ** -(prec - 8), 2
            else:
                order, state, rest = max(8, prec // 6 + 4), [t, r], prob.args(r)[1:]
                ntol, passes = tol, None
            y, steps, stopped = integrate(ph.field, u, u1, state, rest, tol=ntol,
                                          order=order, stop_above=stop_above, passes=passes)
            methods.append(f"{ph.text}; validated Taylor series in u = -log(1 - gamma), "
                           f"degree {order}, {steps} steps" + (" (stopped: above the bound)"
                                                               if stopped else ""))
            return (arb(y[0].lower()).union(arb(y[0].lower()) * 2 + 1) if stopped else y[0],
                    methods)
    raise Uncertified("no phase reaches the level")


def crossing_time(scheme, level, *, n, beta, gamma0=0, r0=1, prec=128,
                  attention="softmax", **params) -> Enclosure:
    """An :class:`Enclosure` of the first time :math:`\\gamma(t) = ` ``level``
    from ``gamma0`` (``r0``: the start's radius for radial schemes).

    Inputs are exact (a float its binary value, ``"0.99"`` its decimal
    value); ``n``, ``beta`` and parameters may be intervals ``(lo, hi)``: the
    enclosure then holds every crossing time over the box.

    >>> import symdyn as sd
    >>> T = sd.certify.crossing_time("post-ln", "0.99", n=8, beta=1)
    >>> str(T)[:30], 3.5509444339553027 in T
    ('[3.550944433955354453978540278', False)
    """
    prec = int(prec)
    if not 16 <= prec <= 4096:
        raise ValueError(f"prec: bits in [16, 4096], got {prec}")
    guard = prec + 20
    with working(guard):
        prob = Certification(scheme, level, n, beta, gamma0, r0, attention, params)
        u1 = -(1 - prob.level).log()
        T, methods = _phases(prob, u1, guard)
    return Enclosure(T, "; then ".join(methods) + f" ({prec} bits)", prec)


def bound(scheme, level, *, n, beta, gamma0=0, r0=1, prec=64, attention="softmax",
          stop_above=None, **params):
    """``(ball, method)``: the crossing time's ball; with ``stop_above`` an ODE
    phase may stop once the time is certainly above it, and the ball then only
    bounds from below (its lower end is a lower bound). For comparisons."""
    with working(int(prec) + 20):
        prob = Certification(scheme, level, n, beta, gamma0, r0, attention, params)
        u1 = -(1 - prob.level).log()
        T, methods = _phases(prob, u1, int(prec) + 20, stop_above)
    return T, "; then ".join(methods)


def gamma(scheme, t, *, n, beta, gamma0=0, r0=1, prec=128, attention="softmax",
          **params) -> Enclosure:
    """An :class:`Enclosure` of :math:`\\gamma(t)`, by interval Newton on the
    crossing-time map :math:`\\int_{u_0}^{u} e^{-u}/f = S(t)` (schemes whose
    first phase is separable, for ``t`` in that phase).

    >>> import symdyn as sd
    >>> g = sd.certify.gamma("post-ln", 1, n=8, beta=1)
    >>> T = sd.certify.crossing_time("post-ln", g.mid, n=8, beta=1)
    >>> abs(T.mid - 1) < 1e-15
    True
    """
    with working(int(prec) + 20):
        prob = Certification(scheme, None, n, beta, gamma0, r0, attention, params)
        ph, tb = prob.phases[0], ball(t, "t")
        if not tb.lower() >= 0:
            raise ValueError(f"t: must be >= 0, got {t!r}")
        if ph.kind != "separable" or (ph.end != sp.oo and not tb.upper() < float(ph.end)):
            raise NotCertifiable(f"{prob.scheme.name}: gamma(t) is certified where the first "
                                 f"phase is separable (use crossing_time)")
        rest = (prob.n, prob.beta, *prob.params)
        S = ph.S_at(tb, *rest)
        u0 = -(1 - prob.g0).log()
        F = prob.rate(ph, prob.r0)
        guess = float(u0.mid()) + float(S.mid()) / max(float(F(u0).mid()), 1e-300)
        u = _solve_for(F, u0, S, min(guess, 40.0), int(prec) + 20)
        g = 1 - (-u).exp()
    return Enclosure(g, f"{ph.text}; interval Newton on the crossing-time map "
                        f"({prec} bits)", int(prec))


