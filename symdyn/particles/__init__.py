"""Layer 2, particles: the n-particle witness (attention, weights, initial
conditions, merging, ``simulate``: its field, continuous run, layer loop,
result and argument checks). Imports model, ode and base.

Layer 2, particles.
"""

# symdyn 0.1's module symdyn.particles held these two
from .result import Simulation
from .simulation import simulate

__all__ = ["Simulation", "simulate"]
