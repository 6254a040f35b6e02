import pytest
import sympy as sp

import symdyn as sd
from symdyn.model.symbols import A_norm, a, r, t


def test_registry_names():
    assert sd.schemes() == ["post-ln", "pre-ln", "mix-ln", "peri-ln", "ngpt",
                            "sqrt-scaling", "deepnorm", "ln-scaling"]


@pytest.mark.parametrize("name, speed, radial", [
    ("post-ln", 1, 0),
    ("pre-ln", r, a),
    ("peri-ln", r * A_norm, a / A_norm),
    ("ngpt", A_norm, 0),
    ("sqrt-scaling", sp.sqrt(1 + t), 0),
])
def test_speed_laws_of_design_table(name, speed, radial):
    s = sd.scheme(name)
    assert sp.simplify(s.speed - speed) == 0
    assert sp.simplify(s.radial - radial) == 0


def test_mix_ln_switches_from_post_to_pre():
    s = sd.scheme("mix-ln", t_switch=2.5)
    assert s.speed.subs(t, 1) == 1 and s.radial.subs(t, 1) == 0
    assert s.speed.subs(t, 3) == r and s.radial.subs(t, 3) == a
    assert s.sphere_until == sp.Rational(5, 2)


def test_ngpt_alpha_expression_and_function():
    assert sd.scheme("ngpt", alpha="sqrt(t + 1)").speed == A_norm / sp.sqrt(t + 1)
    s = sd.scheme("ngpt", alpha="alpha(t)")
    assert s.speed == A_norm / sp.Function("alpha")(t)


def test_custom_scheme_on_sphere_sets_r_to_one():
    s = sd.custom_scheme("mine", "r*A_norm")
    assert s.on_sphere and s.speed == A_norm and s.radial == 0
    s = sd.custom_scheme("mine", sp.Symbol("r") * 2, radial="a")
    assert not s.on_sphere and s.speed == 2 * r  # user symbols mapped to ours


@pytest.mark.parametrize("call, culprit", [
    (lambda: sd.scheme("layernorm"), "scheme"),
    (lambda: sd.scheme("mix-ln", t_switch=-1), "t_switch"),
    (lambda: sd.scheme("mix-ln", t_switch=float("nan")), "t_switch"),
    (lambda: sd.scheme("post-ln", alpha="1"), "params"),
    (lambda: sd.scheme("ngpt", alpha="x + t"), "alpha"),
    (lambda: sd.scheme("ngpt", alpha="r"), "alpha"),
    (lambda: sd.custom_scheme("c", "r +"), "speed"),
    (lambda: sd.custom_scheme("c", "foo*r"), "speed"),
    (lambda: sd.custom_scheme("c", "__import__('os')"), "speed"),
    (lambda: sd.custom_scheme("c", "0"), "speed"),
    (lambda: sd.custom_scheme("c", "g(t)"), "speed"),
    (lambda: sd.custom_scheme("c", "r", radial="a + z"), "radial"),
    (lambda: sd.custom_scheme("", "r"), "name"),
])
def test_bad_input_names_the_argument(call, culprit):
    with pytest.raises(ValueError, match=culprit):
        call()
