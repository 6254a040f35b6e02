"""A linearly implicit step for stiff members: the Rosenbrock-W method ROS34PW2.

Rang & Angermann, "New Rosenbrock W-methods of order 3 for partial
differential algebraic equations of index 1", BIT 45 (2005), table of
ROS34PW2: four stages, order 3 with *any* matrix ``J`` in place of the
Jacobian (a W-method: a finite-difference or lagged Jacobian costs no
order), embedded order 2, L-stable and stiffly accurate. With
:math:`W = I - h\\gamma J` and :math:`f_t = \\partial f/\\partial t`:

.. math:: W k_i = h f\\Big(t + c_i h,\\; y + \\sum_{j<i} a_{ij} k_j\\Big)
          + h J \\sum_{j<i} \\gamma_{ij} k_j + h^2 \\gamma_i f_t,
          \\qquad y_1 = y + \\sum_i b_i k_i,

:math:`\\gamma_i = \\gamma + \\sum_{j<i}\\gamma_{ij}`; the error estimate is
:math:`\\sum_i (b_i - \\hat b_i) k_i`. Unlike an explicit method, whose step
is bounded by :math:`|h\\lambda| \\lesssim 6` for every eigenvalue
:math:`\\lambda` of the Jacobian, the step is set by accuracy alone:
contracting modes (:math:`\\mathrm{Re}\\,\\lambda \\ll 0`) are damped for
any ``h``. Each step costs four evaluations of ``f``, the Jacobian by
forward differences (``dim + 1`` evaluations, batched into one call) and an
LU factorization of ``dim x dim`` per member, so :mod:`symdyn.ode.integrate` uses it only
where the explicit steps are stability-limited and ``dim`` is moderate.

Layer 1, ode.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

import numpy as np
from scipy.linalg.lapack import dgetrf as getrf
from scipy.linalg.lapack import dgetrs as getrs
from threadpoolctl import ThreadpoolController

ORDER = 3
ERROR_ORDER = 2          # the estimate is of the embedded 2nd-order solution
GAMMA = 4.3586652150845900e-01
A = np.array([
    [0.0, 0.0, 0.0, 0.0],
    [8.7173304301691801e-01, 0.0, 0.0, 0.0],
    [8.4457060015369423e-01, -1.1299064236484185e-01, 0.0, 0.0],
    [0.0, 0.0, 1.0, 0.0],
])
G = np.array([            # gamma_ij, j < i (the diagonal is GAMMA)
    [0.0, 0.0, 0.0, 0.0],
    [-8.7173304301691801e-01, 0.0, 0.0, 0.0],
    [-9.0338057013044082e-01, 5.4180672388095326e-02, 0.0, 0.0],
    [2.4212380706095346e-01, -1.2232505839045147e+00, 5.4526025533510214e-01, 0.0],
])
B = np.array([2.4212380706095346e-01, -1.2232505839045147e+00, 1.5452602553351020e+00,
              4.3586652150845900e-01])
B_HAT = np.array([3.7810903145819369e-01, -9.6042292212423178e-02, 0.5,
                  2.1793326075422950e-01])
C = A.sum(axis=1)
GAMMA_SUM = GAMMA + G.sum(axis=1)
STAGES = 4

#: Systems of at most this many components may step with ROS34PW2: above it the
#: Jacobian (``dim + 1`` evaluations) and its inversion (``dim**3``) cost more
#: than the explicit steps they save.
MAX_DIM = 600

#: The forward-difference Jacobian is evaluated in calls of ``CHUNK_FLOATS //
#: dim**2`` states: the field's own work per state (the particles' ``n x n``
#: scores, ``n <= dim``) can exceed the state's size many times over.
CHUNK_FLOATS = 4_000_000


def jacobian(f: Callable[..., Any], t: Any, y: Any, fy: Any, args: Any) -> Any:
    """Forward differences :math:`J_{:,i} = (f(y + \\epsilon_i e_i) - f(y))/\\epsilon_i`
    and :math:`f_t`, with :math:`\\epsilon_i = \\sqrt{u}\\max(|y_i|, 1)` (``u`` the
    unit roundoff), all members and columns in as few calls of ``f`` as memory allows.

    Returns ``J`` (m, dim, dim), ``f_t`` (m, dim) and the evaluations spent
    per member (``dim + 1``).
    """
    m, dim = y.shape
    root = np.sqrt(np.finfo(y.dtype).eps)
    eps = root * np.maximum(np.abs(y), 1.0)                      # (m, dim)
    eps_t = root * np.maximum(np.abs(t), 1.0)                    # (m,)
    cols = dim + 1                                               # + the time column
    Y = np.repeat(y[:, None, :], cols, axis=1)
    diag = np.arange(dim)
    Y[:, diag, diag] += eps
    eps = Y[:, diag, diag] - y                 # the step taken, after rounding
    T = np.repeat(t[:, None], cols, axis=1)
    T[:, dim] += eps_t
    eps_t = T[:, dim] - t
    Y, T = Y.reshape(m * cols, dim), T.reshape(m * cols)
    reps = tuple(np.repeat(a, cols, axis=0) for a in args)
    per_call = max(1, CHUNK_FLOATS // (dim * dim))
    F = np.empty_like(Y)
    for lo in range(0, len(Y), per_call):
        sl = slice(lo, lo + per_call)
        F[sl] = f(T[sl], Y[sl], *(a[sl] for a in reps))
    D = (F.reshape(m, cols, dim) - fy[:, None, :])
    J = np.swapaxes(D[:, :dim] / eps[:, :, None], 1, 2)          # J[m, row, col]
    return J, D[:, dim] / eps_t[:, None], cols


def step(f: Callable[..., Any], t: Any, y: Any, fy: Any, h: Any, t_new: np.ndarray, args: Any,
         J: np.ndarray, ft: np.ndarray) -> Any:
    """One ROS34PW2 step of size ``h`` (shape ``(m,)``) for every row of ``y``.

    ``fy = f(t, y)``; ``J``, ``ft``: the (approximate) Jacobian and time
    derivative. Returns ``(y_new, error, f_new)``: the 3rd-order solution, the
    difference to the embedded 2nd-order one, and ``f(t_new, y_new)``.
    """
    with few_threads():
        return _step(f, t, y, fy, h, t_new, args, J, ft)


def _step(f: Callable[..., Any], t: Any, y: Any, fy: Any, h: Any, t_new: np.ndarray, args: Any,
          J: np.ndarray, ft: np.ndarray) -> Any:
    m, dim = y.shape
    hh = h[:, None]
    solve = factor(np.eye(dim) - (GAMMA * h)[:, None, None] * J)
    k: list = []
    for i in range(STAGES):
        if i == 0:
            fi = fy
        else:
            yi = y + sum(A[i, j] * k[j] for j in range(i) if A[i, j])
            fi = f(t + C[i] * h, yi, *args)
        rhs = hh * fi + (h * h * GAMMA_SUM[i])[:, None] * ft
        if i:
            gk = sum(G[i, j] * k[j] for j in range(i))
            rhs = rhs + hh * np.einsum("mij,mj->mi", J, gk)
        k.append(solve(rhs))
    y_new = y + sum(B[i] * k[i] for i in range(STAGES))
    error = sum((B[i] - B_HAT[i]) * k[i] for i in range(STAGES))
    return y_new, error, f(t_new, y_new, *args)


#: BLAS threads of the linear algebra (``None``: the library's own count). A
#: few ``dim <= MAX_DIM`` matrices gain nothing from more threads, and on
#: shared cores OpenBLAS's spinning threads took most of a run's CPU, and
#: their order of summation changed its trajectory
#: (``benchmarks/causal_long_run.py`` measures both).
BLAS_THREADS = 1
_THREADS = ThreadpoolController()
#: From this dimension on, each member's matrix is LU-factored once (LAPACK
#: ``getrf``) and solved four times a step (``getrs``); below it, one batched
#: inversion of all members costs less than a call per member. The choice
#: depends on the dimension alone, so a member alone takes the same path as
#: in its batch.
LU_DIM = 32


def factor(W: np.ndarray) -> Any:
    """``b -> W^{-1} b`` per member (``W``: (m, dim, dim)); NaN rows for a
    member whose ``W`` is not finite or is singular (its step is then
    rejected like any non-finite step). Call it, and its solver, inside
    :func:`few_threads`."""
    if W.shape[-1] < LU_DIM:
        inverse = _inverse(W)
        return lambda b: np.einsum("mij,mj->mi", inverse, b)
    factors: list = [None] * len(W)
    for i in np.flatnonzero(np.isfinite(W).all(axis=(1, 2))):
        lu, piv, info = getrf(W[i])
        if info == 0:                        # > 0: singular
            factors[i] = lu, piv

    def solve(b: Any) -> Any:
        out = np.full_like(b, np.nan)
        for i, f in enumerate(factors):
            if f is not None:
                out[i] = getrs(*f, b[i])[0]
        return out
    return solve


def _inverse(W: np.ndarray) -> Any:
    """``W^-1`` per member, one batched call; NaN for a member whose ``W`` is
    not finite or is singular."""
    bad = ~np.isfinite(W).all(axis=(1, 2))
    W = np.where(bad[:, None, None], np.eye(W.shape[1]), W)
    try:
        inv = np.linalg.inv(W)
    except np.linalg.LinAlgError:
        inv = np.empty_like(W)
        for i, w in enumerate(W):
            try:
                inv[i] = np.linalg.inv(w)
            except np.linalg.LinAlgError:
                bad[i] = True
    inv[bad] = np.nan
    return inv


def few_threads() -> Any:
    """The BLAS thread limit of :data:`BLAS_THREADS` (none with ``None``)."""
    if BLAS_THREADS is None:
        return contextlib.nullcontext()
    return _THREADS.limit(limits=BLAS_THREADS, user_api="blas")

