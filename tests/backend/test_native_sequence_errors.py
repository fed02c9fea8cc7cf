"""create() and drop() of a native sequence, and the Alembic ops that create and drop one,
raise SeqKeysErrors, never the driver's.

A name another object holds (a table, a view), a sequence a column default still uses,
and a start MariaDB's sequences cannot hold: each is refused naming what is wrong and
what to do, and nothing is changed.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import Engine

from sqlalchemy_seqkeys import (
    BitReversedSequence,
    InvalidBitReversalError,
    InvalidSequenceError,
    MigrationError,
    PooledSequence,
    SequenceExistsError,
    reverse_bits,
)
from tests.backend._pooled import execute
from tests.backend.test_alembic_hostile import operations

pytestmark = pytest.mark.backend

CLASH = "seqkeys_clash"
USED = "seqkeys_used_seq"
USER = "seqkeys_used_by"
#: the largest value of a MariaDB sequence (a signed BIGINT one): 2**63 - 2
MARIADB_MAX = 2**63 - 2


@pytest.fixture(params=["postgresql", "mysql"])
def server_engine(request: pytest.FixtureRequest, engines: Any) -> Iterator[Engine]:
    engine: Engine = engines.get(request.param)
    yield engine
    execute(engine, f"DROP TABLE IF EXISTS {CLASH}")
    execute(engine, f"DROP TABLE IF EXISTS {USER}")
    execute(engine, f"DROP SEQUENCE IF EXISTS {USED}")


def is_mariadb(engine: Engine) -> bool:
    return engine.dialect.name in ("mysql", "mariadb")


@pytest.mark.parametrize("checkfirst", [False, True])
@pytest.mark.parametrize("cls", [PooledSequence, BitReversedSequence])
def test_a_name_a_table_holds_is_refused(
    server_engine: Engine, cls: type[Any], checkfirst: bool
) -> None:
    execute(server_engine, f"CREATE TABLE {CLASH} (id INT)")
    with pytest.raises(SequenceExistsError, match="not a sequence") as info:
        cls(CLASH).create(server_engine, checkfirst=checkfirst)
    assert CLASH in str(info.value)
    assert "another name" in str(info.value)
    assert isinstance(info.value.__cause__, sa.exc.DBAPIError)
    with server_engine.connect() as conn:  # the table is as it was
        assert conn.execute(sa.text(f"SELECT COUNT(*) FROM {CLASH}")).scalar() == 0


@pytest.mark.parametrize("cls", [PooledSequence, BitReversedSequence])
def test_a_sequence_a_column_default_uses_is_not_dropped(pg_engine: Engine, cls: type[Any]) -> None:
    """PostgreSQL keeps a sequence a DEFAULT nextval(...) depends on (MariaDB drops it)."""
    execute(pg_engine, f"DROP TABLE IF EXISTS {USER}")
    execute(pg_engine, f"DROP SEQUENCE IF EXISTS {USED}")
    sequence = cls(USED)
    sequence.create(pg_engine)
    try:
        execute(pg_engine, f"CREATE TABLE {USER} (id BIGINT DEFAULT nextval('{USED}'))")
        error = InvalidSequenceError if cls is PooledSequence else InvalidBitReversalError
        with pytest.raises(error, match="depend") as info:
            sequence.drop(pg_engine)
        message = str(info.value)
        assert USED in message  # names the sequence
        assert USER in message  # and what uses it
        assert "DROP DEFAULT" in message
        assert isinstance(info.value.__cause__, sa.exc.DBAPIError)
        with pg_engine.connect() as conn:
            assert sa.inspect(conn).has_sequence(USED)  # nothing was dropped
    finally:
        execute(pg_engine, f"DROP TABLE IF EXISTS {USER}")
        execute(pg_engine, f"DROP SEQUENCE IF EXISTS {USED}")


def test_a_start_past_mariadbs_sequences_is_refused_before_any_statement(
    server_engine: Engine,
) -> None:
    """BitReversedSequence takes counters up to 2**63 - 1; MariaDB's sequences stop one short."""
    sequence = BitReversedSequence("seqkeys_br_max", start=2**63 - 1)
    if not is_mariadb(server_engine):
        sequence.create(server_engine)  # PostgreSQL holds it: the same value as Spanner's
        try:
            assert sequence.next_value(server_engine) == reverse_bits(2**63 - 1)
        finally:
            sequence.drop(server_engine)
        return
    sent: list[str] = []

    def record(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        sent.append(statement)

    with server_engine.connect() as conn:
        sa.event.listen(conn, "before_cursor_execute", record)
        with pytest.raises(InvalidBitReversalError, match=str(MARIADB_MAX)):
            sequence.create(conn)
        assert sent == []
    last = BitReversedSequence("seqkeys_br_max", start=MARIADB_MAX)  # the last one it holds
    last.create(server_engine)
    try:
        assert last.next_value(server_engine) == reverse_bits(MARIADB_MAX)
    finally:
        last.drop(server_engine)


#: op.create_..._sequence(name) and op.drop_..._sequence(name) of each class
_OPS = {
    PooledSequence: ("create_pooled_sequence", "drop_pooled_sequence"),
    BitReversedSequence: ("create_bit_reversed_sequence", "drop_bit_reversed_sequence"),
}


@pytest.mark.parametrize("cls", list(_OPS))
def test_the_create_op_refuses_a_name_a_table_holds(server_engine: Engine, cls: type[Any]) -> None:
    execute(server_engine, f"CREATE TABLE {CLASH} (id INT)")
    with (
        operations(server_engine) as op,
        pytest.raises(SequenceExistsError, match="not a sequence"),
    ):
        getattr(op, _OPS[cls][0])(CLASH)
    with server_engine.connect() as conn:  # the table is as it was
        assert conn.execute(sa.text(f"SELECT COUNT(*) FROM {CLASH}")).scalar() == 0


@pytest.mark.parametrize("cls", list(_OPS))
def test_the_drop_op_refuses_a_sequence_a_column_default_uses(
    pg_engine: Engine, cls: type[Any]
) -> None:
    execute(pg_engine, f"DROP TABLE IF EXISTS {USER}")
    execute(pg_engine, f"DROP SEQUENCE IF EXISTS {USED}")
    create, drop = _OPS[cls]
    try:
        with operations(pg_engine) as op:
            getattr(op, create)(USED)
            execute(pg_engine, f"CREATE TABLE {USER} (id BIGINT DEFAULT nextval('{USED}'))")
            with pytest.raises(MigrationError, match="depend") as info:
                getattr(op, drop)(USED)
        assert USER in str(info.value)
        assert isinstance(info.value.__cause__, sa.exc.DBAPIError)
        with pg_engine.connect() as conn:
            assert sa.inspect(conn).has_sequence(USED)  # nothing was dropped
    finally:
        execute(pg_engine, f"DROP TABLE IF EXISTS {USER}")
        execute(pg_engine, f"DROP SEQUENCE IF EXISTS {USED}")


def test_the_create_op_refuses_a_start_past_mariadbs_sequences(mysql_engine: Engine) -> None:
    sent: list[str] = []

    def record(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        sent.append(statement)

    sa.event.listen(mysql_engine, "before_cursor_execute", record)
    try:
        with operations(mysql_engine) as op, pytest.raises(MigrationError, match=str(MARIADB_MAX)):
            op.create_bit_reversed_sequence("seqkeys_br_max", start_with_counter=2**63 - 1)
    finally:
        sa.event.remove(mysql_engine, "before_cursor_execute", record)
    assert not any("CREATE SEQUENCE" in statement.upper() for statement in sent)


def test_spanners_refusals_are_seqkeys_errors(engines: Any) -> None:
    """Spanner runs DDL at the commit and raises google.api_core errors there, raw before."""
    engine: Engine = engines.get("spanner")
    clash = BitReversedSequence(CLASH)
    used = BitReversedSequence(USED)
    try:
        with engine.begin() as conn:
            conn.exec_driver_sql(f"CREATE TABLE {CLASH} (id INT64 NOT NULL) PRIMARY KEY (id)")
        with pytest.raises(SequenceExistsError, match="not a sequence") as info:
            clash.create(engine)
        assert "Duplicate name" in str(info.value)  # what the server said
        used.create(engine)
        with engine.begin() as conn:
            conn.exec_driver_sql(
                f"CREATE TABLE {USER} (id INT64 NOT NULL DEFAULT "
                f"(GET_NEXT_SEQUENCE_VALUE(SEQUENCE {USED}))) PRIMARY KEY (id)"
            )
        with pytest.raises(InvalidBitReversalError, match="depend"):
            used.drop(engine)
        with engine.connect() as conn:
            assert sa.inspect(conn).has_sequence(USED)  # nothing was dropped
    finally:
        with engine.begin() as conn:
            for table in (CLASH, USER):
                if sa.inspect(conn).has_table(table):
                    conn.exec_driver_sql(f"DROP TABLE {table}")
        used.drop(engine, checkfirst=True)
