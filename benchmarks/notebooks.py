"""How long each notebook takes to execute, beside its budget.

Run: ``python benchmarks/notebooks.py [NAME ...]`` (default: every notebook
in ``notebooks/``). Each notebook runs in a fresh kernel as in
``tests/repo/test_notebooks.py`` (which only checks that it runs, with a cell
timeout as a hang guard). Printed per notebook: the wall time, the kernel's
CPU time (its process's user + system time, read once it has exited), the
budget (120 s, the bound the test suite once asserted) and wall / budget; a
ratio above 1 is a notebook to make lighter. Wall time depends on the load of
the machine, CPU time much less: compare the two when a ratio is high.
"""

import argparse
import resource
import sys
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient

FOLDER = Path(__file__).resolve().parents[1] / "notebooks"
BUDGET = 120.0        # seconds per notebook (2 cores)


def children_cpu() -> float:
    """User + system seconds of the exited child processes (the kernels)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run(path: Path) -> tuple[float, float]:
    """(wall, kernel CPU) seconds of executing ``path`` in a fresh kernel."""
    book = nbformat.read(path, as_version=4)
    cpu, start = children_cpu(), time.perf_counter()
    NotebookClient(book, timeout=600, kernel_name="python3",
                   resources={"metadata": {"path": str(path.parent)}}).execute()
    return time.perf_counter() - start, children_cpu() - cpu


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", help="notebooks (stems) to run; default all")
    args = parser.parse_args(argv)
    paths = sorted(FOLDER.glob("*.ipynb"))
    if args.names:
        known = {p.stem: p for p in paths}
        unknown = sorted(set(args.names) - set(known))
        if unknown:
            parser.error(f"unknown notebook(s) {', '.join(unknown)}; "
                         f"choose among {', '.join(known)}")
        paths = [known[n] for n in args.names]
    print(f"{'notebook':24} {'wall s':>8} {'kernel CPU s':>13} {'budget s':>9} {'wall/budget':>12}")
    over = 0
    for path in paths:
        wall, cpu = run(path)
        over += wall > BUDGET
        print(f"{path.stem:24} {wall:8.1f} {cpu:13.1f} {BUDGET:9.0f} {wall / BUDGET:12.2f}",
              flush=True)
    print(f"{over} of {len(paths)} over the budget")
    return 0


if __name__ == "__main__":
    sys.exit(main())
