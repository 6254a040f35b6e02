"""Layer 0, base: what every layer uses (argument checks, one arithmetic for
arrays and floats, time budgets for sympy, the version). Imports nothing of symdyn.
"""
