"""Plain-text formatting shared by the report and ``proofs_check``.

Layer 4, output.
"""

from __future__ import annotations


def markdown_table(header, rows) -> str:
    """A markdown table: ``header`` and each row are lists of cell texts.

    Examples
    --------
    >>> print(markdown_table(["a", "b"], [[1, 2]]), end="")
    | a | b |
    |---|---|
    | 1 | 2 |
    """
    lines = ["| " + " | ".join(header) + " |", "|---" * len(header) + "|"]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines) + "\n"
