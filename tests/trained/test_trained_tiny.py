"""Any checkpoint in the two layouts loads (issue 26), not only the two shipped models.

A tiny random BERT folder (config.json + model.safetensors, 2 layers, d = 16,
2 heads) and a tiny Llama GGUF (F32, 2 layers, d = 16, GQA with 4 query and
2 key/value heads, RoPE base 500, Q and K rows in llama.cpp's converter layout)
are written here, loaded with ``sd.trained.load(path)`` and run on token ids.
Oracle: a forward pass written below from the formulas, in float64 with loops
over tokens and heads, that calls nothing of symdyn; the Llama one applies
llama.cpp's interleaved RoPE (pairs (2i, 2i+1)) to the file's own permuted
rows, so it never undoes the permutation the loader undoes. The models run in
float32: agreement to 1e-5 of the states' scale. Controls: the oracle with
the Hugging Face RoPE on the permuted rows (what a loader that forgets to
unpermute computes), with another RMSNorm eps, with the default RoPE base,
and for BERT with the scale 1/sqrt(d) or another LayerNorm eps, each misses
by far more than the tolerance.
"""

from __future__ import annotations

import json
import sys
from math import erf
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parents[1]))
from trained_helpers import need_extra  # noqa: E402

D, FF, V, L = 16, 32, 12, 2
IDS = [3, 1, 4, 1, 5, 9, 2, 6]
TOL = 1e-5


def _close(got, want):
    return np.abs(got - want).max() <= TOL * np.abs(want).max()


def _far(got, want):
    return np.abs(got - want).max() > 100 * TOL * np.abs(want).max()


def _softmax(s):
    e = np.exp(s - s.max())
    return e / e.sum()


# --- BERT -----------------------------------------------------------------------------------

BERT_HEADS, BERT_EPS = 2, 1e-12


def bert_weights(seed=0):
    rng = np.random.default_rng(seed)

    def r(*shape, scale=0.3):
        return (scale * rng.standard_normal(shape)).astype(np.float32)

    w = {"embeddings.word_embeddings.weight": r(V, D, scale=1.0),
         "embeddings.position_embeddings.weight": r(16, D),
         "embeddings.token_type_embeddings.weight": r(2, D),
         "embeddings.LayerNorm.weight": 1 + r(D, scale=0.1),
         "embeddings.LayerNorm.bias": r(D, scale=0.1)}
    for i in range(L):
        p = f"encoder.layer.{i}."
        for n in ("query", "key", "value"):
            w[p + f"attention.self.{n}.weight"], w[p + f"attention.self.{n}.bias"] = r(D, D), r(D)
        w[p + "attention.output.dense.weight"], w[p + "attention.output.dense.bias"] = (r(D, D),
                                                                                         r(D))
        w[p + "intermediate.dense.weight"], w[p + "intermediate.dense.bias"] = r(FF, D), r(FF)
        w[p + "output.dense.weight"], w[p + "output.dense.bias"] = r(D, FF), r(D)
        for ln in ("attention.output.LayerNorm", "output.LayerNorm"):
            w[p + ln + ".weight"], w[p + ln + ".bias"] = 1 + r(D, scale=0.1), r(D, scale=0.1)
    return w


def bert_folder(path, w):
    from safetensors.numpy import save_file
    path.mkdir()
    (path / "config.json").write_text(json.dumps({
        "model_type": "bert", "hidden_size": D, "num_attention_heads": BERT_HEADS,
        "num_hidden_layers": L, "intermediate_size": FF, "vocab_size": V,
        "max_position_embeddings": 16, "type_vocab_size": 2, "layer_norm_eps": BERT_EPS,
        "hidden_act": "gelu", "pad_token_id": 0}))
    save_file({"bert." + k: v for k, v in w.items()}, str(path / "model.safetensors"))
    return path


def bert_reference(w, ids, eps=BERT_EPS, scale=None):
    """Post-LN BERT, token by token and head by head, float64."""
    w = {k: v.astype(np.float64) for k, v in w.items()}
    dh = D // BERT_HEADS
    scale = dh ** -0.5 if scale is None else scale

    def ln(x, name):
        mu = x.mean()
        var = ((x - mu) ** 2).mean()
        return (x - mu) / np.sqrt(var + eps) * w[name + ".weight"] + w[name + ".bias"]

    def lin(name, x):
        return w[name + ".weight"] @ x + w[name + ".bias"]

    e = "embeddings."
    x = [ln(w[e + "word_embeddings.weight"][t] + w[e + "position_embeddings.weight"][i]
            + w[e + "token_type_embeddings.weight"][0], e + "LayerNorm") for i, t in enumerate(ids)]
    states = [np.array(x)]
    for layer in range(L):
        p = f"encoder.layer.{layer}."
        q, k, v = ([lin(p + f"attention.self.{n}", xi) for xi in x] for n in ("query", "key",
                                                                               "value"))
        h = []
        for i in range(len(x)):
            ctx = np.zeros(D)
            for head in range(BERT_HEADS):
                s = slice(head * dh, (head + 1) * dh)
                a = _softmax(np.array([q[i][s] @ k[j][s] * scale for j in range(len(x))]))
                ctx[s] = sum(a[j] * v[j][s] for j in range(len(x)))
            h.append(ln(x[i] + lin(p + "attention.output.dense", ctx),
                        p + "attention.output.LayerNorm"))
        x = []
        for hi in h:
            u = lin(p + "intermediate.dense", hi)
            g = np.array([0.5 * z * (1 + erf(z / np.sqrt(2))) for z in u])
            x.append(ln(hi + lin(p + "output.dense", g), p + "output.LayerNorm"))
        states.append(np.array(x))
    return np.array(states)


def test_tiny_bert_matches_the_reference(tmp_path):
    need_extra()
    import symdyn as sd
    w = bert_weights()
    model = sd.trained.load(bert_folder(tmp_path / "tiny-bert", w))
    assert (model.L, model.d, model.heads, model.scheme, model.scheme_display) == (
        L, D, BERT_HEADS, "post-ln", "Post-LN")
    got = model.hidden_states(IDS)
    want = bert_reference(w, IDS)
    assert got.shape == (L + 1, len(IDS), D)
    assert _close(got, want)
    tr = model.trace(token_ids=IDS)
    cos = [np.mean([a @ b / np.linalg.norm(a) / np.linalg.norm(b) for i, a in enumerate(s)
                    for b in s[i + 1:]]) for s in want]
    assert np.allclose(tr.cosine, cos, atol=1e-5)
    # controls: the oracle is sensitive to what a wrong loader would get wrong
    assert _far(got, bert_reference(w, IDS, scale=D ** -0.5))
    assert _far(got, bert_reference(w, IDS, eps=1e-1))


# --- Llama GGUF -----------------------------------------------------------------------------

HEADS, KV, DH, THETA, RMS_EPS = 4, 2, 4, 500.0, 1e-5


def llama_weights(seed=1):
    """Hugging Face layout: q rows (head, dh) with RoPE pairs (i, i + dh/2)."""
    rng = np.random.default_rng(seed)

    def r(*shape, scale=0.3):
        return (scale * rng.standard_normal(shape)).astype(np.float32)

    w = {"token_embd.weight": r(V, D, scale=1.0), "output_norm.weight": 1 + r(D, scale=0.1)}
    for i in range(L):
        p = f"blk.{i}."
        w.update({p + "attn_norm.weight": 1 + r(D, scale=0.1),
                  p + "attn_q.weight": r(HEADS * DH, D),
                  p + "attn_k.weight": r(KV * DH, D), p + "attn_v.weight": r(KV * DH, D),
                  p + "attn_output.weight": r(D, HEADS * DH),
                  p + "ffn_norm.weight": 1 + r(D, scale=0.1), p + "ffn_gate.weight": r(FF, D),
                  p + "ffn_up.weight": r(FF, D), p + "ffn_down.weight": r(D, FF)})
    return w


def llama_cpp_permute(w, heads):
    """convert_hf_to_gguf.py's permute of Q (heads = n_head) and K (heads = n_head_kv)."""
    return w.reshape(heads, 2, w.shape[0] // heads // 2, *w.shape[1:]).swapaxes(1, 2).reshape(
        w.shape)


def llama_file(path, hf):
    import gguf
    w = dict(hf)
    for i in range(L):
        w[f"blk.{i}.attn_q.weight"] = llama_cpp_permute(hf[f"blk.{i}.attn_q.weight"], HEADS)
        w[f"blk.{i}.attn_k.weight"] = llama_cpp_permute(hf[f"blk.{i}.attn_k.weight"], KV)
    g = gguf.GGUFWriter(str(path), "llama")
    g.add_block_count(L)
    g.add_embedding_length(D)
    g.add_feed_forward_length(FF)
    g.add_head_count(HEADS)
    g.add_head_count_kv(KV)
    g.add_layer_norm_rms_eps(RMS_EPS)
    g.add_rope_freq_base(THETA)
    g.add_context_length(64)
    tokens = list("abcdefghij") + ["ab", "<|endoftext|>"]
    g.add_tokenizer_model("gpt2")
    g.add_token_list(tokens)
    g.add_token_merges(["a b"])
    g.add_token_types([1] * (V - 1) + [3])
    for name, a in w.items():
        g.add_tensor(name, np.ascontiguousarray(a))
    g.write_header_to_file()
    g.write_kv_data_to_file()
    g.write_tensors_to_file()
    g.close()
    return w


def _rope_interleaved(v, pos, theta):
    out = v.copy()
    for i in range(DH // 2):
        a = pos * theta ** (-2 * i / DH)
        c, s = np.cos(a), np.sin(a)
        a, b = v[2 * i], v[2 * i + 1]
        out[2 * i], out[2 * i + 1] = c * a - s * b, s * a + c * b
    return out


def _rope_halves(v, pos, theta):
    """Hugging Face's rotate-half RoPE: pairs (i, i + dh/2); right only on unpermuted rows."""
    out, h = v.copy(), DH // 2
    for i in range(h):
        a = pos * theta ** (-2 * i / DH)
        c, s = np.cos(a), np.sin(a)
        out[i], out[i + h] = c * v[i] - s * v[i + h], s * v[i] + c * v[i + h]
    return out


def llama_reference(file_w, ids, eps=RMS_EPS, theta=THETA, rope=_rope_interleaved):
    """Pre-RMSNorm Llama on the file's tensors (Q, K rows as stored), causal, float64."""
    w = {k: v.astype(np.float64) for k, v in file_w.items()}

    def rms(x, name):
        return x / np.sqrt((x * x).mean() + eps) * w[name]

    x = [w["token_embd.weight"][t] for t in ids]
    states = [np.array(x)]
    for layer in range(L):
        p = f"blk.{layer}."
        hx = [rms(xi, p + "attn_norm.weight") for xi in x]
        q = [w[p + "attn_q.weight"] @ z for z in hx]
        k = [w[p + "attn_k.weight"] @ z for z in hx]
        v = [w[p + "attn_v.weight"] @ z for z in hx]
        h = []
        for i in range(len(x)):
            ctx = np.zeros(HEADS * DH)
            for head in range(HEADS):
                g = head // (HEADS // KV)                    # GQA: the head's key/value head
                qs, ks = slice(head * DH, (head + 1) * DH), slice(g * DH, (g + 1) * DH)
                qi = rope(q[i][qs], i, theta)
                a = _softmax(np.array([qi @ rope(k[j][ks], j, theta) / np.sqrt(DH)
                                       for j in range(i + 1)]))
                ctx[qs] = sum(a[j] * v[j][ks] for j in range(i + 1))
            h.append(x[i] + w[p + "attn_output.weight"] @ ctx)
        x = []
        for hi in h:
            z = rms(hi, p + "ffn_norm.weight")
            gate, up = w[p + "ffn_gate.weight"] @ z, w[p + "ffn_up.weight"] @ z
            x.append(hi + w[p + "ffn_down.weight"] @ (gate / (1 + np.exp(-gate)) * up))
        states.append(np.array(x))
    return np.array(states)


def test_tiny_llama_gguf_matches_the_reference(tmp_path, monkeypatch):
    need_extra()
    import symdyn as sd
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    file_w = llama_file(tmp_path / "tiny-llama.gguf", llama_weights())
    model = sd.trained.load(tmp_path / "tiny-llama.gguf")
    assert (model.L, model.d, model.heads, model.kv, model.theta) == (L, D, HEADS, KV, THETA)
    got = model.hidden_states(IDS)
    want = llama_reference(file_w, IDS)
    assert got.shape == (L + 1, len(IDS), D)
    assert _close(got, want)
    tr = model.trace(token_ids=IDS)
    norms = [np.linalg.norm(s, axis=1).mean() for s in want]
    assert np.allclose(tr.norm, norms, rtol=1e-5)
    # controls: the HF RoPE on the file's permuted rows (a loader that forgets to
    # unpermute), another eps, the default RoPE base: each far off
    assert _far(got, llama_reference(file_w, IDS, rope=_rope_halves))
    assert _far(got, llama_reference(file_w, IDS, eps=1e-1))
    assert _far(got, llama_reference(file_w, IDS, theta=10000.0))
    # and the loader, told the rows are not permuted, reproduces that first mistake
    wrong = sd.trained.load(tmp_path / "tiny-llama.gguf", permuted=False).hidden_states(IDS)
    assert _close(wrong, llama_reference(file_w, IDS, rope=_rope_halves))
