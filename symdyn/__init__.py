"""symdyn: symbolic and numeric mathematics of normalized attention dynamics.

Examples
--------
>>> import symdyn as sd
>>> sd.terminal("post-ln").epsilon
C*exp(-2*t)
"""

__version__ = "0.1.0"

from . import init, plot, symbols, weights
from .asymptotics import (
    LeadingOrder,
    Terminal,
    initial_token_speed,
    initial_velocity,
    leading_order,
    terminal,
)
from .compile import StableSystem, stable_system
from .equiangular import Reduction, reduce
from .forward_sensitivity import Sensitivity, sensitivity
from .inverse import Design, alpha_family, design
from .particles import Simulation, simulate
from .registry import Scheme, custom_scheme, scheme, schemes
from .solver import Trajectory, solve
from .summary import Derivation, derive, table
from .sweeps import sweep

__all__ = [
    "Derivation", "Design", "LeadingOrder", "Reduction", "Scheme", "Simulation", "StableSystem",
    "alpha_family", "design",
    "Terminal", "Trajectory", "custom_scheme", "derive", "initial_token_speed", "initial_velocity",
    "init", "leading_order", "plot", "reduce", "scheme", "schemes", "Sensitivity", "sensitivity",
    "simulate", "solve", "table",
    "stable_system", "sweep", "symbols", "terminal", "weights",
]
