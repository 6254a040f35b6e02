"""The how-to pages run as published: each page's Python blocks, in order, as
one script (in a fresh folder), print every line of the ``text`` blocks that
follow them, in order. A page states what its code prints; this holds it to it.

About 40 s in all (the cluster page starts a two-worker Dask LocalCluster).
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

HOWTO = Path(__file__).resolve().parents[2] / "docs" / "howto"
FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.S | re.M)


def blocks(text: str) -> tuple[str, list[str]]:
    """The page's Python code and the ``text`` blocks that follow a Python block."""
    code, expected, last = [], [], None
    for m in FENCE.finditer(text):
        lang, body = m.group(1), m.group(2)
        if lang == "python":
            code.append(body)
        elif lang == "text" and last == "python":
            expected.append(body)
        if lang in ("python", "") or (lang == "text" and last != "python"):
            last = lang
    return "\n".join(code), expected


def in_order(lines: list[str], output: str) -> list[str]:
    """The expected lines not found in ``output``, in order (each after the last found)."""
    out = output.splitlines()
    missing, i = [], 0
    for line in lines:
        j = next((k for k in range(i, len(out)) if out[k].rstrip() == line.rstrip()), None)
        if j is None:
            missing.append(line)
        else:
            i = j + 1
    return missing


PAGES = sorted(p for p in HOWTO.glob("*.md") if "```python" in p.read_text())


def test_the_pages_are_found():
    names = {p.stem for p in PAGES}
    assert {"compare", "table", "figure", "cluster", "design", "invent"} <= names


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.stem)
def test_howto_page_runs_and_prints_what_it_says(page, tmp_path):
    code, expected = blocks(page.read_text())
    script = tmp_path / f"{page.stem}.py"
    script.write_text(code)
    run = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True,
                         text=True, timeout=600)
    assert run.returncode == 0, f"{page.name}: exit {run.returncode}\n{run.stderr[-3000:]}"
    lines = [line for body in expected for line in body.splitlines() if line.strip()]
    missing = in_order(lines, run.stdout)
    assert not missing, f"{page.name}: not printed (in order): {missing}\n---\n{run.stdout}"


def test_the_comparison_catches_a_wrong_page():
    """Control: a page that claims another output fails the comparison."""
    page = ("```python\nprint(1 + 1)\n```\n\nprints\n\n```text\n3\n```\n"
            "```\nsymdyn table\n```\n\n```text\nnot python output\n```\n")
    code, expected = blocks(page)
    assert code.strip() == "print(1 + 1)" and expected == ["3\n"]
    assert in_order(["3"], "2\n") == ["3"]
    assert in_order(["a", "b"], "b\na\n") == ["b"]
