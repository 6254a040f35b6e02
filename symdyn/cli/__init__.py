"""Layer 5, cli: the ``symdyn`` command line.

Commands: ``schemes``, ``derive SCHEME``, ``solve SCHEME``, ``simulate SCHEME``,
``table``, ``verify``, ``figures``, ``phase-diagram``, ``report``; ``--version``.
Also ``python -m symdyn``. Bare ``symdyn`` lists the commands. Every error is
one line on stderr; the exit status says which kind (:data:`EXIT_CODES`).
:mod:`.parser` declares the arguments (each with a sentence, its default and
examples), :mod:`.commands` runs them.
"""

from __future__ import annotations

import argparse
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


#: Python names of the library's messages that are not an option's ``dest``.
_ALIASES = {"t": "--t-max, --points", "params": "--param", "dtype": "--precision",
            "X0": "--init, --n, --d, --seeds"}
_LEADING = re.compile(r"^(sd\.init\.\w+|[A-Za-z_]\w*)(?=:| must | expected)")
_KEYWORD = re.compile(r"(?<![\w.-])([A-Za-z_]\w*)=('[^']*'|\.\.\.|[\w.+-]+)")
_UNKNOWN = re.compile(r"unknown symbol\(s\) \['([^']+)'")


def _flags(parser, command) -> dict:
    """Python name -> the option of ``command`` that sets it (``t_max`` and
    ``scheme_t_switch`` -> ``--t-max``, ``--t-switch``)."""
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    flags = {}
    for action in sub.choices[command]._actions:
        long = [o for o in action.option_strings if o.startswith("--")]
        if long and action.dest != "help":
            flags[action.dest.removeprefix("scheme_")] = long[0]
    flags.update({k: v for k, v in _ALIASES.items() if k not in flags})
    flags.update({k: "--init, --n, --d, --seeds" for k in ("sd.init.sphere", "sd.init.gaussian",
                                                            "sd.init.equiangular")})
    return flags


def in_flags(text: str, flags: dict) -> str:
    """A library message as the command line says it: the argument it starts
    with and ``name=value`` become options (``step: ... (step=h)`` ->
    ``--step: ... (--step h)``, ``step=None`` -> ``no --step``), and an
    unknown symbol of a law points to ``--param NAME=VALUE``."""
    lead = _LEADING.match(text)
    if lead and lead.group(1) in flags:
        rest = text[lead.end():]               # an option left out is None in Python
        text = flags[lead.group(1)] + rest.replace(" None or ", " ").replace(" or None", "")

    def keyword(m):
        flag = flags.get(m.group(1))
        if flag is None or "," in flag:
            return m.group(0)
        return f"no {flag}" if m.group(2) == "None" else f"{flag} {m.group(2).strip(chr(39))}"

    text = _KEYWORD.sub(keyword, text)
    unknown = _UNKNOWN.search(text)
    if unknown and "--param" in flags.values() and text.startswith(("--speed", "--radial",
                                                                     "--alpha")):
        text += f"; give a free parameter its value with --param {unknown.group(1)}=VALUE"
    return text


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
        try:
            out = COMMANDS[args.command](args)
        except ValueError as exc:
            text = in_flags(_one_line(exc), _flags(parser, args.command))
            raise ValueError(text) from exc
        if isinstance(out, int):
            return out
        with naming("standard output"):          # `symdyn ... > file` on a full disk
            print(out)
            sys.stdout.flush()
        return OK
