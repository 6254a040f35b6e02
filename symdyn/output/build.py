"""The report, assembled: every section computed, then handed to :mod:`~symdyn.output.report`.

:func:`build_report` computes the figures (:mod:`~symdyn.output.figures`),
the designed schedules (:func:`symdyn.studies.inverse.compare`), the theory
against trained transformers (:mod:`~symdyn.output.theory_trained_section`),
causal masking, noise and the mean field (:mod:`~symdyn.output.beyond`),
metastability (:mod:`~symdyn.output.metastability_section`), the
derivations and the depth table, takes the phase diagrams and the verdicts
from the callables it is given (the command line passes the sweep of
:func:`symdyn.cli.write_phase_diagrams` and proofs_check's verdicts, which
the library does not import), and writes ``out/README.md`` with
:func:`~symdyn.output.report.write_report`.

Layer 4, output.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from ..base.checks import writable_path
from ..model.registry import schemes
from ..reduced.solver import solve
from ..reduced.summary import derive
from ..studies.inverse import alpha_family, compare
from . import report
from .beyond import beyond_result, beyond_section
from .diagrams import write_design
from .figures import write_figures
from .metastability_section import metastability_result, metastability_section
from .theory_trained_section import trained_result, trained_section

#: The quick report's phase-diagram sweep (the full one: phase_diagram's defaults).
QUICK_PHASE_DIAGRAM = {"d": (8, 128), "seeds": 4, "beta": np.linspace(0, 9, 5), "points": 41}


def build_report(out: str | Path, *, quick: bool = False, figures: bool = True,
                 design: bool = True, trained: bool = True, beyond: bool = True,
                 metastability: bool = True,
                 phase_diagrams: Callable | None = None,
                 verdicts: Callable[[Callable], str] | None = None,
                 progress: Callable[[str], None] | None = None) -> Path:
    """Compute every section and write ``out/README.md``; returns its path.

    ``figures``: Figures 2-5 (``quick``: d = 64, fewer seeds); ``design``: the
    designed schedules against the built-ins (:data:`report.DESIGN_PROBLEM`);
    ``trained``: the theory against two trained transformers
    (:mod:`~symdyn.output.theory_trained_section`; one sentence when the
    ``[trained]`` extra or a model is missing); ``beyond``: causal masking, noise
    and the mean field (:mod:`~symdyn.output.beyond`);
    ``metastability``: three predictions of metastability beside particle runs
    (:mod:`~symdyn.output.metastability_section`; quick: smaller sizes);
    ``phase_diagrams(folder)`` returns ``(diagrams, files)`` of a sweep of
    every scheme written into ``folder`` (the command line's
    :func:`symdyn.cli.write_phase_diagrams`, :data:`QUICK_PHASE_DIAGRAM` when
    quick); ``verdicts(progress)`` returns the markdown of the claim checks.
    ``out/README.md`` is checked for writing first (a ``ValueError`` naming
    it, before any section is computed).
    """
    start = time.perf_counter()
    say = progress or (lambda message: None)
    out = Path(out)
    writable_path(out / "README.md", "out")
    sections = []
    if figures:
        result = write_figures(out / "figures", quick=quick, progress=say)
        sections.append(("Figures", report.figure_section(result, "figures")))
    if design:
        say("designing schedules")
        p = report.DESIGN_PROBLEM
        table = compare("speed", **p)
        files = write_design(
            *_design_curves(table, p), p["target"], out / "figures", layers=p["layers"],
            title=(f"Designed nGPT schedules vs the built-ins: {p['layers']} layers to depth "
                   f"$L = {p['depth']:g}$, $\\gamma(L) \\leq {p['target']:g}$, "
                   f"$n = {p['n']}$, $\\beta = {p['beta']:g}$, orthogonal start"))
        sections.append(("Designing a schedule", report.design_section(table, files, "figures")))
    if trained:
        sections.append(("Theory against trained transformers", trained_section(
            trained_result(out / "figures", quick=quick, progress=say), "figures")))
    if beyond:
        sections.append(("Beyond the encoder: causal masking, noise, mean field",
                         beyond_section(beyond_result(quick=quick, progress=say))))
    if metastability:
        sections.append(("Metastability", metastability_section(metastability_result(
            out / "figures", quick=quick, progress=say), "figures")))
    if phase_diagrams is not None:
        say("phase diagrams (sweep of every scheme)")
        dg, files = phase_diagrams(out / "phase_diagram")
        files = {k: v for k, v in files.items() if k != "table"}
        sections.append(("Clustering phase diagram",
                         report.phase_section(dg, files, "phase_diagram")))
    if verdicts is not None:
        sections.append(("Verdicts of proofs_check (quick grids)", verdicts(say)))
    derivations = []
    for name in schemes():
        say(f"deriving {name}")
        derivations.append(derive(name))
    say("solving the reduced ODEs")
    depths = {name: solve(name, **report.DEPTH_START, t=list(report.DEPTHS))
              for name in schemes()}
    return report.write_report(out, derivations, depths, sections,
                               seconds=time.perf_counter() - start)


def _design_curves(table, problem):
    """The built-ins' and the designed schedules' trajectories on 201 points
    of ``[0, depth]``: ``({name: trajectory}, {label: (scheme, trajectory)})``."""
    grid = np.linspace(0, problem["depth"], 201)
    kw = {k: problem[k] for k in ("n", "beta", "gamma0")}
    builtin = {name: solve(name, t=grid, **kw) for name in schemes()}
    designed = {}
    for label, row in table[table.kind == "designed"].iterrows():
        fam = alpha_family(row.family, problem["depth"])
        designed[label] = (fam, solve(fam, t=grid, **kw, params=row.params))
    return builtin, designed
