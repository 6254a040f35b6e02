"""symdyn.trained: every option and input answered rightly (issue 34 item 5), the repr.

Options are checked against their documented choices before anything is
read (a ValueError naming the option and the allowed values; booleans must be
bools): each bad value has a good value beside it as the control, and the
good values must change the numbers (an option that is accepted but ignored
fails the control). Empty inputs are ValueErrors naming the argument; on the
command line, one line naming ``--text`` and exit status 2, with a text that
works as the control.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).parents[1]))
from trained_helpers import MINILM, SMOL, model, need_model  # noqa: E402

TEXT = "Call me Ishmael."


@pytest.mark.parametrize("kw, match", [
    ({"norm": "banana"}, r"norm must be one of 'layer', 'projection', got 'banana'"),
    ({"norm": "rms"}, r"norm must be one of 'layer', 'projection', got 'rms'"),
    ({"mlp": "no"}, r"mlp must be True or False, got 'no'"),
    ({"mlp": 0}, r"mlp must be True or False, got 0"),
    ({"eps": -1e-12}, r"eps must be None .* a finite number > 0"),
    ({"eps": True}, r"eps must be None .* a finite number > 0"),
    ({"theta": 1e4}, r"theta: not an option of a Bert model; its options are mlp, norm, eps"),
])
def test_bert_options_refused(kw, match):
    need_model(MINILM)
    import symdyn.trained as tr
    with pytest.raises(ValueError, match=match):
        tr.load(MINILM, **kw)


def test_bert_options_accepted_change_the_numbers():
    # control of the refusals: the documented values load, and each ablation is used
    import symdyn.trained as tr
    base = model(MINILM).trace(text=TEXT).cosine
    same = tr.load(MINILM, mlp=True, norm="layer", eps=None).trace(text=TEXT).cosine
    np.testing.assert_allclose(same, base, rtol=1e-6)
    for kw in ({"mlp": False}, {"norm": "projection"}, {"mlp": np.False_}, {"eps": 0.1}):
        other = tr.load(MINILM, **kw).trace(text=TEXT).cosine
        assert np.abs(other - base).max() > 1e-3, kw


@pytest.mark.parametrize("kw, match", [
    ({"norm": "layer"}, r"norm must be one of 'rms', 'projection', got 'layer'"),
    ({"mlp": "False"}, r"mlp must be True or False"),
    ({"permuted": 1}, r"permuted must be True or False, got 1"),
    ({"theta": 0}, r"theta must be None .* > 0, got 0"),
    ({"theta": float("nan")}, r"theta must be None .* > 0"),
    ({"kv_map": "abc"}, r"kv_map must be None or a sequence of integers"),
    ({"kv_map": [0] * 8}, r"kv_map must be None or 9 integers in \[0, 2\]"),
    ({"kv_map": [3] * 9}, r"kv_map must be None or 9 integers in \[0, 2\]"),
    ({"eps": 1e-5}, r"eps: not an option of a Llama model; its options are mlp, norm, "
                    r"permuted, theta, kv_map"),
])
def test_llama_options_refused(kw, match):
    need_model(SMOL)
    import symdyn.trained as tr
    with pytest.raises(ValueError, match=match):
        tr.load(SMOL, **kw)


def test_llama_options_accepted_change_the_numbers():
    s = model(SMOL)
    ids = s.encode(TEXT)
    base = s.trace(token_ids=ids).norm
    np.testing.assert_allclose(s.variant(norm="rms", mlp=True).trace(token_ids=ids).norm,
                               base, rtol=1e-6)
    for kw in ({"mlp": False}, {"norm": "projection"}, {"kv_map": [0] * 9}, {"theta": 1e3}):
        assert np.abs(s.variant(**kw).trace(token_ids=ids).norm - base).max() > \
            1e-3 * base.max(), kw


@pytest.mark.parametrize("name", [MINILM, SMOL])
def test_empty_inputs_are_value_errors_naming_the_argument(name):
    m = model(name)
    for kw, match in (({"token_ids": []}, "token_ids must be a sequence of token ids or a "
                                          "non-empty list of them, got"),
                      ({"text": []}, "text must be a str or a non-empty list of them, got"),
                      ({"text": ""}, "text is empty"), ({"text": "  \n"}, "text is empty"),
                      ({"text": [TEXT, ""]}, "text is empty"),
                      ({"token_ids": [[1, 2], []]}, "token_ids is empty"),
                      ({"token_ids": [7]}, "token_ids gives 1 token; a trace needs at least 2"),
                      ({"token_ids": [7, 8], "skip_first": True},
                       "gives 2 tokens; a trace needs at least 3 with skip_first"),
                      ({"token_ids": [7, 8], "skip_first": "yes"},
                       "skip_first must be True or False")):
        with pytest.raises(ValueError, match=match):
            m.trace(**kw)
    # controls: the shortest inputs that can be traced
    assert m.trace(token_ids=[7, 8]).cosine.shape == (m.L + 1,)
    assert m.trace(token_ids=[[7, 8], [7, 8, 9]], skip_first=False).cosine.shape == (2, m.L + 1)
    assert m.trace(token_ids=[7, 8, 9], skip_first=True).tokens == 3


@pytest.mark.parametrize("name", [MINILM, SMOL])
def test_cli_empty_text_exits_2_naming_the_flag(name, capsys):
    need_model(name)
    from symdyn.cli import main
    for text in ("", "   "):
        assert main(["trace", name, "--text", text]) == 2
        err = capsys.readouterr().err.strip()
        assert err == "symdyn: error: --text is empty: give the text whose tokens are traced"
    if name == SMOL:                # one token ("Hi"); MiniLM adds [CLS] and [SEP]
        assert main(["trace", name, "--text", "Hi", "--skip-first"]) == 2
        err = capsys.readouterr().err.strip()
        assert err == ("symdyn: error: --text gives 1 token; a trace needs at least 3 with "
                       "--skip-first")
    # control: a text with enough tokens exits 0 with the table
    assert main(["trace", name, "--text", TEXT]) == 0
    out = capsys.readouterr()
    table = [line for line in out.out.splitlines() if not line.startswith("# ")]
    assert out.err == "" and table[0].split()[:2] == ["layer", "cosine"]


def test_cli_unknown_model_names_the_positional(capsys):
    from symdyn.cli import main
    assert main(["trace", "gpt-5", "--text", TEXT]) == 2
    err = capsys.readouterr().err
    assert err.startswith("symdyn: error: MODEL='gpt-5' is neither a known model")
    assert "name_or_path" not in err


def test_repr_says_name_layers_dims_and_ablations():
    from symdyn.trained import fits
    m, s = model(MINILM), model(SMOL)
    assert repr(m) == ("Bert('all-MiniLM-L6-v2', Post-LN, 6 layers, d=384, 12 heads, "
                       "vocabulary 30522, context 512; ablations: none)")
    assert repr(s).startswith("Llama('SmolLM2-135M-Instruct', Pre-RMSNorm, 30 layers, d=576, "
                              "9 heads (3 key/value),")
    assert repr(s.variant(mlp=False, norm="projection")).endswith(
        "ablations: no MLP, projection norm)")
    assert repr(fits.randomized(m, 3)).endswith("ablations: random weights (seed 3))")
    assert repr(fits.randomized(m, 3).variant(mlp=False)).endswith(
        "ablations: no MLP, random weights (seed 3))")
    assert str(s.variant(permuted=False)).endswith("ablations: Q/K rows left in llama.cpp's order)")
    # control: the default repr this replaces
    assert " object at 0x" in object.__repr__(m) and " object at 0x" not in repr(m)


def test_safetensors_read_by_map_equal_the_official_reader(tmp_path):
    # Oracle: safetensors.numpy.load_file. Controls: a truncated file and a header that
    # is not JSON are refused with the file named, not read as garbage.
    pytest.importorskip("safetensors", reason="the [trained] extra is not installed")
    from safetensors.numpy import load_file, save_file

    from symdyn.trained.files import safetensors_arrays
    rng = np.random.default_rng(0)
    want = {"a": rng.standard_normal((3, 5)).astype(np.float32),
            "b": rng.standard_normal(7).astype(np.float16),
            "c": np.arange(6, dtype=np.int64).reshape(2, 3), "d": rng.standard_normal((2, 2))}
    f = tmp_path / "m.safetensors"
    save_file(want, str(f))
    got = safetensors_arrays(f)
    ref = load_file(str(f))
    assert sorted(got) == sorted(ref)
    for k, v in ref.items():
        assert got[k].dtype == v.dtype and got[k].shape == v.shape
        np.testing.assert_array_equal(got[k], v)
    cut = tmp_path / "cut.safetensors"
    cut.write_bytes(f.read_bytes()[:-8])
    with pytest.raises(ValueError, match=r"cut.safetensors: tensor .* cannot be read"):
        safetensors_arrays(cut)
    bad = tmp_path / "bad.safetensors"
    bad.write_bytes((20).to_bytes(8, "little") + b"{not json" + b" " * 30)
    with pytest.raises(ValueError, match="not a safetensors file"):
        safetensors_arrays(bad)
