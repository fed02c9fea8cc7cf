"""``async_batch`` on an SQLite file while one write transaction outlasts the refill's retries.

The refill (a thread; under asyncio a task of the engine's lane) waited for the
write lock of the very transaction that needed its block, failed its retries
("database is locked", six times the driver's timeout) and kept its error; the
next row of that transaction raised it, where ``batch`` (and the documented
fallback) takes the value on the flush's own connection. Now a caller that holds
the lock takes its value there before any refill's error is raised (the error
stays for the next caller that needs a block), and a refill is no longer started
by a caller that holds the lock (it could only wait for it).

The driver's timeout is 0.2 s, so a refill's retries end in about two seconds.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
import sqlalchemy as sa

from sqlalchemy_seqkeys import SequenceAllocationError, TableSequence, sequences_table
from sqlalchemy_seqkeys.sequences._allocator import refills

pytestmark = pytest.mark.backend

#: long enough for a refill's six attempts at 0.2 s each, and their backoff
RETRIES_S = 4.0


def _declare(name: str) -> tuple[sa.MetaData, TableSequence, sa.Table]:
    metadata = sa.MetaData()
    sequences_table(metadata)
    sequence = TableSequence(name, mode="async_batch", batch_size=10, low_watermark=5)
    rows = sa.Table(
        name,
        metadata,
        sa.Column("id", sa.BigInteger, primary_key=True, default=sequence),
        sa.Column("i", sa.Integer),
    )
    return metadata, sequence, rows


@pytest.fixture
def path(tmp_path: Path) -> Path:
    return tmp_path / "refill.db"


def _ids(engine: sa.Engine, rows: sa.Table) -> list[int]:
    with engine.connect() as conn:
        return sorted(conn.scalars(sa.select(rows.c.id)))


def test_the_lock_holder_takes_its_values_on_its_connection(path: Path) -> None:
    """The transaction that holds the write lock takes the watermark's value: no refill
    waits for it, and its rows past the block take their values in it."""
    engine = sa.create_engine(f"sqlite:///{path}", connect_args={"timeout": 0.2})
    metadata, sequence, rows = _declare("refill_holder")
    try:
        metadata.create_all(engine)
        sequence.create(engine)
        with engine.begin() as conn:
            for i in range(30):
                conn.execute(rows.insert(), {"i": i})
                if i == 7:  # past the mark (row 5): a refill started there has given up
                    assert refills.wait_idle(15 * RETRIES_S)
        assert _ids(engine, rows) == list(range(1, 31))
        assert sequence.next_value(engine) == 31, "no refill's error was kept"
    finally:
        engine.dispose()


def test_a_refill_that_failed_on_the_holders_lock_is_not_the_holders_error(path: Path) -> None:
    """A refill started outside the transaction fails on its lock: the transaction takes
    its values on its own connection; the error goes to the next caller, once."""
    engine = sa.create_engine(f"sqlite:///{path}", connect_args={"timeout": 0.2})
    metadata, sequence, rows = _declare("refill_other")
    try:
        metadata.create_all(engine)
        sequence.create(engine)
        with engine.begin() as conn:
            conn.execute(rows.insert(), {"i": 0})  # value 1 of block 1..10; the lock is held
            outside = [sequence.next_value(engine) for _ in range(5)]  # 6: the mark, a refill
            assert outside == [2, 3, 4, 5, 6]
            assert refills.wait_idle(15 * RETRIES_S)  # it waited for the lock, and gave up
            conn.execute(rows.insert(), [{"i": i} for i in range(1, 11)])
        assert _ids(engine, rows) == [1, *range(7, 17)]
        with pytest.raises(SequenceAllocationError, match="database is locked"):
            sequence.next_value(engine)  # the refill's error, kept for the next caller
        assert sequence.next_value(engine) == 17
    finally:
        engine.dispose()


@pytest.mark.parametrize("outside", [False, True])
def test_async_the_lock_holder_takes_its_values_on_its_connection(
    path: Path, outside: bool
) -> None:
    """The same under asyncio (aiosqlite): the refill is a task of the engine's lane."""
    pytest.importorskip("aiosqlite")
    from sqlalchemy.ext.asyncio import create_async_engine

    metadata, sequence, rows = _declare(f"refill_async_{outside}")

    async def main() -> tuple[list[int], list[int], list[int], list[str]]:
        engine = create_async_engine(f"sqlite+aiosqlite:///{path}", connect_args={"timeout": 0.2})
        taken: list[int] = []
        try:
            async with engine.begin() as conn:
                await conn.run_sync(metadata.create_all)
            await sequence.create_async(engine)
            async with engine.begin() as conn:
                await conn.execute(rows.insert(), {"i": 0})  # the lock is held from here
                if outside:  # the mark's value taken outside: the refill task starts
                    taken = [await sequence.next_value_async(engine) for _ in range(5)]
                for i in range(1, 30):
                    await conn.execute(rows.insert(), {"i": i})
                    if i == 7:
                        await asyncio.sleep(RETRIES_S)  # a refill started has given up
            async with engine.connect() as conn:
                ids = sorted(await conn.scalars(sa.select(rows.c.id)))
            after: list[int] = []
            errors: list[str] = []
            for _ in range(2):
                try:
                    after.append(await sequence.next_value_async(engine))
                except SequenceAllocationError as exc:  # a refill's, kept for the next caller
                    errors.append(str(exc))
            return taken, ids, after, errors
        finally:
            await engine.dispose()

    taken, ids, after, errors = asyncio.run(main())
    assert all("database is locked" in error for error in errors), errors
    assert len(errors) <= int(outside), "only a refill started outside the transaction failed"
    assert len(ids) == 30
    assert not set(taken) & set(ids)
    assert sorted([*taken, *ids]) == list(range(1, len(taken) + 31))
    assert after[0] == len(taken) + 31
