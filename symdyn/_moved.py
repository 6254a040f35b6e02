"""Old import paths (symdyn 0.1's flat modules) for one release, with a DeprecationWarning.

``import symdyn.registry`` and ``from symdyn import registry`` still give the
module, now :mod:`symdyn.model.registry`, and warn once per name. Public
submodules (``sd.init``, ``sd.weights``, ``sd.plot``, ``sd.symbols``) are not
deprecated. ``symdyn.particles`` is now the subpackage, which still exports
``Simulation`` and ``simulate``. Remove this module in the release after next.

Layer 5, the top (entry points).
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys
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

#: public submodules, imported as before without a warning
PUBLIC = ("init", "weights", "plot", "symbols")


def target(name: str):
    """The module an old name stands for, with the warning that it moved."""
    new = f"symdyn.{MOVED[name]}"
    if name not in PUBLIC:
        warnings.warn(f"symdyn.{name} moved to {new}; the old path goes in the next "
                      f"release", DeprecationWarning, stacklevel=3)
    return importlib.import_module(new)


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
