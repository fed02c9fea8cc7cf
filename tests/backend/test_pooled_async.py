"""PooledSequence under asyncio: concurrent AsyncSessions, the ``_async`` methods and
resync.
"""

from __future__ import annotations

import asyncio
import math

import pytest
from sqlalchemy.ext.asyncio import AsyncSession

from sqlalchemy_seqkeys import PooledSequence
from sqlalchemy_seqkeys.pooled import resync_pooled_sequence_async
from sqlalchemy_seqkeys.sequences.table import read_next_value
from tests.backend._pooled import (
    ROWS,
    SIZE,
    TABLE,
    all_ids,
    counting,
    drop_everything,
    make_model,
    native,
)
from tests.conftest import AsyncDatabase

pytestmark = pytest.mark.backend


def test_concurrent_async_sessions(async_database: AsyncDatabase) -> None:
    """Ten AsyncSessions flushing at once on one loop: every key once, blocks counted."""
    name = "seqkeys_pooled_async"
    sync = async_database.sync
    has_native = native(sync)
    drop_everything(sync, name)
    sequence = PooledSequence(name, batch_size=SIZE, table=TABLE)
    row, metadata = make_model(sequence)
    tasks, per_task = 10, 45

    async def main() -> dict[str, int]:
        engine = async_database.engine()
        try:
            async with engine.begin() as conn:
                await conn.run_sync(metadata.create_all)
            with counting(engine.sync_engine) as counts:

                async def insert(i: int) -> None:
                    async with AsyncSession(engine) as session:
                        session.add_all(row(note=f"a{i}") for _ in range(per_task))
                        await session.commit()

                await asyncio.gather(*(insert(i) for i in range(tasks)))
            if not has_native:  # allocated on the lane's own engine: read the row instead
                with sync.connect() as conn:
                    stored = read_next_value(conn, name, table=TABLE)
                assert stored is not None
                counts["blocks"] = (stored - 1) // SIZE
            assert len(await sequence.next_values_async(engine, 3)) == 3
            moved = await resync_pooled_sequence_async(
                engine, name, ROWS, "id", sequences_table=TABLE
            )
            assert moved is None  # every key came from the sequence
            await sequence.drop_async(engine)
            await sequence.create_async(engine)
            return counts
        finally:
            await engine.dispose()

    try:
        counts = asyncio.run(main())
        ids = all_ids(sync)
        assert len(ids) == len(set(ids)) == tasks * per_task
        least = math.ceil(tasks * per_task / SIZE)
        assert least <= counts["blocks"] <= least + tasks, counts
    finally:
        drop_everything(sync, name)
