"""server_uuid() compiled for every dialect without a server: the form each server mints,
the column storage it needs, and a SeqKeysError naming default=new_uuid7 where there is none."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy.dialects import mssql, mysql, oracle, postgresql, sqlite
from sqlalchemy.dialects.mysql.mariadb import MariaDBDialect
from sqlalchemy.engine.interfaces import Dialect
from sqlalchemy.schema import CreateTable

from sqlalchemy_seqkeys import (
    CombGuid,
    SeqKeysError,
    ServerUuid,
    UnsupportedServerFunctionError,
    server_uuid,
)


def spanner_dialect() -> Dialect:
    from google.cloud.sqlalchemy_spanner.sqlalchemy_spanner import SpannerDialect

    return SpannerDialect()  # type: ignore[no-any-return]


def with_version(make: Callable[[], Dialect], version: tuple[int, ...]) -> Callable[[], Dialect]:
    """A dialect as it is after connecting to a server of ``version``."""

    def dialect() -> Dialect:
        d = make()
        d.server_version_info = version
        return d

    return dialect


def mariadb() -> Dialect:
    return mysql.dialect(is_mariadb=True)  # what mysql+pymysql:// becomes on a MariaDB server


def ddl(dialect: Dialect, type_: Any) -> str:
    table = sa.Table(
        "events",
        sa.MetaData(),
        sa.Column("id", type_, primary_key=True, server_default=server_uuid()),
    )
    return " ".join(str(CreateTable(table).compile(dialect=dialect)).split())


#: label -> (dialect, column type, the DEFAULT clause of the DDL)
SUPPORTED: dict[str, tuple[Callable[[], Dialect], Any, str]] = {
    "postgresql 18.0": (with_version(postgresql.dialect, (18, 0)), CombGuid(), "DEFAULT uuidv7()"),
    "postgresql, no version": (postgresql.dialect, CombGuid(), "DEFAULT uuidv7()"),
    "mariadb 11.7.2, UUID": (
        with_version(mariadb, (11, 7, 2)),
        CombGuid(native_uuid=True),
        "id UUID NOT NULL DEFAULT (UUID_v7())",
    ),
    "mariadb 11.7.2, CHAR(36)": (
        with_version(mariadb, (11, 7, 2)),
        CombGuid(),
        "DEFAULT (UUID_v7())",
    ),
    "mariadb 10.11.6, UUID": (
        with_version(mariadb, (10, 11, 6)),
        CombGuid(native_uuid=True),
        "id UUID NOT NULL DEFAULT (UUID())",
    ),
    # the first releases of their series that compare v7 in the UUID type right
    "mariadb 10.10.7, UUID": (
        with_version(mariadb, (10, 10, 7)),
        CombGuid(native_uuid=True),
        "id UUID NOT NULL DEFAULT (UUID())",
    ),
    "mariadb 11.2.2, UUID": (
        with_version(mariadb, (11, 2, 2)),
        CombGuid(native_uuid=True),
        "id UUID NOT NULL DEFAULT (UUID())",
    ),
    "mariadb dialect, no version": (
        MariaDBDialect,
        CombGuid(native_uuid=True),
        "id UUID NOT NULL DEFAULT (UUID_v7())",
    ),
    "mysql 8.0.36": (
        with_version(mysql.dialect, (8, 0, 36)),
        CombGuid(binary=True),
        "id BINARY(16) NOT NULL DEFAULT (UUID_TO_BIN(UUID(), 1))",
    ),
    "mysql 8.4.0": (
        with_version(mysql.dialect, (8, 4, 0)),
        CombGuid(binary=True),
        "DEFAULT (UUID_TO_BIN(UUID(), 1))",
    ),
    "mysql, no version": (mysql.dialect, CombGuid(binary=True), "DEFAULT (UUID_TO_BIN(UUID(), 1))"),
    "mssql": (mssql.dialect, CombGuid(), "id UNIQUEIDENTIFIER NOT NULL DEFAULT NEWSEQUENTIALID()"),
    "spanner": (spanner_dialect, CombGuid(), "id STRING(36) NOT NULL DEFAULT (GENERATE_UUID())"),
}

#: label -> (dialect, column type, words the message must hold)
REFUSED: dict[str, tuple[Callable[[], Dialect], Any, tuple[str, ...]]] = {
    "postgresql 17.5": (
        with_version(postgresql.dialect, (17, 5)),
        CombGuid(),
        ("PostgreSQL 17.5",),
    ),
    "postgresql 15.4": (
        with_version(postgresql.dialect, (15, 4)),
        CombGuid(),
        ("PostgreSQL 15.4",),
    ),
    "sqlite": (sqlite.dialect, CombGuid(), ("SQLite",)),
    "oracle": (oracle.dialect, CombGuid(), ("Oracle",)),
    "mariadb 10.6": (with_version(mariadb, (10, 6, 16)), CombGuid(), ("MariaDB 10.6.16", "10.7")),
    # UUID() as text sorts by its low time bits: only MariaDB's UUID type orders it
    "mariadb 10.11.6, CHAR(36)": (
        with_version(mariadb, (10, 11, 6)),
        CombGuid(),
        ("events.id", "CHAR(36)", "CombGuid(native_uuid=True)"),
    ),
    # before 10.11.6 (11.0.4, ...) CombGuid(native_uuid=True) is CHAR(36): the UUID
    # type stored v7 swapped before 10.11.5 (MDEV-29959), compared it wrongly in
    # 10.11.5 (MDEV-31926)
    "mariadb 10.11.4, native_uuid": (
        with_version(mariadb, (10, 11, 4)),
        CombGuid(native_uuid=True),
        ("CHAR(36)", "10.11.6"),
    ),
    "mariadb 10.11.5, native_uuid": (
        with_version(mariadb, (10, 11, 5)),
        CombGuid(native_uuid=True),
        ("CHAR(36)", "10.11.6", "11.0.4", "11.1.3", "11.2.2"),
    ),
    "mariadb 11.1.2, native_uuid": (
        with_version(mariadb, (11, 1, 2)),
        CombGuid(native_uuid=True),
        ("CHAR(36)", "11.1.3"),
    ),
    "mariadb 11.7, BINARY(16)": (
        with_version(mariadb, (11, 7, 2)),
        CombGuid(binary=True),
        ("BINARY(16)", "UUID or CHAR(36)"),
    ),
    "mysql 8.0.12": (with_version(mysql.dialect, (8, 0, 12)), CombGuid(binary=True), ("8.0.13",)),
    "mysql 8.0.36, CHAR(36)": (
        with_version(mysql.dialect, (8, 0, 36)),
        CombGuid(),
        ("BINARY(16)", "CombGuid(binary=True)"),
    ),
    "mssql, CHAR(36)": (mssql.dialect, sa.CHAR(36), ("UNIQUEIDENTIFIER",)),
    "spanner, BYTES(16)": (spanner_dialect, CombGuid(binary=True), ("STRING(36)", "BYTES(16)")),
}


@pytest.mark.parametrize("label", list(SUPPORTED))
def test_the_servers_own_key(label: str) -> None:
    make, type_, expected = SUPPORTED[label]
    assert expected in ddl(make(), type_)


@pytest.mark.parametrize("label", list(REFUSED))
def test_refused_with_the_client_side_alternative(label: str) -> None:
    make, type_, words = REFUSED[label]
    with pytest.raises(UnsupportedServerFunctionError) as caught:
        ddl(make(), type_)
    assert isinstance(caught.value, SeqKeysError)
    message = str(caught.value)
    assert "default=new_uuid7" in message
    for word in words:
        assert word in message, message


def test_each_column_gets_its_own_element() -> None:
    """One server_uuid() shared by two columns checks each column's own storage."""
    shared = server_uuid()
    table = sa.Table(
        "two",
        sa.MetaData(),
        sa.Column("a", CombGuid(native_uuid=True), primary_key=True, server_default=shared),
        sa.Column("b", CombGuid(), server_default=shared),
    )
    a, b = (table.c[name].server_default.arg for name in "ab")  # type: ignore[union-attr]
    assert isinstance(a, ServerUuid)
    assert a is not b
    assert a.column is table.c.a
    assert b.column is table.c.b
    with pytest.raises(UnsupportedServerFunctionError, match=r"column two\.b is CHAR\(36\)"):
        CreateTable(table).compile(dialect=with_version(mariadb, (10, 11, 6))())
    # a copy of the table checks the copy's columns
    copy = table.to_metadata(sa.MetaData())
    arg = copy.c.a.server_default.arg  # type: ignore[union-attr]
    assert arg.column is copy.c.a


def test_in_a_statement_without_a_column() -> None:
    assert str(server_uuid()) == "server_uuid()"
    statement = sa.select(server_uuid())
    on_mssql: Callable[[], Dialect] = mssql.dialect
    on_postgresql: Callable[[], Dialect] = postgresql.dialect
    assert str(statement.compile(dialect=on_mssql())).startswith("SELECT NEWSEQUENTIALID()")
    assert "uuidv7()" in str(statement.compile(dialect=on_postgresql()))


def test_a_metadata_with_it_pickles() -> None:
    import pickle

    metadata = sa.MetaData()
    sa.Table(
        "events",
        metadata,
        sa.Column("id", CombGuid(native_uuid=True), primary_key=True, server_default=server_uuid()),
    )
    copy = pickle.loads(pickle.dumps(metadata))
    arg = copy.tables["events"].c.id.server_default.arg  # type: ignore[union-attr]
    assert isinstance(arg, ServerUuid)
    assert arg.column is copy.tables["events"].c.id
    assert "DEFAULT (UUID())" in ddl(
        with_version(mariadb, (10, 11, 6))(), CombGuid(native_uuid=True)
    )
