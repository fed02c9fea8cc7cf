"""An ``AsyncWorkerLease.close()`` cancelled part-way still closes and releases the lease.

Before: cancelling the close (the ``async with`` exit) at its first await (a
TaskGroup sibling failing, a second Ctrl-C during a lifespan shutdown) stopped
the renewal task and nothing else: the lease stayed open (``closed`` False,
``valid`` True) with nothing renewing it, its row stayed held until the ttl ran
out, nothing released it when ``asyncio.run`` ended, and the lease's twin pool
was never disposed. Now the lease is closed before the first await (nothing is
minted under a lease being closed) and the release runs on to its end, shielded
from the cancellation, which goes on once it is done.
"""

from __future__ import annotations

import asyncio
import gc
import logging
import sys
from collections.abc import Iterator
from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncEngine

from sqlalchemy_seqkeys import Snowflake, WorkerLeaseLostError, workers_table
from sqlalchemy_seqkeys.workers import AsyncWorkerLease
from tests._async_run import run
from tests._helpers import fresh_table
from tests.conftest import AsyncDatabase, _async_database, _Engines

pytestmark = pytest.mark.backend


@pytest.fixture(params=["postgresql+asyncpg", "mysql+aiomysql", "sqlite+aiosqlite"])
def db(
    request: pytest.FixtureRequest, engines: _Engines, caplog: pytest.LogCaptureFixture
) -> Iterator[AsyncDatabase]:
    """A fresh lease table through each async driver; asyncio must log nothing."""
    database = _async_database(request.param, engines)
    with fresh_table(database.sync, workers_table):
        with caplog.at_level(logging.WARNING, logger="asyncio"):
            yield database
            gc.collect()  # a task destroyed pending, a coroutine never awaited: shown now
        complaints = [r.getMessage() for r in caplog.records if r.name == "asyncio"]
        assert not complaints, complaints


def _expires_at(database: AsyncDatabase, worker_id: int) -> int:
    t = workers_table(sa.MetaData())
    with database.sync.connect() as conn:
        expires: int = conn.scalar(sa.select(t.c.expires_at).where(t.c.worker_id == worker_id))
        return expires


def _pending() -> list[str]:
    return [t.get_name() for t in asyncio.all_tasks() if t is not asyncio.current_task()]


def _twin_idle(lease: AsyncWorkerLease) -> bool:
    """The lease's twin pool disposed of (no connection kept in it)."""
    db: Any = lease._db
    return db is None or db is lease.engine or db.sync_engine.pool.checkedin() == 0


async def _assert_closed_and_released(
    database: AsyncDatabase, engine: AsyncEngine, lease: AsyncWorkerLease, ids: Snowflake
) -> None:
    assert lease.closed
    assert not lease.valid
    with pytest.raises(WorkerLeaseLostError, match="it was closed"):
        ids()
    assert _pending() == []
    assert _twin_idle(lease)
    assert await asyncio.to_thread(_expires_at, database, 0) == 0  # released
    # the only worker id is free at once for the next lease
    async with AsyncWorkerLease(engine, ttl=30, max_worker_id=0) as successor:
        assert successor.worker_id == 0


async def _started(engine: AsyncEngine) -> tuple[AsyncWorkerLease, Snowflake]:
    lease = await AsyncWorkerLease(engine, ttl=30, max_worker_id=0).start()
    ids = Snowflake(worker_id=lease)
    ids()
    return lease, ids


def test_a_close_cancelled_at_its_first_await_closes_and_releases(db: AsyncDatabase) -> None:
    async def body(engine: AsyncEngine) -> None:
        lease, ids = await _started(engine)
        closer = asyncio.ensure_future(lease.close())
        await asyncio.sleep(0)  # the close begins, up to its first await
        closer.cancel()
        with pytest.raises(asyncio.CancelledError):
            await closer
        await _assert_closed_and_released(db, engine, lease, ids)

    run(db, body)


def test_the_lease_is_closed_before_the_first_await_of_close(db: AsyncDatabase) -> None:
    async def body(engine: AsyncEngine) -> None:
        lease, ids = await _started(engine)
        closer = asyncio.ensure_future(lease.close())
        await asyncio.sleep(0)  # the close is at its first await: nothing released yet
        assert lease.closed
        assert not lease.valid
        with pytest.raises(WorkerLeaseLostError, match="it was closed"):
            ids()
        await closer
        await _assert_closed_and_released(db, engine, lease, ids)

    run(db, body)


def test_a_close_cancelled_at_any_point_closes_and_releases(db: AsyncDatabase) -> None:
    async def body(engine: AsyncEngine) -> dict[str, int]:
        outcomes: dict[str, int] = {}
        points = [("turns", n) for n in range(1, 25)] + [("ms", n * 0.5) for n in range(12)]
        for how, at in points:
            lease, ids = await _started(engine)
            closer = asyncio.ensure_future(lease.close())
            if how == "turns":
                for _ in range(int(at)):
                    await asyncio.sleep(0)
            else:
                await asyncio.sleep(at / 1000)
            closer.cancel()
            try:
                await closer
            except asyncio.CancelledError:
                outcome = "cancelled"
            else:
                outcome = "closed"
            outcomes[outcome] = outcomes.get(outcome, 0) + 1
            await _assert_closed_and_released(db, engine, lease, ids)
        return outcomes

    outcomes = run(db, body)
    assert outcomes.get("cancelled", 0) > 0, outcomes


def test_a_close_cancelled_twice_still_releases(db: AsyncDatabase) -> None:
    # A second Ctrl-C while the cancelled close waits for its release: the release
    # goes on by itself, and ends.
    async def body(engine: AsyncEngine) -> None:
        lease, ids = await _started(engine)
        closer = asyncio.ensure_future(lease.close())
        await asyncio.sleep(0)
        closer.cancel()
        await asyncio.sleep(0)
        closer.cancel()
        with pytest.raises(asyncio.CancelledError):
            await closer
        assert lease.closed
        for _ in range(500):
            if not _pending():
                break
            await asyncio.sleep(0.01)
        await _assert_closed_and_released(db, engine, lease, ids)

    run(db, body)


@pytest.mark.skipif(sys.version_info < (3, 11), reason="asyncio.TaskGroup is 3.11's")
def test_a_close_cancelled_by_a_failing_taskgroup_sibling_releases(db: AsyncDatabase) -> None:
    async def body(engine: AsyncEngine) -> None:
        leases: list[tuple[AsyncWorkerLease, Snowflake]] = []
        exiting = asyncio.Event()

        async def serve() -> None:
            async with AsyncWorkerLease(engine, ttl=30, max_worker_id=0) as lease:
                leases.append((lease, Snowflake(worker_id=lease)))
                exiting.set()
            # the exit's close is under way when the sibling fails

        async def fail() -> None:
            await exiting.wait()
            raise RuntimeError("a sibling failed")

        try:
            async with asyncio.TaskGroup() as group:
                group.create_task(serve())
                group.create_task(fail())
        except Exception as exc:  # an ExceptionGroup (Python 3.11+)
            failed: Any = exc
        else:
            pytest.fail("the TaskGroup did not raise")
        assert [type(e) for e in failed.exceptions] == [RuntimeError]
        lease, ids = leases[0]
        await _assert_closed_and_released(db, engine, lease, ids)

    run(db, body)
