"""The markdown report: every scheme's derived formulas, in LaTeX.

``write_report(out)`` writes ``out/README.md`` and returns its path. Later
sections (figures, verdicts) are appended by the pieces that compute them.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from .schemes import schemes
from .summary import derive

_INTRO = """\
# symdyn report

Derived by `symdyn report` (symdyn {version}). Every formula below comes out of
the symbolic reduction of the n-particle vector field to an equiangular
configuration (`sd.reduce`), not from a table: see `symdyn/equiangular.py`.

Notation: $\\gamma$ is the common cosine similarity, $r$ the token norm, $n$ the
number of tokens, $\\beta$ the inverse temperature, $a = \\langle A_k,\\theta_k\\rangle$,
$A_{{norm}} = |A_k|$; the initial values are at an orthogonal start
($\\gamma_0 = 0$, $r_0 = 1$); $C$ is a free constant; softmax attention.
"""


def scheme_section(name: str, attention: str = "softmax") -> str:
    """One scheme's derivation as a markdown section."""
    d = derive(name, attention)
    params = "".join(f", {k} = `{v}`" for k, v in d.scheme.params)
    lines = [f"## {d.scheme.name}{params}", ""]
    for label, tex in d.rows("latex"):
        if label.strip().startswith("order") or label == "terminal law":
            lines.append(f"- {label.strip()}: " +
                         (f"**{tex}**" if label == "terminal law" else f"${tex}$"))
        else:
            lines += [f"- {label}:", "", "$$", tex, "$$", ""]
    return "\n".join(lines) + "\n"


def write_report(out: str | Path,
                 progress: Callable[[str], None] | None = None) -> Path:
    """Write ``out/README.md`` with every built-in scheme's derivation."""
    from . import __version__

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    parts = [_INTRO.format(version=__version__)]
    for name in schemes():
        if progress:
            progress(f"deriving {name}")
        parts.append(scheme_section(name))
    path = out / "README.md"
    path.write_text("\n".join(parts))
    return path
