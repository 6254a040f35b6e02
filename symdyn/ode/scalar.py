"""One member in Python floats: the small-problem path of :mod:`symdyn.ode.integrate`.

A batch of one spends most of its time on fixed costs: every numpy call on a
1-element array costs about a microsecond, and a DOP853 step makes a few
hundred of them. This module runs *the same method* (the table of
:mod:`symdyn.ode.dop853`; the controller, error scale and error norm of
:mod:`symdyn.ode.control`, the very functions the batched driver calls, here
on Python floats; steps clipped onto breakpoints, the continuous extension
for output times) on lists of Python floats, with right-hand sides compiled for
``"float"`` (:func:`symdyn.base.arithmetic.on_floats`).

It raises :class:`GiveUp` where it does not apply or gives up (a right-hand
side that raises or is not finite, a step below the controller's
``min_relative_step`` times ``t``, too many steps):
the caller (``sd.solve``) then runs the batched integrator, whose
diagnostics name the cause. A member's result equals the batched path's bit
for bit on every CPU: besides ``+ - * /`` and ``sqrt`` (correctly rounded
everywhere) both take every operation from the same numpy ufuncs
(:mod:`symdyn.base.arithmetic`: the compiled right-hand sides, the step control's
:func:`~symdyn.base.arithmetic.power`), never from libm (tests/base/test_arithmetic.py).

Layer 1, ode.
"""

from __future__ import annotations

import bisect
import math
from typing import NamedTuple

import numpy as np

from . import dense, dop853
from .control import controller_or_default, dop853_norm, error_scale
from .methods import DENSE_EDGE, DENSE_OUTPUTS, DOP853, ORDER7
from .outputs import polynomial_at

_S = dop853.N_STAGES
_ARRAY_OUTPUTS = 8      # outputs inside one step from which numpy reads them


def _row(weights):
    """``K -> sum_j weights[j] K[j]`` per component, summed left to right in the
    order of :func:`symdyn.ode.methods._combine` (zero weights skipped), as one
    comprehension over the components. The source is generated from the
    table's own floats (``repr`` round-trips them exactly), never from input."""
    return _generated(weights, stage=False)


def _stage(weights):
    """``(K, y, h) -> y + h * sum_j weights[j] K[j]`` per component: :func:`_row`
    and the stage's point in one comprehension (the same operations in the
    same order as :func:`symdyn.ode.methods._combine` and the driver's
    ``y + h * inc``)."""
    return _generated(weights, stage=True)


def _generated(weights, stage):
    terms = [(j, float(w)) for j, w in enumerate(weights) if w != 0 or j == 0]
    names = ", ".join(["y_"] * stage + [f"k{j}" for j, _ in terms])
    expr = " + ".join(f"{w!r} * k{j}" for j, w in terms)
    lists = ", ".join(["y"] * stage + [f"K[{j}]" for j, _ in terms])
    value = f"y_ + h * ({expr})" if stage else expr
    source = (f"def combine(K{', y, h' if stage else ''}):\n    return [{value} for {names}"
              f"{',' if len(terms) + stage == 1 else ''} in zip({lists})]\n")
    scope = {}
    exec(compile(source, "<symdyn.ode.scalar>", "exec"), scope)    # noqa: S102
    return scope["combine"]


_A = [None] + [_stage(row[:s]) for s, row in enumerate(dop853.A) if s > 0]
_B = _stage(dop853.B)
_E5 = _row(dop853.E5)
_E3 = _row(dop853.E3)
_C = [float(x) for x in dop853.C]
_D6 = [_row(row) for row in dense.ROWS]
_A_EXTRA = [_stage(row[: _S + 1 + j]) for j, row in enumerate(dop853.A_EXTRA)]
_C_EXTRA = [float(x) for x in dop853.C_EXTRA]
_D = [_row(row) for row in dop853.D]


class GiveUp(Exception):
    """The scalar path does not apply here; use the batched integrator."""


def _call(f, t, y, phase):
    try:
        out = f(t, y, phase)
    except (ArithmeticError, ValueError):
        raise GiveUp from None
    if not math.isfinite(math.fsum(out)):   # a non-finite value (or an overflowing sum:
        raise GiveUp                        # the batched path answers then)
    return out


def _step(f, t, y, fy, h, t_new, phase, K, dim):
    """One DOP853 step: ``y_new`` and the last stage's point :math:`Y_{11}`."""
    K[0] = fy
    for s in range(1, _S):
        point = _A[s](K, y, h)
        K[s] = _call(f, t + _C[s] * h, point, phase)
    y_new = _B(K, y, h)
    K[_S] = _call(f, t_new, y_new, phase)
    return y_new, point


def _dense(f, t, y, h, y_new, y_last, phase, K, how):
    """:func:`symdyn.ode.methods.dense_coefficients` in floats: ``contd8``
    (three evaluations) unless ``how`` is ``"order6"`` or the step is held by
    stability (:func:`~symdyn.ode.methods.stiffness` above
    :data:`~symdyn.ode.methods.DENSE_EDGE`). Returns the rows and the
    evaluations spent."""
    delta = [b - a for a, b in zip(y, y_new, strict=True)]
    if how == ORDER7:
        num = sum((a - b) * (a - b) for a, b in zip(K[_S], K[_S - 1], strict=True))
        den = sum((a - b) * (a - b) for a, b in zip(y_new, y_last, strict=True))
        with np.errstate(all="ignore"):
            z = h * float(np.sqrt(np.float64(num) / np.float64(den)))
        if z <= DENSE_EDGE:
            for j, c in enumerate(_C_EXTRA):
                K[_S + 1 + j] = _call(f, t + c * h, _A_EXTRA[j](K, y, h), phase)
            F = [delta, [h * k - d for k, d in zip(K[0], delta, strict=True)],
                 [2 * d - h * (k1 + k0) for d, k1, k0 in zip(delta, K[_S], K[0], strict=True)]]
            return F + [[h * v for v in row(K)] for row in _D], 3
    return [delta] + [[h * v for v in row(K)] for row in _D6], 0


def _interpolate(F, y, x):
    out = [0.0] * len(y)
    for i, row in enumerate(reversed(F)):
        w = x if i % 2 == 0 else 1 - x
        out = [(o + r) * w for o, r in zip(out, row, strict=True)]
    return [o + a for o, a in zip(out, y, strict=True)]


def _outputs(F, y, t, h, t_out, k, t_new, states):
    """The outputs ``k, k+1, ...`` before ``t_new`` from the continuous
    extension ``F`` of the step from ``(t, y)``: a few in floats, more as
    arrays (the same operations in the same order: equal bit for bit).
    Returns the next output's index."""
    stop = bisect.bisect_left(t_out, t_new, k)
    if stop - k < _ARRAY_OUTPUTS:
        for j in range(k, stop):
            states[j] = _interpolate(F, y, (t_out[j] - t) / h)
        return stop
    x = (np.asarray(t_out[k:stop]) - t) / h
    states[k:stop] = polynomial_at([np.asarray(row)[None] for row in F],
                                   np.asarray(y)[None], x, np.empty((stop - k, len(y))))
    return stop


class OneSolution(NamedTuple):
    """One member's states (output times, components), its evaluations and
    attempted steps."""

    states: np.ndarray
    nfev: int
    nsteps: int


def integrate_one(f, t_out, y0, h0, *, rtol, atol, breakpoints=(), max_steps=200_000,
                  controller=None, dense_output=ORDER7):
    """Integrate one member: ``f(t, y, phase) -> list`` from ``t = 0``.

    ``t_out``: increasing output times ``>= 0``; ``y0``, ``rtol``, ``atol``:
    lists of floats (per component); ``h0``: the first step (from
    :func:`symdyn.ode.methods.initial_step`); ``controller``: as the batched
    driver's (:data:`symdyn.ode.control.DEFAULT` for None); ``dense_output``:
    as the batched driver's. Returns a
    :class:`OneSolution`; raises :class:`GiveUp`
    where the batched path must answer instead. As the batched driver, no
    step ends on an output time, and the accepted steps that hold one make
    their continuous extension.
    """
    if dense_output not in DENSE_OUTPUTS:
        raise ValueError(f"dense_output must be one of {', '.join(DENSE_OUTPUTS)}")
    control, exponent = controller_or_default(controller), DOP853.exponent
    dim = len(y0)
    t_out = list(t_out)
    t_end = t_out[-1]
    bps = sorted(b for b in breakpoints if 0 < b < t_end)
    stops = sorted(set(bps) | ({t_end} if t_end > 0 else set()))
    states, k = np.full((len(t_out), dim), np.nan), 0
    while k < len(t_out) and t_out[k] == 0:
        states[k] = y0
        k += 1
    t, y, phase = 0.0, list(y0), 0
    fy = _call(f, t, y, phase)
    nfev, nsteps, h = 1, 0, h0       # the first stage; the caller counts h0
    rejected, last_err, last_h = False, 0.0, 1.0
    K = [None] * dop853.N_EXTENDED
    for stop in stops:
        while t < stop:
            if nsteps >= max_steps:
                raise GiveUp
            step = min(h, stop - t)
            clipped = step >= stop - t
            t_new = stop if clipped else t + step
            y_new, y_last = _step(f, t, y, fy, step, t_new, phase, K, dim)
            nfev += _S
            scale = [error_scale(a, r, u, v)
                     for a, r, u, v in zip(atol, rtol, y, y_new, strict=True)]
            err = dop853_norm(_E5(K), _E3(K), step, scale, dim)
            if not math.isfinite(err):
                raise GiveUp
            predicted = control.predicted(last_err, step / last_h, exponent)
            accept, new_h = control.next_step(step, h, err, True, clipped, rejected,
                                              predicted, exponent)
            rejected = not accept
            nsteps += 1
            if not accept:
                if control.too_small(new_h, t):
                    raise GiveUp
                h = new_h
                continue
            if not clipped:
                last_err, last_h = err, step
            holds = k < len(t_out) and t_out[k] < t_new
            if holds:
                F, cost = _dense(f, t, y, step, y_new, y_last, phase, K, dense_output)
                nfev += cost
                k = _outputs(F, y, t, step, t_out, k, t_new, states)
            t, y, fy, h = t_new, y_new, K[_S], new_h
            if k < len(t_out) and t_out[k] == t:
                states[k] = y
                k += 1
        if stop in bps:                      # a new phase: fresh first stage
            phase += 1
            fy = _call(f, t, y, phase)
            nfev += 1
            last_err = 0.0
    return OneSolution(states, nfev, nsteps)
