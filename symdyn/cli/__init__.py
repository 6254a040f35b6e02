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
import linecache
import os
import re
import sys
import warnings
from pathlib import Path

from ..base.checks import BadInput, naming, shown, writable_path
from ..studies.grid import parse_range  # noqa: F401 (re-exported)
from .commands import COMMANDS, write_phase_diagrams  # noqa: F401 (re-exported)
from .parser import (  # noqa: F401 (EXIT_CODES re-exported)
    EXIT_CODES,
    UsageError,
    build_parser,
    did_you_mean,
)

OK, FAILED, BAD_INPUT, INTERNAL, INTERRUPTED = 0, 1, 2, 3, 130


def main(argv=None) -> int:
    """Entry point of ``symdyn``; returns the exit status (:data:`EXIT_CODES`).

    0: done; 1: a claim FAILed (``verify``) or no certificate within the
    allowed precision (``certify``); 2: bad input (:func:`bad_input`),
    an output that cannot be written (the file and the reason), an
    unreachable scheduler; 3: an internal error (any other exception: a
    ``ValueError`` a bug raised too); 130: interrupted. Every error is one
    line on stderr (``SYMDYN_TRACEBACK=1`` shows the traceback of an
    internal error). A failed command removes the output folders it created
    and left empty.
    """
    created = []
    try:
        return _main(argv, created)
    except UsageError as exc:
        print(f"symdyn: error: {_one_line(exc)}", file=sys.stderr)
        return BAD_INPUT
    except ArithmeticError as exc:
        if not _uncertified(exc):
            return _refused_or_internal(exc)
        print(f"symdyn: not certified: {_one_line(exc)}", file=sys.stderr)
        return FAILED
    except ValueError as exc:
        return _refused_or_internal(exc)
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
    finally:
        _remove_empty(created)


#: the package's folder: a ``raise`` there is a refusal the library chose
_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _refused_or_internal(exc) -> int:
    """Exit 2 with the message for bad input (:func:`bad_input`), else 3."""
    if not bad_input(exc):
        return _internal(exc)
    print(f"symdyn: error: {_one_line(exc)}", file=sys.stderr)
    return BAD_INPUT


def _uncertified(exc) -> bool:
    """Whether ``exc`` is :class:`symdyn.certify.taylor.Uncertified` (no
    certificate within the allowed precision: neither bad input nor a bug).
    The module is only looked up: without python-flint it was never imported,
    and nothing raised it."""
    module = sys.modules.get("symdyn.certify.taylor")
    return module is not None and isinstance(exc, module.Uncertified)


def bad_input(exc) -> bool:
    """Whether ``exc`` refuses the caller's input (exit 2) rather than being a
    bug (exit 3): a :class:`~symdyn.base.checks.BadInput`, or a ``ValueError``
    or ``ArithmeticError`` raised by a ``raise`` statement of symdyn's own
    code (a check that refuses a value). A ``ValueError`` raised inside
    numpy, scipy or Python (a shape that does not broadcast, an unpacking that
    fails) is a bug."""
    if isinstance(exc, BadInput):
        return True
    if not isinstance(exc, ValueError | ArithmeticError):
        return False
    tb, last = exc.__traceback__, None
    while tb is not None:
        last, tb = tb, tb.tb_next
    if last is None:
        return False
    file = os.path.abspath(last.tb_frame.f_code.co_filename)
    if not any(file.startswith(root + os.sep) for root in _roots()):
        return False
    return linecache.getline(file, last.tb_lineno).lstrip().startswith("raise ")


def _roots() -> list[str]:
    """The folders of symdyn's own code: the package and, once imported,
    ``symdyn.proofs_check`` (installed from the repository's top level)."""
    roots = [_PACKAGE]
    checks = sys.modules.get("symdyn.proofs_check")
    if checks is not None and getattr(checks, "__file__", None):
        roots.append(os.path.dirname(os.path.abspath(checks.__file__)))
    return roots


def _remove_empty(created) -> None:
    """Remove the folders a failed command created and left empty, deepest first."""
    for folder in sorted(created, key=lambda p: len(p.parts), reverse=True):
        try:
            folder.rmdir()                      # only if empty
        except OSError:
            pass


def _new_folders(path: Path) -> list[Path]:
    """``path`` and its ancestors that do not exist yet."""
    out = []
    for p in (path, *path.parents):
        if p.exists() or p.is_symlink():
            break
        out.append(p)
    return out


def _new_folder_rule(folder: Path, option: str, one_level: bool) -> None:
    """Refuse (``BadInput``) an output whose missing folders would start at the
    filesystem's root (``--plot /nonexistent/x.png``); with ``one_level`` (a
    file option: :data:`~symdyn.cli.parser.NEW_FOLDER_RULE`), also one whose
    folder's parent is missing."""
    new = _new_folders(folder)
    if not new:
        return
    top = new[-1]                               # the outermost folder to create
    absolute = top.absolute()
    if absolute.parent == Path(absolute.anchor):
        raise BadInput(f"{option}: will not create the folder {shown(str(absolute), 200)} "
                       f"at the filesystem's root; create it first or choose another folder")
    if one_level and len(new) > 1:
        raise BadInput(f"{option}: the folder {shown(str(folder.parent), 200)} does not "
                       f"exist; create it first (only the file's own folder is created)")


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


def _outputs(args, created=None) -> None:
    """Check every output path before any work starts (a real write probe in
    each folder: permission bits say nothing for root or a read-only mount);
    ``created`` collects the folders the probes create."""
    created = [] if created is None else created
    for option, folder in (("out", True), ("cache", True), ("json", False), ("plot", False)):
        path = getattr(args, option, None)
        if path is not None:
            p = Path(path)
            _new_folder_rule(p if folder else p.parent, f"--{option}", one_level=not folder)
            created += _new_folders(p if folder else p.parent) if str(path).strip() else []
            writable_path(path, f"--{option}", folder=folder)
    if args.command == "report":            # the files and folders it writes into
        out = Path(args.out)
        writable_path(out / "README.md", "--out")
        if not (args.no_figures and args.no_design and args.no_trained):
            created += _new_folders(out / "figures")
            writable_path(out / "figures", "--out", folder=True)
        if not args.no_phase_diagram:
            created += _new_folders(out / "phase_diagram")
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
_ALLOWED = re.compile(r"allowed: ([\w, ]+)")


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
        name = unknown.group(1)
        allowed = _ALLOWED.search(text)
        close = did_you_mean(name, allowed.group(1).split(", ")) if allowed else ""
        text += (f"; {close} (a free parameter {name} takes its value with "
                 f"--param {name}=VALUE)" if close else
                 f"; give a free parameter its value with --param {name}=VALUE")
    return text


def _main(argv, created=None) -> int:
    with warnings.catch_warnings():
        # numpy's RuntimeWarnings on values we then refuse are noise here.
        warnings.simplefilter("ignore", RuntimeWarning)
        parser = build_parser()
        args = parser.parse_args(argv)
        if args.command is None:            # bare `symdyn`: what it can do
            parser.print_help()
            return OK
        _outputs(args, created)
        try:
            out = COMMANDS[args.command](args)
        except ValueError as exc:
            if not bad_input(exc):
                raise
            text = in_flags(_one_line(exc), _flags(parser, args.command))
            raise BadInput(text) from exc
        if created is not None:
            created.clear()                     # done: what it made stays, empty or not
        if isinstance(out, int):
            return out
        with naming("standard output"):          # `symdyn ... > file` on a full disk
            print(out)
            sys.stdout.flush()
        return OK
