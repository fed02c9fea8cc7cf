"""Bit-reversed sequences under asyncio: the native sequences of PostgreSQL and MariaDB,
the sequences table on SQLite, a BitReversed TableSequence, and the awaitable API."""

from __future__ import annotations

import asyncio
import math
from collections.abc import Iterator
from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

from sqlalchemy_seqkeys import (
    BitReversed,
    BitReversedSequence,
    TableSequence,
    create_table_sequence,
    reverse_bits,
    sequences_table,
)
from tests._helpers import fresh_table
from tests.conftest import AsyncDatabase

pytestmark = pytest.mark.backend


@pytest.fixture
def db(async_database: AsyncDatabase) -> Iterator[AsyncDatabase]:
    with fresh_table(async_database.sync, sequences_table):
        yield async_database


def _model(default: Any, metadata: sa.MetaData) -> type[Any]:
    class Base(DeclarativeBase):
        pass

    Base.metadata = metadata

    class Order(Base):
        __tablename__ = "seqkeys_async_orders"
        id: Mapped[int] = mapped_column(
            sa.BigInteger, primary_key=True, default=default, autoincrement=False
        )
        task: Mapped[int]

    return Order


async def _insert_concurrently(engine: AsyncEngine, model: type[Any], tasks: int) -> list[int]:
    async def work(task: int) -> None:
        for _ in range(2):
            async with AsyncSession(engine) as session:
                session.add_all([model(task=task), model(task=task)])
                await session.commit()

    await asyncio.gather(*(work(task) for task in range(tasks)))
    async with engine.connect() as conn:
        return list((await conn.scalars(sa.select(model.id))).all())


def test_bit_reversed_sequence_under_async_sessions(db: AsyncDatabase) -> None:
    """Created by create_all (run_sync), used by concurrent sessions: Spanner's values."""
    metadata = sa.MetaData()
    order_id = BitReversedSequence("async_order_id", start=1000, metadata=metadata)
    model = _model(order_id, metadata)
    tasks = 4 if db.backend == "sqlite" else 20

    async def main() -> list[int]:
        engine = db.engine()
        try:
            async with engine.begin() as conn:
                await conn.run_sync(metadata.drop_all)
                await conn.run_sync(metadata.create_all)  # creates the sequence too
            ids = await _insert_concurrently(engine, model, tasks)
            async with engine.begin() as conn:
                await conn.run_sync(metadata.drop_all)  # drops the sequence too
            return ids
        finally:
            await engine.dispose()

    ids = asyncio.run(main())
    n = tasks * 4
    assert sorted(ids) == sorted(reverse_bits(c) for c in range(1000, 1000 + n))


def test_blocks_under_async_sessions(db: AsyncDatabase) -> None:
    """batch_size > 1: concurrent sessions on one loop share blocks; every value once.

    A native sequence's block is fetched on the INSERT's own connection (so
    the statements are seen on the engine itself); the sequences table's on
    the engine's allocation lane, committed on its own (read from its row).
    """
    size, start = 10, 1000
    skip = (2**60, 2**61 + 2**59)  # about one counter in five: consumed, never handed out
    metadata = sa.MetaData()
    order_id = BitReversedSequence(
        "async_block_id",
        start=start,
        skip_range=skip,
        batch_size=size,
        metadata=metadata,
    )
    model = _model(order_id, metadata)
    tasks = 4 if db.backend == "sqlite" else 20
    native = db.backend != "sqlite"
    blocks = 0

    def count(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        nonlocal blocks
        if "generate_series(" in statement or "seq_1_to_" in statement:
            blocks += 1

    async def main() -> tuple[list[int], int]:
        engine = db.engine()
        try:
            async with engine.begin() as conn:
                await conn.run_sync(metadata.drop_all)
                await conn.run_sync(metadata.create_all)
            sa.event.listen(engine.sync_engine, "before_cursor_execute", count)
            ids = await _insert_concurrently(engine, model, tasks)
            more = [await order_id.next_value_async(engine) for _ in range(3)]
            sa.event.remove(engine.sync_engine, "before_cursor_execute", count)
            async with engine.begin() as conn:
                stored = await conn.scalar(
                    sa.text("SELECT next_value FROM sequences WHERE name = 'async_block_id'")
                )
                await conn.run_sync(metadata.drop_all)
            return ids + more, 0 if stored is None else (int(stored) - start) // size
        finally:
            await engine.dispose()

    values, table_blocks = asyncio.run(main())
    n = tasks * 4
    assert len(set(values)) == len(values) == n + 3
    assert not [v for v in values if skip[0] <= v <= skip[1]]
    counters = sorted(reverse_bits(v) for v in values)
    assert counters[0] >= start
    fetched = blocks if native else table_blocks
    # one statement per block of 10 counters (a fifth of them skipped); blocks
    # fetched at once by several tasks are all used, but for one per task
    least = math.ceil(n / size)
    assert least <= fetched <= math.ceil(n * 1.5 / size) + tasks, (fetched, counters)
    assert counters[-1] < start + fetched * size


def test_bit_reversed_awaitable_api(db: AsyncDatabase) -> None:
    order_id = BitReversedSequence("async_api_order", start=7)

    async def main() -> list[int]:
        engine = db.engine()
        try:
            await order_id.drop_async(engine, checkfirst=True)
            await order_id.create_async(engine)
            await order_id.create_async(engine, checkfirst=True)  # left as it is
            values = [await order_id.next_value_async(engine)]
            async with engine.begin() as conn:  # joins the caller's transaction
                values.append(await order_id.next_value_async(conn))
            await order_id.drop_async(engine)
            await order_id.drop_async(engine, checkfirst=True)  # already gone: a no-op
            return values
        finally:
            await engine.dispose()

    assert asyncio.run(main()) == [reverse_bits(7), reverse_bits(8)]


@pytest.mark.parametrize("mode", ["in_transaction", "async_batch"])
def test_a_bit_reversed_table_sequence_under_async_sessions(db: AsyncDatabase, mode: str) -> None:
    name = f"async_reversed_{mode}"
    create_table_sequence(db.sync, name)
    counter = TableSequence(name, mode=mode, batch_size=10, low_watermark=4)
    metadata = sa.MetaData()
    model = _model(BitReversed(counter), metadata)
    metadata.create_all(db.sync)
    tasks = 4 if db.backend == "sqlite" else 20

    async def main() -> list[int]:
        engine = db.engine()
        try:
            return await _insert_concurrently(engine, model, tasks)
        finally:
            await engine.dispose()

    try:
        ids = asyncio.run(main())
    finally:
        metadata.drop_all(db.sync)
    counters = [reverse_bits(value) for value in ids]
    assert len(set(counters)) == len(ids) == tasks * 4
    if mode == "in_transaction":
        assert sorted(counters) == list(range(1, tasks * 4 + 1))
