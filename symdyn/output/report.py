"""The markdown report: derived formulas in LaTeX, figures, phase diagrams, verdicts.

Every function here receives what it writes: :func:`write_report` writes
``out/README.md`` from the derivations and trajectories it is given (a
summary table of initial and terminal velocities, gamma at depth, the
sections, then the reduced ODE per scheme), and the ``*_section``
functions turn computed results into markdown. ``symdyn report``
(:func:`symdyn.cli.build_report`) computes them and calls these.

Layer 4, output.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import sympy as sp

from ..base.checks import naming
from ..base.version import __version__
from .formatting import distance_table, markdown_table

_INTRO = """\
# symdyn report

Derived by `symdyn report` (symdyn {version}). Every formula comes out of the
symbolic reduction of the n-particle vector field to an equiangular
configuration (`sd.reduce`, `symdyn/reduced/equiangular.py`), not from a table.

Notation: $\\gamma$ is the common cosine similarity, $r$ the token norm, $n$ the
number of tokens, $\\beta$ the inverse temperature, $a = \\langle A_k,\\theta_k\\rangle$,
$A_{{norm}} = |A_k|$, $C$ a free constant; softmax attention. Initial values are
at an orthogonal start ($\\gamma_0 = 0$, $r_0 = 1$); orders are as $n \\to \\infty$
at fixed $\\beta$.
"""


def _m(expr) -> str:
    return f"${sp.latex(expr)}$"


def _order(o) -> str:
    return "n/a" if o is None else f"$\\Theta({sp.latex(o.var ** o.exponent)})$"


def _png(paths):
    """The PNG among a figure's files (None when there is none)."""
    return next((p for p in paths if str(p).endswith(".png")), None)


def summary_table(derivations: list) -> str:
    """Initial and terminal velocities of every scheme (its
    :class:`~symdyn.reduced.summary.Derivation`), one row each."""
    header = ["scheme", "$\\dot\\gamma(0)$", "order", "$\\lvert\\dot\\theta_k(0)\\rvert$",
              "order", "terminal law", "$1-\\gamma(t) \\sim$"]
    return markdown_table(header, [
        [d.scheme.name, _m(d.initial_velocity), _order(d.initial_velocity_order),
         _m(d.initial_token_speed), _order(d.initial_token_speed_order), d.terminal.law,
         _m(d.terminal.epsilon)] for d in derivations])


DEPTHS = (1.0, 2.0, 5.0, 10.0, 20.0, 50.0)


#: The start of the depth table: ``sd.solve(name, **DEPTH_START, t=DEPTHS)``.
DEPTH_START = {"n": 32, "beta": 1.0, "gamma0": 0.0}


def depth_table(trajectories: dict, n: int = 32, beta: float = 1.0, depths=DEPTHS) -> str:
    """gamma(t) of every scheme from an orthogonal start: ``trajectories``
    maps a scheme's name to its ``sd.solve`` at the times ``depths``."""
    rows = []
    for name, tr in trajectories.items():
        rows.append([name] + [f"{g:.6f}" if g < 0.9999995 else f"1 ({e:.2e})"
                              for g, e in zip(tr.gamma, tr.epsilon, strict=True)])
    return (f"Orthogonal start ($\\gamma_0 = 0$, $r_0 = 1$), $n = {n}$, "
            f"$\\beta = {beta:g}$; `sd.solve`. Entries are $\\gamma(t)$, and "
            f"$1 - \\gamma(t)$ in brackets when $\\gamma$ rounds to 1.\n\n"
            + markdown_table(["scheme"] + [f"t = {d:g}" for d in depths], rows))


CAPTIONS = {
    "figure2": "Figure 2: (a) 1 - gamma(t), the solver's precise value, and (b) d gamma/dt, "
               "in log time; (c) the phase plot d gamma/dt against 1 - gamma (log-log: each "
               "terminal law is a straight line). All schemes from an orthogonal symmetric "
               "start (nGPT alpha = 1). Paper: Pre-LN and Peri-LN are the last to converge; "
               "Post-LN, nGPT and Peri-LN move faster early.",
    "figure3": "Figure 3: nGPT from an orthogonal start for alpha constant, root, linear and "
               "a sin/cos mix (here sin^2(4t)(1+t) + cos^2(4t), our reading of 'linear and "
               "constant weighted by sin(4t) and cos(4t)', kept positive); (b) shows 1 - gamma "
               "far below 1e-16, from the solver's log(1 - gamma).",
    "figure4": "Figure 4: mean gamma(t) with its 5-95% quantile band over {seeds} seeds, "
               "Kaiming weights, beta = sqrt(d), n < d, random starts at unit scale; {panels}. "
               "Paper: Peri-LN and nGPT move first; Post-LN and nGPT collapse faster than "
               "Pre-LN and Peri-LN.",
    "figure5": "Figure 5: the pure attention update ('none', no normalization) beside the "
               "normalized schemes, same starts and weights as Figure 4.",
}
QUICK_NOTE = (" Quick mode: d = {d}, {seeds} seeds and one head only, so the band is "
              "close to the min-max of a handful of runs: indicative, not a quantile "
              "estimate; `make report` draws the paper's sizes.")


def figure_section(result: dict, folder: str) -> str:
    """Markdown for the figures of :func:`symdyn.output.figures.write_figures` and the
    caption checks, saying where our model disagrees with a caption."""
    lines = []
    f4 = result["data"]["figure4"]
    fill = {"seeds": f4["seeds"], "d": f4["d"],
            "panels": "one head" if result.get("quick") else
            "one head, four heads, untied weights"}
    for name, paths in result["files"].items():
        caption = CAPTIONS.get(name, name).format(**fill)
        if name == "figure2" and result.get("coinciding"):
            caption += (" Drawn on one line in (c), told apart by their markers: "
                        + "; ".join((f"below 1 - gamma = {e:.0e}, " if e is not None else "")
                                    + " = ".join(map(str, g))
                                    for g, e in result["coinciding"]) + ".")
        if result.get("quick") and name in ("figure4", "figure5"):
            caption += QUICK_NOTE.format(**fill)
        lines += [f"![{name}]({folder}/{_png(paths).name})", "", caption, ""]
    claims = result["checks"]
    shown = {"yes": "yes", "no": "**no**", "tie": "tie"}
    rows = [[c.text, shown[c.verdict], ", ".join(f"{k} {v:.6g}" for k, v in c.numbers.items()),
             c.tolerance] for c in claims.values()]
    if rows:
        lines += ["What the captions claim, checked on the data (checked numerically; "
                  "the Figure 2 orderings are certified in ball arithmetic by "
                  "`python -m symdyn.proofs_check --certify` or `symdyn report --certify`, "
                  "in the verdicts). Crossing times are "
                  "solved (the solver's event on its dense output, `reach_times`), "
                  "gamma at a depth is solved at that depth; a margin within the "
                  "stated tolerance is a tie.", "",
                  markdown_table(["claim", "holds here", "numbers", "tolerance"],
                                 rows).rstrip("\n")]
    if "fig2-last" in claims and claims["fig2-last"].verdict == "no":
        T = claims["fig2-last"].numbers
        last = sorted(T, key=T.get)[-2:]
        lines += ["", f"Why Figure 2's claim fails here: the last two to reach gamma = "
                  f"0.99 are {last[0]} ({T[last[0]]:.4f}) and {last[1]} ({T[last[1]]:.4f})"
                  + ("; Mix-LN (Pre-LN after t_switch = 1) is slower than Peri-LN in our "
                     "model" if T.get("mix-ln", 0) > T.get("peri-ln", np.inf) else "")
                  + "."]
    return "\n".join(lines) + "\n"


def phase_section(diagrams, files, folder: str) -> str:
    """Markdown for the clustering phase diagrams of
    :func:`symdyn.output.figures.write_phase_diagrams`."""
    first = next(iter(diagrams.values()))
    lines = [f"Tokens uniform on the sphere, identity weights, $n = {first.n}$; colour: "
             "the fraction of pairs with $\\langle x_i, x_j\\rangle \\ge 0.999$ "
             "(mean over seeds; `sd.sweep`, continuous dynamics). White line: the "
             "equiangular prediction $T_*(\\beta)$, the time at which $\\gamma(t)$ "
             "from $\\gamma_0 = 0$ reaches 0.999 (`sd.solve` and `brentq`). Dots: the "
             "simulated transition $t_{1/2}$, where half the pairs are linked. Each "
             "panel's title gives their distance in decades (below).", ""]
    for name, paths in files.items():
        if _png(paths) is not None:
            lines += [f"![phase diagram, {name}]({folder}/{_png(paths).name})", ""]
    lines += ["Distance of $t_{1/2}$ to $T_*$: mean over $\\beta$ of "
              "$|\\log_{10}(t_{1/2}/T_*)|$ in decades, over the $\\beta$ where both "
              "fall in the time window (the others are counted as mismatched).", "",
              distance_table(diagrams)]
    lines += ["How each normalization moves the transition: the equiangular "
              "$T_*(\\beta)$ per scheme (`-`: not reached by $t = 10^6$).", "",
              markdown_table(["scheme"] + [f"β = {b:g}" for b in first.beta],
                             [[p.scheme] + [f"{x:.3g}" if np.isfinite(x) else "-"
                                            for x in p.prediction]
                              for p in diagrams.values()])]
    d = first.distance
    if len(d) > 1:
        trend = "shrinks" if np.all(np.diff(d) < 0) else "does **not** shrink monotonically"
        lines += [f"For {first.scheme} the distance {trend} as $d$ grows "
                  f"({', '.join(f'{x:.3f}' for x in d)} decades at d = "
                  f"{', '.join(str(x) for x in first.d)}): in high dimension uniform "
                  "tokens are nearly orthogonal and stay nearly equiangular.", ""]
    return "\n".join(lines)


def scheme_section(d) -> str:
    """One scheme's speed law and reduced ODE as a markdown section."""
    params = "".join(f", {k} = `{v}`" for k, v in d.scheme.params)
    red = d.reduction
    return "\n".join([
        f"### {d.scheme.name}{params}", "",
        f"Speed $s = {sp.latex(d.scheme.speed)}$, radial rate "
        f"$\\dot r = {sp.latex(d.scheme.radial)}$"
        + (f", attention at inverse temperature $\\beta \\cdot {sp.latex(d.scheme.temperature)}$"
           if d.scheme.tempered else "") + ".", "",
        "$$", f"\\dot\\gamma = {sp.latex(red.gamma_dot)}", "$$", "",
        "$$", f"\\dot r = {sp.latex(red.r_dot)}", "$$", "",
        f"Near the cluster: $\\dot\\gamma \\sim {sp.latex(d.terminal.gamma_dot)}$.",
        "",
    ])


#: The design comparison of the report: nGPT families against the built-ins.
DESIGN_PROBLEM = {"target": 0.9, "depth": 4.0, "n": 32, "beta": 1.0, "gamma0": 0.0,
                  "layers": 8}


def design_section(table, files, folder: str, problem: dict = DESIGN_PROBLEM) -> str:
    """Designed nGPT schedules against the built-in schemes on the "use every
    layer" objective: ``table`` (:func:`symdyn.studies.inverse.compare` on
    ``problem``) and the files of its figure
    (:func:`symdyn.output.diagrams.plot_design`)."""
    p = problem
    rows = [[name, r.kind, ", ".join(f"{k} = {v:.4g}" for k, v in r.params.items()) or "-",
             f"{r.value:.5f}", f"{r.gamma_L:.5f}", "yes" if r.feasible else "**no**"]
            for name, r in table.iterrows()]
    return "\n".join([
        f"Which schedule uses every layer? With {p['layers']} equal layers of depth "
        f"$L = {p['depth']:g}$ ($n = {p['n']}$, $\\beta = {p['beta']:g}$, orthogonal start), "
        f"`sd.design(..., objective=\"speed\")` maximizes the smallest per-layer progress "
        f"of $\\gamma$ subject to $\\gamma(L) \\le {p['target']}$, for nGPT's step-size "
        "families, with exact gradients from the sensitivities. The built-in schemes are "
        "scored on the same objective (`value`); `feasible` says whether they respect "
        "the bound on $\\gamma(L)$.", "",
        markdown_table(["scheme", "kind", "parameters", "value (min progress per layer)",
                        "gamma(L)", "feasible"], rows), "",
        f"![design]({folder}/{_png(files).name})", "",
        "Thick lines with markers at the layers' ends: the designed schedules (curves "
        "that coincide are drawn once, their names joined by =); thin lines: the "
        "built-ins; dashed black: the bound on $\\gamma(L)$.", ""])


def provenance(seconds: float | None = None) -> str:
    """Where a report came from: date, symdyn version and git commit, Python and
    library versions, the machine's cores and the run time (markdown)."""
    import datetime
    import os
    import platform
    import subprocess
    from importlib.metadata import PackageNotFoundError, version

    def ver(name):
        try:
            return version(name)
        except PackageNotFoundError:
            return "not installed"

    try:
        here = Path(__file__).resolve().parent
        commit = subprocess.run(["git", "-C", str(here), "rev-parse", "HEAD"],
                                capture_output=True, text=True, timeout=10).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(here), "status", "--porcelain",
                                "--untracked-files=no"], capture_output=True, text=True,
                               timeout=10).stdout.strip()
        commit = (commit + (" (with uncommitted changes)" if dirty else "")) or "unknown"
    except (OSError, subprocess.SubprocessError):
        commit = "unknown (not a git checkout)"
    rows = [["date", datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")],
            ["symdyn", f"{__version__}, commit {commit}"],
            ["Python", f"{platform.python_version()} ({platform.platform(terse=True)})"],
            ["libraries", ", ".join(f"{k} {ver(k)}" for k in
                                    ("numpy", "scipy", "sympy", "mpmath", "matplotlib"))],
            ["machine", f"{os.cpu_count()} cores"]]
    if seconds is not None:
        rows.append(["run time", f"{seconds:.0f} s"])
    return markdown_table(["provenance", ""], rows)


def write_report(out: str | Path, derivations: list, depths: dict, sections=(),
                 seconds: float | None = None) -> Path:
    """Write ``out/README.md``: the summary of ``derivations`` (one
    :class:`~symdyn.reduced.summary.Derivation` per scheme), the depth table of
    ``depths`` (:func:`depth_table`), the extra ``(title, markdown)``
    ``sections``, then each scheme's reduced ODE; ``seconds``, the run time,
    goes into the provenance table at the top."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    parts = [_INTRO.format(version=__version__), provenance(seconds) + "\n",
             "## Initial and terminal velocities\n", summary_table(derivations),
             "## Cosine similarity at depth\n", depth_table(depths, **{
                 k: DEPTH_START[k] for k in ("n", "beta")})]
    parts += [f"## {title}\n\n{body}" for title, body in sections]
    parts.append("## Reduced ODEs (symmetric start)\n")
    parts += [scheme_section(d) for d in derivations]
    path = out / "README.md"
    with naming(path):
        path.write_text("\n".join(parts))
    return path
