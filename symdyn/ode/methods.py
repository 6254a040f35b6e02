r"""Integration methods as objects: what the driver dispatches through.

Each is a :class:`Method` (as scipy's ``OdeSolver._step_impl`` and
``_dense_output_impl``, diffrax's ``AbstractSolver.step``): ``step(f, t, y,
fy, h, t_new, args, state)`` returns a :class:`Step` (the new states, the
error estimate, ``f(t_new, y_new)``); ``error`` measures the estimate (1 at
the tolerance); the controller's ``exponent``; where the method has one, its
continuous extension (``dense``, ``interpolate``). The methods never see the
step-size controller (:class:`symdyn.ode.control.Controller`), which sees
only their errors.

* :class:`ExplicitPair`: an explicit Runge-Kutta pair declared by its table
  (a module: :mod:`symdyn.ode.dop853`, :mod:`symdyn.ode.dp54`), stepped by
  the one stage loop of :mod:`symdyn.ode.rk` on arrays (a batch: one array
  operation per stage, every sum rounded in a fixed order, so a member's
  result does not depend on its batch) or on Python floats (one member, the
  same roundings). :data:`DOP853` (Hairer, Norsett & Wanner, *Solving ODEs
  I*, II.10) has Hairer's ``contd8`` of order 7 as its dense output, or the
  order-6 extension of :mod:`symdyn.ode.dense`; a pair with a declared
  interpolant ``P`` (:data:`DP54`) uses it.
* :data:`ROS34PW2`: the Rosenbrock-W method of :mod:`symdyn.ode.rosenbrock`
  for stiff members (its ``state`` the Jacobian and the time derivative).

The driver that owns the loop is :func:`symdyn.ode.integrate.integrate`.

Layer 1, ode.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from functools import lru_cache
from types import ModuleType
from typing import Any, NamedTuple

import numpy as np

from . import dense, dop853, dp54, rk, rosenbrock
from .control import dop853_norm, error_scale, rms_norm

FALLBACK_STEP = 1e-6         # first step when the estimate is not usable

_S = dop853.N_STAGES


def _rms(x: np.ndarray) -> np.ndarray:
    return np.sqrt(np.mean(x * x, axis=-1))


def initial_step(f: Callable[..., Any], y: np.ndarray, fy: np.ndarray, args: tuple, rtol: Any,
                 atol: Any, t_end: float, error_order: int = dop853.ERROR_ORDER) -> np.ndarray:
    """First step of every member from ``t = 0`` (Hairer et al. II.4).

    With :math:`d_0 = \\|y\\|`, :math:`d_1 = \\|f\\|` in the weighted RMS norm,
    :math:`h_0 = 0.01\\,d_0/d_1`, :math:`d_2 = \\|f(h_0, y + h_0 f) - f\\|/h_0`:
    :math:`h = \\min(100 h_0, (0.01/\\max(d_1, d_2))^{1/(q+1)}, t_{end})` (``q``
    the ``error_order`` of the method's estimate), as
    scipy's ``select_initial_step``. Returns ``h``, shape ``(M,)``; costs one
    evaluation of ``f``.
    """
    with np.errstate(all="ignore"):
        scale = error_scale(atol, rtol, y, y)       # atol + rtol |y|
        d0, d1 = _rms(y / scale), _rms(fy / scale)
        h0 = np.where((d0 < 1e-5) | (d1 < 1e-5), FALLBACK_STEP,
                      0.01 * d0 / np.maximum(d1, 1e-300))
        h0 = np.minimum(h0, t_end)
        f1 = f(np.zeros(len(y)) + h0, y + (h0[:, None] * fy).astype(y.dtype, copy=False),
               *args)
        d2 = _rms((f1 - fy) / scale) / h0
        big = np.maximum(d1, d2)
        h1 = np.where(big <= 1e-15, np.maximum(FALLBACK_STEP, h0 * 1e-3),
                      (0.01 / np.maximum(big, 1e-300)) ** (1 / (error_order + 1)))
        h = np.minimum(np.minimum(100 * h0, h1), t_end)
    return np.where(np.isfinite(h) & (h > 0), h, FALLBACK_STEP)


#: The interpolants of DOP853's dense output (``dense_output=`` of the driver):
#: Hairer's ``contd8``, order 7, three more evaluations on each step that holds
#: an output (the default); or the order-6 extension of :mod:`symdyn.ode.dense`
#: from the step's own 13 evaluations (an opt-in: no evaluation, but between
#: the step's ends up to about 20x the error of ``contd8`` on smooth nonlinear
#: problems, ``benchmarks/output_accuracy.py``).
ORDER7, ORDER6 = "order7", "order6"
DENSE_OUTPUTS = (ORDER7, ORDER6)
#: Steps with Hairer's :math:`h\lambda` above this are held by stability: on
#: their decaying stiff mode ``contd8`` amplifies what the step damps (2.4x
#: the order-6 extension's error at :math:`h\lambda = 2`, 12x at 6,
#: ``tests/ode/test_dense.py``), so they are read from the order-6 extension,
#: within twice the step's own error there.
DENSE_EDGE = 2.0


class Arrays:
    """The vector arithmetic of a continuous extension on the rows of a batch:
    states ``(m, dim)``, steps and times ``(m,)`` (``x`` of :func:`interpolate`
    a column). :class:`Floats` is the same on one member's lists of Python
    floats, each operation rounded as here, so both give the same bits."""

    @staticmethod
    def combine(row: Any, K: Any) -> Any:          # w_0 K_0 + sum_j w_j K_j, left to right
        return rk.combine_row(row, K)

    @staticmethod
    def times(h: Any, v: Any) -> Any:              # h v, h per row
        return h[:, None] * v

    @staticmethod
    def point(y: Any, h: Any, v: Any) -> Any:      # y + h v, in y's precision
        return y + (h[:, None] * v).astype(y.dtype, copy=False)

    @staticmethod
    def minus(a: Any, b: Any) -> Any:
        return a - b

    @staticmethod
    def plus(a: Any, b: Any) -> Any:
        return a + b

    @staticmethod
    def twice(a: Any) -> Any:
        return 2 * a

    @staticmethod
    def column(x: Any) -> Any:                     # the fractions against the rows
        return x[:, None]

    @staticmethod
    def zeros(y: Any, x: Any, out: Any) -> Any:
        if out is None:
            return np.zeros(np.broadcast_shapes(y.shape, x.shape), dtype=y.dtype)
        out[...] = 0.0
        return out

    @staticmethod
    def add_times(acc: Any, row: Any, w: Any) -> Any:   # (acc + row) w, in place
        acc += row
        acc *= w
        return acc

    @staticmethod
    def add_in(acc: Any, v: Any) -> Any:               # acc + v, in place
        acc += v
        return acc


class Floats:
    """:class:`Arrays` on one member: lists of Python floats, ``h``, ``t`` and
    ``x`` floats."""

    @staticmethod
    def combine(row: Any, K: Any) -> Any:
        return rk.combine_floats(row, K)

    @staticmethod
    def times(h: Any, v: Any) -> Any:
        return [h * a for a in v]

    @staticmethod
    def point(y: Any, h: Any, v: Any) -> Any:
        return [a + h * b for a, b in zip(y, v, strict=True)]

    @staticmethod
    def minus(a: Any, b: Any) -> Any:
        return [p - q for p, q in zip(a, b, strict=True)]

    @staticmethod
    def plus(a: Any, b: Any) -> Any:
        return [p + q for p, q in zip(a, b, strict=True)]

    @staticmethod
    def twice(a: Any) -> Any:
        return [2 * p for p in a]

    @staticmethod
    def column(x: Any) -> Any:
        return x

    @staticmethod
    def zeros(y: Any, x: Any, out: Any) -> Any:
        return [0.0] * len(y)

    @staticmethod
    def add_times(acc: Any, row: Any, w: Any) -> Any:
        return [(a + r) * w for a, r in zip(acc, row, strict=True)]

    add_in = plus


def free_coefficients(y: Any, h: Any, y_new: Any, K: Any, rows: np.ndarray | None = None,
                      on: Any = Arrays) -> list:
    """The seven coefficient rows of a continuous extension from the step's
    own stages ``K`` (no evaluation): :math:`F_0 = y_{new} - y`,
    :math:`F_i = h \\sum_j` ``rows[i-1, j]`` :math:`k_j`; ``rows`` by default
    DOP853's order-6 extension (:data:`symdyn.ode.dense.ROWS`, ``K[12] = f(t +
    h, y_new)``), else a pair's declared interpolant (:func:`declared_rows`).
    ``on``: :class:`Arrays` (a batch) or :class:`Floats` (one member).
    """
    rows = dense.ROWS if rows is None else rows
    return [on.minus(y_new, y)] + [on.times(h, on.combine(row, K)) for row in rows]


def contd8_coefficients(f: Callable[..., Any], t: Any, y: Any, h: Any, y_new: Any,
                        args: tuple, K: Any, on: Any = Arrays) -> list:
    """The seven coefficient rows of Hairer's ``contd8`` (order 7) on a step.

    ``K`` holds the 13 stages of the step (``K[12] = f(t + h, y_new)``); the
    three extra stages :math:`k_{13..15}` are evaluated into ``K[13:16]``.
    With :math:`\\Delta = y_{new} - y`: :math:`F_0 = \\Delta`,
    :math:`F_1 = h k_0 - \\Delta`, :math:`F_2 = 2\\Delta - h(k_{12} + k_0)`,
    :math:`F_{3..6} = h \\sum_j D_{ij} k_j` (Hairer, Norsett & Wanner, II.6;
    scipy's ``DOP853`` dense output). Costs three evaluations of ``f``.
    ``on``: :class:`Arrays` (a batch) or :class:`Floats` (one member).
    """
    for j, c in enumerate(dop853.C_EXTRA):
        s = _S + 1 + j
        K[s] = f(t + float(c) * h, on.point(y, h, on.combine(dop853.A_EXTRA[j, :s], K)), *args)
    delta = on.minus(y_new, y)
    F = [delta, on.minus(on.times(h, K[0]), delta),
         on.minus(on.twice(delta), on.times(h, on.plus(K[_S], K[0])))]
    return F + [on.times(h, on.combine(row, K)) for row in dop853.D]


def dense_coefficients(f: Callable[..., Any], t: np.ndarray, y: np.ndarray, h: np.ndarray,
                       y_new: np.ndarray, args: tuple, K: np.ndarray, z: Any,
                       how: str = ORDER7) -> tuple[list[np.ndarray], int]:
    """The continuous extensions of the rows of a batch of steps and the
    evaluations spent: ``contd8`` (order 7, 3 evaluations) where ``how`` is
    :data:`ORDER7` and the step's :math:`h\\lambda` (``z``) is at most
    :data:`DENSE_EDGE`, the order-6 extension (no evaluation) elsewhere.
    ``K``: the stages, :data:`symdyn.ode.dop853.N_EXTENDED` rows (the
    ``contd8`` rows' extra stages are written there)."""
    if how == ORDER6:
        return free_coefficients(y, h, y_new, K[: _S + 1]), 0
    held = ~(z <= DENSE_EDGE)               # NaN (no estimate) counts as held
    if not held.any():
        return contd8_coefficients(f, t, y, h, y_new, args, K), 3
    if held.all():
        return free_coefficients(y, h, y_new, K[: _S + 1]), 0
    c, e = np.flatnonzero(~held), np.flatnonzero(held)      # each row's one extension
    Fc = contd8_coefficients(f, t[c], y[c], h[c], y_new[c], tuple(a[c] for a in args),
                             K[:, c])
    Fe = free_coefficients(y[e], h[e], y_new[e], K[: _S + 1, e])
    F = [np.empty_like(y) for _ in Fc]
    for row, rc, re in zip(F, Fc, Fe, strict=True):
        row[c], row[e] = rc, re
    return F, 3


def stiffness(K: Any, h: Any, y_new: Any, y_last: Any, s: int = dop853.N_STAGES) -> Any:
    """Hairer's :math:`h\\lambda = h |k_s - k_{s-1}| / |y_1 - Y_{s-1}|` per
    row (``y_last``: the last stage's point :math:`Y_{s-1}`, also at ``t + h``;
    ``s``: the pair's stages, DOP853's 12 by default): where the explicit
    step sits relative to its stability limit. Arrays, or one member's lists
    of floats (summed left to right; the same ufuncs)."""
    if isinstance(y_new, list):
        num = sum((a - b) * (a - b) for a, b in zip(K[s], K[s - 1], strict=True))
        den = sum((a - b) * (a - b) for a, b in zip(y_new, y_last, strict=True))
        with np.errstate(all="ignore"):
            return h * float(np.sqrt(np.float64(num) / np.float64(den)))
    return h * np.sqrt(_sq(K[s] - K[s - 1]) / _sq(y_new - y_last))


def _sq(x: np.ndarray) -> np.ndarray:
    return np.einsum("mi,mi->m", x, x)


def interpolate(F: Sequence[Any], y: Any, x: Any, out: np.ndarray | None = None,
                on: Any = Arrays) -> Any:
    """The dense output at fractions ``x`` (in [0, 1]) of steps:
    :math:`y + x(F_0 + (1-x)(F_1 + x(F_2 + (1-x)(F_3 + x(F_4 + (1-x)(F_5 + x F_6))))))`.

    ``F`` rows and ``y`` of ``m`` steps with ``x`` of shape ``(m,)``, or of one
    step (rows of one) with ``x`` of shape ``(k,)``: ``k`` outputs of that
    step, broadcast (the same operations). ``out``: the rows to write (in
    place: a fresh array of a chunk's size costs page faults). ``on``:
    :class:`Arrays`, or :class:`Floats` for one output of one member (lists,
    ``x`` a float)."""
    x = on.column(x)
    acc = on.zeros(y, x, out)
    for i, row in enumerate(reversed(F)):
        acc = on.add_times(acc, row, x if i % 2 == 0 else 1 - x)
    return on.add_in(acc, y)


class Step(NamedTuple):
    """What a method's ``step`` returns: the new states, the error estimate
    (what ``error`` measures), ``f(t_new, y_new)`` and, for an explicit pair,
    its last stage's point (Hairer's stiffness estimate; else None)."""

    y_new: Any
    estimate: Any
    f_new: Any
    y_last: Any = None


class Method(ABC):
    """What a method gives the driver: ``name``, ``order``, ``error_order``
    (``q``, the order of its error estimate), ``exponent`` (the controller's
    :math:`-1/(q + 1)`), ``step`` (one step of every row of a batch: a
    :class:`Step`), ``error`` (a step's error norm, 1 at the tolerance) and,
    where it has one, its continuous extension (``dense``, ``interpolate``;
    else None: its steps end on every output)."""

    name = ""
    order = error_order = 0
    dense: Any = None
    interpolate: Any = None

    @property
    def exponent(self) -> float:
        """The controller's exponent, :math:`-1/(q + 1)`."""
        return -1.0 / (self.error_order + 1)

    @abstractmethod
    def step(self, f: Callable[..., Any], t: Any, y: Any, fy: Any, h: Any, t_new: Any,
             args: tuple, state: Any) -> Step:
        """One step of size ``h`` of every row of ``y`` (``fy = f(t, y)``), to
        ``t_new``; ``state``: the method's own (stages, Jacobians)."""

    @abstractmethod
    def error(self, step: Step, h: Any, scale: Any, dims: Any = None) -> Any:
        """The error norm of ``step``: 1 at the tolerance ``scale``, over
        ``dims`` components per member (default all)."""

    def __repr__(self) -> str:
        return f"<Method {self.name}, order {self.order}({self.error_order})>"


class Stages(NamedTuple):
    """An explicit pair's state: the stages ``K`` (stage, member, component),
    and the sums' holder kept across steps (:class:`symdyn.ode.rk.AheadSums`
    for batches, :class:`symdyn.ode.rk.FloatSums` for one member; None: a
    fresh one each step, or the on-demand sums for large batches)."""

    K: Any
    work: Any = None


class ExplicitPair(Method):
    """An explicit Runge-Kutta pair declared by its table ``tab``
    (:mod:`symdyn.ode.rk`), stepped by :func:`symdyn.ode.rk.step`: on lists of
    Python floats (one member) or arrays (a batch: ahead sums up to
    :data:`symdyn.ode.rk.FUSED_FLOATS` floats a stage, on-demand sums
    beyond; the same roundings). Its error norm is the table's ``NORM``
    (``"dop853"``: :func:`~symdyn.ode.control.dop853_norm`; ``"rms"``:
    :func:`~symdyn.ode.control.rms_norm`); its dense output Hairer's
    ``contd8`` (DOP853, :func:`dense_coefficients`) or the table's
    interpolant ``P``."""

    def __init__(self, tab: ModuleType) -> None:
        self.tab = tab
        self.name, self.order, self.error_order = tab.NAME, tab.ORDER, tab.ERROR_ORDER
        self.stages = tab.N_STAGES + 1 + (len(dop853.C_EXTRA) if tab is dop853 else 0)
        self.interpolate = interpolate

    def dense(self, f: Callable[..., Any], t: np.ndarray, y: np.ndarray, h: np.ndarray,
              y_new: np.ndarray, args: tuple, K: np.ndarray, z: Any, how: str = ORDER7,
              y_last: np.ndarray | None = None) -> tuple[list[np.ndarray], int]:
        """The continuous extension's rows ``F`` of these steps and the
        evaluations spent (:func:`interpolate` reads them). DOP853 chooses
        per step by :math:`h\\lambda` (``z``; where None, measured from the
        stages and ``y_last``, the last stage's points)."""
        if self.tab is not dop853:
            return free_coefficients(y, h, y_new, K, declared_rows(self.tab)), 0
        if z is None and how != ORDER6:
            z = stiffness(K, h, y_new, y_last)
        return dense_coefficients(f, t, y, h, y_new, args, K, z, how)

    def step(self, f: Callable[..., Any], t: Any, y: Any, fy: Any, h: Any, t_new: Any,
             args: tuple, state: Any) -> Step:
        sums: rk.StageSums
        if isinstance(y, list):
            sums = state.work if state.work is not None else rk.FloatSums()
        elif y.size <= rk.FUSED_FLOATS:
            sums = state.work if state.work is not None else rk.AheadSums(y.dtype)
        else:
            sums = rk.OnDemandSums()
        done = rk.step(self.tab, f, t, y, fy, h, t_new, args, state.K, sums)
        return Step(done.y_new, done.errors, state.K[self.tab.N_STAGES], done.y_last)

    def error(self, step: Step, h: Any, scale: Any, dims: Any = None) -> Any:
        if dims is None:
            dims = len(scale) if isinstance(scale, list) else scale.shape[1]
        if self.tab.NORM == "dop853":
            sum5, sum3 = step.estimate
            return dop853_norm(sum5, sum3, h, scale, dims)
        return rms_norm(step.estimate[0], h, scale, dims)


@lru_cache(maxsize=16)
def declared_rows(tab: ModuleType) -> np.ndarray:
    """A pair's declared interpolant ``P`` (weights of :math:`\\theta^{1..}`)
    in the nested rows of :func:`interpolate`, ``F_1..F_6`` per stage."""
    beta = np.zeros((dense.DEGREE, tab.N_STAGES + 1))
    beta[: tab.P.shape[1]] = tab.P.T
    return dense.nested_rows(beta)[1:]


class Ros34pw2(Method):
    """The Rosenbrock-W method of :mod:`symdyn.ode.rosenbrock`: ``state`` is
    ``(J, f_t)``, the (lagged) Jacobians and time derivatives; the estimate
    the difference to the embedded 2nd-order solution, in the RMS norm. No
    dense output."""

    name, order, error_order = "ROS34PW2", rosenbrock.ORDER, rosenbrock.ERROR_ORDER

    def step(self, f: Callable[..., Any], t: Any, y: Any, fy: Any, h: Any, t_new: Any,
             args: tuple, state: Any) -> Step:
        y_new, error, f_new = rosenbrock.step(f, t, y, fy, h, t_new, args, *state)
        return Step(y_new, error, f_new)

    def error(self, step: Step, h: Any, scale: Any, dims: Any = None) -> Any:
        e = step.estimate / scale
        n = scale.shape[1] if dims is None else dims
        return np.sqrt(np.einsum("mi,mi->m", e, e) / n)


DOP853, DP54, ROS34PW2 = ExplicitPair(dop853), ExplicitPair(dp54), Ros34pw2()
