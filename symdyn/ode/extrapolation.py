"""High-precision ODE integration with mpmath: Gragg-Bulirsch-Stoer extrapolation.

For a macro step ``H`` (Hairer, Norsett, Wanner, *Solving ODEs I*, II.9):

1. Gragg's modified midpoint rule with ``n_j = 2j`` substeps gives
   :math:`T_{j,1}`, whose error expands in even powers of ``H/n_j``; the
   rows share the evaluation at the step's start, so rows ``1..j`` cost
   :math:`A_j = 1 + j(j+1)` evaluations;
2. Aitken-Neville extrapolation in :math:`(H/n_j)^2`,
   :math:`T_{j,k+1} = T_{j,k} + (T_{j,k} - T_{j-1,k}) / ((n_j/n_{j-k})^2 - 1)`,
   gains two orders per column;
3. :math:`e_j = |T_{j,j} - T_{j,j-1}|` (relative to ``max(floor, |y|)`` per
   component: ``floor = 1`` holds a component to an absolute ``tol`` below 1,
   ``floor = 0`` to a relative one), of order
   :math:`H^{2j-1}`, estimates the error of row ``j``; the step is accepted
   with :math:`T_{j,j}` at the first row where :math:`e_j \\le`
   ``tol = 10**-(dps + 3)``;
4. order and step size (II.9, the strategy of ODEX): row ``j`` would need the
   step :math:`H_j = 0.9\\,H\\,(\\mathrm{tol}/e_j)^{1/(2j-1)}`; the next step
   aims at the row of least work per unit of time, :math:`A_j/H_j`, or one
   row further (with :math:`H_j A_{j+1}/A_j`) when the step converged in its
   last row, with a step kept within ``[H/10, 4H]``, and tries one row beyond
   its aim before it is rejected.

All arithmetic runs at ``dps + 10`` digits, so the result is good to about
``dps`` digits for smooth (analytic) right-hand sides.

Layer 1, ode.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import mpmath

#: The fraction of the estimated largest step that the next step takes.
SAFETY = 0.9
#: A step is at most this many times the last one, and at least its inverse
#: of ``SHRINK`` times.
GROW, SHRINK = 4, 10


class OutsideDomain(ArithmeticError):
    """Raised by ``f`` at a state outside its law's domain, with the ``error``
    to report. At a trial state inside a step it rejects the step (a step
    ``SHRINK`` times smaller follows); at a step's start, or when the step
    cannot shrink further, ``error`` itself is raised."""

    def __init__(self, error: Exception):
        super().__init__(str(error))
        self.error = error


def _midpoint(f: Callable[..., Any], t: Any, y: Any, f0: Any, H: Any, n: int) -> Any:
    """Gragg's rule with ``n`` substeps over ``[t, t + H]`` (``f0 = f(t, y)``)."""
    h = H / n
    z0 = y
    z1 = [a + h * b for a, b in zip(y, f0, strict=True)]
    for m in range(1, n):
        z0, z1 = z1, [a + 2 * h * b for a, b in zip(z0, f(t + m * h, z1), strict=True)]
    last = f(t + H, z1)
    return [(a + b + h * c) / 2 for a, b, c in zip(z1, z0, last, strict=True)]


def work(j: int) -> int:
    """Evaluations of rows ``1..j``: :math:`A_j = 1 + j(j+1)`."""
    return 1 + j * (j + 1)


def step(f: Callable[..., Any], t: Any, y: Any, f0: Any, H: Any, tol: Any,
         rows: int, floors: Any = None) -> tuple[Any, dict[int, Any]]:
    """One extrapolated step (``f0 = f(t, y)``) over at most ``rows`` rows:
    ``(T_jj or None, {j: e_j})``, None when no row converged."""
    floors = [1] * len(y) if floors is None else floors
    errors: dict[int, Any] = {}
    above: list = []
    for j in range(1, rows + 1):
        row = [_midpoint(f, t, y, f0, H, 2 * j)]
        for k in range(1, j):
            ratio = mpmath.mpf(j) ** 2 / (j - k) ** 2 - 1
            row.append([a + (a - b) / ratio for a, b in zip(row[k - 1], above[k - 1],
                                                            strict=True)])
        if j > 1:
            errors[j] = max(abs(a - b) / (max(floor, abs(a)) or 1)
                            for a, b, floor in zip(row[-1], row[-2], floors, strict=True))
            if errors[j] <= tol:
                return row[-1], errors
        above = row
    return None, errors


def next_aim(H: Any, tol: Any, errors: dict[int, Any], converged: bool,
             most: int) -> tuple[int, Any]:
    """The row to aim at and the step for it: least work per unit of time."""
    steps = {j: H * GROW if err == 0 else
             H * SAFETY * (tol / err) ** (1 / mpmath.mpf(2 * j - 1))
             for j, err in errors.items()}
    j = min(steps, key=lambda i: work(i) / steps[i])
    h = steps[j]
    if converged and j == max(errors) and j < most:
        j, h = j + 1, h * work(j + 1) / work(j)
    return j, min(H * GROW, max(H / SHRINK, h))


def integrate_mp(f: Callable[..., Any], t_out: Any, y0: Any, dps: Any,
                 breakpoints: Any = (), max_steps: Any = 100_000, floors: Any = None) -> Any:
    """Integrate ``dy/dt = f(t, y, phase)`` (lists of mpf) from ``t = 0``.

    ``floors`` (one per component, 1 by default): each component is held to
    ``tol * max(floor, |y|)``, absolute below ``floor``; ``0`` holds it
    relatively (a component that keeps its sign, such as a radius).
    ``phase`` is the number of ``breakpoints`` at or before the start of the
    step (steps never straddle one). Works at ``dps + 10`` digits and returns
    the states at ``t_out`` (increasing, ``>= 0``).
    """
    with mpmath.workdps(dps + 10):
        t_out = [mpmath.mpf(x) for x in t_out]
        bps = sorted(mpmath.mpf(b) for b in breakpoints if 0 < b < t_out[-1])
        stops = sorted(set([x for x in t_out if x > 0] + bps))
        tol = mpmath.mpf(10) ** (-(dps + 3))
        most = max(10, dps // 2)
        y = [mpmath.mpf(v) for v in y0]
        t = mpmath.mpf(0)
        H = mpmath.mpf("0.25")
        aim = most - 1              # the first step may use every row
        states = {mpmath.mpf(0): y}
        steps = 0
        for stop in stops:
            phase = sum(1 for b in bps if b <= t)

            def g(tt: Any, yy: Any, phase: Any = phase) -> Any:
                return f(tt, yy, phase)
            f0 = None
            while t < stop:
                if f0 is None:
                    try:
                        f0 = g(t, y)
                    except OutsideDomain as exc:
                        raise exc.error from None
                h = min(H, stop - t)
                steps += 1
                if steps > max_steps:
                    raise ArithmeticError(f"more than {max_steps} extrapolation steps")
                try:
                    y_new, errors = step(g, t, y, f0, h, tol, min(aim + 1, most), floors)
                except OutsideDomain as exc:
                    H = h / SHRINK
                    if H < tol:
                        raise exc.error from None
                    continue
                converged = y_new is not None
                aim, H_next = next_aim(h, tol, errors, converged, most)
                if not converged:
                    H = H_next
                    if H < tol:
                        raise ArithmeticError(f"extrapolation did not converge at t = "
                                              f"{mpmath.nstr(t, 8)}")
                    continue
                t, y, f0 = (stop if h == stop - t else t + h), y_new, None
                H = H_next if h == H else max(H, H_next)
            states[stop] = y
        return [[+v for v in states[x]] for x in t_out]
