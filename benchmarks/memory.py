"""Peak resident memory of the report (issue 34 item 4), beside the baseline and targets.

    .venv/bin/python benchmarks/memory.py            # the three runs below (~5-10 min)
    .venv/bin/python benchmarks/memory.py --cold     # also the quick run with an empty cache
    .venv/bin/python benchmarks/memory.py --only trained-quick
    .venv/bin/python benchmarks/memory.py --only full   # the whole report (~20-40 min)

Each run is ``symdyn report ...`` in its own subprocess, started by a small
Python wrapper that prints ``resource.getrusage(RUSAGE_CHILDREN).ru_maxrss``
once the report has exited: the peak resident set of that run alone
(memory-mapped weight pages that were read count; they are the page cache's).

* ``trained-quick``: the issue's command, ``--quick --no-figures
  --no-phase-diagram --no-verify --no-design`` (the trained models' section,
  4 sentences, the causal/noise section and the derivations); baseline 2.86 GB.
* ``quick``: the whole ``symdyn report --quick``; target 1 GB.
* ``trained-full``: the full report's trained section and the rest without
  figures, ``--no-figures --no-phase-diagram --no-verify --no-design``
  (12 sentences; the full report with figures takes ~20 min on 2 cores, and
  the figures are not the trained models' memory); target 2 GB.
* ``full`` (only with ``--only full``): the whole ``symdyn report``, every
  section and figure; target 2 GB.
* ``cold`` (with ``--cold``): ``trained-quick`` with an empty cache
  (``XDG_CACHE_HOME`` a new folder): the GGUF dequantized and written first.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SYMDYN = ROOT / ".venv" / "bin" / "symdyn"
NO_REST = ["--no-figures", "--no-phase-diagram", "--no-verify", "--no-design"]
GB = 1e9

#: name -> (report options, baseline bytes or None, target bytes)
RUNS = {
    "trained-quick": (["--quick", *NO_REST], 2.86 * GB, 1 * GB),
    "quick": (["--quick"], None, 1 * GB),
    "trained-full": (NO_REST, None, 2 * GB),
    "cold": (["--quick", *NO_REST], 2.86 * GB, 1 * GB),
    "full": ([], None, 2 * GB),
}

WRAPPER = """
import resource, subprocess, sys
status = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                        text=True)
if status.returncode:
    sys.stderr.write(status.stderr[-2000:])
print(status.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
"""


def peak(options, env=None) -> tuple[int, float, float]:
    """(exit status, peak RSS in bytes, seconds) of ``symdyn report OPTIONS``."""
    with tempfile.TemporaryDirectory() as out:
        start = time.perf_counter()
        done = subprocess.run([sys.executable, "-c", WRAPPER, str(SYMDYN), "report",
                               "--out", out, *options], capture_output=True, text=True,
                              env=env, check=False)
        seconds = time.perf_counter() - start
    if done.stderr:
        print(done.stderr, file=sys.stderr)
    code, kib = done.stdout.split()
    return int(code), int(kib) * 1024, seconds


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cold", action="store_true", help="also the quick run with an empty cache")
    ap.add_argument("--only", nargs="+", choices=list(RUNS), help="run only these")
    args = ap.parse_args()
    names = args.only or [n for n in RUNS if n not in ("cold", "full") or
                          (n == "cold" and args.cold)]
    print(f"{'run':>14} {'peak RSS':>10} {'baseline':>10} {'ratio':>7} {'target':>8} "
          f"{'within':>7} {'status':>7} {'time':>7}")
    for name in names:
        options, base, target = RUNS[name]
        with tempfile.TemporaryDirectory() as cache:
            env = dict(os.environ, XDG_CACHE_HOME=cache) if name == "cold" else None
            code, rss, seconds = peak(options, env)
        ratio = f"{rss / base:6.2f}x" if base else f"{'-':>7}"
        print(f"{name:>14} {rss / GB:8.2f}GB {f'{base / GB:.2f}GB' if base else '-':>10} "
              f"{ratio} {target / GB:6.1f}GB {'yes' if rss <= target else 'NO':>7} "
              f"{code:>7} {seconds:6.0f}s", flush=True)
    print("symdyn report " + " | ".join(f"{n}: {' '.join(RUNS[n][0])}" for n in names))


if __name__ == "__main__":
    main()
