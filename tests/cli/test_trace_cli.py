"""``symdyn trace`` and ``symdyn solve`` keep what made their tables (issue 36 items 3, 5, 6).

Oracles: the library's own results for the same call (``sd.solve``,
``model.trace`` of ``sd.trained.load`` with the ablation's options,
``fits.randomized``, ``fits.of_trace``) and the tokenizer's count of the
text's tokens. Controls: another ablation, seed or DeepNorm N changes what
is printed; without ``--skip-first`` the header counts one token more.
"""

from __future__ import annotations

import io
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import symdyn as sd
from symdyn.cli import main

sys.path.insert(0, str(Path(__file__).parents[1]))
from trained_helpers import MINILM, SMOL, model  # noqa: E402

TEXT = "It was the best of times, it was the worst of times."


def _run(capsys, *argv):
    assert main(list(argv)) == 0
    return capsys.readouterr().out


def _header(out):
    return dict(line[2:].split(": ", 1) for line in out.splitlines()
                if line.startswith("# ") and ": " in line)


def _csv(out):
    return pd.read_csv(io.StringIO(out), comment="#")


def test_solve_keeps_its_provenance_as_comment_lines(capsys):
    out = _run(capsys, "solve", "deepnorm", "--layers", "6", "--n", "8", "--beta", "1.5",
               "--gamma0", "0.1", "--t-max", "2", "--points", "3")
    head = _header(out)
    assert (head["scheme"], head["params"], head["n"], head["beta"]) == (
        "deepnorm", "layers=6", "8", "1.5")
    assert (head["gamma0"], head["r0"], head["version"]) == ("0.1", "1", sd.__version__)
    assert "rtol=1e-11" in head["options"]
    first = next(line for line in out.splitlines() if not line.startswith("#"))
    assert first == "t,gamma,epsilon,log_epsilon,gamma_dot,r"
    table = _csv(out)
    tr = sd.solve(sd.scheme("deepnorm", layers=6), n=8, beta=1.5, gamma0=0.1, t=[0, 1, 2])
    assert table["gamma"].tolist() == tr.gamma.tolist()          # printed with 17 digits
    # control: another N is another header and other numbers
    other = _run(capsys, "solve", "deepnorm", "--layers", "48", "--n", "8", "--beta", "1.5",
                 "--gamma0", "0.1", "--t-max", "2", "--points", "3")
    assert _header(other)["params"] == "layers=48"
    assert _csv(other)["gamma"].iloc[-1] != table["gamma"].iloc[-1]


def test_a_custom_solve_names_its_law_and_parameter_values(capsys):
    argv = ["solve", "custom", "--speed", "A_norm/(1 + c*t)", "--n", "8", "--beta", "1",
            "--gamma0", "0", "--t-max", "2", "--points", "2"]
    head = _header(_run(capsys, *argv, "--param", "c=0.5"))
    assert (head["scheme"], head["speed"], head["param"]) == ("custom", "A_norm/(1 + c*t)",
                                                              "c=0.5")
    assert _header(_run(capsys, *argv, "--param", "c=2"))["param"] == "c=2"     # control


def test_solve_json_carries_the_provenance(capsys):
    import json
    out = json.loads(_run(capsys, "solve", "post-ln", "--n", "8", "--beta", "1", "--gamma0",
                          "0", "--t-max", "1", "--points", "2", "--format", "json"))
    assert out["provenance"]["scheme"] == "post-ln" and out["provenance"]["n"] == 8


@pytest.mark.parametrize("name", [MINILM, SMOL])
def test_trace_csv_header_counts_the_tokens_traced(capsys, name):
    m = model(name)
    count = len(m.encode(TEXT))
    out = _run(capsys, "trace", name, "--text", TEXT, "--csv", "--skip-first")
    head = _header(out)
    assert head["model"] == name and head["scheme"] == f"{m.scheme} ({m.scheme_display})"
    assert head["tokens"] == f"n = {count - 1} traced (the first of {count} left out, skip_first)"
    assert f"text={TEXT}" in head["options"] and "skip_first=True" in head["options"]
    table = _csv(out)
    want = m.trace(text=TEXT, skip_first=True)
    assert table["cosine"].to_numpy() == pytest.approx(want.cosine, rel=1e-7)
    # control: without --skip-first every token is counted
    plain = _header(_run(capsys, "trace", name, "--text", TEXT, "--csv"))
    assert plain["tokens"] == f"n = {count} traced"


def test_trace_help_defines_the_columns_the_table_prints(capsys):
    from symdyn.trained.trace import COLUMNS
    model(MINILM)                              # skips without the extra and the wheel
    with pytest.raises(SystemExit):
        main(["trace", "--help"])
    text = capsys.readouterr().out
    columns = text.split("columns (one row per layer")[1]
    assert all(f"\n  {c} " in columns for c in COLUMNS)
    out = _run(capsys, "trace", MINILM, "--text", TEXT, "--csv")
    assert list(_csv(out).columns) == list(COLUMNS)
    assert "--ablate" in text and "no-mlp" in text and "--fit" in text


@pytest.mark.parametrize("ablation, options", [("no-mlp", {"mlp": False}),
                                               ("projection", {"norm": "projection"})])
def test_trace_ablate_is_load_s_option(capsys, ablation, options):
    m = model(MINILM)
    out = _run(capsys, "trace", MINILM, "--text", TEXT, "--csv", "--ablate", ablation)
    want = sd.trained.load(MINILM, **options).trace(text=TEXT)
    got = _csv(out)
    assert got["cosine"].to_numpy() == pytest.approx(want.cosine, rel=1e-7)
    assert _header(out)["ablations"] == ", ".join(want.provenance.ablations)
    # control: the checkpoint's own trace is another table
    assert not np.allclose(got["cosine"], m.trace(text=TEXT).cosine, rtol=1e-3)


def test_trace_ablate_random_reads_its_seed_and_fit_prints_the_fits(capsys):
    m = model(MINILM)
    out = _run(capsys, "trace", MINILM, "--text", TEXT, "--csv", "--ablate", "random",
               "--seed", "3", "--fit")
    want = sd.trained.fits.randomized(m, 3).trace(text=TEXT)
    assert _csv(out)["cosine"].to_numpy() == pytest.approx(want.cosine, rel=1e-7)
    assert _header(out)["ablations"] == "random weights (seed 3)"
    fits = [line[len("# fit: "):] for line in out.splitlines() if line.startswith("# fit: ")]
    assert fits == [str(f) for f in sd.trained.fits.of_trace(want).values()]
    assert fits[-1].startswith("reduced ODE (post-ln): beta = ")
    # control: another seed, other weights
    other = _csv(_run(capsys, "trace", MINILM, "--text", TEXT, "--csv", "--ablate", "random"))
    assert not np.allclose(other["cosine"], want.cosine, rtol=1e-3)
