"""A progress bar on stderr with an ETA (no dependency).

On a terminal the bar redraws one line; when stderr is not a terminal (a log
file, CI) it prints a full line at most every ``LOG_EVERY`` seconds and at
the end, so a log never holds one endless line.

Layer 3, studies.
"""

from __future__ import annotations

import sys
import time

#: Seconds between lines when stderr is not a terminal.
LOG_EVERY = 10.0


def _clock(seconds: float) -> str:
    seconds = int(round(seconds))
    h, rest = divmod(seconds, 3600)
    m, s = divmod(rest, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m:d}:{s:02d}"


def progress_bar(progress, total, label, stream=None):
    """``report(done)`` for ``progress``: ``False`` (silent), ``True`` (a bar on
    stderr) or a callable ``progress(done, total)``. ``report(None)`` ends it.

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
        return lambda done: None if done is None else progress(done, total)
    if not progress:
        return lambda done: None
    stream = sys.stderr if stream is None else stream
    tty = bool(getattr(stream, "isatty", lambda: False)())
    start = time.perf_counter()
    state = {"last": None, "printed": -LOG_EVERY}

    def report(done):
        if done is None:
            if state["last"] is not None and tty:
                stream.write("\n")
                stream.flush()
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
        line = (f"{label} [{'#' * filled}{'.' * (width - filled)}] {done}/{total} tasks  "
                f"elapsed {_clock(elapsed)}  {eta}")
        state["last"] = done
        if tty:
            stream.write("\r" + line)
        elif done >= total or elapsed - state["printed"] >= LOG_EVERY:
            stream.write(line + "\n")
            state["printed"] = elapsed
        stream.flush()

    return report
