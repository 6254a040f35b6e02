"""Old import paths (symdyn 0.1.0's flat modules), with a DeprecationWarning, until 0.3.0.

``import symdyn.registry`` and ``from symdyn import registry`` still work in
0.2.0 and warn once per name: the module is :mod:`symdyn.model.registry`, and
a name symdyn 0.1.0 held there that now lives elsewhere (``LayerRule`` in
:mod:`symdyn.model.scheme`) is found in its home (:data:`HOMES`). Public
submodules (``sd.init``, ``sd.weights``, ``sd.plot``, ``sd.symbols``) are not
deprecated. ``symdyn.particles`` is now the subpackage, which still exports
``Simulation`` and ``simulate``. This module is removed in symdyn 0.3.0.

Layer 5, the top (entry points).
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys
import types
import warnings

#: old module name -> its module now
MOVED = {
    "arithmetic": "base.arithmetic",
    "asymptotics": "reduced.asymptotics",
    "attention": "particles.attention",
    "budget": "base.budget",
    "checks": "base.checks",
    "compile": "reduced.compile",
    "curves": "studies.curves",
    "display": "model.display",
    "dop853": "ode.dop853",
    "equiangular": "reduced.equiangular",
    "executors": "studies.executors",
    "expressions": "model.expressions",
    "extrapolation": "ode.extrapolation",
    "figures": "output.figures",
    "formatting": "output.formatting",
    "forward_sensitivity": "reduced.forward_sensitivity",
    "grid": "studies.grid",
    "init": "particles.init",
    "integrate": "ode.integrate",
    "inverse": "studies.inverse",
    "law_limits": "model.law_limits",
    "log_clock": "model.log_clock",
    "merging": "particles.merging",
    "phase_diagram": "studies.phase_diagram",
    "plot": "output.plot",
    "progress": "studies.progress",
    "registry": "model.registry",
    "report": "output.report",
    "rosenbrock": "ode.rosenbrock",
    "scalar": "ode.scalar",
    "solver": "reduced.solver",
    "stiffness": "ode.stiffness",
    "summary": "reduced.summary",
    "sweeps": "studies.sweeps",
    "symbols": "model.symbols",
    "weights": "particles.weights",
}

#: old module -> where the names it held in 0.1.0 and its module now lacks live
HOMES = {
    "asymptotics": ("reduced.initial", "reduced.bounded"),
    "equiangular": ("base.checks",),
    "expressions": ("model.guards",),
    "figures": ("output.claims", "output.diagrams", "output.page"),
    "forward_sensitivity": ("reduced.variational",),
    "inverse": ("studies.optimize",),
    "law_limits": ("model.guards",),
    "registry": ("model.scheme", "model.piecewise", "model.law_checks", "model.parameters",
                 "model.guards"),
    "report": ("output.formatting",),
    "solver": ("reduced.solve_result", "reduced.solve_checks", "reduced.problem"),
    "sweeps": ("studies.grid", "studies.storage", "studies.runs"),
}

#: the release that removes the old paths
REMOVED_IN = "0.3.0"

#: public submodules, imported as before without a warning
PUBLIC = ("init", "weights", "plot", "symbols")


_OLD: dict[str, types.ModuleType] = {}


class OldModule(types.ModuleType):
    """symdyn 0.1.0's module ``symdyn.<old>``: the names of the module it moved
    to, then those of the homes (:data:`HOMES`) its other names moved to."""

    def __init__(self, old: str, module):
        super().__init__(f"symdyn.{old}", module.__doc__)
        self.__dict__["moved_to"] = module
        self.__dict__["homes"] = tuple(f"symdyn.{h}" for h in HOMES.get(old, ()))

    def __getattr__(self, attr: str):
        for home in (self.moved_to.__name__, *self.homes):
            module = importlib.import_module(home)
            if hasattr(module, attr):
                return getattr(module, attr)
        raise AttributeError(f"module {self.__name__!r} has no attribute {attr!r}")


def target(name: str):
    """The module an old name stands for, with the warning that it moved."""
    new = f"symdyn.{MOVED[name]}"
    if name in PUBLIC:
        return importlib.import_module(new)
    warnings.warn(f"symdyn.{name} moved to {new}; the old path is removed in symdyn "
                  f"{REMOVED_IN}", DeprecationWarning, stacklevel=3)
    if name not in _OLD:
        _OLD[name] = OldModule(name, importlib.import_module(new))
    return _OLD[name]


class _Alias(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds ``symdyn.<old>`` and loads it as the module it moved to."""

    def find_spec(self, fullname, path=None, target_=None):
        head, _, name = fullname.partition(".")
        if head != "symdyn" or name not in MOVED or f"symdyn.{name}" != fullname:
            return None
        return importlib.util.spec_from_loader(fullname, self)

    def create_module(self, spec):
        return target(spec.name.partition(".")[2])

    def exec_module(self, module):
        pass


def install() -> None:
    """Put the alias finder on ``sys.meta_path`` (once)."""
    if not any(isinstance(f, _Alias) for f in sys.meta_path):
        sys.meta_path.append(_Alias())
