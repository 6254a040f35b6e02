"""Loading and tracing a trained model allocates no copy of its weights (issue 34 item 4).

Measured in a fresh subprocess with tracemalloc (numpy reports its buffers to
it; the memory-mapped weights are file pages, not allocations): the peak of
``load`` plus a trace of four corpus sentences, after a first load that
warms the dequantization cache (so the number does not depend on the cache).
Allocated bytes are machine-independent: the bound is twice a budget of
40 MB (one layer's prepared matrices and activations, the tokenizer's
tables), far below one float32 copy of SmolLM2's weights (540 MB).
Control: the same run that then copies every block's matrices into memory,
as the loader did before, exceeds five times the bound. Peak resident memory
of the report itself is measured by ``benchmarks/memory.py``.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parents[1]))
from trained_helpers import MINILM, SMOL, need_model  # noqa: E402

BUDGET = 40e6

CODE = """
import gc, sys, tracemalloc
import numpy as np
import symdyn.trained as tr
from symdyn.trained import SENTENCES
tr.load(sys.argv[1])                      # warms the cache; released before measuring
gc.collect()
tracemalloc.start()
m = tr.load(sys.argv[1])
t = m.trace(text=list(SENTENCES[:4]), skip_first=True)
plain = tracemalloc.get_traced_memory()[1]
copies = [np.array(b[k]) for b in m.blocks for k in b]     # the control: weights in memory
print(plain, tracemalloc.get_traced_memory()[1])
"""


@pytest.mark.parametrize("name", [MINILM, SMOL])
def test_load_and_trace_allocate_no_copy_of_the_weights(name):
    need_model(name)
    out = subprocess.run([sys.executable, "-c", CODE, name], capture_output=True, text=True,
                         timeout=600)
    assert out.returncode == 0, out.stderr
    plain, copied = map(int, out.stdout.split())
    assert plain < 2 * BUDGET, plain
    if name == SMOL:                    # MiniLM's weights (90 MB) are too small to tell
        assert copied > 5 * 2 * BUDGET, copied
