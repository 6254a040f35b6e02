"""Adding a built-in scheme is one Entry (a module of symdyn/model/schemes/).

The test registers "half-ln" (Post-LN at half speed: s = 2 on the sphere,
layer x <- N(x + h A(x) / 2)) and follows it through the derivation, the
solver, the simulator (continuous and layer by layer) and the claim lists of
proofs_check, against oracles that need no symdyn internals: a clock change
of Post-LN (gamma_half(t) = gamma_post(t/2)) and Post-LN's layers at step h/2.
"""

import numpy as np
import pytest
import sympy as sp

import symdyn as sd
from symdyn.model.entry import Entry, Style
from symdyn.model.registry import BUILTINS
from symdyn.model.scheme import LayerRule, Scheme, unit
from symdyn.model.symbols import C, t
from symdyn.proofs_check import clustering, general_starts, symmetric, terminal_velocity


def _half_ln_rule(s, x, h, tk, A, field):           # x <- N(x + h A(x) / 2)
    return unit(x + h * A(x) / 2)


def _half_ln():
    return Scheme("half-ln", sp.Integer(2), sp.Integer(0), sp.oo,
                  layer=LayerRule("half-ln", _half_ln_rule))


@pytest.fixture
def half_ln(monkeypatch):
    entry = Entry("half-ln", _half_ln, Style("#000000", "-", "half-LN"), "this test", order=99)
    monkeypatch.setitem(BUILTINS, "half-ln", entry)
    return "half-ln"


def test_registered_scheme_is_listed_and_derived(half_ln):
    assert half_ln in sd.schemes()
    red = sd.reduce(half_ln)
    assert sp.simplify(red.gamma_dot - sd.reduce("post-ln").gamma_dot / 2) == 0
    term = sd.terminal(half_ln)
    assert term.law == "exponential" and sp.simplify(term.epsilon - C * sp.exp(-t)) == 0


def test_registered_scheme_solves_and_simulates(half_ln):
    times = np.array([0.5, 2.0, 6.0])
    tr = sd.solve(half_ln, n=8, beta=1.0, gamma0=0.0, t=times)
    post = sd.solve("post-ln", n=8, beta=1.0, gamma0=0.0, t=times / 2)
    assert np.abs(tr.log_epsilon - post.log_epsilon).max() < 1e-9
    X0 = sd.init.equiangular(8, 8, 0.0, seed=3)
    sim = sd.simulate(half_ln, X0, beta=1.0, t=times)
    assert np.abs(sim.gamma - tr.gamma).max() < 1e-8
    layers = sd.simulate(half_ln, X0, beta=1.0, t=[0.0, 2.0], step=0.1)
    post_layers = sd.simulate("post-ln", X0, beta=1.0, t=[0.0, 1.0], step=0.05)
    assert np.abs(layers.gamma - post_layers.gamma).max() < 1e-12
    # negative control: Post-LN's own layers at step h are another network
    other = sd.simulate("post-ln", X0, beta=1.0, t=[0.0, 2.0], step=0.1)
    assert np.abs(layers.gamma[-1] - other.gamma[-1]) > 1e-3


def test_registered_scheme_enters_every_claim_list(half_ln):
    assert clustering.on_sphere(half_ln)
    claims = {c[0]: c for c in general_starts.registered_claims()}
    assert claims[half_ln][1:3] == ("exponential", 1.0) and claims[half_ln][4] == "sphere"
    cases = {c[0]: c for c in terminal_velocity.cases()}
    label = f"{half_ln} (derived law)"
    assert label in cases
    res = terminal_velocity.check(claims=[cases[label]])
    assert res.verdict == "PASS", res.why()
    # negative control: Post-LN's law claimed for it fails the same check
    wrong = (label, cases[label][1], C * sp.exp(-2 * t), cases[label][3])
    assert terminal_velocity.check(claims=[wrong]).verdict == "FAIL"
    assert symmetric.check(quick=True, schemes=[half_ln]).verdict == "PASS"


def test_without_the_entry_the_scheme_is_unknown():
    assert "half-ln" not in sd.schemes()
    with pytest.raises(ValueError, match="unknown scheme 'half-ln'"):
        sd.scheme("half-ln")
