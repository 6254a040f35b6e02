"""Sampled curves: when a curve first reaches a level (:func:`first_reach`);
two results' curves on their common output times (``sd.compare``).

Layer 3, studies.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..base.checks import shown


def first_reach(t, y, level, *, log_interpolate: bool = False) -> float:
    """First time the samples ``y(t)`` reach ``level`` (``y >= level``); ``inf``: never.

    Without interpolation, the first sample time at or above the level. With
    ``log_interpolate``, linear in ``log t`` between that sample and the one
    before it (when both times are > 0). Either way a reading off the
    samples, late by up to one grid step without interpolation: for a claim
    about the reduced ODE, solve the crossing instead
    (:func:`symdyn.reduced.solve_crossing.crossing_time`, which the report's
    caption checks use).

    Examples
    --------
    >>> first_reach([1.0, 10.0, 100.0], [0.0, 0.25, 0.75], 0.5, log_interpolate=True)
    31.62...
    >>> first_reach([1.0, 10.0], [0.0, 0.1], 0.5)
    inf
    """
    t, y = np.asarray(t, dtype=float), np.asarray(y, dtype=float)
    above = np.flatnonzero(y >= level)
    if above.size == 0:
        return np.inf
    k = above[0]
    if not log_interpolate or k == 0 or t[k - 1] <= 0:
        return float(t[k])
    x0, x1 = np.log(t[k - 1]), np.log(t[k])
    return float(np.exp(x0 + (level - y[k - 1]) * (x1 - x0) / (y[k] - y[k - 1])))


#: What ``sd.compare`` compares, where both results hold it (time last), and how:
#: ``"absolute"`` ``b - a``, ``"relative"`` ``(b - a) / max(|a|, |b|)``.
OBSERVABLES = {"gamma": "absolute", "epsilon": "relative", "gamma_dot": "relative",
               "min_cosine": "absolute", "linked": "absolute", "clusters": "absolute",
               "energy": "relative", "r": "relative", "speed": "absolute"}
#: Two output times closer than this (relative) are the same time.
SAME_TIME = 1e-12


@dataclass(frozen=True, repr=False, kw_only=True)
class Comparison:
    """What :func:`compare` found: ``t`` the common output times (K,);
    ``differences[name]`` the batch + (..., K) array of ``b - a``
    (``kinds[name] == "absolute"``) or ``(b - a) / max(|a|, |b|)``
    (``"relative"``, 0 where both are 0); ``worst[name]`` the largest
    ``|difference|`` as ``(value, t, index)`` (``index``: the batch member
    and token, ``()`` for an unbatched pair); ``skipped``: observables both
    hold in shapes that do not match (a particle run's ``r`` per token, the
    reduced ODE's one ``r``). ``repr`` prints one line per observable."""

    t: np.ndarray
    differences: dict
    kinds: dict
    worst: dict
    skipped: tuple
    names: tuple

    def __getitem__(self, name):
        """``comparison["gamma"]``: the largest ``|difference|`` of ``gamma``."""
        return self.worst[name][0]

    @property
    def table(self):
        """One row per observable: ``kind``, ``worst`` (the largest
        ``|difference|``), its ``t`` and ``index``, a ``pandas.DataFrame``."""
        import pandas as pd

        return pd.DataFrame([{"observable": k, "kind": self.kinds[k], "worst": v,
                              "t": when, "index": where}
                             for k, (v, when, where) in self.worst.items()]
                            ).set_index("observable")

    def __repr__(self) -> str:
        how = {"absolute": "|b - a|", "relative": "|b - a|/max(|a|,|b|)"}
        span = f"{self.t[0]:.6g}" if len(self.t) == 1 else \
            f"[{self.t[0]:.6g}, {self.t[-1]:.6g}]"
        lines = [f"Comparison of a = {self.names[0]}", f"          and b = {self.names[1]}",
                 f"on {len(self.t)} common time{'s' if len(self.t) > 1 else ''} in {span}:"]
        width = max(len(k) for k in self.worst)
        for k, (v, when, where) in self.worst.items():
            at = "" if np.isnan(v) or v == 0 else \
                f"  at t = {when:.6g}" + (f", index {where}" if where else "")
            lines.append(f"  {k:<{width}}  worst {how[self.kinds[k]]:<20} = {v:<9.3g}{at}"
                         .rstrip())
        if self.skipped:
            lines.append(f"not compared (shapes differ): {', '.join(self.skipped)}")
        return "\n".join(lines)


def _clock_t(result, name, values, t):
    """An observable of a log-clock run (``clock == "log"``: ``t`` holds
    :math:`\\tau = \\log(1+t)`, ``r`` holds :math:`\\log r`, ``speed`` is
    :math:`|d\\theta/d\\tau|`) in the time ``t``."""
    if getattr(result, "clock", "t") != "log":
        return values
    if name == "r":
        return np.exp(values)
    if name == "speed":
        return values / (1 + t)
    return values


def _matched(ta, tb):
    """Indices ``(i, j)`` with ``ta[i]`` and ``tb[j]`` the same time (:data:`SAME_TIME`)."""
    j = np.clip(np.searchsorted(tb, ta), 1, max(len(tb) - 1, 1))
    near = np.where(np.abs(tb[j - 1] - ta) <= np.abs(tb[j] - ta), j - 1, j) if len(tb) > 1 \
        else np.zeros(len(ta), dtype=int)
    same = np.abs(tb[near] - ta) <= SAME_TIME * np.maximum(np.abs(ta), np.abs(tb[near]))
    return np.flatnonzero(same), near[same]


def compare(a, b) -> Comparison:
    """The differences of two results on their common output times: a particle
    run and the reduced ODE, two tolerances, a run and its rerun.

    ``a``, ``b``: results with output times ``t`` and observables with time
    last (``Simulation``, ``Trajectory``, or anything holding those
    attributes); a log-clock run is read in ``t`` (its ``exp(log r)``, its
    speed divided by ``1 + t``). Times are common when they agree to
    :data:`SAME_TIME` relative. The batch axes broadcast (a batch of
    particle runs against one reduced curve). Each observable of
    :data:`OBSERVABLES` both hold is compared: ``gamma``, ``min_cosine``,
    ``linked``, ``clusters`` and ``speed`` by :math:`b - a`; ``epsilon``
    (:math:`1-\\gamma`, precise far below 1e-16), ``gamma_dot``, ``energy``
    and ``r`` relative, :math:`(b - a)/\\max(|a|, |b|)`. NaN (an output not
    recorded) and a value the result flags as only a bound
    (``Simulation.bound``, after merging) are left out of the worst case.
    Returns a :class:`Comparison`.

    Examples
    --------
    >>> import numpy as np, symdyn as sd
    >>> t = np.geomspace(0.1, 20, 12)
    >>> loose = sd.solve("post-ln", n=8, beta=1.0, gamma0=0.0, t=t, rtol=1e-5)
    >>> tight = sd.solve("post-ln", n=8, beta=1.0, gamma0=0.0, t=t)
    >>> c = sd.compare(tight, loose)
    >>> c["gamma"] < 1e-4, c.worst["epsilon"][1] > 0
    (True, True)
    """
    ta, tb = (np.asarray(getattr(x, "t", None), dtype=float) for x in (a, b))
    for name, x, tx in (("a", a, ta), ("b", b, tb)):
        if tx.ndim != 1 or getattr(x, "gamma", None) is None and not any(
                getattr(x, k, None) is not None for k in OBSERVABLES):
            raise ValueError(f"{name}: expected a result with output times t and observables "
                             f"({', '.join(OBSERVABLES)}), got {shown(x)}")
    ta, tb = (np.expm1(tx) if getattr(x, "clock", "t") == "log" else tx
              for x, tx in ((a, ta), (b, tb)))
    order = np.argsort(tb, kind="stable")
    ia, jb = _matched(ta, tb[order])
    jb = order[jb]
    if not ia.size:
        raise ValueError(f"a, b: no common output times (a: {len(ta)} in [{ta.min():.6g}, "
                         f"{ta.max():.6g}], b: {len(tb)} in [{tb.min():.6g}, {tb.max():.6g}])")
    t = ta[ia]
    batch = [np.shape(getattr(x, "gamma", None))[:-1] for x in (a, b)]
    try:
        np.broadcast_shapes(*batch)
    except ValueError:
        raise ValueError(f"a, b: batch shapes {batch[0]} and {batch[1]} do not "
                         f"broadcast") from None
    differences, worst, skipped = {}, {}, []
    for name, kind in OBSERVABLES.items():
        va, vb = (getattr(x, name, None) for x in (a, b))
        if not (isinstance(va, np.ndarray) and isinstance(vb, np.ndarray)):
            continue
        va = _clock_t(a, name, _exact(a, name, va)[..., ia], t)
        vb = _clock_t(b, name, _exact(b, name, vb)[..., jb], t)
        extra = [v.shape[len(s):-1] for v, s in ((va, batch[0]), (vb, batch[1]))]
        if extra[0] != extra[1]:
            skipped.append(name)
            continue
        wa, wb = va, vb             # the batch axes lead: numpy aligns them
        with np.errstate(invalid="ignore", divide="ignore"):
            d = wb - wa
            if kind == "relative":
                scale = np.maximum(np.abs(wa), np.abs(wb))
                d = np.where(d == 0, 0.0, d / scale)
        differences[name] = d
        worst[name] = _worst(d, t)
    if not differences:
        raise ValueError(f"a, b: no observable in common to compare (compared: "
                         f"{', '.join(OBSERVABLES)})")
    return Comparison(t=t, differences=differences,
                      kinds={k: OBSERVABLES[k] for k in differences}, worst=worst,
                      skipped=tuple(skipped), names=(repr(a), repr(b)))


def _exact(result, name, values):
    """``values`` as floats, NaN where the result flags them as only a bound
    (``result.bound[name]``: a particle run's merged tokens)."""
    values = np.asarray(values, dtype=float)
    flag = (getattr(result, "bound", None) or {}).get(name)
    return values if flag is None or not np.any(flag) else np.where(flag, np.nan, values)


def _worst(d, t):
    """``(value, t, index)`` of the largest ``|d|`` (NaN left out)."""
    size = np.abs(d)
    if not np.any(np.isfinite(size) | np.isinf(size)):
        return (np.nan, np.nan, ())
    flat = int(np.nanargmax(np.where(np.isnan(size), -1.0, size)))
    idx = np.unravel_index(flat, d.shape)
    return (float(size[idx]), float(t[idx[-1]]), tuple(int(i) for i in idx[:-1]))
