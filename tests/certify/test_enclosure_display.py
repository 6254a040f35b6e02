"""How an Enclosure prints (issue 48, item 8): ``str`` shows a radius that is
``.rad`` (not the midpoint's rounding, 1.99e-38 for a ball of radius 7e-43),
and ``.lo``/``.hi`` print with the enclosure's digits rounded outward (not
mpmath's 15). Oracles: the exact ends, and Python's ``decimal`` with
directed rounding; controls: the old printing fails the same checks."""

from __future__ import annotations

import decimal as pydecimal
import random
import re
from fractions import Fraction

import mpmath
import pytest

pytest.importorskip("flint")

from flint import arb  # noqa: E402

from symdyn.certify.arith import Enclosure, decimal, working  # noqa: E402

PREC = 128


def _frac(x: mpmath.mpf) -> Fraction:
    sign, man, exp, _ = x._mpf_
    return (-1) ** sign * Fraction(int(man)) * Fraction(2) ** int(exp)


def _enclosure(mid: str, rad: str, prec: int = PREC) -> Enclosure:
    with working(prec + 64):
        return Enclosure(ball=arb(mid, rad), method="test", prec=prec)


def _printed(text: str) -> tuple[Fraction, Fraction]:
    m = re.fullmatch(r"\[(\S+) \+/- (\S+)\]", text)
    assert m, text
    return Fraction(m.group(1)), Fraction(m.group(2))


# the crossing time of the issue (post-ln, 0.99, n = 8, beta = 1) and others
BALLS = [("3.55094443395535445397854027888391318161982549", "7.25e-43"),
         ("-0.00123456789012345678901234567", "3e-25"),
         ("3.389228166518325296e+309", "4.6e+289"),
         ("12345.678", "0.25"),
         ("7.5e-300", "1e-320")]


@pytest.mark.parametrize("mid, rad", BALLS)
def test_printed_radius_is_rad_and_the_printed_ball_holds_the_ends(mid, rad):
    enc = _enclosure(mid, rad)
    m, r = _printed(str(enc))
    lo, hi = _frac(enc.lo), _frac(enc.hi)
    assert m - r <= lo and hi <= m + r                      # sound
    half = (hi - lo) / 2                                     # .rad, exactly
    assert half <= r <= half * Fraction(102, 100)           # and tight: within 2 %


def _old_str(enc: Enclosure) -> str:
    """The printing before issue 48 (digits from the float relative width)."""
    import math
    w = enc.relative_width
    digits = 40 if w == 0 else 5 if not w < 1 else max(5, int(-math.log10(w)) + 3)
    with working(enc.prec + 64):
        return enc.ball.str(min(digits, max(5, int(enc.prec * 0.30103))), radius=True)


def test_the_old_printing_fails_the_tightness_check():
    enc = _enclosure(*BALLS[0])
    m, r = _printed(_old_str(enc))
    half = (_frac(enc.hi) - _frac(enc.lo)) / 2
    assert r > 1000 * half                                   # 1.99e-38 against 7.25e-43


@pytest.mark.parametrize("mid, rad", BALLS)
def test_ends_print_with_the_enclosures_digits_rounded_outward(mid, rad):
    enc = _enclosure(mid, rad)
    lo, hi = enc.lo, enc.hi
    for end, outward in ((lo, lambda p, x: p <= x), (hi, lambda p, x: p >= x)):
        text = str(end)
        assert repr(end) == f"mpf('{text}')"
        significant = re.sub(r"e[+-]\d+$", "", text).lstrip("-0.").replace(".", "")
        assert len(significant) == enc.digits, text
        assert outward(Fraction(text), _frac(end))
    # the printed ends tell the ends apart, and stay exact in arithmetic
    assert str(lo) != str(hi) and Fraction(str(lo)) < Fraction(str(hi))
    with mpmath.workprec(enc.prec + 64):                    # exact at a working precision
        assert type(lo + 0) is mpmath.mpf and _frac(lo + 0) == _frac(lo)
    with working(enc.prec + 64):                            # Arb's lower end, exactly
        man, exp = enc.ball.lower().mid().man_exp()
    assert _frac(lo) == Fraction(int(man)) * Fraction(2) ** int(exp)
    assert lo in enc and hi in enc                           # negative ends too (the sign)
    assert -lo not in enc and -hi not in enc                 # control: the mirror is not
    assert enc.digits <= int((enc.prec + 64) * 0.30103) + 5


def test_mpmaths_own_printing_is_the_control():
    # control: mpmath prints an mpf to mp.dps = 15 digits, rounded to nearest, so the
    # two ends of the enclosure print the same
    enc = _enclosure(*BALLS[0])
    assert mpmath.mpf.__str__(enc.lo) == mpmath.mpf.__str__(enc.hi) == "3.55094443395535"
    assert str(enc.lo) != str(enc.hi)


def _oracle(x: mpmath.mpf, digits: int, up: bool) -> pydecimal.Decimal:
    """Python's decimal: the exact value, then rounded to ``digits`` toward +-inf."""
    exact = _frac(x)
    ctx = pydecimal.Context(prec=digits, rounding=pydecimal.ROUND_CEILING if up
                            else pydecimal.ROUND_FLOOR, Emax=10**6, Emin=-10**6)
    return ctx.divide(pydecimal.Decimal(exact.numerator), pydecimal.Decimal(exact.denominator))


def test_decimal_agrees_with_pythons_directed_rounding():
    rng = random.Random(48)
    for _ in range(300):
        man = rng.getrandbits(rng.randint(1, 200)) or 1
        x = mpmath.mpf(rng.choice((-1, 1)) * man) * mpmath.mpf(2) ** rng.randint(-400, 400)
        digits, up = rng.randint(1, 45), rng.random() < 0.5
        assert pydecimal.Decimal(decimal(x, digits, up)) == _oracle(x, digits, up), (x, digits, up)
    # control: rounding to nearest (mpmath's nstr) differs from one direction somewhere
    third = mpmath.mpf(1) / 3
    assert decimal(third, 5, up=True) == "0.33334" != mpmath.nstr(third, 5)


def test_decimal_at_an_exponent_floats_cannot_hold():
    x = mpmath.mpf(2) ** 1442700                             # about 9.4e+434295
    lo, hi = decimal(x, 6, up=False), decimal(x, 6, up=True)
    assert lo.endswith("e+434295") and hi.endswith("e+434295")
    assert Fraction(lo.split("e")[0]) + Fraction(1, 10**5) == Fraction(hi.split("e")[0])
