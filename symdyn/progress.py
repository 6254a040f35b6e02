"""A one-line progress bar on stderr (no dependency)."""

from __future__ import annotations

import sys
import time


def progress_bar(progress, total, label):
    """``report(done)`` for ``progress``: ``False`` (silent), ``True`` (a bar on
    stderr) or a callable ``progress(done, total)``. ``report(None)`` ends it."""
    if callable(progress):
        return lambda done: None if done is None else progress(done, total)
    if not progress:
        return lambda done: None
    start = time.perf_counter()
    state = {"last": None}

    def report(done):
        if done is None:
            if state["last"] is not None:
                sys.stderr.write("\n")
                sys.stderr.flush()
            return
        width = 30
        filled = width * done // max(total, 1)
        elapsed = time.perf_counter() - start
        line = (f"\r{label} [{'#' * filled}{'.' * (width - filled)}] "
                f"{done}/{total} tasks  {elapsed:6.1f} s")
        state["last"] = done
        sys.stderr.write(line)
        sys.stderr.flush()

    return report
