"""High-precision ODE integration with mpmath: Gragg-Bulirsch-Stoer extrapolation.

For a macro step ``H`` (Hairer, Norsett, Wanner, *Solving ODEs I*, II.9):

1. Gragg's modified midpoint rule with ``n_j = 2j`` substeps gives
   :math:`T_{j,1}`, whose error expands in even powers of ``H/n_j``;
2. Aitken-Neville extrapolation in :math:`(H/n_j)^2`,
   :math:`T_{j,k+1} = T_{j,k} + (T_{j,k} - T_{j-1,k}) / ((n_j/n_{j-k})^2 - 1)`,
   gains two orders per column;
3. the step is accepted when two successive diagonal entries agree to
   ``10**-(dps + 3)`` (relative to ``max(1, |y|)``), and ``H`` adapts to the
   column at which that happened; otherwise ``H`` is halved.

All arithmetic runs at ``dps + 10`` digits, so the result is good to about
``dps`` digits for smooth (analytic) right-hand sides.

Layer 1, ode.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import mpmath


def _midpoint(f: Callable[..., Any], t: Any, y: Any, H: Any, n: Any) -> Any:
    h = H / n
    z0 = y
    z1 = [a + h * b for a, b in zip(y, f(t, y), strict=True)]
    for m in range(1, n):
        z0, z1 = z1, [a + 2 * h * b for a, b in zip(z0, f(t + m * h, z1), strict=True)]
    last = f(t + H, z1)
    return [(a + b + h * c) / 2 for a, b, c in zip(z1, z0, last, strict=True)]


def step(f: Callable[..., Any], t: Any, y: Any, H: Any, tol: Any, kmax: Any) -> Any:
    """One extrapolated step; (y_new, columns used) or (None, kmax) if not converged."""
    rows: list = []
    for j in range(1, kmax + 1):
        row = [_midpoint(f, t, y, H, 2 * j)]
        for k in range(1, j):
            ratio = mpmath.mpf(j) ** 2 / (j - k) ** 2 - 1
            prev, left = row[k - 1], rows[-1][k - 1]
            row.append([a + (a - b) / ratio for a, b in zip(prev, left, strict=True)])
        if j > 1:
            diff = max(abs(a - b) / max(1, abs(a))
                       for a, b in zip(row[-1], rows[-1][-1], strict=True))
            if diff <= tol:
                return row[-1], j
        rows.append(row)
    return None, kmax


def integrate_mp(f: Callable[..., Any], t_out: Any, y0: Any, dps: Any,
                 breakpoints: Any = (), max_steps: Any = 100_000) -> Any:
    """Integrate ``dy/dt = f(t, y, phase)`` (lists of mpf) from ``t = 0``.

    ``phase`` is the number of ``breakpoints`` at or before the start of the
    step (steps never straddle one). Works at ``dps + 10`` digits and returns
    the states at ``t_out`` (increasing, ``>= 0``).
    """
    with mpmath.workdps(dps + 10):
        t_out = [mpmath.mpf(x) for x in t_out]
        bps = sorted(mpmath.mpf(b) for b in breakpoints if 0 < b < t_out[-1])
        stops = sorted(set([x for x in t_out if x > 0] + bps))
        tol = mpmath.mpf(10) ** (-(dps + 3))
        kmax = max(10, dps // 2)
        y = [mpmath.mpf(v) for v in y0]
        t = mpmath.mpf(0)
        H = mpmath.mpf("0.25")
        states = {mpmath.mpf(0): y}
        steps = 0
        for stop in stops:
            phase = sum(1 for b in bps if b <= t)

            def g(tt: Any, yy: Any, phase: Any = phase) -> Any:
                return f(tt, yy, phase)
            while t < stop:
                h = min(H, stop - t)
                y_new, cols = step(g, t, y, h, tol, kmax)
                steps += 1
                if steps > max_steps:
                    raise ArithmeticError(f"more than {max_steps} extrapolation steps")
                if y_new is None:
                    H = h / 2
                    if H < tol:
                        raise ArithmeticError(f"extrapolation did not converge at t = "
                                              f"{mpmath.nstr(t, 8)}")
                    continue
                t, y = (stop if h == stop - t else t + h), y_new
                if cols <= kmax // 2 + 1:
                    grow = 4 if cols <= kmax // 3 else 2
                    H = h * grow if h == H else max(H, h)
                elif cols > (4 * kmax) // 5:
                    H = h * mpmath.mpf("0.7")
            states[stop] = y
        return [[+v for v in states[x]] for x in t_out]
