"""An ``AsyncWorkerLease.start()`` cancelled at any point leaves no live row behind.

Before: a start cancelled after its claim's INSERT or UPDATE had been sent (60 starts
cancelled 0 to 42 ms in) left a row that no lease held: the lease was closed without a
worker id, so nothing released it, and the worker id stayed taken for the ttl. Now the
claim runs on to its end whatever becomes of the start, and a cancelled start waits for
it (at most min(ttl, 5) s) and releases what it won before the cancellation goes on.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest
import sqlalchemy as sa

from sqlalchemy_seqkeys import workers_table
from sqlalchemy_seqkeys.workers import AsyncWorkerLease
from tests._helpers import fresh_table
from tests.conftest import AsyncDatabase, _async_database, _Engines

pytestmark = pytest.mark.backend


@pytest.fixture(params=["sqlite+aiosqlite", "postgresql+asyncpg"])
def async_db(request: pytest.FixtureRequest, engines: _Engines) -> Iterator[AsyncDatabase]:
    database = _async_database(request.param, engines)
    with fresh_table(database.sync, workers_table):
        yield database


def _live_rows(database: AsyncDatabase) -> dict[str, int]:
    """owner -> worker id, of every row not released (expired or not)."""
    t = workers_table(sa.MetaData())
    with database.sync.connect() as conn:
        return {r.owner: r.worker_id for r in conn.execute(sa.select(t).where(t.c.expires_at > 0))}


def test_a_start_cancelled_at_any_point_leaves_no_row_held(async_db: AsyncDatabase) -> None:
    outcomes: dict[str, int] = {}

    async def main() -> None:
        engine = async_db.engine()
        try:
            async with AsyncWorkerLease(engine, ttl=30):  # the table exists, the pool is warm
                pass
            # cancelled after 0, 1, 2, ... turns of the loop, then after growing sleeps:
            # every await of the start, the claim's statements and their commits among them
            points = [("turns", n) for n in range(40)] + [("ms", n * 0.7) for n in range(60)]
            for how, at in points:
                lease = AsyncWorkerLease(engine, ttl=30)
                task = asyncio.ensure_future(lease.start())
                if how == "turns":
                    for _ in range(int(at)):
                        await asyncio.sleep(0)
                else:
                    await asyncio.sleep(at / 1000)
                task.cancel()
                try:
                    await task
                except asyncio.CancelledError:
                    outcome = "cancelled"
                    assert not lease.valid
                    rows = await asyncio.to_thread(_live_rows, async_db)
                    assert lease.owner not in rows, (how, at, rows)
                    await lease.close()  # a start cancelled before it began: not closed yet
                else:
                    outcome = "started"
                    assert lease.valid
                    await lease.close()
                outcomes[outcome] = outcomes.get(outcome, 0) + 1
            assert await asyncio.to_thread(_live_rows, async_db) == {}
        finally:
            await engine.dispose()

    asyncio.run(main())
    assert outcomes.get("cancelled", 0) > 0, outcomes
