"""Every notebook executes (so none can rot). How long each takes is measured
in ``benchmarks/notebooks.py``, never here: the cell timeout is a hang guard."""

from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

NOTEBOOKS = sorted((Path(__file__).resolve().parents[2] / "notebooks").glob("*.ipynb"))
#: Seconds a cell may run before nbclient stops it: a hang guard, not a speed
#: check (a whole notebook takes under 2 minutes on 2 cores).
CELL_TIMEOUT = 600


def test_there_are_notebooks():
    assert len(NOTEBOOKS) >= 5


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_runs(path):
    book = nbformat.read(path, as_version=4)
    assert all(not c.get("outputs") for c in book.cells if c.cell_type == "code"), \
        "store notebooks without outputs"
    NotebookClient(book, timeout=CELL_TIMEOUT, kernel_name="python3",
                   resources={"metadata": {"path": str(path.parent)}}).execute()
    outputs = [o for c in book.cells if c.cell_type == "code" for o in c.get("outputs", [])]
    assert not [o for o in outputs if o.get("output_type") == "error"]
    images = [o for o in outputs if "image/png" in o.get("data", {})]
    assert images, "every notebook shows at least one plot inline"
