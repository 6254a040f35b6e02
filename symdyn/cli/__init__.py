"""Layer 5, cli: the ``symdyn`` command line.

Commands: ``schemes``, ``derive SCHEME``, ``solve SCHEME``, ``simulate SCHEME``,
``table``, ``verify``, ``figures``, ``phase-diagram``, ``report``; ``--version``.
Also ``python -m symdyn``. Bare ``symdyn`` lists the commands. Every error is
one line on stderr; the exit status says which kind (:data:`EXIT_CODES`).
:mod:`.parser` declares the arguments (each with a sentence, its default and
examples), :mod:`.commands` runs them.
"""

from __future__ import annotations

import errno
import os
import re
import sys
import warnings
from pathlib import Path

from ..base.checks import naming, shown, writable_path
from ..studies.grid import parse_range  # noqa: F401 (re-exported)
from .commands import COMMANDS, write_phase_diagrams  # noqa: F401 (re-exported)
from .parser import EXIT_CODES, UsageError, build_parser  # noqa: F401 (EXIT_CODES re-exported)

OK, FAILED, BAD_INPUT, INTERNAL, INTERRUPTED = 0, 1, 2, 3, 130


def main(argv=None) -> int:
    """Entry point of ``symdyn``; returns the exit status (:data:`EXIT_CODES`).

    0: done; 1: a claim FAILed (``verify``); 2: bad input, an output that
    cannot be written (the file and the reason), an unreachable scheduler;
    3: an internal error; 130: interrupted. Every error is one line on stderr
    (``SYMDYN_TRACEBACK=1`` shows the traceback of an internal error).
    """
    try:
        return _main(argv)
    except (ValueError, ArithmeticError, UsageError) as exc:
        print(f"symdyn: error: {_one_line(exc)}", file=sys.stderr)
        return BAD_INPUT
    except BrokenPipeError:             # `symdyn ... | head`: the reader left
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return OK
    except KeyboardInterrupt as exc:
        print(f"symdyn: interrupted{': ' + _one_line(exc) if str(exc) else ''}",
              file=sys.stderr)
        return INTERRUPTED
    except MemoryError:
        print("symdyn: error: out of memory; make the problem smaller", file=sys.stderr)
        return BAD_INPUT
    except OSError as exc:
        if exc.filename is None or os.environ.get("SYMDYN_TRACEBACK"):
            return _internal(exc)
        print(f"symdyn: error: {_file_error(exc)}", file=sys.stderr)
        return BAD_INPUT
    except Exception as exc:  # a bug: one line, the traceback on request
        return _internal(exc)


def _internal(exc) -> int:
    if os.environ.get("SYMDYN_TRACEBACK"):
        raise exc
    print(f"symdyn: internal error ({type(exc).__name__}): {_one_line(exc)}; "
          f"set SYMDYN_TRACEBACK=1 to see the traceback", file=sys.stderr)
    return INTERNAL


def _file_error(exc: OSError) -> str:
    """What failed and where: ``cannot write report/README.md (Permission denied)``."""
    reason = exc.strerror or _one_line(exc)
    verb = "write" if exc.errno in _WRITE_ERRORS else "use"
    where = str(exc.filename) + (f" -> {exc.filename2}" if exc.filename2 else "")
    return f"cannot {verb} {where} ({reason})"


_WRITE_ERRORS = {errno.EACCES, errno.EPERM, errno.EROFS, errno.ENOSPC,
                 getattr(errno, "EDQUOT", errno.ENOSPC), errno.EISDIR, errno.EEXIST}


def _one_line(exc) -> str:
    return " ".join(str(exc).split())


_ADDRESS = re.compile(r"^([a-z]+://)?[^\s:/]+:\d{1,5}$")


def _outputs(args) -> None:
    """Check every output path before any work starts (a real write probe in
    each folder: permission bits say nothing for root or a read-only mount)."""
    for option, folder in (("out", True), ("cache", True), ("json", False), ("plot", False)):
        path = getattr(args, option, None)
        if path is not None:
            writable_path(path, f"--{option}", folder=folder)
    if args.command == "report":            # the files and folders it writes into
        out = Path(args.out)
        writable_path(out / "README.md", "--out")
        if not (args.no_figures and args.no_design and args.no_trained):
            writable_path(out / "figures", "--out", folder=True)
        if not args.no_phase_diagram:
            writable_path(out / "phase_diagram", "--out", folder=True)
    scheduler = getattr(args, "scheduler", None)
    if scheduler is not None and not _ADDRESS.match(scheduler):
        raise ValueError(f"--scheduler: expected a Dask scheduler address such as "
                         f"tcp://host:8786, got {shown(scheduler)}")


def _main(argv) -> int:
    with warnings.catch_warnings():
        # numpy's RuntimeWarnings on values we then refuse are noise here.
        warnings.simplefilter("ignore", RuntimeWarning)
        parser = build_parser()
        args = parser.parse_args(argv)
        if args.command is None:            # bare `symdyn`: what it can do
            parser.print_help()
            return OK
        _outputs(args)
        out = COMMANDS[args.command](args)
        if isinstance(out, int):
            return out
        with naming("standard output"):          # `symdyn ... > file` on a full disk
            print(out)
            sys.stdout.flush()
        return OK
