"""Piecewise laws in t, phase by phase: where a ``Piecewise`` switches, the
branch that holds at a time, and a law compiled once per phase.

A scheme whose laws switch at times :math:`0 < b_1 < \\dots < b_m` (a
``Piecewise`` on ``t < b_i``) is integrated phase by phase,
:math:`[b_i, b_{i+1})` with :math:`b_0 = 0`, each phase with its own branch
compiled without a ``Piecewise``: no step ever evaluates a branch outside
its phase.

Layer 1, model.
"""

from __future__ import annotations

from functools import lru_cache

import sympy as sp

from ..base.arithmetic import float_printer, on_floats
from ..base.checks import shown
from .guards import NUMERIC_MODULES, lambdify
from .symbols import t


def piecewise_breakpoints(exprs) -> tuple[float, ...]:
    """Times ``> 0`` at which a ``Piecewise`` condition ``t < c`` switches
    (memoized: every solve asks again, and the walk of the trees is sympy's)."""
    return _breakpoints(tuple(exprs))


@lru_cache(maxsize=512)
def _breakpoints(exprs: tuple) -> tuple[float, ...]:
    points = set()
    for expr in exprs:
        for pw in expr.atoms(sp.Piecewise):
            for _, cond in pw.args:
                for rel in cond.atoms(sp.core.relational.Relational):
                    if rel.lhs == t and rel.rhs.is_number:
                        points.add(float(rel.rhs))
                    elif rel.rhs == t and rel.lhs.is_number:
                        points.add(float(rel.lhs))
                    else:    # a symbolic switch (t_switch="t_switch"): bind it first
                        what = ", ".join(sorted(map(str, rel.free_symbols - {t}))) or "scheme"
                        raise ValueError(f"{what}: cannot evaluate condition {rel}; t < number")
    return tuple(sorted(p for p in points if p > 0))


def branch_at(expr, time):
    """``expr`` with every ``Piecewise`` replaced by its branch that holds at
    ``time`` (a number, or ``oo`` for the branch that holds eventually)."""
    def pick(pw):
        for value, cond in pw.args:
            if cond == True or cond.subs(t, time) == True:  # noqa: E712
                return value
        raise ValueError(f"scheme: no branch of {pw} holds at t = {time}")
    return expr.replace(lambda e: isinstance(e, sp.Piecewise), pick)


def phase_branches(expr, breakpoints) -> list:
    """``expr`` with every ``Piecewise`` resolved, one per phase.

    Phase ``i`` is ``[b_i, b_{i+1})`` with ``b_0 = 0``; a step that ends on a
    breakpoint is evaluated with the branch of the phase it lies in.
    """
    edges = (0.0,) + tuple(breakpoints)
    inside = [(lo + hi) / 2 for lo, hi in zip(edges[:-1], edges[1:], strict=True)]
    inside.append(edges[-1] + 1.0)
    return [branch_at(expr, sp.nsimplify(x)) for x in inside]


def lambdify_phases(args, exprs, breakpoints, module: str = "numpy", *,
                    together: bool = False) -> list:
    """Per phase (see :func:`phase_branches`), ``exprs`` compiled as functions of
    ``args``: arrays against scipy and numpy (``module="numpy"``), the same
    code on Python floats (``"float"``, :func:`symdyn.base.arithmetic.on_floats`:
    the same numpy ufuncs, so the same bits), or ``"mpmath"``. A tuple of
    functions per phase; with ``together``, one function per phase that
    returns the list of values, common subexpressions computed once."""
    if module not in ("numpy", "float", "mpmath"):
        raise ValueError(f"module: must be 'numpy', 'float' or 'mpmath', got {shown(module)}")
    floats = module != "mpmath"
    # guards.lambdify: no undefined function, no Python builtins
    opts = (dict(modules=NUMERIC_MODULES, printer=float_printer()) if floats
            else dict(modules=module))
    done = on_floats if module == "float" else (lambda f: f)
    branches = [phase_branches(e, breakpoints) for e in exprs]
    if together:
        return [done(lambdify(args, list(phase), "scheme", cse=True, **opts))
                for phase in zip(*branches, strict=True)]
    return [tuple(done(lambdify(args, e, "scheme", **opts)) for e in phase)
            for phase in zip(*branches, strict=True)]
