"""Layer 3, studies: what is built on solving and simulating (sweeps and their
cache, executors, grids, the phase diagram, schedule design).
"""
