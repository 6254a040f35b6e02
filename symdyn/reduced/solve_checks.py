"""The checks of ``sd.solve``: its arguments, its size, and the faults of a law.

Before solving: the arguments broadcast together (:func:`broadcast_arguments`), the
batch fits in memory (:func:`_check_size`), the tolerances are in range, a
speed law of time and parameters only is positive on ``[0, t_max]``
(:func:`check_time_law`). After a failed solve: the cause named from the
state where the field was refused (:func:`field_fault`, :func:`law_fault`).

Layer 2, reduced.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from ..base.checks import RTOL_FLOOR, check_gamma0, finite_array, shown, tolerance
from ..model.guards import law_text
from ..model.law_limits import R_UNDERFLOW, underflow
from ..model.parameters import check_free_values
from ..model.scheme import Scheme
from ..model.symbols import beta as b_sym
from ..model.symbols import n as n_sym
from ..model.symbols import t as t_sym
from .compile import form_of

# mpmath digits: dps = 80 answers in seconds (Pre-LN to t = 10: 6 s; dps = 100
# took 70 s), and covers the unnormalized kernel to beta of about 150.
MAX_DPS = 80

def broadcast_arguments(s: Scheme, n, beta, gamma0, r0, params: dict, *, n_inf=False):
    """The arguments as float arrays broadcast together: ``n, beta, gamma0, r0``
    and a dict of the scheme's free parameters (defaults where not given);
    ``n_inf``: ``n = inf`` (the long-context limit) passes."""
    unknown = set(params) - set(s.defaults)
    if unknown:
        allowed = ", ".join(s.defaults) or "none"
        names = law_text(", ".join(sorted(unknown)), 60)
        raise ValueError(f"{names}: not a parameter of {s.name} (its free parameters: "
                         f"{allowed})")
    values = {k: finite_array(params.get(k, v), k) for k, v in s.defaults.items()}
    for sym in s.symbols:
        check_free_values(sym, values[sym.name], sym.name)
    named = {"n": finite_array(n, "n", 2.0, inf=n_inf), "beta": finite_array(beta, "beta", 0.0),
             "gamma0": finite_array(gamma0, "gamma0"),
             "r0": finite_array(r0, "r0", 0.0, low_open=True), **values}
    try:
        arrays = dict(zip(named, np.broadcast_arrays(*named.values()), strict=True))
    except ValueError:
        shapes = ", ".join(str(np.shape(v)) for v in named.values())
        raise ValueError(f"{', '.join(named)}: shapes {shapes} do not broadcast") from None
    check_gamma0(arrays["gamma0"], arrays["n"])
    return [arrays.pop(k) for k in ("n", "beta", "gamma0", "r0")] + [arrays]


def check_r_underflow(system, tr):
    """A solution whose ``r`` fell below :data:`R_UNDERFLOW` reports rounding
    (0 or a subnormal number), not the law's ``r``: refused, naming the first
    output time where it happened."""
    low = ~(np.abs(tr.r) >= R_UNDERFLOW)
    if low.any():
        idx = tuple(np.argwhere(low)[0])
        raise _underflow(system, float(tr.r[idx]), f"by t = {tr.t[idx[-1]]:.6g}",
                         float(tr.n[idx[:-1]]), float(tr.beta[idx[:-1]]))


def _underflow(system, value, when, nk, bk):
    return ValueError(f"radial: {underflow(system.scheme, value, when)} "
                      f"(n = {nk:g}, beta = {bk:g})")


def check_tolerance(value, name):
    """rtol in [checks.RTOL_FLOOR, 1), atol in (0, 1)."""
    return tolerance(value, name, RTOL_FLOOR if name == "rtol" else 0.0)


def law_fault(system, what, value, tt, nk, bk):
    """The error for a speed <= 0 (or not finite), or r <= 0, along a trajectory."""
    s = system.scheme
    if what == "radial" and abs(value) < R_UNDERFLOW:   # stalled at the float's bottom
        return _underflow(system, value, f"at t = {tt:.6g}", nk, bk)
    if what == "radial":
        return ValueError(f"radial: the radial law dr/dt = {s.radial} of {s.name} "
                          f"drives r to {value:.3g} at t = {tt:.6g} (n = {nk:g}, "
                          f"beta = {bk:g}); r must stay > 0")
    return ValueError(f"speed: the speed law s = {s.speed} of {s.name} is {value:.3g} "
                      f"at t = {tt:.6g} (n = {nk:g}, beta = {bk:g}); it must be "
                      f"positive and finite along the trajectory")


# Under the unnormalized kernel gamma closes in on 1 within a time of order
# e^-beta (the rate of log(1 - gamma) grows to ~2 e^beta / s): floats resolve
# that for beta up to about 30 (the integrator's smallest step is 1e-14);
# mpmath at D digits resolves e^-beta > 10^-D.
UNNORMALIZED = ("under the unnormalized kernel gamma reaches 1 within a time of "
                 "order e^-beta, which floats resolve for beta up to about 30: "
                 f"use dps= (beta/2 digits or more, at most {MAX_DPS})")


def field_fault(system, f_norm, state, start, values):
    """Name the cause of a non-finite field (or a stalled member) at ``state``:
    ``(t, epsilon, r, speed, gamma)`` (``f_norm`` compiled with ``G``,
    :attr:`StableSystem.gamma_args`); ``start``: the same at t = 0; ``values``:
    the member's ``n, beta`` and free parameters. None if unknown."""
    tt, eps, r, speed, gam = state[:5]
    nk, bk = values[0], values[1]
    if not r > 1e-8 * start[2]:           # r <= 0, or stalled on its way there
        return law_fault(system, "radial", r, tt, nk, bk)
    with np.errstate(all="ignore"):
        norm = float(f_norm(tt, eps, gam, r, *values))
    where = f"at t = {tt:.6g}, gamma = {shown(float(gam))}, n = {nk:g}, beta = {bk:g}"
    if norm == 0:
        return ValueError(f"gamma0, beta: A_k = 0 {where} (the regular simplex with "
                          f"beta = 0), and {system.scheme.name} divides by |A_k|")
    if np.isnan(norm):
        return ValueError(f"n, gamma0: |A_k|^2, a sum of O(n) terms that cancels to O(1) "
                          f"next to the regular simplex gamma = -1/(n-1), rounds below 0 "
                          f"in floats {where}; use dps= or start farther from the simplex")
    if not np.isfinite(norm):
        return ValueError(f"beta: e^beta overflows a float {where} under the "
                          f"unnormalized kernel (beta < 709); use dps=")
    if not speed > 1e-8 * start[3]:       # <= 0, not finite, or stalled toward 0
        return law_fault(system, "speed", speed, tt, nk, bk)
    return None


def check_time_law(system, times, n, beta, params):
    """A speed law in t, n, beta and free parameters only is checked on
    [0, t_max] before solving: its first non-positive or non-finite value,
    located by bisection."""
    checked, in_time, used = _time_law(system)
    if not checked:
        return
    T = times[-1]
    grid = (np.unique(np.concatenate([[0.0], np.linspace(0, T, 1025), times,
                                      np.geomspace(T * 1e-12, T, 1025) if T > 0 else []]))
            if in_time else np.zeros(1))     # constant in t: one time tells
    columns = [np.ravel(x) for x in (n, beta, *params.values())]
    # one tuple per distinct value of the symbols the law depends on
    key = np.stack([c if u else np.zeros_like(c) for c, u in zip(columns, used,
                                                                    strict=True)], axis=1)
    _, first = np.unique(key, axis=0, return_index=True)
    breaks = np.concatenate([[0.0], system.breakpoints])

    def bad(tt, member):
        tt = np.atleast_1d(tt)
        phase = np.searchsorted(breaks, tt, side="right") - 1
        val = np.empty(len(tt))
        laws = system.laws("numpy", form=str(form_of(member[0])))
        with np.errstate(all="ignore"):     # epsilon = 1, gamma = 0, r = 1: not read
            for p in np.unique(phase):
                val[phase == p] = laws[p][0](tt[phase == p], 1.0, 0.0, 1.0, *member)
        return ~(val > 0), val              # +inf passes: 1/s = 0

    for i in first:
        member = [c[i] for c in columns]
        flags, val = bad(grid, member)
        if not flags.any():
            continue
        k = int(np.argmax(flags))
        if k > 0:                      # bisect between the last good and first bad time
            lo, hi = grid[k - 1], grid[k]
            for _ in range(60):
                mid = (lo + hi) / 2
                if mid in (lo, hi):
                    break
                lo, hi = (lo, mid) if bad(mid, member)[0][0] else (mid, hi)
            grid[k], val[k] = hi, bad(hi, member)[1][0]
        raise law_fault(system, "speed", val[k], grid[k], member[0], member[1])


@lru_cache(maxsize=256)
def _time_law(system):
    """What :func:`check_time_law` needs of the speed law, once per system:
    whether it is checked at all (a law in t, n, beta and the free parameters
    that is not a positive number), whether it depends on t, and which of n,
    beta and the parameters it uses."""
    law = system.speed
    own = set(system.scheme.symbols)
    checked = (law.free_symbols <= {t_sym, n_sym, b_sym} | own
               and not (law.is_number and law.is_positive and law.is_finite))
    return (checked, law.has(t_sym),
            tuple(law.has(x) for x in (n_sym, b_sym, *system.scheme.symbols)))


def unnormalized_hint(system):
    return f"; {UNNORMALIZED}" if system.attention == "unnormalized" else ""
