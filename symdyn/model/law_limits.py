"""Speed laws that no step size resolves, refused before the work.

A speed law :math:`s` enters the velocity as :math:`P_\\theta A / s`. Two
shapes of the law in ``t`` would cost an adaptive integrator without bound
(or fail after minutes), so ``solve`` and ``simulate`` (continuous dynamics)
check them on ``[0, T]`` first, in well under a second:

* **oscillation**: a periodic function of ``t`` (``sin``, ``cos``, ``tan``,
  ...) or a jump function (``floor``, ``ceiling``, ``frac``) whose argument
  runs through many periods. Each period costs about
  :data:`STEPS_PER_PERIOD` steps (measured: nGPT with ``alpha = 2 +
  sin(w t)``, about 110 evaluations, 9 DOP853 steps, per period at
  ``rtol = 1e-11``), so more than :data:`MAX_PERIODS` periods are refused.
  The count is the variation of the argument on a fine grid divided by the
  period.
* **zeros**: the factor of ``s`` in ``t`` (with ``n``, ``beta`` and the free
  parameters) that vanishes somewhere on ``[0, T]``: the velocity is
  infinite there (a law ``|t - c|^p`` with ``p >= 1`` sends the flow to its
  ``t -> oo`` limit within finite time). Found at the local minima of
  ``|factor|`` on the grid, refined to a few float spacings: a zero is a
  value at most :data:`ZERO_DEPTH` times the value a millionth of ``t``
  away. An *infinite* ``s``, a velocity that vanishes at an instant
  (nGPT's ``alpha = 0``, ``s = A_norm/alpha``), is fine.

Layer 1, model.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np
import sympy as sp

from .guards import SpeedLawError, lambdify, law_text
from .symbols import beta as b_sym
from .symbols import n as n_sym
from .symbols import t as t_sym

#: Periods of the periodic functions (their argument's variation per period).
PERIODS = {sp.sin: 2 * np.pi, sp.cos: 2 * np.pi, sp.sec: 2 * np.pi, sp.csc: 2 * np.pi,
           sp.tan: np.pi, sp.cot: np.pi, sp.floor: 1.0, sp.ceiling: 1.0, sp.frac: 1.0}
#: Steps an adaptive step resolves one period with, about (see the module docstring).
STEPS_PER_PERIOD = 10
#: The most periods of an oscillating speed law on [0, T]: about 20,000 steps.
MAX_PERIODS = 2_000
#: Points of the grid on [0, T] (and as many, geometric, toward t = 0), fewer
#: (at least 257) where many members make more than WORK evaluations.
GRID = 4097
WORK = 2**22
#: A local minimum of the factor at most this fraction of its value nearby is a zero.
ZERO_DEPTH = 1e-8
#: Grid values evaluated at once (members x grid), to bound the memory.
CHUNK = 2**21
#: |r| below this is at the bottom of the float range (the smallest normal
#: float is 2.2e-308): a radial law followed there has underflowed.
R_UNDERFLOW = 1e-300


def underflow(s, value, when: str) -> str:
    """Why ``r`` of scheme ``s`` cannot be followed ``when`` (``"at t = 3"``):
    it reached ``value``, below :data:`R_UNDERFLOW`."""
    return (f"r underflowed {when}: the radial law dr/dt = {law_text(s.radial, 60)} of "
            f"{s.name} takes r to {value:.3g}, below {R_UNDERFLOW:g} (the smallest normal "
            f"float is 2.2e-308), where floats cannot follow it; stop at an earlier t")


def check_speed(s, T: float, values: dict, who: str) -> None:
    """Refuse the speed law of scheme ``s`` on ``[0, T]`` if it oscillates
    more than :data:`MAX_PERIODS` times or if its factor in ``t`` vanishes.

    ``values``: the per-member values (arrays) of ``n``, ``beta`` and the free
    parameters, keyed by their sympy symbols; ``who`` names the caller.
    Raises ``ValueError`` naming the law, the time and the limit.
    """
    concrete, periodic, factor = _speed_facts(s, frozenset(values))
    if not concrete:                    # not concrete: the solvers say so
        return
    for atom in periodic:
        periods = _variation(atom.args[0], T, values) / PERIODS[atom.func]
        if not periods <= MAX_PERIODS:
            name = ", ".join(s.holding({atom})) or "speed"
            raise ValueError(
                f"{name}: {law_text(atom, 40)} in the speed law of {s.name} runs through "
                f"{periods:.3g} periods on [0, {T:.6g}]; {who} resolves at most "
                f"{MAX_PERIODS:,} (about {STEPS_PER_PERIOD} steps each): shorten t or "
                f"slow the oscillation")
    if factor is not None and np.isfinite(T):
        _check_zeros(s, factor, T, values, who)


@lru_cache(maxsize=256)
def _speed_facts(s, symbols: frozenset):
    """What :func:`check_speed` reads of the speed law, once per scheme and set
    of valued ``symbols``: whether it is concrete, its periodic atoms whose
    argument runs with ``t``, and its factor in ``t`` (None without one)."""
    if s.undefined(s.speed):
        return False, (), None
    known = {t_sym, n_sym, b_sym, *symbols}
    periodic = tuple(atom for atom in sorted(s.speed.atoms(*PERIODS), key=sp.default_sort_key)
                     if atom.args[0].has(t_sym) and atom.args[0].free_symbols <= known)
    factor = sp.Mul(*[f for f in sp.Mul.make_args(s.speed)
                      if f.has(t_sym) and f.free_symbols <= known])
    return True, periodic, factor if factor.has(t_sym) else None


def _grid(T, members=1):
    """``[0, T]``: uniform, and geometric toward 0 (laws in ``log t``, ``1/t``),
    :data:`GRID` points each, fewer for many ``members`` (:data:`WORK`)."""
    if not T > 0:
        return np.zeros(1)
    size = int(np.clip(WORK // (2 * members), 257, GRID))
    with np.errstate(over="ignore"):
        return np.unique(np.concatenate([np.linspace(0, T, size),
                                         np.geomspace(T * 1e-12, T, size)]))


def _compiled(expr, values):
    """``expr`` as ``f(t, *columns)`` and the distinct member rows of the
    symbols it uses (one row of nothing when it uses none)."""
    used = _used(expr, tuple(values))
    f = _lambdified(expr, used)
    if not used:
        return f, np.zeros((1, 0))
    return f, np.unique(np.stack([np.ravel(values[x]) for x in used], axis=1), axis=0)


@lru_cache(maxsize=256)
def _used(expr, symbols):
    """The ``symbols`` that ``expr`` contains, in their order."""
    return tuple(x for x in symbols if expr.has(x))


@lru_cache(maxsize=256)
def _lambdified(expr, used):
    return lambdify([t_sym, *used], expr, "speed")


def _evaluate(f, tt, rows):
    """``f`` on times ``tt`` (shape (G,) or (m, G)) for member rows (m, k): (m, G)."""
    with np.errstate(all="ignore"):
        out = f(tt if tt.ndim == 2 else tt[None, :], *(rows[:, j, None]
                                                        for j in range(rows.shape[1])))
    return np.broadcast_to(np.asarray(out, dtype=float), (len(rows), tt.shape[-1]))


def _variation(arg, T, values):
    """The largest total variation of ``arg`` on ``[0, T]`` among the members."""
    f, rows = _compiled(arg, values)
    grid = _grid(T, len(rows))
    most, step = 0.0, max(CHUNK // len(grid), 1)
    for i in range(0, len(rows), step):
        g = _evaluate(f, grid, rows[i:i + step])
        with np.errstate(all="ignore"):
            tv = np.sum(np.abs(np.diff(g, axis=1)), axis=1)
        most = max(most, float(np.max(np.where(np.isnan(tv), np.inf, tv))))
    return most


def _check_zeros(s, factor, T, values, who):
    """Raise if ``|factor|`` vanishes on ``[0, T]`` for some member."""
    f, rows = _compiled(factor, values)
    grid = _grid(T, len(rows))
    step = max(CHUNK // len(grid), 1)
    for i in range(0, len(rows), step):
        block = rows[i:i + step]
        a = np.abs(_evaluate(f, grid, block))
        found = _zero(f, grid, block, a, T)
        if found is not None:
            m, tz, value = found
            used = [x for x in values if factor.has(x)]
            at = "".join(f", {x} = {v:g}" for x, v in zip(used, block[m], strict=True))
            raise SpeedLawError(
                f"speed: the speed law s = {law_text(s.speed, 60)} of {s.name} vanishes at "
                f"t = {tz:.6g}{at} ({law_text(factor, 40)} = {value:.3g}), where the "
                f"velocity P A / s is infinite; {who} needs s > 0 on [0, {T:.6g}] "
                f"(s = +inf, velocity 0, is fine: nGPT's alpha may vanish)")


def _zero(f, grid, rows, a, T):
    """The first zero of ``|f|`` among ``rows``: ``(row, t, value)`` or None.

    An exact zero (or a value that is not a number) on the grid, or an
    interior local minimum of ``a = |f|`` on the grid which, refined by a
    golden-section search to a few float spacings, is at most
    :data:`ZERO_DEPTH` of ``|f|`` a millionth of its time away."""
    bad = ~(a > 0)
    if bad.any():
        m, k = np.argwhere(bad)[0]
        return int(m), float(grid[k]), float(a[m, k])
    mid = a[:, 1:-1]
    dip = (mid <= a[:, :-2]) & (mid <= a[:, 2:]) & (mid < 0.99 * np.maximum(a[:, :-2], a[:, 2:]))
    m, k = np.nonzero(dip)
    if not m.size:
        return None
    lo, hi = grid[k].copy(), grid[k + 2].copy()
    golden = (np.sqrt(5) - 1) / 2
    for _ in range(120):                  # brackets shrink by 0.618 a round
        x1, x2 = hi - golden * (hi - lo), lo + golden * (hi - lo)
        f1, f2 = _at(f, x1, rows[m]), _at(f, x2, rows[m])
        lo, hi = np.where(f1 <= f2, lo, x1), np.where(f1 <= f2, x2, hi)
    mid = (lo + hi) / 2                   # and the 16 floats either side of it
    x = np.stack([lo, hi, *(mid + k * np.spacing(mid) for k in range(-16, 17))])
    vals = np.stack([_at(f, xi, rows[m]) for xi in x])
    j = np.argmin(vals, axis=0)
    tz, low = x[j, np.arange(len(m))], vals[j, np.arange(len(m))]
    delta = 1e-6 * np.where(tz > 0, tz, T)         # a millionth of the time, scale-free
    near = np.minimum(_at(f, np.clip(tz - delta, 0, T), rows[m]),
                      _at(f, np.clip(tz + delta, 0, T), rows[m]))
    zero = ~(low > ZERO_DEPTH * near)
    if not zero.any():
        return None
    i = int(np.argmax(zero))
    return int(m[i]), float(tz[i]), float(low[i])


def _at(f, tt, rows):
    """``|f|`` at one time per member: ``tt`` (q,), ``rows`` (q, k)."""
    with np.errstate(all="ignore"):
        out = f(tt, *(rows[:, j] for j in range(rows.shape[1])))
    return np.abs(np.broadcast_to(np.asarray(out, dtype=float), tt.shape))
