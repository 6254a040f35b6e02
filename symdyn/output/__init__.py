"""Layer 4, output: plots, the paper's figures, the report and its tables.
"""
