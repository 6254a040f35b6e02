"""DeepNorm and LayerNorm Scaling: two schemes from the literature, one entry module each.

The witness for each derived law (docs/model.md, section 2) is the paper's
literal layer update run by the simulator at small steps ``h``: its gamma
must converge to the solution of the derived reduced ODE at first order in
``h`` (the error halves with ``h``; Richardson's extrapolation agrees to
~1e-6). Negative controls: the same layers against a law that drops one
ingredient of the derivation (DeepNorm's alpha, LN-Scaling's temperature).
"""

from pathlib import Path

import numpy as np
import pytest
import sympy as sp

import symdyn as sd
from symdyn.model.symbols import C, beta, n, t

NEW = ("deepnorm", "ln-scaling")
TIMES = np.array([0.5, 1.0, 2.0])
STEPS = (2e-3, 1e-3)


def _layers_error(scheme, oracle, h, n_tokens=8, d=8, b=2.0):
    X0 = sd.init.equiangular(n_tokens, d, 0.0, seed=3)
    sim = sd.simulate(scheme, X0, beta=b, t=np.concatenate([[0.0], TIMES]), step=h)
    return sim.gamma[1:].ravel() - oracle.gamma.ravel()


@pytest.mark.parametrize("name", NEW)
def test_listed_and_named_in_one_library_file(name):
    assert name in sd.schemes()
    root = Path(sd.__file__).parent
    holders = [f for f in root.rglob("*.py") if f'"{name}"' in f.read_text()]
    assert [f.name for f in holders] == [name.replace("-", "_") + ".py"]


@pytest.mark.parametrize("name", NEW)
def test_literal_layers_converge_to_the_derived_ode(name):
    tr = sd.solve(name, n=8, beta=2.0, gamma0=0.0, t=TIMES, rtol=1e-12)
    coarse, fine = (_layers_error(name, tr, h) for h in STEPS)
    order = np.log2(np.abs(coarse) / np.abs(fine))
    assert np.all(np.abs(order - 1) < 0.05), order             # first order in h
    assert np.abs(fine).max() < 5e-4
    assert np.abs(2 * fine - coarse).max() < 5e-7               # Richardson: O(h^2)


def test_deepnorm_without_alpha_is_another_network():
    # negative control: Post-LN's law (alpha dropped) against DeepNorm's layers
    wrong = sd.solve("post-ln", n=8, beta=2.0, gamma0=0.0, t=TIMES, rtol=1e-12)
    fine = _layers_error("deepnorm", wrong, STEPS[1])
    assert np.abs(fine).max() > 100 * 5e-4


def test_ln_scaling_needs_its_temperature_law():
    # negative control: LN-Scaling's speed and radial laws at the plain beta
    wrong = sd.custom_scheme("no-tau", speed="r*sqrt(1 + t)", radial="a/sqrt(1 + t)")
    tr = sd.solve(wrong, n=8, beta=2.0, gamma0=0.0, t=TIMES, rtol=1e-12)
    fine = _layers_error("ln-scaling", tr, STEPS[1])
    assert np.abs(fine).max() > 20 * 5e-4


def test_deepnorm_is_post_ln_on_a_slower_clock():
    for layers in (1, 12, 1000):
        s = sd.scheme("deepnorm", layers=layers)
        alpha = (2 * sp.Integer(layers)) ** sp.Rational(1, 4)
        assert sp.simplify(s.speed - alpha) == 0
        v0 = sd.initial_velocity(s) * alpha - sd.initial_velocity("post-ln")
        assert sp.simplify(v0) == 0
        term = sd.terminal(s)
        assert term.law == "exponential"
        assert sp.simplify(term.epsilon - C * sp.exp(-2 * t / alpha)) == 0
    tr = sd.solve("deepnorm", n=8, beta=1.0, gamma0=0.0, t=TIMES * 24 ** 0.25)
    post = sd.solve("post-ln", n=8, beta=1.0, gamma0=0.0, t=TIMES)
    assert np.abs(tr.log_epsilon - post.log_epsilon).max() < 1e-9


def test_ln_scaling_laws():
    s = sd.scheme("ln-scaling")
    assert s.tempered and sp.simplify(s.temperature - 1 / (1 + t)) == 0
    # at t = 0 the temperature is 1: the initial velocity is Pre-LN's
    assert sp.simplify(sd.initial_velocity(s) - sd.initial_velocity("pre-ln")) == 0
    assert sp.simplify(sd.initial_velocity(s) - 2 / (n - 1 + sp.exp(beta))) == 0
    term = sd.terminal(s)                       # r ~ 2 sqrt(t), s ~ 2t: 1 - gamma ~ C/t
    assert term.law == "polynomial" and sp.simplify(term.epsilon - C / t) == 0


def test_parameters_are_checked():
    with pytest.raises(ValueError, match=r"layers must be an integer >= 1"):
        sd.scheme("deepnorm", layers=0)
    with pytest.raises(ValueError, match=r"takes no parameter\(s\) \['alpha'\]"):
        sd.scheme("deepnorm", alpha=2)
    with pytest.raises(ValueError, match=r"takes no parameter"):
        sd.scheme("ln-scaling", layers=3)
    assert sd.scheme("deepnorm").citation.endswith("arXiv:2203.00555")
    assert sd.scheme("ln-scaling").citation.endswith("arXiv:2502.05795")


def test_derivation_shows_the_temperature_law_when_there_is_one():
    rows = dict(sd.derive("ln-scaling").rows())
    assert rows["temperature tau (attention at beta*tau)"] == "1/(t + 1)"
    assert not any(k.startswith("temperature") for k, _ in sd.derive("pre-ln").rows())


def test_deepnorm_layers_may_stay_a_symbol():
    N = sp.Symbol("N", positive=True, integer=True)
    s = sd.scheme("deepnorm", layers="N")
    assert s.symbols == (N,) and s.defaults == {"N": 12.0}
    assert sp.simplify(s.speed - (2 * N) ** sp.Rational(1, 4)) == 0
    # oracle: DeepNorm is Post-LN slowed by alpha = (2N)^(1/4), in every derived formula
    d, post = sd.derive(s), sd.derive("post-ln")
    alpha = (2 * N) ** sp.Rational(1, 4)
    assert sp.simplify(d.initial_velocity - post.initial_velocity / alpha) == 0
    assert d.terminal.law == "exponential"
    assert sp.simplify(d.terminal.rate - post.terminal.rate / alpha) == 0
    # second path: the symbol at 48 is the scheme built at 48
    assert sp.simplify(d.initial_velocity.subs(N, 48)
                       - sd.derive(sd.scheme("deepnorm", layers=48)).initial_velocity) == 0
    assert dict(s.bind(N=48).params) == {"layers": 48}
    # runs: N is a free parameter, a batch axis, integer-checked
    t = [1.0, 3.0]
    tr = sd.solve(s, n=8, beta=1.0, gamma0=0.0, t=t, params={"N": [6, 1000]})
    for row, layers in zip(tr.gamma, (6, 1000), strict=True):
        one = sd.solve(sd.scheme("deepnorm", layers=layers), n=8, beta=1.0, gamma0=0.0, t=t)
        assert np.allclose(row, one.gamma, rtol=1e-9, atol=0)
    assert not np.allclose(tr.gamma[0], tr.gamma[1])          # control: N matters
    with pytest.raises(ValueError, match=r"N must be an integer"):
        sd.solve(s, n=8, beta=1.0, gamma0=0.0, t=t, params={"N": [6, 2.5]})
    with pytest.raises(ValueError, match=r"N must be an integer"):
        s.bind(N=2.5)


@pytest.mark.parametrize("bad", [2.5, True, "2.5", "L", "N + 1", 0, "0"])
def test_deepnorm_layers_are_an_integer_or_the_symbol(bad):
    with pytest.raises(ValueError, match=r"^layers.*integer >= 1"):
        sd.scheme("deepnorm", layers=bad)


def test_deepnorm_layers_as_text_and_integral_floats():
    # control of the refusals above: what is an integer is accepted, text by the safe parser
    assert dict(sd.scheme("deepnorm", layers="48").params) == {"layers": 48}
    assert dict(sd.scheme("deepnorm", layers=12.0).params) == {"layers": 12}


def test_mix_ln_switch_may_stay_a_symbol():
    s = sd.scheme("mix-ln", t_switch="t_switch")
    assert s.defaults == {"t_switch": 1.0}
    assert sp.simplify(sd.initial_velocity(s) - sd.initial_velocity("post-ln")) == 0
    assert sd.terminal(s).law == sd.terminal("pre-ln").law == "polynomial"
    with pytest.raises(ValueError, match=r"^t_switch: cannot evaluate condition t < t_switch"):
        sd.solve(s, n=8, beta=1.0, gamma0=0.0, t=[1.0])
    bound = s.bind(t_switch=0.5)                  # what simulate runs
    assert dict(bound.params) == {"t_switch": sp.Rational(1, 2)}
    tr = sd.solve(bound, n=8, beta=1.0, gamma0=0.0, t=[0.25, 2.0])
    one = sd.solve(sd.scheme("mix-ln", t_switch=0.5), n=8, beta=1.0, gamma0=0.0, t=[0.25, 2.0])
    assert np.allclose(tr.gamma, one.gamma, rtol=1e-12)


def test_derive_and_table_state_the_parameters_in_a_caption():
    d = sd.derive(sd.scheme("deepnorm", layers=48))
    assert str(d).splitlines()[0] == "deepnorm (softmax attention; N = 48)"
    assert r"\footnotesize Parameters: DeepNorm $N = 48$.} \\" in d.latex_table()
    # the formulas are those of N = 48: alpha = 96^(1/4)
    assert sp.simplify(d.scheme.speed - sp.Integer(96) ** sp.Rational(1, 4)) == 0
    tex = sd.table(format="latex")
    assert r"DeepNorm $N = 12$" in tex.splitlines()[-2] and "Mix-LN" in tex.splitlines()[-2]
    two = sd.table([sd.scheme("deepnorm", layers=6), sd.scheme("deepnorm", layers="N")],
                   format="latex", columns=["speed"])
    assert r"DeepNorm ($N = 6$) &" in two and r"DeepNorm ($N$) & $\sqrt[4]{2} \sqrt[4]{N}$" in two
    # control: a scheme without parameters has no caption line
    assert "Parameters" not in sd.derive("post-ln").latex_table()
    assert "Parameters" not in sd.table("post-ln", format="latex")
    assert str(sd.derive("post-ln")).splitlines()[0] == "post-ln (softmax attention)"
