import os
import sys

from hypothesis import HealthCheck, settings

sys.path.insert(0, os.path.dirname(__file__))

# No wall clock: no per-example deadline, and the "too slow" health check
# (data generation timed against the clock) off, so a busy machine passes.
_UNTIMED = dict(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("default", **_UNTIMED)
settings.register_profile("ci", derandomize=True, **_UNTIMED)
settings.load_profile("ci" if os.environ.get("CI") else "default")
