"""symdyn.trained's numpy forward passes against torch CPU float32, same run.

    python benchmarks/trained.py            # numpy only, where torch is missing
    PYTHONPATH=. /tmp/witness/bin/python benchmarks/trained.py   # with torch + transformers

MiniLM on 128 tokens (BertModel), SmolLM2 on 256 tokens (LlamaModel built
from our dequantized tensors, eager attention). Both sides compute the
residual stream and every attention matrix (our trace needs them: torch runs
with output_attentions=True). Prints best-of-5 times, ratios, and where the
numpy time goes (the GEMMs alone, same shapes, against the whole pass).
"""

from __future__ import annotations

import importlib.util
import time

import numpy as np

import symdyn.trained as tr


def best(f, k=5):
    f()
    out = []
    for _ in range(k):
        t = time.perf_counter()
        f()
        out.append(time.perf_counter() - t)
    return min(out)


def gemm_floor(m, n):
    """The GEMMs of one pass alone: (n, in) @ each weight matrix (out, in) transposed."""
    ws = [b[k] for b in m.blocks for k in b if b[k].ndim == 2]
    xs = {w.shape[1]: np.ones((n, w.shape[1]), dtype=np.float32) for w in ws}

    def run():
        for w in ws:
            xs[w.shape[1]] @ w.T
    return best(run)


def torch_bert(folder):
    import torch
    from transformers import BertModel
    model = BertModel.from_pretrained(folder, attn_implementation="eager").eval()
    return lambda ids: model(input_ids=torch.tensor([ids]), output_hidden_states=True,
                             output_attentions=True)


def torch_llama(m):
    import torch
    from transformers import LlamaConfig, LlamaModel
    f = m.blocks[0]["down"].shape[1]
    cfg = LlamaConfig(vocab_size=m.vocab, hidden_size=m.d, intermediate_size=f,
                      num_hidden_layers=m.L, num_attention_heads=m.heads,
                      num_key_value_heads=m.kv, rms_norm_eps=m.eps, rope_theta=m.theta,
                      max_position_embeddings=m.context, tie_word_embeddings=True)
    cfg._attn_implementation = "eager"
    model = LlamaModel(cfg).eval()
    sd = {"embed_tokens.weight": m.emb, "norm.weight": m.final}
    names = {"n1": "input_layernorm", "n2": "post_attention_layernorm", "q": "self_attn.q_proj",
             "k": "self_attn.k_proj", "v": "self_attn.v_proj", "o": "self_attn.o_proj",
             "gate": "mlp.gate_proj", "up": "mlp.up_proj", "down": "mlp.down_proj"}
    for i, b in enumerate(m.blocks):           # the file's layout (out, in) is torch's
        sd.update({f"layers.{i}.{names[k]}.weight": b[k] for k in b})
    model.load_state_dict({k: torch.tensor(np.array(v)) for k, v in sd.items()}, strict=False)
    return lambda ids: model(input_ids=torch.tensor([ids]), output_hidden_states=True,
                             output_attentions=True)


def main():
    have_torch = all(importlib.util.find_spec(x) for x in ("torch", "transformers"))
    if have_torch:
        import torch
        torch.set_grad_enabled(False)
        torch.set_num_threads(max(1, len(__import__("os").sched_getaffinity(0))))
    rng = np.random.default_rng(0)
    from symdyn.trained.files import locate
    for name, n in (("all-MiniLM-L6-v2", 128), ("SmolLM2-135M-Instruct", 256)):
        m = tr.load(name)
        ids = rng.integers(1000, 20000, size=n).tolist()
        ours = best(lambda m=m, ids=ids: m.hidden_states(ids))
        whole = best(lambda m=m, ids=ids: m.trace(token_ids=ids))
        floor = gemm_floor(m, n)
        line = (f"{name:>22} n={n}: numpy forward {ours * 1e3:7.1f} ms (GEMMs alone "
                f"{floor * 1e3:6.1f} ms = {floor / ours:4.0%}); trace incl. statistics "
                f"{whole * 1e3:7.1f} ms")
        if have_torch:
            run = torch_bert(locate(name)[1]) if name.startswith("all") else torch_llama(m)
            t = best(lambda run=run, ids=ids: run(ids))
            line += f"; torch {t * 1e3:7.1f} ms; numpy/torch = {ours / t:4.2f}x"
        else:
            line += "; torch not installed (no ratio)"
        print(line, flush=True)


if __name__ == "__main__":
    main()
