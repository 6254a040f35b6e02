import json
import subprocess
import sys

import pytest

from symdyn.cli import main


def run(*argv):
    return subprocess.run([sys.executable, "-m", "symdyn.cli", *argv],
                          capture_output=True, text=True, timeout=300)


def test_schemes(capsys):
    assert main(["schemes"]) == 0
    assert capsys.readouterr().out.split() == ["post-ln", "pre-ln", "mix-ln",
                                               "peri-ln", "ngpt", "sqrt-scaling"]


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
    (["derive", "mix-ln", "--t-switch", "-1"], "t_switch"),
    (["derive", "ngpt", "--alpha", "beta"], "alpha"),
    ([], "command"),
])
def test_bad_input_one_line_exit_2(argv, culprit):
    proc = run(*argv)
    assert proc.returncode == 2
    assert proc.stdout == ""
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and culprit in lines[0], proc.stderr


def test_report_writes_latex_for_every_scheme(tmp_path):
    proc = run("report", "--out", str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    text = (tmp_path / "README.md").read_text()
    for name in ["post-ln", "pre-ln", "mix-ln", "peri-ln", "ngpt", "sqrt-scaling"]:
        assert f"## {name}" in text
    assert "C e^{- 2 t}" in text and "\\frac{C}{t^{2}}" in text
