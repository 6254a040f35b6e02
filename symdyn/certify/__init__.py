"""Layer 3, certify: enclosures proved in ball arithmetic (Arb, through
python-flint: ``pip install 'symdyn[certify]'``). Crossing times of the
reduced ODE by quadrature forms derived with sympy, or by a validated
Taylor integrator; certified orderings and region certificates by branch and
bound. Imports base, model and reduced; python-flint is imported on use.

Failures say what they are: ``ValueError`` for bad input (naming the
argument), ``NotCertifiable`` (a ``ValueError``) for a law Arb cannot evaluate
as an analytic function, ``Uncertified`` (an ``ArithmeticError``) when no
certificate was found within what was allowed (an enclosure wider than
``rel_width`` at ``max_prec`` bits, a quadrature or a Taylor step that does not
close): its message names what to raise (``max_prec=``, ``rel_width=``).
"""

from __future__ import annotations

_API = {"Enclosure": "arith", "crossing_time": "crossing", "gamma": "crossing",
        "order": "compare", "region": "compare", "Ordering": "compare", "Region": "compare",
        "NotCertifiable": "printer", "Uncertified": "taylor", "merge_time": "merge"}

__all__ = sorted(_API)


def __getattr__(name: str):
    """The API, imported on first use: python-flint is needed then, not before."""
    if name not in _API:
        raise AttributeError(f"module 'symdyn.certify' has no attribute {name!r}")
    import importlib
    try:
        module = importlib.import_module(f".{_API[name]}", __name__)
    except ModuleNotFoundError as exc:
        if exc.name != "flint":
            raise
        raise ModuleNotFoundError("symdyn.certify needs python-flint: "
                                  "pip install 'symdyn[certify]'", name="flint") from None
    return getattr(module, name)
