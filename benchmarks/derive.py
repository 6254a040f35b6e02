"""Cold time to derive everything for the six built-in schemes.

Run: ``python benchmarks/derive.py``. Each measurement runs in a fresh Python
process (nothing cached); the warm line re-derives in the same process to
show what the cache saves. Target (issue 2): cold under 10 s on 2 cores.
"""

import subprocess
import sys

CODE = """
import time
t0 = time.perf_counter()
import symdyn as sd
t1 = time.perf_counter()
for attention in {attentions!r}:
    for name in sd.schemes():
        sd.derive(name, attention)
t2 = time.perf_counter()
for attention in {attentions!r}:
    for name in sd.schemes():
        sd.derive(name, attention)
t3 = time.perf_counter()
print(t1 - t0, t2 - t1, t3 - t2)
"""


def cold(attentions):
    out = subprocess.run([sys.executable, "-c", CODE.format(attentions=attentions)],
                         check=True, capture_output=True, text=True).stdout
    return [float(x) for x in out.split()]


def main():
    target = 10.0
    print(f"{'what':<44}{'seconds':>10}{'target/time':>13}")
    for attentions in [("softmax",), ("softmax", "unnormalized")]:
        imp, first, again = min(cold(attentions) for _ in range(3))
        label = "+".join(attentions)
        print(f"{'import symdyn':<44}{imp:>10.3f}")
        print(f"{'derive all six, cold (' + label + ')':<44}{first:>10.3f}"
              f"{target / first:>13.1f}")
        print(f"{'derive all six, cached (' + label + ')':<44}{again:>10.4f}"
              f"{'':>13}  cold/cached = {first / max(again, 1e-9):.0f}x")


if __name__ == "__main__":
    main()
