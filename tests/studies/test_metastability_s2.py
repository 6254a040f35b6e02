"""The S^2 prediction of the first clusters (issue 38 item 3, optional part).

* ``fastest_degree`` against an independent Funk-Hecke computation: on S^2
  the kernel e^{beta t} has Legendre coefficients proportional to the
  modified spherical Bessel function i_l(beta), so the fastest degree is the
  argmax of l (l + 1) i_l(beta). Control: the circle's k* differs from it
  (beta = 4: 3 against 2).
* ``pattern_maxima`` against closed forms: the degree-1 pattern is the linear
  function <x, sum x_i> (one maximum), the degree-2 one a traceless quadratic
  form (two maxima, +-its top eigenvector). Control: a degree-5 pattern of a
  random start has more than two.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.special import spherical_in

from symdyn.studies import metastability as ms


@pytest.mark.parametrize("beta", [4.0, 8.0, 16.0, 32.0, 64.0, 100.0])
def test_fastest_degree_is_the_funk_hecke_argmax(beta):
    ls = np.arange(1, 60)
    with np.errstate(over="ignore"):
        rate = ls * (ls + 1) * spherical_in(ls, beta)
    assert ms.fastest_degree(beta) == ls[np.argmax(rate)]


def test_control_the_circle_mode_differs():
    assert ms.fastest_mode(4.0) == 3 and ms.fastest_degree(4.0) == 2
    assert ms.fastest_degree(4.0, d=2) == ms.fastest_mode(4.0)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_pattern_maxima_of_degrees_one_and_two(seed):
    X0 = ms.uniform_sphere(50, [seed])[0]
    assert ms.pattern_maxima(X0, 1) == 1
    assert ms.pattern_maxima(X0, 2) == 2
    assert ms.pattern_maxima(X0, 5) > 2              # control


def test_pattern_maxima_refuses_other_shapes():
    with pytest.raises(ValueError, match="X0"):
        ms.pattern_maxima(np.ones((4, 2)), 2)
    with pytest.raises(ValueError, match="degree"):
        ms.pattern_maxima(np.ones((4, 3)), 0)
