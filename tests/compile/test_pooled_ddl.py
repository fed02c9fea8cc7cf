"""PooledSequence's DDL per dialect, compiled without a server; its Alembic SQL; bad input.

Where the engine has sequences that increment (PostgreSQL, MariaDB, Oracle,
SQL Server) a pooled sequence is ``CREATE SEQUENCE ... INCREMENT BY
batch_size START WITH start``; where it has none (SQLite, MySQL, and
Spanner, whose sequences are bit-reversed) it is a row of the sequences
table, and no CREATE SEQUENCE is emitted.
"""

from __future__ import annotations

import io
from collections.abc import Callable
from typing import Any

import pytest
import sqlalchemy as sa
from alembic.migration import MigrationContext
from alembic.operations import Operations
from sqlalchemy.dialects import mssql, mysql, oracle, postgresql, sqlite
from sqlalchemy.schema import CreateSequence, DropSequence

import sqlalchemy_seqkeys.alembic
from sqlalchemy_seqkeys import (
    InvalidSequenceError,
    PooledSequence,
    SeqKeysError,
    sequences_table,
)
from sqlalchemy_seqkeys.alembic.pooled_ops import (
    CreatePooledSequenceOp,
    DropPooledSequenceOp,
    declared_pooled_sequences,
)

sqlalchemy_seqkeys.alembic.register()  # where Alembic has not loaded the plugin (not installed)


def spanner_dialect() -> Any:
    from google.cloud.sqlalchemy_spanner.sqlalchemy_spanner import SpannerDialect

    return SpannerDialect()


def mariadb_dialect() -> Any:
    from sqlalchemy.dialects.mysql.mariadb import MariaDBDialect

    return MariaDBDialect()


DIALECTS: dict[str, Callable[[], Any]] = {
    "postgresql": postgresql.dialect,
    "mariadb": mariadb_dialect,
    "oracle": oracle.dialect,
    "mssql": mssql.dialect,
    "mysql": mysql.dialect,
    "sqlite": sqlite.dialect,
    "spanner": spanner_dialect,
}
MOCK_URLS = {
    "postgresql": "postgresql://",
    "mariadb": "mariadb://",
    "oracle": "oracle://",
    "mssql": "mssql://",
    "mysql": "mysql://",
    "sqlite": "sqlite://",
    "spanner": "spanner+spanner:///projects/p/instances/i/databases/d",
}
NATIVE = ("postgresql", "mariadb", "oracle", "mssql")
FALLBACK = ("mysql", "sqlite", "spanner")

SEQUENCE = PooledSequence("order_id", batch_size=50, start=1000)

NEXTVAL = {
    "postgresql": "SELECT nextval('order_id') AS next_value_1",
    "mariadb": "SELECT nextval(order_id) AS next_value_1",
    "oracle": "SELECT order_id.nextval AS next_value_1 FROM DUAL",
    "mssql": "SELECT NEXT VALUE FOR order_id AS next_value_1",
}
#: MariaDB's is NOCACHE: the row it stores is then the next block's start, which doctor reads
CREATE = {
    name: "CREATE SEQUENCE order_id INCREMENT BY 50 START WITH 1000"
    + (" NOCACHE" if name == "mariadb" else "")
    for name in NATIVE
}


@pytest.mark.parametrize("name", NATIVE)
def test_native_sequence_ddl(name: str) -> None:
    dialect = DIALECTS[name]()
    create = CreateSequence(SEQUENCE.sequence).compile(dialect=dialect)
    # every engine's default is NO CYCLE, and a BIGINT range on PostgreSQL, MariaDB
    # and SQL Server (whose default START WITH would be -2**63: it is always given)
    assert str(create) == CREATE[name]
    assert str(DropSequence(SEQUENCE.sequence).compile(dialect=dialect)) == (
        "DROP SEQUENCE order_id"
    )
    assert str(SEQUENCE._select_next.compile(dialect=dialect)) == NEXTVAL[name]


def ddl_of_create_all(name: str, metadata: sa.MetaData) -> list[str]:
    """What ``create_all`` then ``drop_all`` emit on ``name``, without a server."""
    dialect = DIALECTS[name]()
    emitted: list[str] = []

    def executor(statement: Any, *args: Any, **kw: Any) -> None:
        compiled = statement.compile(dialect=dialect, compile_kwargs={"literal_binds": True})
        emitted.append(" ".join(str(compiled).split()))

    engine = sa.create_mock_engine(MOCK_URLS[name], executor)
    metadata.create_all(engine, checkfirst=False)
    metadata.drop_all(engine, checkfirst=False)
    return emitted


def declare() -> sa.MetaData:
    metadata = sa.MetaData()
    order_id = PooledSequence("order_id", batch_size=50, start=1000, metadata=metadata)
    sa.Table(
        "orders",
        metadata,
        sa.Column("id", sa.BigInteger, primary_key=True, default=order_id, autoincrement=False),
    )
    return metadata


@pytest.mark.parametrize("name", NATIVE)
def test_create_all_creates_the_native_sequence(name: str) -> None:
    ddl = ddl_of_create_all(name, declare())
    assert CREATE[name] in ddl
    assert "DROP SEQUENCE order_id" in ddl
    assert not any("sequences" in statement for statement in ddl)


@pytest.mark.parametrize("name", FALLBACK)
def test_create_all_adds_a_sequences_table_row_instead(name: str) -> None:
    ddl = ddl_of_create_all(name, declare())
    assert not any(s.startswith(("CREATE SEQUENCE", "DROP SEQUENCE")) for s in ddl), ddl
    assert any(s.startswith("CREATE TABLE sequences") for s in ddl), ddl
    assert "INSERT INTO sequences (name, next_value) VALUES ('order_id', 1000)" in ddl
    assert "DELETE FROM sequences WHERE sequences.name = 'order_id'" in ddl


def test_a_declared_sequences_table_is_created_once() -> None:
    metadata = declare()
    sequences_table(metadata)
    ddl = ddl_of_create_all("sqlite", metadata)
    assert sum(s.startswith("CREATE TABLE sequences") for s in ddl) == 1


def offline(name: str, run: Callable[[Operations], None]) -> str:
    buffer = io.StringIO()
    dialect_name = "spanner+spanner" if name == "spanner" else name
    context = MigrationContext.configure(
        dialect_name=dialect_name,
        opts={"as_sql": True, "output_buffer": buffer, "literal_binds": True},
    )
    run(Operations(context))
    return " ".join(buffer.getvalue().split())


@pytest.mark.parametrize("name", NATIVE)
def test_offline_create_and_drop_native(name: str) -> None:
    sql = offline(name, lambda op: op.create_pooled_sequence("order_id", 50, start=1000))
    assert sql.startswith((CREATE[name] + ";", CREATE[name] + " /"))  # Oracle's: /
    sql = offline(name, lambda op: op.drop_pooled_sequence("order_id", 50, start=1000))
    assert sql.startswith("DROP SEQUENCE order_id")


@pytest.mark.parametrize("name", FALLBACK)
def test_offline_create_and_drop_fallback(name: str) -> None:
    sql = offline(name, lambda op: op.create_pooled_sequence("order_id", 50, start=1000))
    assert sql == "INSERT INTO sequences (name, next_value) VALUES ('order_id', 1000);"
    sql = offline(name, lambda op: op.drop_pooled_sequence("order_id", 50))
    assert sql == "DELETE FROM sequences WHERE sequences.name = 'order_id';"


def test_offline_resync_on_postgresql_locks_then_moves_forward_only() -> None:
    sql = offline("postgresql", lambda op: op.resync_pooled_sequence("order_id", "orders", "id"))
    lock, move = sql.split(";")[:2]
    assert lock == "ALTER SEQUENCE order_id NO CYCLE"  # blocks nextval until commit
    assert move.strip().startswith(
        "SELECT setval(CAST('order_id' AS REGCLASS), top.m + 1, false) AS setval_1 "
        "FROM (SELECT max(orders.id) AS m FROM orders) AS top JOIN order_id AS seq ON true"
    )
    # only when the next nextval would return a key at or below the table's maximum
    assert "WHERE top.m >= CASE WHEN seq.is_called THEN" in move
    assert "top.m < 9223372036854775807" in move


def test_offline_resync_on_mariadb_goes_through_setval() -> None:
    sql = offline("mariadb", lambda op: op.resync_pooled_sequence("order_id", "orders", "id"))
    assert sql == (
        "SET @seqkeys_resync_next = (SELECT CASE WHEN (top.m < 9223372036854775807) "
        "THEN top.m + 1 ELSE NULL END AS anon_1 FROM (SELECT max(orders.id) AS m FROM orders) "
        "AS top), @seqkeys_resync_max = (SELECT order_id.maximum_value FROM order_id); "
        "EXECUTE IMMEDIATE IF(@seqkeys_resync_next IS NULL, 'SELECT NULL', "
        "IF(@seqkeys_resync_next > @seqkeys_resync_max, 'SIGNAL SQLSTATE ''22003'' "
        "SET MYSQL_ERRNO = 1264, MESSAGE_TEXT = ''the keys are past the MAXVALUE of the "
        "sequence''', CONCAT('SELECT SETVAL(', 'order_id', ', ', @seqkeys_resync_next, "
        "', 0)')));"
    )


def test_offline_resync_names_the_sequence_exactly() -> None:
    """A % or a quote in the name is quoted for the server, never doubled for a driver.

    (Alembic's env.py template renders offline SQL with paramstyle "named": no % doubling.)
    """

    def offline(name: str, run: Callable[[Operations], None]) -> str:
        buffer = io.StringIO()
        context = MigrationContext.configure(
            dialect_name=name,
            dialect_opts={"paramstyle": "named"},
            opts={"as_sql": True, "output_buffer": buffer, "literal_binds": True},
        )
        run(Operations(context))
        return " ".join(buffer.getvalue().split())

    sql = offline("postgresql", lambda op: op.resync_pooled_sequence("q%x'", "da%ta", "i%d"))
    assert sql.startswith("ALTER SEQUENCE \"q%x'\" NO CYCLE; SELECT setval(CAST('\"q%x''\"' AS")
    assert 'max("da%ta"."i%d")' in sql
    sql = offline("mariadb", lambda op: op.resync_pooled_sequence("q%x`", "da%ta", "i%d"))
    assert "max(`da%ta`.`i%d`)" in sql
    assert "CONCAT('SELECT SETVAL(', '`q%x```', ', '" in sql


@pytest.mark.parametrize("name", FALLBACK)
def test_offline_resync_without_sequences_updates_the_row(name: str) -> None:
    sql = offline(name, lambda op: op.resync_pooled_sequence("order_id", "orders", "id"))
    assert sql.startswith("UPDATE sequences SET next_value=((SELECT max(orders.id)")


@pytest.mark.parametrize("name", ["oracle", "mssql"])
def test_resync_is_refused_where_it_is_not_implemented(name: str) -> None:
    with pytest.raises(InvalidSequenceError, match="PostgreSQL and MariaDB"):
        offline(name, lambda op: op.resync_pooled_sequence("order_id", "orders", "id"))


def test_operations_reverse_each_other() -> None:
    create = CreatePooledSequenceOp("order_id", 20, 7, None, "my_sequences")
    drop = create.reverse()
    assert isinstance(drop, DropPooledSequenceOp)
    assert drop.arguments() == create.arguments()
    assert isinstance(drop.reverse(), CreatePooledSequenceOp)


def test_autogenerate_renders_the_operation() -> None:
    from alembic.autogenerate import render_python_code
    from alembic.operations import ops

    upgrade = ops.UpgradeOps([CreatePooledSequenceOp("order_id", 20, 7)])
    code = render_python_code(upgrade)
    assert "op.create_pooled_sequence('order_id', 20, start=7)" in code
    code = render_python_code(upgrade.reverse())
    assert "op.drop_pooled_sequence('order_id', 20, start=7)" in code


def test_declared_sequences_are_found_in_defaults_and_metadata() -> None:
    metadata = declare()
    other = PooledSequence("attached_only", batch_size=10, metadata=metadata)
    found = declared_pooled_sequences([metadata])
    assert set(found) == {"order_id", "attached_only"}
    assert found["attached_only"] is other


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (
            lambda: PooledSequence("s", batch_size=0),
            "batch_size must be an int from 1 to 2147483648",
        ),
        (lambda: PooledSequence("s", batch_size=2**31 + 1), "batch_size must be an int from 1"),
        (lambda: PooledSequence("s", batch_size=50.0), "batch_size must be an int"),
        (lambda: PooledSequence("s", batch_size=True), "batch_size must be an int"),
        (lambda: PooledSequence("s", batch_size="50"), "batch_size must be an int"),
        (lambda: PooledSequence("s", batch_size=50, start=0), "start must be an int from 1"),
        (lambda: PooledSequence("s", batch_size=50, start=2**63 - 50), "must fit in a BIGINT"),
        (lambda: PooledSequence("", batch_size=50), "a sequence name must be a non-empty str"),
        (lambda: PooledSequence(None, batch_size=50), "a sequence name must be a non-empty str"),
        (lambda: PooledSequence("a" * 65, batch_size=50), "at most 64"),
        (
            lambda: PooledSequence("s", batch_size=50, metadata="md"),
            "metadata must be a MetaData or None",
        ),
        (lambda: PooledSequence("s", batch_size=50, schema=""), "schema must be a non-empty str"),
        (lambda: PooledSequence("s", batch_size=50, table=""), "table must be a non-empty str"),
        (
            lambda: PooledSequence("s").next_values(sa.create_engine("sqlite://"), -1),
            "n must be an int from 0",
        ),
        (lambda: PooledSequence("s").next_value("engine"), "takes an Engine or Connection"),
        (lambda: CreatePooledSequenceOp("s", 0), "allocation_size must be an int"),
    ],
)
def test_bad_arguments(call: Callable[[], object], message: str) -> None:
    with pytest.raises(SeqKeysError, match=message.replace("*", r"\*")):
        call()


def test_the_largest_start_and_size_are_accepted() -> None:
    assert PooledSequence("s", batch_size=2**31).batch_size == 2**31
    assert PooledSequence("s", batch_size=50, start=2**63 - 51).start == 2**63 - 51


def test_repr_is_the_declaration() -> None:
    assert repr(SEQUENCE) == "PooledSequence('order_id', batch_size=50, start=1000)"
    assert repr(PooledSequence("x")) == "PooledSequence('x', batch_size=50)"
