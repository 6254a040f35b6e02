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

ROOT = Path(__file__).resolve().parents[2]


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


# --- issue 36: what a reader sees of a run (items 1-3) -----------------------------------

def _table(out):
    """(comment lines as {key: value}, header, rows) of a simulate table."""
    lines = out.strip().splitlines()
    notes = dict(x[2:].split(": ", 1) for x in lines if x.startswith("# "))
    data = [x.split(",") for x in lines if not x.startswith("#")]
    return notes, data[0], data[1:]


def test_the_issue_s_noisy_causal_run_is_titled_with_what_was_run(capsys, tmp_path, monkeypatch):
    from symdyn.output import page, plot

    saved = {}
    for module in (plot, page):
        monkeypatch.setattr(module, "save", lambda fig, path: saved.update(fig=fig))
    argv = ["simulate", "post-ln", "--mask", "causal", "--kappa", "20", "--seed", "0",
            "--step", "0.05", "--t-max", "2", "--points", "5", "--n", "6", "--d", "3"]
    status, out, _ = _cli(capsys, *argv, "--plot", str(tmp_path / "c.png"))
    title = saved["fig"].get_suptitle()
    for part in ("Post-LN", "$n = 6$", "4 runs", "$d = 3$", "mask causal", r"$\kappa = 20$",
                 "noise seed 0", "$h = 0.05$ (40 layers)", "seeds 0-3"):
        assert part in title, part
    notes, head, rows = _table(out)
    assert (notes["mask"], notes["kappa"], notes["noise seed"], notes["step"],
            notes["start seed"]) == ("causal", "20", "0", "0.05", "0..3")
    assert head == ["t", "gamma", "epsilon", "min_cosine", "clusters"]    # Post-LN: no r
    # control: the defaults' run names none of them
    status, _, _ = _cli(capsys, "simulate", "post-ln", "--t-max", "1", "--points", "3",
                        "--plot", str(tmp_path / "p.png"))
    plain = saved["fig"].get_suptitle()
    assert not any(x in plain for x in ("mask", r"\kappa", "noise", "$h ="))


def test_deepnorm_s_title_shows_n_and_h(capsys, tmp_path, monkeypatch):
    from symdyn.output import page, plot

    saved = {}
    for module in (plot, page):
        monkeypatch.setattr(module, "save", lambda fig, path: saved.update(fig=fig))
    for layers, shown in (("100", "$N = 100$"), (None, "$N = 12$")):    # N even at its default
        extra = ["--layers", layers] if layers else []
        assert _cli(capsys, "simulate", "deepnorm", *extra, "--step", "0.1", "--t-max", "1",
                    "--points", "3",
                    "--seeds", "1", "--plot", str(tmp_path / "d.png"))[0] == 0
        title = saved["fig"].get_suptitle()
        assert shown in title and "$h = 0.1$ (10 layers)" in title


def test_the_table_keeps_the_help_s_word(capsys):
    # epsilon at full relative precision where gamma prints 1.0: the equiangular
    # start follows the reduced ODE (the oracle); r for Pre-LN, not for Post-LN
    argv = ["simulate", "post-ln", "--init", "equiangular", "--n", "6", "--d", "6",
            "--seeds", "1", "--t-max", "20", "--points", "2"]
    _, head, rows = _table(_cli(capsys, *argv)[1])
    gamma, eps = float(rows[-1][1]), float(rows[-1][2])
    tr = sd.solve("post-ln", n=6, beta=1.0, gamma0=0.0, t=[20.0])
    assert eps == pytest.approx(float(tr.epsilon[-1]), rel=1e-6) and eps < 1e-15
    assert abs((1.0 - gamma) - eps) > 0.5 * eps          # control: 1 - gamma has lost it
    _, head, _ = _table(_cli(capsys, "simulate", "pre-ln", "--points", "2", "--seeds", "1")[1])
    assert head == ["t", "gamma", "epsilon", "r", "min_cosine", "clusters"]


def test_start_seeds_and_per_seed_rows(capsys):
    base = ["simulate", "pre-ln", "--n", "5", "--d", "4", "--t-max", "2", "--points", "3"]
    notes, head, rows = _table(_cli(capsys, *base, "--seeds", "4", "--per-seed")[1])
    assert head[0] == "seed" and [r[0] for r in rows] == ["0"] * 3 + ["1"] * 3 + ["2"] * 3 + [
        "3"] * 3
    assert notes["start seed"] == "0..3" and "one per seed" in notes["rows"]
    _, _, alone = _table(_cli(capsys, *base, "--seeds", "1", "--start-seed", "3")[1])
    member3 = [r[1:] for r in rows if r[0] == "3"]
    # seed 3 alone is member 3 of the batch (batched and single arithmetic may differ)
    assert np.allclose(np.array(alone, float), np.array(member3, float), rtol=1e-9, atol=0)
    _, _, other = _table(_cli(capsys, *base, "--seeds", "1", "--start-seed", "2")[1])
    assert not np.allclose(np.array(other, float), np.array(member3, float))   # control
    # the mean rows are the mean of the per-seed rows
    _, _, mean = _table(_cli(capsys, *base, "--seeds", "4")[1])
    per = np.array([r[1:] for r in rows], float).reshape(4, 3, -1)
    assert np.allclose(np.array(mean, float)[:, 1], per[:, :, 1].mean(0), rtol=1e-12)


def test_an_unseeded_noisy_run_prints_the_seed_that_reruns_it(capsys):
    argv = ["simulate", "post-ln", "--kappa", "20", "--step", "0.1", "--t-max", "1",
            "--n", "5", "--d", "3", "--seeds", "2"]
    notes, _, rows = _table(_cli(capsys, *argv)[1])
    notes2, _, rows2 = _table(_cli(capsys, *argv)[1])
    assert notes["noise seed"] != notes2["noise seed"] and rows != rows2    # fresh entropy
    again = _table(_cli(capsys, *argv, "--seed", notes["noise seed"])[1])[2]
    assert again == rows                          # the printed seed gives the same table


# --- issue 36: the rest of the surface (items 4-6) ---------------------------------------

SENTENCE = "It was the best of times, it was the worst of times."


def test_solve_s_table_says_what_was_solved(capsys):
    argv = ["solve", "deepnorm", "--n", "8", "--beta", "1", "--gamma0", "0.1", "--t-max", "2",
            "--points", "3"]
    notes, head, rows = _table(_cli(capsys, *argv, "--layers", "48")[1])
    assert (notes["scheme"], notes["params"], notes["n"], notes["gamma0"]) == (
        "deepnorm", "layers=48", "8", "0.1")
    assert head == ["t", "gamma", "epsilon", "log_epsilon", "gamma_dot", "r"] and len(rows) == 3
    other, _, rows6 = _table(_cli(capsys, *argv, "--layers", "6")[1])
    assert other["params"] == "layers=6" and rows6 != rows               # control


def _smol():
    from trained_helpers import SMOL, model
    return SMOL, model(SMOL)


def test_trace_s_header_columns_and_help(capsys):
    from symdyn.trained.trace import COLUMNS
    name, m = _smol()
    count = len(m.encode(SENTENCE))
    notes, head, rows = _table(_cli(capsys, "trace", name, "--text", SENTENCE, "--skip-first",
                                    "--csv")[1])
    assert notes["model"] == name and notes["scheme"] == "pre-ln (Pre-RMSNorm)"
    assert notes["tokens"].startswith(f"n = {count - 1} traced (the first of {count}")
    assert head == list(COLUMNS) and len(rows) == 31
    plain, _, _ = _table(_cli(capsys, "trace", name, "--text", SENTENCE, "--csv")[1])
    assert plain["tokens"] == f"n = {count} traced" and "ablations" not in plain   # control
    with pytest.raises(SystemExit):
        main(["trace", "--help"])
    helptext = capsys.readouterr().out
    assert all(f"  {c} " in helptext.split("columns (")[1] for c in COLUMNS)


def test_trace_ablate_and_fit_show_what_was_changed_and_fitted(capsys):
    name, _ = _smol()
    out = _cli(capsys, "trace", name, "--text", SENTENCE, "--skip-first", "--ablate", "no-mlp",
               "--fit")[1]
    notes, _, _ = _table(out)
    assert notes["ablations"] == "no MLP"
    fitted = [x for x in out.splitlines() if x.startswith("# fit: ")]
    assert [f.split(":")[1].strip() for f in fitted] == [
        "exponential", "power", "linear norm", "reduced ODE (pre-ln)"]


def test_a_trace_feeds_the_fits_by_its_registry_name():
    import warnings
    _, m = _smol()
    tr = m.trace(text=SENTENCE, skip_first=True)
    assert (tr.scheme, tr.scheme_display) == ("pre-ln", "Pre-RMSNorm")
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        fit = sd.trained.fits.reduced_ode(tr.cosine, tr.scheme, n=13)    # the issue's call
    # a constant the data do not fix is said, not hidden in "+- inf"
    warned = any("covariance is not finite" in str(w.message) for w in seen)
    assert warned == (not np.all(np.isfinite(fit.errors))) and (not warned or not fit.success)
    assert str(fit).startswith("reduced ODE (pre-ln): beta = ")


def test_results_beyond_runs_say_what_made_them(tmp_path):
    z = sd.mean_field_zonal(1.0, [0.0, 1.0], [1.0, 0.05], d=3, kappa=6.0, modes=8)
    assert "kappa" in str(z) and "array(" not in str(z) and "\n" not in repr(z)
    df = sd.sweep({"scheme": ["post-ln"], "n": [6], "d": [3]}, t=[0.0, 1.0], seeds=2,
                  executor="serial")
    assert df.provenance.producer == "sweep" and dict(df.provenance.options)["seeds"] == [0, 1]


def _drawn_with_sd_plot(source: str) -> bool:
    """A notebook cell that draws uses sd.plot (no pyplot) and titles its figure."""
    draws = "figure(" in source or "subplots(" in source
    return not draws or ("plt." not in source and "sd.plot.finish(fig, " in source)


def test_the_mean_field_notebook_titles_its_figures_with_sd_plot():
    import json
    book = json.loads((ROOT / "notebooks" / "mean_field.ipynb").read_text())
    cells = ["".join(c["source"]) for c in book["cells"] if c["cell_type"] == "code"]
    assert all(_drawn_with_sd_plot(c) for c in cells)
    titles = [c for c in cells if "sd.plot.finish(fig, " in c]
    assert len(titles) == 3 and all(r"\beta" in c or "mean_field_title" in c for c in titles)
    # control: the notebook's old first figure (plain matplotlib, no title) fails the check
    assert not _drawn_with_sd_plot("fig, ax = plt.subplots(figsize=(6, 4))\nax.plot(x, y)\n"
                                   "plt.show()")


def test_the_metastability_task_through_tables_and_plots(tmp_path):
    """Issue 48: a long run read through its tables and plots, not by hand.
    Oracles: the run's own count (the events add up to its changes, the
    plateaus hold its values); controls: a linear grid keeps a linear axis,
    a wrong beta is refused."""
    import matplotlib
    matplotlib.use("Agg", force=True)
    t = np.r_[0.0, np.geomspace(0.01, 1e6, 80)]
    sim = sd.simulate("post-ln", sd.init.sphere(16, 2, batch=2, seed=3), beta=9.0, t=t)
    events, plateaus = sim.events, sim.plateaus
    assert events.t_hi.is_monotonic_increasing and plateaus.t_start.is_monotonic_increasing
    assert (plateaus.length > 0).all()                                   # no zero-length ones
    merges = events.query("member == 0 and kind == 'merge'")
    assert sum(len(p) - 1 for p in merges.parts) == sim.clusters[0, 0] - sim.clusters[0, -1]
    for p in plateaus.itertuples():
        k = np.searchsorted(t, [p.t_start, p.t_end])
        assert np.all(sim.clusters[p.member, k[0]:k[1] + 1] == p.clusters)
    located = sd.locate_events(sim, tol=1e-4, points=50)
    assert located.t_event.is_monotonic_increasing and len(located) == len(events)
    assert sim.to_xarray().sizes["event"] == len(events)
    ax = sd.plot.clusters(sim)
    assert ax.get_xscale() == "log"
    assert sd.plot.energy(sim).get_lines()                              # beta from the run
    with pytest.raises(ValueError, match="^beta"):
        sd.plot.energy(sim, 3.0)
    lin = sd.simulate("post-ln", sd.init.sphere(6, 2, batch=1, seed=0), beta=1.0,
                      t=np.linspace(0, 10, 11))
    assert sd.plot.clusters(lin).get_xscale() == "linear"
    # a crossing time and a comparison in one call each
    T = sd.crossing_time("post-ln", 0.99, n=16, beta=[1.0, 9.0])
    assert T.shape == (2,) and T[0] < T[1]
    X0 = sd.init.equiangular(16, 17, 0.0, batch=1)
    run = sd.simulate("post-ln", X0, beta=1.0, t=[1.0, float(T[0])])
    c = sd.compare(run, sd.solve("post-ln", n=16, beta=1.0, gamma0=0.0, t=[1.0, float(T[0])]))
    assert c["gamma"] < 1e-6 and abs(run.gamma[0, -1] - 0.99) < 1e-6
    import matplotlib.pyplot as plt
    plt.close("all")
