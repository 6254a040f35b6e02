"""What each ``symdyn`` command does with its parsed arguments.

:func:`write_phase_diagrams` orchestrates the phase diagrams (the sweep, then
:mod:`symdyn.output.figures`' figures), handed to the report
(:func:`symdyn.output.build.build_report`) like the verdicts.

Layer 5, the top (entry points).
"""

from __future__ import annotations

import json
import sys
import warnings
from dataclasses import replace

import numpy as np

from ..base.checks import finite_array, integer, memory, number, shown, writable_path
from ..model.registry import custom_scheme, scheme, schemes
from ..output.build import QUICK_PHASE_DIAGRAM, build_report
from ..output.diagrams import phase_figures
from ..output.figures import write_figures
from ..output.formatting import distance_table, simulation_csv, solve_rows
from ..reduced.solver import solve
from ..reduced.summary import derive, table
from ..studies.event_times import locate_events
from ..studies.grid import ROW_BYTES, parse_range
from ..studies.phase_diagram import phase_diagram
from .parser import T_MIN_CAP, T_MIN_FRACTION, entry_parameters

_MAX_POINTS = 10**6     # rows of text a solve prints


def _params(args) -> dict:
    """``--param NAME=VALUE`` as ``{NAME: VALUE}`` (values are numbers)."""
    out = {}
    for item in args.param:
        name, eq, value = item.partition("=")
        if not eq or not name.strip():
            raise ValueError(f"--param: expected NAME=VALUE such as c=0.5, got {shown(item)}")
        try:
            out[name.strip()] = float(value)
        except ValueError:
            raise ValueError(f"--param: the value of {shown(name.strip())} must be a number, "
                             f"got {shown(value)}") from None
    return out


def _scheme_from(args):
    params = _params(args)
    if args.scheme.lower() == "custom":
        if args.speed is None:
            raise ValueError("speed: 'custom' needs --speed EXPR")
        return custom_scheme(args.name, args.speed, args.radial, params=params or None)
    if args.speed is not None or args.radial is not None:
        raise ValueError("speed: --speed/--radial go with the scheme 'custom'")
    options = {k: getattr(args, f"scheme_{k}") for k in entry_parameters()
               if getattr(args, f"scheme_{k}", None) is not None}
    return scheme(args.scheme, **options, **({"params": params} if params else {}))


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


def derive_command(args) -> str:
    d = derive(_scheme_from(args), args.attention)
    if args.format == "json":
        return json.dumps(d.as_dict(), indent=2)
    if args.format == "latex":
        return d.latex_table()
    return str(d)


def output_times(t_max: float, points: int, log: bool = False,
                 t_min: float | None = None) -> np.ndarray:
    """The output times of ``solve`` and ``simulate``: ``points`` times, the
    last exactly ``t_max``. Linear: ``t_k = k t_max / (points - 1)``. Log:
    ``t_0 = 0``, then ``t_k = t_min (t_max/t_min)^((k-1)/(points-2))`` for
    ``k = 1 .. points - 1`` (``points = 2``: ``0, t_max``); ``t_min`` defaults
    to ``T_MIN_FRACTION t_max``, at most ``T_MIN_CAP``.

    >>> output_times(1e6, 3, log=True).tolist()
    [0.0, 0.01, 1000000.0]
    """
    t_max = float(finite_array(t_max, "--t-max", 0.0, low_open=True))
    if not 2 <= points <= _MAX_POINTS:
        raise ValueError(f"--points must be an integer in [2, {_MAX_POINTS}], "
                         f"got {shown(points)}")
    if not log:
        if t_min is not None:
            raise ValueError("--t-min: the first time of a log grid; add --log")
        out = np.linspace(0.0, t_max, points)
    else:
        if t_min is None:
            t_min = min(T_MIN_FRACTION * t_max, T_MIN_CAP)
        elif not 0 < t_min < t_max:
            raise ValueError(f"--t-min must be in (0, --t-max) = (0, {t_max:g}), "
                             f"got {t_min:g}")
        out = np.concatenate([[0.0], np.geomspace(t_min, t_max, points - 1)]) \
            if points > 2 else np.array([0.0, t_max])
    out[-1] = t_max                 # exactly the time asked for, whatever the rounding
    return out


def _times(args) -> np.ndarray:
    if args.points is None:                     # simulate: a smooth curve when plotted
        args.points = 101 if getattr(args, "plot", None) else 11
    return output_times(args.t_max, args.points, args.log, args.t_min)


def _token_counts(values, infinite: bool = False) -> list:
    """``--n`` values as integers >= 2 (``16`` and ``1e3`` are; ``8.5`` is not);
    with ``infinite``, also ``inf`` (the long-context limit of ``sd.solve``)."""
    out: list = []
    for v in values:
        try:
            x = float(v)
        except ValueError:
            x = float("nan")
        if infinite and x == float("inf"):
            out.append(x)
            continue
        if not (np.isfinite(x) and x == int(x) and x >= 2):
            also = " or inf" if infinite else ""
            raise ValueError(f"--n: the number of tokens must be an integer >= 2{also}, "
                             f"got {shown(v)}")
        out.append(int(x))
    return out


def solve_command(args) -> str:
    times = _times(args)
    counts = _token_counts(args.n, infinite=True)
    grid = [(n, b, g) for n in counts for b in args.beta for g in args.gamma0]
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
        return json.dumps({"scheme": name, "n": value([n if n < np.inf else "inf"
                                                       for n in counts]),
                           "beta": value(args.beta), "gamma0": value(args.gamma0),
                           "r0": args.r0, "provenance": json.loads(tr.provenance.to_json()),
                           "columns": head, "rows": rows}, indent=1)
    return "\n".join(solve_header(tr, args, several)
                     + [",".join(head)] + [",".join(row) for row in rows])


def solve_header(tr, args, several: bool) -> list[str]:
    """``# name: value`` lines of a solve: its provenance (scheme, parameters,
    n, beta, attention, tolerances, version), a custom scheme's laws and the
    values of free parameters (``--param``), the starts and what a row is."""
    p = tr.provenance
    laws = [("speed", args.speed), ("radial", args.radial)] if args.scheme == "custom" else []
    rows = [*p.summary()[:2], *[(k, v) for k, v in laws if v],
            *([("param", ", ".join(args.param))] if args.param else []), *p.summary()[2:],
            ("gamma0", ", ".join(f"{g:g}" for g in args.gamma0)), ("r0", f"{args.r0:g}"),
            ("rows", "one per (n, beta, gamma0) and time, led by them" if several
             else "one per time")]
    return [f"# {k}: {v}" for k, v in rows]


def simulate_command(args) -> str:
    from ..particles.arguments import workspace
    from ..particles.simulation import simulate
    from ..studies.runs import batch_start

    times = _times(args)
    tol = _locate_tolerance(args)
    n, d, seeds, first = (integer(getattr(args, k), f"--{k.replace('_', '-')}", low)
                          for k, low in (("n", 2), ("d", 1), ("seeds", 1), ("start_seed", 0)))
    # the size estimates before the starts are drawn (one seed at a time)
    memory(16 * seeds * n * d, "--seeds x --n x --d: the starting tokens")
    span = args.weights != "kaiming" and d > n and args.kappa is None
    workspace(seeds, n, d, len(times), span, args.step, False)
    X0, w = batch_start(args.init, n, d, args.gamma0, seeds, args.weights, first)
    s = _scheme_from(args)
    sim = simulate(s, X0, beta=args.beta, t=times, weights=w, step=args.step,
                   attention=args.attention, clock=args.clock,
                   dtype=np.dtype(args.precision).type, method=args.method,
                   mask=args.mask, kappa=args.kappa, seed=args.seed)
    sim = replace(sim, provenance=sim.provenance.replace(
        start=args.init + (f" (gamma0 = {args.gamma0:g})" if args.init == "equiangular" else ""),
        start_seed=list(range(first, first + seeds))))
    if args.plot:
        from ..output.page import save
        from ..output.plot import simulation

        save(simulation(sim, scheme=s).figure, args.plot)
    if getattr(args, "events", False):
        return _events_table(sim.events if tol is None else locate_events(sim, tol, scheme=s),
                             located=tol is not None)
    return simulation_csv(sim, args.clock, args.per_seed, radial=not getattr(s, "on_sphere", False),
                          seeds=range(first, first + seeds))


def _locate_tolerance(args):
    """``--locate``'s tolerance, checked before the run (None without it)."""
    tol = getattr(args, "locate", None)
    if tol is None:
        return None
    if not getattr(args, "events", False):
        raise ValueError("--locate: locates the events; add --events")
    if args.step is not None or args.kappa is not None:
        raise ValueError("--locate: a layer run (--step) or a noisy run (--kappa) keeps its "
                         "events bracketed by its output times; drop --locate")
    return number(tol, "--locate", 1e-12, 1)


def _events_table(events, located: bool) -> str:
    """``events`` (the table of ``sim.events`` or ``sd.locate_events``) as CSV
    (with their located times if ``located``)."""
    from ..particles.clusters import to_text

    head = ["member", "kind", "t_before", "t_after", "parts", "into", "sizes", "leaders"]
    if located:
        head[4:4] = ["t_event", "t_event_error"]
    table = to_text(events).rename(columns={"t_lo": "t_before", "t_hi": "t_after"})
    return table[head].to_csv(index=False).rstrip("\n")


def table_command(args) -> str:
    names = args.schemes or None
    if args.format == "latex":
        return table(names, args.attention, format="latex", columns=args.columns)
    df = table(names, args.attention, columns=args.columns)
    if args.format == "csv":
        return df.to_csv().rstrip("\n")
    return df.to_string()


def trace_command(args) -> str:
    """The per-layer table under its header; errors name the command line's
    arguments (MODEL, --text, --skip-first, --seed), each checked before the
    model is read where it can be. ``--ablate``: the variant's options of
    ``load`` (or random weights); ``--fit``: the laws, as ``# fit`` lines."""
    from ..trained import fits, load
    from ..trained.files import locate
    from ..trained.trace import least_tokens, nonempty_text

    nonempty_text(args.text, "--text")
    seed = integer(args.seed, "--seed", 0)
    locate(args.model, "MODEL")
    ablate = set(args.ablate or ())
    model = load(args.model, **({"mlp": False} if "no-mlp" in ablate else {}),
                 **({"norm": "projection"} if "projection" in ablate else {}))
    if "random" in ablate:
        model = fits.randomized(model, seed)
    least_tokens(len(model.encode(args.text, "--text")), args.skip_first, "--text",
                 "--skip-first")
    tr = model.trace(text=args.text, skip_first=args.skip_first)
    out = tr.table(csv=args.csv).rstrip("\n")
    if args.fit:
        out += "\n" + "\n".join(f"# fit: {f}" for f in fits.of_trace(tr).values())
    return out


def write_phase_diagrams(out, schemes=("post-ln",), d=(8, 128, 1024), beta=None, n=32,
                         seeds=8, t_max=1e3, points=81, **sweep_options):
    """Sweep (:func:`~symdyn.studies.phase_diagram.phase_diagram`), then write
    ``phase_diagram.csv`` and the figures of
    :func:`~symdyn.output.diagrams.phase_figures` into ``out``.

    Returns ``(diagrams, files)``. ``out`` is checked for writing, and
    ``points`` against memory (a table row per time point), before any work.
    """
    integer(points, "points", 2)
    memory(points * ROW_BYTES["simulate"], f"points = {points:,} (a table row each, at least)")
    number(t_max, "t_max", 0.1, low_open=True)
    out = writable_path(out, "out", folder=True)
    t = np.concatenate([[0.0], np.geomspace(0.1, t_max, points)])
    csv = out / "phase_diagram.csv"
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        dg, _ = phase_diagram(schemes, d, beta, t, n, seeds, out=csv, **sweep_options)
    for w in seen:       # the sweep returns its table when the disk fills; here it is lost
        if str(w.message).startswith("out: cannot write"):
            raise ValueError(str(w.message).partition("; the table")[0])
        warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    return dg, {"table": [csv], **phase_figures(dg, out, n, seeds)}


def phase_diagram_command(args) -> str:
    dg, files = write_phase_diagrams(
        args.out, schemes=args.schemes, d=args.d, beta=parse_range(args.beta), n=args.n,
        seeds=args.seeds, t_max=args.t_max, points=args.points, scheduler=args.scheduler,
        workers=args.workers, cache=args.cache, progress=True)
    paths = [str(p) for ps in files.values() for p in ps]
    return ("Distance of the simulated transition t_1/2 to the equiangular T* "
            "(mean |log10 ratio|, decades):\n" + distance_table(dg) + "\n".join(paths))


def verdict_section(progress, certify=False) -> str:
    from symdyn import proofs_check

    results = proofs_check.run(quick=True, progress=progress)
    if certify:
        from symdyn.proofs_check import certified
        results += certified.run(progress=progress)
    kinds = ("Each verdict says what it rests on: *checked numerically* (floats within "
             "the stated tolerance) or *certified* (proved in ball arithmetic, "
             "`sd.certify`; never both). "
             + ("" if certify else "The certified verdicts (Figure 2's orderings, region "
                "certificates; about a minute) are left out: `symdyn report --certify` or "
                "`python -m symdyn.proofs_check --certify` adds them. "))
    return (kinds + "Run `python -m symdyn.proofs_check` for the full grids.\n\n"
            + proofs_check.markdown(results))


def progress(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def verify_command(args) -> int:
    import symdyn.proofs_check.__main__ as pc

    # the names checked here: an unknown one is symdyn's error (exit 2), said once
    only = pc.check_names(args.only, getattr(args, "certify", False)) if args.only else None
    argv = (["--quick"] if args.quick else []) + \
        (["--only", *only] if only else []) + \
        (["--json", args.json] if args.json else []) + \
        (["--certify"] if getattr(args, "certify", False) else [])
    return pc.main(argv)


def figures_command(args) -> str:
    result = write_figures(args.out, quick=args.quick, progress=progress,
                           schemes_=None if args.schemes is None
                           else [_scheme_spec(x) for x in args.schemes])
    return "\n".join(str(p) for paths in result["files"].values() for p in paths)


def report_command(args) -> str:
    if getattr(args, "certify", False):
        if args.no_verify:
            raise ValueError("--certify: adds certified verdicts; not with --no-verify")
        import symdyn.proofs_check.__main__ as pc
        pc.certified_module()                   # without python-flint: ValueError, exit 2

    def verdicts(say):
        return verdict_section(say, certify=getattr(args, "certify", False))

    def phase_diagrams(folder):
        return write_phase_diagrams(folder, schemes=schemes(), scheduler=args.scheduler,
                                    progress=True,
                                    **(QUICK_PHASE_DIAGRAM if args.quick else {}))
    return build_report(args.out, quick=args.quick, figures=not args.no_figures,
                        design=not args.no_design, trained=not args.no_trained,
                        beyond=not args.no_beyond, metastability=not args.no_metastability,
                        phase_diagrams=None if args.no_phase_diagram else phase_diagrams,
                        verdicts=None if args.no_verify else verdicts, progress=progress)


def certify_command(args) -> str:
    """``symdyn certify``: the enclosure of the crossing time, its ends and its proof."""
    try:
        from ..certify.crossing import crossing_time
    except ModuleNotFoundError as exc:
        raise ValueError(f"certify: needs python-flint ({exc}); "
                         f"pip install 'symdyn[certify]'") from None
    enc = crossing_time(_scheme_from(args), args.level, n=args.n, beta=args.beta,
                        gamma0=args.gamma0, r0=args.r0, prec=args.prec,
                        attention=args.attention)
    import mpmath
    with mpmath.workprec(enc.prec + 64):          # digits enough to name the exact ends
        lo, hi = str(enc.lo), str(enc.hi)
    return (f"T* in {enc}\nlo = {lo}\nhi = {hi}\n"
            f"relative width = {enc.relative_width:.3g}\nmethod: {enc.method}")


#: command -> function of the parsed arguments; a string is printed, an int is the status
COMMANDS = {
    "schemes": lambda args: "\n".join(schemes()),
    "derive": derive_command, "solve": solve_command, "simulate": simulate_command,
    "table": table_command, "trace": trace_command, "verify": verify_command,
    "figures": figures_command, "phase-diagram": phase_diagram_command,
    "report": report_command, "certify": certify_command,
}
