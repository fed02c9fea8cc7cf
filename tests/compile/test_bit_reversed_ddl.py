"""The DDL of BitReversedSequence per dialect, compiled without a server; its bad input."""

from __future__ import annotations

import re
from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy.dialects import mssql, oracle, postgresql
from sqlalchemy.schema import CreateSequence, DropSequence

from sqlalchemy_seqkeys import BitReversedSequence, InvalidBitReversalError
from sqlalchemy_seqkeys.dialects import facts
from sqlalchemy_seqkeys.dialects.mysql import sequence_block_without_sequence_engine


def spanner_dialect() -> Any:
    from google.cloud.sqlalchemy_spanner.sqlalchemy_spanner import SpannerDialect

    return SpannerDialect()


def mariadb_dialect() -> Any:
    from sqlalchemy.dialects.mysql.mariadb import MariaDBDialect

    return MariaDBDialect()


SEQUENCE = BitReversedSequence("order_id", start=1000, skip_range=(1, 99_999))

EXPECTED = {
    # the skip range survives (sqlalchemy-spanner's own Sequence DDL drops it)
    "spanner": "CREATE SEQUENCE order_id OPTIONS (sequence_kind = 'bit_reversed_positive', "
    "start_with_counter = 1000, skip_range_min = 1, skip_range_max = 99999)",
    # elsewhere a plain counter: the reversal and the skip range are applied in Python
    "postgresql": "CREATE SEQUENCE order_id START WITH 1000 MINVALUE 1",
    # MariaDB's NOCACHE: its row is then the next value, which doctor reads
    "mariadb": "CREATE SEQUENCE order_id START WITH 1000 MINVALUE 1 NOCACHE",
    "mssql": "CREATE SEQUENCE order_id START WITH 1000 MINVALUE 1",
    "oracle": "CREATE SEQUENCE order_id START WITH 1000 MINVALUE 1",
}
DIALECTS: dict[str, Any] = {
    "spanner": spanner_dialect,
    "postgresql": postgresql.psycopg.dialect,  # SQLAlchemy 2.0's default is psycopg2
    "mariadb": mariadb_dialect,
    "mssql": mssql.dialect,
    "oracle": oracle.dialect,
}


@pytest.mark.parametrize("name", list(EXPECTED))
def test_create_sequence_ddl(name: str) -> None:
    dialect = DIALECTS[name]()
    assert str(CreateSequence(SEQUENCE.sequence).compile(dialect=dialect)) == EXPECTED[name]
    assert str(DropSequence(SEQUENCE.sequence).compile(dialect=dialect)) == "DROP SEQUENCE order_id"


def test_spanner_ddl_without_skip_range_and_if_not_exists() -> None:
    sequence = BitReversedSequence("plain")
    ddl = CreateSequence(sequence.sequence, if_not_exists=True).compile(dialect=spanner_dialect())
    assert str(ddl) == (
        "CREATE SEQUENCE IF NOT EXISTS plain OPTIONS "
        "(sequence_kind = 'bit_reversed_positive', start_with_counter = 1)"
    )


def test_plain_sequences_keep_sqlalchemy_spanners_ddl() -> None:
    ddl = CreateSequence(sa.Sequence("other")).compile(dialect=spanner_dialect())
    assert "sequence_kind = 'bit_reversed_positive'" in str(ddl)
    assert "skip_range" not in str(ddl)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"start": 0}, "start must be an int from 1"),
        ({"start": 2**63}, "start must be an int from 1"),
        ({"start": True}, "start must be an int from 1"),
        ({"skip_range": (5, 1)}, "0 <= skip_range_min <= skip_range_max < 2**63"),
        ({"skip_range": (-1, 10)}, "0 <= skip_range_min <= skip_range_max < 2**63"),
        ({"skip_range": (1, 2**63)}, "0 <= skip_range_min <= skip_range_max < 2**63"),
        ({"skip_range": 10}, "skip_range is a pair of ints"),
        ({"skip_range": (1.0, 2)}, "skip_range is a pair of ints"),
        ({"batch_size": 0}, "batch_size must be an int from 1 to 1048576, not 0"),
        ({"batch_size": 2**20 + 1}, "batch_size must be an int from 1 to 1048576"),
        ({"batch_size": True}, "batch_size must be an int from 1 to 1048576, not True (bool)"),
        ({"batch_size": 7.0}, "batch_size must be an int from 1 to 1048576, not 7.0 (float)"),
        ({"batch_size": "7"}, "batch_size must be an int from 1 to 1048576, not '7' (str)"),
    ],
)
def test_bad_arguments(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(InvalidBitReversalError, match=re.escape(message)):
        BitReversedSequence("s", **kwargs)


def test_repr_is_the_declaration() -> None:
    assert repr(SEQUENCE) == ("BitReversedSequence('order_id', start=1000, skip_range=(1, 99999))")


def test_repr_names_a_batch_size_other_than_one() -> None:
    sequence = BitReversedSequence("order_id", start=5, batch_size=50)
    assert repr(sequence) == "BitReversedSequence('order_id', start=5, batch_size=50)"
    assert sequence.batch_size == 50
    assert BitReversedSequence("order_id").batch_size == 1


@pytest.mark.parametrize("name", list(EXPECTED))
def test_a_batch_size_changes_no_ddl(name: str) -> None:
    dialect = DIALECTS[name]()
    batched = BitReversedSequence("order_id", start=1000, skip_range=(1, 99_999), batch_size=50)
    assert str(CreateSequence(batched.sequence).compile(dialect=dialect)) == EXPECTED[name]


#: one statement that returns a block of 7 values, per engine (run on each engine
#: and the emulator by tests/backend/test_bit_reversed_blocks.py)
BLOCKS = {
    "postgresql": "SELECT nextval('order_id') AS next_value_1 FROM generate_series("
    "%(generate_series_1)s::INTEGER, %(generate_series_2)s::INTEGER) AS anon_1",
    "mariadb": "SELECT nextval(order_id) AS next_value_1 FROM seq_1_to_7",
    "spanner": "SELECT GET_NEXT_SEQUENCE_VALUE(SEQUENCE order_id) AS next_value_1 "
    "FROM unnest(generate_array(:generate_array_1, :generate_array_2)) AS anon_1",
}


@pytest.mark.parametrize("name", list(BLOCKS))
def test_block_statements(name: str) -> None:
    dialect = DIALECTS[name]()
    build = facts(dialect).sequence_block
    assert build is not None
    statement = build(SEQUENCE.sequence, 7)
    assert " ".join(str(statement.compile(dialect=dialect)).split()) == BLOCKS[name]


def test_oracle_and_sql_server_take_one_value_per_statement() -> None:
    # no block statement verified on them here: blocks are filled one value at a time
    assert facts("oracle").sequence_block is None
    assert facts("mssql").sequence_block is None


def test_spanner_fetches_at_most_10000_per_statement() -> None:
    # the emulator refuses GENERATE_ARRAY past 16,000 elements
    build = facts("spanner").sequence_block
    assert build is not None
    statement = build(SEQUENCE.sequence, 2**20)
    params = statement.compile(dialect=spanner_dialect()).params
    assert sorted(params.values()) == [1, 10_000]


def test_mariadb_without_the_sequence_engine_and_a_schema() -> None:
    sequence = BitReversedSequence("order_id", schema="shop").sequence
    dialect = mariadb_dialect()
    build = facts(dialect).sequence_block
    assert build is not None
    block = str(build(sequence, 7).compile(dialect=dialect))
    assert " ".join(block.split()) == (
        "SELECT nextval(shop.order_id) AS next_value_1 FROM shop.seq_1_to_7"
    )
    cte = str(sequence_block_without_sequence_engine(sequence, 7).compile(dialect=dialect))
    assert " ".join(cte.split()) == (
        "WITH RECURSIVE seqkeys_rows(i) AS (SELECT 1 AS i UNION ALL SELECT seqkeys_rows.i + 1 "
        "AS anon_1 FROM seqkeys_rows WHERE seqkeys_rows.i < 7) "
        "SELECT nextval(shop.order_id) AS next_value_1 FROM seqkeys_rows"
    )


@pytest.mark.parametrize(
    ("name", "native"),
    [("postgresql", True), ("mariadb", True), ("mysql", False), ("sqlite", False)],
)
def test_create_all_offline_creates_what_the_engine_will_use(name: str, native: bool) -> None:
    # an offline mariadb:// dialect has not learned it has sequences yet: it is
    # taken at its word, as the Alembic operations and PooledSequence take it
    from tests.compile.test_pooled_ddl import ddl_of_create_all

    metadata = sa.MetaData()
    order_id = BitReversedSequence("order_id", start=1000, metadata=metadata)
    sa.Table("orders", metadata, sa.Column("id", sa.BigInteger, default=order_id))
    ddl = ddl_of_create_all(name, metadata)
    assert (
        any(s.startswith("CREATE SEQUENCE order_id START WITH 1000 MINVALUE 1") for s in ddl)
        is native
    )
    assert any(s.startswith("INSERT INTO sequences ") for s in ddl) is not native
