"""A progress bar on stderr with an ETA (no dependency).

On a terminal the bar redraws one line; when stderr is not a terminal (a log
file, CI) it prints a full line at most every ``LOG_EVERY`` seconds and at
the end, so a log never holds one endless line.

Layer 0, base.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import TextIO

#: ``report(done)``: ``done`` of ``total`` finished; ``report(None)`` ends the bar.
Report = Callable[[int | None], None]

#: Seconds between lines when stderr is not a terminal.
LOG_EVERY = 10.0


def _clock(seconds: float) -> str:
    seconds = int(round(seconds))
    h, rest = divmod(seconds, 3600)
    m, s = divmod(rest, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m:d}:{s:02d}"


def progress_bar(progress: bool | Callable[[int, int], object], total: int, label: str,
                 stream: TextIO | None = None, unit: str = "tasks") -> Report:
    """``report(done)`` for ``progress``: ``False`` (silent), ``True`` (a bar on
    stderr) or a callable ``progress(done, total)``. ``report(None)`` ends it.
    ``unit`` names what ``done`` counts (``tasks``; ``permille of the area decided``).

    The ETA assumes the remaining tasks take as long as the finished ones.

    Examples
    --------
    >>> import io
    >>> out = io.StringIO()
    >>> report = progress_bar(True, 4, "sweep", stream=out)
    >>> report(2); report(4); report(None)
    >>> print(out.getvalue().splitlines()[-1])              # doctest: +ELLIPSIS
    sweep [##############################] 4/4 tasks  elapsed 0:00  done
    """
    if callable(progress):
        call = progress

        def forward(done: int | None) -> None:
            if done is not None:
                call(done, total)
        return forward
    if not progress:
        return lambda done: None
    out: TextIO = sys.stderr if stream is None else stream
    tty = bool(getattr(out, "isatty", lambda: False)())
    start = time.perf_counter()
    state: dict[str, float | None] = {"last": None, "printed": -LOG_EVERY}

    def report(done: int | None) -> None:
        if done is None:
            if state["last"] is not None and tty:
                out.write("\n")
                out.flush()
            return
        width = 30
        filled = width * done // max(total, 1)
        elapsed = time.perf_counter() - start
        if done >= total:
            eta = "done"
        elif done > 0:
            eta = f"ETA {_clock(elapsed * (total - done) / done)}"
        else:
            eta = "ETA --:--"
        line = (f"{label} [{'#' * filled}{'.' * (width - filled)}] {done}/{total} {unit}  "
                f"elapsed {_clock(elapsed)}  {eta}")
        state["last"] = done
        printed = state["printed"]
        if tty:
            out.write("\r" + line)
        elif done >= total or printed is None or elapsed - printed >= LOG_EVERY:
            out.write(line + "\n")
            state["printed"] = elapsed
        out.flush()

    return report
