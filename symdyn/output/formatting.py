"""Plain-text formatting shared by the report, the command line and ``proofs_check``.

Layer 4, output.
"""

from __future__ import annotations

import mpmath
import numpy as np


def markdown_table(header, rows) -> str:
    """A markdown table: ``header`` and each row are lists of cell texts.

    Examples
    --------
    >>> print(markdown_table(["a", "b"], [[1, 2]]), end="")
    | a | b |
    |---|---|
    | 1 | 2 |
    """
    lines = ["| " + " | ".join(header) + " |", "|---" * len(header) + "|"]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


#: The columns of a solve printed as text (after the member's parameters).
SOLVE_COLUMNS = ("t", "gamma", "epsilon", "log_epsilon", "gamma_dot", "r")


def solve_rows(tr, members=None, digits: int = 17) -> tuple[list, list]:
    """``(head, rows)``: a :class:`~symdyn.reduced.solve_result.Trajectory` as text, one
    row per member and time. ``members`` (arrays of ``n``, ``beta``,
    ``gamma0``, one value per member) start each row; mpmath numbers keep
    ``digits`` digits, floats print as their ``repr``."""
    def text(x):
        return mpmath.nstr(x, digits) if isinstance(x, mpmath.mpf) else repr(float(x))

    head = (["n", "beta", "gamma0"] if members is not None else []) + list(SOLVE_COLUMNS)
    count = len(tr.gamma) if members is None else len(members[0])
    rows = [([text(v[m]) for v in members] if members is not None else [])
            + [text(tr.t[k])] + [text(getattr(tr, c)[m, k]) for c in SOLVE_COLUMNS[1:]]
            for m in range(count) for k in range(len(tr.t))]
    return head, rows


def simulation_csv(sim, clock: str = "t", per_seed: bool = False, radial: bool = False,
                   seeds=None) -> str:
    """A :class:`~symdyn.particles.result.Simulation` as CSV under comment
    lines (``# ...``) of its provenance and ``seeds`` (one per member).

    Columns: ``t`` (``tau`` with ``clock="log"``), ``gamma``, ``epsilon``
    (:math:`1 - \\gamma` from the deviations, at the run's relative precision
    down to its resolution, ``Simulation.floor``, which a ``# epsilon:`` line
    states), ``r`` for a radial scheme (the mean token norm; ``log_r`` with the log
    clock), ``min_cosine`` and ``clusters``; a row per time with the mean over
    the members (``min_cosine`` their least), or with ``per_seed`` a row per
    member and time, led by its ``seed``. Where some ``epsilon`` is only a
    bound (``Simulation.bound``: below the floor, or merged tokens), a last
    column ``epsilon_bound`` gives the most the true value can be in the rows
    that hold one (``epsilon + spread``), and is empty in the others."""
    t, K = sim.t, len(sim.t)
    g, eps = (np.asarray(a, dtype=float).reshape(-1, K) for a in (sim.gamma, sim.epsilon))
    flagged = np.asarray(sim.bound.get("epsilon", np.zeros(eps.shape)), dtype=bool).reshape(-1, K)
    most = eps + (0.0 if sim.spread is None else np.asarray(sim.spread).reshape(-1, K))
    cos = np.asarray(sim.min_cosine, dtype=float).reshape(-1, K)
    clusters = np.asarray(sim.clusters).reshape(-1, K)
    r = np.asarray(sim.r, dtype=float).reshape(len(g), -1, K).mean(axis=1)
    seeds = list(range(len(g))) if seeds is None else list(seeds)
    cols = ["t" if clock == "t" else "tau", "gamma", "epsilon"]
    cols += [("r" if clock == "t" else "log_r")] if radial else []
    cols += ["min_cosine", "clusters"] + (["epsilon_bound"] if flagged.any() else [])
    p = sim.provenance
    head = [f"# {k}: {v}" for k, v in (p.summary() if p else [])]
    head.append("# rows: " + (f"one per seed and time (seeds {_seeds(seeds)})" if per_seed
                              else f"the mean over {len(g)} seed{'s' * (len(g) > 1)} "
                                   f"({_seeds(seeds)}) per time"
                                   f"{' (min_cosine: their least)' if len(g) > 1 else ''}"))
    head.append("# epsilon: " + _resolution(sim.floor, flagged))

    def row(k, m):
        pick = slice(None) if m is None else slice(m, m + 1)
        vals = [t[k], g[pick, k].mean(), eps[pick, k].mean()]
        vals += [r[pick, k].mean()] if radial else []
        vals += [cos[pick, k].min()]
        out = [repr(float(v)) for v in vals] + [repr(float(clusters[pick, k].mean()))
                                                if m is None else str(int(clusters[m, k]))]
        if flagged.any():
            some = flagged[pick, k].any()
            out.append(repr(float(np.where(flagged[pick, k], most[pick, k],
                                           eps[pick, k]).mean())) if some else "")
        return ([str(seeds[m])] if m is not None else []) + out
    rows = ([row(k, m) for m in range(len(g)) for k in range(K)] if per_seed
            else [row(k, None) for k in range(K)])
    return "\n".join(head + [",".join((["seed"] if per_seed else []) + cols)]
                     + [",".join(x) for x in rows])


def _resolution(floor, flagged) -> str:
    """What the ``epsilon`` column resolves (``Simulation.floor``), and where
    it is only a bound."""
    if floor is None:
        text = "its resolution was not recorded (a result saved before Simulation.floor)"
    else:
        text = f"relative precision of the tolerances down to {float(np.max(floor)):.3g}"
    if flagged.any():
        text += (f"; {int(flagged.any(axis=0).sum())} of {flagged.shape[1]} times hold "
                 f"only a bound, the true value at most epsilon_bound")
    return text


def _seeds(seeds) -> str:
    """``0..3`` for consecutive seeds, else the list."""
    if len(seeds) > 2 and all(isinstance(s, int) for s in seeds) and \
            seeds == list(range(seeds[0], seeds[0] + len(seeds))):
        return f"{seeds[0]}..{seeds[-1]}"
    return ", ".join(str(s) for s in seeds)


def distance_table(diagrams) -> str:
    """Distance of the simulated transition to the equiangular curve, per scheme
    and ``d``, from :func:`~symdyn.studies.phase_diagram.diagrams`' results."""
    first = next(iter(diagrams.values()))
    return markdown_table(["scheme"] + [f"d = {d}" for d in first.d], [
        [p.scheme] + [f"{x:.3f}" + (f" ({m} mismatched)" if m else "")
                      for x, m in zip(p.distance, p.mismatched, strict=True)]
        for p in diagrams.values()])
