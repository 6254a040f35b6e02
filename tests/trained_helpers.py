"""Shared pieces of tests/test_trained*.py: skip reasons and the loaded models (once per run)."""

from __future__ import annotations

import functools
import importlib.util

import pytest

EXTRA = "pip install 'symdyn[trained]' (make test installs it)"


def need_extra():
    for m in ("safetensors", "gguf", "tokenizers"):
        if importlib.util.find_spec(m) is None:
            pytest.skip(f"the optional extra is missing ({m}): {EXTRA}")


def need_model(name):
    need_extra()
    from symdyn.trained.files import KNOWN
    if importlib.util.find_spec(KNOWN[name][0]) is None:
        pytest.skip(f"the model wheel {KNOWN[name][2]} is not installed: {EXTRA}")


@functools.cache
def _load(name, **kw):
    import symdyn.trained as tr
    return tr.load(name, **kw)


def model(name, **kw):
    """A loaded model, shared by every test of the run (weights are read-only)."""
    need_model(name)
    return _load(name, **kw)


MINILM, SMOL = "all-MiniLM-L6-v2", "SmolLM2-135M-Instruct"
