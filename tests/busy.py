"""Run a command while busy processes hold the CPU: the suite on a loaded machine.

Usage: ``python tests/busy.py [--burners K] -- COMMAND ...`` (``make test-loaded``).

Starts ``K`` processes (default twice the cores: each core shared by the
test's own processes and two spinners, harder than another job would) that spin in
pure Python at the priority of the command itself (the caller's niceness, 0
from a shell), so that they compete for the cores as another job's processes
would; runs ``COMMAND``; then kills the burners whatever happens (the command
failing, Ctrl-C, SIGTERM; a burner whose parent was killed outright ends by
itself) and exits with the command's status. A test that asserts how long something took fails
here; one that bounds its work (iterations, evaluations, bytes, CPU time)
passes as it does on an idle machine.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import signal
import subprocess
import sys


def burn(parent: int) -> None:
    """Spin until killed (pure Python: one core, no memory), or until ``parent``
    is gone (killed with SIGKILL, it could not kill us)."""
    os.setpgrp()                  # not in the terminal's group: Ctrl-C reaches the parent only
    while os.getppid() == parent:
        for _ in range(1 << 20):
            pass


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--burners", type=int, default=2 * (os.cpu_count() or 1),
                        help="busy processes (default twice the cores)")
    parser.add_argument("command", nargs=argparse.REMAINDER,
                        help="the command to run, after --")
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("give the command to run after --")
    if args.burners < 0:
        parser.error("--burners must be >= 0")
    burners = [multiprocessing.Process(target=burn, args=(os.getpid(),), daemon=True)
               for _ in range(args.burners)]
    previous = signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    try:
        for b in burners:
            b.start()
        print(f"busy: {len(burners)} burner(s) {[b.pid for b in burners]} on "
              f"{os.cpu_count()} core(s); running {' '.join(command)}", flush=True)
        status = subprocess.call(command)
        return 128 - status if status < 0 else status     # killed by a signal: 128 + its number
    except KeyboardInterrupt:
        return 130
    finally:
        for b in burners:
            if b.pid is not None:
                b.kill()
        for b in burners:
            if b.pid is not None:
                b.join()
        signal.signal(signal.SIGTERM, previous)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
