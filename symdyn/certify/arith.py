"""Exact inputs, the working precision, and :class:`Enclosure`.

A number given to :mod:`symdyn.certify` is taken exactly: an ``int`` or a
``Fraction`` is itself, a ``float`` its binary value, a string such as
``"0.99"`` its decimal value (an exact rational, then a ball of radius at
most one unit in the last place of the precision). An interval
``(lo, hi)`` is the ball that holds both ends (parameters of region
certificates).

Layer 3, certify.
"""

from __future__ import annotations

import contextlib
import math
import sys
from dataclasses import dataclass
from fractions import Fraction

import flint
import mpmath
from flint import arb


@contextlib.contextmanager
def working(prec: int, cap: int = 10):
    """Arb's precision (bits) and series length for a block; restored after it."""
    old = flint.ctx.prec, flint.ctx.cap
    flint.ctx.prec, flint.ctx.cap = int(prec), int(cap)
    try:
        yield
    finally:
        flint.ctx.prec, flint.ctx.cap = old


def exact(value, name: str) -> Fraction:
    """``value`` (int, float, Fraction, decimal string) as an exact rational."""
    if isinstance(value, bool):
        raise ValueError(f"{name}: a number, got {value!r}")
    if isinstance(value, (int, Fraction)):
        return Fraction(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"{name}: must be finite, got {value!r}")
        return Fraction(value)                    # the binary value, exactly
    if isinstance(value, str):
        text = value.strip()
        if len(text) > 60 or not text or any(c not in "0123456789+-.eE/" for c in text):
            raise ValueError(f"{name}: a decimal or a fraction like '0.99' or '99/100', "
                             f"got {value!r}")
        try:
            return Fraction(text)
        except (ValueError, ZeroDivisionError):
            raise ValueError(f"{name}: not a number: {value!r}") from None
    if hasattr(value, "p") and hasattr(value, "q"):      # a sympy Rational
        return Fraction(int(value.p), int(value.q))
    try:
        return Fraction(float(value))
    except (TypeError, ValueError):
        raise ValueError(f"{name}: a number, got {value!r}") from None


def ball(value, name: str):
    """An arb ball holding ``value`` at the current precision; a pair ``(lo, hi)``
    gives the ball holding the interval (both ends exact)."""
    if isinstance(value, tuple):
        if len(value) != 2:
            raise ValueError(f"{name}: an interval is a pair (lo, hi), got {value!r}")
        lo, hi = (exact(v, name) for v in value)
        if lo > hi:
            raise ValueError(f"{name}: lo <= hi in (lo, hi), got {value!r}")
        half = (hi - lo) / 2                  # mid +/- half, the radius rounded up
        return ball((lo + hi) / 2, name) + arb(0, float(half) * (1 + 2.0**-50))
    q = exact(value, name)
    return arb(q.numerator) / q.denominator if q.denominator != 1 else arb(q.numerator)


def _mpf(x: arb) -> mpmath.mpf:
    """An exact arb (an endpoint) as an mpmath number, not rounded."""
    man, exp = x.mid().man_exp()
    return mpmath.mp.make_mpf(mpmath.libmp.from_man_exp(int(man), int(exp)))


@dataclass(frozen=True)
class Enclosure:
    """A real number proved to lie in ``[lo, hi]``, at any exponent.

    ``lo``, ``hi``: exact ``mpmath.mpf`` endpoints; ``center`` and
    ``radius``: the ball's midpoint and radius as exact ``mpmath.mpf`` (no
    float range: a crossing time of ``1e434294`` is one); ``mid``: the
    midpoint as a float, an ``OverflowError`` when it lies outside the
    normal float range (``center`` holds it then), never ``inf`` or 0 in
    its place; ``rad``: the radius rounded up to a float (``inf``, still an
    upper bound, beyond the range); ``relative_width``: ``(hi - lo)/|mid|``
    rounded up; ``x in enc`` for floats, ints, Fractions, mpf and decimal
    strings (exactly); ``str``: Arb's ``[mid +/- rad]`` with a decimal
    exponent (``[3.389228166518325296e+309 +/- 4.6e+289]``); ``method``
    says how it was proved, ``prec`` at which precision (bits).
    """

    ball: arb
    method: str
    prec: int

    @property
    def lo(self) -> mpmath.mpf:
        with working(self.prec + 64):         # Arb rounds endpoints at ctx.prec
            return Endpoint(_mpf(self.ball.lower()), self.digits, up=False)

    @property
    def hi(self) -> mpmath.mpf:
        with working(self.prec + 64):
            return Endpoint(_mpf(self.ball.upper()), self.digits, up=True)

    @property
    def digits(self) -> int:
        """Significant decimal digits that show this enclosure: those of the
        width, ``ceil(log10(max|end| / (hi - lo))) + 4`` (the midpoint printed
        to 1/1000 of the radius), at least 5; a point (``hi = lo``) shows the
        digits of its precision."""
        with working(self.prec + 64):
            lo, hi = _mpf(self.ball.lower()), _mpf(self.ball.upper())
        top = max(abs(lo), abs(hi))
        if top == 0:
            return 5
        if hi == lo:
            return max(5, int(self.prec * math.log10(2)) + 1)
        with mpmath.workprec(64):
            d = int(mpmath.ceil(mpmath.log10(top) - mpmath.log10(hi - lo))) + 4
        return max(5, min(d, int((self.prec + 64) * math.log10(2)) + 5))

    @property
    def center(self) -> mpmath.mpf:
        """The ball's midpoint, exactly (any exponent)."""
        return _mpf(self.ball)

    @property
    def radius(self) -> mpmath.mpf:
        """The ball's radius, exactly (any exponent)."""
        man, exp = self.ball.rad().mid().man_exp()
        return mpmath.mp.make_mpf(mpmath.libmp.from_man_exp(int(man), int(exp)))

    @property
    def mid(self) -> float:
        """The midpoint as a float; ``OverflowError`` outside the normal float
        range (``center``, ``lo``, ``hi`` or ``str`` give it then)."""
        m = self.center
        if m and not _FLOAT_MIN <= abs(m) <= _FLOAT_MAX:
            raise OverflowError(f"the midpoint {mpmath.nstr(m, 6)} is outside the float range: "
                                f"use .center (an mpmath number), .lo, .hi or str()")
        return float(m)

    @property
    def rad(self) -> float:
        """Half the width ``hi - lo``, rounded up to a float (``inf`` beyond the range)."""
        with working(self.prec + 64):
            half = ((self.ball.upper() - self.ball.lower()) / 2).upper()
        return _float_up(half)

    @property
    def relative_width(self) -> float:
        """``(hi - lo) / |mid|`` rounded up to a float (``inf`` when the ball holds 0)."""
        if self.ball.contains(0):
            return math.inf
        with working(self.prec + 64):
            return _float_up(((self.ball.upper() - self.ball.lower())
                              / abs(arb(self.ball.mid()))).upper())

    def __contains__(self, x) -> bool:
        if isinstance(x, mpmath.mpf):
            if not mpmath.isfinite(x):
                return False
            sign, man, exp, _ = x._mpf_          # x = (-1)^sign man 2^exp, exactly
            q = (-1) ** sign * Fraction(int(man)) * Fraction(2) ** int(exp)
        else:
            q = exact(x, "x")
        with working(max(self.prec, 64) + 64):
            return bool(self.ball.contains(ball(q, "x")))

    def __str__(self) -> str:
        """Arb's ``[mid +/- rad]``, the midpoint to :attr:`digits` digits: the
        printed radius is ``rad`` (the midpoint's rounding adds at most a
        thousandth of it, Arb rounds it up to 3 digits), and the printed
        ball holds ``[lo, hi]``."""
        with working(self.prec + 64):
            return self.ball.str(self.digits, radius=True, more=True)

    def __repr__(self) -> str:
        return f"Enclosure({self}, method={self.method!r})"


_FLOAT_MAX, _FLOAT_MIN = mpmath.mpf(sys.float_info.max), mpmath.mpf(sys.float_info.min)


class Endpoint(mpmath.mpf):
    """An enclosure's end: the exact ``mpmath.mpf`` (arithmetic gives plain
    ``mpf``), printed to ``digits`` significant digits rounded outward (a low
    end down, a high end up: the printed ends still hold the number) rather
    than to ``mpmath.mp.dps``."""

    def __new__(cls, value: mpmath.mpf, digits: int, up: bool):
        out = mpmath.mpf.__new__(cls)
        out._mpf_ = value._mpf_                # exactly: mpf(value) would round to mp.prec
        out.digits, out.up = int(digits), bool(up)
        return out

    def __str__(self) -> str:
        return decimal(self, self.digits, self.up)

    def __repr__(self) -> str:
        return f"mpf('{self}')"


def decimal(x: mpmath.mpf, digits: int, up: bool) -> str:
    """The exact binary number ``x`` as a decimal of ``digits`` significant
    digits, rounded up (``up``) or down, never to nearest: ``M 10^k`` with
    ``M = ceil(x / 10^k)`` or ``floor``, ``k = floor(log10|x|) - digits + 1``,
    the quotient taken in Arb at a precision where its floor or ceiling is
    one integer. Fixed notation for exponents in [-5, digits), else ``e``.

    >>> decimal(mpmath.mpf(1) / 3, 5, up=True), decimal(mpmath.mpf(1) / 3, 5, up=False)
    ('0.33334', '0.33333')
    >>> decimal(-mpmath.mpf(2) ** 200, 4, up=False)
    '-1.607e+60'
    """
    if not x:
        return "0"
    sign, man, exp, _ = x._mpf_                # |x| = man 2^exp (man_exp drops the sign)
    negative, man, exp = bool(sign), int(man), int(exp)
    up = up != negative                        # x < 0 rounds up where |x| rounds down
    with mpmath.workprec(64):
        e10 = int(mpmath.floor(mpmath.log10(abs(x))))
    prec = man.bit_length() + 4 * digits + 64
    for attempt in range(12):
        k = e10 - digits + 1
        with working(prec):
            scaled = arb((man, exp)) / arb(10) ** k if k >= 0 else \
                arb((man, exp)) * arb(10) ** (-k)
            m = (scaled.ceil() if up else scaled.floor()).unique_fmpz()
        if m is None:                          # the quotient straddles an integer
            prec *= 2
            continue
        m, length = int(m), len(str(int(m)))
        if length < digits and attempt < 11:
            e10 -= 1                           # log10 was rounded up: one digit short
        elif length > digits and m % 10 and attempt < 11:
            e10 += 1                           # rounded down: one digit too many
        else:
            break
    if len(str(m)) > digits:                   # a carry to 10^digits (or a zero): exact
        m, k = m // 10, k + 1
    ds = str(m)
    point = k + len(ds)                        # |x| ~ 0.ds x 10^point
    sign = "-" if negative else ""
    if -5 < point <= len(ds) and point > 0:
        body = ds[:point] + ("." + ds[point:] if point < len(ds) else "")
    elif -5 < point <= 0:
        body = "0." + "0" * (-point) + ds
    else:
        body = ds[0] + ("." + ds[1:] if len(ds) > 1 else "") + f"e{point - 1:+d}"
    return sign + body


def _float_up(x: arb) -> float:
    """An exact non-negative arb (an endpoint) as a float not below it."""
    v = _mpf(x)
    if v > _FLOAT_MAX:
        return math.inf
    f = float(v)
    return f if f >= v else math.nextafter(f, math.inf)
