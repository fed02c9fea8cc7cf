"""A value taken in the transaction that has already written the sequence's row.

``resync_table_sequence(conn, ...)``, ``create(conn)``, ``drop(conn)`` and
``allocate(conn, ...)`` join the caller's transaction and write (lock) the row.
A ``separate``, ``batch`` or ``async_batch`` value taken next on that connection
was fetched on a second pooled connection, which waited for the lock the
caller's own transaction held: forever on PostgreSQL (no ``lock_timeout`` by
default), 50 s then ``SequenceLockTimeoutError`` on MariaDB; after a ``create``
on PostgreSQL the second connection did not see the row and raised
``SequenceNotFoundError``. SQLite already took such a value on the caller's
connection (it holds the one write lock). Now the library remembers the rows it
wrote in the connection's transaction and takes the value there too: it rolls
back with that transaction, and no value is handed out twice.

The engines under test wait at most LOCK_TIMEOUT_S for a lock (a session
setting of their own connections), so that a regression fails instead of hanging.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import Engine
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column

from sqlalchemy_seqkeys import (
    SequenceNotFoundError,
    TableSequence,
    create_table_sequence,
    drop_table_sequence,
    resync_table_sequence,
    sequences_table,
)
from sqlalchemy_seqkeys.sequences import resync_table_sequence_async
from sqlalchemy_seqkeys.sequences.table import allocate, read_next_value
from tests._helpers import fresh_tables
from tests.conftest import _async_database

pytestmark = pytest.mark.backend

#: seconds a statement of the engines under test waits for a lock
LOCK_TIMEOUT_S = 3
_SET_TIMEOUT = {
    "postgresql": f"SET lock_timeout = '{LOCK_TIMEOUT_S}s'",
    "mysql": f"SET SESSION innodb_lock_wait_timeout = {LOCK_TIMEOUT_S}, "
    f"lock_wait_timeout = {LOCK_TIMEOUT_S}",
}
TABLE = "selflock_sequences"
DATA = "selflock_rows"
MODES = ["separate", "batch", "async_batch"]


def _metadata() -> tuple[sa.MetaData, sa.Table]:
    metadata = sa.MetaData()
    sequences_table(metadata, TABLE)
    data = sa.Table(
        DATA,
        metadata,
        sa.Column("id", sa.BigInteger, primary_key=True, autoincrement=False),
        sa.Column("note", sa.String(20)),
    )
    return metadata, data


def _bound_lock_waits(engine: sa.Engine) -> None:
    statement = _SET_TIMEOUT.get(engine.url.get_backend_name())
    if statement is None:  # SQLite: the driver's timeout (connect_args)
        return

    def on_connect(dbapi_connection: Any, record: Any) -> None:
        cursor = dbapi_connection.cursor()
        cursor.execute(statement)
        cursor.close()
        dbapi_connection.commit()

    sa.event.listen(engine, "connect", on_connect)


@pytest.fixture(params=["sqlite", "postgresql", "mysql"])
def server(request: pytest.FixtureRequest, engines: Any) -> Iterator[Engine]:
    """An engine whose sessions wait at most LOCK_TIMEOUT_S for a lock; fresh tables."""
    url = engines.get(request.param).url
    connect_args = {"timeout": 0.5} if request.param == "sqlite" else {}
    engine = sa.create_engine(url, connect_args=connect_args)
    _bound_lock_waits(engine)
    metadata, _ = _metadata()
    try:
        with fresh_tables(engine, metadata):
            yield engine
    finally:
        engine.dispose()


def _sequence(name: str, mode: str) -> TableSequence:
    return TableSequence(name, mode=mode, batch_size=5, low_watermark=2, table=TABLE)


def _quick(started: float) -> None:
    elapsed = time.monotonic() - started
    assert elapsed < LOCK_TIMEOUT_S * 0.8, f"{elapsed:.1f} s: it waited for a lock"


@pytest.mark.parametrize("first", ["create", "create_table_sequence", "resync", "allocate"])
@pytest.mark.parametrize("mode", [*MODES, "in_transaction"])
def test_a_value_after_the_library_wrote_the_row_in_the_same_transaction(
    server: Engine, mode: str, first: str
) -> None:
    _, data = _metadata()
    sequence = _sequence(f"sl_{first[:6]}_{mode}", mode)
    if first in ("resync", "allocate"):
        sequence.create(server)
    if first == "resync":
        with server.begin() as conn:
            conn.execute(data.insert(), [{"id": i} for i in range(1, 11)])
    started = time.monotonic()
    with server.begin() as conn:
        if first == "create":
            assert sequence.create(conn)
            expected = 1
        elif first == "create_table_sequence":
            assert create_table_sequence(conn, sequence.name, start=7, table=TABLE)
            expected = 7
        elif first == "resync":
            assert resync_table_sequence(conn, sequence.name, DATA, "id", sequences_table=TABLE)
            expected = 11
        else:
            assert allocate(conn, sequence.name, 3, table=TABLE) == 1
            expected = 4
        assert sequence.next_value(conn) == expected
        # and as a column default, in an INSERT of several rows
        rows = sa.Table(DATA, sa.MetaData(), sa.Column("id", sa.BigInteger, default=sequence))
        conn.execute(rows.insert(), [{}, {}])
        inserted = sorted(conn.scalars(sa.select(data.c.id).where(data.c.id >= expected)))
    _quick(started)
    assert inserted == [expected + 1, expected + 2]
    # committed: the next value comes after them, in a transaction of its own
    assert sequence.next_value(server) == expected + 3


@pytest.mark.parametrize("mode", [*MODES, "in_transaction"])
def test_a_value_after_the_row_was_dropped_in_the_same_transaction(
    server: Engine, mode: str
) -> None:
    sequence = _sequence(f"sl_dropped_{mode}", mode)
    sequence.create(server)
    started = time.monotonic()
    with server.connect() as conn:
        assert drop_table_sequence(conn, sequence.name, table=TABLE)
        with pytest.raises(SequenceNotFoundError):
            sequence.next_value(conn)
        conn.rollback()
    _quick(started)
    assert sequence.next_value(server) == 1, "rolled back: the row is there"


class _Base(DeclarativeBase):
    pass


_flushed = _sequence("sl_flushed", "async_batch")


class _Row(_Base):
    __tablename__ = DATA
    id: Mapped[int] = mapped_column(sa.BigInteger, primary_key=True, default=_flushed)
    note: Mapped[str | None] = mapped_column(sa.String(20))


def test_values_taken_in_the_transaction_roll_back_with_it_and_none_repeats(
    server: Engine,
) -> None:
    """Values of a block fetched before are used first; then values of the caller's
    transaction, which its rollback gives back; a value of a committed block never again."""
    _flushed.create(server)  # created anew: blocks another engine left are forgotten
    assert _flushed.next_value(server) == 1  # block 1..5, committed on its own
    started = time.monotonic()
    with server.connect() as conn, Session(bind=conn) as session:
        resync_table_sequence(conn, _flushed.name, DATA, "id", sequences_table=TABLE)
        session.add_all(_Row(note="rolled back") for _ in range(8))
        session.flush()
        taken = sorted(session.scalars(sa.select(_Row.id)))
        session.rollback()
    _quick(started)
    assert taken == [2, 3, 4, 5, 6, 7, 8, 9]  # 2..5 from memory, 6..9 in the transaction
    with Session(server) as session:
        session.add_all(_Row(note="kept") for _ in range(10))
        session.commit()
        kept = sorted(session.scalars(sa.select(_Row.id)))
    assert kept == list(range(6, 16)), "the rolled-back 6..9 return, 2..5 never"


def test_the_record_ends_with_the_transaction(server: Engine) -> None:
    """A later transaction of the same connection fetches its blocks on their own again."""
    sequence = _sequence("sl_ended", "batch")
    sequence.create(server)
    with server.connect() as conn:
        with conn.begin():
            resync_table_sequence(conn, sequence.name, DATA, "id", sequences_table=TABLE)
        with conn.begin() as transaction:
            assert sequence.next_value(conn) == 1
            transaction.rollback()
        # a block of its own, committed: the rollback did not give it back
        assert read_next_value(conn, sequence.name, table=TABLE) == 6
        conn.rollback()


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("driver", ["sqlite+aiosqlite", "postgresql+asyncpg", "mysql+aiomysql"])
def test_async_value_after_a_resync_in_the_same_transaction(
    engines: Any, driver: str, mode: str
) -> None:
    database = _async_database(driver, engines)
    metadata, data = _metadata()
    sequence = _sequence(f"sl_async_{mode}", mode)

    async def main() -> list[int]:
        kwargs: dict[str, Any] = {}
        if database.backend == "sqlite":
            kwargs["connect_args"] = {"timeout": 0.5}
        engine = database.engine(**kwargs)
        _bound_lock_waits(engine.sync_engine)
        try:
            await sequence.create_async(engine)
            async with engine.begin() as conn:
                await conn.execute(data.insert(), [{"id": i} for i in range(1, 11)])
            async with engine.begin() as conn:
                await resync_table_sequence_async(
                    conn, sequence.name, DATA, "id", sequences_table=TABLE
                )
                inside = [await sequence.next_value_async(conn) for _ in range(3)]
            return [*inside, await sequence.next_value_async(engine)]
        finally:
            await engine.dispose()

    with fresh_tables(database.sync, metadata):
        started = time.monotonic()
        values = asyncio.run(main())
        _quick(started)
    assert values == [11, 12, 13, 14]
