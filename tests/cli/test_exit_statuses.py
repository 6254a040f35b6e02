"""Exit 2 only for bad input, 3 for a bug; sizes before work; no empty folders
left (issue 46 item 5).

Oracles: where the error was raised (a ``ValueError`` numpy raises on a
bug is exit 3; a refusal of the library's checks, ``BadInput``, is exit 2,
and API users still catch it as ``ValueError``); the number of starts drawn
(none before ``--seeds 1e9`` is refused, as ``--n`` of that size is); the
folders on disk after a failed command. Controls: bad input stays exit 2;
a folder that existed before a failed command stays; one that was written
into stays.
"""

from __future__ import annotations

import numpy as np
import pytest

import symdyn as sd
import symdyn.cli as cli
from symdyn.base.checks import BadInput
from symdyn.cli import main


def _err(capsys):
    return capsys.readouterr().err.strip()


def test_a_value_error_from_a_bug_is_exit_3_bad_input_exit_2(monkeypatch, capsys):
    assert main(["derive", "layernorm"]) == 2                      # control: bad input
    assert _err(capsys).startswith("symdyn: error: ")
    monkeypatch.setitem(cli.COMMANDS, "derive", lambda args: np.ones(2) + np.ones(3))
    assert main(["derive", "post-ln"]) == 3                          # numpy's, a bug
    assert _err(capsys).startswith("symdyn: internal error (ValueError): operands could not")

    def unpack(args):
        cols, sec = [1, 2, 3]                  # too many values to unpack: a bug
        return cols, sec
    monkeypatch.setitem(cli.COMMANDS, "derive", unpack)
    assert main(["derive", "post-ln"]) == 3
    monkeypatch.setitem(cli.COMMANDS, "derive", lambda args: 1 / np.zeros(1)[0].item())
    assert main(["derive", "post-ln"]) == 3                          # ZeroDivisionError
    assert "internal error (ZeroDivisionError)" in _err(capsys)

    def refused(args):
        raise BadInput("--layers must be >= 1, got 0")
    monkeypatch.setitem(cli.COMMANDS, "derive", refused)
    assert main(["derive", "post-ln"]) == 2                          # marked bad input
    assert _err(capsys) == "symdyn: error: --layers must be >= 1, got 0"


def test_bad_input_is_still_a_value_error_for_api_users():
    assert issubclass(BadInput, ValueError)
    with pytest.raises(ValueError, match="beta"):
        sd.simulate("post-ln", sd.init.sphere(4, 3, seed=0), beta=-1.0, t=[0.0, 1.0])
    with pytest.raises(BadInput):
        sd.init.sphere(1, 3, seed=0)


def test_seeds_of_a_billion_are_refused_before_any_start_is_drawn(monkeypatch, capsys):
    from symdyn.particles import init
    drawn = []
    sphere = init.sphere

    def counted(*a, **k):
        drawn.append(1)
        if len(drawn) > 1000:                  # a hang guard for the old behaviour
            raise RuntimeError("drew starts one seed at a time")
        return sphere(*a, **k)

    monkeypatch.setattr(init, "sphere", counted)
    assert main(["simulate", "post-ln", "--seeds", "1000000000"]) == 2
    err = _err(capsys)
    assert "--seeds" in err and "GiB" in err and drawn == []
    assert main(["simulate", "post-ln", "--n", "1000000000"]) == 2   # the oracle: --n
    assert "GiB" in _err(capsys)
    assert main(["simulate", "post-ln", "--seeds", "3", "--t-max", "1", "--points", "2"]) == 0
    assert len(drawn) == 3                                            # control: it runs


def test_a_failed_command_leaves_no_folder_it_created(tmp_path, capsys, monkeypatch):
    out = tmp_path / "new" / "figures"
    assert main(["figures", "--out", str(out), "--schemes", "=r"]) == 2
    assert "--schemes" in _err(capsys)
    assert not (tmp_path / "new").exists()
    out = tmp_path / "pd"
    assert main(["phase-diagram", "--out", str(out), "--schemes", "nonsense"]) == 2
    assert not out.exists()
    # a bug after the folder was made: exit 3, the folder removed too
    monkeypatch.setitem(cli.COMMANDS, "figures", lambda args: [][1])
    assert main(["figures", "--out", str(out)]) == 3
    assert not out.exists()
    # controls: a folder that was there stays; one the command wrote into stays
    monkeypatch.undo()
    out.mkdir()
    assert main(["figures", "--out", str(out), "--schemes", "=r"]) == 2
    assert out.is_dir()
    other = tmp_path / "written"

    def writes_then_fails(args):
        (other / "table.csv").write_text("kept")
        raise RuntimeError("after the table")
    monkeypatch.setitem(cli.COMMANDS, "figures", writes_then_fails)
    assert main(["figures", "--out", str(other)]) == 3
    assert (other / "table.csv").read_text() == "kept"
