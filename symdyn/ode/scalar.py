"""One member in Python floats: the small-problem path of :mod:`symdyn.ode.integrate`.

A batch of one spends most of its time on fixed costs: every numpy call on a
1-element array costs about a microsecond, and a DOP853 step makes a few
hundred of them. This module runs *the same method* (the one stage loop of
:mod:`symdyn.ode.rk` with its sums on floats, :class:`~symdyn.ode.rk.FloatSums`;
the controller, error scale and error norm of :mod:`symdyn.ode.control`, the
very functions the batched driver calls, here on Python floats; steps clipped
onto breakpoints, the continuous extension for output times) on lists of
Python floats, with right-hand sides compiled for ``"float"``
(:func:`symdyn.base.arithmetic.on_floats`).

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
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import numpy as np

from . import dop853
from .control import controller_or_default, error_scale
from .methods import (
    DENSE_EDGE,
    DENSE_OUTPUTS,
    DOP853,
    ORDER7,
    ExplicitPair,
    Floats,
    Stages,
    contd8_coefficients,
    declared_rows,
    free_coefficients,
    interpolate,
    stiffness,
)
from .rk import FloatSums

_ARRAY_OUTPUTS = 8      # outputs inside one step from which numpy reads them


class GiveUp(Exception):
    """The scalar path does not apply here; use the batched integrator."""


def _call(f: Callable[..., Any], t: Any, y: Any, phase: Any) -> Any:
    try:
        out = f(t, y, phase)
    except (ArithmeticError, ValueError):
        raise GiveUp from None
    if not math.isfinite(math.fsum(out)):   # a non-finite value (or an overflowing sum:
        raise GiveUp                        # the batched path answers then)
    return out


def _dense(method: Any, f: Callable[..., Any], t: Any, y: Any, h: Any, y_new: list,
           y_last: Any, phase: Any, K: Any, how: Any) -> Any:
    """:meth:`symdyn.ode.methods.ExplicitPair.dense` for one member (the same
    coefficient functions on :class:`~symdyn.ode.methods.Floats`): for DOP853
    ``contd8`` (three evaluations) unless ``how`` is ``"order6"`` or the step
    is held by stability (:func:`~symdyn.ode.methods.stiffness` above
    :data:`~symdyn.ode.methods.DENSE_EDGE`); else the order-6 extension, or
    another pair's declared interpolant. Returns the rows and the
    evaluations spent."""
    tab = method.tab
    if tab is not dop853:
        return free_coefficients(y, h, y_new, K, declared_rows(tab), on=Floats), 0
    if how == ORDER7 and stiffness(K, h, y_new, y_last, tab.N_STAGES) <= DENSE_EDGE:
        return contd8_coefficients(lambda tt, yy: _call(f, tt, yy, phase), t, y, h, y_new, (),
                                   K, on=Floats), 3
    return free_coefficients(y, h, y_new, K, on=Floats), 0


def _outputs(F: Any, y: Any, t: Any, h: Any, t_out: Any, k: Any, t_new: Any,
             states: Any) -> Any:
    """The outputs ``k, k+1, ...`` before ``t_new`` from the continuous
    extension ``F`` of the step from ``(t, y)``: a few in floats, more as
    arrays (the same operations in the same order: equal bit for bit).
    Returns the next output's index."""
    stop = bisect.bisect_left(t_out, t_new, k)
    if stop - k < _ARRAY_OUTPUTS:
        for j in range(k, stop):
            states[j] = interpolate(F, y, (t_out[j] - t) / h, on=Floats)
        return stop
    x = (np.asarray(t_out[k:stop]) - t) / h
    states[k:stop] = interpolate([np.asarray(row)[None] for row in F], np.asarray(y)[None], x,
                                 np.empty((stop - k, len(y))))
    return stop


class OneSolution(NamedTuple):
    """One member's states (output times, components), its evaluations and
    attempted steps."""

    states: np.ndarray
    nfev: int
    nsteps: int


def integrate_one(f: Callable[..., Any], t_out: Sequence[float], y0: Sequence[float], h0: float,
                  *, rtol: Sequence[float], atol: Sequence[float],
                  breakpoints: Sequence[float] = (), max_steps: int = 200_000,
                  controller: Any = None, dense_output: str = ORDER7,
                  method: ExplicitPair = DOP853) -> OneSolution:
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
    control, exponent = controller_or_default(controller), method.exponent
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
    K: list = [None] * method.stages
    stages = Stages(K, FloatSums())
    S = method.tab.N_STAGES

    def call(tt: float, yy: list) -> list:      # _call in the current phase
        try:
            out = f(tt, yy, phase)
        except (ArithmeticError, ValueError):
            raise GiveUp from None
        if not math.isfinite(math.fsum(out)):
            raise GiveUp
        return out
    for stop in stops:
        while t < stop:
            if nsteps >= max_steps:
                raise GiveUp
            step = min(h, stop - t)
            clipped = step >= stop - t
            t_new = stop if clipped else t + step
            done = method.step(call, t, y, fy, step, t_new, (), stages)
            y_new = done.y_new
            nfev += S
            scale = [error_scale(a, r, u, v)
                     for a, r, u, v in zip(atol, rtol, y, y_new, strict=True)]
            err = method.error(done, step, scale, dim)
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
                F, cost = _dense(method, f, t, y, step, y_new, done.y_last, phase, K,
                                 dense_output)
                nfev += cost
                k = _outputs(F, y, t, step, t_out, k, t_new, states)
            t, y, fy, h = t_new, y_new, done.f_new, new_h
            if k < len(t_out) and t_out[k] == t:
                states[k] = y
                k += 1
        if stop in bps:                      # a new phase: fresh first stage
            phase += 1
            fy = _call(f, t, y, phase)
            nfev += 1
            last_err = 0.0
    return OneSolution(states, nfev, nsteps)
