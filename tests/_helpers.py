"""Small helpers the tests share: run code in threads, in a forked child, or in a fresh
interpreter without a package; tables and tenant schemas created anew; SQL Server's
``uniqueidentifier`` order."""

from __future__ import annotations

import ctypes
import faulthandler
import gc
import os
import select
import signal
import subprocess
import sys
import threading
import time
import uuid
import warnings
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from typing import Any, NoReturn, TypeVar

import pytest
import sqlalchemy as sa

T = TypeVar("T")


def in_threads(mint: Callable[[], T], threads: int, per_thread: int) -> list[list[T]]:
    """Call ``mint`` ``per_thread`` times on each of ``threads`` threads started together."""
    results: list[list[T]] = [[] for _ in range(threads)]
    start = threading.Barrier(threads)

    def work(out: list[T]) -> None:
        start.wait()
        out.extend(mint() for _ in range(per_thread))

    pool = [threading.Thread(target=work, args=(out,)) for out in results]
    for t in pool:
        t.start()
    for t in pool:
        t.join()
    return results


#: how long a forked child may take to send what it has to say
CHILD_DEADLINE_S = 60.0

#: the first byte a forked child writes, before any of its work and after one
#: GIL hand-over between two threads (_hand_over_the_gil): a child that never
#: sends it hung in CPython's GIL hand-over after a bare libc fork() taken while
#: another thread waited for the GIL (docs/production.md, "Forks"), before any
#: code of the library ran; such a fork is tried again (twice at most). A child that
#: hangs after it is tried again too, with a ForkedChildHung warning showing where it stood.
STARTED = b"\x06"
#: forks tried per child (os.fork() runs PyOS_AfterFork_Child: never retried)
LIBC_FORK_TRIES = 3


def wait_until(ns: int) -> None:
    """Spin until ``time.time_ns()`` reaches ``ns`` (a millisecond boundary both sides share)."""
    while time.time_ns() < ns:
        pass


def in_forked_child(
    child: Callable[[], str],
    parent: Callable[[], object] | None = None,
    *,
    fork: Callable[[], int] = os.fork,
    start_ns: int | None = None,
) -> str:
    """Run ``child`` in a process forked by ``fork`` (``parent`` meanwhile here); return its text.

    ``fork`` is ``os.fork`` or a libc ``fork()`` (tests/_forking.py). With
    ``start_ns`` both sides start at that instant. An exception in the child
    comes back as ``"<ExceptionName>: <message>"``; a child silent for
    ``CHILD_DEADLINE_S`` seconds is killed and the test fails. A libc-forked
    child that never started (see :data:`STARTED`) is forked again, ``parent``
    not run again (what it did stands, and callers count its results).

    The parent's garbage is collected before the fork and the rest frozen for
    the child (``gc.freeze``): a gRPC channel of an xdist worker's Spanner tests,
    finalized by the child's collector, killed it by SIGSEGV. A child killed by
    a signal after it started is forked once more, ``parent`` not run again,
    with a :class:`ForkedChildHung` warning naming the signal; a second one
    fails the test.
    """
    try:
        return _in_forked_child(child, parent, fork=fork, start_ns=start_ns)
    except _ChildKilledError as killed:
        warnings.warn(
            f"a forked child was killed by {killed.status} after it started; forked once more",
            ForkedChildHung,
            stacklevel=2,
        )
    try:
        return _in_forked_child(child, None, fork=fork, start_ns=start_ns)
    except _ChildKilledError as killed:
        pytest.fail(f"the forked child started, then was killed twice, by {killed.status}")


class _ChildKilledError(Exception):
    """A forked child ended by a signal after it started, without a word."""

    def __init__(self, status: str) -> None:
        super().__init__(status)
        self.status = status


def _in_forked_child(
    child: Callable[[], str],
    parent: Callable[[], object] | None,
    *,
    fork: Callable[[], int],
    start_ns: int | None,
) -> str:
    tries = 1 if fork is os.fork else LIBC_FORK_TRIES
    hangs: list[str] = []  # what libc-forked children that hung after starting said
    for attempt in range(1, tries + 1):
        read_fd, write_fd = os.pipe()
        # The parent's garbage is collected here, and what is left frozen for the
        # child: a gRPC channel of the Spanner tests that the child's collector
        # finalized (grpc/_channel.py __del__) killed the child by SIGSEGV.
        gc.collect()
        gc.freeze()
        try:
            pid = fork()
        except BaseException:
            gc.unfreeze()
            raise
        if pid == 0:  # pragma: no cover - runs in the child, its parent's objects frozen
            report_from_child(child, read_fd, write_fd, start_ns)
        gc.unfreeze()
        assert pid > 0, f"fork() failed: {ctypes.get_errno()}"
        os.close(write_fd)
        try:
            if start_ns is not None:
                wait_until(start_ns)
            if parent is not None and attempt == 1:  # its values stand: not minted twice
                parent()
            data = read_from_child(
                read_fd, pid, CHILD_DEADLINE_S, strict=True, hangs=None if tries == 1 else hangs
            )
        finally:
            os.close(read_fd)
            status = _reap(pid)
        if data == "" and status.startswith("signal"):  # it started, then was killed
            raise _ChildKilledError(status)
        if data == "" and status != "exit code 0":  # it started, then died without a word
            pytest.fail(f"the forked child started, then ended without a word ({status})")
        if data is not None:
            if hangs:
                message = _HUNG_AFTER_START.format(n=len(hangs), said=hangs[0])
                warnings.warn(message, ForkedChildHung, stacklevel=2)
            return data
        if attempt == tries:
            what = "never started" if not hangs else f"hung after starting {len(hangs)} times"
            pytest.fail(
                f"the forked child {what} ({tries} forks, {CHILD_DEADLINE_S} s each)"
                + "".join(f"\n-- where a child stood:\n{said}" for said in hangs)
            )
    raise AssertionError("unreachable")


class ForkedChildHung(UserWarning):
    """A libc-forked child hung after it started, then passed when forked again.

    The suite passes (CPython's GIL after a raw fork can hang a hand-over,
    docs/production.md) and shows this in its warnings summary (pyproject's
    filterwarnings keeps it a warning), with where the child stood: a hang in
    the library's own code would show there.
    """


_HUNG_AFTER_START = (
    "a libc-forked child hung after it started ({n} time(s)) and passed when forked again; "
    "where it stood:\n{said}"
)


def report_from_child(
    child: Callable[[], str], read_fd: int, write_fd: int, start_ns: int | None = None
) -> NoReturn:  # pragma: no cover - runs in the child
    """In a forked child: run ``child``, write its text (or its exception's) to the pipe, exit."""
    code = 71  # replaced once the child's text is written
    try:
        os.close(read_fd)
        _hand_over_the_gil()
        os.write(write_fd, STARTED)
        # a child that hangs after this says where: the parent's SIGUSR1 makes
        # faulthandler write the stack of the thread it interrupts into the pipe (not
        # every thread's: a raw fork leaves the parent's threads as phantoms, and
        # dumping them can kill the child midway)
        faulthandler.register(signal.SIGUSR1, file=write_fd, all_threads=False)
        if start_ns is not None:
            wait_until(start_ns)
        try:
            text = child()
        except BaseException as exc:  # SystemExit, pytest outcomes too
            text = f"{type(exc).__name__}: {exc}"
        faulthandler.unregister(signal.SIGUSR1)
        view = memoryview(text.encode())
        while view:
            view = view[os.write(write_fd, view) :]
        code = 0
    except BaseException:  # the write failed: the exit code says so
        code = 70
    finally:
        os._exit(code)


def _hand_over_the_gil() -> None:  # pragma: no cover - runs in the child
    """Pass the GIL to another thread and back, before the child says it started.

    After a bare libc ``fork()``, CPython's GIL condition variable may still
    count a waiter of the parent that does not exist here; glibc then blocks
    the first hand-over forever. That hand-over is usually the child's first
    eval-breaker check, but where the parent had not yet asked for a switch it
    is the first thread the child starts (a lease's renewal): after
    :data:`STARTED`, where it looked like the library's hang. Forcing it here
    puts every such hang before :data:`STARTED`, where the fork is tried again.
    """
    done = threading.Event()
    thread = threading.Thread(target=done.set, daemon=True)
    thread.start()
    done.wait()
    thread.join()


def _reap(pid: int) -> str:
    """Wait for a forked child (one still running after ``CHILD_DEADLINE_S`` is killed);
    how it ended: ``"exit code N"`` or ``"signal SIGxxx"``."""
    deadline = time.monotonic() + CHILD_DEADLINE_S
    while not (reaped := os.waitpid(pid, os.WNOHANG))[0]:
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            reaped = os.waitpid(pid, 0)
            break
        time.sleep(0.01)
    status = reaped[1]
    if os.WIFSIGNALED(status):
        return f"signal {signal.Signals(os.WTERMSIG(status)).name}"
    return f"exit code {os.waitstatus_to_exitcode(status)}"


def read_from_child(
    fd: int, pid: int, timeout: float, *, strict: bool = False, hangs: list[str] | None = None
) -> str | None:
    """The child's text, read to its end; None if it sent nothing for ``timeout`` (killed).

    With ``strict``, a child that started (it wrote :data:`STARTED`) and then
    stayed silent fails the test instead, showing where it stood (the stack
    faulthandler writes on SIGUSR1); given ``hangs``, that text is added there
    and None returned (forked again).
    """
    chunks: list[bytes] = []
    deadline = time.monotonic() + timeout
    while True:
        ready, _, _ = select.select([fd], [], [], max(deadline - time.monotonic(), 0))
        chunk = os.read(fd, 1 << 16) if ready else b""
        if chunk:
            chunks.append(chunk)
            continue
        if not ready:
            if chunks:  # it started: ask where it stands (report_from_child), then kill it
                os.kill(pid, signal.SIGUSR1)
                wait = 2.0  # for its first line, then until it has said it all
                while select.select([fd], [], [], wait)[0] and (more := os.read(fd, 1 << 16)):
                    chunks.append(more)
                    wait = 0.5
            os.kill(pid, signal.SIGKILL)
        text = b"".join(chunks)
        said = text.removeprefix(STARTED).decode(errors="replace")
        hung = not ready and bool(chunks)  # it started, then went silent
        if strict and hung:
            if hangs is not None:
                hangs.append(said)
                return None
            pytest.fail(
                f"the forked child started, then sent nothing for {timeout} s; its "
                f"stack then:\n{said}"
            )
        if not ready:
            return None
        return said if text else None


@contextmanager
def fresh_database_engine(engines: Any, name: str, label: str) -> Iterator[sa.Engine]:
    """An engine on a new, empty database of engine ``name``: nothing another test left in
    the run's shared database (a table, a sequences table) reaches it; disposed and dropped
    after."""
    with engines.fresh_database(name, label) as url:
        engine = sa.create_engine(url)
        if name == "spanner":
            from tests._emulator import configure_engine

            configure_engine(engine)
        try:
            yield engine
        finally:
            engine.dispose()


@contextmanager
def fresh_tables(engine: sa.Engine, metadata: sa.MetaData) -> Iterator[sa.Engine]:
    """``engine`` with ``metadata``'s tables created anew (what an earlier run left is
    dropped first), dropped after."""
    metadata.drop_all(engine)
    metadata.create_all(engine)
    try:
        yield engine
    finally:
        metadata.drop_all(engine)


def fresh_table(
    engine: sa.Engine, declare: Callable[[sa.MetaData], sa.Table]
) -> AbstractContextManager[sa.Engine]:
    """``engine`` with the table ``declare`` puts on a MetaData created anew, dropped after."""
    metadata = sa.MetaData()
    declare(metadata)
    return fresh_tables(engine, metadata)


def tenant_engines(engine: sa.Engine, schemas: Sequence[str]) -> list[sa.Engine]:
    """``engine`` under a ``schema_translate_map`` to each of ``schemas``: one per tenant."""
    return [engine.execution_options(schema_translate_map={None: s}) for s in schemas]


@contextmanager
def tenant_schemas(engine: sa.Engine, *names: str) -> Iterator[list[sa.Engine]]:
    """PostgreSQL schemas ``names`` created anew (what an earlier run left is dropped
    first), dropped after with what they hold; yields :func:`tenant_engines` for them."""

    def drop() -> None:
        with engine.begin() as conn:
            for name in names:
                conn.execute(sa.text(f"DROP SCHEMA IF EXISTS {name} CASCADE"))

    drop()
    with engine.begin() as conn:
        for name in names:
            conn.execute(sa.text(f"CREATE SCHEMA {name}"))
    try:
        yield tenant_engines(engine, names)
    finally:
        drop()


def without_package(package: str, code: str) -> str:
    """Runs ``code`` in a fresh interpreter where ``import package`` fails; returns its output.

    As for a user who did not install the extra that brings ``package``.
    """
    result = subprocess.run(
        [sys.executable, "-c", f"import sys\nsys.modules[{package!r}] = None\n{code}"],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


# SQL Server compares uniqueidentifier bytes (as stored, Microsoft order) in
# this sequence: .NET's SqlGuid keeps the same table (s_rgiGuidOrder).
SQL_SERVER_ORDER = (10, 11, 12, 13, 14, 15, 8, 9, 6, 7, 4, 5, 0, 1, 2, 3)


def sql_server_key(value: uuid.UUID) -> bytes:
    """A sort key that orders UUIDs as SQL Server orders ``uniqueidentifier`` values."""
    stored = value.bytes_le
    return bytes(stored[i] for i in SQL_SERVER_ORDER)
