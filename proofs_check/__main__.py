"""``python -m symdyn.proofs_check [--quick] [--only NAME ...] [--json FILE] [--certify]``.

``--certify`` adds the claims a finite computation decides, proved in ball
arithmetic (:mod:`.certified`: Figure 2's orderings, region certificates);
each row says ``certified`` or ``checked numerically``. It needs python-flint
(``pip install 'symdyn[certify]'``): without it, exit status 2.

Prints the verdict table. Exit status: 0 every claim PASSed; 1 a claim
FAILed; 2 bad usage or input (an unknown check, an output that cannot be
written); 3 internal error (a check that raised: the others still run, and
the error is one line on stderr, with the traceback if SYMDYN_TRACEBACK=1);
130 interrupted. ``symdyn verify`` runs this and exits with the same status.
"""

from __future__ import annotations

import argparse
import difflib
import importlib.util
import json
import os
import sys
import traceback

from symdyn.base.checks import BadInput, writable_path

from . import CHECKS, run, table

#: The names of the certified checks (``certified.CERTIFIED``; kept here so that
#: ``--only`` is checked before python-flint is imported).
CERTIFIED_NAMES = ("fig2-order", "fig2-early", "regions")

#: The exit statuses (the same as ``symdyn``'s).
PASSED, FAILED, BAD_INPUT, INTERNAL, INTERRUPTED = 0, 1, 2, 3, 130

EXIT_CODES = """\
exit status:
  0    every claim PASSed
  1    a claim FAILed (and no check raised)
  2    bad usage or input: an unknown check, an output that cannot be written,
       --certify without python-flint (pip install 'symdyn[certify]')
  3    internal error: a check raised (the others still run; the error is one
       line on stderr, SYMDYN_TRACEBACK=1 shows the traceback)
  130  interrupted (Ctrl-C)"""


def _say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="proofs_check", description=__doc__.splitlines()[0],
                                     epilog=EXIT_CODES,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="the small grids (< 3 min)")
    parser.add_argument("--only", nargs="+", metavar="NAME",
                        help=f"among {', '.join(CHECKS)} ('_' for '-' and any case accepted)")
    parser.add_argument("--json", metavar="FILE", help="write every result as JSON")
    parser.add_argument("--certify", action="store_true",
                        help="also prove, in ball arithmetic, the claims a finite computation "
                             "decides (Figure 2's orderings, region certificates; ~1 min; "
                             "needs pip install 'symdyn[certify]'); with --only, names among "
                             "these too")
    return parser


def certified_module():
    """The certified checks' module; ``ValueError`` (exit 2) without python-flint."""
    if importlib.util.find_spec("flint") is None:
        raise BadInput("--certify needs python-flint: pip install 'symdyn[certify]'")
    from . import certified
    return certified


def _run_each(names, quick, certified=None):
    """Every check in turn: ``(results, errors)``; a check that raises is an
    error (name, one line), and the next one still runs."""
    results, errors = [], []
    for name in names:
        try:
            if name in CHECKS:
                results += run(quick=quick, only=[name], progress=_say)
            else:
                results += certified.run(only=[name], progress=_say)
        except Exception as exc:         # a bug in a check, not a verdict
            if os.environ.get("SYMDYN_TRACEBACK"):
                traceback.print_exc()
            text = " ".join(str(exc).split())[:300]
            errors.append({"name": name, "error": f"{type(exc).__name__}: {text}"})
            _say(f"proofs_check: internal error in {name} ({type(exc).__name__}): {text}")
    return results, errors


def check_names(only, certify: bool = False) -> list[str]:
    """The checks ``--only`` names (all of them for ``None``), each written as
    in ``CHECKS`` or with ``_`` for ``-`` and in any case (``initial_velocity``
    is ``initial-velocity``); with ``certify`` also :data:`CERTIFIED_NAMES`.
    An unknown name is a ``BadInput`` naming it, the closest check and the
    choices."""
    known = list(CHECKS) + (list(CERTIFIED_NAMES) if certify else [])
    if not only:
        return known
    names = []
    for given in only:
        name = given.strip().lower().replace("_", "-")
        if name in CERTIFIED_NAMES and not certify:
            raise BadInput(f"--only: {given!r} is a certified check; add --certify")
        if name not in known:
            close = difflib.get_close_matches(name, known, n=1, cutoff=0.6)
            hint = f"did you mean {close[0]}? " if close else ""
            raise BadInput(f"--only: unknown check(s) [{given!r}]; {hint}"
                           f"choose from {', '.join(known)}")
        if name not in names:
            names.append(name)
    return names


def main(argv=None) -> int:
    """Run the checks; returns the exit status (see :data:`EXIT_CODES`)."""
    args = _parser().parse_args(argv)            # bad usage: argparse exits with 2
    try:
        names = check_names(args.only, args.certify)
        certified = certified_module() if args.certify else None
        if args.json:
            writable_path(args.json, "--json")
    except ValueError as exc:
        _say(f"proofs_check: error: {exc}")
        return BAD_INPUT
    try:
        results, errors = _run_each(names, args.quick, certified)
    except KeyboardInterrupt:
        _say("proofs_check: interrupted")
        return INTERRUPTED
    if results:
        print(table(results))
    written = _write_json(args.json, args.quick, results, errors) if args.json else True
    if errors:
        return INTERNAL
    if not written:
        return BAD_INPUT
    return FAILED if any(r.verdict == "FAIL" for r, _ in results) else PASSED


def _write_json(path, quick, results, errors) -> bool:
    """Write the results; ``False`` (said on stderr) if the file cannot be written."""
    try:
        with open(path, "w") as fh:
            json.dump({"quick": quick, "errors": errors,
                       "results": [dict(r.to_dict(), seconds=s) for r, s in results]},
                      fh, indent=1)
    except OSError as exc:
        _say(f"proofs_check: error: cannot write {path} ({exc.strerror or exc})")
        return False
    return True


if __name__ == "__main__":
    sys.exit(main())
