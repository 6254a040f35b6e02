"""Sphinx configuration of the symdyn documentation (``make docs``)."""

import shutil
from pathlib import Path

import symdyn

ROOT = Path(__file__).resolve().parent.parent

project = "symdyn"
author = "symdyn contributors"
release = version = symdyn.__version__
copyright = "2026, symdyn contributors"

extensions = ["myst_nb", "sphinx.ext.autodoc", "sphinx.ext.napoleon", "sphinx.ext.mathjax",
              "sphinx.ext.viewcode"]
myst_enable_extensions = ["dollarmath", "amsmath"]
myst_heading_anchors = 3
nb_execution_mode = "force"           # the notebooks are stored without outputs
nb_execution_timeout = 300
nb_execution_raise_on_error = True
napoleon_numpy_docstring = True
napoleon_google_docstring = False
autodoc_default_options = {"members": False}
autodoc_typehints = "none"
# symdyn.trained imports its optional extra (pip install 'symdyn[trained]') only
# on use; mocked here so that its page builds without the extra in any case.
autodoc_mock_imports = ["safetensors", "gguf", "tokenizers"]

html_theme = "furo"
html_title = f"symdyn {release}"
html_static_path = ["_static"]
html_favicon = "_static/favicon.svg"
# MathJax from the package registry (npm's mathjax@3, copied by `make docs`):
# the site typesets math offline, with no CDN.
mathjax_path = "mathjax/tex-mml-chtml.js"
# The notebooks' sliders (symdyn.output.explore) are saved with their state when
# the build executes them; the widget embedder of ipywidgets 8, copied into
# _static by `make docs` (npm's @jupyter-widgets/html-manager@1, the standalone
# embed.js), draws them from it, with no CDN (myst-nb's default loads RequireJS
# and the embedder from CDNs). No kernel runs: the sliders show their first
# state, and each notebook's static strip shows the effect of one of them.
# widgets_mathjax3.js (first) lets the embedder's MathJax 2 call run on MathJax 3.
nb_ipywidgets_js = {"widgets_mathjax3.js": {}, "jupyter-widgets/embed.js": {}}

exclude_patterns = ["_build", "notebooks/README.md", "api/cli_help.md", "Thumbs.db", ".DS_Store"]
suppress_warnings = ["myst.header"]


def _report_page(app):
    """``report.md``: the latest ``make report`` if there is one, else the
    quick part of it computed here (tables and Figure 2's caption verdicts,
    about 15 s: no simulation, no figure)."""
    src = ROOT / "report" / "README.md"
    page = Path(app.srcdir) / "report.md"
    if src.exists():
        text = src.read_text().replace("](figures/", "](report_files/figures/").replace(
            "](phase_diagram/", "](report_files/phase_diagram/")
        dest = Path(app.srcdir) / "report_files"
        shutil.rmtree(dest, ignore_errors=True)
        for sub in ("figures", "phase_diagram"):
            if (src.parent / sub).exists():
                shutil.copytree(src.parent / sub, dest / sub,
                                ignore=shutil.ignore_patterns("*.csv", "*.svg"))
        page.write_text("# The report\n\n" + text.split("\n", 1)[1])
    else:
        page.write_text(_quick_report())


def _quick_report() -> str:
    from symdyn.output import beyond, claims, report

    checks = claims.caption_checks({"n": 32, "beta": 1.0})
    rows = []
    for c in checks.values():
        numbers = ", ".join(f"{k} {v:.4f}" for k, v in c.numbers.items())
        rows.append(f"| {c.text} | **{c.verdict}** | {numbers} | {c.tolerance} |")
    trajectories = {s: symdyn.solve(s, **report.DEPTH_START, t=report.DEPTHS)
                    for s in symdyn.schemes()}
    derivations = [symdyn.derive(s) for s in symdyn.schemes()]
    return "\n".join([
        "# The report", "",
        "The full report (figures, Figures 4 and 5 simulated, the phase diagram, "
        "a designed schedule, provenance) is written by `make report` "
        "(about 20 minutes) or `symdyn report --quick` (a few minutes) into "
        "`report/README.md`; when it exists, `make docs` shows it here. "
        "These pages were built without it, so this page holds the part that "
        "costs seconds, computed when the pages were built.", "",
        "## Figure 2's captions", "",
        "Each verdict is read off solved crossings ($\\gamma$ first reaching "
        f"{claims.LEVEL}, the solver's event) and $\\gamma$ solved at the depth, "
        "for the paper's six schemes at $n = 32$, $\\beta = 1$; margins within "
        "the tolerance are ties (`symdyn.output.claims.caption_checks`).", "",
        "| claim | verdict | numbers | tolerance |", "|---|---|---|---|", *rows, "",
        "## $\\gamma$ at depth", "", report.depth_table(trajectories), "",
        "## Initial and terminal velocities", "",
        "From an orthogonal start, $r_0 = 1$ (`sd.derive`).", "",
        report.summary_table(derivations), "",
        "## Beyond the encoder: causal masking, noise, mean field", "",
        beyond.beyond_section(beyond.beyond_result(quick=True)), ""])


def _cli_help(app):
    """``api/cli_help.md``: ``symdyn --help`` and every command's help, one
    section each (included by ``api/cli.md``)."""
    import argparse
    import os

    from symdyn.cli import build_parser

    os.environ["COLUMNS"] = "88"
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    parts = ["## symdyn", "", "```text", parser.format_help().rstrip(), "```", ""]
    for name, command in sub.choices.items():
        parts += [f"## symdyn {name}", "", "```text", command.format_help().rstrip(), "```", ""]
    (Path(app.srcdir) / "api" / "cli_help.md").write_text("\n".join(parts))


def setup(app):
    app.connect("builder-inited", _report_page)
    app.connect("builder-inited", _cli_help)
