"""A custom scheme's reduced ODE is simplified as the built-ins' are (issue 48,
item 8): ``sqrt(r*A_norm)`` gave a nested root of nine terms under a root;
split (symdyn.model.powers), it reads ``P^(1/4) sqrt(Q)`` with Peri-LN's
``P``. Oracles: the unsplit expression at random points, Peri-LN's derived
polynomial; control: a split that is false in the domain is refused."""

from __future__ import annotations

import random

import sympy as sp

import symdyn as sd
from symdyn.model import powers
from symdyn.model.symbols import beta, gamma, n, r
from symdyn.reduced import equiangular


def _half_peri(name):
    return sd.custom_scheme(name, speed="sqrt(r*A_norm)", radial="a")


def _nested_roots(expr) -> list:
    """Non-integer powers whose base holds another non-integer power."""
    return [p for p in expr.atoms(sp.Pow) if not p.exp.is_Integer
            and any(not q.exp.is_Integer for q in p.base.atoms(sp.Pow))]


def test_custom_gamma_dot_is_split_and_equals_the_unsplit_one(monkeypatch):
    split = sd.reduce(_half_peri("half-peri-split")).gamma_dot
    monkeypatch.setattr(equiangular, "split_power", lambda f: f)    # the path before
    unsplit = sd.reduce(_half_peri("half-peri-unsplit")).gamma_dot
    assert len(_nested_roots(unsplit)) >= 1                          # the nested root
    assert _nested_roots(split) == []
    assert sp.count_ops(split) < sp.count_ops(unsplit)
    # equal at random points of the domain (n >= 2, gamma in (-1/(n-1), 1), r > 0)
    rng = random.Random(48)
    for _ in range(20):
        nn = rng.uniform(2, 200)
        at = {n: nn, beta: rng.uniform(0, 8), r: rng.uniform(0.1, 10),
              gamma: rng.uniform(-1 / (nn - 1), 1)}
        u, v = (complex(e.evalf(30, subs=at)) for e in (split, unsplit))
        assert abs(u.imag) < 1e-25 and abs(u - v) <= 1e-20 * abs(v), (at, u, v)


def test_the_split_reads_peri_lns_polynomial():
    # an independent oracle: Peri-LN's gamma_dot has denominator r sqrt(P); the custom
    # sqrt(r A_norm) has sqrt(r) sqrt(Q) P^(1/4), Q = (n - 1) e^(beta gamma) + e^beta
    split = sd.reduce(_half_peri("half-peri-oracle")).gamma_dot
    peri = sd.reduce("peri-ln").gamma_dot
    (P,) = [p.base for p in sp.fraction(peri)[1].atoms(sp.Pow) if p.exp == sp.Rational(1, 2)]
    Q = (n - 1) * sp.exp(beta * gamma) + sp.exp(beta)
    numer = sp.fraction(peri)[0]
    want = numer / (sp.sqrt(r) * sp.sqrt(Q) * P ** sp.Rational(1, 4))
    assert sp.simplify(split - want) == 0
    # the built-ins are as before (Peri-LN's law, printed by symdyn derive)
    assert str(peri) == ("-2*(gamma - 1)*(gamma*n - gamma + 1)*exp(beta*gamma)/(r*sqrt(2*gamma*"
                         "(n - 1)*exp(beta)*exp(beta*gamma) + (n - 1)*(gamma*n - 2*gamma + 1)*"
                         "exp(2*beta*gamma) + exp(2*beta)))")


def test_a_split_false_in_the_domain_is_refused():
    # control: sqrt((gamma - 2)(gamma - 3)) is not sqrt(gamma - 2) sqrt(gamma - 3) for
    # gamma < 2 (i * i = -1): the check at points of the domain catches it
    f = sp.sqrt((gamma - 2) * (gamma - 3))
    assert powers.split_formally(f) != f and not powers.equal_on_domain(f, powers.split_formally(f))
    assert powers.split_power(f) == f
    # and a true one is taken
    g = sp.sqrt(sp.exp(gamma) * (n + 1))
    assert powers.split_power(g) == sp.exp(gamma / 2) * sp.sqrt(n + 1)
