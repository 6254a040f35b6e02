"""A newcomer's walk (issue 28): the README's first steps, the CLI's help, the
mistakes a new user makes, and what the report claims, each step asserting
that the problem the issue found is gone. The detailed checks live in
test_cli, test_display, test_params, test_caption_checks, test_figure_widths;
this file is the walk in the order a reader takes it.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
import sympy as sp

import symdyn as sd
from symdyn.cli import main

ROOT = Path(__file__).resolve().parents[1]


def _cli(capsys, *argv):
    status = main(list(argv))
    out = capsys.readouterr()
    return status, out.out, out.err


def test_the_cli_a_newcomer_meets(capsys):
    status, out, _ = _cli(capsys)                                   # bare `symdyn`
    assert status == 0 and all(c in out for c in ("derive", "simulate", "table", "trace"))
    with pytest.raises(SystemExit):
        main(["simulate", "--help"])
    helptext = " ".join(capsys.readouterr().out.split())
    assert "(default: 16)" in helptext and "`" not in helptext and "examples:" in helptext
    assert "standard-gaussian" in helptext                          # Theorem 3.1's start
    status, out, _ = _cli(capsys, "derive", "Post-LN")              # the legends' spelling
    assert status == 0 and out.startswith("post-ln")
    status, _, err = _cli(capsys, "derive", "postln")
    assert status == 2 and "did you mean 'post-ln'" in err
    for n in ("1", "8.5"):
        status, _, err = _cli(capsys, "solve", "post-ln", "--n", n, "--beta", "1",
                              "--gamma0", "0", "--t-max", "1")
        assert status == 2 and len(err.splitlines()) == 1 and "array(" not in err
    status, out, _ = _cli(capsys, "derive", "post-ln", "--format", "latex")
    assert status == 0 and out.split("\n")[1] == r"\begin{tabular}{ll}"
    status, out, _ = _cli(capsys, "table", "post-ln", "--format", "latex", "--columns",
                          "terminal law")
    assert status == 0 and r"Post-LN & exponential \\" in out


def test_the_api_catches_a_newcomer_s_mistakes():
    X0 = sd.init.sphere(8, 4, batch=2, seed=0)
    with pytest.raises(ValueError, match="did you mean 'save_x'"):
        sd.simulate("post-ln", X0, beta=1.0, t=[1.0], save_X=True)
    sim = sd.simulate("post-ln", X0, beta=1.0, t=[0.0, 1.0], weights="kaiming")
    assert len(str(sim)) < 1500 and "array(" not in str(sim)   # provenance + values
    tr = sd.solve("Pre-LN", n=8, beta=1.0, gamma0=0.0, t=[0.0, 1.0])
    assert "Trajectory" in str(tr) and len(str(tr)) < 800
    fig = sd.plot.compare("post-ln", n=8, beta=1.0, gamma0=0.0)   # one scheme, not letters
    labels = {t.get_text() for ax in fig.axes for leg in [ax.get_legend()] if leg
              for t in leg.get_texts()} | {t.get_text() for leg in fig.legends
                                           for t in leg.get_texts()}
    assert "Post-LN" in labels and not (labels & {"p", "o", "s", "t"})
    v = sd.initial_velocity(sd.custom_scheme("root", "sqrt(r*A_norm)", "a"))
    nested = [a for a in sp.preorder_traversal(v) if isinstance(a, sp.Pow)
              and isinstance(a.base, sp.Mul) and any(isinstance(b, sp.Pow) for b in a.base.args)]
    assert nested == []                                     # was sqrt(sqrt(X)/Y)
    assert str(sd.leading_order(sd.initial_velocity("peri-ln"))) == "Theta(1/sqrt(n))"
    tex = sd.table(format="latex")
    head = tex.splitlines()[3]
    assert "~" not in head and head.count("&") == 6 and "Post-LN &" in tex


def test_the_report_s_figure_2_claim_reads_no_with_solved_times():
    from symdyn.output.claims import reach_times

    T = reach_times(["post-ln", "pre-ln", "mix-ln", "peri-ln", "ngpt", "sqrt-scaling"])
    assert {k: round(v, 4) for k, v in T.items()} == {
        "post-ln": 4.1145, "pre-ln": 12.2812, "mix-ln": 10.8652, "peri-ln": 10.6502,
        "ngpt": 2.8721, "sqrt-scaling": 8.3467}
    # "Pre-LN and Peri-LN converge last": Mix-LN reaches 0.99 after Peri-LN
    assert T["mix-ln"] > T["peri-ln"]
    assert np.argsort(list(T.values()))[-2] == 2                  # mix-ln second to last


def test_the_docs_give_commands_that_work_from_anywhere():
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    bad = [p.name for p in pages
           if re.search(r"python -m proofs_check\b", p.read_text())]
    assert bad == []
