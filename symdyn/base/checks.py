"""Argument checks: one checker per rule, shared by every module.

Numbers (``number``, ``finite_array``, ``real_array``, ``integer``), output
times, the equiangular range of gamma0 (``check_gamma0``), attention kinds,
seeds, output paths (``writable_path``) and sizes against the machine's
memory (``memory``). Bad input raises ``ValueError`` naming the argument and
the allowed range.

Layer 0, base.
"""

from __future__ import annotations

import os
import stat
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from numbers import Real
from pathlib import Path
from typing import Any, Literal, TypeGuard, overload

import numpy as np
from numpy.typing import ArrayLike

#: A file or folder path as the checks take it.
StrPath = str | os.PathLike[str]


class BadInput(ValueError):
    """Input the caller can fix: an argument, a file or a path the library
    refuses. A ``ValueError`` (API users catch that), told apart from a
    ``ValueError`` that is a bug so the command line can exit 2 for one and 3
    for the other. The checks of this module raise it."""


def shown(value: object, limit: int = 60) -> str:
    """``repr(value)`` on one line, cut to ``limit`` characters (for error messages)."""
    text = " ".join(repr(value).split())
    return text if len(text) <= limit else text[:limit - 3] + "..."


def has_bool(value: object) -> bool:
    """A ``bool`` in ``value`` or in its nested lists and tuples (``[4, True]``,
    which numpy silently makes the integers ``[4, 1]``), or a boolean array
    among them (``[array([True, False]), array([0.3, 0.9])]``)."""
    if isinstance(value, (bool, np.bool_)):
        return True
    if isinstance(value, np.ndarray):
        return value.dtype.kind == "b"
    if not isinstance(value, (list, tuple)):
        return False
    kinds = set(map(type, value))                # one C loop over the list
    if bool in kinds or np.bool_ in kinds:
        return True
    return any(issubclass(k, (list, tuple, np.ndarray)) for k in kinds) and any(
        has_bool(x) for x in value if isinstance(x, (list, tuple, np.ndarray)))



def _real(x: object) -> TypeGuard[Real]:
    """One real number (Python, numpy, Fraction, mpmath or sympy), not a bool."""
    return isinstance(x, Real) and not isinstance(x, (bool, np.bool_))


def _numbers(value: object, name: str) -> np.ndarray:
    """``value`` as a float array of real numbers. Refused, with a ValueError
    naming ``name``: complex numbers, text, booleans (alone, in an array or in
    a list), and object arrays holding anything but real numbers (real
    numbers in object arrays, such as the mpmath values of ``solve(dps=)``,
    pass)."""
    try:
        raw = np.asarray(value)
    except (TypeError, ValueError):
        raise BadInput(f"{name}: expected real numbers, got {shown(value)}") from None
    kind = raw.dtype.kind
    if kind == "O" and all(_real(x) for x in raw.flat):
        try:
            return raw.astype(float)
        except (TypeError, ValueError, OverflowError):
            pass
    elif kind in "iuf" and not (isinstance(value, (list, tuple)) and has_bool(value)):
        return raw.astype(float)
    what = {"c": "complex numbers", "b": "booleans", "O": "objects", "U": "text",
            "S": "bytes", "i": "booleans", "u": "booleans", "f": "booleans"}.get(
        kind, raw.dtype.name)
    raise BadInput(f"{name}: expected real numbers, got {what}: {shown(value)}")


#: The smallest relative tolerance an integration may be asked for: 100
#: float64 epsilons (about 2.2e-14). Below it rounding, not the method,
#: sets the error, and the step size control would shrink steps for ever.
RTOL_FLOOR = 100 * float(np.finfo(np.float64).eps)


def tolerance(value: object, name: str, floor: float = 0.0) -> float:
    """A tolerance: one number in ``[floor, 1)`` (``(0, 1)`` when ``floor`` is 0)."""
    try:
        tol = finite_array(value, name)
    except ValueError:
        tol = None
    if tol is None or tol.ndim != 0 or not (floor <= tol < 1 and tol > 0):
        least = f", at least {floor:.3g}" if floor else ""
        why = " (100 float64 epsilons: below, rounding sets the error)" \
            if floor == RTOL_FLOOR else ""
        raise BadInput(f"{name} must be a number in (0, 1){least}{why}, "
                         f"got {shown(value)}")
    return float(tol)


#: The attention kinds: softmax, or the kernel with denominator n.
ATTENTIONS = ("softmax", "unnormalized")


def check_attention(attention: object) -> str:
    """``attention`` if it is one of :data:`ATTENTIONS`, else a ValueError naming it."""
    if not isinstance(attention, str) or attention not in ATTENTIONS:
        raise BadInput(f"attention: must be one of {ATTENTIONS}, got {shown(attention)}")
    return attention


def finite_array(value: object, name: str, low: float | None = None, low_open: bool = False, *,
                 inf: bool = False) -> np.ndarray:
    """``value`` as a float array, finite and ``>= low`` (``> low`` if ``low_open``);
    ``inf=True``: ``+inf`` entries pass too."""
    arr = _numbers(value, name)
    if not np.all(np.isfinite(arr) | (inf & (arr == np.inf))):
        raise BadInput(f"{name} must be finite{' or +inf' if inf else ''}, "
                         f"got {shown(value)}")
    if low is not None and (np.any(arr <= low) if low_open else np.any(arr < low)):
        rng = f"> {low}" if low_open else f">= {low}"
        raise BadInput(f"{name} must be {rng}, got {shown(value)}")
    return arr


def number(value: object, name: str, low: float | None = None, high: float | None = None, *,
           low_open: bool = False, high_open: bool = False) -> float:
    """``value`` as a float: one real, finite number in the interval, else a
    ``ValueError`` naming ``name`` and the interval (numpy scalars pass)."""
    try:
        x: np.ndarray | None = finite_array(value, name)
    except ValueError:
        x = None
    v = float(x) if x is not None and x.ndim == 0 else None
    if v is None or (low is not None and not (v > low if low_open else v >= low)) \
            or (high is not None and not (v < high if high_open else v <= high)):
        if high is None and low is not None:
            span = f"{'>' if low_open else '>='} {low:g}"
        elif low is None and high is not None:
            span = f"{'<' if high_open else '<='} {high:g}"
        else:
            span = (f"in {'(' if low_open else '['}{'-inf' if low is None else f'{low:g}'}, "
                    f"{'inf' if high is None else f'{high:g}'}{')' if high_open else ']'}")
        raise BadInput(f"{name} must be a finite number {span}, got {shown(value)}")
    return v


def inverse_noise(kappa: object, name: str = "kappa") -> float | None:
    """The inverse noise level: ``None`` (no noise) for ``None`` or ``+inf``
    (``dX = v dt + sqrt(2/kappa) dW``: kappa = inf is the noiseless flow),
    else a finite number > 0 (a ``ValueError`` naming ``name`` otherwise)."""
    try:
        if kappa is None or (_real(kappa) and float(kappa) == np.inf):
            return None
    except OverflowError:                       # 10**400: not a float
        pass
    try:
        return number(kappa, name, 0, low_open=True)
    except ValueError:
        raise BadInput(f"{name} must be a number > 0, or None or inf (no noise), "
                         f"got {shown(kappa)}") from None


def real_array(value: object, name: str) -> np.ndarray:
    """``value`` as a finite float array (a finite float64 array is not copied);
    complex, text, boolean or non-finite entries are a one-line ``ValueError``."""
    if isinstance(value, np.ndarray) and value.dtype == np.float64 and np.isfinite(value).all():
        return value
    try:
        return finite_array(value, name)
    except ValueError:
        raise BadInput(f"{name}: expected real, finite numbers (not complex, text, "
                         f"booleans, nan or inf)") from None


def check_gamma0(gamma0: ArrayLike, n: ArrayLike, name: str = "gamma0") -> None:
    """Refuse a starting cosine outside the equiangular range
    :math:`[-1/(n-1), 1]` (arrays broadcast; the first bad member is named)."""
    g, nn = np.broadcast_arrays(np.asarray(gamma0, dtype=float), np.asarray(n, dtype=float))
    lower = -1 / (nn - 1)
    bad = (g > 1) | (g < lower)
    if np.any(bad):
        i = np.flatnonzero(bad.ravel())[0]
        raise BadInput(f"{name} must lie in [-1/(n-1), 1] = [{lower.ravel()[i]:.6g}, 1] "
                         f"for n = {float(nn.ravel()[i]):g}; got {shown(float(g.ravel()[i]))}")


def rng(seed: Any) -> np.random.Generator:
    """``numpy.random.default_rng(seed)``; a seed it cannot use is a ValueError."""
    try:
        return np.random.default_rng(seed)
    except (TypeError, ValueError):
        raise BadInput(f"seed must be None or an integer >= 0, got {shown(seed)}") from None


def is_real(value: object) -> TypeGuard[int | float | np.integer | np.floating]:
    """A Python or numpy int or float, not a ``bool``."""
    return isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, bool)


def is_integer(value: object) -> TypeGuard[int | np.integer]:
    """An ``int`` or numpy integer, not a ``bool``."""
    return isinstance(value, (int, np.integer)) and not isinstance(value, bool)


@overload
def integer(value: object, name: str, low: int, *, optional: Literal[False] = False,
            none_means: str = "") -> int: ...
@overload
def integer(value: object, name: str, low: int, *, optional: bool,
            none_means: str = "") -> int | None: ...
def integer(value: object, name: str, low: int, *, optional: bool = False,
            none_means: str = "") -> int | None:
    """``value`` as an ``int >= low``; ``None`` passes (returned) when ``optional``."""
    if optional and value is None:
        return None
    if not is_integer(value) or value < low:
        what = f"None{none_means} or an integer" if optional else "an integer"
        raise BadInput(f"{name} must be {what} >= {low}, got {shown(value)}")
    return int(value)


def output_times(t: object, most: int | None = None, cost: str = "") -> np.ndarray:
    """Output times: a non-empty 1-D array, ``>= 0``, strictly increasing.

    ``most``: refuse more times than this (counted before anything is
    converted), with ``cost`` (what one output time costs) in the message.
    """
    count = (len(t) if isinstance(t, (list, tuple, range)) else
             np.size(t) if isinstance(t, np.ndarray) else 1)
    if most is not None and count > most:
        raise BadInput(f"t: {count:,} output times, more than the {most:,} allowed"
                         f"{f' ({cost})' if cost else ''}; ask for fewer times")
    times = finite_array(t, "t", 0.0)
    times = np.atleast_1d(times)
    if times.ndim != 1 or times.size == 0:
        raise BadInput("t must be a non-empty 1-D array of times >= 0")
    if np.any(np.diff(times) <= 0):
        raise BadInput("t must be strictly increasing")
    return times


def address_space() -> tuple[int, int] | None:
    """``(room, limit)``: the bytes this process may still map under its
    address-space limit ``RLIMIT_AS`` (the limit less the current virtual
    size, from ``/proc/self/statm`` where there is one) and the limit
    itself; ``None`` without a limit."""
    try:
        import resource

        limit = resource.getrlimit(resource.RLIMIT_AS)[0]
    except (ImportError, AttributeError, ValueError, OSError):
        return None
    if limit == resource.RLIM_INFINITY or limit < 0:
        return None
    try:
        with open("/proc/self/statm") as f:
            used = int(f.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        used = 0
    return max(limit - used, 0), limit


def memory(nbytes: float, what: str) -> None:
    """Refuse a workspace of ``nbytes`` beyond half of the machine's memory,
    or beyond half of what the process's address-space limit (``RLIMIT_AS``,
    ``ulimit -v``) still leaves it (:func:`address_space`).

    Raises ``ValueError`` naming ``what`` and the estimate before anything is
    allocated (a ``MemoryError`` would come after minutes of work, or never).
    """
    need = f"{what}: needs about {nbytes / 2**30:.3g} GiB"
    space = address_space()
    if space is not None and nbytes > space[0] / 2:
        raise BadInput(f"{need}, more than half of the {space[0] / 2**30:.3g} GiB this "
                         f"process may still allocate (its address-space limit RLIMIT_AS "
                         f"is {space[1] / 2**30:.3g} GiB); make it smaller")
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):  # not POSIX: no check
        return
    if nbytes > total / 2:
        raise BadInput(f"{need}, more than half of this machine's {total / 2**30:.3g} "
                         f"GiB; make it smaller")


def writable_path(path: StrPath, name: str, *, folder: bool = False,
                  regular: bool = False) -> Path:
    """Check, before any work starts, that ``path`` can be written.

    ``folder=True``: ``path`` is (or will be) a directory; otherwise a file
    whose parent directory is created if missing. An existing FIFO, socket
    or block device is refused unopened (opening a FIFO blocks); with
    ``regular=True`` (a file replaced by renaming another over it) anything
    but a regular file is. Returns a ``Path``.
    """
    p = _path(path, name)
    target = p if folder else p.parent
    if folder and p.exists() and not p.is_dir():
        raise BadInput(f"{name}: {shown(str(p), 200)} exists and is not a folder")
    if not folder and p.is_dir():
        raise BadInput(f"{name}: {shown(str(p), 200)} is a folder, expected a file")
    if not folder:
        _not_special(p, name, regular)   # a FIFO would block the probe below
    try:
        target.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise BadInput(f"{name}: cannot create {shown(str(target), 200)} "
                         f"({exc.strerror})") from None
    try:  # a real probe: permission bits say nothing for root or read-only mounts
        with tempfile.TemporaryFile(dir=target):
            pass
        if not folder and p.exists():
            os.close(os.open(p, os.O_WRONLY | os.O_APPEND | os.O_NONBLOCK))
    except OSError as exc:
        raise BadInput(f"{name}: cannot write to {shown(str(p if p.exists() else target), 200)} "
                         f"({exc.strerror})") from None
    return p


def _kind(mode: int) -> str:
    for test, what in ((stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a FIFO (named pipe)"),
                       (stat.S_ISSOCK, "a socket"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device")):
        if test(mode):
            return what
    return "not a regular file"


def _not_special(p: Path, name: str, regular: bool) -> None:
    """Refuse an existing ``p`` that is a FIFO, a socket or a block device
    (``regular``: anything but a regular file; symbolic links followed)."""
    try:
        mode = os.stat(p).st_mode
    except OSError:
        return                          # missing; else the write probe names the reason
    if not stat.S_ISREG(mode) and (regular or not stat.S_ISCHR(mode)):
        raise BadInput(f"{name}: {shown(str(p), 200)} is {_kind(mode)}, "
                         f"expected a regular file")


def _path(path: StrPath | None, name: str) -> Path:
    """``path`` as a ``Path``; None, a blank string or a non-path is a
    ValueError naming ``name``."""
    if path is None or (isinstance(path, str) and not path.strip()):
        raise BadInput(f"{name}: expected a path, got {shown(path, 200)}")
    try:
        return Path(path)
    except TypeError:
        raise BadInput(f"{name}: expected a path, got {shown(path, 200)}") from None


def regular_file(path: StrPath, name: str) -> Path:
    """``path`` as a ``Path`` if it names an existing regular file (symbolic
    links followed); a folder, a FIFO, a socket or a device is a ValueError
    naming it, found without opening it (opening a FIFO blocks); a missing
    file is ``FileNotFoundError``."""
    p = _path(path, name)
    mode = os.stat(p).st_mode                   # FileNotFoundError names the file
    if not stat.S_ISREG(mode):
        raise BadInput(f"{name}: {shown(str(p), 200)} is {_kind(mode)}, "
                         f"expected a regular file")
    return p


def read_regular(path: StrPath, name: str) -> bytes:
    """The bytes of the regular file at ``path``: opened without blocking and
    checked on the open descriptor (a FIFO swapped in after a check is still
    refused, never waited on); anything else as :func:`regular_file` says."""
    p = regular_file(path, name)
    fd = os.open(p, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise BadInput(f"{name}: {shown(str(p), 200)} is {_kind(mode)}, "
                             f"expected a regular file")
        with os.fdopen(fd, "rb", closefd=False) as f:
            return f.read()
    finally:
        os.close(fd)


@contextmanager
def naming(path: StrPath) -> Iterator[None]:
    """Give an ``OSError`` raised inside the file it concerns: a full disk
    (``ENOSPC``, ``EDQUOT``) fails at ``write`` or ``close`` with no file
    name, and the command line then names the file (``cannot write
    report/README.md (No space left on device)``) instead of calling it a bug."""
    try:
        yield
    except OSError as exc:
        if exc.filename is None and exc.errno is not None:
            exc.filename = str(path)
        raise
