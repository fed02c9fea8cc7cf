"""A sync WorkerLease started from SQLAlchemy's greenlet never holds the event loop forever.

Two tasks start the same lease (``await conn.run_sync(lambda _: lease.start())``) while
it waits past its previous holder's ids: one claims, the other is told the lease was
started already. The wait sleeps (it holds the lease's start lock, which the second
start waits on from the loop's only thread): awaiting there would hang the loop.
"""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path

import sqlalchemy as sa

from sqlalchemy_seqkeys import InvalidLeaseError, Snowflake, WorkerLease


def test_two_starts_from_the_greenlet_end(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'leases.db'}"
    engine = sa.create_engine(url)
    ahead = WorkerLease(
        engine, max_worker_id=0, max_skew=5, clock=lambda: time.time_ns() + 500_000_000
    ).start()
    Snowflake(worker_id=ahead)()  # the next holder waits past this id, 0.5 s ahead
    ahead.close()
    lease = WorkerLease(engine, max_worker_id=0, max_skew=5)
    outcomes: list[str] = []

    async def main() -> None:
        from sqlalchemy.ext.asyncio import create_async_engine

        async_engine = create_async_engine(url.replace("sqlite://", "sqlite+aiosqlite://"))

        async def start() -> None:
            async with async_engine.connect() as conn:
                try:
                    await conn.run_sync(lambda _: lease.start())
                    outcomes.append("started")
                except InvalidLeaseError as exc:
                    outcomes.append("refused" if "started already" in str(exc) else str(exc))

        try:
            await asyncio.gather(start(), start())
        finally:
            await async_engine.dispose()

    # on a thread of its own: a hung loop fails the test instead of the suite
    runner = threading.Thread(target=asyncio.run, args=(main(),), daemon=True)
    runner.start()
    runner.join(60)
    try:
        assert not runner.is_alive(), "the event loop hung on the lease's start lock"
        assert sorted(outcomes) == ["refused", "started"]
        assert lease.worker_id == 0
        assert lease.valid
    finally:
        lease.close()
        engine.dispose()
