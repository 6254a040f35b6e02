"""Numerical verification of the claims of "Normalization in Attention Dynamics".

One module per claim; each exposes ``check(quick=True, ...) -> Result`` with
the statement, the parameters tried, an evidence table, the tolerance and a
verdict (PASS or FAIL). Run them with ``python -m symdyn.proofs_check`` or
``symdyn verify``.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from symdyn.output.formatting import markdown_table

from . import (
    causal,
    clustering,
    general_starts,
    initial_velocity,
    phase_transition,
    published,
    symmetric,
    terminal_velocity,
)
from .result import Result

#: name -> module, in the order of the claims in docs/model.md, section 5.
CHECKS = {m.NAME: m for m in (clustering, symmetric, initial_velocity, terminal_velocity,
                              general_starts, phase_transition, published, causal)}


def run(quick: bool = True, only=None,
        progress: Callable[[str], None] | None = None) -> list[tuple[Result, float]]:
    """Run the checks (all, or the names in ``only``); returns (result, seconds)."""
    names = list(CHECKS) if not only else list(only)
    unknown = [n for n in names if n not in CHECKS]
    if unknown:
        raise ValueError(f"only: unknown check(s) {unknown}; choose from {list(CHECKS)}")
    out = []
    for name in names:
        if progress:
            progress(f"checking {name}")
        t0 = time.perf_counter()
        result = CHECKS[name].check(quick=quick)
        out.append((result, time.perf_counter() - t0))
    return out


def table(results) -> str:
    """A plain-text table: claim, verdict, kind (certified or checked
    numerically), seconds, key figures."""
    width = max(len(r.name) for r, _ in results)
    lines = [f"{'claim':<{width}}  verdict  {'kind':<19}  seconds  key figures"]
    for r, secs in results:
        lines.append(f"{r.name:<{width}}  {r.verdict:<7}  {r.kind:<19}  {secs:7.1f}  "
                     f"{r.key_figures}")
        if r.verdict == "FAIL":
            lines.append(f"{'':<{width}}  why: {r.why()}")
        for note in r.notes:
            lines.append(f"{'':<{width}}  note: {note}")
    return "\n".join(lines)


def markdown(results) -> str:
    """The verdict table with the evidence, as markdown (for the report)."""
    lines = [markdown_table(["claim", "verdict", "kind", "key figures"],
                            [[r.name, f"**{r.verdict}**", r.kind, _cell(r.key_figures)]
                             for r, _ in results])]
    for r, secs in results:
        lines += [f"### {r.name}: {r.verdict} ({r.kind})", "", r.statement, "",
                  f"Tolerance: {r.tolerance}. Methods: {', '.join(r.methods)}. "
                  f"Parameters: `{r.parameters}`. Time: {secs:.1f} s.", ""]
        if r.verdict == "FAIL":
            lines += [f"Why: {r.why()}", ""]
        for note in r.notes:
            lines += [f"Note: {note}", ""]
        # method and ok first, then in order of first appearance (deterministic)
        keys = sorted(dict.fromkeys(k for e in r.evidence for k in e),
                      key=lambda k: k not in ("method", "ok"))
        table = markdown_table(keys, [[_cell(e.get(k, "")) for k in keys]
                                      for e in r.evidence])
        lines += [f"<details><summary>evidence ({len(r.evidence)} rows)</summary>\n",
                  table, "</details>", ""]
    return "\n".join(lines)


def _cell(v) -> str:
    if isinstance(v, float):
        return f"{v:.6g}"
    return str(v).replace("|", "\\|")


__all__ = ["CHECKS", "Result", "markdown", "run", "table"]
