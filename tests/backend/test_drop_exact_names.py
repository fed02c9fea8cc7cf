"""Dropping a table sequence refuses a sequences table that compares names case-insensitively.

A MySQL/MariaDB sequences table made by version 0.1 has the database's default collation,
so ``DELETE ... WHERE name = 'invoice_a'`` deletes sequence ``'Invoice_A'``: create and
allocate refuse such a table (``check_exact_names``), and drop deleted another
sequence's row and returned True.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import Engine
from sqlalchemy.ext.asyncio import AsyncEngine

from sqlalchemy_seqkeys import (
    SequenceAllocationError,
    TableSequence,
    drop_table_sequence,
    drop_table_sequence_async,
)
from sqlalchemy_seqkeys.sequences.table import read_next_value
from tests._async_run import run
from tests.conftest import AsyncDatabase

pytestmark = pytest.mark.backend

OLD = "seqkeys_drop_old_sequences"
REFUSED = r"compares names case-insensitively .*op\.make_sequence_names_case_sensitive"


@pytest.fixture
def old_table(mysql_engine: Engine) -> Iterator[Engine]:
    """A sequences table as 0.1 made it (a case-insensitive collation), holding 'Invoice_A'."""

    def drop() -> None:
        with mysql_engine.begin() as conn:
            conn.execute(sa.text(f"DROP TABLE IF EXISTS {OLD}"))

    drop()
    with mysql_engine.begin() as conn:
        conn.execute(
            sa.text(
                f"CREATE TABLE {OLD} (name VARCHAR(64) NOT NULL, next_value BIGINT NOT NULL, "
                "PRIMARY KEY (name)) CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci"
            )
        )
        conn.execute(sa.text(f"INSERT INTO {OLD} VALUES ('Invoice_A', 5000)"))
    try:
        yield mysql_engine
    finally:
        drop()


def _rows(engine: Engine) -> list[tuple[str, int]]:
    with engine.connect() as conn:
        return [(r.name, r.next_value) for r in conn.execute(sa.text(f"SELECT * FROM {OLD}"))]


@pytest.mark.parametrize("checkfirst", [False, True])
def test_dropping_another_case_is_refused_and_deletes_nothing(
    old_table: Engine, checkfirst: bool
) -> None:
    lower = TableSequence("invoice_a", mode="batch", table=OLD)
    with pytest.raises(SequenceAllocationError, match=REFUSED):
        lower.drop(old_table, checkfirst=checkfirst)
    with pytest.raises(SequenceAllocationError, match=REFUSED):
        drop_table_sequence(old_table, "invoice_A", table=OLD, checkfirst=checkfirst)
    with old_table.connect() as conn, pytest.raises(SequenceAllocationError, match=REFUSED):
        drop_table_sequence(conn, "INVOICE_A", table=OLD, checkfirst=checkfirst)
    assert _rows(old_table) == [("Invoice_A", 5000)]


def test_dropping_the_exact_name_is_refused_too(old_table: Engine) -> None:
    # as create and allocate: the table is refused, whatever the name
    with pytest.raises(SequenceAllocationError, match=REFUSED):
        TableSequence("Invoice_A", mode="batch", table=OLD).drop(old_table)
    assert _rows(old_table) == [("Invoice_A", 5000)]


def test_dropping_is_refused_under_asyncio(
    old_table: Engine, async_mysql_database: AsyncDatabase
) -> None:
    async def body(engine: AsyncEngine) -> None:
        with pytest.raises(SequenceAllocationError, match=REFUSED):
            await drop_table_sequence_async(engine, "invoice_a", table=OLD, checkfirst=True)
        async with engine.connect() as conn:
            with pytest.raises(SequenceAllocationError, match=REFUSED):
                await drop_table_sequence_async(conn, "invoice_a", table=OLD)

    run(async_mysql_database, body)
    assert _rows(old_table) == [("Invoice_A", 5000)]


def test_a_converted_table_drops_by_exact_name(old_table: Engine) -> None:
    with old_table.begin() as conn:
        conn.execute(
            sa.text(
                f"ALTER TABLE {OLD} MODIFY name VARCHAR(64) CHARACTER SET utf8mb4 "
                "COLLATE utf8mb4_bin NOT NULL"
            )
        )
    assert (
        TableSequence("invoice_a", mode="batch", table=OLD).drop(old_table, checkfirst=True)
        is False
    )
    assert _rows(old_table) == [("Invoice_A", 5000)]
    assert drop_table_sequence(old_table, "Invoice_A", table=OLD) is True
    with old_table.connect() as conn:
        assert read_next_value(conn, "Invoice_A", table=OLD) is None
