"""Everything symdyn derives about one scheme, in one value object.

:func:`derive` gathers the reduced ODE, the initial velocity and token speed
at an orthogonal start with their orders in ``n``, and the terminal law.
The CLI and the report render it; nothing here prints.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import sympy as sp

from .asymptotics import (
    LeadingOrder,
    Terminal,
    initial_token_speed,
    initial_velocity,
    leading_order,
    terminal,
)
from .equiangular import Reduction, reduce
from .schemes import Scheme, SchemeLike
from .schemes import scheme as get_scheme

FORMATS = ("text", "latex", "json")


@dataclass(frozen=True)
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
            raise ValueError(f"format: must be one of {FORMATS}, got {fmt!r}")
        def show(expr):
            if expr is None or isinstance(expr, str):
                return "undecided"
            return sp.latex(expr) if fmt == "latex" else sp.sstr(expr)

        def order(o):
            if o is None:
                return "not a power of n"
            if fmt == "latex":
                return f"\\Theta({sp.latex(o.var ** o.exponent)})"
            return str(o)

        term = self.terminal
        return [
            ("speed s", show(self.scheme.speed)),
            ("radial rate dr/dt", show(self.scheme.radial)),
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

    def as_dict(self) -> dict:
        """JSON-ready: every formula as a sympy string and as LaTeX."""
        text, latex = self.rows("text"), self.rows("latex")
        out = {"scheme": self.scheme.name, "attention": self.reduction.attention,
               "params": {k: str(v) for k, v in self.scheme.params}}
        keys = ["speed", "radial", "gamma_dot", "r_dot", "initial_velocity",
                "initial_velocity_order", "initial_token_speed",
                "initial_token_speed_order", "terminal_law", "terminal_epsilon",
                "terminal_gamma_dot"]
        for key, (_, txt), (_, tex) in zip(keys, text, latex, strict=True):
            out[key] = txt if key == "terminal_law" else {"text": txt, "latex": tex}
        return out


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
    return _derive(get_scheme(scheme), attention)


@lru_cache(maxsize=128)
def _derive(s: Scheme, attention: str) -> Derivation:
    # The reduction is the one result everything else needs; a later step
    # that sympy cannot finish (ValueError, incl. the time budget) is
    # recorded as undecided instead of discarding what was derived.
    red = reduce(s, attention)
    v0, w0 = (_attempt(f, s, attention=attention)
              for f in (initial_velocity, initial_token_speed))
    term = _attempt(terminal, s, attention)
    if isinstance(term, str):
        term = Terminal("undecided", None, None, None, None, None, reason=term)
    return Derivation(s, red, v0, _order(v0), w0, _order(w0), term)


def _attempt(f, *args, **kwargs):
    """``f(...)``, or the reason it failed (a string)."""
    try:
        return f(*args, **kwargs)
    except ValueError as exc:
        return str(exc)
