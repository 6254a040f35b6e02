"""Hostile input, round three (issue 34, item 5): inputs that were answered
wrongly, each now a ValueError naming the argument and what it may be, with
a control that the same call without the fault answers.

* Booleans are not coordinates: ``X0`` holding ``True`` (a list, a list of
  boolean arrays) is refused like ``t``, ``beta`` and object arrays are.
* A leading order of an expression that is not real (``sqrt(1 - n)``) is no
  order: refused, never a coefficient ``I``.
* Masks ignore case as scheme names do.
"""

from __future__ import annotations

import numpy as np
import pytest

import symdyn as sd

X_REAL = [[1.0, 0.5], [0.3, 0.9]]


@pytest.mark.parametrize("X0", [
    [[True, 0.5], [0.3, 0.9]],
    [[1.0, 0.5], [0.3, False]],
    [[[1.0, 0.5], [0.3, 0.9]], [[1.0, 0.5], [True, 0.9]]],
    [np.array([True, False]), np.array([0.3, 0.9])],
    np.array([[True, False], [False, True]]),
    np.array([[True, 0.5], [0.3, 0.9]], dtype=object),
], ids=["list", "last", "batch", "bool-rows", "bool-array", "object"])
def test_booleans_in_X0_are_refused(X0):
    with pytest.raises(ValueError, match=r"^X0: expected real.*booleans"):
        sd.simulate("post-ln", X0, beta=1.0, t=[1.0])


def test_control_the_same_tokens_as_numbers_run():
    # True read as 1.0 was the bug: the numbers it stood for give a result
    # (oracle: the cosine of the two unit tokens stays in [-1, 1] and grows)
    got = sd.simulate("post-ln", X_REAL, beta=1.0, t=[0.0, 1.0]).gamma
    x, y = (np.array(v) / np.linalg.norm(v) for v in X_REAL)
    assert got[0] == pytest.approx(x @ y, abs=1e-12)
    assert x @ y < got[1] <= 1


@pytest.mark.parametrize("text", ["sqrt(1 - n)", "(1 - n)**(1/3)", "n + sqrt(1 - n)",
                                  "sqrt(beta - n)"])
def test_leading_order_of_a_non_real_expression_is_refused(text):
    with pytest.raises(ValueError, match=r"^expr: .* is not real as n -> oo"):
        sd.leading_order(text)


@pytest.mark.parametrize("text, coefficient, exponent", [
    ("sqrt(n - 1)", 1, 0.5), ("-sqrt(n)", -1, 0.5), ("n - sqrt(n + 1)", 1, 1),
    ("sqrt(n - beta)", 1, 0.5)])
def test_control_real_expressions_keep_their_order(text, coefficient, exponent):
    lo = sd.leading_order(text)
    assert (lo.coefficient, float(lo.exponent)) == (coefficient, exponent)


@pytest.mark.parametrize("mask", ["Causal", "CAUSAL", "Full"])
def test_masks_ignore_case(mask):
    X0 = sd.init.sphere(4, 3, seed=0)
    got = sd.simulate("post-ln", X0, beta=1.0, t=[1.0], mask=mask).gamma
    ref = sd.simulate("post-ln", X0, beta=1.0, t=[1.0], mask=mask.lower()).gamma
    np.testing.assert_array_equal(got, ref)


def test_control_an_unknown_mask_is_refused_naming_the_masks():
    with pytest.raises(ValueError, match=r"^mask must be one of 'full', 'causal'"):
        sd.simulate("post-ln", X_REAL, beta=1.0, t=[1.0], mask="causl")
