"""symdyn: symbolic and numeric mathematics of normalized attention dynamics.

Examples
--------
>>> import symdyn as sd
>>> sd.terminal("post-ln").epsilon
C*exp(-2*t)
"""

from . import (
    certify,  # noqa: F401 (sd.certify; python-flint is needed on use)
    trained,  # noqa: F401 (sd.trained.load; the optional extra is needed on use)
)
from ._moved import MOVED, target
from ._moved import install as _install_moved
from .base.version import __version__  # noqa: F401  (the package's version)
from .meanfield import (
    MeanField,
    ZonalMeanField,
    critical_kappa,
    growth_rate,
    kuramoto_order,
    mean_field,
    mean_field_rates,
    mean_field_zonal,
)
from .model import symbols
from .model.registry import custom_scheme, scheme, schemes
from .model.scheme import Scheme
from .output import plot
from .output.rerun import load, rerun
from .particles import init, weights
from .particles.clusters import cluster_labels, energy, renyi_centres
from .particles.result import Simulation
from .particles.simulation import simulate
from .reduced.asymptotics import Terminal, terminal
from .reduced.compile import StableSystem, stable_system
from .reduced.configurations import configuration
from .reduced.equiangular import Reduction, reduce
from .reduced.forward_sensitivity import Sensitivity, sensitivity
from .reduced.initial import LeadingOrder, initial_token_speed, initial_velocity, leading_order
from .reduced.merge import merge_time
from .reduced.solve_crossing import crossing_time
from .reduced.solve_result import Trajectory
from .reduced.solver import solve
from .reduced.summary import Derivation, derive, table
from .studies.curves import compare
from .studies.event_times import locate_events
from .studies.inverse import Design, alpha_family, design
from .studies.sweeps import sweep

__all__ = [
    "Derivation", "Design", "LeadingOrder", "Reduction", "Scheme", "Simulation", "StableSystem",
    "alpha_family", "design",
    "Terminal", "Trajectory", "custom_scheme", "derive", "initial_token_speed", "initial_velocity",
    "init", "leading_order", "plot", "reduce", "scheme", "schemes", "Sensitivity", "sensitivity",
    "simulate", "solve", "table",
    "stable_system", "sweep", "symbols", "terminal", "weights",
    "MeanField", "ZonalMeanField", "critical_kappa", "growth_rate", "kuramoto_order",
    "mean_field", "mean_field_rates", "mean_field_zonal",
    "cluster_labels", "energy", "renyi_centres", "load", "rerun", "locate_events",
    "crossing_time", "compare", "configuration", "merge_time",
]


_install_moved()


def __getattr__(name: str):
    """``from symdyn import registry`` (symdyn 0.1's flat modules): the moved module, warned."""
    if name in MOVED:
        module = globals()[name] = target(name)    # warned once
        return module
    raise AttributeError(f"module 'symdyn' has no attribute {name!r}")
