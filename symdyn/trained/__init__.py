"""Layer 3, trained: trained transformers against the theory. Loads BERT-style
encoders (HF folder: ``config.json`` + ``model.safetensors``) and Llama-style
decoders (GGUF, dequantized) into numpy forward passes, and traces each
layer's token geometry (:class:`~symdyn.trained.trace.LayerTrace`). Imports
only its own modules (and numpy/scipy); the optional packages (``safetensors``,
``gguf``, ``tokenizers``: ``pip install 'symdyn[trained]'``) are imported on
use, so importing this package never fails without them.

>>> import symdyn.trained as tr
>>> sorted(tr.KNOWN)
['SmolLM2-135M-Instruct', 'all-MiniLM-L6-v2']

Layer 3, trained.
"""

from __future__ import annotations

from .corpus import SENTENCES
from .files import EXTRA, KNOWN
from .trace import LayerTrace

__all__ = ["EXTRA", "KNOWN", "LayerTrace", "SENTENCES", "load", "trace_table"]


def load(name_or_path, **kw):
    """A model by name (``"all-MiniLM-L6-v2"``, ``"SmolLM2-135M-Instruct"``) or path.

    A folder loads as a BERT encoder (:class:`~symdyn.trained.bert.Bert`), a
    ``.gguf`` file as a Llama decoder (:class:`~symdyn.trained.llama.Llama`);
    ``kw`` go to the model (ablations: ``mlp=False``, ``norm="projection"``).
    """
    from .files import locate
    kind, path = locate(name_or_path)
    name = str(name_or_path) if str(name_or_path) in KNOWN else None
    if kind == "bert":
        from .bert import Bert
        return Bert.from_folder(path, name=name, **kw)
    from .llama import Llama
    return Llama.from_gguf(path, name=name, **kw)


def trace_table(model, text, csv: bool = False, skip_first: bool = False) -> str:
    """The per-layer table of ``text`` for ``symdyn trace MODEL --text ... [--csv]``."""
    m = load(model) if isinstance(model, str) else model
    return m.trace(text=text, skip_first=skip_first).table(csv=csv)
