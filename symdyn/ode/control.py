r"""The step-size controller and the error measure, each rule written once.

Every function here takes numpy arrays (one entry per member of a batch:
:mod:`symdyn.ode.integrate`) or Python floats (one member:
:mod:`symdyn.ode.scalar`) and does the same operations on both: ``+ - * /``,
``abs``, ``min``/``max``, ``sqrt`` (all exact or correctly rounded) and
:func:`symdyn.base.arithmetic.power` (numpy's ufunc for both), so the two
paths take the same steps bit for bit.

* :class:`Controller`: the next step from a step's error,
  :math:`h_{new} = h\,\mathrm{clip}(s\,\max(\mathrm{err},
  f\,\mathrm{predicted})^{-1/(q+1)}, [f_{min}, f_{max}])` (``q`` the order of
  the method's error estimate: :attr:`symdyn.ode.methods.Method.exponent`);
  the method never sees the controller, the controller never sees the method's
  stages;
* :func:`error_scale`: :math:`\mathrm{atol} + \mathrm{rtol}\,\max(|y|, |y_{new}|)`;
* :func:`dop853_norm`: DOP853's error norm from the sums of its two embedded
  estimates.

Layer 1, ode.
"""

from __future__ import annotations

import math
import operator
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..base.arithmetic import power

E3_WEIGHT = 0.01      # weight of DOP853's 3rd-order estimate in its error norm


class _Arrays:
    """The operations of the rules on arrays (a batch)."""

    where, maximum, minimum, logical_not = np.where, np.maximum, np.minimum, np.logical_not


class _Floats:
    """The same operations on Python floats (one member): exact, as numpy's."""

    maximum, minimum, logical_not = max, min, operator.not_

    @staticmethod
    def where(cond: Any, a: Any, b: Any) -> Any:
        return a if cond else b


def _ops(x: np.ndarray, y: Any = None) -> Any:
    """:class:`_Arrays` if ``x`` or ``y`` is an array, else :class:`_Floats`."""
    return _Arrays if isinstance(x, np.ndarray) or isinstance(y, np.ndarray) else _Floats


def error_scale(atol: Any, rtol: Any, y: Any, y_new: np.ndarray) -> Any:
    r""":math:`\mathrm{atol} + \mathrm{rtol}\,\max(|y|, |y_{new}|)`: the error
    that counts as 1 in a component (arrays, or one component as floats)."""
    return atol + rtol * _ops(y, y_new).maximum(abs(y), abs(y_new))


def dop853_norm(sum5: Any, sum3: Any, h: Any, scale: Any, dims: Any) -> Any:
    r"""DOP853's error of a step, 1 at the tolerance (Hairer's ``dop853.f``).

    With :math:`e_5 = \sum_j e^{(5)}_j k_j / \mathrm{scale}` (``sum5`` the sum,
    per member and component; a list of floats for one member), :math:`e_3`
    alike: :math:`h\,|e_5|^2 / \sqrt{\mathrm{dims}\,(|e_5|^2 + 0.01\,|e_3|^2)}`;
    ``dims`` counts the components that move (frozen ones add nothing).
    """
    ops = _ops(scale)
    if ops is _Arrays:
        e5, e3 = np.divide(sum5, scale), np.divide(sum3, scale)
        n5, n3 = _row_sums(e5 * e5), _row_sums(e3 * e3)
        denom = np.sqrt((n5 + E3_WEIGHT * n3) * dims)
    else:                       # one member: lists, summed left to right
        e5 = [e / s for e, s in zip(sum5, scale, strict=True)]
        e3 = [e / s for e, s in zip(sum3, scale, strict=True)]
        n5, n3 = sum(e * e for e in e5), sum(e * e for e in e3)
        denom = math.sqrt((n5 + E3_WEIGHT * n3) * dims)
    return ops.where(n5 == 0, 0.0, h * n5 / ops.where(denom > 0, denom, 1.0))


def rms_norm(err_sum: Any, h: Any, scale: Any, dims: Any) -> Any:
    r"""The RMS error of a step with one embedded estimate, 1 at the tolerance:
    :math:`h \sqrt{|e / \mathrm{scale}|^2 / \mathrm{dims}}` with
    :math:`e = \sum_j e_j k_j` (``err_sum``; a list of floats for one
    member), as scipy's ``RungeKutta`` measures its pairs."""
    if _ops(scale) is _Arrays:
        e = np.divide(err_sum, scale)
        return h * np.sqrt(_row_sums(e * e) / dims)
    e = [a / s for a, s in zip(err_sum, scale, strict=True)]
    return h * math.sqrt(sum(v * v for v in e) / dims)


def _row_sums(x: np.ndarray) -> Any:
    """Sums over the last axis of an (m, k) array: for rows of fewer than 8,
    left to right column by column (the one-member path's ``sum``, and what
    numpy's reduction gave on this project's CPUs; that reduction over a short
    last axis costs several times its additions); numpy's reduction for
    longer rows."""
    k = x.shape[1]
    if not 0 < k < 8:
        return np.add.reduce(x, axis=1)
    out = x[:, 0].copy()
    for i in range(1, k):
        out += x[:, i]
    return out


@dataclass(frozen=True)
class Controller:
    """The step-size controller (an I controller with a floor on the estimate).

    ``safety``: aim at :math:`\\mathrm{err} = s^{q+1}` (0.43 for DOP853), not at
    the edge 1; ``factor_min``, ``factor_max``: a step shrinks at most 5x and
    grows at most 10x per attempt (as ``scipy.integrate.DOP853``, no growth
    right after a rejection); ``estimate_floor``: an accepted step's err counts
    as at least this fraction of what the previous accepted step predicts for
    it (the estimate of a one-dimensional problem passes through zero now and
    then; without the floor the next step grows on that accident and the
    estimator, outside its range, accepts an error 10^4-10^6 times the
    tolerance); ``min_relative_step``: a member fails when its step falls
    below this times :math:`\\max(1, |t|)`.
    """

    safety: float = 0.9
    factor_min: float = 0.2
    factor_max: float = 10.0
    estimate_floor: float = 0.1
    min_relative_step: float = 1e-14

    def factor(self, err: np.ndarray, finite: Any, after_rejection: Any, predicted: Any,
               exponent: Any) -> Any:
        """``(accept, next step / this step)`` per member.

        :math:`s\\,\\max(\\mathrm{err}, f\\,\\mathrm{predicted})^{e}` (the
        floor only for accepted steps; ``exponent`` :math:`e = -1/(q+1)`, per
        member or one) in ``[factor_min, factor_max]``; at most 1 for a
        rejected step or the first acceptance after a rejection;
        ``factor_min`` after a non-finite step.
        """
        x = _ops(err)
        accept = finite & (err < 1)
        effective = x.where(accept, x.maximum(err, self.estimate_floor * predicted), err)
        positive = effective > 0
        grown = self.safety * power(x.where(positive, effective, 1.0), exponent)
        factor = x.where(positive, grown, self.factor_max)
        factor = x.minimum(x.maximum(factor, self.factor_min), self.factor_max)
        factor = x.where(accept & x.logical_not(after_rejection), factor,
                         x.minimum(factor, 1.0))
        return accept, x.where(finite, factor, self.factor_min)

    @staticmethod
    def predicted(last_err: Any, ratio: Any, exponent: Any) -> Any:
        """The err that the last accepted step (error ``last_err``, 0 for none)
        predicts for a step ``ratio`` times as long:
        :math:`\\mathrm{err}\\,\\mathrm{ratio}^{-1/e}`."""
        return _ops(last_err).where(last_err > 0, last_err * power(ratio, -1 / exponent),
                                    0.0)

    def next_step(self, step: Any, h: Any, err: Any, finite: Any, clipped: Any,
                  after_rejection: Any, predicted: Any, exponent: Any) -> Any:
        """``(accept, the next step)``: :meth:`factor` times ``step``; a step
        shortened (``clipped``) to land on a stop does not shrink the proposal
        ``h`` it was cut from."""
        accept, factor = self.factor(err, finite, after_rejection, predicted, exponent)
        new_h = step * factor
        x = _ops(new_h)
        return accept, x.where(accept & clipped, x.maximum(new_h, h), new_h)

    def too_small(self, h: Any, t: Any) -> Any:
        """Whether ``h`` is below ``min_relative_step`` :math:`\\max(1, |t|)`."""
        return h < self.min_relative_step * _ops(t).maximum(1.0, abs(t))


DEFAULT = Controller()
"""The controller of :func:`symdyn.ode.integrate.integrate` and of the scalar
path when none is given (read at each call)."""


def controller_or_default(controller: Any) -> Any:
    """``controller``, or :data:`DEFAULT` (looked up now) for None."""
    if controller is None:
        return DEFAULT
    if not isinstance(controller, Controller):
        raise ValueError(f"controller must be a Controller, got {type(controller).__name__}")
    return controller
