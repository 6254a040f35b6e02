"""Everything symdyn derives about one scheme, in one value object.

:func:`derive` gathers the reduced ODE, the initial velocity and token speed
at an orthogonal start with their orders in ``n``, and the terminal law.
The CLI and the report render it; nothing here prints.

Layer 2, reduced.
"""

from __future__ import annotations

from dataclasses import dataclass

import sympy as sp

from ..base.budget import complete_cache
from ..base.checks import shown
from ..model.display import formula_table, latex
from ..model.registry import SchemeLike, parameter_text, parameter_values
from ..model.registry import scheme as get_scheme
from ..model.registry import schemes as builtin_names
from ..model.scheme import Scheme
from .asymptotics import Terminal, terminal
from .equiangular import Reduction, reduce
from .initial import LeadingOrder, initial_token_speed, initial_velocity, leading_order

FORMATS = ("text", "latex", "json")


@dataclass(frozen=True, kw_only=True)
class Derivation:
    """The derived formulas of one scheme (orthogonal start: gamma0 = 0, r0 = 1)."""

    scheme: Scheme
    reduction: Reduction
    initial_velocity: sp.Expr
    initial_velocity_order: LeadingOrder | None
    initial_token_speed: sp.Expr
    initial_token_speed_order: LeadingOrder | None
    terminal: Terminal

    def rows(self, fmt: str = "text") -> list[tuple[str, str]]:
        """(label, formula) pairs rendered as plain text or LaTeX."""
        if fmt not in FORMATS:
            raise ValueError(f"format: must be one of {FORMATS}, got {shown(fmt)}")
        def show(expr):
            if expr is None or isinstance(expr, str):
                return "undecided"
            return latex(expr) if fmt == "latex" else sp.sstr(expr)

        def order(o):
            if o is None:
                return "not a power of n"
            if fmt == "latex":
                return f"\\Theta({latex(o.var ** o.exponent)})"
            return str(o)

        term = self.terminal
        tau = [("temperature tau (attention at beta*tau)", show(self.scheme.temperature))]
        return [
            ("speed s", show(self.scheme.speed)),
            ("radial rate dr/dt", show(self.scheme.radial)),
            *(tau if self.scheme.tempered else []),
            ("d gamma/dt", show(self.reduction.gamma_dot)),
            ("d r/dt", show(self.reduction.r_dot)),
            ("d gamma/dt at t = 0 (gamma0 = 0)", show(self.initial_velocity)),
            ("  order as n -> oo", order(self.initial_velocity_order)),
            ("|d theta/dt| at t = 0 (gamma0 = 0)", show(self.initial_token_speed)),
            ("  order as n -> oo", order(self.initial_token_speed_order)),
            ("terminal law", term.law + (f" ({term.reason})" if term.reason else "")),
            ("1 - gamma ~", show(term.epsilon)),
            ("d gamma/dt ~", show(term.gamma_dot)),
        ]

    def parameters(self, fmt: str = "text") -> str:
        """The scheme's number parameters as a caption: ``N = 48`` (every one,
        defaults too; a symbol stands alone), ``""`` when it has none."""
        return ", ".join(parameter_text(p, v, fmt) + ("" if v.is_number else " symbolic")
                         for p, v in parameter_values(self.scheme, True))

    def __str__(self) -> str:
        """The table ``symdyn derive`` prints."""
        rows = self.rows("text")
        width = max(len(label) for label, _ in rows)
        given = self.parameters()
        head = f"{self.scheme.name} ({self.reduction.attention} attention" + \
            (f"; {given})" if given else ")")
        return "\n".join([head] + [f"{label:<{width}}  {v}" for label, v in rows])

    def _repr_latex_(self) -> str:
        def cell(label, formula):
            words = label == "terminal law" or formula in ("undecided", "not a power of n")
            return formula if not words else r"\text{" + formula.replace("_", r"\_") + "}"
        rows = [(r"\text{" + label + "}", cell(label, f)) for label, f in self.rows("latex")]
        return formula_table(f"{self.scheme.name}, {self.reduction.attention} attention", rows)

    def latex_table(self) -> str:
        """The derivation as a booktabs ``tabular`` for a paper (labels in math)."""
        words = ("undecided", "not a power of n")
        rows = [f"{_LATEX_LABELS[label]} & "
                f"{_text(v) if label == 'terminal law' or v in words else '$' + v + '$'} \\\\"
                for label, v in self.rows("latex")]
        name = self.scheme.style.label if self.scheme.style else self.scheme.name
        given = self.parameters("latex")
        caption = [_caption(2, f"{name} ${given}$")] if given else []
        return "\n".join([
            f"% symdyn: derive {self.scheme.name}; needs \\usepackage{{booktabs}}",
            r"\begin{tabular}{ll}", r"\toprule",
            rf"\multicolumn{{2}}{{l}}{{{name}, {self.reduction.attention} attention}} \\",
            r"\midrule", *rows, r"\bottomrule", *caption, r"\end{tabular}"])

    def as_dict(self) -> dict:
        """JSON-ready: every formula as a sympy string and as LaTeX."""
        text, latex = self.rows("text"), self.rows("latex")
        out = {"scheme": self.scheme.name, "attention": self.reduction.attention,
               "params": {k: str(v) for k, v in self.scheme.params}}
        keys = ["speed", "radial", *(["temperature"] if self.scheme.tempered else []),
                "gamma_dot", "r_dot", "initial_velocity",
                "initial_velocity_order", "initial_token_speed",
                "initial_token_speed_order", "terminal_law", "terminal_epsilon",
                "terminal_gamma_dot"]
        for key, (_, txt), (_, tex) in zip(keys, text, latex, strict=True):
            out[key] = txt if key == "terminal_law" else {"text": txt, "latex": tex}
        return out


_LATEX_LABELS = {
    "speed s": "speed $s$", "radial rate dr/dt": r"radial rate $\dot r$",
    "temperature tau (attention at beta*tau)": r"temperature $\tau$ (attention at $\beta\tau$)",
    "d gamma/dt": r"$\dot\gamma$", "d r/dt": r"$\dot r$",
    "d gamma/dt at t = 0 (gamma0 = 0)": r"$\dot\gamma(0)$, $\gamma_0 = 0$",
    "  order as n -> oo": r"\quad order as $n\to\infty$",
    "|d theta/dt| at t = 0 (gamma0 = 0)": r"$|\dot\theta(0)|$, $\gamma_0 = 0$",
    "terminal law": "terminal law", "1 - gamma ~": r"$1-\gamma\sim$",
    "d gamma/dt ~": r"$\dot\gamma\sim$",
}


def _caption(columns: int, text: str) -> str:
    """The caption line under a booktabs table: the parameters its formulas hold."""
    return rf"\multicolumn{{{columns}}}{{l}}{{\footnotesize Parameters: {text}.}} \\"


def _text(words: str) -> str:
    """Plain words in a LaTeX cell: its special characters escaped."""
    return "".join({"\\": r"\textbackslash{}", "~": r"\textasciitilde{}",
                     "^": r"\textasciicircum{}"}.get(c, "\\" + c if c in "_%&#${}" else c)
                    for c in words)


def _order(expr):
    """Leading order in n, or None when there is no power law (ValueError) or
    sympy's limit cannot decide (NotImplementedError); the CLI and report then
    print "not a power of n"."""
    if isinstance(expr, str):       # the velocity itself was not derived
        return None
    try:
        return leading_order(expr)
    except (ValueError, NotImplementedError):
        return None


def derive(scheme: SchemeLike, attention: str = "softmax") -> Derivation:
    """Derive everything about ``scheme``.

    Examples
    --------
    >>> import symdyn as sd
    >>> d = sd.derive("peri-ln")
    >>> str(d.initial_token_speed_order), d.terminal.law
    ('Theta(1)', 'polynomial')
    """
    return derive_scheme(get_scheme(scheme), attention)


@complete_cache(maxsize=128)
def derive_scheme(s: Scheme, attention: str) -> Derivation:
    # The reduction is the one result everything else needs; a later step
    # that sympy cannot finish (ValueError, incl. the time budget) is
    # recorded as undecided instead of discarding what was derived.
    red = reduce(s, attention)
    v0, w0 = (_attempt(f, s, attention=attention)
              for f in (initial_velocity, initial_token_speed))
    term = _attempt(terminal, s, attention)
    if isinstance(term, str):
        term = Terminal(law="undecided", epsilon=None, gamma_dot=None, rate=None, radius=None,
                        exponent=None, reason=term)
    return Derivation(scheme=s, reduction=red, initial_velocity=v0,
                      initial_velocity_order=_order(v0), initial_token_speed=w0,
                      initial_token_speed_order=_order(w0), terminal=term)


def _attempt(f, *args, **kwargs):
    """``f(...)``, or the reason it failed (a string)."""
    try:
        return f(*args, **kwargs)
    except ValueError as exc:
        return str(exc)


#: The columns of :func:`table` (the keys of ``columns=``), in order, with the
#: header each gets in LaTeX.
TABLE_COLUMNS = {
    "speed": "$s$",
    "radial rate": r"$\dot r$",
    "temperature": r"$\tau$",
    "reduced ODE": r"$\dot\gamma$",
    "initial velocity": r"$\dot\gamma(0)$",
    "order in n": "order in $n$",
    "terminal law": "terminal law",
    "1 - gamma": r"$1-\gamma$, $t\to\infty$",
    "rate": r"rate $\lambda$",
}
#: The columns of the paper's comparison (the default of ``format="latex"``).
PAPER_COLUMNS = ("speed", "radial rate", "initial velocity", "order in n", "terminal law",
                 "1 - gamma")


def table(schemes=None, attention: str = "softmax", format: str = "dataframe",
          columns=None):
    """The comparison of schemes the paper tabulates, one row per scheme.

    Columns (:data:`TABLE_COLUMNS`): the speed law and radial rate, the
    temperature law, the reduced ODE :math:`\\dot\\gamma`, the initial velocity
    at an orthogonal start and its order in :math:`n`, the terminal law, the
    leading :math:`1-\\gamma` and the rate. ``format="dataframe"``: a
    ``pandas.DataFrame`` of LaTeX cells (index: the scheme's name; all
    columns by default); ``"latex"``: a booktabs ``tabular`` ready to paste
    (needs ``\\usepackage{booktabs}``), with math headers, the legends' names
    (Post-LN) and :data:`PAPER_COLUMNS` by default. ``columns``: a list of
    column names, in the order wanted. ``schemes``: names or Schemes, or one.

    Examples
    --------
    >>> import symdyn as sd
    >>> df = sd.table(["post-ln", "pre-ln"])
    >>> df.loc["pre-ln", "terminal law"], df.loc["post-ln", "1 - gamma"]
    ('polynomial', '$C e^{- 2 t}$')
    >>> print(sd.table("post-ln", format="latex", columns=["terminal law", "rate"]))
    % symdyn: sd.table(..., format='latex'); needs \\usepackage{booktabs}
    \\begin{tabular}{lll}
    \\toprule
    scheme & terminal law & rate $\\lambda$ \\\\
    \\midrule
    Post-LN & exponential & $2$ \\\\
    \\bottomrule
    \\end{tabular}
    """
    import pandas as pd


    if format not in ("dataframe", "latex"):
        raise ValueError(f"format: must be 'dataframe' or 'latex', got {shown(format)}")
    wanted = _columns(columns, format)
    if schemes is None:
        names = builtin_names()
    elif isinstance(schemes, (str, Scheme)):
        names = [schemes]
    else:
        names = list(schemes)
    rows, labels, given = {}, {}, {}
    for s in names:
        d = derive(s, attention)
        cells = _cells(d)
        name = _row_name(d.scheme)
        rows[name] = [cells[c] for c in wanted]
        labels[name] = _row_label(d.scheme)
        if d.parameters():
            given[labels[name]] = d.parameters("latex").replace(" symbolic", "$ symbolic$")
    df = pd.DataFrame.from_dict(rows, orient="index", columns=list(wanted))
    df.index.name = "scheme"
    df.attrs["parameters"] = {k: v for k, v in given.items()}
    return df if format == "dataframe" else _booktabs(df, labels, given)


def _row_name(s: Scheme) -> str:
    """A table row's index: the scheme's name, with the number parameters
    away from their defaults (``deepnorm (N = 6)``)."""
    away = ", ".join(parameter_text(p, v) for p, v in parameter_values(s))
    return f"{s.name} ({away})" if away else s.name


def _row_label(s: Scheme) -> str:
    """A LaTeX table row's label: the legend's name (``DeepNorm ($N = 6$)``)."""
    name = s.style.label if s.style else s.name
    away = ", ".join(f"${parameter_text(p, v, 'latex')}$" for p, v in parameter_values(s))
    return f"{name} ({away})" if away else name


def _columns(columns, format) -> tuple[str, ...]:
    if columns is None:
        return PAPER_COLUMNS if format == "latex" else tuple(TABLE_COLUMNS)
    if isinstance(columns, str):
        columns = [columns]
    wanted = tuple(columns)
    unknown = [c for c in wanted if c not in TABLE_COLUMNS]
    if unknown or not wanted:
        raise ValueError(f"columns: unknown column {shown(unknown[0]) if unknown else '(none)'}"
                         f"; choose from {', '.join(TABLE_COLUMNS)}")
    return wanted


def _cells(d: Derivation) -> dict[str, str]:
    o = d.initial_velocity_order
    return {"speed": _math(d.scheme.speed), "radial rate": _math(d.scheme.radial),
            "temperature": _math(d.scheme.temperature),
            "reduced ODE": _math(d.reduction.gamma_dot),
            "initial velocity": _math(d.initial_velocity),
            "order in n": "n/a" if o is None else rf"$\Theta({latex(o.var ** o.exponent)})$",
            "terminal law": d.terminal.law, "1 - gamma": _math(d.terminal.epsilon),
            "rate": _math(d.terminal.rate)}


def _math(expr) -> str:
    return "undecided" if expr is None or isinstance(expr, str) else f"${latex(expr)}$"


def _booktabs(df, labels, given=None) -> str:
    def esc(text):
        return text if text.startswith("$") else text.replace("_", r"\_").replace("&", r"\&")
    head = " & ".join(["scheme", *(TABLE_COLUMNS[c] for c in df.columns)])
    body = [" & ".join([esc(labels[name]), *(esc(str(v)) for v in row)]) + r" \\"
            for name, row in df.iterrows()]
    caption = [_caption(len(df.columns) + 1, "; ".join(
        f"{esc(k.split(' (')[0])} ${v}$" for k, v in given.items()))] if given else []
    return "\n".join([r"% symdyn: sd.table(..., format='latex'); needs \usepackage{booktabs}",
                      r"\begin{tabular}{" + "l" * (len(df.columns) + 1) + "}", r"\toprule",
                      head + r" \\", r"\midrule", *body, r"\bottomrule", *caption,
                      r"\end{tabular}"])
