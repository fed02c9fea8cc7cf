"""Snowflake ids across forks: by ``os.fork()`` and by a bare libc ``fork()``.

A libc ``fork()`` (uWSGI without lazy-apps, C extensions, ctypes) runs none of
Python's ``os.register_at_fork`` hooks: the child starts with its parent's
generator state, and before the fix parent and child minted the same ids
(19,518 of 20,000 in the issue's trial). Here parent and child mint at once
from the same millisecond, the child sends its ids back through a pipe, and no
id may appear on both sides. A forked child with several threads, and two
generators bound to one lease, must lease exactly one worker id.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import os
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import Engine

from sqlalchemy_seqkeys import (
    ForkedWorkerError,
    Snowflake,
    WorkerLease,
    WorkerLeaseLostError,
    workers_table,
)
from sqlalchemy_seqkeys.workers import server_now_ms
from tests._forking import libc_fork, libc_fork_when_quiet, no_stragglers  # noqa: F401
from tests._helpers import fresh_table, in_forked_child, in_threads

pytestmark = [
    pytest.mark.skipif(not hasattr(os, "fork"), reason="fork() is POSIX-only"),
    pytest.mark.filterwarnings("ignore::DeprecationWarning"),  # fork() with threads alive
    pytest.mark.usefixtures("no_stragglers"),  # a hung child is killed, and fails its test
]

PER_PROCESS = 20_000


FORKS: dict[str, Callable[[], int]] = {"libc fork": libc_fork_when_quiet, "os.fork": os.fork}


def _in_child(
    fork: Callable[[], int], child: Callable[[], str], parent: Callable[[], object] = lambda: None
) -> str:
    """Fork with ``fork``; run ``child`` there and ``parent`` here, both at once.

    Both start at the same millisecond boundary, the moment an inherited
    generator state repeats itself on both sides. Returns what ``child``
    returned, or ``"<ExceptionName>: <message>"``.
    """
    start_ns = (time.time_ns() // 1_000_000 + 30) * 1_000_000
    return in_forked_child(child, parent, fork=fork, start_ns=start_ns)


def _ids(text: str) -> list[int]:
    assert not text or text[0].isdigit(), text
    return [int(v) for v in text.split()]


@pytest.mark.usefixtures("fork_marker")  # either way of noticing the child
@pytest.mark.parametrize("fork", list(FORKS))
def test_a_child_with_a_fixed_worker_id_refuses_its_first_id(fork: str) -> None:
    ids = Snowflake(worker_id=7)
    parent: list[int] = []
    ids()  # state to inherit: a tick and a sequence
    result = _in_child(
        FORKS[fork],
        lambda: " ".join(str(ids()) for _ in range(PER_PROCESS)),
        lambda: parent.extend(ids() for _ in range(PER_PROCESS)),
    )
    assert result.startswith(ForkedWorkerError.__name__), result[:200]
    assert "forked from the one that owns worker id 7" in result
    assert len(set(parent)) == PER_PROCESS  # the parent goes on


@pytest.mark.slow
@pytest.mark.usefixtures("fork_marker")
@pytest.mark.parametrize("fork", list(FORKS))
def test_a_child_with_after_fork_shares_no_id_with_its_parent(fork: str) -> None:
    ids = Snowflake(worker_id=7, after_fork=lambda: 8)
    parent: list[int] = [ids()]
    child = _ids(
        _in_child(
            FORKS[fork],
            lambda: " ".join(str(ids()) for _ in range(PER_PROCESS)),
            lambda: parent.extend(ids() for _ in range(PER_PROCESS)),
        )
    )
    assert len(set(child)) == PER_PROCESS
    assert {ids.decode(v).worker_id for v in child} == {8}
    assert {ids.decode(v).worker_id for v in parent} == {7}
    assert not set(child) & set(parent)


@pytest.fixture(params=["sqlite", "postgresql"])
def lease_engine(request: pytest.FixtureRequest, engines: Any) -> Iterator[Engine]:
    with fresh_table(engines.get(request.param), workers_table) as fresh:
        yield fresh


def _live_leases(engine: Engine) -> dict[str, int]:
    t = workers_table(sa.MetaData())
    with engine.connect() as conn:
        rows = conn.execute(
            sa.select(t.c.owner, t.c.worker_id).where(t.c.expires_at > server_now_ms())
        )
        return {str(owner): int(worker_id) for owner, worker_id in rows}


@pytest.mark.slow
@pytest.mark.parametrize("fork", list(FORKS))
def test_a_child_with_threads_leases_exactly_one_worker_id(fork: str, lease_engine: Engine) -> None:
    # Two generators bound to one lease, four threads of the child minting from
    # both at the same moment: one new lease, shared by all of them.
    engine = sa.create_engine(lease_engine.url)
    lease = WorkerLease(engine, ttl=10, max_worker_id=15).start()
    a, b = Snowflake(worker_id=lease), Snowflake(worker_id=lease)
    parent = [a(), b()]

    def in_the_child() -> str:
        turns = threading.local()

        def both() -> int:  # each thread alternates (thread idents are all even on Linux)
            turn = getattr(turns, "n", 0)
            turns.n = turn + 1
            return a() if turn % 2 else b()

        minted = [v for out in in_threads(both, 4, 2_000) for v in out]
        minted += [a() for _ in range(100)] + [b() for _ in range(100)]
        live = _live_leases(engine)
        assert a.lease is not None
        assert a.lease is b.lease
        a.lease.close()
        return f"{len(live)} {' '.join(map(str, minted))}"

    text = _in_child(
        FORKS[fork],
        in_the_child,
        lambda: parent.extend(a() if i % 2 else b() for i in range(PER_PROCESS)),
    )
    count, _, rest = text.partition(" ")
    assert count.isdigit(), text[:300]
    child = _ids(rest)
    assert int(count) == 2, f"the child leased {int(count) - 1} worker ids (parent + child = 2)"
    assert len(set(child)) == len(child) == 4 * 2_000 + 200
    child_workers = {a.decode(v).worker_id for v in child}
    assert len(child_workers) == 1
    assert child_workers != {lease.worker_id}
    assert len(set(parent)) == len(parent)
    assert not set(child) & set(parent)
    assert a.lease is b.lease is lease  # the parent's generators are untouched
    lease.close()
    engine.dispose()


@pytest.mark.slow
def test_a_libc_forked_child_leases_its_own_worker_id_and_shares_no_id(
    lease_engine: Engine,
) -> None:
    engine = sa.create_engine(lease_engine.url)
    lease = WorkerLease(engine, ttl=10, max_worker_id=15).start()
    ids = Snowflake(worker_id=lease)
    parent = [ids()]

    def in_the_child() -> str:
        minted = [ids() for _ in range(PER_PROCESS)]
        assert ids.lease is not None
        ids.lease.close()
        return " ".join(map(str, minted))

    in_the_parent = lambda: parent.extend(ids() for _ in range(PER_PROCESS))  # noqa: E731
    child = _ids(_in_child(libc_fork_when_quiet, in_the_child, in_the_parent))
    assert len(set(child)) == PER_PROCESS
    assert {ids.decode(v).worker_id for v in child} != {lease.worker_id}
    assert not set(child) & set(parent)
    lease.close()
    engine.dispose()


#: the sync engine's async driver, for a lease held on an event loop
_ASYNC_DRIVERS = {"sqlite": "sqlite+aiosqlite", "postgresql": "postgresql+asyncpg"}


@pytest.mark.slow
@pytest.mark.parametrize("fork", list(FORKS))
def test_a_child_of_an_asyncio_lease_refuses_until_bound_to_its_own(
    fork: str, lease_engine: Engine
) -> None:
    # The parent holds an AsyncWorkerLease, renewed by a task on its loop; a
    # forked child has no such loop and cannot renew it. Its first id raises,
    # naming bind(); bound to a lease of its own, on a loop and an engine of
    # its own, it mints ids that share nothing with the parent's.
    from sqlalchemy.ext.asyncio import create_async_engine

    from sqlalchemy_seqkeys.workers import AsyncWorkerLease

    url = lease_engine.url.set(drivername=_ASYNC_DRIVERS[lease_engine.dialect.name])
    ids = Snowflake()  # declared with the models
    parent: list[int] = []

    def in_the_child() -> str:
        try:
            return f"minted {ids()} with the parent's lease"
        except ForkedWorkerError as exc:
            refusal = str(exc)

        async def own_lease() -> list[int]:
            engine = create_async_engine(url)
            try:
                async with AsyncWorkerLease(engine, ttl=10, max_worker_id=15) as mine:
                    ids.bind(mine)
                    return [ids() for _ in range(PER_PROCESS)]
            finally:
                await engine.dispose()

        # a libc-forked child still sees the parent's loop as running in this thread
        # (os.fork() resets that, libc's fork() does not): a loop of its own, elsewhere
        with concurrent.futures.ThreadPoolExecutor(1) as pool:
            minted = pool.submit(asyncio.run, own_lease()).result()
        return refusal + "\n" + " ".join(map(str, minted))

    async def main() -> tuple[int, str]:
        engine = create_async_engine(url)
        # _in_child waits for the child on this loop, so the renewal task cannot run
        # meanwhile: a ttl far longer than the child takes on a loaded machine
        try:  # disposed even on failure: an unclosed connection would fail a later test
            async with AsyncWorkerLease(engine, ttl=120, max_worker_id=15) as lease:
                ids.bind(lease)
                parent.append(ids())
                text = _in_child(
                    FORKS[fork],
                    in_the_child,
                    lambda: parent.extend(ids() for _ in range(PER_PROCESS)),
                )
                parent.append(ids())  # the parent's binding is untouched
        finally:
            await engine.dispose()
        return lease.worker_id, text

    worker_id, text = asyncio.run(main())
    refusal, _, rest = text.partition("\n")
    assert refusal.startswith("this process was forked from the one that holds AsyncWorkerLease")
    assert "ids.bind(lease)" in refusal
    child = _ids(rest)
    assert len(set(child)) == PER_PROCESS
    assert {ids.decode(v).worker_id for v in child} != {worker_id}
    assert {ids.decode(v).worker_id for v in parent} == {worker_id}
    assert not set(child) & set(parent)


def test_a_libc_forked_child_waits_on_no_lock_a_parents_thread_held(
    lease_engine: Engine,
) -> None:
    """At the fork, the parent's threads were inside the lease's locks (its renewal
    thread waits on the closing Event's lock between renewals): the child mints, is
    refused the parent's lease for a new generator, and closes its copy of the parent's
    lease (a shutdown hook would), without waiting."""
    engine = sa.create_engine(lease_engine.url)
    lease = WorkerLease(engine, ttl=10, max_worker_id=15).start()
    ids = Snowflake(worker_id=lease)
    ids()
    held = [lease._closed._cond, lease._bind_lock, lease._renew_lock]  # type: ignore[attr-defined]
    for lock in held:
        lock.acquire()
    try:

        def in_the_child() -> str:
            minted = [ids() for _ in range(100)]
            with pytest.raises(WorkerLeaseLostError, match="a fork of the one that holds it"):
                Snowflake().bind(lease)  # the parent's lease: refused at once
            lease.close()  # the parent's lease: its row stays the parent's
            assert isinstance(ids.lease, WorkerLease)
            ids.lease.close()
            return " ".join(map(str, minted))

        text = in_forked_child(in_the_child, fork=libc_fork)
    finally:
        for lock in held:
            lock.release()
    child = _ids(text)
    assert len(set(child)) == 100
    assert {ids.decode(v).worker_id for v in child} != {lease.worker_id}
    assert lease.valid  # untouched by the child's close
    lease.close()
    engine.dispose()
