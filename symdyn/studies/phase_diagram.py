"""The clustering phase diagram and its equiangular prediction.

As in Geshkovski, Letrouit, Polyanskiy and Rigollet ("A mathematical
perspective on Transformers"): ``n`` tokens drawn uniformly on the sphere of
``R^d``, identity weights; the colour at ``(beta, t)`` is the fraction of
pairs with :math:`\\langle\\theta_i, \\theta_j\\rangle \\ge 0.999`, averaged
over seeds. The equiangular model predicts the transition time
:math:`T_*(\\beta)`, the first time :math:`\\gamma(t)` from
:math:`\\gamma_0 = 0` reaches 0.999 (uniform points in high dimension are
nearly orthogonal, so the prediction should improve as ``d`` grows).

The empirical transition :math:`t_{1/2}(\\beta)` is the time at which the
linked fraction first reaches 1/2 (linear in :math:`\\log t` between saved
times). The distance to the curve, per ``d``, is the mean over ``beta`` of
:math:`|\\log_{10} t_{1/2} - \\log_{10} T_*|` in decades, over the ``beta``
where both lie inside the time window; ``beta`` where only one does are
counted apart (``mismatched``).

Layer 3, studies.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..base.checks import finite_array, is_real, number, shown
from ..reduced.solve_crossing import crossing_time
from .curves import first_reach
from .grid import listed
from .sweeps import sweep

LEVEL = 0.999


def equiangular_time(scheme, n, beta, level=LEVEL, gamma0=0.0, t_max=1e6):
    r""":math:`T_*`: first time :math:`\gamma(t) = ` ``level`` from ``gamma0``.

    All ``beta`` at once, in one batched solve from ``t = 0`` in which every
    member stops at its crossing (:func:`symdyn.reduced.solve_crossing.crossing_time`:
    a terminal event on :math:`u = \log(1-\gamma)`, located on the solver's
    continuous extension). ``inf`` when the level is not reached by ``t_max``.

    Examples
    --------
    >>> from symdyn.studies.phase_diagram import equiangular_time
    >>> T = equiangular_time("post-ln", n=32, beta=[1.0, 8.0])
    >>> [round(float(x), 3) for x in T]
    [5.27, 73.446]
    """
    beta = np.atleast_1d(finite_array(beta, "beta", 0.0))
    if not (is_real(level) and 0 < level < 1):
        raise ValueError(f"level must lie in (0, 1), got {shown(level)}")
    if not (is_real(gamma0) and gamma0 < level):
        raise ValueError(f"gamma0 must be a number below level = {level}, got {shown(gamma0)}")
    number(t_max, "t_max", 1e-3, low_open=True)
    return np.asarray(crossing_time(scheme, level, n=n, beta=beta, gamma0=gamma0, t_max=t_max))


@dataclass(frozen=True, kw_only=True)
class PhaseDiagram:
    """One scheme's diagram; ``linked[i, j, k]``: ``d[i]``, ``beta[j]``, ``t[k]``."""

    scheme: str
    n: int
    d: tuple
    beta: np.ndarray
    t: np.ndarray
    linked: np.ndarray
    prediction: np.ndarray          # T_*(beta)
    transition: np.ndarray          # t_1/2 per (d, beta)
    distance: np.ndarray            # decades, per d
    mismatched: np.ndarray          # beta where only one of t_1/2, T_* is in the window
    level: float = LEVEL            # the cosine at which two tokens count as linked


def diagrams(table, n=32, level=LEVEL, schemes=None) -> dict[str, PhaseDiagram]:
    """Phase diagrams of a sweep table (``sd.sweep`` with ``init="sphere"``).

    ``schemes`` maps the table's scheme names to Scheme objects (needed for
    custom schemes; built-in names resolve by themselves).
    """
    schemes = schemes or {}
    out = {}
    t = np.sort(table.t.unique())
    for scheme, part in table.groupby("scheme", sort=False):
        ds = tuple(sorted(part.d.unique()))
        betas = np.sort(part.beta.unique())
        mean = part.groupby(["d", "beta", "t"]).linked.mean()
        linked = mean.to_numpy().reshape(len(ds), len(betas), len(t))
        T = equiangular_time(schemes.get(scheme, scheme), n, betas, level=level)
        window = (T >= t[t > 0].min()) & (T <= t.max())
        trans = np.array([[first_reach(t, linked[i, j], 0.5, log_interpolate=True)
                           for j in range(len(betas))] for i in range(len(ds))])
        dist, miss = [], []
        for i in range(len(ds)):
            inside = np.isfinite(trans[i]) & (trans[i] > 0)
            both = inside & window
            dist.append(float(np.mean(np.abs(np.log10(trans[i][both] / T[both]))))
                        if both.any() else np.inf)
            miss.append(int(np.sum(inside != window)))
        out[scheme] = PhaseDiagram(scheme=scheme, n=n, d=ds, beta=betas, t=t, linked=linked,
                                   prediction=T, transition=trans, distance=np.array(dist),
                                   mismatched=np.array(miss), level=level)
    return out


def phase_diagram(schemes=("post-ln",), d=(8, 128, 1024), beta=None, t=None, n=32,
                  seeds=8, **sweep_options):
    """Sweep the particle system and build the diagrams: ``(diagrams, table)``.

    ``beta`` defaults to ``0, 1, ..., 9``; ``t`` to 41 times from 0.1 to 1000
    (logarithmic) after 0. ``sweep_options`` go to :func:`~symdyn.studies.sweeps.sweep`
    (``executor``, ``workers``, ``scheduler``, ``cache``, ``progress``, ...).

    Examples
    --------
    >>> import numpy as np
    >>> from symdyn.studies.phase_diagram import phase_diagram
    >>> dg, table = phase_diagram(["post-ln"], d=[4], beta=[0.0, 2.0], n=8, seeds=2,
    ...                           t=np.array([0.0, 1.0, 10.0, 100.0]), executor="serial")
    >>> dg["post-ln"].linked[0].shape, len(table)            # (beta, t); rows
    ((2, 4), 16)
    """

    schemes = listed(schemes)
    beta = np.arange(10.0) if beta is None else beta
    t = np.concatenate([[0.0], np.geomspace(0.1, 1e3, 41)]) if t is None else t
    sweep_options.setdefault("cluster_threshold", LEVEL)
    table = sweep({"scheme": schemes, "n": n, "d": d, "beta": beta,
                   "init": "sphere", "weights": "identity"}, t, seeds=seeds,
                  **sweep_options)
    named = {getattr(s, "name", s): s for s in schemes}
    return diagrams(table, n=n, level=sweep_options["cluster_threshold"], schemes=named), table
