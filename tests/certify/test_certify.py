"""Certified enclosures (symdyn.certify) against independent answers: the
issue's Arb reference, sd.solve's float crossing times, the mpmath path at 50
digits; with negative controls (a wrong integrand, a wrong field, a false
claim) that must be caught."""

from __future__ import annotations

import dataclasses
from fractions import Fraction

import mpmath
import pytest

pytest.importorskip("flint")

import symdyn as sd  # noqa: E402
import symdyn.certify as C  # noqa: E402
from symdyn.certify import crossing as crossing_module  # noqa: E402
from symdyn.certify.forms import forms  # noqa: E402
from symdyn.reduced.solve_crossing import crossing_time as float_crossing  # noqa: E402

REFERENCE = "3.5509444339553544539785402789"      # issue 37: Arb at 106 bits, +/- 2.5e-29
SEPARABLE = sd.custom_scheme("quickened", speed="A_norm/(1 + c*t)", params={"c": 0.5})
MIXED = sd.custom_scheme("mixed", speed="A_norm + t")           # speed of t and gamma
SCHEMES = [*sd.schemes(), SEPARABLE, MIXED]


def _frac(x: mpmath.mpf) -> Fraction:
    man, exp = x.man_exp
    return Fraction(int(man)) * Fraction(2) ** int(exp)


def _name(s):
    return s if isinstance(s, str) else s.name


@pytest.fixture(scope="module")
def enclosures():
    return {_name(s): C.crossing_time(s, "0.99", n=8, beta=1) for s in SCHEMES}


def test_post_ln_matches_the_reference_enclosure(enclosures):
    T = enclosures["post-ln"]
    assert REFERENCE in T or abs(mpmath.mpf(REFERENCE) - T.mid) < 2.5e-29 + T.rad
    assert Fraction(REFERENCE) - Fraction(25, 10**30) < _frac(T.hi)
    assert _frac(T.lo) < Fraction(REFERENCE) + Fraction(25, 10**30)
    assert T.relative_width < 1e-25 and str(T).startswith("[3.55094443395535445397854")
    assert "separable" in T.method and "128 bits" in T.method
    assert 3.5509444339553027 not in T          # the float answer is off by 5e-14


@pytest.mark.parametrize("scheme", SCHEMES, ids=_name)
def test_every_enclosure_holds_the_float_crossing_time(scheme, enclosures):
    T = enclosures[_name(scheme)]
    params = {"c": 0.5} if _name(scheme) == "quickened" else None
    Tf = float(float_crossing(scheme, n=8, beta=1.0, level=0.99, rtol=1e-12, atol=1e-13,
                              params=params))
    assert abs(Tf - T.mid) <= T.rad + 1e-9 * Tf          # the solver's stated tolerance
    quadrature = all(p.kind == "separable" or p.nested for p in forms(scheme))
    assert T.relative_width <= (1e-25 if quadrature else 1e-12), T
    assert quadrature == (_name(scheme) not in ("ln-scaling", "mixed"))


@pytest.mark.parametrize("scheme", ["post-ln", "pre-ln", "peri-ln", "mix-ln", MIXED], ids=_name)
def test_the_mpmath_path_at_50_digits_agrees(scheme, enclosures):
    T = enclosures[_name(scheme)]
    tr = sd.solve(scheme, n=8, beta=1.0, gamma0=0.0, t=[T.mid], dps=50)
    with mpmath.workdps(50):
        g, gdot = tr.gamma[0], tr.gamma_dot[0]
        T_mp = mpmath.mpf(T.mid) + (mpmath.mpf("0.99") - g) / gdot    # one Newton step
        assert abs(T_mp - (T.lo + T.hi) / 2) <= T.rad + 1e-25 * T.mid


def test_inputs_are_exact():
    # the float 0.99 is not 99/100: at 128 bits the two crossing times are disjoint
    a = C.crossing_time("post-ln", "0.99", n=8, beta=1)
    b = C.crossing_time("post-ln", 0.99, n=8, beta=1)
    assert a.hi < b.lo or b.hi < a.lo
    assert C.crossing_time("post-ln", Fraction(99, 100), n=8, beta=1).mid == a.mid


def _perturbed(scheme, factor):
    """The scheme's forms with the integrand (or field) multiplied by ``factor``."""
    def scale(f):
        def g(*args, **kw):
            out = f(*args, **kw)
            return [v * factor for v in out] if isinstance(out, list) else out * factor
        return g
    return tuple(dataclasses.replace(p, rate=p.rate and scale(p.rate),
                                     field=p.field and scale(p.field)) for p in forms(scheme))


@pytest.mark.parametrize("scheme", ["post-ln", "pre-ln"])
def test_a_wrong_integrand_gives_an_enclosure_that_excludes_the_truth(scheme, monkeypatch,
                                                                      enclosures):
    # negative control: 1e-9 relative is far outside the certified widths
    wrong = _perturbed(scheme, 1 + 1e-9)
    monkeypatch.setattr(crossing_module, "forms", lambda s, attention="softmax": wrong)
    T = C.crossing_time(scheme, "0.99", n=8, beta=1)
    truth = enclosures[scheme]
    assert T.hi < truth.lo or truth.hi < T.lo
    Tf = float(float_crossing(scheme, n=8, beta=1.0, level=0.99, rtol=1e-13, atol=1e-14))
    assert abs(Tf - T.mid) > T.rad + 1e-12 * Tf


def test_gamma_inverts_the_crossing_time():
    g = C.gamma("post-ln", 1, n=8, beta=1)
    gf = float(sd.solve("post-ln", n=8, beta=1.0, gamma0=0.0, t=[1.0]).gamma[0])
    assert abs(gf - g.mid) < 1e-10 and g.relative_width < 1e-25
    T = C.crossing_time("post-ln", _frac(g.lo), n=8, beta=1)
    assert T.hi <= 1 + 1e-30


def test_order_is_proven_and_agrees_with_the_float_times():
    res = C.order(["pre-ln", "post-ln", "ngpt"], "0.99", n=8, beta=1)
    floats = {s: float(float_crossing(s, n=8, beta=1.0, level=0.99)) for s in res.names}
    assert res.proven and res.names == sorted(floats, key=floats.get)
    assert str(res) == "ngpt < post-ln < pre-ln"


def test_a_region_certificate_proves_a_true_claim_and_disproves_a_false_one():
    true = C.region("post-ln before pre-ln", level="0.9", n=(8, 9), beta=(1, 1.25))
    assert true.proven and not true.undecided and true.proven_boxes
    false = C.region("pre-ln before post-ln", level="0.9", n=(8, 9), beta=(1, 1.25))
    assert not false.proven and false.disproven
    (box, (wn, wb)) = false.disproven[0]
    assert box[0][0] <= wn <= box[0][1] and box[1][0] <= wb <= box[1][1]
    ta, tb = (float(float_crossing(s, n=wn, beta=wb, level=0.9)) for s in ("pre-ln", "post-ln"))
    assert ta > tb                                   # the witness, by a second method


@pytest.mark.parametrize("call, word", [
    (lambda: C.crossing_time("post-ln", 1, n=8, beta=1), "level"),
    (lambda: C.crossing_time("post-ln", "0.9", n=1, beta=1), "n"),
    (lambda: C.crossing_time("post-ln", "0.9", n=8, beta=-1), "beta"),
    (lambda: C.crossing_time("post-ln", "0.9", n=8, beta=1, prec=8), "prec"),
    (lambda: C.crossing_time("post-ln", "0.9x", n=8, beta=1), "level"),
    (lambda: C.region("post-ln after pre-ln", level="0.9"), "claim"),
])
def test_bad_input_names_the_argument(call, word):
    with pytest.raises(ValueError, match=word):
        call()


def test_a_law_arb_cannot_evaluate_analytically_is_refused():
    kinked = sd.custom_scheme("kinked", speed="1 + Abs(t - 1)")
    with pytest.raises(C.NotCertifiable, match="Abs"):
        C.crossing_time(kinked, "0.9", n=8, beta=1)


def test_the_cli_prints_the_enclosure_and_refuses_bad_input(capsys):
    from symdyn.cli import main
    assert main(["certify", "post-ln", "--level", "0.99", "--n", "8", "--beta", "1"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("T* in [3.55094443395535445397854") and "method: separable" in out
    lo = mpmath.mpf(out.split("lo = ")[1].split()[0])
    assert lo <= mpmath.mpf(REFERENCE) and "relative width" in out
    assert main(["certify", "post-ln", "--level", "1.5", "--n", "8", "--beta", "1"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "level" in err
