"""DOP853's continuous extension of order 6 from the step's own 13 evaluations.

A step of :mod:`symdyn.ode.dop853` evaluates twelve stages and, for the next
step, :math:`k_{12} = f(t_0 + h, y_1)`: thirteen stages with
:math:`c_{12} = 1` and :math:`a_{12,j} = b_j`. A continuous extension
:math:`u(\\theta) = y_0 + h\\sum_j b_j(\\theta) k_j` on them has order 6
where the conditions of the 37 trees of at most 6 vertices hold
(:mod:`symdyn.ode.trees`). For DOP853's table they have rank 12 and are
consistent for every :math:`\\theta`: one free direction :math:`v`
remains. It is spent on the error, :math:`\\alpha(\\theta)` minimising the
weighted residuals of the 48 trees of order 7 (their coefficients in the
local error, :math:`(\\sum_j b_j(\\theta)\\Phi_j(\\tau) -
\\theta^7/\\gamma(\\tau))/\\sigma(\\tau)`), which makes
:math:`b(\\theta)` a polynomial of degree 7 with :math:`b(0) = 0`,
:math:`b(1) = b`. No evaluation beyond the step's (Hairer's ``contd8``, of
order 7, takes three more per step).

The driver reads steps held by stability from it (Hairer's :math:`h\\lambda`
above :data:`symdyn.ode.methods.DENSE_EDGE`): on a decaying mode
:math:`e^{z\\theta}` it is never further than ``contd8`` and, from
:math:`z = -4` on, within 2x the step's own error up to and past DOP853's
stability limit (``contd8``: 10-20x; ``tests/ode/test_dense.py``). Elsewhere
``contd8`` is the default: on smooth nonlinear problems this extension's
error between the step ends is 2-23x larger (``benchmarks/output_accuracy.py``),
so it serves every step only on request (``dense_output="order6"``).

:data:`ROWS` gives it in the nested form of :func:`symdyn.ode.methods.interpolate`:
:math:`u(x) = y_0 + x(F_0 + (1-x)(F_1 + x(F_2 + \\dots)))` with
:math:`F_0 = y_1 - y_0` and :math:`F_i = h\\sum_j` ``ROWS[i-1, j]`` :math:`k_j`.

Layer 1, ode.
"""

from __future__ import annotations

import numpy as np

from . import dop853
from .trees import density, elementary_weights, size, symmetry, trees

ORDER = 6
DEGREE = 7
STAGES = dop853.N_STAGES + 1
#: An order condition holds to rounding: the weights reach 2e4 (they cancel
#: across stages), so their sums carry about 1e-12.
HOLDS = 1e-10


def stage_matrix() -> np.ndarray:
    """DOP853's 12 stages and the evaluation at the step's end, ``(13, 13)``."""
    A = np.zeros((STAGES, STAGES))
    A[:-1, :-1] = dop853.A
    A[-1, :-1] = dop853.B
    return A


def _conditions(A: np.ndarray, order: int) -> tuple:
    """The order conditions of at most ``order`` vertices: the matrix of
    elementary weights (trees x stages) and, per power ``k`` of theta, the
    right-hand side (``1/gamma`` for the trees of ``k`` vertices, else 0)."""
    low = [t for p in range(1, order + 1) for t in trees(p)]
    M = np.array([elementary_weights(t, A) for t in low])
    return M, lambda k: np.array([1.0 / density(t) if size(t) == k else 0.0 for t in low])


def monomial_weights(A: np.ndarray | None = None, order: int = ORDER) -> np.ndarray:
    """``beta`` (``(DEGREE, stages)``): :math:`b(\\theta) = \\sum_k \\theta^{k+1}`
    ``beta[k]``, of the given order, its free directions spent on the next
    order's weighted residuals. Raises ``ArithmeticError`` if the conditions
    leave no free direction or are inconsistent."""
    A = stage_matrix() if A is None else A
    M, rhs_of = _conditions(A, order)
    _, s, vt = np.linalg.svd(M)
    rank = int(np.sum(s > 1e-10 * s[0]))
    if rank == M.shape[1]:
        raise ArithmeticError(f"no free direction for order {order}")
    free = vt[rank:]                                   # the null space's basis
    pinv = np.linalg.pinv(M, rcond=1e-10)
    beta = np.zeros((DEGREE, len(A)))
    for k in range(1, order + 1):               # theta^k: the trees of order k
        rhs = rhs_of(k)
        beta[k - 1] = pinv @ rhs
        if np.abs(M @ beta[k - 1] - rhs).max() > HOLDS:
            raise ArithmeticError(f"the order-{order} conditions are inconsistent")
    nxt = trees(order + 1)
    w = np.array([1.0 / symmetry(t) for t in nxt])
    P = w[:, None] * np.array([elementary_weights(t, A) for t in nxt])   # weighted
    target = w * np.array([1.0 / density(t) for t in nxt])             # times theta^(p+1)
    G = P @ free.T                           # the free directions' residuals
    for k in range(DEGREE):
        # least squares in the free directions of (P beta_k - [k = p+1] target)
        r = P @ beta[k] - (target if k == order else 0.0)
        beta[k] -= free.T @ np.linalg.lstsq(G, r, rcond=None)[0]
    return beta


def ending_on(beta: np.ndarray, b: np.ndarray, A: np.ndarray | None = None,
              order: int = ORDER) -> np.ndarray:
    """``beta`` with :math:`b(1) = b` to rounding: the difference (1e-9, the
    conditioning of the free direction) added to the top degree; it lies in
    the free direction, so the order conditions keep holding (checked)."""
    A = stage_matrix() if A is None else A
    out = beta.copy()
    out[-1] += b - beta.sum(axis=0)
    M, rhs_of = _conditions(A, order)
    for k in range(DEGREE):
        if np.abs(M @ out[k] - rhs_of(k + 1)).max() > HOLDS:
            raise ArithmeticError("the extension's end leaves the order conditions")
    return out


def nested_rows(beta: np.ndarray) -> np.ndarray:
    """``beta`` in the basis :math:`x, x(1-x), x^2(1-x), x^2(1-x)^2, \\dots,
    x^4(1-x)^3` of :func:`~symdyn.ode.methods.interpolate`: ``(DEGREE, stages)``."""
    basis = np.zeros((DEGREE, DEGREE))           # basis[i, k]: coefficient of x^(k+1)
    poly = np.polynomial.polynomial
    for i in range(DEGREE):
        c = poly.polymul(poly.polypow([0, 1], (i + 2) // 2), poly.polypow([1, -1], (i + 1) // 2))
        basis[i, :len(c) - 1] = c[1:]
    return np.linalg.solve(basis.T, beta)


#: :math:`F_{1..6}` per stage (``F_0 = y_1 - y_0``).
ROWS = nested_rows(ending_on(monomial_weights(), np.append(dop853.B, 0.0)))[1:]
