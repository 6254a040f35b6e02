"""Certified crossing times :math:`T_*` (first time :math:`\\gamma = ` level) and
certified :math:`\\gamma(t)`.

Each phase of the scheme (:mod:`symdyn.certify.forms`) is crossed in
:math:`u = -\\log(1-\\gamma)`: a separable phase by Arb's rigorous
quadrature (``flint.acb.integral``) of
:math:`\\int d\\gamma/f = \\int e^{-u}/f(1-e^{-u})\\,du` and the inverse of
:math:`S`; a switch time inside a separable phase (Mix-LN's ``t = 1``) by an
interval Newton iteration on that integral (from an epsilon-inflated box:
with ball parameters the roots fill an interval); an ODE phase by the
validated Taylor integrator (:mod:`symdyn.certify.taylor`). Over a box of
parameters, :mod:`symdyn.certify.ranges`; :math:`\\gamma(t)` past a separable
phase, the Taylor integrator in ``t``.

Layer 3, certify.
"""

from __future__ import annotations

import math

import sympy as sp
from flint import acb, arb

from ..model.registry import scheme as get_scheme
from . import ranges
from .arith import Enclosure, ball, exact, working
from .forms import forms
from .interval import Interval, inflated
from .printer import NotCertifiable
from .taylor import Uncertified, identity, integrate


class Certification:
    """The balls of one certification: parameters, start and level.

    ``theta``: the balls of ``(n, beta, *params)``, named by ``names``;
    ``box()``: their exact ends; ``at(values)``: the same certification with
    some of them replaced (a corner, a sub-box)."""

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
        self.names = ["n", "beta", *names]
        self.theta = [self.n, self.beta, *self.params]
        self._inputs = (scheme, level, gamma0, r0, attention)
        self._values = {"n": n, "beta": beta, **{k: values[k] for k in names}}

    def box(self) -> dict:
        """``name -> (lo, hi)``, exact, for ``n``, ``beta`` and the parameters."""
        return {k: ranges.fractions(v) for k, v in self._values.items()}

    @property
    def boxed(self) -> bool:
        """Some parameter is an interval of positive width."""
        return any(lo < hi for lo, hi in self.box().values())

    def at(self, values: dict) -> Certification:
        """This certification with the parameters in ``values`` replaced."""
        new = {**self._values, **values}
        scheme, level, gamma0, r0, attention = self._inputs
        params = {k: v for k, v in new.items() if k not in ("n", "beta")}
        return Certification(scheme, level, new["n"], new["beta"], gamma0, r0, attention,
                             params)

    def rate(self, phase, r):
        """``F(u) = e^{-u} / f(1 - e^{-u})``: dS/du of a separable phase, for balls."""
        rest = (r, *self.theta)

        def F(u, analytic=False):
            return phase.rate(1 - (-u).exp(), *rest, analytic=analytic)
        return F


def quadrature(F, a: arb, b: arb, prec: int) -> arb:
    """:math:`\\int_a^b F` for ball ends: Arb's quadrature between the exact
    midpoints, plus each end's ball times ``F`` over that ball (mean value).

    Arb accepts a piece of the interval when its error is below ``abs_tol``;
    an absolute ``2^-prec`` is out of scale for an integral far from 1 (a
    metastable phase at large ``beta`` takes :math:`\\sim e^{\\beta}`), so the
    tolerance is ``2^-prec`` times the integral's size: first a crude upper
    bound (20 bits), then the size just found, until the value is resolved."""
    am, bm = arb(a.mid()), arb(b.mid())
    tol = arb(2) ** (-prec)
    loose = not F(bm).rel_accuracy_bits() > prec // 2     # ball parameters: wide anyway
    if loose:
        tol = arb(2) ** -20

    def f(z, an):
        return F(z, an)
    crude = acb.integral(f, am, bm, rel_tol=arb(2) ** -20, abs_tol=arb(0), eval_limit=1000).real
    size = crude.abs_upper() if crude.is_finite() else arb(1)
    for _ in range(4):
        core = acb.integral(f, am, bm, rel_tol=tol, abs_tol=tol * size,
                            eval_limit=2000 if loose else 200000).real
        if not core.is_finite() or loose or core.rel_accuracy_bits() >= prec - 16 \
                or not core.abs_lower() > 0 or core.abs_lower() * 2 >= size:
            break
        size = core.abs_lower()
    out = core + (b - bm) * F(b) - (a - am) * F(a)
    if not out.is_finite():
        raise Uncertified("the quadrature did not converge (the velocity may vanish "
                          "on the way, or the parameters' balls are too wide)")
    return out


def solve_for(F, a: arb, target: arb, guess: arb, prec: int, upper=None) -> arb:
    """The ``v`` with :math:`\\int_a^v F = ` target, by interval Newton
    (``F > 0``): :math:`N(X) = m - (\\int_a^m F - target)/F(X) \\subset X`
    proves a unique root in :math:`N(X)`. The midpoint comes from Newton on
    exact midpoints (any exponent: ``v - a`` may be ``1e-313``) kept in the
    bracket ``(a, upper)`` (bisection where a step leaves it). The first box
    about it is relative to ``v - a``; where :math:`N(X) \\not\\subset X`
    (ball parameters: the roots fill an interval) ``X`` is replaced by
    :math:`X \\cup N(X)` widened by a tenth (epsilon-inflation), until the
    inclusion holds or ``X`` stops being finite."""
    def exact(x):
        return arb(x.mid())
    v, lo, hi = exact(guess), exact(a), None if upper is None else exact(upper)
    for _ in range(200):                      # Newton on midpoints, 60-bit integrals
        g = exact(quadrature(F, a, v, 60) - target)
        lo, hi = (v, hi) if g < 0 else (lo, v)
        step = exact(g / F(v))
        new = exact(v - step)
        if abs(step) <= abs(new - lo) * 2.0 ** -52:
            v = new
            break
        if not (lo < new and (hi is None or new < hi)):
            new = exact((lo + (hi if hi is not None else v)) / 2)
        v = new
    scale = abs(v - exact(a))
    X = arb(v.mid(), float((scale * 2.0 ** -40).upper()) if scale > 0 else 1e-12)
    if not X.rad() > 0:                         # the radius underflowed a float
        X = v + (scale * 2.0 ** -40) * arb(0, 1)
    for _ in range(40):                         # epsilon-inflation until N(X) in X
        m = exact(X)
        N = m - (quadrature(F, a, m, prec) - target) / F(X)
        if not N.is_finite():
            break
        if X.contains(N):
            break
        both = Interval(X.lower().min(N.lower()), X.upper().max(N.upper()))
        X = inflated(both, 0.1, 0.0).ball()
    else:
        N = arb("nan")
    if not (N.is_finite() and X.contains(N)):
        raise Uncertified("interval Newton did not contract: no certified root")
    X = N                                       # N(X) in X: the roots lie in N(X)
    for _ in range(5):                          # and in every N(X) after: contract
        m = exact(X)
        N = m - (quadrature(F, a, m, prec) - target) / F(X)
        if not (N.is_finite() and N.overlaps(X)):
            break
        X = N.intersection(X)
    return X


def by_phases(prob: Certification, u1, prec: int, stop_above=None):
    """``(T, methods)``: walk the phases from ``u0`` to ``u1``."""
    u = -(1 - prob.g0).log()
    t, r, methods = arb(0), prob.r0, []
    tol = 2.0 ** (-(prec - 20) // 2)      # ODE phases: ~5e-20 at 128 bits
    for ph in prob.phases:
        end = None if ph.end == sp.oo else ball(sp.Rational(ph.end), "t_switch")
        if ph.kind == "separable":
            F = prob.rate(ph, r)
            rest = (prob.n, prob.beta, *prob.params)
            total = quadrature(F, u, u1, prec)
            methods.append(f"{ph.text}; Arb acb.integral in u = -log(1 - gamma)")
            if end is None or total.upper() < ph.S_at(end, *rest).lower():
                return ph.S_inv_at(total, *rest), methods
            S_end = ph.S_at(end, *rest)
            if not total.lower() > S_end.upper():
                raise Uncertified(f"the level is reached at the switch t = {ph.end} within "
                                  f"{prec} bits")
            guess = u + (u1 - u) * S_end / total
            u = solve_for(F, u, S_end, guess, prec, upper=u1)
            t = end
            methods.append(f"switch at t = {ph.end}: u by interval Newton")
        else:
            if end is not None:
                raise NotCertifiable(f"{prob.scheme.name}: a switch in t after a phase "
                                     f"without a separable form is not supported")
            if ph.nested:        # state (t, q), r = r0 e^q: triangular, two passes
                order, state, rest = max(8, prec // 3), [t, arb(0)], (*prob.theta, r)
                ntol, passes = 2.0 ** -(prec - 8), 2
            else:
                order, state, rest = max(8, prec // 6 + 4), [t, r], prob.theta
                ntol, passes = tol, None
            y, steps, stopped = integrate(ph.field, u, u1, state, rest, tol=ntol,
                                          order=order, stop_above=stop_above, passes=passes)
            methods.append(f"{ph.text}; validated Taylor series in u = -log(1 - gamma), "
                           f"degree {order}, {steps} steps" + (" (stopped: above the bound)"
                                                               if stopped else ""))
            return (arb(y[0].lower()).union(arb(y[0].lower()) * 2 + 1) if stopped else y[0],
                    methods)
    raise Uncertified("no phase reaches the level", more_bits=False)


REL_WIDTH = 1e-15          # the default target of crossing_time and gamma (point inputs)
MAX_PREC = 256            # the default ceiling: an ODE phase at 1024 bits takes degree-348 series


def _settings(prec, max_prec, rel_width, inputs):
    """``(prec, max_prec, target)`` checked; the target is ``None`` (none) when
    ``rel_width`` is None and an input is an interval (the box sets the width)."""
    given = prec
    try:
        prec = int(prec) if not isinstance(prec, bool) and float(prec).is_integer() else None
    except (TypeError, ValueError, OverflowError):
        prec = None
    if prec is None or not 16 <= prec <= 4096:
        raise ValueError(f"prec: bits in [16, 4096], got {given!r}")
    max_prec = prec if max_prec is None and prec > MAX_PREC else \
        MAX_PREC if max_prec is None else max_prec
    if isinstance(max_prec, bool) or not isinstance(max_prec, int) \
            or not prec <= max_prec <= 4096:
        raise ValueError(f"max_prec: bits in [prec, 4096] = [{prec}, 4096], got {max_prec!r}")
    if rel_width is None:
        boxed = any(isinstance(v, tuple) for v in inputs)
        return prec, max_prec, None if boxed else REL_WIDTH
    try:
        w = float(rel_width)
    except (TypeError, ValueError):
        w = math.nan
    if isinstance(rel_width, bool) or not 0 < w <= 1:
        raise ValueError(f"rel_width: a relative width in (0, 1], or None, got {rel_width!r}")
    return prec, max_prec, w


def _nonnegative(T: arb) -> arb:
    """``T`` intersected with ``[0, inf)``: a first crossing time of a level
    other than the start is positive (``gamma(0) = gamma0 < level``)."""
    if not T.is_finite() or not T.upper() > 0:
        raise Uncertified(f"the time's enclosure {T.str(5, radius=True)} holds no positive time")
    if T.lower() >= 0:
        return T
    half = T.upper() / 2
    out = arb(half, half)          # [0, hi] up to the radius's rounding (30 bits, upward)
    return out - out.lower()       # moved up by that rounding: its lower end is 0


def _refine(compute, what, prec, max_prec, target):
    """Run ``compute(bits) -> Enclosure`` at ``prec`` bits, doubling up to
    ``max_prec`` until the relative width is at most ``target``; otherwise
    :class:`Uncertified` naming what to raise. An arithmetic failure on the
    way (a ball that does not evaluate) is a reason to raise the precision,
    and, at ``max_prec``, an :class:`Uncertified` that says so."""
    bits = prec
    while True:
        try:
            enc = compute(bits)
        except (ArithmeticError, ValueError) as exc:
            if isinstance(exc, NotCertifiable):
                raise
            why = f"{exc}" if isinstance(exc, Uncertified) else \
                f"the arithmetic failed ({type(exc).__name__}: {exc})"
            if not getattr(exc, "more_bits", True):
                raise Uncertified(f"{what}: not certified at {bits} bits: {why}; a higher "
                                  f"precision does not help", more_bits=False) from None
        else:
            if target is None or enc.relative_width <= target:
                return enc
            why = f"the relative width is {enc.relative_width:.3g}, above rel_width={target:g}"
        if bits >= max_prec:
            raise Uncertified(f"{what}: not certified at {bits} bits: {why}; raise max_prec= "
                              f"(at most 4096; now {max_prec}) or rel_width=")
        bits = min(2 * bits, max_prec)


def crossing_time(scheme, level, *, n, beta, gamma0=0, r0=1, prec=128, max_prec=None,
                  rel_width=None, attention="softmax", **params) -> Enclosure:
    """An :class:`Enclosure` of the first time :math:`\\gamma(t) = ` ``level``
    from ``gamma0`` (``r0``: the start's radius for radial schemes).

    Inputs are exact (a float its binary value, ``"0.99"`` its decimal
    value); ``n``, ``beta`` and parameters may be intervals ``(lo, hi)``: the
    enclosure then holds every crossing time over the box, by the mean-value
    form with the derivatives' signs proved (:func:`box_enclosure`: where they
    are, its ends are the point certificates at two corners), or where that
    does not certify, by the phases walked with ball parameters.

    The working precision starts at ``prec`` bits and doubles, up to
    ``max_prec`` (default 256, or ``prec`` when above), until the relative
    width ``(hi - lo)/|mid|`` is at most ``rel_width`` (default ``1e-15``;
    with an interval input no target unless one is given: the box sets the
    width); otherwise :class:`~symdyn.certify.Uncertified`, which names what
    to raise. The enclosure holds no negative time (it is cut at 0: the
    crossing time of a level above ``gamma0`` is positive) and may lie
    beyond the float range: at ``beta = 720`` the time is ``3.389e+309``
    (``str``, ``.center``, ``.lo``, ``.hi`` hold it; ``.mid`` raises).

    >>> import symdyn as sd
    >>> T = sd.certify.crossing_time("post-ln", "0.99", n=8, beta=1)
    >>> str(T)[:30], 3.5509444339553027 in T
    ('[3.550944433955354453978540278', False)
    """
    prec, max_prec, target = _settings(prec, max_prec, rel_width,
                                       (n, beta, gamma0, r0, *params.values()))
    with working(prec + 20):                 # bad input: a ValueError before any work
        Certification(scheme, level, n, beta, gamma0, r0, attention, params)

    def compute(bits):
        guard = bits + 20
        with working(guard):
            prob = Certification(scheme, level, n, beta, gamma0, r0, attention, params)
            u1 = -(1 - prob.level).log()
            T, methods = _crossing(prob, u1, guard)
            return Enclosure(_nonnegative(T), "; then ".join(methods) + f" ({bits} bits)", bits)
    return _refine(compute, "crossing_time", prec, max_prec, target)


BOX_DEPTH = 2         # bisections of a box whose derivative's sign is not proved


def box_enclosure(prob: Certification, u1: arb, prec: int, *,
                  depth: int = BOX_DEPTH) -> ranges.BoxEnclosure:
    """The crossing time over ``prob``'s box by :func:`symdyn.certify.ranges.enclose`:
    the mean-value form with the derivatives' signs proved by interval
    sensitivities, the points by :func:`by_phases` at ``prec`` bits."""
    u0 = -(1 - prob.g0).log()
    names = prob.names
    quads = ranges.quadratures(prob.scheme, prob._inputs[4])

    def gradient(box):
        K = len(names) + 1                     # the box's symbols and a piece's tau
        theta = [ranges.Affine.symbol(*_ends(box[k]), j, K) if box[k][0] < box[k][1]
                 else ranges.Affine.of(ranges.ball_of(box[k]), K)
                 for j, k in enumerate(names)]
        grad = ranges.affine_gradient(prob.phases, quads, u0, u1, prob.r0, theta)
        if grad is None:
            balls = [ranges.ball_of(box[k]) for k in names]
            grad = ranges.sensitivity(prob.phases, ranges.variational(prob.scheme,
                                                                      prob._inputs[4]),
                                      u0, u1, prob.r0, balls).gradient
        return grad

    def point(values):
        T, _ = by_phases(prob.at(values), u1, prec)
        return T
    return ranges.enclose(prob.box(), names, gradient, point, depth)


def _ends(pair: tuple) -> tuple:
    """The exact ends of ``(lo, hi)`` (Fractions) as balls (exact where Arb can)."""
    return tuple(arb(q.numerator) / q.denominator for q in pair)


def point_time(prob: Certification, u1: arb, prec: int, stop_above=None) -> arb:
    """The crossing time at ``prob``'s parameters by :func:`by_phases`, cut at 0."""
    T, _ = by_phases(prob, u1, prec, stop_above)
    return _nonnegative(T)


def _crossing(prob: Certification, u1: arb, prec: int) -> tuple:
    """``(T, methods)``: over a box (a parameter given as an interval) the
    mean-value form of :func:`box_enclosure`, else (or where it does not
    certify) the phases walked with ball parameters."""
    if prob.boxed:
        try:
            enc = box_enclosure(prob, u1, prec)
        except ArithmeticError as exc:       # Uncertified: try the balls
            try:
                return by_phases(prob, u1, prec)
            except ArithmeticError:
                raise exc from None
        return enc.time, [enc.method]
    return by_phases(prob, u1, prec)


def bound(scheme, level, *, n, beta, gamma0=0, r0=1, prec=64, attention="softmax",
          stop_above=None, **params):
    """``(ball, method)``: the crossing time's ball (cut at 0, as in
    :func:`crossing_time`, at ``prec`` bits alone); with ``stop_above`` an ODE
    phase may stop once the time is certainly above it, and the ball then only
    bounds from below (its lower end is a lower bound). For comparisons: an
    arithmetic failure is an :class:`~symdyn.certify.Uncertified`."""
    prec = _settings(prec, None, 1, ())[0]
    with working(prec + 20):
        prob = Certification(scheme, level, n, beta, gamma0, r0, attention, params)
        u1 = -(1 - prob.level).log()

        def compute(bits):
            T, methods = by_phases(prob, u1, bits + 20, stop_above)
            return Enclosure(_nonnegative(T), "; then ".join(methods), bits)
        enc = _refine(compute, "bound", prec, prec, None)
    return enc.ball, enc.method


def gamma(scheme, t, *, n, beta, gamma0=0, r0=1, prec=128, max_prec=None, rel_width=None,
          attention="softmax", **params) -> Enclosure:
    """An :class:`Enclosure` of :math:`\\gamma(t)`, for every scheme. Where the
    first phase is separable and holds ``t``, by interval Newton on the
    crossing-time map :math:`\\int_{u_0}^{u} e^{-u}/f = S(t)`; otherwise by
    the validated Taylor integrator in ``t`` (:mod:`symdyn.certify.taylor`)
    on :math:`u = -\\log(1-\\gamma)` and :math:`r`:
    :math:`du/dt = G/(1-\\gamma)`, :math:`dr/dt = R`, phase by phase (a
    switch at a fixed time is a boundary of the integration). Precision as
    in :func:`crossing_time` (``prec``, ``max_prec``, ``rel_width``); the
    enclosure is cut to ``[-1, 1]`` (a cosine).

    >>> import symdyn as sd
    >>> g = sd.certify.gamma("post-ln", 1, n=8, beta=1)
    >>> T = sd.certify.crossing_time("post-ln", g.mid, n=8, beta=1)
    >>> abs(T.mid - 1) < 1e-15
    True
    """
    prec, max_prec, target = _settings(prec, max_prec, rel_width,
                                       (t, n, beta, gamma0, r0, *params.values()))
    with working(prec + 20):
        Certification(scheme, None, n, beta, gamma0, r0, attention, params)
        if not ball(t, "t").lower() >= 0:
            raise ValueError(f"t: must be >= 0, got {t!r}")

    def compute(bits):
        with working(bits + 20):
            prob = Certification(scheme, None, n, beta, gamma0, r0, attention, params)
            ph, tb = prob.phases[0], ball(t, "t")
            u0 = -(1 - prob.g0).log()
            if ph.kind == "separable" and (ph.end == sp.oo or tb.upper() < float(ph.end)):
                rest = (prob.n, prob.beta, *prob.params)
                S = ph.S_at(tb, *rest)
                F = prob.rate(ph, prob.r0)
                guess = u0 + S / F(u0)
                u = solve_for(F, u0, S, guess if guess < 40 else arb(40), bits + 20)
                method = f"{ph.text}; interval Newton on the crossing-time map"
            else:
                u, method = _u_at(prob, u0, tb, bits + 20)
            g = -(-u).expm1()                   # 1 - e^{-u}, relative accuracy at small u
            if not (g.upper() >= -1 and g.lower() <= 1):
                raise Uncertified(f"gamma's enclosure {g.str(5, radius=True)} misses [-1, 1]")
            g = arb(max(g.lower(), arb(-1))).union(arb(min(g.upper(), arb(1))))
        return Enclosure(g, f"{method} ({bits} bits)", bits)
    return _refine(compute, "gamma", prec, max_prec, target)


def _u_at(prob: Certification, u0: arb, tb: arb, prec: int) -> tuple:
    """``(u(t), method)``: :math:`u = -\\log(1-\\gamma)` at the time ``tb`` by
    the validated Taylor integrator in ``t``, phase by phase."""
    u, r, steps = u0, prob.r0, 0
    order = max(8, prec // 6 + 4)
    tol = 2.0 ** -(prec // 2)
    for ph in prob.phases:
        a = ball(ph.start, "t_switch")
        if not a < tb.upper():
            break
        if ph.end == sp.oo or tb.upper() < ball(ph.end, "t_switch"):
            b = tb
        elif tb.lower() >= ball(ph.end, "t_switch"):
            b = ball(ph.end, "t_switch")
        else:
            raise Uncertified(f"t = {tb.str(5, radius=True)} holds the switch t = {ph.end}")
        field = ranges.time_field(ph, tuple(prob.scheme.symbols))
        y, k, _ = integrate(field, a, b, [u, r], prob.theta, tol=tol, order=order,
                            variable=identity)
        u, r, steps = y[0], y[1], steps + k
    return u, (f"ODE in t: du/dt = G/(1 - gamma), dr/dt = R, u = -log(1 - gamma); "
               f"validated Taylor series, degree {order}, {steps} steps")
