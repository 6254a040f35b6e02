"""One arithmetic (symdyn.base.arithmetic): a member alone equals the batch on any CPU.

numpy's AVX-512 kernels round ``exp`` and ``power`` differently from libm, so
a path that calls ``math.exp`` or a Python float's ``**`` in one place and
numpy in another differs in the last bits on such a CPU and agrees on others.
These tests make every CPU look like one where numpy rounds differently:
numpy's ``exp``, ``log`` and ``power`` are replaced by versions one ulp off.
If both paths take every non-IEEE operation from numpy, they still agree bit
for bit; a path that bypasses numpy (the control) does not.
"""

from __future__ import annotations

import os
import platform
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import symdyn as sd
from symdyn.model import scheme as registry  # the home of the compiled laws
from symdyn.ode import control
from symdyn.reduced import compile as compiled


def _one_ulp_up(ufunc):
    def other_rounding(*args, **kwargs):
        return np.nextafter(ufunc(*args, **kwargs), np.inf)
    return other_rounding


def _perturb(monkeypatch):
    for name in ("exp", "log", "power"):
        monkeypatch.setattr(np, name, _one_ulp_up(getattr(np, name)))
    compiled.clear_caches()
    registry.clear_caches()


@pytest.fixture
def other_cpu(monkeypatch):
    """numpy whose exp, log and power round differently (as AVX-512's do)."""
    _perturb(monkeypatch)
    yield
    monkeypatch.undo()
    compiled.clear_caches()
    registry.clear_caches()


def _alone_and_batched(name, n, beta, gamma0, times=(0.5, 3.0, 40.0)):
    alone = sd.solve(name, n=n, beta=beta, gamma0=gamma0, r0=1.5, t=list(times))
    batch = sd.solve(name, n=[n, n + 3.0], beta=beta, gamma0=gamma0, r0=1.5, t=list(times))
    return alone, batch


@settings(max_examples=12, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])  # set once, kept
@given(name=st.sampled_from(sd.schemes()), n=st.floats(2, 64),
       beta=st.floats(0, 6), gamma0=st.floats(0, 0.9))
def test_alone_equals_batched_where_numpy_rounds_differently(other_cpu, name, n, beta,
                                                             gamma0):
    alone, batch = _alone_and_batched(name, n, beta, gamma0)
    assert np.array_equal(alone.log_epsilon, batch.log_epsilon[0])
    assert np.array_equal(alone.r, batch.r[0])


def test_control_a_libm_power_in_one_path_is_caught(other_cpu, monkeypatch):
    # the scalar path's step control with Python's ** (libm), as before:
    # numpy rounds power differently here, so the steps, and the bits, differ
    real = control.power
    monkeypatch.setattr(control, "power",
                        lambda x, y: x ** y if isinstance(x, float) else real(x, y))
    alone, batch = _alone_and_batched("pre-ln", 8.0, 1.0, 0.2)
    assert not np.array_equal(alone.log_epsilon, batch.log_epsilon[0])
    # and within the tolerance all the same: only the bits tell
    np.testing.assert_allclose(alone.log_epsilon, batch.log_epsilon[0], rtol=1e-9)


def test_control_the_perturbation_changes_the_answer(monkeypatch):
    # the bits the tests above compare do move when numpy rounds differently
    before, _ = _alone_and_batched("post-ln", 8.0, 1.0, 0.2)
    with monkeypatch.context() as patched:
        _perturb(patched)
        after, _ = _alone_and_batched("post-ln", 8.0, 1.0, 0.2)
    compiled.clear_caches()
    registry.clear_caches()
    assert not np.array_equal(before.log_epsilon, after.log_epsilon)


def test_float_code_has_no_power_operator():
    # a ** in compiled code is pow() on floats but x*x (or SIMD) on arrays
    import inspect
    for name in sd.schemes():
        system = compiled.stable_system(name)
        for f in system.rates("numpy") + [g for phase in system.laws("numpy") for g in phase]:
            assert "**" not in inspect.getsource(f), name


_SCRIPT = """
import numpy as np, symdyn as sd
for name in sd.schemes():
    for n, beta in ((3.0, 0.5), (17.0, 4.0)):
        one = sd.solve(name, n=n, beta=beta, gamma0=0.3, t=[0.5, 7.0, 90.0])
        two = sd.solve(name, n=[n, 5.0], beta=beta, gamma0=0.3, t=[0.5, 7.0, 90.0])
        assert np.array_equal(one.log_epsilon, two.log_epsilon[0]), name
        assert np.array_equal(one.r, two.r[0]), name
print("ok")
"""


@pytest.mark.skipif(platform.machine().lower() not in ("x86_64", "amd64"),
                    reason="the feature names are x86-64's")
def test_alone_equals_batched_with_simd_dispatch_switched_off():
    # numpy's baseline kernels instead of the CPU's best (AVX2 or AVX-512)
    env = dict(os.environ, NPY_DISABLE_CPU_FEATURES="X86_V3 X86_V4 AVX512_ICL AVX512_SPR")
    out = subprocess.run([sys.executable, "-c", _SCRIPT], env=env, capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr[-2000:]
