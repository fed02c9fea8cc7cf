"""A caller waiting for a block when ``await engine.dispose()`` cancels the lane task that
was to fetch it, before that task ever ran: the caller gets the dispose error at once.

Before: a task cancelled before its first step never runs its coroutine, so
``Blocks.fetch_on_lane``'s ``finally`` (which forgets the task) never ran; the waiter
saw a fetch still "under way", never started another (which would have raised the
dispose error), and waited on the done task again and again: about 10,000 loop
wake-ups a second until ``refill_timeout`` (30 s by default), then an error saying the
database had not answered. Same for a refill task of ``async_batch`` cancelled so, and
for a lane task cancelled before it ran by anything else (the lane still open: the
waiter fetches anew instead of spinning).

On SQLite dispose() lets the fetch finish first (a statement cancelled midway would
keep the write lock): the waiter gets its value, also at once.
"""

from __future__ import annotations

import asyncio
import gc
import logging
import time
from collections.abc import Iterator

import pytest
import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncEngine

from sqlalchemy_seqkeys import SequenceAllocationError, TableSequence, sequences_table
from tests._async_run import run
from tests._helpers import fresh_table
from tests.conftest import AsyncDatabase, _async_database, _Engines

pytestmark = pytest.mark.backend

#: small, so that a regression (a wait until refill_timeout) fails fast
REFILL_TIMEOUT = 5.0
# The engines have no pool (NullPool): dispose() then closes no connection (a round trip
# the fetch task could run in) before it cancels the lane's tasks.
#: a correctness bound, far below REFILL_TIMEOUT: the outcome comes at once
AT_ONCE = 2.0


@pytest.fixture(params=["postgresql+asyncpg", "mysql+aiomysql", "sqlite+aiosqlite"])
def db(
    request: pytest.FixtureRequest, engines: _Engines, caplog: pytest.LogCaptureFixture
) -> Iterator[AsyncDatabase]:
    """A fresh sequences table through each async driver; asyncio must log nothing."""
    database = _async_database(request.param, engines)
    with fresh_table(database.sync, sequences_table):
        with caplog.at_level(logging.WARNING, logger="asyncio"):
            yield database
            gc.collect()  # a task destroyed pending, an exception never retrieved: shown now
        complaints = [r.getMessage() for r in caplog.records if r.name == "asyncio"]
        assert not complaints, complaints


async def _outcome(waiter: asyncio.Future[int]) -> int | BaseException:
    try:
        return await waiter
    except SequenceAllocationError as exc:
        return exc


def _check_waiter(db: AsyncDatabase, outcome: int | BaseException, elapsed: float) -> list[int]:
    """The waiter's outcome at once: its value on SQLite, the dispose error elsewhere."""
    assert elapsed < AT_ONCE, f"the waiter waited {elapsed:.1f} s"
    if db.backend == "sqlite":  # dispose() let the fetch finish
        assert isinstance(outcome, int), outcome
        return [outcome]
    assert isinstance(outcome, SequenceAllocationError), outcome
    assert "the engine was disposed while a value" in str(outcome)
    assert "refill_timeout" not in str(outcome)
    return []


def test_batch_waiter_when_dispose_cancels_its_fetch_before_it_ran(db: AsyncDatabase) -> None:
    sequence = TableSequence(
        "spin_batch", mode="batch", batch_size=3, refill_timeout=REFILL_TIMEOUT
    )

    async def body(engine: AsyncEngine) -> list[int]:
        await sequence.create_async(engine)
        values = await sequence.next_values_async(engine, 3)  # the block is used up
        started = time.monotonic()
        # one loop turn: the waiter spawns the fetch task, dispose() cancels it unstarted
        waiter = asyncio.ensure_future(sequence.next_value_async(engine))
        await asyncio.ensure_future(engine.dispose())
        outcome = await _outcome(waiter)
        values += _check_waiter(db, outcome, time.monotonic() - started)
        # the engine works on (a new pool and lane)
        values += await sequence.next_values_async(engine, 4)
        return values

    values = run(db, body, poolclass=sa.pool.NullPool)
    assert len(values) == len(set(values)), f"a value handed out twice: {values}"
    assert values == sorted(values)


def test_async_batch_waiter_when_dispose_cancels_the_refill_before_it_ran(
    db: AsyncDatabase,
) -> None:
    sequence = TableSequence(
        "spin_async",
        mode="async_batch",
        batch_size=3,
        low_watermark=1,
        refill_timeout=REFILL_TIMEOUT,
    )

    async def body(engine: AsyncEngine) -> list[int]:
        await sequence.create_async(engine)
        values = [await sequence.next_value_async(engine)]  # block 1..3, its mark is 3
        started = time.monotonic()
        # one loop turn: 2 and 3 taken (3 spawns the refill task), a caller waits
        # for that refill, dispose() cancels it unstarted
        taker = asyncio.ensure_future(sequence.next_values_async(engine, 2))
        waiter = asyncio.ensure_future(sequence.next_value_async(engine))
        await asyncio.ensure_future(engine.dispose())
        values += await taker
        outcome = await _outcome(waiter)
        values += _check_waiter(db, outcome, time.monotonic() - started)
        values += await sequence.next_values_async(engine, 4)
        return values

    values = run(db, body, poolclass=sa.pool.NullPool)
    assert values[:3] == [1, 2, 3]
    assert len(values) == len(set(values)), f"a value handed out twice: {values}"
    assert values == sorted(values)


def test_waiter_fetches_anew_when_its_fetch_task_is_cancelled_before_it_ran(
    db: AsyncDatabase,
) -> None:
    """The lane stays open (not a dispose): the waiter's value comes from a new fetch."""
    sequence = TableSequence(
        "spin_cancel", mode="batch", batch_size=3, refill_timeout=REFILL_TIMEOUT
    )

    def cancel_lane_tasks() -> int:
        lane_tasks = [t for t in asyncio.all_tasks() if t.get_name() == "seqkeys-spin_cancel"]
        for task in lane_tasks:
            task.cancel()
        return len(lane_tasks)

    async def body(engine: AsyncEngine) -> list[int]:
        await sequence.create_async(engine)
        values = await sequence.next_values_async(engine, 3)  # the block is used up
        started = time.monotonic()
        waiter = asyncio.ensure_future(sequence.next_value_async(engine))
        await asyncio.sleep(0)  # the waiter spawned the fetch task; it has not run yet
        assert cancel_lane_tasks() == 1
        values.append(await waiter)
        assert time.monotonic() - started < AT_ONCE
        values += await sequence.next_values_async(engine, 4)
        return values

    values = run(db, body, poolclass=sa.pool.NullPool)
    assert len(values) == len(set(values)), f"a value handed out twice: {values}"
    assert values == sorted(values)
