"""One arithmetic for arrays and for Python floats: numpy's ufuncs on both.

A member solved alone (:mod:`symdyn.ode.scalar`, Python floats) must equal the
same member solved in a batch (:mod:`symdyn.ode.integrate`, numpy arrays) bit
for bit, on every CPU. ``+ - * /`` and ``sqrt`` are correctly rounded
everywhere (IEEE 754), so they agree by themselves. Everything else does
not: numpy dispatches ``exp``, ``log``, ``power``... to SIMD kernels chosen
by the CPU (AVX-512 kernels round differently from libm), while ``math.exp``
and the ``**`` of a Python float call libm. And ``array ** 2`` is ``x*x``
in numpy while ``2.0 ** 2`` is ``pow``.

So both paths evaluate every non-IEEE operation with the *same numpy ufunc*
(which gives an element the same result whatever the length of its array,
0-d included):

* :class:`FloatPrinter` prints compiled code without ``**``: a power is
  ``power(b, e)`` (``numpy.power``), ``b**(1/2)`` is ``sqrt(b)`` and
  ``b**-1`` is ``1/b`` (both correctly rounded);
* :func:`on_floats` runs such compiled code on Python floats: the same code
  object, with each numpy or scipy function it names wrapped to return a
  Python float (so the arithmetic in between stays in fast Python floats);
* :func:`power` is the integrators' step-size power, for both paths.

``tests/base/test_arithmetic.py`` checks this on any CPU: with numpy's ``exp``
and ``power`` replaced by versions that round differently (as AVX-512's do),
a member alone still equals the batch, and the old ``math.exp`` path does not.

Layer 0, base.
"""

from __future__ import annotations

import math
import types
from collections.abc import Callable
from typing import SupportsFloat, overload

import numpy as np
import sympy as sp
from numpy.typing import ArrayLike
from sympy.printing.numpy import SciPyPrinter

try:        # the C function np.einsum calls: the same sums, without its Python wrapper
    from numpy._core.multiarray import c_einsum as einsum
except ImportError:                                     # pragma: no cover (numpy 1)
    einsum = np.einsum

__all__ = ["FloatPrinter", "all_finite", "einsum", "float_printer", "on_floats", "power",
           "row_norms"]


@overload
def power(x: float, y: float) -> float: ...
@overload
def power(x: np.ndarray | float, y: np.ndarray | float) -> np.ndarray | float: ...
def power(x: np.ndarray | float, y: np.ndarray | float) -> np.ndarray | float:
    """``x ** y`` by ``numpy.power`` for arrays and Python floats alike (a
    result of one or more dimensions is an array, any other a Python float)."""
    out = np.power(x, y)
    return out if isinstance(out, np.ndarray) and out.ndim else float(out)


def all_finite(x: ArrayLike) -> bool:
    """All of ``x`` finite: one sum (NaN and inf reach it; numpy's pairwise
    sum, no BLAS threads to wait for on a busy machine), and the elementwise
    test only where it is not finite (finite values may overflow the sum)."""
    return math.isfinite(np.add.reduce(x, axis=None)) or bool(np.isfinite(x).all())


def row_norms(x: np.ndarray) -> np.ndarray:
    """:math:`|x_k|` over the last axis of ``(m, n, d)`` arrays: one ``einsum``
    and a ``sqrt`` (``np.linalg.norm`` and a reduction over a short last axis
    cost 3x more)."""
    return np.sqrt(einsum("mnd,mnd->mn", x, x))


class FloatPrinter(SciPyPrinter):
    """scipy/numpy code with every power a call (no ``**`` operator)."""

    def _print_Pow(self, expr: sp.Pow, rational: bool = False) -> str:
        base, e = expr.base, expr.exp
        if e == sp.S.Half:
            return f"sqrt({self._print(base)})"
        if e == -sp.S.Half:
            return f"1/sqrt({self._print(base)})"
        if e == -1:
            return f"1/({self._print(base)})"
        exponent = self._print(sp.Float(e) if e.is_Number else e)
        return f"power({self._print(base)}, {exponent})"


def float_printer() -> FloatPrinter:
    """A :class:`FloatPrinter` with lambdify's own settings (bare names, resolved
    in the namespace lambdify builds from its modules)."""
    return FloatPrinter({"fully_qualified_modules": False, "inline": True,
                         "allow_unknown_functions": True, "user_functions": {}})


def _wrap(fn: Callable[..., SupportsFloat]) -> Callable[..., float]:
    def on_float(*args: object) -> float:
        return float(fn(*args))     # a 0-d result; anything else raises TypeError
    on_float.__name__ = getattr(fn, "__name__", "function")
    return on_float


def _from_numpy(fn: object) -> bool:
    module = getattr(fn, "__module__", None) or ""
    return isinstance(fn, np.ufunc) or module.split(".")[0] in ("numpy", "scipy")


def on_floats(f: types.FunctionType) -> types.FunctionType:
    """``f`` (lambdified with :class:`FloatPrinter`) for Python-float arguments.

    The same code object; each numpy/scipy callable it names returns a Python
    float, so ``exp`` is numpy's ``exp`` on a 0-d array, never ``math.exp``.
    """
    scope = dict(f.__globals__)
    for name in f.__code__.co_names:
        value = scope.get(name)
        if callable(value) and _from_numpy(value):
            scope[name] = _wrap(value)
    return types.FunctionType(f.__code__, scope, f.__name__, f.__defaults__)
