"""Schemes with free parameters: symbols in derivations, numbers (batch axes)
in solve and simulate."""

import pytest
import sympy as sp

import symdyn as sd
from symdyn.symbols import t


def damped():
    return sd.custom_scheme("damped", speed="A_norm/(1 + c*t)", params={"c": 0.5})


def test_parameters_stay_symbols_in_the_derivation():
    fam = damped()
    c = fam.symbols[0]
    assert c.name == "c" and fam.defaults == {"c": 0.5}
    assert fam.speed.has(c) and sd.reduce(fam).gamma_dot.has(c)
    # nGPT's alpha = a0 + a1 t: the initial velocity is a0 times nGPT's (alpha = 1)
    fam = sd.scheme("ngpt", alpha="a0 + a1*t", params={"a0": 1, "a1": 0.5})
    a0 = dict((s.name, s) for s in fam.symbols)["a0"]
    ratio = sp.simplify(sd.initial_velocity(fam) / sd.initial_velocity("ngpt"))
    assert ratio == a0
    # negative control: a different family gives a different ratio
    other = sd.scheme("ngpt", alpha="a0**2 + a1*t", params={"a0": 1, "a1": 0.5})
    assert sp.simplify(sd.initial_velocity(other) / sd.initial_velocity("ngpt")) != a0


def test_bind_substitutes_and_checks():
    fam = damped()
    assert fam.bind(c=2).speed == sd.custom_scheme("x", speed="A_norm/(1 + 2*t)").speed
    assert fam.bind().speed == fam.speed.subs(fam.symbols[0], sp.Rational(1, 2))
    with pytest.raises(ValueError, match="speed|c"):
        fam.bind(c=-1.0)                      # 1 - t reaches 0 at t = 1
    with pytest.raises(ValueError, match="not a parameter"):
        fam.bind(k=1.0)
    ng = sd.scheme("ngpt", alpha="a0 + a1*t", params={"a0": 1, "a1": 0.5})
    assert ng.bind(a1=2).law_of_t("alpha")(1.0) == 3.0


@pytest.mark.parametrize("params, match", [
    ({"beta": 1}, "symbol of the model"),
    ({"gamma0": 1}, "argument name"),
    ({"x y": 1}, "identifier"),
    ({"_c": 1}, "identifier"),
    ({"exp": 1}, "function"),
    ({"e": 1}, "numpy"),
    ({"c": float("nan")}, "finite"),
    ({"c": "1"}, "real number"),
    ({"c": 1, "k": 1.0}, "appears in no law"),
    ([("c", 1)], "dict"),
])
def test_bad_parameters_are_refused(params, match):
    with pytest.raises(ValueError, match=match):
        sd.custom_scheme("x", speed="1 + c*t", params=params)


def test_speed_checked_at_the_defaults():
    with pytest.raises(ValueError, match="positive"):
        sd.custom_scheme("x", speed="1 + c*t", params={"c": -1.0})
    with pytest.raises(ValueError, match="alpha"):
        sd.scheme("ngpt", alpha="a0 + a1*t", params={"a0": 1, "a1": -0.5})
    with pytest.raises(ValueError, match="no expression"):
        sd.scheme("post-ln", params={"c": 1})


def test_parameters_parse_only_through_expressions():
    with pytest.raises(ValueError, match="unknown symbol"):
        sd.custom_scheme("x", speed="1 + k*t", params={"c": 1})
    assert t in damped().speed.free_symbols
