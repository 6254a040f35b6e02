import os
import sys

from hypothesis import HealthCheck, settings

TESTS = os.path.dirname(os.path.abspath(__file__))
# the helpers at tests/ (layout, direct, trained_helpers, busy) and the test
# modules of every folder (tests/<subpackage>/), importable by their names
for folder in sorted(os.listdir(TESTS), reverse=True):
    if os.path.isdir(os.path.join(TESTS, folder)) and folder not in ("reference", "__pycache__"):
        sys.path.insert(0, os.path.join(TESTS, folder))
sys.path.insert(0, TESTS)

# No wall clock: no per-example deadline, and the "too slow" health check
# (data generation timed against the clock) off, so a busy machine passes.
_UNTIMED = dict(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("default", **_UNTIMED)
settings.register_profile("ci", derandomize=True, **_UNTIMED)
settings.load_profile("ci" if os.environ.get("CI") else "default")
