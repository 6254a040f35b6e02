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
    parser.add_argument("--only", nargs="+", metavar="NAME", help=f"among {list(CHECKS)}")
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


def main(argv=None) -> int:
    """Run the checks; returns the exit status (see :data:`EXIT_CODES`)."""
    args = _parser().parse_args(argv)            # bad usage: argparse exits with 2
    known = list(CHECKS) + (list(CERTIFIED_NAMES) if args.certify else [])
    names = known if not args.only else list(args.only)
    unknown = [n for n in names if n not in known]
    try:
        if unknown:
            raise BadInput(f"--only: unknown check(s) {unknown}; choose from {known}")
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
