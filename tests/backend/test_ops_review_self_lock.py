"""A value taken in the migration transaction whose Alembic operation wrote the sequence's row.

``op.create_table_sequence``, ``op.drop_table_sequence``, ``op.resync_table_sequence``,
``op.resync_bit_reversed_table_sequence`` (and ``op.resync_pooled_sequence`` /
``op.create_pooled_sequence`` where the engine has no incrementing sequences: a
sequences-table row) write the row on the migration's connection, in its
transaction. A data migration that then took a ``separate`` or ``batch`` value of
that row on ``op.get_bind()`` fetched it on a second pooled connection, which waited
for the lock the migration's own transaction held: forever on PostgreSQL, 50 s on
MariaDB (or did not see a row created in it). The operations now record the row
(``table.wrote_row``), and the value is taken on the migration's connection.

The engines under test wait at most LOCK_TIMEOUT_S for a lock (a session setting of
their own connections), so that a regression fails instead of hanging.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from typing import Any

import pytest
import sqlalchemy as sa
from alembic.migration import MigrationContext
from alembic.operations import Operations

import sqlalchemy_seqkeys.alembic
from sqlalchemy_seqkeys import (
    SequenceNotFoundError,
    TableSequence,
    reverse_bits,
    sequences_table,
)
from sqlalchemy_seqkeys._dialect import incrementing_sequences
from sqlalchemy_seqkeys.sequences.table import wrote_row_here

sqlalchemy_seqkeys.alembic.register()  # where Alembic has not loaded the plugin

pytestmark = pytest.mark.backend

#: seconds a statement of the engines under test waits for a lock
LOCK_TIMEOUT_S = 3
_SET_TIMEOUT = {
    "postgresql": f"SET lock_timeout = '{LOCK_TIMEOUT_S}s'",
    "mysql": f"SET SESSION innodb_lock_wait_timeout = {LOCK_TIMEOUT_S}, "
    f"lock_wait_timeout = {LOCK_TIMEOUT_S}",
}
MODES = ["separate", "batch"]
FIRSTS = ["create_table_sequence", "resync_table_sequence", "resync_bit_reversed_table_sequence"]


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
def server(request: pytest.FixtureRequest, engines: Any) -> Iterator[sa.Engine]:
    """A fresh database with a sequences table and ``invoices`` (keys 1..10); lock waits
    bounded by LOCK_TIMEOUT_S."""
    with engines.fresh_database(request.param, "opslock") as url:
        connect_args = {"timeout": 0.5} if request.param == "sqlite" else {}
        engine = sa.create_engine(url, connect_args=connect_args)
        _bound_lock_waits(engine)
        metadata = sa.MetaData()
        sequences_table(metadata)
        invoices = sa.Table(
            "invoices",
            metadata,
            sa.Column("id", sa.BigInteger, primary_key=True, autoincrement=False),
        )
        try:
            metadata.create_all(engine)  # DDL before the migration's transaction
            with engine.begin() as conn:
                conn.execute(invoices.insert(), [{"id": i} for i in range(1, 11)])
            yield engine
        finally:
            engine.dispose()


@contextlib.contextmanager
def migration(engine: sa.Engine) -> Iterator[tuple[Operations, sa.Connection]]:
    """``op`` on a connection in a transaction, as ``alembic upgrade`` runs a migration."""
    with engine.connect() as conn, conn.begin():
        yield Operations(MigrationContext.configure(conn)), conn


def _quick(started: float) -> None:
    elapsed = time.monotonic() - started
    assert elapsed < LOCK_TIMEOUT_S * 0.8, f"{elapsed:.1f} s: it waited for a lock"


@pytest.mark.parametrize("first", FIRSTS)
@pytest.mark.parametrize("mode", MODES)
def test_a_value_after_an_op_wrote_the_row_in_the_migration_transaction(
    server: sa.Engine, mode: str, first: str
) -> None:
    name = f"ol_{mode}"
    sequence = TableSequence(name, mode=mode, batch_size=5, low_watermark=2)
    if first != "create_table_sequence":
        sequence.create(server)
    started = time.monotonic()
    with migration(server) as (op, conn):
        if first == "create_table_sequence":
            op.create_table_sequence(name, start=7)
            expected = 7
        elif first == "resync_table_sequence":
            op.resync_table_sequence(name, "invoices", "id")
            expected = 11
        else:
            op.resync_bit_reversed_table_sequence(name, "invoices", "id")
            # past the largest counter among keys 1..10 (that of key 7)
            expected = max(reverse_bits(key) for key in range(1, 11)) + 1
        assert sequence.next_value(conn) == expected
        assert sequence.next_value(conn) == expected + 1
    _quick(started)
    # committed with the migration: the next value comes after them
    assert sequence.next_value(server) == expected + 2


def test_a_value_after_op_drop_table_sequence_in_the_migration_transaction(
    server: sa.Engine,
) -> None:
    sequence = TableSequence("ol_dropped", mode="separate")
    sequence.create(server)
    started = time.monotonic()
    with server.connect() as conn:
        conn.begin()
        op = Operations(MigrationContext.configure(conn))
        op.drop_table_sequence("ol_dropped")
        with pytest.raises(SequenceNotFoundError):
            sequence.next_value(conn)
        conn.rollback()
    _quick(started)
    assert sequence.next_value(server) == 1, "rolled back: the row is there"


def test_the_pooled_row_resync_records_the_row(server: sa.Engine) -> None:
    with migration(server) as (op, conn):
        if incrementing_sequences(conn.dialect):
            pytest.skip("a native sequence here: no sequences-table row")
        op.create_pooled_sequence("ol_pooled", 10, start=1)
        assert wrote_row_here(conn, "ol_pooled")
    with migration(server) as (op, conn):
        assert not wrote_row_here(conn, "ol_pooled"), "a new transaction: nothing recorded"
        op.resync_pooled_sequence("ol_pooled", "invoices", "id")
        assert wrote_row_here(conn, "ol_pooled")
