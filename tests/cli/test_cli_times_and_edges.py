"""Issue 48, items 3 and 8 on the command line: the output times of ``solve``
and ``simulate`` (``--log``, ``--t-min``, ``--points``), the defaults they
share, and the smaller edges (check names, values as written, unknown
options, symbol typos, output folders). Each check has a control that fails
it."""

import math
import uuid
from pathlib import Path

import numpy as np
import pytest

import symdyn as sd
from symdyn.cli import main
from symdyn.cli.commands import output_times
from symdyn.cli.parser import T_MIN_CAP, T_MIN_FRACTION


def _error(capsys) -> str:
    """The one line on stderr (the CLI contract), without its prefix."""
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    assert err[0].startswith("symdyn: error: "), err[0]
    return err[0].removeprefix("symdyn: error: ")


def _csv_times(out: str) -> np.ndarray:
    rows = [line for line in out.splitlines() if line and not line.startswith("#")]
    head = rows[0].split(",")
    col = head.index("t")
    return np.array([float(r.split(",")[col]) for r in rows[1:]])


# --- item 3: the output times -------------------------------------------------------------

def _old_log_grid(t_max, points):
    """The grid before issue 48 (a control: it never reaches t_max at points = 2)."""
    return np.concatenate([[0.0], np.geomspace(1e-4 * t_max, t_max, points - 1)])


@pytest.mark.parametrize("points", [2, 3, 11, 1000])
def test_log_grid_reaches_t_max_and_is_geometric(points):
    t_max = 1e6
    t = output_times(t_max, points, log=True)
    assert len(t) == points and t[0] == 0.0 and t[-1] == t_max
    assert np.all(np.diff(t) > 0)
    # the closed form: t_k = t_min (t_max/t_min)^((k-1)/(points-2)), t_min = 0.01 here
    t_min = min(T_MIN_FRACTION * t_max, T_MIN_CAP)
    assert t_min == 0.01
    if points > 2:
        k = np.arange(1, points)
        want = t_min * (t_max / t_min) ** ((k - 1) / (points - 2))
        np.testing.assert_allclose(t[1:], want, rtol=1e-12)


def test_the_old_log_grid_fails_the_same_check():
    # negative control: the check above catches the grid that stopped at 100
    t = _old_log_grid(1e6, 2)
    assert t[-1] == 100.0 and t[-1] != 1e6


@pytest.mark.parametrize("points", [2, 3, 11, 1000])
def test_solve_log_prints_t_max_last(points, capsys):
    assert main(["solve", "post-ln", "--n", "8", "--beta", "1", "--t-max", "1e6",
                 "--points", str(points), "--log"]) == 0
    t = _csv_times(capsys.readouterr().out)
    assert len(t) == points and t[0] == 0.0 and t[-1] == 1e6


@pytest.mark.parametrize("points", [2, 3, 11, 1000])
def test_simulate_log_prints_t_max_last(points, capsys):
    assert main(["simulate", "post-ln", "--n", "3", "--d", "2", "--seeds", "1", "--t-max", "1e6",
                 "--points", str(points), "--log"]) == 0
    t = _csv_times(capsys.readouterr().out)
    assert len(t) == points and t[0] == 0.0 and t[-1] == 1e6
    np.testing.assert_array_equal(t, output_times(1e6, points, log=True))


def test_linear_grid_and_t_min(capsys):
    np.testing.assert_allclose(output_times(10.0, 11), np.arange(11.0), rtol=0, atol=1e-14)
    assert main(["solve", "post-ln", "--n", "8", "--beta", "1", "--t-max", "100",
                 "--points", "4", "--log", "--t-min", "1"]) == 0
    np.testing.assert_allclose(_csv_times(capsys.readouterr().out), [0, 1, 10, 100],
                               rtol=1e-14)
    # controls: a t_min at or beyond t_max, or without --log, is refused
    assert main(["solve", "post-ln", "--n", "8", "--beta", "1", "--t-max", "100",
                 "--log", "--t-min", "100"]) == 2
    assert _error(capsys).startswith("--t-min must be in (0, --t-max)")
    assert main(["solve", "post-ln", "--n", "8", "--beta", "1", "--t-min", "1"]) == 2
    assert "add --log" in _error(capsys)


def test_simulate_log_times(capsys):
    assert main(["simulate", "post-ln", "--n", "4", "--d", "3", "--seeds", "1",
                 "--t-max", "100", "--points", "5", "--log", "--t-min", "0.1"]) == 0
    t = _csv_times(capsys.readouterr().out)
    np.testing.assert_array_equal(t, output_times(100.0, 5, log=True, t_min=0.1))
    np.testing.assert_allclose(t, [0, 0.1, 1, 10, 100], rtol=1e-12)


def test_solve_defaults_gamma0_to_zero_as_simulate_and_certify(capsys):
    argv = ["solve", "post-ln", "--n", "8", "--beta", "1", "--t-max", "2", "--points", "3"]
    assert main(argv) == 0
    default = capsys.readouterr().out
    assert main(argv + ["--gamma0", "0"]) == 0
    assert capsys.readouterr().out == default          # the same call, the same path
    assert "# gamma0: 0" in default
    # the oracle: gamma(0) = 0 and gamma_dot(0) = 2/(n + e^beta - 1) (Post-LN, Table 1)
    row0 = [line for line in default.splitlines() if line.startswith("0.0,")][0].split(",")
    assert float(row0[1]) == 0.0
    assert math.isclose(float(row0[4]), 2 / (8 + math.e - 1), rel_tol=1e-12)
    assert main(argv + ["--gamma0", "0.1"]) == 0       # control: another start differs
    assert capsys.readouterr().out != default


def _events(argv, capsys):
    assert main(argv) == 0
    rows = capsys.readouterr().out.strip().splitlines()
    head = rows[0].split(",")
    return [dict(zip(head, r.split(","), strict=True)) for r in rows[1:]]


def test_log_grid_separates_the_merges_a_linear_grid_lumps(capsys):
    run = ["simulate", "post-ln", "--n", "8", "--d", "3", "--beta", "9", "--seeds", "1",
           "--t-max", "1e6", "--points", "41", "--events", "--locate", "1e-3"]
    linear = _events(run, capsys)
    log = _events(run + ["--log"], capsys)
    # the control: on the linear grid (step 25,000) the merges of t ~ 1..10 fall in
    # the first bracket, and one event joins six clusters at once
    assert max(len(e["parts"].split()) for e in linear) >= 6
    assert all(float(e["t_before"]) == 0.0 for e in linear)
    # the log grid: more events, none joins more than three clusters, each located
    # inside its bracket and in time order
    assert len(log) > len(linear)
    assert max(len(e["parts"].split()) for e in log) <= 3
    times = [float(e["t_event"]) for e in log]
    assert times == sorted(times)
    for e in log:
        assert float(e["t_before"]) < float(e["t_event"]) <= float(e["t_after"])
    # a second method: the last merge, located on both grids, agrees within the
    # two stated errors
    last_lin, last_log = linear[-1], log[-1]
    gap = abs(float(last_lin["t_event"]) - float(last_log["t_event"]))
    assert gap <= float(last_lin["t_event_error"]) + float(last_log["t_event_error"])


# --- item 8: the smaller edges --------------------------------------------------------------

def test_verify_only_takes_the_help_example(monkeypatch, capsys):
    import symdyn.proofs_check.__main__ as pc

    asked = []
    monkeypatch.setattr(pc, "run", lambda quick, only, progress: asked.append(only) or [])
    assert main(["verify", "--only", "initial_velocity"]) == 0     # verify --help's example
    assert asked == [["initial-velocity"]]
    assert main(["verify", "--only", "Initial-Velocity", "initial-velocity"]) == 0
    assert asked[-1] == ["initial-velocity"]                        # once
    capsys.readouterr()
    # controls: a typo is refused with the closest name, as symdyn's own error
    assert main(["verify", "--only", "initial_velocty"]) == 2
    line = _error(capsys)
    assert "proofs_check" not in line
    assert line.startswith("--only: unknown check(s) ['initial_velocty']; did you mean "
                           "initial-velocity?")
    assert main(["verify", "--only", "zzz"]) == 2
    assert "did you mean" not in _error(capsys)
    assert main(["verify", "--only", "fig2-order"]) == 2
    assert _error(capsys) == "--only: 'fig2-order' is a certified check; add --certify"
    assert len(asked) == 2                                           # nothing else ran


@pytest.mark.parametrize("argv, written", [
    (["solve", "post-ln", "--n", "8", "--beta", "-1"], "--beta must be >= 0, got -1"),
    (["solve", "post-ln", "--n", "8", "--beta", "1", "-1.50"], "--beta must be >= 0, got -1.50"),
    (["simulate", "post-ln", "--beta", "-1"], "--beta must be >= 0, got -1"),
    (["solve", "post-ln", "--n", "8", "--beta", "1", "--r0", "-2.0"], "--r0 must be > 0, got -2.0"),
    (["solve", "post-ln", "--n", "8", "--beta", "1", "--t-max", "0"],
     "--t-max must be > 0, got 0"),
    (["solve", "post-ln", "--n", "8", "--beta", "1", "--gamma0", "1.5"],
     "--gamma0 must be in (-1, 1), got 1.5"),
])
def test_values_are_refused_as_written(argv, written, capsys):
    assert main(argv) == 2
    line = _error(capsys)
    assert line == written
    assert "array(" not in line


def test_values_as_written_control(capsys):
    # control: the same options in range run
    assert main(["solve", "post-ln", "--n", "8", "--beta", "0", "--t-max", "1",
                 "--points", "2"]) == 0
    assert main(["simulate", "post-ln", "--n", "3", "--d", "2", "--seeds", "1", "--beta", "0",
                 "--t-max", "0.5", "--points", "2"]) == 0


@pytest.mark.parametrize("command", [
    ["solve", "post-ln", "--n", "8", "--beta", "1"],
    ["simulate", "post-ln", "--n", "3", "--d", "2", "--seeds", "1", "--t-max", "0.5"],
])
@pytest.mark.parametrize("typo", ["--gamma", "--gama0", "--gamma0x"])
def test_a_typo_of_gamma0_is_an_unknown_option(command, typo, capsys):
    assert main(command + [typo, "0.1"]) == 2
    line = _error(capsys)
    assert f"unknown option {typo}; did you mean --gamma0?" in line
    assert "required" not in line


def test_unknown_option_comes_before_a_missing_required_one(capsys):
    # solve without --beta (required) and with --gama0: the typo is what is said
    assert main(["solve", "post-ln", "--n", "8", "--gama0", "0.1"]) == 2
    assert "unknown option --gama0; did you mean --gamma0?" in _error(capsys)
    # control: without the typo, the missing option is said
    assert main(["solve", "post-ln", "--n", "8"]) == 2
    assert "required: --beta" in _error(capsys)
    # control: the option spelled right (and --option=value) runs
    assert main(["solve", "post-ln", "--n", "8", "--beta", "1", "--gamma0=0.1",
                 "--t-max", "1", "--points", "2"]) == 0


def test_a_typo_of_a_symbol_suggests_the_symbol(capsys):
    assert main(["derive", "custom", "--speed", "A_nrom*r"]) == 2
    line = _error(capsys)
    assert "did you mean A_norm?" in line and "--param A_nrom=VALUE" in line
    # control: a name close to no symbol is a free parameter to give a value
    assert main(["derive", "custom", "--speed", "A_norm/(1 + c*t)"]) == 2
    line = _error(capsys)
    assert "did you mean" not in line
    assert line.endswith("give a free parameter its value with --param c=VALUE")
    assert main(["derive", "custom", "--speed", "A_norm/(1 + c*t)", "--param", "c=0.5"]) == 0


_SIM = ["simulate", "post-ln", "--n", "3", "--d", "2", "--seeds", "1", "--t-max", "0.5",
        "--points", "3"]


def test_plot_is_refused_at_the_filesystem_root(capsys):
    top = Path("/") / f"symdyn-test-{uuid.uuid4().hex}"
    assert main(_SIM + ["--plot", str(top / "x.png")]) == 2
    assert _error(capsys).startswith(f"--plot: will not create the folder '{top}' at the "
                                     f"filesystem's root")
    assert not top.exists()


def test_plot_creates_one_new_folder_only(tmp_path, capsys):
    deep = tmp_path / "a" / "b" / "x.png"
    assert main(_SIM + ["--plot", str(deep)]) == 2
    assert _error(capsys).startswith(f"--plot: the folder '{tmp_path / 'a'}' does not exist")
    assert not (tmp_path / "a").exists()
    # control: the file's own folder, inside an existing one, is created
    one = tmp_path / "figs" / "x.png"
    assert main(_SIM + ["--plot", str(one)]) == 0
    assert one.stat().st_size > 0


def test_help_states_the_log_grid_and_the_folder_rule(capsys):
    for command in ("solve", "simulate"):
        with pytest.raises(SystemExit):
            main([command, "--help"])
        text = " ".join(capsys.readouterr().out.split())
        assert "--t-min" in text and "equally spaced in log t" in text
        assert f"(default: {T_MIN_FRACTION:g} t_max, at most {T_MIN_CAP:g})" in text
    assert "/new/x.png is refused" in text


def test_reduced_ode_oracle_for_the_log_grid(capsys):
    # the values printed at the log times are sd.solve's at those times
    assert main(["solve", "pre-ln", "--n", "8", "--beta", "1", "--t-max", "1e3", "--points",
                 "4", "--log"]) == 0
    out = capsys.readouterr().out
    t = _csv_times(out)
    tr = sd.solve("pre-ln", n=8, beta=1.0, gamma0=0.0, t=t)
    gamma = [float(r.split(",")[1]) for r in out.splitlines()
             if r and not r.startswith(("#", "t,"))]
    np.testing.assert_allclose(gamma, tr.gamma, rtol=1e-15, atol=0)
