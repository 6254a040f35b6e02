"""Affine arithmetic on Arb balls: first-order dependence on a box, kept exactly.

An :class:`Affine` is :math:`x = c + \\sum_i a_i \\varepsilon_i + e\\,\\varepsilon'`
with :math:`\\varepsilon_i \\in [-1, 1]` one per parameter of a box (the
parameter :math:`\\theta_i = m_i + h_i \\varepsilon_i`), :math:`e \\ge 0` the
error, and ``c``, ``a_i`` Arb balls (their radii are part of the error). It
holds every value the quantity takes over the box. Sums are exact; a product
adds :math:`|c_x| e_y + |c_y| e_x + R_x R_y` (:math:`R = \\sum|a_i| + e`);
a function :math:`f` (``exp``, ``log``, ``sqrt``, ``expm1``, a reciprocal,
an integer power) is its tangent at ``c`` plus the Taylor remainder
:math:`\\sup|f''|\\,R^2/2` over the range :math:`[c - R, c + R]`. So a
quantity that depends on ``n`` through several factors
(:math:`((n-1)e^{\\beta\\gamma} + e^\\beta)/(\\gamma n - \\gamma + 1)`) keeps its
first-order cancellation, which interval or ball arithmetic loses: the
excess over the true range is second order in the box's width.
The printer's closures (:func:`symdyn.certify.printer.compile_ball`) run on
it unchanged; other functions go through the range (first order lost).

Layer 3, certify.
"""

from __future__ import annotations

from collections.abc import Callable

from flint import arb

from .interval import Interval


def _up(x: arb) -> arb:
    """An exact upper bound of ``|x|``."""
    return x.abs_upper()


class Affine:
    """``c + sum(a_i eps_i) + [-e, e]`` (see the module's docstring)."""

    __slots__ = ("c", "a", "e")

    def __init__(self, c: arb | int, a: tuple, e: arb | None = None) -> None:
        self.c = c if isinstance(c, arb) else arb(c)
        self.a = tuple(a)
        self.e = arb(0) if e is None else e

    @staticmethod
    def symbol(lo: arb, hi: arb, index: int, count: int) -> Affine:
        """The parameter ``[lo, hi]`` as symbol ``index`` of ``count``."""
        mid, half = (lo + hi) / 2, (hi - lo) / 2
        return Affine(mid, tuple(half if k == index else arb(0) for k in range(count)))

    @staticmethod
    def of(x: object, count: int) -> Affine:
        """A ball or an :class:`Interval` as a constant (its width in the error)."""
        if isinstance(x, Affine):
            return x
        b = x.ball() if isinstance(x, Interval) else x if isinstance(x, arb) else arb(x)
        return Affine(arb(b.mid()), (arb(0),) * count, arb(b.rad()))

    def spread(self) -> arb:
        """An upper bound of :math:`\\sum_i |a_i| + e`."""
        out = self.e
        for ai in self.a:
            out = out + _up(ai)
        return _up(out)

    def radius(self) -> arb:
        """An upper bound of ``|x - mid(c)|`` over the box (with ``c``'s radius)."""
        return _up(self.spread() + self.c.rad())

    def range(self) -> Interval:
        R = self.spread()
        return Interval((self.c - R).lower(), (self.c + R).upper())

    def ball(self) -> arb:
        return self.range().ball()

    def is_finite(self) -> bool:
        return bool(self.c.is_finite() and self.e.is_finite()
                    and all(ai.is_finite() for ai in self.a))

    def _lift(self, other: object) -> Affine:
        if isinstance(other, Affine):
            return other
        if isinstance(other, Interval):
            return Affine.of(other, len(self.a))
        return Affine(other if isinstance(other, arb) else arb(other), (arb(0),) * len(self.a))

    def __add__(self, other: object) -> Affine:
        o = self._lift(other)
        return Affine(self.c + o.c, tuple(x + y for x, y in zip(self.a, o.a, strict=True)),
                      _up(self.e + o.e))

    __radd__ = __add__

    def __neg__(self) -> Affine:
        return Affine(-self.c, tuple(-x for x in self.a), self.e)

    def __sub__(self, other: object) -> Affine:
        return self + (-self._lift(other))

    def __rsub__(self, other: object) -> Affine:
        return self._lift(other) + (-self)

    def __mul__(self, other: object) -> Affine:
        if not isinstance(other, (Affine, Interval)):
            k = other if isinstance(other, arb) else arb(other)
            return Affine(self.c * k, tuple(x * k for x in self.a), _up(self.e * _up(k)))
        o = self._lift(other)
        Rs, Ro = self.spread(), o.spread()
        e = _up(self.c) * o.e + _up(o.c) * self.e + Rs * Ro
        return Affine(self.c * o.c, tuple(self.c * y + o.c * x
                                          for x, y in zip(self.a, o.a, strict=True)), _up(e))

    __rmul__ = __mul__

    def _unary(self, f0: Callable, f1: Callable, f2: Callable) -> Affine:
        """``f(x)``: tangent at ``c`` plus ``sup|f''| R^2 / 2`` over the range
        (``f2`` maps the range, an :class:`Interval`, to one holding ``f''``)."""
        R = self.spread()
        if not R.is_finite():
            return Affine(arb("nan"), (arb(0),) * len(self.a))
        rng = Interval((self.c - R).lower(), (self.c + R).upper())
        d2 = f2(rng)
        if not d2.is_finite():
            return Affine(arb("nan"), (arb(0),) * len(self.a))
        bound = d2.lo.abs_upper().max(d2.hi.abs_upper())
        c0, c1 = f0(self.c), f1(self.c)
        return Affine(c0, tuple(c1 * x for x in self.a),
                      _up(_up(c1) * self.e + bound * R * R / 2))

    def inverse(self) -> Affine:
        return self._unary(lambda x: 1 / x, lambda x: -1 / (x * x),
                           lambda X: Interval(2) / (X * X * X))

    def __truediv__(self, other: object) -> Affine:
        o = self._lift(other)
        return self * o.inverse()

    def __rtruediv__(self, other: object) -> Affine:
        return self._lift(other) * self.inverse()

    def __pow__(self, k: int | float) -> Affine:
        if isinstance(k, int) and k >= 0:
            out = self._lift(1)
            for _ in range(k):
                out = out * self
            return out
        if isinstance(k, int):
            return (self ** (-k)).inverse()
        return (self.log() * k).exp()

    def exp(self) -> Affine:
        return self._unary(lambda x: x.exp(), lambda x: x.exp(), lambda X: X.exp())

    def expm1(self) -> Affine:
        return self._unary(lambda x: x.expm1(), lambda x: x.exp(), lambda X: X.exp())

    def log(self) -> Affine:
        return self._unary(lambda x: x.log(), lambda x: 1 / x,
                           lambda X: -(Interval(1) / (X * X)) if X.lo > 0
                           else Interval(arb("-inf"), arb("inf")))

    def sqrt(self) -> Affine:
        return self._unary(lambda x: x.sqrt(), lambda x: 1 / (2 * x.sqrt()),
                           lambda X: Interval(1) / (4 * X * X.sqrt()) if X.lo > 0
                           else Interval(arb("-inf"), arb("inf")))

    def __getattr__(self, name: str) -> Callable[[], Affine]:
        if name in ("sin", "cos", "tan", "atan", "asin", "acos", "erf"):
            return lambda: Affine.of(getattr(self.ball(), name)(), len(self.a))
        raise AttributeError(name)

    def __repr__(self) -> str:
        r = self.range()
        return f"Affine([{float(r.lo)!r}, {float(r.hi)!r}])"
