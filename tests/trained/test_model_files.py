"""A model's files are checked as API arguments are (issue 46 items 4, 5).

``config.json`` is a JSON object whose sizes are integers in range, whose
heads divide the width and whose ``layer_norm_eps`` is a finite number > 0;
a ``.gguf`` or a weights file is opened only when it is a regular file (a
FIFO is refused, unopened: it would block). Oracle: the API's own refusal of
the same value (``load(folder, eps=-1)``), and exit status 2 with a message
naming the key on the command line. Control: the honest folder loads and
traces.
"""

from __future__ import annotations

import json
import os

import pytest
from test_load_safety import hang_guard
from test_trained_tiny import bert_folder, bert_weights
from trained_helpers import need_extra

from symdyn.cli import main


@pytest.fixture
def folder(tmp_path):
    need_extra()
    return bert_folder(tmp_path / "tiny", bert_weights())


def _config(folder, **changes):
    config = json.loads((folder / "config.json").read_text())
    config.update(changes)
    (folder / "config.json").write_text(json.dumps(config))


def _cli(capsys, folder):
    status = main(["trace", str(folder), "--text", "one two three four"])
    return status, capsys.readouterr().err


def test_control_the_honest_folder_loads_and_traces(folder):
    import symdyn.trained as tr
    trace = tr.load(folder).trace(token_ids=[1, 2, 3, 4])
    assert trace.cosine.shape == (3,) and trace.provenance.weights == str(folder)


def test_a_negative_layer_norm_eps_is_refused_as_the_api_refuses_it(folder, capsys):
    import symdyn.trained as tr
    with pytest.raises(ValueError, match="eps must be"):          # the oracle: the API
        tr.load(folder, eps=-1)
    _config(folder, layer_norm_eps=-1)
    with pytest.raises(ValueError, match=r"config.json: layer_norm_eps must be a finite "
                                         r"number > 0, got -1"):
        tr.load(folder)
    status, err = _cli(capsys, folder)
    assert status == 2 and "layer_norm_eps must be a finite number > 0" in err


@pytest.mark.parametrize(("changes", "said"), [
    ({"num_attention_heads": 0}, "num_attention_heads must be an integer >= 1, got 0"),
    ({"num_attention_heads": 3}, "num_attention_heads must divide hidden_size (16), got 3"),
    ({"hidden_size": "16"}, "hidden_size must be an integer >= 1, got '16'"),
    ({"num_hidden_layers": True}, "num_hidden_layers must be an integer >= 1, got True"),
    ({"layer_norm_eps": float("nan")}, "layer_norm_eps must be a finite number > 0"),
])
def test_bad_config_values_exit_2_naming_the_key(folder, capsys, changes, said):
    _config(folder, **changes)
    status, err = _cli(capsys, folder)
    assert status == 2 and said in err and "config.json" in err, err


def test_a_config_that_is_a_json_list_or_not_json_exits_2(folder, capsys):
    (folder / "config.json").write_text("[1, 2]")
    status, err = _cli(capsys, folder)
    assert status == 2 and "config.json: expected a JSON object, got a list" in err, err
    (folder / "config.json").write_text("[" * 100_000)
    status, err = _cli(capsys, folder)
    assert status == 2 and "config.json" in err, err


def test_a_fifo_as_a_model_file_is_refused_unopened(tmp_path, capsys):
    need_extra()
    import symdyn.trained as tr
    evil = tmp_path / "evil.gguf"
    os.mkfifo(evil)
    with hang_guard(evil):
        with pytest.raises(ValueError, match="evil.gguf.*FIFO"):
            tr.load(evil)
        assert main(["trace", str(evil), "--text", "one two three"]) == 2
        assert "FIFO" in capsys.readouterr().err
    folder = bert_folder(tmp_path / "tiny", bert_weights())
    (folder / "model.safetensors").unlink()
    os.mkfifo(folder / "model.safetensors")
    with hang_guard(folder / "model.safetensors"):
        with pytest.raises(ValueError, match="model.safetensors"):
            tr.load(folder)
    (folder / "config.json").unlink()                 # a FIFO config.json: not a config
    os.mkfifo(folder / "config.json")
    with hang_guard(folder / "config.json"):
        with pytest.raises(ValueError, match="config.json"):
            tr.load(folder)
