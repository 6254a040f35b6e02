"""What the paper's captions claim, checked exactly.

Every number a verdict rests on is solved, not read off a plotting grid: the
time at which :math:`\\gamma` first reaches a level comes from the solver's
terminal event (:func:`symdyn.reduced.solve_crossing.crossing_time`, located
on DOP853's continuous extension, relative error ~1e-9 at its ``rtol`` of
1e-11), and :math:`\\gamma` at a depth from ``sd.solve`` at exactly that
depth. Comparisons carry a stated tolerance: a claim whose margin is within
it is a **tie** (neither yes nor no).

The Figure 2 claims are about the paper's six schemes (:data:`PAPER_SIX`);
the Figure 4 claims read the simulated means at the simulation's own output
times (no interpolation there either).

Layer 4, output.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ..reduced.solve_crossing import crossing_time
from ..reduced.solver import solve

__all__ = ["PAPER_SIX", "TIME_RTOL", "GAMMA_ATOL", "MEAN_ATOL", "Claim", "reach_times",
           "gamma_at", "verdict", "caption_checks"]

#: The schemes of the paper's Figure 2 (the captions speak about these).
PAPER_SIX = ("post-ln", "pre-ln", "mix-ln", "peri-ln", "ngpt", "sqrt-scaling")
#: Two crossing times closer than this (relative) are a tie: 1000x the solve's error.
TIME_RTOL = 1e-6
#: Two values of gamma(t) from ``sd.solve`` closer than this are a tie.
GAMMA_ATOL = 1e-8
#: Two simulated means of gamma closer than this are a tie (the simulation's rtol).
MEAN_ATOL = 1e-6
#: The level of the Figure 2 claim "converge last".
LEVEL = 0.99


class Claim(NamedTuple):
    """A caption's claim: its text, ``"yes"``, ``"no"`` or ``"tie"``, the
    numbers behind it and the tolerance of the comparison (in words)."""

    text: str
    verdict: str
    numbers: dict
    tolerance: str = ""

    @property
    def holds(self) -> bool:
        """True only for a clear yes (a tie does not hold)."""
        return self.verdict == "yes"


def verdict(margin: float, tol: float) -> str:
    """``"yes"`` when ``margin > tol``, ``"no"`` when ``margin < -tol``, else ``"tie"``.

    Examples
    --------
    >>> verdict(0.5, 1e-6), verdict(-0.5, 1e-6), verdict(1e-9, 1e-6)
    ('yes', 'no', 'tie')
    """
    if not tol >= 0:
        raise ValueError(f"tol: expected a number >= 0, got {tol!r}")
    return "yes" if margin > tol else "no" if margin < -tol else "tie"


def reach_times(schemes, n: float = 32, beta: float = 1.0, level: float = LEVEL,
                gamma0: float = 0.0) -> dict:
    """The first time :math:`\\gamma(t)` reaches ``level`` from ``gamma0``, per
    scheme (the solver's event; ``inf`` if not by ``t = 1e6``).

    Examples
    --------
    >>> T = reach_times(["post-ln", "ngpt"])
    >>> {k: round(v, 4) for k, v in T.items()}
    {'post-ln': 4.1145, 'ngpt': 2.8721}
    """
    if not 0 <= gamma0 < level < 1:
        raise ValueError(f"level: expected gamma0 < level < 1, got level={level!r}, "
                         f"gamma0={gamma0!r}")
    return {s: float(crossing_time(s, level, n=n, beta=beta, gamma0=gamma0))
            for s in schemes}


def gamma_at(schemes, depth: float, n: float = 32, beta: float = 1.0,
             gamma0: float = 0.0) -> dict:
    """:math:`\\gamma` at exactly ``depth`` per scheme (``sd.solve``)."""
    return {s: float(solve(s, n=n, beta=beta, gamma0=gamma0, t=[depth]).gamma[0])
            for s in schemes}


def _last(values: dict, group, tol_rel: float) -> str:
    """Is ``group`` the set of the largest values (relative tolerance)?"""
    inside = min(values[k] for k in group)
    outside = max(v for k, v in values.items() if k not in group)
    if inside == outside:                            # both inf, say
        return "tie"
    return verdict((inside - outside) / max(abs(inside), abs(outside)), tol_rel)


def _ahead(values: dict, first, then, tol: float) -> str:
    """Are all of ``first`` above all of ``then``?"""
    return verdict(min(values[k] for k in first) - max(values[k] for k in then), tol)


def caption_checks(fig2: dict, fig4: dict | None = None, depth: float = 1.0) -> dict[str, Claim]:
    """The captions' claims, by key, each with its verdict and numbers.

    ``fig2`` gives ``n`` and ``beta`` (a :func:`~symdyn.output.figures.figure2_data`
    result, or just those two); the crossings and :math:`\\gamma` at ``depth``
    are solved here for :data:`PAPER_SIX`. ``fig4`` (a
    :func:`~symdyn.output.figures.figure4_data` result) gives the simulated
    means; without it the Figure 4 claims are left out.
    """
    n, beta = fig2["n"], fig2["beta"]
    reach = reach_times(PAPER_SIX, n=n, beta=beta)
    v_last = _last(reach, ("pre-ln", "peri-ln"), TIME_RTOL)
    early2 = gamma_at(PAPER_SIX, depth, n=n, beta=beta)
    checks = {
        "fig2-last": Claim(
            f"fig2: Pre-LN and Peri-LN converge last (first t with gamma = {LEVEL}, "
            f"the paper's six)", v_last, reach, f"ties: relative {TIME_RTOL:g}"),
        "fig2-early": Claim(
            f"fig2: Post-LN, nGPT and Peri-LN are ahead of Pre-LN early (gamma at "
            f"t = {depth:g})",
            _ahead(early2, ("post-ln", "ngpt", "peri-ln"), ("pre-ln",), GAMMA_ATOL),
            early2, f"ties: {GAMMA_ATOL:g}"),
    }
    if fig4 is None:
        return checks
    t4 = np.asarray(fig4["t"])
    early = {k: float(c["mean"][1]) for k, c in fig4["curves"].items()}
    late = {k: float(c["mean"][-1]) for k, c in fig4["curves"].items()}
    checks["fig4-first"] = Claim(
        f"fig4: Peri-LN and nGPT move first (mean gamma at t = {t4[1]:g})",
        _ahead(early, ("peri-ln", "ngpt"), ("post-ln", "pre-ln"), MEAN_ATOL),
        early, f"ties: {MEAN_ATOL:g}")
    checks["fig4-collapse"] = Claim(
        f"fig4: Post-LN and nGPT collapse faster than Pre-LN and Peri-LN (mean gamma "
        f"at t = {t4[-1]:g})",
        _ahead(late, ("post-ln", "ngpt"), ("pre-ln", "peri-ln"), MEAN_ATOL),
        late, f"ties: {MEAN_ATOL:g}")
    return checks
