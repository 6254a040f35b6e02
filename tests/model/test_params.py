"""Schemes with free parameters: symbols in derivations, numbers (batch axes)
in solve and simulate."""

import pytest
import sympy as sp

import symdyn as sd
from symdyn.model.symbols import t


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
    ({"gamma0": 1}, "symbol of the model"),
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


# ---------------------------------------------------------------------------
# Numbers for the parameters: a batch axis in solve, a value in simulate

def test_parameter_is_a_batch_axis_equal_to_bound_schemes():
    import numpy as np
    fam = damped()
    tr = sd.solve(fam, n=8, beta=1.0, gamma0=0.0, t=[1.0, 3.0],
                  params={"c": np.array([0.0, 0.5, 1.0])})
    assert tr.gamma.shape == (3, 2) and list(tr.params) == ["c"]
    # oracle 1: c = 0 is nGPT with alpha = 1 (speed A_norm), a scheme compiled separately
    ngpt = sd.solve("ngpt", n=8, beta=1.0, gamma0=0.0, t=[1.0, 3.0])
    assert abs(tr.log_epsilon[0] - ngpt.log_epsilon).max() < 1e-10
    # oracle 2: each member equals the scheme with the number substituted by sympy
    for k, c in enumerate([0.5, 1.0]):
        bound = sd.solve(fam.bind(c=c), n=8, beta=1.0, gamma0=0.0, t=[1.0, 3.0])
        assert abs(tr.log_epsilon[k + 1] - bound.log_epsilon).max() < 1e-10
    # negative control: the parameter changes the solution
    assert abs(tr.log_epsilon[2] - tr.log_epsilon[0]).min() > 1e-3
    # the default is used when the parameter is omitted
    default = sd.solve(fam, n=8, beta=1.0, gamma0=0.0, t=[1.0, 3.0])
    assert abs(default.log_epsilon - tr.log_epsilon[1]).max() < 1e-14


def test_parameters_broadcast_with_the_model_arguments():
    import numpy as np
    fam = sd.scheme("ngpt", alpha="a0 + a1*t", params={"a0": 1, "a1": 0.5})
    a1 = np.array([[0.0], [2.0]])
    tr = sd.solve(fam, n=[4, 8], beta=1.0, gamma0=0.0, t=[1.0], params={"a1": a1})
    assert tr.gamma.shape == (2, 2, 1) and tr.params["a0"].shape == (2, 2)
    one = sd.solve(fam, n=8, beta=1.0, gamma0=0.0, t=[1.0], params={"a1": 2.0})
    assert abs(tr.gamma[1, 1] - one.gamma).max() < 1e-13


def test_bad_parameter_values_in_solve():
    fam = damped()
    with pytest.raises(ValueError, match="k: not a parameter of damped"):
        sd.solve(fam, n=8, beta=1.0, gamma0=0.0, t=[1.0], params={"k": 1.0})
    with pytest.raises(ValueError, match="c must be finite"):
        sd.solve(fam, n=8, beta=1.0, gamma0=0.0, t=[1.0], params={"c": float("nan")})
    with pytest.raises(ValueError, match="speed.*t = 0.5"):     # 1 - 2 t reaches 0 at t = 1/2
        sd.solve(fam, n=8, beta=1.0, gamma0=0.0, t=[1.0], params={"c": [0.0, -2.0]})
    with pytest.raises(ValueError, match="do not broadcast"):
        sd.solve(fam, n=[4, 8], beta=1.0, gamma0=0.0, t=[1.0], params={"c": [0.0, 1.0, 2.0]})
    with pytest.raises(ValueError, match="not a parameter of post-ln"):
        sd.solve("post-ln", n=8, beta=1.0, gamma0=0.0, t=[1.0], params={"c": 1.0})


def test_simulate_takes_parameter_values():
    fam = damped()
    X0 = sd.init.equiangular(8, 8, 0.0, seed=1)
    for c in (0.0, 0.7):
        tr = sd.solve(fam, n=8, beta=1.0, gamma0=0.0, t=[1.0, 3.0], params={"c": c})
        sim = sd.simulate(fam, X0, beta=1.0, t=[1.0, 3.0], params={"c": c})
        assert abs(sim.gamma - tr.gamma).max() < 1e-9
    other = sd.simulate(fam, X0, beta=1.0, t=[1.0, 3.0], params={"c": 2.0})   # negative control
    assert abs(other.gamma[0] - tr.gamma[0]) > 1e-2
    with pytest.raises(ValueError, match="^c:"):
        sd.simulate(fam, X0, beta=1.0, t=[1.0], params={"c": [0.1, 0.2]})


def test_parameters_have_their_own_namespace():
    # Issue 25, item 4: a parameter may be named like a run option (rtol), a
    # mistyped option is named as an option, and the old way still works once
    # with a DeprecationWarning.
    fam = sd.custom_scheme("tolerant", speed="1 + rtol*t", params={"rtol": 0.5})
    tr = sd.solve(fam, n=8, beta=1.0, gamma0=0.0, t=[2.0], params={"rtol": 2.0}, rtol=1e-10)
    ref = sd.solve(fam.bind(rtol=2.0), n=8, beta=1.0, gamma0=0.0, t=[2.0], rtol=1e-10)
    assert tr.gamma[-1] == ref.gamma[-1]
    X0 = sd.init.equiangular(8, 8, 0.0, seed=1)
    with pytest.raises(ValueError, match=r"^save_X: not an argument of simulate "
                                         r"\(did you mean 'save_x'\?\)"):
        sd.simulate("post-ln", X0, beta=1.0, t=[1.0], save_X=True)
    with pytest.raises(ValueError, match=r"^rtoll: not an argument of solve "
                                         r"\(did you mean 'rtol'\?\)"):
        sd.solve("post-ln", n=8, beta=1.0, gamma0=0.0, t=[1.0], rtoll=1e-8)
    with pytest.raises(ValueError, match=r"^qqq: not an argument of solve; its arguments"):
        sd.solve("post-ln", n=8, beta=1.0, gamma0=0.0, t=[1.0], qqq=1)   # nothing close
    fam = damped()
    with pytest.warns(DeprecationWarning, match="params="):
        old = sd.solve(fam, n=8, beta=1.0, gamma0=0.0, t=[1.0], c=0.7)
    new = sd.solve(fam, n=8, beta=1.0, gamma0=0.0, t=[1.0], params={"c": 0.7})
    assert old.gamma[-1] == new.gamma[-1]
    with pytest.raises(ValueError, match="given twice"):
        sd.solve(fam, n=8, beta=1.0, gamma0=0.0, t=[1.0], params={"c": 0.7}, c=0.7)
