"""The shape of the package, measured from its source (the AST, nothing imported).

    python tests/layout.py        # prints the figures; tests/repo/test_layout.py asserts them

* **modules**: every ``.py`` file under ``symdyn/`` (a subpackage's
  ``__init__.py`` is a module);
* **arrows**: pairs (module, module it imports), each counted once, imports
  inside functions included; the top-level facade ``symdyn/__init__.py`` (it
  re-exports the public API) and ``__main__`` are left out, as is the
  deprecation shim ``_moved`` (it names every old module in a string table);
* **floors**: the number of modules on the longest import chain;
* **layers**: each subpackage's place (:data:`LAYERS`); an arrow may go to a
  lower layer or stay in its own subpackage, never up or sideways;
* **function lines**: the lines of a function's body without its docstring.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1] / "symdyn"

#: a subpackage's layer; modules at the package's top (cli) stand above all
LAYERS = {"base": 0, "model": 1, "ode": 1, "reduced": 2, "particles": 2, "meanfield": 2,
          "certify": 3,
          "studies": 3, "trained": 3, "output": 4, "cli": 5}
TOP = 5
FACADES = ("symdyn", "symdyn.__main__", "symdyn.cli.__main__", "symdyn._moved")


def modules(root: Path = ROOT) -> dict[str, Path]:
    """Dotted name -> file, for every module of the package."""
    out = {}
    for f in sorted(root.rglob("*.py")):
        parts = list(f.relative_to(root.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = f
    return out


def _targets(name: str, f: Path, node, mods) -> list[str]:
    package = name.split(".") if f.name == "__init__.py" else name.split(".")[:-1]
    if isinstance(node, ast.Import):
        found = [a.name for a in node.names]
    else:
        base = package[:len(package) - node.level + 1] if node.level else []
        target = ".".join(base + ([node.module] if node.module else []))
        found = [f"{target}.{a.name}" if f"{target}.{a.name}" in mods else target
                 for a in node.names]
    out = []
    for t in found:
        while t and t not in mods:
            t = t.rpartition(".")[0]
        if t and t != name:
            out.append(t)
    return out


def graph(root: Path = ROOT) -> dict[str, set[str]]:
    """Module -> the modules it imports (facades left out, see the module docstring)."""
    mods = modules(root)
    edges = {m: set() for m in mods if m not in FACADES}
    for m in edges:
        for node in ast.walk(ast.parse(mods[m].read_text())):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                edges[m].update(t for t in _targets(m, mods[m], node, mods) if t not in FACADES)
    return edges


def floors(edges: dict[str, set[str]]) -> tuple[int, list[tuple[str, ...]]]:
    """The longest chain's length in modules, and the cycles met on the way."""
    depth, cycles = {}, []

    def visit(m, stack):
        if m in stack:
            cycles.append(stack[stack.index(m):] + (m,))
            return 0
        if m not in depth:
            depth[m] = 1 + max((visit(t, stack + (m,)) for t in edges[m]), default=0)
        return depth[m]

    return max(visit(m, ()) for m in edges), cycles


def layer(module: str) -> tuple[int, str]:
    """(layer number, subpackage) of a module."""
    parts = module.split(".")
    sub = parts[1] if len(parts) > 2 or (len(parts) == 2 and parts[1] in LAYERS) else ""
    return (LAYERS[sub], sub) if sub in LAYERS else (TOP, "")


def wrong_way(edges: dict[str, set[str]]) -> list[tuple[str, str]]:
    """Arrows that go up a layer or sideways to a sibling subpackage."""
    bad = []
    for m, targets in edges.items():
        (lm, sm) = layer(m)
        for t in targets:
            (lt, st) = layer(t)
            if sm != st and lt >= lm:
                bad.append((m, t))
    return sorted(bad)


def function_lines(root: Path = ROOT) -> list[tuple[int, str]]:
    """(body lines without the docstring, 'module:function') for every function."""
    out = []
    for name, f in modules(root).items():
        for node in ast.walk(ast.parse(f.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                body = node.body
                if body and isinstance(body[0], ast.Expr) and isinstance(
                        getattr(body[0], "value", None), ast.Constant) and isinstance(
                        body[0].value.value, str):
                    body = body[1:]
                lines = body[-1].end_lineno - body[0].lineno + 1 if body else 0
                out.append((lines, f"{name}:{node.name}"))
    return sorted(out, reverse=True)


def module_lines(root: Path = ROOT) -> list[tuple[int, str]]:
    """(lines, module) for every module, longest first."""
    return sorted(((len(f.read_text().splitlines()), m) for m, f in modules(root).items()),
                  reverse=True)


def main() -> None:
    edges = graph()
    n_floors, cycles = floors(edges)
    subs = [m for m, f in modules().items() if f.name == "__init__.py" and m != "symdyn"]
    print(f"modules {len(modules())} (subpackages {len(subs)}), arrows "
          f"{sum(map(len, edges.values()))}, floors {n_floors}, cycles {len(cycles)}, "
          f"wrong-way arrows {len(wrong_way(edges))}")
    print("longest modules:", ", ".join(f"{m} {n}" for n, m in module_lines()[:5]))
    print("longest functions:", ", ".join(f"{m} {n}" for n, m in function_lines()[:5]))
    for a, b in wrong_way(edges):
        print("  wrong way:", a, "->", b)


if __name__ == "__main__":
    sys.exit(main())
