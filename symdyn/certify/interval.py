"""Endpoint interval arithmetic on Arb numbers, for wide parameter boxes.

A midpoint-radius ball loses the sign of a product of wide positive factors
(:math:`[512 \\pm 511]\\,[3317 \\pm 3317]` has a negative lower end); an
:class:`Interval` keeps exact ``arb`` endpoints :math:`[lo, hi]` and rounds
each operation outward (every endpoint result is Arb's ball at the working
precision, its lower or upper end), so products of positive intervals stay
positive and a factor :math:`[0, \\epsilon]` keeps its exact 0. The printer's
closures (:func:`symdyn.certify.printer.compile_ball`) run on it unchanged:
``+ - * /``, integer powers, and ``exp``, ``log``, ``sqrt``, ``expm1`` by
monotonicity; other functions through the ball of the interval.

Layer 3, certify.
"""

from __future__ import annotations

from flint import arb

_INF = arb("inf")


class Interval:
    """``[lo, hi]`` with exact ``arb`` ends (``hi`` may be ``+inf``)."""

    __slots__ = ("lo", "hi")

    def __init__(self, lo, hi=None):
        x = lo if isinstance(lo, arb) else arb(lo)
        if hi is None:
            self.lo, self.hi = x.lower(), x.upper()
        else:
            self.lo, self.hi = x.lower(), (hi if isinstance(hi, arb) else arb(hi)).upper()

    @staticmethod
    def of(x) -> Interval:
        return x if isinstance(x, Interval) else Interval(x)

    def ball(self) -> arb:
        """The smallest ball (to rounding) holding the interval."""
        if not self.is_finite():
            return arb("nan")
        half = ((self.hi - self.lo) / 2).upper()
        return arb(((self.lo + self.hi) / 2).mid()) + arb(0, float(half) * (1 + 2.0**-50))

    def is_finite(self) -> bool:
        return bool(self.lo.is_finite() and self.hi.is_finite())

    def lower(self) -> arb:
        return self.lo

    def upper(self) -> arb:
        return self.hi

    def hull(self, other) -> Interval:
        o = Interval.of(other)
        return Interval(self.lo.min(o.lo), self.hi.max(o.hi))

    def __repr__(self) -> str:
        return f"Interval({float(self.lo)!r}, {float(self.hi)!r})"

    def __add__(self, other):
        o = Interval.of(other)
        return Interval((self.lo + o.lo).lower(), (self.hi + o.hi).upper())

    __radd__ = __add__

    def __neg__(self):
        return Interval(-self.hi, -self.lo)

    def __sub__(self, other):
        return self + (-Interval.of(other))

    def __rsub__(self, other):
        return Interval.of(other) + (-self)

    def __mul__(self, other):
        o = Interval.of(other)
        ends = [p * q for p in (self.lo, self.hi) for q in (o.lo, o.hi)]
        if not all(e.is_finite() for e in ends):
            return Interval(-_INF, _INF)
        return Interval(min(e.lower() for e in ends), max(e.upper() for e in ends))

    __rmul__ = __mul__

    def inverse(self) -> Interval:
        if not (self.lo > 0 or self.hi < 0):
            return Interval(-_INF, _INF)
        return Interval((1 / self.hi).lower(), (1 / self.lo).upper())

    def __truediv__(self, other):
        return self * Interval.of(other).inverse()

    def __rtruediv__(self, other):
        return Interval.of(other) * self.inverse()

    def __pow__(self, k):
        if not isinstance(k, int):
            return (self.log() * k).exp()
        if k < 0:
            return (self ** (-k)).inverse()
        if k % 2 or self.lo >= 0:
            return Interval((self.lo ** k).lower(), (self.hi ** k).upper())
        if self.hi <= 0:
            return Interval((self.hi ** k).lower(), (self.lo ** k).upper())
        return Interval(arb(0), (self.lo.abs_upper().max(self.hi.abs_upper()) ** k).upper())

    def _increasing(self, name: str, lo_ok=None) -> Interval:
        if lo_ok is not None and not lo_ok(self.lo):
            return Interval(-_INF, _INF)
        return Interval(getattr(self.lo, name)().lower(), getattr(self.hi, name)().upper())

    def exp(self):
        return self._increasing("exp")

    def expm1(self):
        return self._increasing("expm1")

    def log(self):
        return self._increasing("log", lambda x: x > 0)

    def sqrt(self):
        return self._increasing("sqrt", lambda x: x >= 0)

    def __getattr__(self, name: str):
        if name in ("sin", "cos", "tan", "atan", "asin", "acos", "erf"):
            return lambda: Interval(getattr(self.ball(), name)())
        raise AttributeError(name)


def inside(inner: Interval, outer: Interval) -> bool:
    """``inner`` lies in the interior of ``outer`` (both ends strictly)."""
    return bool(outer.lo < inner.lo and inner.hi < outer.hi)


def inflated(x: Interval, frac: float = 0.1, floor: float = 1e-12) -> Interval:
    """``x`` widened on each side by ``frac`` of its width plus ``floor`` times
    ``1 + |x|`` (epsilon-inflation, for a priori boxes)."""
    if not x.is_finite():
        return x
    width = float((x.hi - x.lo).upper())
    size = max(float(x.lo.abs_upper()), float(x.hi.abs_upper()))
    pad = arb(frac * width + floor * (1 + size))
    return Interval((x.lo - pad).lower(), (x.hi + pad).upper())
