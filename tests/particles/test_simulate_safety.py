"""Hardening of the simulator (issue 11): bad input is refused by name, a law that
breaks down is an error with its time, sizes are checked before allocation."""

import os
import re

import numpy as np
import pytest
import sympy as sp

import symdyn as sd
from symdyn.model.scheme import Scheme
from symdyn.model.symbols import A_norm as A_NORM
from symdyn.model.symbols import t as T

X0 = sd.init.equiangular(6, 6, 0.0, seed=1)


def run(scheme="post-ln", X=X0, beta=1.0, t=(1.0,), **kwargs):
    return sd.simulate(scheme, X, beta, list(t), **kwargs)


# Laws built as Scheme objects: sd.custom_scheme and sd.scheme refuse these where a
# witness shows it, but a law in r, a, A_norm can still fail on the way.
def on_sphere(name, speed, **kwargs):
    return Scheme(name, sp.sympify(speed), sp.Integer(0), sp.oo, **kwargs)


# --- tolerances ------------------------------------------------------------------

@pytest.mark.parametrize("name", ["rtol", "atol"])
@pytest.mark.parametrize("value", [-1, 0, 1, np.nan, np.inf, "1e-8", 1e-8j, [1e-8]])
def test_tolerances_are_checked(name, value):
    with pytest.raises(ValueError, match=rf"{name}.*\(0, 1\)"):
        run(**{name: value})


def test_tolerance_none_is_the_default():
    a, b = run(t=[5.0], rtol=None, atol=None), run(t=[5.0], rtol=1e-10, atol=1e-12)
    assert np.array_equal(a.gamma, b.gamma)


def test_valid_tolerances_agree_with_solve():
    # atol=-1 gave gamma(50) = 0.72; the reduced ODE says 1 to 1e-10.
    sim = run(t=[10.0, 50.0], rtol=np.float32(1e-9), atol=1e-12)
    tr = sd.solve("post-ln", n=6, beta=1.0, gamma0=0.0, t=[10.0, 50.0])
    assert np.abs(sim.gamma - tr.gamma).max() < 1e-8
    assert tr.gamma[-1] > 1 - 1e-10


# --- layer count and step ----------------------------------------------------------

@pytest.mark.parametrize("step, count", [(1e-300, "1e+300"), (1e-12, "1e+12")])
def test_absurd_layer_counts_are_refused_before_the_loop(step, count):
    with pytest.raises(ValueError, match=rf"step.*{re.escape(count)} layers"):
        run(t=[1.0], step=step)


def test_a_step_too_large_names_the_step_and_the_layer():
    # Raw tokens, x <- x + h A(x) with A of the size of x: |x| ~ 1e100 after layer 1,
    # ~1e200 after layer 2, and layer 3's scores beta |x|^2 overflow.
    h = 1e100
    one = run("none", t=[h], step=h)
    assert np.all(np.isfinite(one.speed)) and 1e99 < one.r.min()
    with pytest.raises(ArithmeticError, match=r"layer 3 .*step = 1e\+100"):
        run("none", t=[5 * h], step=h)


def test_output_times_on_one_layer_are_refused():
    # Both round to layer 10: one of them was returned uninitialised.
    with pytest.raises(ValueError, match="same layer"):
        run(t=[1.0, 1.0 + 1e-12], step=0.1)


# --- radial laws through r = 0 -------------------------------------------------------

FALL = sd.custom_scheme("fall", speed="1", radial="-1")          # r = 1 - t
DIVE = sd.custom_scheme("dive", speed="1", radial="-r - 1")      # r = 2 exp(-t) - 1


@pytest.mark.parametrize("scheme, zero", [(FALL, 1.0), (DIVE, np.log(2))])
def test_radial_law_through_zero_is_an_error(scheme, zero):
    with pytest.raises(ArithmeticError, match=rf"radial.*{re.escape(str(scheme.radial))}") as e:
        run(scheme, t=[0.5, 3.0])
    assert abs(float(re.search(r"at t = ([-+.e\d]+)", str(e.value))[1]) - zero) < 1e-6
    with pytest.raises(ArithmeticError, match=r"radial.*t = 0\.7\b"):
        run(DIVE, t=[0.5, 3.0], step=0.1)   # r_k = 2 (0.9)^k - 1 < 0 first at k = 7


def test_radial_law_that_stays_positive_runs():
    shrink = sd.custom_scheme("shrink", speed="1", radial="-r")  # r = exp(-t)
    for step, r3 in [(None, np.exp(-3.0)), (0.1, 0.9**30)]:
        sim = run(shrink, t=[3.0], step=step)
        assert np.allclose(sim.r, r3, rtol=1e-8)


# --- speed laws -------------------------------------------------------------------------

@pytest.mark.parametrize("step", [None, 0.1])
def test_undefined_speed_law_is_refused(step):
    with pytest.raises(ValueError, match="alpha.*concrete"):
        run(sd.scheme("ngpt", alpha="alpha(t)"), step=step)
    odd = on_sphere("odd", sp.Function("f")(T))
    with pytest.raises(ValueError, match="speed.*concrete"):
        run(odd, step=step)


@pytest.mark.parametrize("scheme, zero", [
    (on_sphere("brake", 1 - T / 2), 2.0),
    (on_sphere("ngpt", A_NORM / (1 - T), params=(("alpha", 1 - T),),
               layer=sd.scheme("ngpt").layer), 1.0),
    (on_sphere("late", T), 0.0),
], ids=str)
@pytest.mark.parametrize("step", [None, 0.1])
def test_speed_law_not_positive_is_an_error(scheme, zero, step):
    with pytest.raises(ArithmeticError, match="speed") as e:
        run(scheme, t=[0.0, 0.5, 3.0], step=step)
    assert abs(float(re.search(r"at t = ([-+.e\d]+)", str(e.value))[1]) - zero) < 0.11


@pytest.mark.parametrize("step", [None, 0.1])
def test_speed_law_positive_up_to_the_last_time_runs(step):
    # 2 - t vanishes at t = 2 only: up to t = 1.5 the reduced ODE is the oracle.
    brake = on_sphere("brake", 2 - T)
    sim = run(brake, t=[0.5, 1.5], step=step)
    tr = sd.solve(brake, n=6, beta=1.0, gamma0=0.0, t=[0.5, 1.5])
    assert np.abs(sim.gamma - tr.gamma).max() < (1e-8 if step is None else 0.05)


# --- types and complex numbers ------------------------------------------------------------

ZJ = np.eye(6) + 0j


@pytest.mark.parametrize("kwargs, culprit", [
    (dict(X=X0 + 0j), "X0"),
    (dict(beta=1 + 1j), "beta"),
    (dict(t=[1 + 0j]), "t"),
    (dict(step=0.1 + 0j), "step"),
    (dict(step="x"), "step"),
    (dict(step=[0.1]), "step"),
    (dict(cluster_threshold="0.5"), "cluster_threshold"),
    (dict(cluster_threshold=None), "cluster_threshold"),
    (dict(save_x="yes"), "save_x"),
    (dict(attention=["softmax"]), "attention"),
    (dict(scheme=["post-ln"]), "scheme"),
])
def test_wrong_types_are_named(kwargs, culprit):
    with pytest.raises(ValueError, match=culprit):
        run(**kwargs)


def test_numpy_scalars_are_accepted():
    X = sd.init.equiangular(np.int64(6), np.int64(6), np.float32(0.5), r0=np.float64(2.0),
                            seed=np.int64(1))
    assert np.array_equal(X, sd.init.equiangular(6, 6, float(np.float32(0.5)), r0=2.0, seed=1))
    w = sd.weights.kaiming(np.int64(6), heads=np.int64(2), seed=np.int64(3),
                           std=np.float32(0.5))
    args = dict(weights=w, step=np.float64(0.25), t=[np.float32(1.0)])
    a = run(X=X, beta=np.float32(0.9), cluster_threshold=np.float32(0.9), save_x=np.True_,
            **args)
    b = run(X=X, beta=float(np.float32(0.9)), cluster_threshold=float(np.float32(0.9)),
            save_x=True, **args)
    assert np.array_equal(a.X, b.X) and a.cluster_threshold == b.cluster_threshold


# --- sizes -----------------------------------------------------------------------------------

TOTAL = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")


def test_attention_workspace_is_estimated_before_allocation():
    n = 2000                                  # batch x n x n scores beyond the machine
    batch = TOTAL // (8 * n * n) + 1
    X = np.broadcast_to(sd.init.sphere(n, 3, seed=0), (batch, n, 3))
    with pytest.raises(ValueError, match="GiB"):
        run(X=X)


def test_saved_tokens_are_estimated_before_allocation():
    K = 5_000                                 # K x n x d saved tokens beyond the machine
    d = TOTAL // (8 * 2 * K) + 1
    X = sd.init.sphere(2, d, seed=0)
    with pytest.raises(ValueError, match="save_x.*GiB"):
        run(X=X, t=np.arange(K) * 1e-3, save_x=True)
