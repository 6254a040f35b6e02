"""Rooted trees and the order conditions of Runge-Kutta methods (Butcher).

A tree is the sorted tuple of its children's trees; the single vertex is
``()``. For a method with stage matrix :math:`A` the elementary weights are
:math:`\\Phi_i(\\bullet) = 1` and :math:`\\Phi_i([\\tau_1, \\dots, \\tau_m]) =
\\prod_k (A\\,\\Phi(\\tau_k))_i`. Weights :math:`b` have order :math:`p` where
:math:`\\sum_i b_i \\Phi_i(\\tau) = 1/\\gamma(\\tau)` for every tree of at most
:math:`p` vertices; weights :math:`b(\\theta)` of a continuous extension where
:math:`\\sum_i b_i(\\theta) \\Phi_i(\\tau) = \\theta^{|\\tau|}/\\gamma(\\tau)`. The
step's error is :math:`\\sum_\\tau \\frac{h^{|\\tau|}}{\\sigma(\\tau)}
(\\sum_i b_i \\Phi_i(\\tau) - \\theta^{|\\tau|}/\\gamma(\\tau)) F(\\tau)(y_0)` over
the trees past the order (Hairer, Norsett & Wanner, *Solving Ordinary
Differential Equations I*, II.2 and II.6).

Layer 1, ode.
"""

from __future__ import annotations

import math
from collections import Counter
from functools import cache
from typing import Any

import numpy as np


def _grafts(tree: Any) -> Any:
    """Every tree made by adding one leaf to ``tree``."""
    yield tuple(sorted((*tree, ())))
    for i, child in enumerate(tree):
        for g in _grafts(child):
            yield tuple(sorted((*tree[:i], g, *tree[i + 1:])))


@cache
def trees(order: int) -> tuple:
    """The rooted trees of ``order`` vertices (1, 1, 2, 4, 9, 20, 48, ...): each
    tree of order ``p`` is one of order ``p - 1`` with a leaf added."""
    if order < 1:
        raise ValueError(f"order must be >= 1, got {order}")
    if order == 1:
        return ((),)
    return tuple(sorted({g for t in trees(order - 1) for g in _grafts(t)}))


def size(tree: Any) -> int:
    """:math:`|\\tau|`, the number of vertices."""
    return 1 + sum(size(c) for c in tree)


def density(tree: Any) -> int:
    """:math:`\\gamma(\\tau) = |\\tau| \\prod_k \\gamma(\\tau_k)`."""
    return size(tree) * math.prod(density(c) for c in tree)


def symmetry(tree: Any) -> int:
    """:math:`\\sigma(\\tau) = \\prod_c m_c!\\, \\sigma(c)^{m_c}` over the distinct
    children ``c`` (each ``m_c`` times)."""
    return math.prod(math.factorial(m) * symmetry(c) ** m for c, m in Counter(tree).items())


def elementary_weights(tree: Any, A: np.ndarray) -> np.ndarray:
    """:math:`\\Phi(\\tau)` per stage of the stage matrix ``A``."""
    out = np.ones(len(A))
    for child in tree:
        out = out * (A @ elementary_weights(child, A))
    return out
