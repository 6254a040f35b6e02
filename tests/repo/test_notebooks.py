"""Every notebook executes (so none can rot). How long each takes is measured
in ``benchmarks/notebooks.py``, never here: the cell timeout is a hang guard."""

from pathlib import Path
from queue import Empty
from time import monotonic

import nbformat
import pytest
from jupyter_client.asynchronous.client import AsyncKernelClient
from jupyter_client.channels import AsyncZMQSocketChannel
from jupyter_client.manager import AsyncKernelManager
from nbclient import NotebookClient
from traitlets import Type

NOTEBOOKS = sorted((Path(__file__).resolve().parents[2] / "notebooks").glob("*.ipynb"))
#: Seconds a cell may run before nbclient stops it: a hang guard, not a speed
#: check (a whole notebook takes under 2 minutes on 2 cores).
CELL_TIMEOUT = 600
#: Seconds of one wait for a kernel message (see :class:`SlicedChannel`).
SLICE = 1.0


class SlicedChannel(AsyncZMQSocketChannel):
    """A channel that waits for a message in slices of :data:`SLICE` seconds.

    pyzmq's asyncio poller can miss the wake-up of a socket's edge-triggered
    descriptor. A poll that times out looks once more (``poll(0)``) and finds
    the message, so without slices a missed wake-up held the client until the
    whole cell timeout: a kernel idle, its reply sent, the client idle, then
    the notebook passed about 600 s later. This was seen in clean-clone runs:
    cells 1-3 of ngpt_alpha_schedule in the kernel's history, and the kernel
    answering a second client at once.
    """

    async def get_msg(self, timeout=None):
        deadline = None if timeout is None else monotonic() + timeout
        while True:
            left = SLICE if deadline is None else max(0.0, min(SLICE, deadline - monotonic()))
            try:
                return await super().get_msg(timeout=left)
            except Empty:
                if deadline is not None and monotonic() >= deadline:
                    raise


class SlicedClient(AsyncKernelClient):
    shell_channel_class = Type(SlicedChannel)
    iopub_channel_class = Type(SlicedChannel)


def test_there_are_notebooks():
    assert len(NOTEBOOKS) >= 5


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_runs(path):
    book = nbformat.read(path, as_version=4)
    assert all(not c.get("outputs") for c in book.cells if c.cell_type == "code"), \
        "store notebooks without outputs"
    km = AsyncKernelManager(kernel_name="python3")
    km.client_factory = SlicedClient
    NotebookClient(book, km=km, timeout=CELL_TIMEOUT,
                   resources={"metadata": {"path": str(path.parent)}}).execute()
    outputs = [o for c in book.cells if c.cell_type == "code" for o in c.get("outputs", [])]
    assert not [o for o in outputs if o.get("output_type") == "error"]
    images = [o for o in outputs if "image/png" in o.get("data", {})]
    assert images, "every notebook shows at least one plot inline"


def test_a_sliced_wait_still_times_out(monkeypatch):
    """The slices keep the timeout: a channel with nothing to read asks for
    2.5 s as slices of 1, 1 and 0.5 s, then raises ``Empty`` (not after one
    slice, and not never). Control: with no timeout it keeps waiting. (A fake
    clock that each empty slice advances: nothing here reads the real time.)"""
    import asyncio
    import sys

    now, asked = [0.0], []

    async def empty(self, timeout=None):        # no kernel: every slice is empty
        asked.append(timeout)
        now[0] += timeout
        if len(asked) > 10:
            raise RuntimeError("still waiting")
        raise Empty

    monkeypatch.setattr(AsyncZMQSocketChannel, "get_msg", empty)
    monkeypatch.setattr(sys.modules[__name__], "monotonic", lambda: now[0])
    channel = SlicedChannel.__new__(SlicedChannel)
    with pytest.raises(Empty):
        asyncio.run(channel.get_msg(timeout=2.5))
    assert asked == [1.0, 1.0, 0.5]
    asked.clear()
    with pytest.raises(RuntimeError, match="still waiting"):
        asyncio.run(channel.get_msg())
    assert asked == [SLICE] * 11
