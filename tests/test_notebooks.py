"""Every notebook executes (so none can rot); each should take under a minute."""

import time
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

NOTEBOOKS = sorted((Path(__file__).resolve().parents[1] / "notebooks").glob("*.ipynb"))


def test_there_are_notebooks():
    assert len(NOTEBOOKS) >= 5


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_runs(path):
    book = nbformat.read(path, as_version=4)
    assert all(not c.get("outputs") for c in book.cells if c.cell_type == "code"), \
        "store notebooks without outputs"
    t0 = time.perf_counter()
    NotebookClient(book, timeout=120, kernel_name="python3",
                   resources={"metadata": {"path": str(path.parent)}}).execute()
    assert time.perf_counter() - t0 < 120
    outputs = [o for c in book.cells if c.cell_type == "code" for o in c.get("outputs", [])]
    assert not [o for o in outputs if o.get("output_type") == "error"]
    images = [o for o in outputs if "image/png" in o.get("data", {})]
    assert images, "every notebook shows at least one plot inline"
