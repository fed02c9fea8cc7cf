"""server_uuid() and server_uuid7() check the storage of the column whose DDL is compiled.

- Declared once in an ``Annotated`` type (a ``mapped_column`` template that
  declarative copies into each model's column), the check and the DDL use each
  model's own column: its type from ``type_annotation_map``, or the type the
  model gives it (a ``CHAR(32)`` there is refused, as it is without ``Annotated``).
- Every dialect they compile for checks: on PostgreSQL (18, or a dialect that
  never connected) a ``uuid`` column or 36 characters of text; server_uuid7()
  on MariaDB a ``UUID`` or ``CHAR(36)`` column. Anything else raises
  UnsupportedServerFunctionError naming the column, its type and the fix.
"""

from __future__ import annotations

import io
import uuid
from collections.abc import Callable
from typing import Annotated, Any, ClassVar

import pytest
import sqlalchemy as sa
from sqlalchemy.dialects import mssql, mysql, postgresql
from sqlalchemy.dialects.mysql.mariadb import MariaDBDialect
from sqlalchemy.engine.interfaces import Dialect
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column
from sqlalchemy.schema import CreateTable

from sqlalchemy_seqkeys import (
    CombGuid,
    ServerUuid,
    ServerUuid7,
    UnsupportedServerFunctionError,
    server_uuid,
    server_uuid7,
)

Function = Callable[[], Any]


def with_version(make: Callable[[], Dialect], version: tuple[int, ...] | None) -> Dialect:
    dialect = make()
    dialect.server_version_info = version
    return dialect


def mariadb(version: tuple[int, ...] | None) -> Dialect:
    """MariaDB as connected to ``version``; None: the mariadb:// dialect, never connected."""
    if version is None:
        return MariaDBDialect()
    return with_version(lambda: mysql.dialect(is_mariadb=True), version)


def postgresql_18() -> Dialect:
    return with_version(postgresql.dialect, (18, 0))


def ddl(table: sa.Table, dialect: Dialect) -> str:
    return " ".join(str(CreateTable(table).compile(dialect=dialect)).split())


def one_column(function: Function, type_: Any) -> sa.Table:
    return sa.Table(
        "t", sa.MetaData(), sa.Column("id", type_, primary_key=True, server_default=function())
    )


class Char32(sa.TypeDecorator[str]):
    impl = sa.CHAR(32)
    cache_ok = True


# -- declared in an Annotated type ---------------------------------------------------------


#: keys declared once, as SQLAlchemy suggests: the type from type_annotation_map ...
UuidKey = Annotated[uuid.UUID, mapped_column(primary_key=True, server_default=server_uuid())]
Uuid7Key = Annotated[uuid.UUID, mapped_column(primary_key=True, server_default=server_uuid7())]
#: ... or in the template, which a model's own mapped_column(type) overrides
TypedUuidKey = Annotated[
    uuid.UUID,
    mapped_column(CombGuid(native_uuid=True), primary_key=True, server_default=server_uuid()),
]
TypedUuid7Key = Annotated[
    uuid.UUID,
    mapped_column(CombGuid(native_uuid=True), primary_key=True, server_default=server_uuid7()),
]


def annotated_models(function: Function) -> tuple[type[Any], type[Any]]:
    """Two models keyed by one Annotated template whose type comes from type_annotation_map."""

    class Base(DeclarativeBase):
        type_annotation_map: ClassVar[dict[Any, Any]] = {uuid.UUID: CombGuid(native_uuid=True)}

    if function is server_uuid:

        class Order(Base):
            __tablename__ = "orders"
            id: Mapped[UuidKey]

        class Invoice(Base):
            __tablename__ = "invoices"
            id: Mapped[UuidKey]

    else:

        class Order(Base):  # type: ignore[no-redef]
            __tablename__ = "orders"
            id: Mapped[Uuid7Key]

        class Invoice(Base):  # type: ignore[no-redef]
            __tablename__ = "invoices"
            id: Mapped[Uuid7Key]

    return Order, Invoice


@pytest.mark.parametrize(
    ("function", "dialect", "default"),
    [
        (server_uuid, mariadb((10, 11, 6)), "id UUID NOT NULL DEFAULT (UUID())"),
        (server_uuid, mariadb(None), "id UUID NOT NULL DEFAULT (UUID_v7())"),
        (server_uuid, postgresql_18(), "id UUID DEFAULT uuidv7() NOT NULL"),
        (server_uuid, mssql.dialect(), "id UNIQUEIDENTIFIER NOT NULL DEFAULT NEWSEQUENTIALID()"),
        (server_uuid7, mariadb((11, 7, 2)), "id UUID NOT NULL DEFAULT (UUID_v7())"),
        (server_uuid7, postgresql.dialect(), "id UUID DEFAULT uuidv7() NOT NULL"),
    ],
    ids=[
        "server_uuid-mariadb 10.11.6",
        "server_uuid-mariadb, no version",
        "server_uuid-postgresql 18",
        "server_uuid-mssql",
        "server_uuid7-mariadb 11.7.2",
        "server_uuid7-postgresql, no version",
    ],
)
def test_an_annotated_key_compiles_for_each_models_column(
    function: Function, dialect: Dialect, default: str
) -> None:
    models = annotated_models(function)
    elements = []
    for model in models:
        column = model.__table__.c.id
        element = column.server_default.arg
        assert isinstance(element, ServerUuid | ServerUuid7)
        assert element.column is column  # not the template's typeless column
        elements.append(element)
        assert default in ddl(model.__table__, dialect)
    assert elements[0] is not elements[1]


@pytest.mark.parametrize(
    ("function", "dialect"),
    [
        (server_uuid, mariadb((10, 11, 6))),
        (server_uuid, mariadb((11, 7, 2))),
        (server_uuid, postgresql_18()),
        (server_uuid, postgresql.dialect()),
        (server_uuid7, mariadb((11, 7, 2))),  # (MariaDB 10.11 has no UUID_v7() at all)
        (server_uuid7, postgresql_18()),
        (server_uuid7, postgresql.dialect()),
    ],
    ids=[
        "server_uuid-mariadb 10.11.6",
        "server_uuid-mariadb 11.7.2",
        "server_uuid-postgresql 18",
        "server_uuid-postgresql, no version",
        "server_uuid7-mariadb 11.7.2",
        "server_uuid7-postgresql 18",
        "server_uuid7-postgresql, no version",
    ],
)
def test_an_annotated_key_with_the_models_own_type_checks_that_type(
    function: Function, dialect: Dialect
) -> None:
    """The template says UUID; the model says CHAR(32): the model's type is checked."""

    class Base(DeclarativeBase):
        pass

    if function is server_uuid:

        class Legacy(Base):
            __tablename__ = "legacy"
            id: Mapped[TypedUuidKey] = mapped_column(sa.CHAR(32))
            n: Mapped[int]

    else:

        class Legacy(Base):  # type: ignore[no-redef]
            __tablename__ = "legacy"
            id: Mapped[TypedUuid7Key] = mapped_column(sa.CHAR(32))
            n: Mapped[int]

    with pytest.raises(UnsupportedServerFunctionError) as caught:
        CreateTable(Legacy.__table__).compile(dialect=dialect)
    message = str(caught.value)
    assert "column legacy.id is CHAR(32)" in message, message
    assert "default=new_uuid7" in message


def test_a_mixins_key_is_each_tables_own() -> None:
    class Base(DeclarativeBase):
        pass

    class KeyMixin:
        id: Mapped[uuid.UUID] = mapped_column(
            CombGuid(), primary_key=True, server_default=server_uuid7()
        )

    class A(KeyMixin, Base):
        __tablename__ = "a"

    class B(KeyMixin, Base):
        __tablename__ = "b"

    for model in (A, B):
        column = model.__table__.c.id
        assert column.server_default.arg.column is column
        assert "id UUID DEFAULT uuidv7() NOT NULL" in ddl(model.__table__, postgresql_18())


def test_a_copy_of_a_copy_and_the_original_keep_their_own_columns() -> None:
    table = one_column(server_uuid7, CombGuid())
    copy = table.to_metadata(sa.MetaData(), name="copy")
    again = copy.to_metadata(sa.MetaData(), name="again")
    for t in (table, copy, again):
        assert t.c.id.server_default.arg.column is t.c.id  # type: ignore[union-attr]
        assert "DEFAULT uuidv7()" in ddl(t, postgresql_18())


def test_one_default_clause_given_to_two_columns() -> None:
    clause = sa.DefaultClause(server_uuid7())
    table = sa.Table(
        "two",
        sa.MetaData(),
        sa.Column("a", CombGuid(), primary_key=True, server_default=clause),
        sa.Column("b", sa.CHAR(32), server_default=clause),
    )
    assert table.c.a.server_default.arg.column is table.c.a  # type: ignore[union-attr]
    assert table.c.b.server_default.arg.column is table.c.b  # type: ignore[union-attr]
    with pytest.raises(UnsupportedServerFunctionError, match=r"column two\.b is CHAR\(32\)"):
        CreateTable(table).compile(dialect=postgresql_18())


# -- every dialect they compile for checks --------------------------------------------------

POSTGRESQL = {"postgresql 18": postgresql_18, "postgresql, no version": postgresql.dialect}

#: on PostgreSQL: a uuid column, or text that holds the 36 characters
POSTGRESQL_FITS = {
    "CombGuid()": CombGuid(),
    "CombGuid(binary=True)": CombGuid(binary=True),
    "CombGuid(native_uuid=True)": CombGuid(native_uuid=True),
    "Uuid()": sa.Uuid(),
    "postgresql.UUID()": postgresql.UUID(),
    "CHAR(36)": sa.CHAR(36),
    "String(36)": sa.String(36),
    "Text()": sa.Text(),
}

#: label -> (type, as the message names it)
POSTGRESQL_REFUSED = {
    "CHAR(32)": (sa.CHAR(32), "CHAR(32)"),
    "Integer": (sa.Integer(), "INTEGER"),
    "BINARY(15)": (sa.BINARY(15), "BINARY(15)"),
    "LargeBinary": (sa.LargeBinary(), "BYTEA"),
    "String(20)": (sa.String(20), "VARCHAR(20)"),
    "Uuid(as text)": (sa.Uuid(native_uuid=False), "CHAR(32)"),
    "TypeDecorator over CHAR(32)": (Char32(), "CHAR(32)"),
}


@pytest.mark.parametrize("function", [server_uuid, server_uuid7])
@pytest.mark.parametrize("server", list(POSTGRESQL))
@pytest.mark.parametrize("label", list(POSTGRESQL_FITS))
def test_postgresql_takes_a_uuid_or_its_text(function: Function, server: str, label: str) -> None:
    table = one_column(function, POSTGRESQL_FITS[label])
    assert " DEFAULT uuidv7() NOT NULL" in ddl(table, POSTGRESQL[server]())


@pytest.mark.parametrize("function", [server_uuid, server_uuid7])
@pytest.mark.parametrize("server", list(POSTGRESQL))
@pytest.mark.parametrize("label", list(POSTGRESQL_REFUSED))
def test_postgresql_refuses_any_other_column(function: Function, server: str, label: str) -> None:
    type_, shown = POSTGRESQL_REFUSED[label]
    with pytest.raises(UnsupportedServerFunctionError) as caught:
        ddl(one_column(function, type_), POSTGRESQL[server]())
    message = str(caught.value)
    assert f"{function.__name__}():" in message
    assert f"column t.id is {shown}" in message, message
    assert "uuidv7()" in message
    assert "CombGuid()" in message  # the fix
    assert "default=new_uuid7" in message  # or the client-side key


MARIADB_UUID7 = {"mariadb 11.7.2": (11, 7, 2), "mariadb, no version": None}


@pytest.mark.parametrize("server", list(MARIADB_UUID7))
@pytest.mark.parametrize(
    ("type_", "column"),
    [
        (CombGuid(), "id CHAR(36) CHARACTER SET ascii NOT NULL"),
        (CombGuid(native_uuid=True), "id UUID NOT NULL"),
    ],
    ids=["CombGuid()", "CombGuid(native_uuid=True)"],
)
def test_server_uuid7_on_mariadb_takes_uuid_or_char36(server: str, type_: Any, column: str) -> None:
    sql = ddl(one_column(server_uuid7, type_), mariadb(MARIADB_UUID7[server]))
    # SQLAlchemy 2.0 writes a default of a never-connected MariaDB without parentheses
    assert f"{column} DEFAULT (UUID_v7())" in sql or f"{column} DEFAULT UUID_v7()" in sql, sql


@pytest.mark.parametrize("server", list(MARIADB_UUID7))
@pytest.mark.parametrize(
    ("type_", "shown"),
    [
        (sa.CHAR(32), "CHAR(32)"),
        (CombGuid(binary=True), "BINARY(16)"),
        (sa.Integer(), "INTEGER"),
        (Char32(), "CHAR(32)"),
    ],
    ids=["CHAR(32)", "BINARY(16)", "Integer", "TypeDecorator over CHAR(32)"],
)
def test_server_uuid7_on_mariadb_refuses_any_other_column(
    server: str, type_: Any, shown: str
) -> None:
    with pytest.raises(UnsupportedServerFunctionError) as caught:
        ddl(one_column(server_uuid7, type_), mariadb(MARIADB_UUID7[server]))
    message = str(caught.value)
    assert f"column t.id is {shown}" in message, message
    assert "UUID_v7()" in message
    assert "CombGuid(native_uuid=True) or CombGuid()" in message
    assert "default=new_uuid7" in message


def test_without_a_column_there_is_nothing_to_check() -> None:
    table = one_column(server_uuid7, sa.CHAR(32))
    insert = sa.insert(table).values(id=server_uuid7())
    assert "VALUES (uuidv7())" in str(insert.compile(dialect=postgresql_18()))
    assert str(sa.select(server_uuid()).compile(dialect=postgresql_18())).startswith(
        "SELECT uuidv7()"
    )


def test_offline_alembic_refuses_before_writing_the_table() -> None:
    from alembic.migration import MigrationContext
    from alembic.operations import Operations

    buf = io.StringIO()
    ctx = MigrationContext.configure(
        dialect_name="postgresql", opts={"as_sql": True, "output_buffer": buf}
    )
    with pytest.raises(UnsupportedServerFunctionError, match=r"column events\.id is CHAR\(32\)"):
        Operations(ctx).create_table(
            "events", sa.Column("id", sa.CHAR(32), primary_key=True, server_default=server_uuid())
        )
    assert "CREATE TABLE" not in buf.getvalue()
