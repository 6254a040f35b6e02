"""The ``symdyn`` command line.

Commands: ``schemes``, ``derive SCHEME``, ``solve SCHEME``, ``simulate SCHEME``,
``verify``, ``figures``, ``phase-diagram``, ``report``; ``--version``. Also
``python -m symdyn``. Every error is one line on stderr; the exit status
says which kind (:data:`EXIT_CODES`). :func:`write_phase_diagrams` orchestrates
the phase diagrams (the sweep, then :mod:`symdyn.output.figures`' figures), handed
to the report (:func:`symdyn.output.build.build_report`) like the verdicts.

Layer 5, the top (entry points).
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import json
import os
import re
import sys
import warnings
from pathlib import Path

import numpy as np

from .base.checks import ATTENTIONS, finite_array, integer, memory, number, shown, writable_path
from .base.version import __version__
from .model.registry import custom_scheme, entry, scheme, schemes
from .output.build import QUICK_PHASE_DIAGRAM, build_report
from .output.figures import phase_figures, write_figures
from .output.formatting import distance_table, simulation_csv, solve_rows
from .reduced.solver import solve
from .reduced.summary import FORMATS, derive
from .studies.grid import ROW_BYTES, parse_range  # noqa: F401 (parse_range: re-exported)
from .studies.phase_diagram import phase_diagram

#: The exit status of ``symdyn`` (and of ``python -m symdyn.proofs_check``).
EXIT_CODES = """\
exit status:
  0    done (verify: every claim PASSed)
  1    verify: a claim FAILed
  2    bad usage or input, an output that cannot be written, a scheduler that
       cannot be reached, or a problem too large for this machine
  3    internal error (a bug: set SYMDYN_TRACEBACK=1 for the traceback)
  130  interrupted (Ctrl-C)"""

OK, FAILED, BAD_INPUT, INTERNAL, INTERRUPTED = 0, 1, 2, 3, 130


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # one line, exit 2; a long argument echoed is cut
        message = re.sub(r"'([^']{60})[^']{4,}'", r"'\1...'", message)
        message = re.sub(r"(\S{60})\S{4,}", r"\1...", message)   # unquoted echoes too
        where = self.prog.removeprefix("symdyn").strip()
        raise _UsageError(f"{where}: {message}" if where else message)


class _UsageError(Exception):
    pass


def _scheme_arguments(p):
    p.add_argument("scheme", help=f"one of {', '.join(schemes())}, or 'custom'")
    p.add_argument("--attention", default="softmax", choices=ATTENTIONS)
    p.add_argument("--speed", help="custom: the speed s in t, r, a, A_norm, n, beta")
    p.add_argument("--radial", help="custom: dr/dt (omit to stay on the sphere)")
    p.add_argument("--name", default="custom", help="custom: a label")


def _entry_options(p):
    """``--NAME`` for each parameter the entries declare (``--alpha``,
    ``--t-switch``, ...), unless the command has an option of that name."""
    for name, (kind, owners) in _entry_parameters().items():
        with contextlib.suppress(argparse.ArgumentError):
            p.add_argument(f"--{name.replace('_', '-')}", dest=f"scheme_{name}",
                           metavar=name.upper(), type=float if kind == "number" else str,
                           help="; ".join(owners))


def _entry_parameters() -> dict:
    """Parameter name -> (kind, ["Label: text", ...]) over the built-ins' entries."""
    out = {}
    for e in map(entry, schemes()):
        for q in (q for q in e.parameters if q.kind != "free"):
            out.setdefault(q.name, (q.kind, []))[1].append(f"{e.style.label}: {q.text}")
    return out


def _build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="symdyn", description=__doc__.splitlines()[0], epilog=EXIT_CODES,
                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"symdyn {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    sub.add_parser("schemes", help="list the built-in schemes")

    d = sub.add_parser("derive", help="derive a scheme's reduced ODE and laws")
    _scheme_arguments(d)
    d.add_argument("--format", default="text", choices=FORMATS)
    _entry_options(d)

    s = sub.add_parser("solve", help="solve the reduced ODE from an equiangular start")
    _scheme_arguments(s)
    s.add_argument("--n", type=float, nargs="+", required=True,
                   help="number of tokens (>= 2); several values: one block each")
    s.add_argument("--beta", type=float, nargs="+", required=True, help="inverse temperature")
    s.add_argument("--gamma0", type=float, nargs="+", required=True, help="starting cosine")
    s.add_argument("--r0", type=float, default=1.0, help="starting token norm")
    s.add_argument("--t-max", type=float, required=True, help="last time (> 0)")
    s.add_argument("--points", type=int, default=11, help="output times (>= 2)")
    s.add_argument("--log", action="store_true",
                   help="log-spaced times from 1e-4 t_max (after t = 0)")
    s.add_argument("--format", default="csv", choices=("csv", "json"))
    s.add_argument("--dps", type=int, help="solve with mpmath at this many digits")
    _entry_options(s)

    v = sub.add_parser("verify", help="check the paper's claims (proofs_check)",
                       epilog=EXIT_CODES, formatter_class=argparse.RawDescriptionHelpFormatter)
    v.add_argument("--quick", action="store_true", help="the small grids (< 3 min)")
    v.add_argument("--only", nargs="+", metavar="NAME",
                   help=f"run only these checks: {', '.join(_check_names())}")
    v.add_argument("--json", metavar="FILE", help="write every result as JSON")

    _add_simulate(sub)
    _add_outputs(sub)
    return parser


def _add_simulate(sub) -> None:
    m = sub.add_parser("simulate", help="simulate the n-particle system: a table "
                       "(mean over seeds) and, with --plot, a figure")
    _scheme_arguments(m)
    m.add_argument("--n", type=int, default=16, help="number of tokens")
    m.add_argument("--d", type=int, default=16, help="dimension")
    m.add_argument("--beta", type=float, default=1.0, help="inverse temperature")
    m.add_argument("--init", default="sphere", choices=("sphere", "gaussian", "equiangular"))
    m.add_argument("--gamma0", type=float, default=0.0, help="equiangular: starting cosine")
    m.add_argument("--weights", default="identity", choices=("identity", "kaiming"))
    m.add_argument("--step", type=float, help="layer step h (default: continuous)")
    m.add_argument("--seeds", type=int, default=4, help="random starts (a batch)")
    m.add_argument("--t-max", type=float, default=10.0, help="last time (> 0)")
    m.add_argument("--points", type=int, default=11, help="output times (>= 2)")
    m.add_argument("--plot", metavar="FILE", help="also save gamma(t) (.png, .svg, .pdf)")
    m.add_argument("--clock", default="t", choices=("t", "log"),
                   help="log: the radial schemes in tau = log(1 + t); --t-max is then tau")
    m.add_argument("--precision", default="float64", choices=("float64", "float32"))
    m.add_argument("--method", default="auto", choices=("auto", "dop853"),
                   help="auto: stiff stretches switch to ROS34PW2; dop853: explicit only")
    _entry_options(m)


def _add_outputs(sub) -> None:
    """The commands that write files: figures, phase-diagram, report."""
    f = sub.add_parser("figures", help="regenerate the paper's Figures 2-5 (PNG, SVG)")
    f.add_argument("--out", default="figures", help="output folder")
    f.add_argument("--quick", action="store_true", help="d = 64 and fewer seeds")
    f.add_argument("--schemes", nargs="+", metavar="SCHEME",
                   help="instead of the built-ins: names, or custom schemes as "
                        "NAME=SPEED or NAME=SPEED;RADIAL (e.g. 'mine=r*A_norm**2;a')")

    pd = sub.add_parser("phase-diagram", help="the clustering phase diagram against the "
                        "equiangular prediction (sweeps on local cores or Dask)")
    pd.add_argument("--schemes", nargs="+", default=["post-ln"], metavar="SCHEME",
                    help="schemes to sweep (the first one gets its own figure)")
    pd.add_argument("--d", nargs="+", type=int, default=[8, 128, 1024], help="dimensions")
    pd.add_argument("--beta", default="0:9:10", help="a:b:k, k values of beta from a to b")
    pd.add_argument("--n", type=int, default=32, help="number of tokens")
    pd.add_argument("--seeds", type=int, default=8, help="random starts per point")
    pd.add_argument("--t-max", type=float, default=1e3, help="last saved time")
    pd.add_argument("--points", type=int, default=81, help="saved times (logarithmic)")
    pd.add_argument("--scheduler", help="a Dask scheduler address, e.g. tcp://host:8786")
    pd.add_argument("--workers", type=int, help="local processes (default: all cores)")
    pd.add_argument("--cache", help="folder of finished tasks (resume after interruption)")
    pd.add_argument("--out", default="phase_diagram", help="output folder")

    rep = sub.add_parser("report", help="write the report (report/README.md)")
    rep.add_argument("--out", default="report", help="output folder")
    rep.add_argument("--quick", action="store_true",
                     help="quick figures (d = 64, 4 seeds) and phase diagrams")
    rep.add_argument("--no-figures", action="store_true", help="leave out the figures")
    rep.add_argument("--no-design", action="store_true",
                     help="leave out the designed schedules")
    rep.add_argument("--no-phase-diagram", action="store_true",
                     help="leave out the clustering phase diagrams")
    rep.add_argument("--scheduler", help="run the phase-diagram sweep on this Dask scheduler")
    rep.add_argument("--no-verify", action="store_true",
                     help="leave out the proofs_check verdicts")


def _scheme_from(args):
    if args.scheme == "custom":
        if args.speed is None:
            raise ValueError("speed: 'derive custom' needs --speed EXPR")
        return custom_scheme(args.name, args.speed, args.radial)
    if args.speed is not None or args.radial is not None:
        raise ValueError("speed: --speed/--radial go with 'derive custom'")
    params = {k: getattr(args, f"scheme_{k}") for k in _entry_parameters()
              if getattr(args, f"scheme_{k}", None) is not None}
    return scheme(args.scheme, **params)


def _scheme_spec(text: str):
    """``--schemes`` items: a built-in name, or ``NAME=SPEED[;RADIAL]`` (parsed
    by the safe parser, like ``derive custom``)."""
    if "=" not in text:
        return scheme(text)
    name, _, laws = text.partition("=")
    speed, _, radial = laws.partition(";")
    if not name or not speed:
        raise ValueError(f"--schemes: expected NAME or NAME=SPEED[;RADIAL], got {shown(text)}")
    return custom_scheme(name, speed, radial or None)


def _derive(args) -> str:
    d = derive(_scheme_from(args), args.attention)
    if args.format == "json":
        return json.dumps(d.as_dict(), indent=2)
    rows = d.rows(args.format)
    width = max(len(label) for label, _ in rows)
    head = f"{d.scheme.name} ({args.attention} attention)"
    return "\n".join([head] + [f"{label:<{width}}  {v}" for label, v in rows])


_MAX_POINTS = 10**6     # rows of text a solve prints


def _times(args):
    t_max = float(finite_array(args.t_max, "--t-max", 0.0, low_open=True))
    if not 2 <= args.points <= _MAX_POINTS:
        raise ValueError(f"--points must be an integer in [2, {_MAX_POINTS}], "
                         f"got {args.points}")
    if getattr(args, "log", False):
        return np.concatenate([[0.0], np.geomspace(1e-4 * t_max, t_max, args.points - 1)])
    return np.linspace(0.0, t_max, args.points)


def _solve(args) -> str:
    times = _times(args)
    grid = [(n, b, g) for n in args.n for b in args.beta for g in args.gamma0]
    if len(grid) > _MAX_POINTS // len(times):
        raise ValueError(f"--n, --beta, --gamma0: {len(grid)} combinations of "
                         f"{len(times)} times are too many rows")
    nn, bb, gg = (np.array(x) for x in zip(*grid, strict=True))
    tr = solve(_scheme_from(args), n=nn, beta=bb, gamma0=gg, r0=args.r0, t=times,
               attention=args.attention, dps=args.dps)
    several = len(grid) > 1      # then each row starts with its parameters
    head, rows = solve_rows(tr, (nn, bb, gg) if several else None, args.dps or 17)
    if args.format == "json":
        def value(v):
            return v if several else v[0]
        name = args.name if args.scheme == "custom" else args.scheme
        return json.dumps({"scheme": name, "n": value(args.n),
                           "beta": value(args.beta), "gamma0": value(args.gamma0),
                           "r0": args.r0, "columns": head, "rows": rows}, indent=1)
    return "\n".join([",".join(head)] + [",".join(row) for row in rows])


def _simulate(args) -> str:
    from .particles.simulation import simulate
    from .studies.runs import batch_start

    times = _times(args)
    n, d, seeds = (integer(getattr(args, k), f"--{k}", low)
                   for k, low in (("n", 2), ("d", 1), ("seeds", 1)))
    X0, w = batch_start(args.init, n, d, args.gamma0, seeds, args.weights)
    s = _scheme_from(args)
    sim = simulate(s, X0, beta=args.beta, t=times, weights=w, step=args.step,
                   attention=args.attention, clock=args.clock,
                   dtype=np.dtype(args.precision).type, method=args.method)
    if args.plot:
        from .output.plot import save, simulation

        save(simulation(sim, scheme=s).figure, args.plot)
    return simulation_csv(sim, times, args.clock)


def _check_names() -> list[str]:
    try:
        from symdyn import proofs_check
    except ImportError:              # symdyn without its claims package
        return []
    return list(proofs_check.CHECKS)


def write_phase_diagrams(out, schemes=("post-ln",), d=(8, 128, 1024), beta=None, n=32,
                         seeds=8, t_max=1e3, points=81, **sweep_options):
    """Sweep (:func:`~symdyn.studies.phase_diagram.phase_diagram`), then write
    ``phase_diagram.csv`` and the figures of
    :func:`~symdyn.output.figures.phase_figures` into ``out``.

    Returns ``(diagrams, files)``. ``out`` is checked for writing, and
    ``points`` against memory (a table row per time point), before any work.
    """
    integer(points, "points", 2)
    memory(points * ROW_BYTES["simulate"], f"points = {points:,} (a table row each, at least)")
    number(t_max, "t_max", 0.1, low_open=True)
    out = writable_path(out, "out", folder=True)
    t = np.concatenate([[0.0], np.geomspace(0.1, t_max, points)])
    csv = out / "phase_diagram.csv"
    dg, _ = phase_diagram(schemes, d, beta, t, n, seeds, out=csv, **sweep_options)
    return dg, {"table": [csv], **phase_figures(dg, out, n, seeds)}


def _phase_diagram(args) -> str:
    dg, files = write_phase_diagrams(
        args.out, schemes=args.schemes, d=args.d, beta=parse_range(args.beta), n=args.n,
        seeds=args.seeds, t_max=args.t_max, points=args.points, scheduler=args.scheduler,
        workers=args.workers, cache=args.cache, progress=True)
    paths = [str(p) for ps in files.values() for p in ps]
    return ("Distance of the simulated transition t_1/2 to the equiangular T* "
            "(mean |log10 ratio|, decades):\n" + distance_table(dg) + "\n".join(paths))


def _verdicts(progress) -> str:
    from symdyn import proofs_check

    results = proofs_check.run(quick=True, progress=progress)
    return ("Run `python -m symdyn.proofs_check` for the full grids.\n\n"
            + proofs_check.markdown(results))


def _progress(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


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
        if not (args.no_figures and args.no_design):
            writable_path(out / "figures", "--out", folder=True)
        if not args.no_phase_diagram:
            writable_path(out / "phase_diagram", "--out", folder=True)
    scheduler = getattr(args, "scheduler", None)
    if scheduler is not None and not _ADDRESS.match(scheduler):
        raise ValueError(f"--scheduler: expected a Dask scheduler address such as "
                         f"tcp://host:8786, got {shown(scheduler)}")


def main(argv=None) -> int:
    """Entry point of ``symdyn``; returns the exit status (:data:`EXIT_CODES`).

    0: done; 1: a claim FAILed (``verify``); 2: bad input, an output that
    cannot be written (the file and the reason), an unreachable scheduler;
    3: an internal error; 130: interrupted. Every error is one line on stderr
    (``SYMDYN_TRACEBACK=1`` shows the traceback of an internal error).
    """
    try:
        return _main(argv)
    except (ValueError, ArithmeticError, _UsageError) as exc:
        print(f"symdyn: error: {_one_line(exc)}", file=sys.stderr)
        return BAD_INPUT
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


def _main(argv) -> int:
    with warnings.catch_warnings():
        # numpy's RuntimeWarnings on values we then refuse are noise here.
        warnings.simplefilter("ignore", RuntimeWarning)
        args = _build_parser().parse_args(argv)
        _outputs(args)
        return _run(args)


def _run(args) -> int:
    if args.command == "schemes":
        print("\n".join(schemes()))
    elif args.command == "derive":
        print(_derive(args))
    elif args.command == "solve":
        print(_solve(args))
    elif args.command == "simulate":
        print(_simulate(args))
    elif args.command == "verify":
        import symdyn.proofs_check.__main__ as pc

        argv = (["--quick"] if args.quick else []) + \
            (["--only", *args.only] if args.only else []) + \
            (["--json", args.json] if args.json else [])
        return pc.main(argv)
    elif args.command == "figures":
        result = write_figures(args.out, quick=args.quick, progress=_progress,
                               schemes_=None if args.schemes is None
                               else [_scheme_spec(x) for x in args.schemes])
        for paths in result["files"].values():
            print("\n".join(str(p) for p in paths))
    elif args.command == "phase-diagram":
        print(_phase_diagram(args))
    elif args.command == "report":
        def phase_diagrams(folder):
            return write_phase_diagrams(folder, schemes=schemes(), scheduler=args.scheduler,
                                        progress=True,
                                        **(QUICK_PHASE_DIAGRAM if args.quick else {}))
        print(build_report(args.out, quick=args.quick, figures=not args.no_figures,
                           design=not args.no_design,
                           phase_diagrams=None if args.no_phase_diagram else phase_diagrams,
                           verdicts=None if args.no_verify else _verdicts,
                           progress=_progress))
    return OK


if __name__ == "__main__":
    sys.exit(main())
