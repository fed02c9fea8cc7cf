"""The sequences table's DDL and each dialect's allocation statement, compiled without a server."""

from __future__ import annotations

from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy.dialects import mssql, mysql, oracle, postgresql, sqlite
from sqlalchemy.schema import CreateTable

from sqlalchemy_seqkeys import (
    InvalidSequenceError,
    SequenceMode,
    TableSequence,
    create_table_sequence,
    sequences_table,
)
from sqlalchemy_seqkeys._dialect import facts
from sqlalchemy_seqkeys.sequences import table as table_module


def spanner_dialect() -> Any:
    from google.cloud.sqlalchemy_spanner.sqlalchemy_spanner import SpannerDialect

    return SpannerDialect()


def one_line(sql: object) -> str:
    return " ".join(str(sql).split())


EXPECTED_DDL = {
    "sqlite": "CREATE TABLE sequences ( name VARCHAR(64) NOT NULL, "
    "next_value BIGINT NOT NULL, PRIMARY KEY (name) )",
    "postgresql": "CREATE TABLE sequences ( name VARCHAR(64) NOT NULL, "
    "next_value BIGINT NOT NULL, PRIMARY KEY (name) )",
    # names compare exactly, as on the other engines (not the database's _ci collation)
    "mysql": "CREATE TABLE sequences ( name VARCHAR(64) CHARACTER SET utf8mb4 "
    "COLLATE utf8mb4_bin NOT NULL, next_value BIGINT NOT NULL, PRIMARY KEY (name) )",
    "mssql": "CREATE TABLE sequences ( name VARCHAR(64) NOT NULL, "
    "next_value BIGINT NOT NULL, PRIMARY KEY (name) )",
    "oracle": "CREATE TABLE sequences ( name VARCHAR2(64 CHAR) NOT NULL, "
    "next_value NUMBER(19) NOT NULL, PRIMARY KEY (name) )",
    # exactly the source's DDL
    "spanner": "CREATE TABLE sequences ( name STRING(64) NOT NULL, "
    "next_value INT64 NOT NULL ) PRIMARY KEY (name)",
}

DIALECTS: dict[str, Any] = {
    "sqlite": sqlite.dialect,
    "postgresql": postgresql.dialect,
    "mysql": mysql.dialect,
    "mssql": mssql.dialect,
    "oracle": oracle.dialect,
    "spanner": spanner_dialect,
}


@pytest.mark.parametrize("name", list(DIALECTS))
def test_sequences_table_ddl(name: str) -> None:
    table = sequences_table(sa.MetaData())
    assert one_line(CreateTable(table).compile(dialect=DIALECTS[name]())) == EXPECTED_DDL[name]


def test_sequences_table_is_idempotent_and_checked() -> None:
    metadata = sa.MetaData()
    assert sequences_table(metadata) is sequences_table(metadata)
    sa.Table("other", metadata, sa.Column("id", sa.Integer, primary_key=True))
    with pytest.raises(InvalidSequenceError, match="not a sequences table"):
        sequences_table(metadata, "other")


def test_allocation_statements_are_one_round_trip_with_bound_names() -> None:
    returning = table_module._returning_statement("sequences")
    # psycopg (3): the suite's driver, and SQLAlchemy 2.1's default (2.0's is psycopg2)
    pg = one_line(returning.compile(dialect=postgresql.psycopg.dialect()))
    assert pg == (
        "UPDATE sequences SET next_value=(sequences.next_value + %(n)s::BIGINT) "
        "WHERE sequences.name = %(seq_name)s::VARCHAR AND "
        "sequences.next_value <= %(ceiling)s::BIGINT RETURNING sequences.next_value"
    )
    lite = one_line(returning.compile(dialect=sqlite.dialect()))
    assert lite == (
        "UPDATE sequences SET next_value=(sequences.next_value + ?) WHERE sequences.name = ? "
        "AND sequences.next_value <= ? RETURNING next_value"
    )
    span = one_line(returning.compile(dialect=spanner_dialect()))
    assert span == (
        "UPDATE sequences SET next_value=(sequences.next_value + :n) WHERE sequences.name = "
        ":seq_name AND sequences.next_value <= :ceiling THEN RETURN next_value"
    )
    my = one_line(
        table_module._last_insert_id_statement("sequences").compile(dialect=mysql.dialect())
    )
    assert my == (
        "UPDATE sequences SET next_value=last_insert_id(sequences.next_value + %s) "
        "WHERE sequences.name = %s AND sequences.next_value <= %s"
    )


def test_mysql_and_mariadb_use_last_insert_id() -> None:
    # the dialect facts (sqlalchemy_seqkeys.dialects.mysql) say how it allocates
    for name in ("mysql", "mariadb", "mariadb+pymysql"):
        assert facts(name).allocates_with_last_insert_id
    for name in ("postgresql", "sqlite", "mssql", "oracle", "spanner", "firebird"):
        assert not facts(name).allocates_with_last_insert_id


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"mode": "batch", "batch_size": 0}, "batch_size must be an int from 1 to 2147483648"),
        ({"mode": "batch", "batch_size": 2**31 + 1}, "batch_size must be an int from 1"),
        ({"mode": "batch", "batch_size": 2.5}, "batch_size must be an int"),
        ({"mode": "batch", "low_watermark": None}, "low_watermark must be an int"),
        ({"mode": "batch", "refill_timeout": 0}, "refill_timeout must be a finite, positive"),
        ({"mode": "batch", "refill_timeout": float("inf")}, "refill_timeout"),
        ({"mode": "batch", "refill_timeout": True}, "refill_timeout"),
        ({"mode": "batch", "table": ""}, "table must be a non-empty str"),
        ({"mode": "async_batch", "batch_size": 100, "low_watermark": 100}, "low_watermark"),
        ({"mode": "async_batch", "batch_size": 100, "low_watermark": -1}, "low_watermark"),
        ({"mode": "eventually"}, "is not a sequence mode"),
        ({"mode": "batch", "start": -5}, "start must be an int"),
    ],
)
def test_bad_arguments_fail_at_construction(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(InvalidSequenceError, match=message):
        TableSequence("invoice_id", **kwargs)


def test_batch_mode_ignores_the_async_watermark() -> None:
    sequence = TableSequence("small", mode="batch", batch_size=10)  # low_watermark 50 unused
    assert repr(sequence) == "TableSequence('small', mode='batch', batch_size=10)"


@pytest.mark.parametrize("name", ["", "x" * 65, 42, None, "a\x00b", "tab\there", "trailing "])
def test_bad_names(name: Any) -> None:
    with pytest.raises(InvalidSequenceError):
        TableSequence(name, mode="separate")
    with pytest.raises(InvalidSequenceError):
        create_table_sequence(sa.create_engine("sqlite://"), name)


def test_a_64_character_name_is_fine() -> None:
    assert TableSequence("x" * 64, mode=SequenceMode.BATCH).name == "x" * 64
    assert TableSequence(" Rechnung Nr. 1", mode="batch").name  # spaces inside and in front


@pytest.mark.parametrize("count", [2.5, True, "3", -1, 2**31 + 1])
def test_next_values_takes_an_int_count(count: Any) -> None:
    sequence = TableSequence("a", mode="separate")
    with pytest.raises(InvalidSequenceError, match="n must be an int"):
        sequence.next_values(sa.create_engine("sqlite://"), count)


def test_name_type_is_exact_on_mysql_and_plain_elsewhere() -> None:
    type_ = table_module.name_type()
    assert type_.compile(dialect=mysql.dialect()) == (
        "VARCHAR(64) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin"
    )
    assert type_.compile(dialect=mysql.dialect(is_mariadb=True)).endswith("utf8mb4_bin")
    assert type_.compile(dialect=postgresql.dialect()) == "VARCHAR(64)"
    assert type_.compile(dialect=sqlite.dialect()) == "VARCHAR(64)"


def test_modes_accept_strings() -> None:
    assert TableSequence("a", mode="in_transaction").mode is SequenceMode.IN_TRANSACTION
    with pytest.raises(InvalidSequenceError):
        TableSequence("a", mode="separate").next_values(sa.create_engine("sqlite://"), -1)


def test_server_clock_per_dialect() -> None:
    from sqlalchemy_seqkeys.workers import server_now_ms

    expected = {
        "postgresql": "CAST(EXTRACT(EPOCH FROM clock_timestamp()) * 1000 AS BIGINT)",
        # zone-independent: UNIX_TIMESTAMP(NOW(3)) is an hour off in a repeated DST hour
        "mysql": "(TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6)) DIV 1000)",
        "sqlite": "CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER)",
        "spanner": "UNIX_MILLIS(CURRENT_TIMESTAMP())",
    }
    for name, sql in expected.items():
        compiled = str(sa.select(server_now_ms()).compile(dialect=DIALECTS[name]()))
        assert compiled == f"SELECT {sql} AS anon_1"


def test_resync_statement_per_dialect() -> None:
    from sqlalchemy_seqkeys.sequences.resync import resync_statement

    statement = resync_statement("invoice_id", "invoices", "id")
    highest = "(SELECT max(invoices.id) AS max_1 FROM invoices)"
    for dialect in (sqlite.dialect(), postgresql.dialect(), mysql.dialect(), spanner_dialect()):
        sql = one_line(statement.compile(dialect=dialect, compile_kwargs={"literal_binds": True}))
        assert sql == (
            f"UPDATE sequences SET next_value=({highest} + 1) WHERE sequences.name = "
            f"'invoice_id' AND sequences.next_value <= {highest} AND {highest} < "
            f"{2**63 - 1}"
        ), dialect.name
    other = resync_statement("s", "rows", "key", schema="app", sequences_table="seqs")
    sql = one_line(other.compile(dialect=postgresql.dialect()))
    assert sql.startswith("UPDATE seqs SET next_value=((SELECT max(app.rows.key) AS max_1 FROM")
    with pytest.raises(InvalidSequenceError, match="no column 'nope'"):
        resync_statement("s", sa.Table("t", sa.MetaData(), sa.Column("id", sa.Integer)), "nope")
    with pytest.raises(InvalidSequenceError, match="column must be a non-empty str"):
        resync_statement("s", "t", "")


@pytest.mark.parametrize("name", ["sqlite", "postgresql", "mysql", "mariadb"])
def test_migration_operations_offline(name: str) -> None:
    """``alembic upgrade --sql``: the exact-name ALTER on MySQL/MariaDB only, and the resync."""
    import io

    from alembic.migration import MigrationContext
    from alembic.operations import Operations

    import sqlalchemy_seqkeys.alembic

    sqlalchemy_seqkeys.alembic.register()  # where Alembic has not loaded the plugin

    buffer = io.StringIO()
    context = MigrationContext.configure(
        dialect_name=name,
        opts={"as_sql": True, "output_buffer": buffer, "literal_binds": True},
    )
    op = Operations(context)
    op.make_sequence_names_case_sensitive()
    op.make_sequence_names_case_insensitive("my_sequences")
    op.resync_table_sequence("invoice_id", "invoices", "id")
    statements = [one_line(s) for s in buffer.getvalue().split(";") if s.strip()]
    if name in ("mysql", "mariadb"):
        assert statements[:2] == [
            "ALTER TABLE sequences MODIFY name VARCHAR(64) CHARACTER SET utf8mb4 "
            "COLLATE utf8mb4_bin NOT NULL",
            "ALTER TABLE my_sequences MODIFY name VARCHAR(64) NOT NULL",
        ]
        statements = statements[2:]
    assert len(statements) == 1
    assert statements[0].startswith(
        "UPDATE sequences SET next_value=((SELECT max(invoices.id) AS max_1 FROM invoices) + 1)"
    )
