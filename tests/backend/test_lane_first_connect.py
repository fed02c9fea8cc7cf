"""A new AsyncEngine's first uses at once: the library's lane (a twin of the engine's pool)
and the engine's own pool both connect while SQLAlchemy initializes the dialect they share.
Neither may hand out a connection before that has finished: on MariaDB a dialect not yet
initialized reads as one without sequences, and a PooledSequence took its keys from the
sequences-table row of its name, which another process (or MySQL) also counts from."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy.util import await_only

from sqlalchemy_seqkeys import PooledSequence, TableSequence, sequences_table
from sqlalchemy_seqkeys.sequences.table import read_next_value
from tests.conftest import AsyncDatabase

pytestmark = pytest.mark.backend


def test_both_pools_wait_for_the_dialect_to_be_initialized(
    async_server_database: AsyncDatabase,
) -> None:
    database = async_server_database
    metadata = sa.MetaData()
    sequences_table(metadata)
    metadata.create_all(database.sync)
    pooled = PooledSequence("first_connect_pooled", batch_size=10)
    other = TableSequence("first_connect_other", mode="separate")
    # a row of the pooled sequence's name, as on an engine without native sequences
    row = TableSequence("first_connect_pooled", mode="separate")
    for sequence in (pooled, other, row):
        sequence.drop(database.sync, checkfirst=True)
        sequence.create(database.sync)
    keys: list[int] = []

    async def first_uses() -> None:
        engine = database.engine()
        dialect: Any = engine.sync_engine.dialect
        initialize = dialect.initialize

        def slow_initialize(connection: Any) -> None:
            # the server's answers take their time; the other pool connects meanwhile
            await_only(asyncio.sleep(0.2))
            initialize(connection)

        dialect.initialize = slow_initialize
        try:
            _, first = await asyncio.gather(
                other.next_value_async(engine), pooled.next_value_async(engine)
            )
            keys.append(first)
            keys.extend([await pooled.next_value_async(engine) for _ in range(3)])
        finally:
            await engine.dispose()

    try:
        for _ in range(3):
            asyncio.run(first_uses())
        assert len(set(keys)) == len(keys) == 12, keys
        with database.sync.connect() as conn:
            untouched = read_next_value(conn, "first_connect_pooled")
        assert untouched == 1, "the pooled keys came from the sequences-table row"
    finally:
        for sequence in (pooled, other, row):
            sequence.drop(database.sync, checkfirst=True)


def test_one_engine_serves_one_event_loop_after_another(async_database: AsyncDatabase) -> None:
    # asyncio.run per job on one AsyncEngine (docs/asyncio.md). Each loop's lane is a new twin
    # pool; when they shared the engine pool's first-connect lock (an asyncio.Lock under
    # SQLAlchemy's AsyncAdaptedLock), the first loop that contended for it bound it to
    # itself, and the next loop's allocations failed with a raw RuntimeError ("bound to a
    # different event loop").
    database = async_database
    metadata = sa.MetaData()
    sequences_table(metadata)
    metadata.create_all(database.sync)
    sequences = [TableSequence(f"loops_{i}", mode="separate") for i in range(4)]
    for sequence in sequences:
        sequence.drop(database.sync, checkfirst=True)
        sequence.create(database.sync)
    engine_box: list[Any] = []
    values: list[list[int]] = []

    async def job() -> None:
        if not engine_box:
            engine_box.append(database.engine())
        engine = engine_box[0]
        values.append(list(await asyncio.gather(*(s.next_value_async(engine) for s in sequences))))

    try:
        for _ in range(3):
            asyncio.run(job())
        assert values == [[1, 1, 1, 1], [2, 2, 2, 2], [3, 3, 3, 3]]
    finally:
        if engine_box:
            asyncio.run(engine_box[0].dispose())
        for sequence in sequences:
            sequence.drop(database.sync, checkfirst=True)
