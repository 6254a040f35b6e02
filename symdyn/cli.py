"""The ``symdyn`` command line.

Commands: ``schemes``, ``derive SCHEME``, ``report``. Bad input prints one
line to stderr and exits with status 2.
"""

from __future__ import annotations

import argparse
import json
import sys

from .equiangular import ATTENTIONS
from .schemes import custom_scheme, scheme, schemes
from .summary import FORMATS, derive


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # one line, exit 2
        raise _UsageError(f"{self.prog}: {message}")


class _UsageError(Exception):
    pass


def _build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="symdyn", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    sub.add_parser("schemes", help="list the built-in schemes")

    d = sub.add_parser("derive", help="derive a scheme's reduced ODE and laws")
    d.add_argument("scheme", help=f"one of {', '.join(schemes())}, or 'custom'")
    d.add_argument("--attention", default="softmax", choices=ATTENTIONS)
    d.add_argument("--format", default="text", choices=FORMATS)
    d.add_argument("--alpha", help="nGPT: alpha(t), an expression in t")
    d.add_argument("--t-switch", type=float, help="Mix-LN: switch time >= 0")
    d.add_argument("--speed", help="custom: the speed s in t, r, a, A_norm, n, beta")
    d.add_argument("--radial", help="custom: dr/dt (omit to stay on the sphere)")
    d.add_argument("--name", default="custom", help="custom: a label")

    rep = sub.add_parser("report", help="write the report (report/README.md)")
    rep.add_argument("--out", default="report", help="output folder")
    return parser


def _scheme_from(args):
    if args.scheme == "custom":
        if args.speed is None:
            raise ValueError("speed: 'derive custom' needs --speed EXPR")
        return custom_scheme(args.name, args.speed, args.radial)
    if args.speed is not None or args.radial is not None:
        raise ValueError("speed: --speed/--radial go with 'derive custom'")
    params = {}
    if args.alpha is not None:
        params["alpha"] = args.alpha
    if args.t_switch is not None:
        params["t_switch"] = args.t_switch
    return scheme(args.scheme, **params)


def _derive(args) -> str:
    d = derive(_scheme_from(args), args.attention)
    if args.format == "json":
        return json.dumps(d.as_dict(), indent=2)
    rows = d.rows(args.format)
    width = max(len(label) for label, _ in rows)
    head = f"{d.scheme.name} ({args.attention} attention)"
    return "\n".join([head] + [f"{label:<{width}}  {v}" for label, v in rows])


def main(argv=None) -> int:
    """Entry point of ``symdyn``; returns the exit status."""
    try:
        args = _build_parser().parse_args(argv)
        if args.command == "schemes":
            print("\n".join(schemes()))
        elif args.command == "derive":
            print(_derive(args))
        elif args.command == "report":
            from .report import write_report

            path = write_report(args.out, progress=lambda m: print(m, file=sys.stderr))
            print(path)
    except (ValueError, _UsageError) as exc:
        print(f"symdyn: error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
