"""Saves that cannot lose (issue 46 item 3): a failed save leaves the old file.

A save checks every value first, writes a temporary file beside its target,
flushes it to disk and renames it over the target, so a reader never sees
half a file. Oracle: the old file's
result (it must still load, equal bit for bit) after a save that failed by
a bad value (a seed beyond the file's int32), by a full disk (ENOSPC raised
by the writer halfway) and by ``kill -9`` of the saving process halfway
through its write. Controls: the same saves without the fault replace the
file with the new result; the faults really strike mid-write (the
temporary file exists, part-written, when the process is killed).
"""

from __future__ import annotations

import errno
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from scipy.io import netcdf_file

import symdyn as sd

GRID = {"scheme": ["post-ln"], "n": [5], "d": [3], "beta": [1.0]}


def _table(seeds):
    return sd.sweep(GRID, t=[0.0, 1.0], seeds=seeds, executor="serial")


def _same_table(a, b):
    return list(a.columns) == list(b.columns) and all(
        a[c].to_numpy().tobytes() == b[c].to_numpy().tobytes()
        if a[c].dtype.kind in "biuf" else a[c].tolist() == b[c].tolist() for c in a.columns)


def _others(folder, name):
    return sorted(p.name for p in Path(folder).iterdir() if p.name != name)


def test_a_bad_value_leaves_the_old_file_as_it_was(tmp_path):
    path = tmp_path / "s.nc"
    old = _table([0, 1])
    old.save(path)
    before = path.read_bytes()
    bad = _table([2**33])                          # int64 seeds beyond the file's int32
    with pytest.raises(ValueError, match="seed has values beyond int32"):
        bad.save(path)
    assert path.read_bytes() == before and _same_table(sd.load(path), old)
    assert _others(tmp_path, "s.nc") == []         # no temporary file left
    new = _table([4])                              # control: a good save replaces it
    new.save(path)
    assert _same_table(sd.load(path), new) and not _same_table(sd.load(path), old)


def test_a_full_disk_mid_write_leaves_the_old_file(tmp_path, monkeypatch):
    path = tmp_path / "t.nc"
    old = sd.solve("post-ln", n=[8, 32], beta=1.0, gamma0=0.0, t=[0.0, 5.0])
    old.save(path)
    before = path.read_bytes()
    new = sd.solve("post-ln", n=[8, 32], beta=2.0, gamma0=0.0, t=[0.0, 5.0])
    write_data = netcdf_file._write_var_data
    calls = []

    def full_disk(self, name):                    # the second variable finds the disk full
        calls.append(name)
        if len(calls) == 2:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return write_data(self, name)

    monkeypatch.setattr(netcdf_file, "_write_var_data", full_disk)
    with pytest.raises(OSError) as info:
        new.save(path)
    assert info.value.errno == errno.ENOSPC and len(calls) == 2   # it struck mid-write
    assert path.read_bytes() == before
    back = sd.load(path)
    assert back.gamma.tobytes() == old.gamma.tobytes() and back.provenance == old.provenance
    assert _others(tmp_path, "t.nc") == []
    monkeypatch.setattr(netcdf_file, "_write_var_data", write_data)
    new.save(path)                                  # control: without the fault it replaces
    assert sd.load(path).gamma.tobytes() == new.gamma.tobytes() != old.gamma.tobytes()


CHILD = textwrap.dedent("""
    import sys
    import numpy as np
    from scipy.io import netcdf_file
    import symdyn as sd

    path = sys.argv[1]
    write_data = netcdf_file._write_var_data
    written = []

    def halfway(self, name):
        write_data(self, name)
        written.append(name)
        if len(written) == 3:                   # part of the file is on disk: wait to die
            self.fp.flush()
            sys.stdout.write("writing\\n")
            sys.stdout.flush()
            sys.stdin.read()

    netcdf_file._write_var_data = halfway
    tr = sd.solve("post-ln", n=np.arange(2.0, 400.0), beta=2.0, gamma0=0.0,
                  t=np.linspace(0.0, 5.0, 200))
    tr.save(path)
    sys.stdout.write("finished\\n")
""")


def test_kill_9_mid_write_leaves_the_old_file(tmp_path):
    path = tmp_path / "t.nc"
    old = sd.solve("post-ln", n=[8, 32], beta=1.0, gamma0=0.0, t=[0.0, 5.0])
    old.save(path)
    before = path.read_bytes()
    env = {**os.environ, "PYTHONPATH": str(Path(sd.__file__).parents[1])}
    child = subprocess.Popen([sys.executable, "-c", CHILD, str(path)], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, text=True, env=env)
    try:
        line = _readline(child, timeout=600)      # a hang guard only
        assert line == "writing\n"
        partial = _others(tmp_path, "t.nc")
        assert len(partial) == 1 and (tmp_path / partial[0]).stat().st_size > 0  # mid-write
        reader = sd.load(path)                    # a reader meanwhile sees the old file whole
        assert reader.gamma.tobytes() == old.gamma.tobytes()
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=60)
    finally:
        if child.poll() is None:
            child.kill()
        child.stdin.close()
        child.stdout.close()
    assert child.returncode == -signal.SIGKILL
    assert path.read_bytes() == before
    back = sd.load(path)
    assert back.gamma.tobytes() == old.gamma.tobytes() and back.provenance == old.provenance
    # control: the same child, not killed, replaces the file with its result
    done = subprocess.run([sys.executable, "-c", CHILD, str(path)], input="go\n",
                          capture_output=True, text=True, env=env, timeout=600)
    assert done.stdout.endswith("finished\n"), done.stderr
    assert sd.load(path).gamma.shape == (398, 200)


def _readline(child, timeout):
    """The child's next line, or a failure after ``timeout`` seconds (no hang)."""
    import selectors
    with selectors.DefaultSelector() as sel:
        sel.register(child.stdout, selectors.EVENT_READ)
        if not sel.select(timeout):
            raise AssertionError("the child never reached its write")
    return child.stdout.readline()


def test_a_save_keeps_the_permissions_a_new_file_gets(tmp_path):
    sim = sd.simulate("post-ln", sd.init.sphere(4, 3, seed=0), beta=1.0, t=[0.0, 1.0])
    sim.save(tmp_path / "a.nc")
    (tmp_path / "plain").write_bytes(b"")          # the oracle: open() under this umask
    assert (tmp_path / "a.nc").stat().st_mode & 0o777 == (tmp_path / "plain").stat().st_mode \
        & 0o777
    assert np.array_equal(sd.load(tmp_path / "a.nc").gamma, sim.gamma)


def test_a_save_through_a_symbolic_link_replaces_the_file_it_points_to(tmp_path):
    target = tmp_path / "data" / "t.nc"
    target.parent.mkdir()
    link = tmp_path / "link.nc"
    link.symlink_to(target)
    old = sd.solve("post-ln", n=8, beta=1.0, gamma0=0.0, t=[0.0, 1.0])
    old.save(link)
    assert link.is_symlink() and target.is_file()           # the link kept, the file written
    new = sd.solve("post-ln", n=8, beta=2.0, gamma0=0.0, t=[0.0, 1.0])
    new.save(link)
    assert link.is_symlink() and sd.load(target).gamma.tobytes() == new.gamma.tobytes()
    assert sorted(p.name for p in target.parent.iterdir()) == ["t.nc"]
