"""LayerTrace: the geometry against brute-force pair loops, padded batches
against each text alone (the attention mask), skip_first, bands over the
corpus, the per-layer table, and the dequantization cache."""

from __future__ import annotations

import itertools
import json
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).parents[1]))
from trained_helpers import MINILM, SMOL, model  # noqa: E402

from symdyn.trained.trace import entropy, geometry  # noqa: E402


def test_geometry_against_pair_loops():
    x = np.random.default_rng(3).standard_normal((9, 5)) + 0.3
    pairs = [(x[i] @ x[j]) / np.linalg.norm(x[i]) / np.linalg.norm(x[j])
             for i, j in itertools.combinations(range(9), 2)]
    cos, norm, mn = geometry(x)
    assert cos == pytest.approx(np.mean(pairs), rel=1e-12)
    assert mn == pytest.approx(min(pairs), rel=1e-12)
    assert norm == pytest.approx(np.mean([np.linalg.norm(r) for r in x]), rel=1e-12)
    pairs_ij = list(itertools.combinations(range(9), 2))
    sub = [c for (i, j), c in zip(pairs_ij, pairs, strict=True) if i and j]
    assert geometry(x, skip_first=True)[0] == pytest.approx(np.mean(sub), rel=1e-12)
    # negative control: the first token changes the result
    assert abs(geometry(x, skip_first=True)[0] - cos) > 1e-6
    with pytest.raises(ValueError, match="at least 2 tokens"):
        geometry(x[:2], skip_first=True)


def test_entropy_limits():
    n = 6
    uniform = np.full((1, n, n), 1 / n)
    assert entropy(uniform)[0] == pytest.approx(np.log(n), rel=1e-12)
    causal = np.tril(np.ones((n, n)))
    causal /= causal.sum(1, keepdims=True)
    assert entropy(causal[None])[0] == pytest.approx(np.mean(np.log(np.arange(1, n + 1))))
    assert entropy(np.eye(n)[None])[0] == 0.0


@pytest.mark.parametrize("name", [MINILM, SMOL])
def test_a_padded_batch_equals_each_text_alone(name):
    m = model(name)
    texts = ["Call me Ishmael.", "It was the best of times, it was the worst of times."]
    batch = m.trace(text=texts)
    for b, t in enumerate(texts):
        one = m.trace(text=t)
        assert batch.tokens[b] == one.tokens
        for f in ("cosine", "norm", "min_cosine", "attn_cosine", "attn_norm", "entropy"):
            np.testing.assert_allclose(getattr(batch, f)[b], getattr(one, f), rtol=2e-5,
                                       atol=2e-6, err_msg=f)


def test_negative_control_bert_without_its_mask_differs():
    m = model(MINILM)
    texts = ["Call me Ishmael.", "It was the best of times, it was the worst of times."]
    ids, lengths = m.batch([m.encode(t) for t in texts])
    masked = m.forward(ids, lengths)[0][-1][0, :lengths[0]]
    unmasked = m.forward(ids, np.full_like(lengths, ids.shape[1]))[0][-1][0, :lengths[0]]
    assert np.abs(masked - unmasked).max() > 1e-2


def test_skip_first_leaves_out_smollm2s_massive_first_token():
    s = model(SMOL)
    t = s.trace(text="Call me Ishmael. It is a way I have of driving off the spleen.")
    u = s.trace(text="Call me Ishmael. It is a way I have of driving off the spleen.",
                skip_first=True)
    x = s.hidden_states(s.encode("Call me Ishmael. It is a way I have of driving off the spleen."))
    r = np.linalg.norm(x, axis=-1)
    assert r[-2, 0] > 10 * np.median(r[-2, 1:])               # the massive activation
    assert u.norm[-2] == pytest.approx(r[-2, 1:].mean(), rel=1e-5)
    n = r.shape[1]
    assert t.norm[-2] == pytest.approx((r[-2, 0] + (n - 1) * u.norm[-2]) / n, rel=1e-5)
    assert t.norm[-2] > 1.5 * u.norm[-2]


def test_corpus_bands_and_table():
    import symdyn.trained as tr
    m = model(MINILM)
    t = m.trace(text=list(tr.SENTENCES))
    assert t.cosine.shape == (len(tr.SENTENCES), 7) and t.entropy.shape[1:] == (6, 12)
    lo, med, hi = t.band("cosine")
    assert np.all(lo <= med) and np.all(med <= hi) and np.all(hi > lo)
    lines = tr.trace_table(m, "Call me Ishmael.", csv=True).splitlines()
    csv = [line for line in lines if not line.startswith("# ")]
    assert csv[0].startswith("layer,cosine,min_cosine,norm") and len(csv) == 8
    assert lines.index(csv[0]) > 0 and "# model: all-MiniLM-L6-v2" in lines   # the header kept
    one = m.trace(text="Call me Ishmael.")
    assert float(csv[-1].split(",")[1]) == pytest.approx(one.cosine[-1], rel=1e-6)
    assert "residual stream, no final norm" in tr.trace_table(m, "Call me Ishmael.")
    with pytest.raises(ValueError, match="batched"):
        one.band()


def test_cache_hit_stale_and_torn(tmp_path, monkeypatch):
    from symdyn.trained import files
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    src = tmp_path / "m.gguf"
    src.write_bytes(b"x")
    calls = []

    def make():
        calls.append(1)
        return {"k": 1}, {"a": np.arange(6, dtype=np.float32).reshape(2, 3)}

    meta, arr = files.cached_arrays(src, make)
    meta2, arr2 = files.cached_arrays(src, make)
    assert len(calls) == 1 and meta2 == {"k": 1}
    np.testing.assert_array_equal(arr2["a"], arr["a"])
    assert not list((tmp_path / "symdyn" / "dequantized").glob("*.tmp"))   # renamed, none left
    src.write_bytes(b"xy")                                  # the file changed: a new key
    files.cached_arrays(src, make)
    assert len(calls) == 2
    key = files.cache_key(src)
    data = tmp_path / "symdyn" / "dequantized" / f"{key}.f32"
    data.write_bytes(data.read_bytes()[:8])                 # a torn data file is not trusted
    files.cached_arrays(src, make)
    assert len(calls) == 3
    assert json.loads(data.with_suffix(".json").read_text())["size"] == 6
