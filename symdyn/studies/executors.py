"""Where sweep tasks run: in this process, on local processes, or on Dask.

Every backend has one method, ``run(fn, tasks, on_result)``: it evaluates
``fn(task)`` for every task and calls ``on_result(i, value)`` in this process,
once per task, as results arrive (in any order). Nothing else differs between
them, so a sweep is the same code on a laptop and on a cluster.

* :class:`Serial` runs the tasks here, in order (debugging, tests).
* :class:`Local` runs them on a pool of local processes, started by
  :func:`start_method` (``spawn`` unless the caller chose another method
  with ``multiprocessing.set_start_method``: a script needs the usual
  ``if __name__ == "__main__":`` guard). A worker that dies breaks the
  pool; the pool is then rebuilt and only the unfinished tasks are submitted
  again (at most ``restarts`` times). Workers ignore Ctrl-C (the parent handles
  it and stops them) and die with their parent, so a killed sweep leaves no
  orphaned processes.
* :class:`Dask` submits them to a ``dask.distributed`` cluster. The scheduler
  reruns the tasks of a lost worker; results come back once per task.

``on_result`` may raise (an interrupt, a full disk): the remaining work is
cancelled (local workers are stopped without waiting) and the exception
propagates.

Layer 3, studies.
"""

from __future__ import annotations

import concurrent.futures as cf
import gc
import multiprocessing
import os
import signal
import sys
import threading
import time

from ..base.checks import integer, shown

#: At most this many local workers per core.
WORKERS_PER_CORE = 4


class Serial:
    """Run the tasks in this process, one after the other."""

    def run(self, fn, tasks, on_result):
        for i, task in enumerate(tasks):
            on_result(i, fn(task))


_LIMIT = []


def _die_with_parent():
    """End this process when its parent dies: ``PR_SET_PDEATHSIG`` on Linux,
    elsewhere a daemon thread that watches ``os.getppid()``."""
    parent = os.getppid()
    if sys.platform.startswith("linux"):
        try:
            import ctypes

            libc = ctypes.CDLL(None, use_errno=True)
            if libc.prctl(1, int(signal.SIGKILL), 0, 0, 0) == 0:       # 1: PR_SET_PDEATHSIG
                if os.getppid() != parent:                     # died before prctl
                    os._exit(1)
                return
        except (OSError, AttributeError):
            pass

    def watch():
        while os.getppid() == parent:
            time.sleep(0.5)
        os._exit(1)

    threading.Thread(target=watch, daemon=True).start()


def _worker_init(threads):
    """Pool initializer: die with the parent, leave Ctrl-C to the parent, and
    use at most ``threads`` BLAS/OpenMP threads.

    Without the thread limit every worker's BLAS starts a thread per core, and
    two workers on two cores run Kaiming-weight sweeps slower than one
    (measured: 2.2x).
    """
    from threadpoolctl import threadpool_limits

    _die_with_parent()
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _LIMIT.append(threadpool_limits(limits=threads))     # kept: the limit persists


def workers_count(workers):
    """``workers`` checked: ``None`` (all cores) or an integer in ``[1, 4 x cores]``."""
    cores = os.cpu_count() or 1
    cap = WORKERS_PER_CORE * cores
    workers = integer(workers, "workers", 1, optional=True, none_means=" (all cores)")
    if workers is not None and workers > cap:
        raise ValueError(f"workers must be None or an integer in [1, {cap}] "
                         f"({WORKERS_PER_CORE} x {cores} cores), got {shown(workers)}")
    return cores if workers is None else workers


def start_method() -> multiprocessing.context.BaseContext:
    """The context local workers start in: the one the caller chose with
    ``multiprocessing.set_start_method``, else the platform's default, except
    that ``fork`` becomes ``spawn``. A forked worker inherits every lock the
    parent's threads held at the fork (a library's, BLAS's, an import lock)
    and may wait on one for ever; a spawned one starts a fresh interpreter,
    as on macOS and Windows, and imports symdyn afresh (a second or two of
    CPU per worker and sweep). (Not ``forkserver``: its workers are the
    server's children, so they could not die with the sweep's process.)"""
    chosen = multiprocessing.get_start_method(allow_none=True)
    if chosen is None:
        default = multiprocessing.get_all_start_methods()[0]
        chosen = "spawn" if default == "fork" else default
    return multiprocessing.get_context(chosen)


class Local:
    """A pool of ``workers`` local processes (default: all cores), each with
    ``cores // workers`` BLAS threads (at least one)."""

    def __init__(self, workers=None, restarts=3):
        self.workers = workers_count(workers)
        self.restarts = restarts

    def _pool(self):
        threads = max(1, (os.cpu_count() or 1) // self.workers)
        return cf.ProcessPoolExecutor(self.workers, mp_context=start_method(),
                                      initializer=_worker_init, initargs=(threads,))

    def run(self, fn, tasks, on_result):
        todo = set(range(len(tasks)))
        for attempt in range(self.restarts + 1):
            order = sorted(todo)

            def delivered(j, value, order=order):
                todo.discard(order[j])
                on_result(order[j], value)

            pool = self._pool()
            try:           # BrokenProcessPool from a result if a worker died
                _OwnPool(pool).run(fn, [tasks[i] for i in order], delivered)
                return
            except cf.process.BrokenProcessPool:
                if attempt == self.restarts:
                    raise
            finally:
                pool.shutdown(wait=True)


class Pool:
    """A ``concurrent.futures.Executor`` the caller owns (kept open; no restarts)."""

    def __init__(self, executor):
        self.executor = executor

    def run(self, fn, tasks, on_result):
        futures = {self.executor.submit(fn, task): i for i, task in enumerate(tasks)}
        try:
            for fut in cf.as_completed(futures):
                on_result(futures[fut], fut.result())
        except BaseException:
            self.abandon(futures)
            raise

    def abandon(self, futures):
        """Drop the unfinished work (the executor stays open)."""
        for fut in futures:
            fut.cancel()


class _OwnPool(Pool):
    """A pool of :class:`Local`: unfinished work is dropped by killing its workers,
    so nothing waits for running tasks (the broken pool fails the futures)."""

    def abandon(self, futures):
        for proc in list((getattr(self.executor, "_processes", None) or {}).values()):
            proc.kill()


#: Seconds a scheduler address gets for all of :func:`probe_scheduler`
#: (resolving the host, connecting, the first bytes of the handshake, and for a
#: silent peer the HTTP question): one deadline, so no address takes longer.
PROBE_SECONDS = 4.0
#: The part of it kept for asking a silent peer whether it speaks HTTP (at most).
HTTP_SECONDS = 1.0
#: The first frame a Dask listener sends (its handshake) is a few hundred bytes.
_HANDSHAKE_BYTES = 2**24


def _host_port(rest, address):
    """``(host, port)`` of the ``host:port`` part of a TCP address (port 8786 if
    none, as Dask's scheduler)."""
    if rest.startswith("["):                   # [::1]:8786
        host, _, port = rest[1:].partition("]")
        port = port[1:]
    else:
        host, _, port = rest.rpartition(":") if ":" in rest else (rest, "", "")
    port = port or "8786"
    if not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(f"scheduler: expected an address such as 'tcp://host:8786', "
                         f"got {shown(address)}")
    return host, int(port)


def _resolve(address, host, port, seconds, wait=None):
    """``getaddrinfo`` within ``wait`` (default ``seconds``, the probe's budget
    named in the message; a dead DNS server would take 30 s or more)."""
    import socket

    box = []

    def look_up():
        try:
            box.append(socket.getaddrinfo(host, port, type=socket.SOCK_STREAM))
        except OSError as e:
            box.append(e)

    resolver = threading.Thread(target=look_up, daemon=True)
    resolver.start()
    resolver.join(seconds if wait is None else wait)
    if not box:
        raise ValueError(f"scheduler: cannot reach {address}: {shown(host)} did not resolve "
                         f"within {seconds:g} s")
    if isinstance(box[0], OSError):
        raise ValueError(f"scheduler: cannot reach {address}: cannot resolve {shown(host)} "
                         f"({box[0].strerror or box[0]})")
    return box[0]


def _connect(address, infos, seconds, left):
    """A socket connected to one of ``infos``, each attempt within ``left()``
    (what is left of the probe's ``seconds``)."""
    import socket

    error = None
    for family, kind, proto, _, where in infos:
        sock = socket.socket(family, kind, proto)
        sock.settimeout(left())
        try:
            sock.connect(where)
            return sock
        except OSError as e:
            sock.close()
            error = (f"no answer within {seconds:g} s" if isinstance(e, TimeoutError)
                     else e.strerror or str(e))
    raise ValueError(f"scheduler: cannot reach {address}: {error}")


def _receive(sock, n, wait):
    """Up to ``n`` bytes (fewer if the peer closes): ``(data, timed_out)``;
    each read waits at most ``wait()`` seconds (a deadline's remainder)."""
    data = b""
    try:
        while len(data) < n:
            sock.settimeout(wait())
            chunk = sock.recv(n - len(data))
            if not chunk:
                break
            data += chunk
    except TimeoutError:
        return data, True
    except OSError:                              # reset
        pass
    return data, False


def _speaks_http(sock, seconds) -> bool:
    """Whether a silent peer answers an HTTP request, each wait within
    ``seconds()`` (a web server, such as Dask's dashboard, waits for one)."""
    try:
        sock.settimeout(seconds())
        sock.sendall(b"HEAD / HTTP/1.0\r\n\r\n")
    except OSError:
        return False
    return _receive(sock, 5, seconds)[0] == b"HTTP/"


def probe_scheduler(address: str, seconds: float | None = None) -> None:
    """Check in seconds, before any Dask client waits on it, that ``address``
    looks like a Dask scheduler's: the host resolves, the port accepts a TCP
    connection, and (plain TCP) the peer speaks first with a plausible frame,
    as a Dask listener does with its handshake. A closed port, an unknown
    host, a peer that never answers, or one that answers in another protocol
    (an HTTP server, SSH) is a ``ValueError`` naming the address. Other
    protocols (``tls://``, ``ucx://``, ...) are only resolved and connected to,
    or left to Dask. All steps share ``seconds`` (default :data:`PROBE_SECONDS`):
    each waits at most what is left of it (a silent peer: the handshake gets
    all but :data:`HTTP_SECONDS`, or a quarter, kept for the HTTP question)."""
    import struct

    seconds = PROBE_SECONDS if seconds is None else seconds
    deadline = time.monotonic() + seconds

    def left(keep=0.0):
        return max(deadline - time.monotonic() - keep, 1e-3)

    protocol, _, rest = address.rpartition("://")
    if protocol not in ("", "tcp", "tls"):
        return
    host, port = _host_port(rest, address)
    infos = _resolve(address, host, port, seconds, left())
    with _connect(address, infos, seconds, left) as sock:
        if protocol == "tls":                    # there the client speaks first
            return
        head, silent = _receive(sock, 8, lambda: left(min(HTTP_SECONDS, seconds / 4)))
        web = silent and not head and _speaks_http(sock, left)
    if web or head.startswith(b"HTTP/"):
        raise ValueError(f"scheduler: {address} is a web server (it answers HTTP), not a "
                         f"Dask scheduler; the scheduler listens on port 8786 by default, "
                         f"its dashboard on 8787")
    if len(head) < 8:
        what = "sent nothing" if silent and not head else "closed the connection"
        raise ValueError(f"scheduler: {address} accepted the connection but {what} within "
                         f"{seconds:g} s; a Dask scheduler sends its handshake at once")
    (length,) = struct.unpack("Q", head)
    if not 0 < length <= _HANDSHAKE_BYTES:
        raise ValueError(f"scheduler: {address} does not speak Dask's protocol (its first "
                         f"bytes are {shown(head)}); is another service listening there?")


class Dask:
    """A ``dask.distributed`` cluster, given as a ``Client`` or a scheduler address.

    An address is probed first (:func:`probe_scheduler`), so a wrong one fails
    in seconds with a ``ValueError`` naming it; the client then gets
    ``timeout`` to connect.
    """

    def __init__(self, client=None, address=None, timeout="10s"):
        try:
            import distributed
        except ImportError:
            raise ValueError("scheduler: Dask sweeps need dask.distributed; "
                             "install it with pip install 'symdyn[dask]'") from None
        self._distributed = distributed
        self.client = client
        self.address = address
        self.timeout = timeout
        if address is not None:
            probe_scheduler(address)

    def _connect(self):
        try:
            return self._distributed.Client(self.address, timeout=self.timeout)
        except (OSError, MemoryError, TimeoutError) as e:
            # refused, unreachable, timed out; MemoryError: a peer that is not a
            # scheduler sent bytes that Dask read as a huge frame length
            what = ("it does not speak Dask's protocol" if isinstance(e, MemoryError)
                    else _one_line(e))
        # The half-built client is garbage: collect it now, here. Collected later,
        # on whatever thread, its __del__ stops its loop while another client may
        # be starting one, and the two wait on each other (seen in tests).
        gc.collect()
        raise ValueError(f"scheduler: cannot reach {self.address}: {what}")

    def run(self, fn, tasks, on_result):
        distributed = self._distributed
        own = self.client is None
        client = self._connect() if own else self.client
        futures = []
        try:
            for task in tasks:          # named by the task's key (unique in a sweep)
                key = f"symdyn-{task.key}" if hasattr(task, "key") else None
                futures.append(client.submit(fn, task, key=key, pure=False))
            index = {fut.key: i for i, fut in enumerate(futures)}
            for fut in distributed.as_completed(futures):
                on_result(index[fut.key], fut.result())
        finally:
            client.cancel(futures)
            if own:
                client.close()


def _one_line(exc) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text if len(text) <= 200 else text[:200] + "..."


def backend(executor=None, workers=None, scheduler=None):
    """The backend for ``sd.sweep``'s ``executor``, ``workers`` and ``scheduler``.

    ``executor``: ``None`` or ``"local"`` (processes), ``"serial"``, a
    ``dask.distributed.Client`` or a ``concurrent.futures.Executor``;
    ``scheduler``: a Dask scheduler address (``"tcp://host:8786"``).
    """
    workers_count(workers)
    if scheduler is not None:
        if executor is not None:
            raise ValueError("scheduler: give either scheduler or executor, not both")
        if not isinstance(scheduler, str) or not scheduler:
            raise ValueError(f"scheduler: expected an address such as "
                             f"'tcp://host:8786', got {shown(scheduler)}")
        return Dask(address=scheduler)
    if executor is None or executor == "local":
        return Local(workers)
    if executor == "serial":
        return Serial()
    if isinstance(executor, cf.Executor):
        return Pool(executor)
    try:
        from distributed import Client
    except ImportError:              # then no Client can have been made
        Client = ()
    if isinstance(executor, Client):
        return Dask(client=executor)
    raise ValueError(f"executor: expected None, 'local', 'serial', a dask.distributed "
                     f"Client or a concurrent.futures.Executor, got {shown(executor)}")
