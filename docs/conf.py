"""Sphinx configuration of the symdyn documentation (``make docs``)."""

import shutil
from pathlib import Path

import symdyn

ROOT = Path(__file__).resolve().parent.parent

project = "symdyn"
author = "symdyn contributors"
release = version = symdyn.__version__
copyright = "2026, symdyn contributors"

extensions = ["myst_nb", "sphinx.ext.autodoc", "sphinx.ext.napoleon", "sphinx.ext.mathjax"]
myst_enable_extensions = ["dollarmath", "amsmath"]
myst_heading_anchors = 3
nb_execution_mode = "force"           # the notebooks are stored without outputs
nb_execution_timeout = 300
nb_execution_raise_on_error = True
napoleon_numpy_docstring = True
napoleon_google_docstring = False
autodoc_default_options = {"members": False}
autodoc_typehints = "none"

html_theme = "furo"
html_title = f"symdyn {release}"
html_static_path = ["_static"]
html_favicon = "_static/favicon.svg"
# MathJax from the package registry (npm's mathjax@3, copied by `make docs`):
# the site typesets math offline, with no CDN.
mathjax_path = "mathjax/tex-mml-chtml.js"

exclude_patterns = ["_build", "notebooks/README.md", "Thumbs.db", ".DS_Store"]
suppress_warnings = ["myst.header"]


def _report_page(app):
    """``report.md``: the latest ``make report`` if there is one."""
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
        page.write_text("# The report\n\nNo report was built with these pages. Run "
                        "`make report` (it writes `report/README.md`), then `make docs`.\n")


def setup(app):
    app.connect("builder-inited", _report_page)
