import errno
import json
import math
import subprocess
import sys

import pytest

import symdyn as sd
from symdyn import cli
from symdyn.cli import main


def run(*argv):
    # the timeout is a hang guard: `report --quick` takes ~2 min on 2 cores,
    # and ran past 300 s on a loaded machine
    return subprocess.run([sys.executable, "-m", "symdyn.cli", *argv],
                          capture_output=True, text=True, timeout=1800)


def test_schemes(capsys):
    assert main(["schemes"]) == 0
    listed = capsys.readouterr().out.split()
    assert listed == sd.schemes()                       # every entry, new ones too
    assert listed[:6] == ["post-ln", "pre-ln", "mix-ln", "peri-ln", "ngpt", "sqrt-scaling"]


def test_derive_json_has_the_published_terminal_law(capsys):
    assert main(["derive", "pre-ln", "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["terminal_law"] == "polynomial"
    assert out["terminal_epsilon"]["text"] == "C/t**2"
    assert out["initial_velocity"]["text"] == "2/(n + exp(beta) - 1)"


def test_derive_custom_and_parameters(capsys):
    assert main(["derive", "custom", "--speed", "exp(t)"]) == 0
    assert "no-collapse" in capsys.readouterr().out
    assert main(["derive", "ngpt", "--alpha", "2", "--format", "latex"]) == 0
    assert "e^{- 4 t}" in capsys.readouterr().out
    assert main(["derive", "mix-ln", "--t-switch", "0.5"]) == 0


@pytest.mark.parametrize("argv, culprit", [
    (["derive", "layernorm"], "scheme"),
    (["derive", "post-ln", "--attention", "linear"], "attention"),
    (["derive", "custom", "--speed", "q*r"], "speed"),
    (["derive", "custom"], "speed"),
    (["derive", "custom", "--speed", "r", "--radial", "a+"], "radial"),
    (["derive", "mix-ln", "--t-switch", "-1"], "--t-switch"),
    (["derive", "ngpt", "--alpha", "beta"], "alpha"),
    (["derive", "postln"], "did you mean 'post-ln'"),
    (["derive", "custom", "--speed", "A_norm/(1 + c*t)", "--param", "c"], "--param"),
    (["derive", "custom", "--speed", "A_norm/(1 + c*t)", "--param", "c=x"], "--param"),
    (["derive", "post-ln", "--param", "c=1"], "--param"),
    (["solve", "post-ln", "--n", "1", "--beta", "1", "--gamma0", "0", "--t-max", "1"], "--n"),
    (["solve", "post-ln", "--n", "8.5", "--beta", "1", "--gamma0", "0", "--t-max", "1"], "--n"),
    (["table", "--columns", "gamma"], "columns"),
])
def test_bad_input_one_line_exit_2(argv, culprit):
    proc = run(*argv)
    assert proc.returncode == 2
    assert proc.stdout == ""
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and culprit in lines[0], proc.stderr


def test_verify_runs_proofs_check(tmp_path):
    proc = run("verify", "--quick", "--only", "published", "--json", str(tmp_path / "v.json"))
    assert proc.returncode == 0, proc.stderr
    assert "published" in proc.stdout and "PASS" in proc.stdout
    assert json.loads((tmp_path / "v.json").read_text())["results"][0]["verdict"] == "PASS"
    proc = run("verify", "--only", "nonsense")
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1


def test_report_sections_carry_the_verdicts(tmp_path):
    from symdyn import proofs_check
    from symdyn.output.report import DEPTHS, write_report

    results = proofs_check.run(quick=True, only=["published"])
    tr = sd.solve("post-ln", n=32, beta=1.0, gamma0=0.0, t=list(DEPTHS))
    path = write_report(tmp_path, [sd.derive("post-ln")], {"post-ln": tr},
                        sections=[("Verdicts", proofs_check.markdown(results))])
    text = path.read_text()
    assert "## Verdicts" in text and "| published | **PASS** |" in text
    # the depth table is the trajectory it is given: gamma(1) of Post-LN, six digits
    assert f"| post-ln | {tr.gamma[0]:.6f} |" in text


def test_report_writes_latex_for_every_scheme(tmp_path):
    proc = run("report", "--out", str(tmp_path), "--quick", "--no-verify",
               "--no-phase-diagram", "--no-trained", "--no-beyond", "--no-metastability")
    assert proc.returncode == 0, proc.stderr
    text = (tmp_path / "README.md").read_text()
    # the sections of tests/output/test_report_sections.py, left out as asked
    assert "## Theory against trained" not in text and "## Beyond the encoder" not in text
    assert "## Metastability" not in text
    for name in ["post-ln", "pre-ln", "mix-ln", "peri-ln", "ngpt", "sqrt-scaling"]:
        assert f"## {name}" in text
    assert "C e^{- 2 t}" in text and "\\frac{C}{t^{2}}" in text
    # quick figures, and a caption that says they are quick
    for name in ("figure2", "figure3", "figure4", "figure5"):
        assert (tmp_path / "figures" / f"{name}.png").stat().st_size > 10_000
    assert "Quick mode: d = 64, 4 seeds" in text
    # provenance at the top, and the designed schedules beside the built-ins
    assert text.index("| symdyn | 0.1.0, commit") < text.index("## Initial and terminal")
    assert "## Designing a schedule" in text and "| ngpt (affine) | designed |" in text
    assert (tmp_path / "figures" / "design.png").stat().st_size > 10_000


def test_solve_csv_matches_library(capsys):
    import numpy as np


    assert main(["solve", "pre-ln", "--n", "8", "--beta", "1", "--gamma0", "0",
                 "--t-max", "10", "--points", "3"]) == 0
    lines = [x for x in capsys.readouterr().out.strip().splitlines() if not x.startswith("# ")]
    assert lines[0] == "t,gamma,epsilon,log_epsilon,gamma_dot,r"
    last = [float(x) for x in lines[-1].split(",")]
    tr = sd.solve("pre-ln", n=8, beta=1.0, gamma0=0.0, t=[0, 5, 10])
    assert last[0] == 10 and last[1] == tr.gamma[-1] and last[5] == tr.r[-1]
    assert np.isclose(last[3], tr.log_epsilon[-1], rtol=0, atol=0)


def test_solve_json_high_precision(capsys):
    assert main(["solve", "ngpt", "--alpha", "1+t", "--n", "4", "--beta", "2",
                 "--gamma0", "0.1", "--t-max", "1", "--points", "2", "--dps", "40",
                 "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["columns"][1] == "gamma"
    assert len(out["rows"][1][1].replace("0.", "", 1)) >= 35   # ~40 digits printed


@pytest.mark.parametrize("argv, culprit", [
    (["--n", "1"], "n"),
    (["--gamma0", "2"], "gamma0"),
    (["--t-max", "-1"], "--t-max"),
    (["--points", "1"], "--points"),
    (["--dps", "5"], "dps"),
    (["--beta", "nan"], "beta"),
])
def test_solve_bad_input_one_line_exit_2(argv, culprit):
    base = {"--n": "4", "--beta": "1", "--gamma0": "0", "--t-max": "1"}
    base.update(dict(zip(argv[::2], argv[1::2], strict=True)))
    proc = run("solve", "post-ln", *[x for kv in base.items() for x in kv])
    assert proc.returncode == 2 and proc.stdout == ""
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and culprit in lines[0], proc.stderr


def test_version_and_python_dash_m():
    out = subprocess.run([sys.executable, "-m", "symdyn", "--version"], capture_output=True,
                         text=True)
    assert out.returncode == 0 and out.stdout.strip() == f"symdyn {sd.__version__}"


def test_solve_several_values_and_log_times(capsys):
    import numpy as np


    assert main(["solve", "post-ln", "--n", "8", "16", "--beta", "1", "--gamma0", "0",
                 "--t-max", "10", "--points", "3", "--log"]) == 0
    lines = [x for x in capsys.readouterr().out.strip().splitlines() if not x.startswith("# ")]
    assert lines[0].startswith("n,beta,gamma0,t,gamma") and len(lines) == 1 + 2 * 3
    row = [float(x) for x in lines[-1].split(",")]
    assert row[:4] == [16.0, 1.0, 0.0, 10.0]
    assert [float(x.split(",")[3]) for x in lines[1:4]] == [0.0, 1e-3, 10.0]
    tr = sd.solve("post-ln", n=16, beta=1.0, gamma0=0.0, t=[0.0, 1e-3, 10.0])
    assert np.isclose(row[6], tr.log_epsilon[-1], rtol=0, atol=0)


def test_simulate_table_and_plot(tmp_path, capsys):
    plot = tmp_path / "sim.png"
    assert main(["simulate", "post-ln", "--n", "6", "--d", "6", "--init", "equiangular",
                 "--seeds", "2", "--t-max", "2", "--points", "3", "--plot", str(plot)]) == 0
    lines = [x for x in capsys.readouterr().out.strip().splitlines() if x[0] != "#"]
    assert lines[0] == "t,gamma,epsilon,min_cosine,clusters"
    gamma_2 = float(lines[-1].split(",")[1])
    tr = sd.solve("post-ln", n=6, beta=1.0, gamma0=0.0, t=[2.0])
    assert abs(gamma_2 - tr.gamma[-1]) < 1e-8          # equiangular: the reduced ODE
    assert plot.stat().st_size > 5000
    assert main(["simulate", "post-ln", "--n", "1"]) == 2
    assert "--n" in capsys.readouterr().err


def test_simulate_plot_is_smooth_and_titled(tmp_path, capsys, monkeypatch):
    from symdyn.output import page, plot

    saved = {}
    for module in (plot, page):         # sd.plot.save is page.save
        monkeypatch.setattr(module, "save", lambda fig, path: saved.update(fig=fig, path=path))
    args = ["simulate", "pre-ln", "--n", "5", "--d", "7", "--seeds", "2", "--t-max", "2"]
    def rows():
        return [x for x in capsys.readouterr().out.strip().splitlines() if x[0] != "#"]
    assert main(args) == 0
    assert len(rows()) == 1 + 11
    assert main(args + ["--plot", str(tmp_path / "s.png")]) == 0
    assert len(rows()) == 1 + 101
    title = saved["fig"].get_suptitle()
    assert all(part in title for part in ("Pre-LN", "$n = 5$", "$d = 7$", "2 runs",
                                          "init sphere (seeds 0, 1)"))
    assert "weights" not in title and "mask" not in title        # defaults left out
    assert len(saved["fig"].axes[0].get_lines()[0].get_xdata()) == 101
    assert main(args + ["--points", "3", "--plot", str(tmp_path / "s.png")]) == 0
    assert len(rows()) == 1 + 3


def test_simulate_log_clock_and_float32(capsys):
    assert main(["simulate", "pre-ln", "--n", "6", "--d", "6", "--init", "equiangular",
                 "--seeds", "1", "--clock", "log", "--t-max", "2", "--points", "2"]) == 0
    lines = [x for x in capsys.readouterr().out.strip().splitlines() if x[0] != "#"]
    assert lines[0].startswith("tau,gamma,epsilon,log_r,")      # Pre-LN is radial
    tr = sd.solve("pre-ln", n=6, beta=1.0, gamma0=0.0, t=[math.expm1(2.0)])
    assert abs(float(lines[-1].split(",")[1]) - tr.gamma[-1]) < 1e-8    # tau = 2: t = e^2 - 1
    assert main(["simulate", "post-ln", "--clock", "log"]) == 2
    assert "clock" in capsys.readouterr().err
    assert main(["simulate", "post-ln", "--precision", "float32", "--points", "2"]) == 0
    capsys.readouterr()
    runs = {m: ["simulate", "pre-ln", "--clock", "log", "--t-max", "200", "--points", "2",
                "--n", "8", "--d", "2", "--beta", "4", "--seeds", "1", "--method", m]
            for m in ("auto", "dop853")}
    out = {}        # n = 8 to tau = 200: 8 of 94 steps are ROS34PW2 steps with auto
    for m, argv in runs.items():
        assert main(argv) == 0
        out[m] = capsys.readouterr().out.strip().splitlines()[-1].split(",")
    assert abs(float(out["auto"][1]) - float(out["dop853"][1])) < 1e-9
    assert main(runs["auto"][:-1] + ["bdf"]) == 2


def test_figures_with_custom_schemes(tmp_path, capsys, monkeypatch):
    import symdyn.output.figures as F

    small = F.figure4_data

    def tiny(**kw):
        kw.update(d=8, n=4, seeds=2, t_max=2.0, points=5)
        return small(**kw)
    monkeypatch.setattr(F, "figure4_data", tiny)
    assert main(["figures", "--out", str(tmp_path), "--quick",
                 "--schemes", "post-ln", "mine=r*A_norm**2;a"]) == 0
    assert (tmp_path / "figure2.png").stat().st_size > 10_000
    assert main(["figures", "--out", str(tmp_path), "--schemes", "=r"]) == 2
    assert "--schemes" in capsys.readouterr().err


# --- exit statuses and errors that say what and where (issue 24, items 6 and 7) -------

def _one_line_error(capsys):
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1, captured.err
    return lines[0]


def test_exit_statuses_differ_and_are_in_the_help(monkeypatch, capsys):
    with pytest.raises(SystemExit):
        main(["--help"])
    text = capsys.readouterr().out
    for line in ("0    done", "1    verify: a claim FAILed", "2    bad usage or input",
                 "3    internal error", "130  interrupted"):
        assert line in text
    assert main(["derive", "layernorm"]) == 2                     # control: bad input
    assert _one_line_error(capsys).startswith("symdyn: error: ")
    monkeypatch.setitem(cli.COMMANDS, "derive", lambda args: {}["x"])
    assert main(["derive", "post-ln"]) == 3
    assert _one_line_error(capsys).startswith("symdyn: internal error (KeyError)")


def test_verify_exit_statuses_pass_fail_and_internal_error(monkeypatch, capsys):
    from symdyn.proofs_check import published
    from symdyn.proofs_check.result import Result

    assert main(["verify", "--quick", "--only", "published"]) == 0
    monkeypatch.setattr(published, "check",
                        lambda quick=True: Result("published", "s", {}, "t", ["a"]))
    assert main(["verify", "--quick", "--only", "published"]) == 1     # a FAIL
    monkeypatch.setattr(published, "check", lambda quick=True: [][1])
    assert main(["verify", "--quick", "--only", "published"]) == 3     # a bug
    assert "internal error in published (IndexError)" in capsys.readouterr().err
    assert main(["verify", "--only", "nonsense"]) == 2


def test_report_into_a_read_only_folder_is_refused_before_the_work(tmp_path, monkeypatch,
                                                                   capsys):
    from test_sweep_safety import refuse_writes


    monkeypatch.setattr(cli.commands, "build_report", lambda *a, **k: pytest.fail("work started"))
    refuse_writes(monkeypatch, tmp_path)
    assert main(["report", "--out", str(tmp_path), "--quick"]) == 2
    assert _one_line_error(capsys) == (f"symdyn: error: --out: cannot write to "
                                       f"'{tmp_path}' (Read-only file system)")
    monkeypatch.undo()
    monkeypatch.setattr(cli.commands, "build_report", lambda *a, **k: pytest.fail("work started"))
    (tmp_path / "README.md").write_text("an earlier report")      # a rerun, README read-only
    refuse_writes(monkeypatch, tmp_path, names="README.md")
    assert main(["report", "--out", str(tmp_path)]) == 2
    assert _one_line_error(capsys) == (f"symdyn: error: --out: cannot write to "
                                       f"'{tmp_path / 'README.md'}' (Read-only file system)")


def test_report_that_cannot_write_mid_run_says_what_and_where(tmp_path, monkeypatch, capsys):
    from test_sweep_safety import refuse_writes

    import symdyn.output.build as build

    monkeypatch.setattr(build, "schemes", lambda: ["post-ln"])    # one derivation: quick
    refuse_writes(monkeypatch, tmp_path, errno.EROFS, names="README.md")
    argv = ["report", "--out", str(tmp_path), "--no-figures", "--no-design",
            "--no-trained", "--no-beyond", "--no-metastability", "--no-phase-diagram",
            "--no-verify"]
    assert main(argv) == 2
    assert capsys.readouterr().err.splitlines()[-1] == (
        f"symdyn: error: cannot write {tmp_path / 'README.md'} (Read-only file system)")


@pytest.mark.parametrize("error, status, start", [
    (PermissionError(13, "Permission denied", "/r/README.md"), 2,
     "symdyn: error: cannot write /r/README.md (Permission denied)"),
    (OSError(28, "No space left on device", "/r/figures/figure2.png"), 2,
     "symdyn: error: cannot write /r/figures/figure2.png (No space left on device)"),
    (OSError(5, "Input/output error"), 3, "symdyn: internal error (OSError)"),   # no file
    (RuntimeError("a bug"), 3, "symdyn: internal error (RuntimeError): a bug"),
])
def test_control_only_errors_on_a_file_are_blamed_on_the_file(tmp_path, monkeypatch, capsys,
                                                              error, status, start):

    def fail(*args, **kw):
        raise error

    monkeypatch.setattr(cli.commands, "build_report", fail)
    assert main(["report", "--out", str(tmp_path)]) == status
    assert _one_line_error(capsys).startswith(start)


@pytest.mark.parametrize("kind", ["closed", "silent"])
def test_phase_diagram_on_a_wrong_scheduler_exits_2_in_seconds(tmp_path, capsys, monkeypatch,
                                                               kind):
    from test_sweep_safety import peer

    pytest.importorskip("distributed")
    from symdyn.studies import executors

    asked = []                  # "in seconds": the probe answers before any client waits

    def connect(self):
        asked.append(self.address)
        raise ValueError("scheduler: the test's stand-in client")
    monkeypatch.setattr(executors.Dask, "_connect", connect)
    with peer(kind) as address:
        assert main(["phase-diagram", "--scheduler", address, "--out", str(tmp_path),
                     "--d", "4", "--beta", "1", "--n", "4", "--seeds", "1",
                     "--points", "3"]) == 2
    assert asked == []
    line = _one_line_error(capsys)
    assert line.startswith("symdyn: error: --scheduler: ") and address in line


def test_report_build_checks_its_readme_before_the_sections(tmp_path, monkeypatch):
    from test_sweep_safety import refuse_writes

    import symdyn.output.build as build

    monkeypatch.setattr(build, "write_figures", lambda *a, **k: pytest.fail("work started"))
    (tmp_path / "README.md").write_text("an earlier report")
    refuse_writes(monkeypatch, tmp_path, names="README.md")
    with pytest.raises(ValueError, match=f"^out: cannot write to '{tmp_path / 'README.md'}' "
                                         r"\(Read-only file system\)"):
        build.build_report(tmp_path, quick=True)
    monkeypatch.undo()                  # control: writable, the work starts
    monkeypatch.setattr(build, "write_figures", lambda *a, **k: 1 / 0)
    with pytest.raises(ZeroDivisionError):
        build.build_report(tmp_path, quick=True)


@pytest.mark.parametrize("argv", [["x" * 400], ["solve", "post-ln", "--n", "y" * 400, "--beta",
                                                  "1", "--gamma0", "0", "--t-max", "1"],
                                  ["derive", "custom", "--speed", "(" * 300 + "t"]])
def test_a_long_argument_gives_one_short_line(argv, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and len(err) <= 300, err
    assert argv[-1][:20] in err or argv[3][:20] in err      # the culprit is still named


def test_unrecognized_long_arguments_are_cut_in_one_short_line(capsys):
    # Found by benchmarks/fuzz.py (seed 3): argparse lists unrecognized
    # arguments unquoted, and a 400-character one came back whole, after a
    # doubled "symdyn: error: symdyn:" prefix.
    long = "1" * 400
    assert main(["simulate", "post-ln", "--n", "4", "--d", "3", "--beta", "1",
                     "--t-max", "1", long, "3"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and len(err) < 200 and "unrecognized arguments" in err
    assert err.startswith("symdyn: error: ") and "error: symdyn:" not in err
    assert "1" * 60 + "..." in err                 # the culprit still named


def test_every_entry_parameter_is_an_option(capsys):
    from symdyn.model.registry import entry

    with pytest.raises(SystemExit):
        main(["derive", "--help"])
    text = capsys.readouterr().out
    for name in sd.schemes():                   # whatever the registry holds, new ones too
        for q in entry(name).parameters:
            if q.kind != "free":
                assert f"--{q.name.replace('_', '-')}" in text and q.text[:20] in text
    # DeepNorm's N reaches the scheme: the speed of sd.scheme("deepnorm", layers=24)
    assert main(["derive", "deepnorm", "--layers", "24", "--format", "json"]) == 0
    got = json.loads(capsys.readouterr().out)
    assert got["speed"]["text"] == str(sd.scheme("deepnorm", layers=24).speed)
    assert got["speed"]["text"] != str(sd.scheme("deepnorm").speed)
    # control: a parameter the scheme does not declare is refused, naming it
    assert main(["derive", "post-ln", "--layers", "24"]) == 2
    assert "layers" in capsys.readouterr().err


# --- A CLI that teaches (issue 28): help, examples, names, parameters, LaTeX ---------

def _subcommands():
    from symdyn.cli.parser import EXAMPLES
    return list(EXAMPLES)


def test_bare_symdyn_lists_every_command_with_a_sentence():
    proc = run()
    assert proc.returncode == 0 and proc.stderr == ""
    lines = proc.stdout.splitlines()
    for name in _subcommands():
        at = next(i for i, ln in enumerate(lines) if ln.split()[:1] == [name])
        words = lines[at].split()
        if words == [name]:                                 # a long name wraps
            words += lines[at + 1].split()
        assert len(words) > 3, f"{name}: {words}"           # the name and a sentence


@pytest.mark.parametrize("command", _subcommands())
def test_help_gives_every_option_a_sentence_its_default_and_examples(command, capsys):
    from symdyn.cli.parser import EXAMPLES, build_parser

    with pytest.raises(SystemExit):
        main([command, "--help"])
    text = capsys.readouterr().out
    assert "`" not in text and ":func:" not in text                  # no reST in a terminal
    assert "examples:" in text and all(x in text for x in EXAMPLES[command])
    sub = build_parser()._subparsers._group_actions[0].choices[command]
    for action in sub._actions:
        if not action.option_strings or action.dest == "help":
            continue
        assert action.help and len(action.help.split()) >= 2, action.dest
        if not (action.default is None or action.default is False or action.default == []):
            shown = " ".join(map(str, action.default)) if isinstance(action.default, list) \
                else str(action.default)
            assert f"(default: {shown})" in " ".join(text.split()), action.dest


def test_control_the_help_test_sees_a_missing_default(capsys):
    from symdyn.cli import parser as cli_parser

    with pytest.raises(SystemExit):
        main(["simulate", "--help"])
    with_defaults = " ".join(capsys.readouterr().out.split())
    plain = cli_parser.Formatter._get_help_string
    try:
        cli_parser.Formatter._get_help_string = lambda self, action: action.help or ""
        with pytest.raises(SystemExit):
            main(["simulate", "--help"])
    finally:
        cli_parser.Formatter._get_help_string = plain
    without = " ".join(capsys.readouterr().out.split())
    assert "(default: 16)" in with_defaults and "(default: 16)" not in without


@pytest.mark.parametrize("line", [x for c in ("schemes", "derive", "solve", "simulate", "table")
                                  for x in __import__("symdyn.cli.parser", fromlist=["x"])
                                  .EXAMPLES[c]])
def test_every_quick_example_of_the_help_runs(line, tmp_path, monkeypatch, capsys):
    import shlex

    monkeypatch.chdir(tmp_path)
    assert main(shlex.split(line)[1:]) == 0, capsys.readouterr().err
    assert capsys.readouterr().out.strip()


def test_scheme_names_as_the_legends_spell_them(capsys):
    assert main(["derive", "Post-LN"]) == 0
    assert capsys.readouterr().out.startswith("post-ln (softmax attention)")
    assert main(["derive", "LN_Scaling", "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["scheme"] == "ln-scaling" and out["temperature"]["text"] == "1/(t + 1)"


def test_param_gives_free_parameters_their_values(capsys):
    assert main(["solve", "custom", "--speed", "A_norm/(1 + c*t)", "--param", "c=0.5",
                 "--n", "8", "--beta", "1", "--gamma0", "0", "--t-max", "2",
                 "--points", "2", "--format", "json"]) == 0
    half = float(json.loads(capsys.readouterr().out)["rows"][-1][1])
    assert main(["solve", "custom", "--speed", "A_norm/(1 + c*t)", "--param", "c=2",
                 "--n", "8", "--beta", "1", "--gamma0", "0", "--t-max", "2",
                 "--points", "2", "--format", "json"]) == 0
    two = float(json.loads(capsys.readouterr().out)["rows"][-1][1])
    for c, got in ((0.5, half), (2.0, two)):
        s = sd.custom_scheme("custom", "A_norm/(1 + c*t)", params={"c": c})
        want = sd.solve(s, n=8, beta=1, gamma0=0, t=[0, 2]).gamma[-1]
        assert got == pytest.approx(float(want), rel=1e-12)
    assert two > half    # control: the value reached the solver (1 + c t speeds it up)


def test_solve_counts_tokens_in_integers(capsys):
    assert main(["solve", "post-ln", "--n", "1e1", "--beta", "1", "--gamma0", "0",
                 "--t-max", "1", "--points", "2", "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["n"] == 10
    assert main(["solve", "post-ln", "--n", "1", "--beta", "1", "--gamma0", "0",
                 "--t-max", "1"]) == 2
    err = capsys.readouterr().err
    assert "array(" not in err and "integer >= 2 or inf, got '1'" in err


def test_solve_takes_n_inf_as_the_long_context_limit(capsys):
    # the limit n -> inf: at beta = 0 the logistic law gamma' = 2 gamma (1 - gamma),
    # gamma = 1 / (1 + e^(-2t)) from gamma0 = 1/2 (control: n = 8 is another law)
    import numpy as np

    def gamma_at_one(n):
        assert main(["solve", "post-ln", "--n", n, "--beta", "0", "--gamma0", "0.5",
                     "--t-max", "1", "--points", "2", "--format", "json"]) == 0
        out = json.loads(capsys.readouterr().out)
        return out["n"], out["rows"][-1][out["columns"].index("gamma")]
    n, g = gamma_at_one("inf")
    assert n == "inf" and abs(float(g) - 1 / (1 + np.exp(-2.0))) < 1e-10
    assert abs(float(gamma_at_one("8")[1]) - 1 / (1 + np.exp(-2.0))) > 1e-3
    assert main(["simulate", "post-ln", "--n", "inf", "--d", "3", "--beta", "1"]) == 2


def test_init_offers_the_standard_gaussian_of_theorem_3_1():
    import numpy as np

    from symdyn.studies.runs import batch_start

    d = 64
    std, _ = batch_start("standard-gaussian", 400, d, 0.0, 1, "identity")
    scaled, _ = batch_start("gaussian", 400, d, 0.0, 1, "identity")
    # E|x|^2 = d for N(0, I_d), 1 for N(0, I_d/d); the mean of 400 is within 1%
    assert np.mean(np.sum(std**2, -1)) == pytest.approx(d, rel=0.03)
    assert np.mean(np.sum(scaled**2, -1)) == pytest.approx(1.0, rel=0.03)


def test_derive_latex_is_a_table_for_a_paper(capsys):
    assert main(["derive", "ln-scaling", "--format", "latex"]) == 0
    tex = capsys.readouterr().out
    lines = tex.strip().splitlines()
    assert lines[1] == r"\begin{tabular}{ll}" and lines[-1] == r"\end{tabular}"
    assert r"\multicolumn{2}{l}{LN-Scaling, softmax attention}" in tex
    assert r"temperature $\tau$" in tex and r"& $\frac{1}{t + 1}$ \\" in tex
    body = [ln for ln in lines if ln.endswith(r"\\")]
    assert all(ln.count("&") == 1 for ln in body[1:])              # two columns each
    assert tex.count("{") == tex.count("}") and tex.count("$") % 2 == 0


def test_table_command_latex_with_columns(capsys):
    assert main(["table", "post-ln", "pre-ln", "--format", "latex",
                 "--columns", "order in n", "terminal law"]) == 0
    tex = capsys.readouterr().out
    assert r"\begin{tabular}{lll}" in tex
    assert r"Post-LN & $\Theta(\frac{1}{n})$ & exponential \\" in tex
    assert r"Pre-LN & $\Theta(\frac{1}{n})$ & polynomial \\" in tex
    assert main(["table", "peri-ln", "--format", "csv", "--columns", "terminal law"]) == 0
    assert capsys.readouterr().out.splitlines() == ["scheme,terminal law", "peri-ln,polynomial"]


def test_trace_prints_the_api_s_per_layer_table(capsys):
    pytest.importorskip("safetensors", reason="the [trained] extra is not installed")

    text = "It was the best of times."
    try:
        model = sd.trained.load("all-MiniLM-L6-v2")
    except (ImportError, ValueError) as exc:
        pytest.skip(f"the MiniLM wheel is not installed: {exc}")
    assert main(["trace", "all-MiniLM-L6-v2", "--text", text, "--csv"]) == 0
    rows = [x for x in capsys.readouterr().out.strip().splitlines() if not x.startswith("# ")]
    trace = model.trace(text=text)
    assert rows[0].startswith("layer,cosine") and len(rows) == len(trace.cosine) + 1
    for row, c in zip(rows[1:], trace.cosine, strict=True):
        assert float(row.split(",")[1]) == pytest.approx(c, rel=1e-7)   # float32, 8 digits
    assert main(["trace", "gpt-5", "--text", text]) == 2          # control: bad name, one line
    assert "neither a known model" in capsys.readouterr().err


# --- a full disk is the user's situation (issue 34, item 5) -------------------------------

FULL = "/dev/full"
needs_full = pytest.mark.skipif(not __import__("os").path.exists(FULL), reason="no /dev/full")


def _report_one_scheme(monkeypatch, out):
    import symdyn.output.build as build

    monkeypatch.setattr(build, "schemes", lambda: ["post-ln"])    # one derivation: quick
    return main(["report", "--out", str(out), "--no-figures", "--no-design", "--no-trained",
                 "--no-beyond", "--no-metastability", "--no-phase-diagram", "--no-verify"])


@needs_full
def test_report_onto_a_full_disk_names_the_file(tmp_path, monkeypatch, capsys):
    (tmp_path / "README.md").symlink_to(FULL)       # every write fails: ENOSPC, no file name
    assert _report_one_scheme(monkeypatch, tmp_path) == 2
    assert capsys.readouterr().err.splitlines()[-1] == (
        f"symdyn: error: cannot write {tmp_path / 'README.md'} (No space left on device)")


@needs_full
def test_control_without_naming_the_file_a_full_disk_was_an_internal_error(
        tmp_path, monkeypatch, capsys):
    import contextlib

    import symdyn.output.report as report

    monkeypatch.setattr(report, "naming", lambda path: contextlib.nullcontext())
    (tmp_path / "README.md").symlink_to(FULL)
    assert _report_one_scheme(monkeypatch, tmp_path) == 3
    assert capsys.readouterr().err.splitlines()[-1].startswith(
        "symdyn: internal error (OSError): [Errno 28]")


@needs_full
def test_a_plot_onto_a_full_disk_names_the_file(tmp_path, capsys):
    plot = tmp_path / "p.png"
    plot.symlink_to(FULL)
    argv = ["simulate", "post-ln", "--n", "4", "--d", "3", "--seeds", "1", "--t-max", "1",
            "--points", "3", "--plot", str(plot)]
    assert main(argv) == 2
    assert _one_line_error(capsys) == (f"symdyn: error: cannot write {plot} "
                                       f"(No space left on device)")
    plot.unlink()                                     # control: a real file is written
    assert main(argv) == 0 and plot.stat().st_size > 1000


@needs_full
def test_standard_output_onto_a_full_disk_exits_2_in_one_line():
    with open(FULL, "w") as sink:
        done = subprocess.run([sys.executable, "-m", "symdyn.cli", "schemes"], stdout=sink,
                              stderr=subprocess.PIPE, text=True, timeout=300)
    assert (done.returncode, done.stderr.strip().splitlines()) == (
        2, ["symdyn: error: cannot write standard output (No space left on device)"])


# --- the command line names its options, never Python keywords (issue 34, item 5) -------

_SIM = ["simulate", "post-ln", "--n", "4", "--d", "3", "--seeds", "1", "--t-max", "1"]
_PYTHON = r"(?<![\w.-])(step|kappa|seed|clock|mask|params|dtype|speed|alpha)=|\bNone\b"


@pytest.mark.parametrize("argv, start", [
    (_SIM + ["--kappa", "4"], "--step: the noisy path needs a step (--step h, "),
    (_SIM + ["--kappa", "4", "--step", "0.1", "--seed", "-1"],
     "--seed must be an integer >= 0, got -1"),
    (_SIM + ["--seed", "1", "--step", "0.1"], "--seed: only the noisy dynamics"),
    (_SIM + ["--kappa", "-4", "--step", "0.1"], "--kappa must be a number > 0"),
    (_SIM + ["--clock", "log", "--step", "0.1"], "--clock: 'log' is for"),
    (_SIM + ["--step", "1e-300"], "--step: 1e-300 needs"),
    (["derive", "custom", "--speed", "A_norm/(1+c*t)"],
     "--speed: unknown symbol(s) ['c']"),
    (["simulate", "custom", "--speed", "A_norm/(1+c*t)", "--t-max", "1"],
     "--speed: unknown symbol(s) ['c']"),
    (["derive", "custom", "--speed", "r", "--radial", "c*a"], "--radial: unknown symbol(s)"),
    (["derive", "ngpt", "--alpha", "1 + c*t"], "--alpha: unknown symbol(s) ['c']"),
    (["solve", "mix-ln", "--t-switch", "-1", "--n", "4", "--beta", "1", "--gamma0", "0",
      "--t-max", "1"], "--t-switch must be"),
    (["solve", "post-ln", "--n", "4", "--beta", "1", "--gamma0", "0", "--t-max", "1",
      "--r0", "-1"], "--r0 must be > 0"),
])
def test_messages_name_the_options(argv, start, capsys):
    import re

    assert main(argv) == 2
    line = _one_line_error(capsys).removeprefix("symdyn: error: ")
    assert line.startswith(start), line
    assert not re.search(_PYTHON, line), line
    if "unknown symbol" in line:
        assert line.endswith("; give a free parameter its value with --param c=VALUE")


def test_control_the_library_s_words_are_python_keywords(monkeypatch, capsys):
    import re


    monkeypatch.setattr(cli, "in_flags", lambda text, flags: text)
    assert main(_SIM + ["--kappa", "4"]) == 2
    line = _one_line_error(capsys)
    assert line.startswith("symdyn: error: step: ") and re.search(_PYTHON, line)


def test_control_with_its_parameter_the_speed_runs(capsys):
    assert main(["derive", "custom", "--speed", "A_norm/(1+c*t)", "--param", "c=0.5"]) == 0
    assert main(_SIM + ["--mask", "Causal", "--points", "2"]) == 0    # any case, as schemes


def test_a_phase_diagram_table_the_full_disk_refuses_exits_2(tmp_path, monkeypatch, capsys):
    import contextlib

    import symdyn.studies.storage as storage

    @contextlib.contextmanager
    def full(path, mode="wb"):
        raise OSError(errno.ENOSPC, "No space left on device")
        yield

    argv = ["phase-diagram", "--d", "4", "--beta", "1", "--n", "4", "--seeds", "1",
            "--points", "3", "--t-max", "1", "--workers", "1", "--out", str(tmp_path)]
    monkeypatch.setattr(storage, "_replacing", full)
    assert main(argv) == 2      # the sweep warns and returns its table; the CLI lost it
    assert capsys.readouterr().err.splitlines()[-1] == (f"symdyn: error: --out: cannot write "
                                       f"{tmp_path / 'phase_diagram.csv'} "
                                       f"(No space left on device)")
    monkeypatch.undo()                         # control: the table is written, exit 0
    assert main(argv) == 0 and (tmp_path / "phase_diagram.csv").stat().st_size > 100
