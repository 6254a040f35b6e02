"""Plain-text formatting shared by the report, the command line and ``proofs_check``.

Layer 4, output.
"""

from __future__ import annotations

import mpmath


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
    """``(head, rows)``: a :class:`~symdyn.reduced.solver.Trajectory` as text, one
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


def simulation_csv(sim, times, clock: str = "t") -> str:
    """A :class:`~symdyn.particles.simulation.Simulation` over its batch as CSV:
    per time, gamma's mean, min and max, the least cosine and the mean number
    of clusters (``clock="log"``: the first column is ``tau``)."""
    cols = ("t" if clock == "t" else "tau", "gamma_mean", "gamma_min", "gamma_max",
            "min_cosine", "clusters_mean")
    g = sim.gamma
    rows = [[repr(float(times[k])), repr(float(g[:, k].mean())), repr(float(g[:, k].min())),
             repr(float(g[:, k].max())), repr(float(sim.min_cosine[:, k].min())),
             repr(float(sim.clusters[:, k].mean()))] for k in range(len(times))]
    return "\n".join([",".join(cols)] + [",".join(r) for r in rows])


def distance_table(diagrams) -> str:
    """Distance of the simulated transition to the equiangular curve, per scheme
    and ``d``, from :func:`~symdyn.studies.phase_diagram.diagrams`' results."""
    first = next(iter(diagrams.values()))
    return markdown_table(["scheme"] + [f"d = {d}" for d in first.d], [
        [p.scheme] + [f"{x:.3f}" + (f" ({m} mismatched)" if m else "")
                      for x, m in zip(p.distance, p.mismatched, strict=True)]
        for p in diagrams.values()])
