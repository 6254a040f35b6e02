"""Region certificates by pointwise dominance (symdyn.certify.dominance) and
endpoint intervals, against independent answers: sd.solve's float crossing
times, DeepNorm's closed form T = (6 / 54^(1/4)) T_Post-LN, the enclosures of
crossing_time; negative controls (the reverse claim, a radial rate with the
wrong sign, midpoint-radius balls) that must fail."""

from __future__ import annotations

import math

import pytest

pytest.importorskip("flint")

import sympy as sp  # noqa: E402
from flint import arb  # noqa: E402

import symdyn as sd  # noqa: E402
import symdyn.certify as C  # noqa: E402
from symdyn.certify import dominance  # noqa: E402
from symdyn.certify.interval import Interval  # noqa: E402
from symdyn.certify.printer import compile_ball  # noqa: E402
from symdyn.reduced.solve_crossing import crossing_time as float_crossing  # noqa: E402

FULL = {"n": (2, 1024), "beta": (0, 16)}


def _float(scheme, n, beta, level=0.99, **params):
    return float(float_crossing(scheme, n=n, beta=beta, level=level, rtol=1e-11, atol=1e-12,
                                params=params or None))


def test_the_issue_box_is_proven_by_dominance_in_one_box():
    reg = C.region("post-ln before pre-ln", level="0.99", **FULL)
    assert reg.proven and reg.boxes == 1 and reg.proven_boxes == [((2.0, 1024.0), (0.0, 16.0))]
    assert reg.method == "pointwise dominance: 1 box"
    assert "PROVEN" in str(reg) and "pointwise dominance" in str(reg)


def test_the_reverse_claim_is_disproven_with_a_witness_checked_by_floats():
    reg = C.region("pre-ln before post-ln", level="0.99", **FULL)
    assert not reg.proven and reg.disproven and not reg.undecided
    (box, (wn, wb)), = reg.disproven
    assert box[0][0] <= wn <= box[0][1] and box[1][0] <= wb <= box[1][1]
    assert reg.certificates[box] == dominance.NAME
    assert _float("pre-ln", 8, 1.0) > _float("post-ln", 8, 1.0)       # a second method
    assert _float("pre-ln", wn, wb) > _float("post-ln", wn, wb)


@pytest.mark.parametrize("n, beta", [(2, 0), (8, 1), (1024, 0), (3.5, 2.25)])
def test_the_difference_holds_the_float_and_the_enclosed_differences(n, beta):
    d = dominance.difference("post-ln", "pre-ln", "0.99", n=n, beta=beta, pieces=128)
    floats = _float("pre-ln", n, beta) - _float("post-ln", n, beta)
    assert d.lo < floats < d.hi and d.lo > 0
    Ta, Tb = (C.crossing_time(s, "0.99", n=n, beta=beta) for s in ("post-ln", "pre-ln"))
    assert d.lo < Tb.lo - Ta.hi and Tb.hi - Ta.lo < d.hi
    coarse = dominance.difference("post-ln", "pre-ln", "0.99", n=n, beta=beta, pieces=16)
    assert coarse.lo <= d.lo and d.hi <= coarse.hi              # finer pieces, tighter


def test_deepnorm_against_its_closed_form():
    # DeepNorm's velocity is 54^(1/4)/6 times Post-LN's: T_D - T_P = (6/54^(1/4) - 1) T_P
    d = dominance.difference("post-ln", "deepnorm", "0.99", n=8, beta=1, pieces=64)
    T = C.crossing_time("post-ln", "0.99", n=8, beta=1)
    exact = (6 / sp.Integer(54) ** sp.Rational(1, 4) - 1).evalf(30)
    assert d.lo < float(exact) * T.mid < d.hi
    assert C.region("post-ln before deepnorm", level="0.99", **FULL).proven
    assert C.region("deepnorm before post-ln", level="0.99", **FULL).disproven


def test_a_radial_rate_of_the_wrong_sign_is_not_proven(monkeypatch):
    # negative control: r shrinking (p -> -p) makes the Pre-LN-like scheme the faster one
    real = dominance.pace

    def flipped(s):
        w, p = real(s)
        return w, -p
    dominance.certificate.cache_clear()
    monkeypatch.setattr(dominance, "pace", flipped)
    try:
        d = dominance.difference("post-ln", "pre-ln", "0.99", n=8, beta=1)
        assert d.hi < 0                        # the certificate follows the integrand
        box = dominance.difference("post-ln", "pre-ln", "0.99", n=(2, 4), beta=(0, 1))
        assert box is None or not box.lo > 0
    finally:
        dominance.certificate.cache_clear()


def test_an_invented_radial_scheme_gets_the_certificate():
    fast = sd.custom_scheme("twice-radial", speed="r", radial="c*a", params={"c": 2})
    assert dominance.applies("pre-ln", fast)
    d = dominance.difference("pre-ln", fast, "0.99", n=8, beta=1, pieces=64)
    assert d.lo < _float(fast, 8, 1.0, c=2) - _float("pre-ln", 8, 1.0) < d.hi and d.lo > 0
    reg = C.region(("pre-ln", fast), level="0.99", n=(8, 9), beta=(1, 1.25))
    assert reg.proven and reg.claim == "pre-ln before twice-radial"
    assert set(reg.certificates.values()) == {dominance.NAME}


def test_schemes_without_the_pointwise_form_fall_back_to_enclosures():
    for s in ("mix-ln", "ln-scaling", "sqrt-scaling"):
        assert not dominance.applies("post-ln", s)
        assert dominance.difference("post-ln", s, "0.9", n=8, beta=1) is None
    reg = C.region("post-ln before sqrt-scaling", level="0.9", n=(8, 9), beta=(1, 1.25))
    assert reg.proven and set(reg.certificates.values()) == {"enclosures"}


@pytest.mark.parametrize("kw, word", [({"r0": 2}, "r0"), ({"level": "1"}, "level"),
                                      ({"n": (1, 4)}, "n"), ({"beta": -1}, "beta"),
                                      ({"pieces": 0}, "pieces"), ({"gamma0": -1}, "gamma0")])
def test_bad_input_names_the_argument(kw, word):
    # one start for both schemes (gamma0, r0 shared; r0 = 1 on the sphere)
    args = {"level": "0.99", "n": 8, "beta": 1, **kw}
    with pytest.raises(ValueError, match=word):
        dominance.difference("post-ln", "pre-ln", args.pop("level"), **args)


def test_intervals_keep_the_sign_that_balls_lose():
    a, b = arb(512, 511), arb(3317, 3317)          # [1, 1023] and [0, 6634]
    assert (a * b).lower() < 0                     # control: midpoint-radius loses it
    ia, ib = Interval(1, 1023), Interval(0, 6634)
    prod = ia * ib
    assert prod.lo == 0 and prod.hi >= 1023 * 6634
    assert (Interval(0, 1e-3).expm1() * Interval(2, 3)).lo == 0
    sq = Interval(-2, 3) ** 2
    assert sq.lo == 0 and sq.hi >= 9 and not Interval(-1, 1).inverse().is_finite()
    x = Interval(0.5, 0.75)
    assert math.isclose(float((x.exp() - x.exp()).lo), -(math.exp(0.75) - math.exp(0.5)),
                        rel_tol=1e-12)             # dependency: not 0, still an enclosure


def test_the_phase_diagram_labels_n_with_plain_numbers():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    reg = C.region("post-ln before pre-ln", level="0.99", n=(8, 9), beta=(1, 1.25))
    wide = C.region("post-ln before pre-ln", level="0.99", **FULL)
    for r, expected in ((reg, {"8", "9"}), (wide, {"10", "100", "1000"})):
        ax = r.plot()
        ax.figure.canvas.draw()
        labels = {t.get_text() for t in ax.get_xticklabels() if t.get_text()}
        assert expected <= labels and not any("10^" in x or "times" in x for x in labels)
        assert "pointwise dominance" in ax.get_title()
        plt.close(ax.figure)
    # control: matplotlib's own log labels over one decade read 8x10^0
    _, ax = plt.subplots()
    ax.set_xscale("log")
    ax.set_xlim(8, 9)
    ax.figure.canvas.draw()
    assert any("times" in t.get_text() for t in ax.get_xticklabels(minor=True))
    plt.close(ax.figure)


def test_a_difference_of_square_roots_is_conjugated_before_intervals():
    # nGPT against Pre-LN: d0 = (A - sqrt(S)) / ..., A^2 - S >= 0 in sympy
    reg = C.region("ngpt before pre-ln", level="0.99", **FULL)
    assert reg.proven and reg.boxes == 1
    n_, b_ = sp.symbols("n_ b_", positive=True)
    A = (n_ - 1) * sp.exp(b_) + 2          # A^2 - S = 2 (n - 1) e^b + 3 > 0
    S = 2 * (n_ - 1) * sp.exp(b_) + (n_ - 1) ** 2 * sp.exp(2 * b_) + 1
    naive, tidied = A - sp.sqrt(S), dominance.tidy(A - sp.sqrt(S))
    assert sp.simplify(naive - tidied) == 0
    at = [compile_ball(x, [n_, b_])(Interval(2, 1024), Interval(0, 16)) for x in (naive, tidied)]
    assert at[0].lo < 0 < at[0].hi                   # control: the intervals lose the sign
    assert at[1].lo > 0                              # conjugated: positive
    assert _float("ngpt", 8, 1.0) < _float("pre-ln", 8, 1.0)


@pytest.mark.parametrize("level, gamma0", [("0.999999", 0), ("0.5", 0), ("0.99", "0.3")])
def test_edges_a_level_near_one_and_a_later_common_start(level, gamma0):
    d = dominance.difference("post-ln", "pre-ln", level, n=8, beta=1, gamma0=gamma0,
                             pieces=128)
    g0 = float(gamma0)
    floats = [float(float_crossing(s, n=8, beta=1.0, level=float(level), gamma0=g0,
                                   rtol=1e-11, atol=1e-12)) for s in ("post-ln", "pre-ln")]
    assert d.lo < floats[1] - floats[0] < d.hi and d.lo > 0
    if gamma0 == 0:                               # region starts at gamma0 = 0, r0 = 1
        assert C.region("post-ln before pre-ln", level=level, **FULL).proven
