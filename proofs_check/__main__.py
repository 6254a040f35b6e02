"""``python -m symdyn.proofs_check [--quick] [--only NAME ...] [--json FILE]``.

Prints the verdict table; exit status 1 when any claim FAILs, 2 on bad input.
"""

from __future__ import annotations

import argparse
import json
import sys

from symdyn.checks import writable_path

from . import CHECKS, run, table


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="proofs_check", description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="the small grids (< 3 min)")
    parser.add_argument("--only", nargs="+", metavar="NAME", help=f"among {list(CHECKS)}")
    parser.add_argument("--json", metavar="FILE", help="write every result as JSON")
    args = parser.parse_args(argv)
    try:
        if args.json:
            writable_path(args.json, "--json")
        results = run(quick=args.quick, only=args.only,
                      progress=lambda m: print(m, file=sys.stderr, flush=True))
    except ValueError as exc:
        print(f"proofs_check: error: {exc}", file=sys.stderr)
        return 2
    print(table(results))
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"quick": args.quick,
                       "results": [dict(r.to_dict(), seconds=s) for r, s in results]},
                      fh, indent=1)
    return 1 if any(r.verdict == "FAIL" for r, _ in results) else 0


if __name__ == "__main__":
    sys.exit(main())
