r"""Integration methods as objects: a tableau (or rule), an order, an error
estimate and a step, and the step-size controller they share.

* :data:`DOP853`: the Dormand-Prince 8(5,3) pair of :mod:`symdyn.ode.dop853`
  (Hairer, Norsett & Wanner, *Solving ODEs I*, II.10), with its continuous
  extension (dense output: Hairer's ``contd8`` of order 7, or the order-6
  extension of :mod:`symdyn.ode.dense`; :func:`dense_coefficients`,
  :func:`interpolate`);
  a batch of members steps by one array operation per stage, every linear
  combination summed left to right in a fixed order (:func:`_combine`), so a
  member's result does not depend on its batch;
* :data:`ROS34PW2`: the Rosenbrock-W method of :mod:`symdyn.ode.rosenbrock`
  for stiff members;
* :data:`EXTRAPOLATION`: Gragg-Bulirsch-Stoer extrapolation in mpmath
  (:mod:`symdyn.ode.extrapolation`), one member at a time.

Each is a :class:`Method`: the contract the driver dispatches through (as
scipy's ``OdeSolver._step_impl`` and ``_dense_output_impl``): ``step``, the
error of a step (``error``, 1 at the tolerance), the continuous extension
(``dense``, ``interpolate``; DOP853 only) and the controller's
``exponent``. The methods never see the step-size controller
(:class:`symdyn.ode.control.Controller`), which sees only their errors.

The driver that owns the loop is :func:`symdyn.ode.integrate.integrate`.

Layer 1, ode.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from typing import NamedTuple

import numpy as np

from ..base.arithmetic import einsum
from . import dense, dop853, extrapolation, rosenbrock
from .control import dop853_norm, error_scale

FALLBACK_STEP = 1e-6         # first step when the estimate is not usable

_S = dop853.N_STAGES


def _combine(weights, K, out=None, tmp=None):
    """sum_j weights[j] * K[j], in a fixed order: a member's result does not
    depend on the batch it is computed in (unlike a BLAS reduction).

    Each term is rounded, then added, left to right (zero weights skipped),
    in place in ``out`` with ``tmp`` as scratch (both shaped like ``K[0]``;
    allocated when not given): the same roundings as ``w0*K0 + w1*K1 + ...``
    without a temporary array per term.
    """
    weights = weights.tolist() if hasattr(weights, "tolist") else weights
    out = np.empty_like(K[0]) if out is None else out
    np.multiply(K[0], weights[0], out=out)   # Python floats: float32 stays float32
    for j in range(1, len(weights)):
        if weights[j] != 0:
            tmp = np.empty_like(out) if tmp is None else tmp
            np.multiply(K[j], weights[j], out=tmp)
            np.add(out, tmp, out=out)
    return out


def _rms(x):
    return np.sqrt(np.mean(x * x, axis=-1))


def initial_step(f, y, fy, args, rtol, atol, t_end):
    """First step of every member from ``t = 0`` (Hairer et al. II.4).

    With :math:`d_0 = \\|y\\|`, :math:`d_1 = \\|f\\|` in the weighted RMS norm,
    :math:`h_0 = 0.01\\,d_0/d_1`, :math:`d_2 = \\|f(h_0, y + h_0 f) - f\\|/h_0`:
    :math:`h = \\min(100 h_0, (0.01/\\max(d_1, d_2))^{1/8}, t_{end})`, as
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
                      (0.01 / np.maximum(big, 1e-300)) ** (1 / (dop853.ERROR_ORDER + 1)))
        h = np.minimum(np.minimum(100 * h0, h1), t_end)
    return np.where(np.isfinite(h) & (h > 0), h, FALLBACK_STEP)


def dop853_step(f, t, y, fy, h, t_new, args, K):
    """One DOP853 step of size ``h`` (shape ``(m,)``) for every row of ``y``.

    Fills ``K[0..12]`` with the stages (``K[0] = fy``, ``K[12] = f(t_new,
    y_new)``) and returns :math:`y_{new} = y + h \\sum_j b_j k_j`. ``t_new``
    is ``t + h`` or, for a step clipped onto a stop, the stop itself.
    """
    return _dop853(f, t, y, fy, h, t_new, args, K)[0]


def _dop853(f, t, y, fy, h, t_new, args, K, work=None):
    """:func:`dop853_step`, returning ``y_new``, the unscaled sums
    :math:`\\sum_j e^{(5)}_j k_j` and :math:`\\sum_j e^{(3)}_j k_j`, and the
    last stage's point :math:`Y_{11}` (also at ``t + h``).

    Small batches (at most :data:`FUSED_FLOATS` floats a stage) take every
    stage's products with all later weights in one call per stage
    (:func:`_fused`); larger ones one :func:`_combine` per sum. Both round
    and add the same terms in the same order, so they agree bit for bit.
    ``work``: the fused sums' buffers (:func:`stage_sums_workspace`), else
    made for the step.
    """
    if y.size <= FUSED_FLOATS:
        return _fused(f, t, y, fy, h, t_new, args, K, work)
    K[0] = fy
    hs = h[:, None].astype(y.dtype, copy=False)       # float32 states stay float32
    tmp = np.empty_like(y)
    for s in range(1, _S):
        stage = _combine(dop853.A[s, :s], K, tmp=tmp)
        np.multiply(hs, stage, out=stage)           # y + h * sum_j a_sj k_j
        K[s] = f(t + dop853.C[s] * h, np.add(y, stage, out=stage), *args)
    y_new = _combine(dop853.B, K, tmp=tmp)
    np.multiply(hs, y_new, out=y_new)
    np.add(y, y_new, out=y_new)
    K[_S] = f(t_new, y_new, *args)
    return (y_new, _combine(dop853.E5, K, tmp=tmp), _combine(dop853.E3, K, tmp=tmp),
            stage)


FUSED_FLOATS = 1 << 16      # floats of a stage up to which _fused is used
_PLANS = {}


def stage_sums_workspace(M, dim, dtype):
    """:class:`StageSums` for up to ``M`` members of ``dim`` components (fewer
    where a stage of ``M`` would not take the fused path; ``None`` if not one
    member would). Made once per integration: fresh arrays of up to 8 MB at
    every step cost more than the sums themselves (the kernel hands out and
    zeroes new pages; ``benchmarks/solve.py`` measures the step)."""
    members = min(M, FUSED_FLOATS // dim)
    return StageSums(members, dim, dtype) if members else None


class StageSums:
    """:func:`_fused`'s sums and products on up to ``members`` members, in one
    flat buffer: a step of ``m`` members takes its first ``2 (13 + 1) m dim``
    floats as one contiguous block (numpy's loops over rows strided by the
    batch size ran at a quarter of the speed). The views a step of ``m``
    members works on are kept until ``m`` changes (a step makes ~90 of them)."""

    def __init__(self, members, dim, dtype):
        self.flat = np.empty(2 * (_S + 2) * members * dim, dtype=dtype)
        self._shape = self._plan = self._views = None

    def views(self, m, dim, plan):
        """``(S, stages, runs)`` for ``m`` members: the sums ``S`` (14, m, dim);
        ``stages[s]`` the sum of stage ``s + 1``; ``runs[j]`` per run
        ``(lo, hi, w)`` of ``plan[j]`` its rows of ``S``, as many rows of
        scratch, ``w`` and whether it is one row."""
        if (m, dim) != self._shape or plan is not self._plan:
            shape = (2, _S + 2, m, dim)
            S, tmp = self.flat[: math.prod(shape)].reshape(shape)
            runs = [[(S[lo], tmp[0], w, True) if hi - lo == 1
                     else (S[lo:hi], tmp[: hi - lo], w, False) for lo, hi, w in p]
                    for p in plan]
            self._views, self._shape, self._plan = (S, list(S[: _S - 1]), runs), (m, dim), plan
        return self._views


def _plan(dtype):
    """Per stage ``j``: the runs ``(lo, hi, w)`` of rows of the sums (stages
    1..11, ``B``, ``E5``, ``E3``) whose weight of ``k_j`` is not zero, ``w``
    their weights (shape ``(hi - lo,)``, a scalar for one row; in ``dtype``). ``k_0`` enters
    every sum (as in :func:`_combine`). Kept per table (a changed table is a
    new array: tests perturb coefficients)."""
    tables = (dop853.A, dop853.B, dop853.E5, dop853.E3)
    key = (*map(id, tables), dtype)
    if key not in _PLANS:
        W = np.zeros((_S + 2, _S + 1))
        for s in range(1, _S):
            W[s - 1, :s] = dop853.A[s, :s]
        for r, row in enumerate(tables[1:]):
            W[_S - 1 + r, : len(row)] = row
        plans = [[(0, len(W), W[:, 0])]]
        for j in range(1, _S + 1):
            rows = np.flatnonzero(W[:, j] != 0)
            cuts = np.flatnonzero(np.diff(rows) != 1) + 1
            plans.append([(int(g[0]), int(g[-1]) + 1, W[g, j]) for g in np.split(rows, cuts)
                          if g.size])
        _PLANS[key] = [[(lo, hi, w.astype(dtype)[0] if hi - lo == 1 else w.astype(dtype))
                        for lo, hi, w in p] for p in plans]
    return _PLANS[key]


def _fused(f, t, y, fy, h, t_new, args, K, work=None):
    """:func:`_dop853` with all the sums in one array ``S``: as soon as ``k_j``
    is known, its products with the weights of every later sum are taken in
    one call and added to their sums in another (each sum still gets
    :math:`w_0 k_0`, then :math:`+ w_j k_j` in increasing ``j``, each term
    rounded before it is added, as :func:`_combine`)."""
    plan = _plan(y.dtype)
    m, dim = y.shape
    if work is None:                # the driver's holds every batch that comes here
        work = StageSums(m, dim, y.dtype)
    S, stages, runs = work.views(m, dim, plan)
    # float32 states stay float32; h spelled out per component: a product of
    # two arrays of one shape skips numpy's broadcasting machinery
    hs = h[:, None].astype(y.dtype, copy=False).repeat(dim, axis=1)
    times = t + dop853.C[:, None] * h
    K[0] = fy
    einsum("r,md->rmd", plan[0][0][2], K[0], out=S)
    for s in range(1, _S + 1):
        if s < _S:
            # y + h * sum_j a_sj k_j (in-place operators: no out= to parse;
            # + and * commute exactly, so these are the same roundings)
            stage = stages[s - 1]
            stage *= hs
            stage += y
            K[s] = f(times[s], stage, *args)
        else:
            y_new = np.multiply(hs, S[_S - 1])
            y_new += y
            K[_S] = f(t_new, y_new, *args)
        k = K[s]
        for rows, scratch, w, single in runs[s]:  # the products w_r k_s: one rounding each
            if single:
                rows += np.multiply(k, w, out=scratch)
            else:                   # an outer product (numpy's broadcast is 1.5x slower)
                rows += einsum("r,md->rmd", w, k, out=scratch)
    return y_new, S[_S], S[_S + 1], S[_S - 2]


def error_norm(K, h, scale, dims=None):
    """The DOP853 error of a step from its stages ``K``, 1 at the tolerance
    (:func:`symdyn.ode.control.dop853_norm`; ``dims`` per member, default all
    components)."""
    tmp = np.empty_like(K[0])
    return dop853_norm(_combine(dop853.E5, K, tmp=tmp), _combine(dop853.E3, K, tmp=tmp), h,
                       scale, scale.shape[1] if dims is None else dims)


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


def free_coefficients(y, h, y_new, K):
    """The seven coefficient rows of the order-6 continuous extension, from
    the step's own 13 stages ``K`` (``K[12] = f(t + h, y_new)``): no
    evaluation (:mod:`symdyn.ode.dense`). :math:`F_0 = y_{new} - y`,
    :math:`F_i = h \\sum_j` ``dense.ROWS[i-1, j]`` :math:`k_j`.
    """
    tmp = np.empty_like(y)
    return [y_new - y] + [h[:, None] * _combine(row, K, tmp=tmp) for row in dense.ROWS]


def contd8_coefficients(f, t, y, h, y_new, args, K):
    """The seven coefficient rows of Hairer's ``contd8`` (order 7) on a step.

    ``K`` holds the 13 stages of the step (``K[12] = f(t + h, y_new)``); the
    three extra stages :math:`k_{13..15}` are evaluated into ``K[13:16]``.
    With :math:`\\Delta = y_{new} - y`: :math:`F_0 = \\Delta`,
    :math:`F_1 = h k_0 - \\Delta`, :math:`F_2 = 2\\Delta - h(k_{12} + k_0)`,
    :math:`F_{3..6} = h \\sum_j D_{ij} k_j` (Hairer, Norsett & Wanner, II.6;
    scipy's ``DOP853`` dense output). Costs three evaluations of ``f``.
    """
    for j, c in enumerate(dop853.C_EXTRA):
        s = _S + 1 + j
        K[s] = f(t + c * h, y + (h[:, None] * _combine(dop853.A_EXTRA[j, :s], K)
                                 ).astype(y.dtype, copy=False), *args)
    delta = y_new - y
    F = [delta, h[:, None] * K[0] - delta, 2 * delta - h[:, None] * (K[_S] + K[0])]
    F += [h[:, None] * _combine(row, K) for row in dop853.D]
    return F


def dense_coefficients(f, t, y, h, y_new, args, K, z, how=ORDER7):
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
    c = np.flatnonzero(~held)
    Kc = K[:, c]
    Fc = contd8_coefficients(f, t[c], y[c], h[c], y_new[c], tuple(a[c] for a in args), Kc)
    F = free_coefficients(y, h, y_new, K[: _S + 1])
    for row, rc in zip(F, Fc, strict=True):
        row[c] = rc
    return F, 3


def stiffness(K, h, y_new, y_last):
    """Hairer's :math:`h\\lambda = h |k_{12} - k_{11}| / |y_1 - Y_{11}|` per
    row (``y_last``: the last stage's point :math:`Y_{11}`, also at ``t + h``):
    where DOP853's step sits relative to its stability limit."""
    return h * np.sqrt(_sq(K[_S] - K[_S - 1]) / _sq(y_new - y_last))


def _sq(x):
    return np.einsum("mi,mi->m", x, x)


def interpolate(F, y, x):
    """The dense output at fraction ``x`` (shape ``(m,)``, in [0, 1]) of the step:
    :math:`y + x(F_0 + (1-x)(F_1 + x(F_2 + (1-x)(F_3 + x(F_4 + (1-x)(F_5 + x F_6))))))`."""
    x = x[:, None]
    out = np.zeros_like(y)
    for i, row in enumerate(reversed(F)):
        out += row
        out *= x if i % 2 == 0 else 1 - x
    out += y
    return out


class Method(ABC):
    """What a method gives the driver: ``name``, ``order``, ``error_order``
    (``q``, the order of its error estimate), ``exponent`` (the controller's
    :math:`-1/(q + 1)`), ``step`` (one step of every row of a batch),
    ``error`` (a step's error norm, 1 at the tolerance, from what ``step``
    returned as its estimate) and, where it has one, its continuous extension
    (``dense``, ``interpolate``; else None: its steps end on every output)."""

    name = ""
    order = error_order = 0
    dense = interpolate = None

    @property
    def exponent(self):
        """The controller's exponent, :math:`-1/(q + 1)`."""
        return -1.0 / (self.error_order + 1)

    @abstractmethod
    def step(self, *args, **kwargs):
        """One step of every row of a batch (each method's own signature)."""

    def error(self, estimate, h, scale, dims=None):
        """The step's error norm; a method that controls its own error (GBS
        extrapolation) has none to give the driver's controller."""
        raise NotImplementedError(f"{self.name} controls its own error: it has no error norm")

    def __repr__(self):
        return f"<Method {self.name}, order {self.order}({self.error_order})>"


class Dop853Step(NamedTuple):
    """A DOP853 step: the new states, its error estimate (the sums of ``E5``
    and ``E3`` over the stages) and the last stage's point (Hairer's
    stiffness estimate)."""

    y_new: np.ndarray
    sum5: np.ndarray
    sum3: np.ndarray
    y_last: np.ndarray


class Dop853(Method):
    """The Dormand-Prince 8(5,3) pair (:mod:`symdyn.ode.dop853`).

    ``step(f, t, y, fy, h, t_new, args, K, work=None)`` fills the stages ``K``
    (``K[12] = f(t_new, y_new)``) and returns a :class:`Dop853Step`;
    ``error(step, h, scale, dims)``; ``dense(f, t, y, h, y_new, args, K, z,
    how)`` (:func:`dense_coefficients`: ``contd8`` or the order-6 extension)
    and ``interpolate(F, y, x)``."""

    name, order, error_order = "DOP853", dop853.ORDER, dop853.ERROR_ORDER
    dense = staticmethod(dense_coefficients)
    interpolate = staticmethod(interpolate)

    def step(self, f, t, y, fy, h, t_new, args, K, work=None):
        return Dop853Step(*_dop853(f, t, y, fy, h, t_new, args, K, work))

    def error(self, estimate, h, scale, dims=None):
        return dop853_norm(estimate.sum5, estimate.sum3, h, scale,
                           scale.shape[1] if dims is None else dims)


class Ros34pw2(Method):
    """The Rosenbrock-W method of :mod:`symdyn.ode.rosenbrock`:
    ``step(f, t, y, fy, h, t_new, args, J, f_t) -> (y_new, error, f_new)``;
    ``error(error, h, scale, dims)`` its RMS norm. No dense output."""

    name, order, error_order = "ROS34PW2", rosenbrock.ORDER, rosenbrock.ERROR_ORDER

    def step(self, f, t, y, fy, h, t_new, args, J, f_t):
        return rosenbrock.step(f, t, y, fy, h, t_new, args, J, f_t)

    def error(self, estimate, h, scale, dims=None):
        e = estimate / scale
        n = scale.shape[1] if dims is None else dims
        return np.sqrt(np.einsum("mi,mi->m", e, e) / n)


class Extrapolation(Method):
    """Gragg-Bulirsch-Stoer extrapolation in mpmath, one member:
    ``step(f, t, y, H, tol, kmax) -> (y_new or None, columns)``; its order is
    that of the columns it used (``order`` 0); it controls its own error."""

    name = "GBS extrapolation (mpmath)"

    def step(self, f, t, y, H, tol, kmax):
        return extrapolation.step(f, t, y, H, tol, kmax)


DOP853, ROS34PW2, EXTRAPOLATION = Dop853(), Ros34pw2(), Extrapolation()
