"""server_uuid7() compiled for every dialect (no server): the function where the server has one,
a SeqKeysError that says to use default=new_uuid7 everywhere else."""

from __future__ import annotations

import io
from collections.abc import Callable
from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy.dialects import mssql, mysql, oracle, postgresql, sqlite
from sqlalchemy.dialects.mysql.mariadb import MariaDBDialect
from sqlalchemy.engine.interfaces import Dialect
from sqlalchemy.schema import CreateTable

from sqlalchemy_seqkeys import CombGuid, SeqKeysError
from sqlalchemy_seqkeys.uuid7_sql import ServerUuid7, UnsupportedServerFunctionError, server_uuid7


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


SUPPORTED: dict[str, tuple[Callable[[], Dialect], str]] = {
    "postgresql, no version": (postgresql.dialect, "uuidv7()"),
    "postgresql 18.0": (with_version(postgresql.dialect, (18, 0)), "uuidv7()"),
    "postgresql 19.1": (with_version(postgresql.dialect, (19, 1)), "uuidv7()"),
    "mariadb dialect, no version": (MariaDBDialect, "UUID_v7()"),
    "mariadb 11.7.2": (with_version(mariadb, (11, 7, 2)), "UUID_v7()"),
    "mariadb 12.0.1": (with_version(mariadb, (12, 0, 1)), "UUID_v7()"),
}

UNSUPPORTED: dict[str, tuple[Callable[[], Dialect], str]] = {
    "postgresql 17.5": (with_version(postgresql.dialect, (17, 5)), "PostgreSQL 17.5"),
    "postgresql 15.4": (with_version(postgresql.dialect, (15, 4)), "PostgreSQL 15.4"),
    "mariadb 11.6.2": (with_version(mariadb, (11, 6, 2)), "MariaDB 11.6.2"),
    "mariadb 10.11.6": (with_version(mariadb, (10, 11, 6)), "MariaDB 10.11.6"),
    "mysql, no version": (mysql.dialect, "MySQL"),
    "mysql 8.4.0": (with_version(mysql.dialect, (8, 4, 0)), "MySQL 8.4.0"),
    "sqlite": (sqlite.dialect, "SQLite"),
    "mssql": (mssql.dialect, "SQL Server"),
    "oracle": (oracle.dialect, "Oracle"),
    "spanner": (spanner_dialect, "Spanner"),
}


def table() -> sa.Table:
    return sa.Table(
        "events",
        sa.MetaData(),
        sa.Column("id", CombGuid(), primary_key=True, server_default=server_uuid7()),
        sa.Column("payload", sa.String(20)),
    )


@pytest.mark.parametrize("name", list(SUPPORTED))
def test_compiles_to_the_servers_function(name: str) -> None:
    make, sql = SUPPORTED[name]
    assert str(server_uuid7().compile(dialect=make())) == sql
    assert str(sa.select(server_uuid7()).compile(dialect=make())).startswith(f"SELECT {sql} AS")


@pytest.mark.parametrize("name", list(SUPPORTED))
def test_server_default_in_create_table(name: str) -> None:
    make, sql = SUPPORTED[name]
    ddl = str(CreateTable(table()).compile(dialect=make()))
    # MySQL-family DDL wraps expression defaults in parentheses (MariaDB takes both)
    assert f"DEFAULT {sql}" in ddl or f"DEFAULT ({sql})" in ddl


def test_exact_ddl_postgresql_and_mariadb() -> None:
    assert "id UUID DEFAULT uuidv7() NOT NULL" in str(
        CreateTable(table()).compile(dialect=postgresql.dialect())
    )
    assert "id CHAR(36) CHARACTER SET ascii NOT NULL DEFAULT (UUID_v7())" in str(
        CreateTable(table()).compile(dialect=with_version(mariadb, (11, 7, 2))())
    )


@pytest.mark.parametrize("name", list(UNSUPPORTED))
def test_refused_with_what_to_do_instead(name: str) -> None:
    make, server = UNSUPPORTED[name]
    for statement in (server_uuid7(), sa.select(server_uuid7()), CreateTable(table())):
        with pytest.raises(UnsupportedServerFunctionError) as info:
            statement.compile(dialect=make())
        message = str(info.value)
        assert server in message
        assert "default=new_uuid7" in message
        assert isinstance(info.value, SeqKeysError)


def test_str_of_a_statement_reads_uuidv7() -> None:
    # str() compiles for reading with SQLAlchemy's "default" dialect, never for a server
    assert str(server_uuid7()) == "uuidv7()"
    assert "DEFAULT uuidv7()" in str(CreateTable(table()))


def test_the_error_reaches_create_all_unwrapped() -> None:
    # SQLAlchemy replaces CompileErrors raised inside CREATE TABLE with its own;
    # this one must arrive as itself.
    engine = sa.create_engine("sqlite://")
    t = table()
    with pytest.raises(UnsupportedServerFunctionError, match="SQLite has no UUIDv7 function"):
        t.metadata.create_all(engine)


def test_in_an_insert_postgresql() -> None:
    t = table()
    sql = str(
        sa.insert(t).values(id=server_uuid7(), payload="x").compile(dialect=postgresql.dialect())
    )
    assert sql.startswith("INSERT INTO events (id, payload) VALUES (uuidv7(), ")


def test_the_element_is_typed_and_cacheable() -> None:
    element = server_uuid7()
    assert isinstance(element, ServerUuid7)
    assert isinstance(element.type, CombGuid)
    assert element._generate_cache_key() == server_uuid7()._generate_cache_key()


def test_offline_alembic_migration_renders_the_default() -> None:
    from alembic.migration import MigrationContext
    from alembic.operations import Operations

    for dialect_name, sql in (("postgresql", "uuidv7()"), ("mariadb", "UUID_v7()")):
        buf = io.StringIO()
        opts: dict[str, Any] = {"as_sql": True, "output_buffer": buf}
        ctx = MigrationContext.configure(dialect_name=dialect_name, opts=opts)
        Operations(ctx).create_table(
            "events", sa.Column("id", CombGuid(), primary_key=True, server_default=server_uuid7())
        )
        assert sql in buf.getvalue()


def test_autogenerate_renders_uuidv7_itself() -> None:
    from alembic.autogenerate import render_python_code
    from alembic.operations import ops

    import sqlalchemy_seqkeys.alembic

    code = render_python_code(
        ops.UpgradeOps(ops=[ops.CreateTableOp.from_table(table())]),
        render_item=sqlalchemy_seqkeys.alembic.render_item,
    )
    assert "server_default=sqlalchemy_seqkeys.server_uuid7()" in code


@pytest.mark.parametrize(
    ("reflected", "same"),
    [
        ("uuidv7()", True),  # PostgreSQL 18
        ("uuid_v7()", True),  # MariaDB 11.7 (information_schema, lower case)
        ("(UUID_v7())", True),
        ("pg_catalog.uuidv7()", True),
        ("uuid()", False),
        ("gen_random_uuid()", False),
    ],
)
def test_autogenerate_compares_a_reflected_uuidv7_by_name(reflected: str, same: bool) -> None:
    from alembic.util import PriorityDispatchResult

    from sqlalchemy_seqkeys.alembic.autogen import uuidv7_defaults_match_by_name

    metadata_col = table().c.id
    conn_col = sa.Column("id", sa.CHAR(36), server_default=sa.text(reflected))
    result = uuidv7_defaults_match_by_name(
        None,  # type: ignore[arg-type]
        None,  # type: ignore[arg-type]
        None,
        "events",
        "id",
        conn_col,
        metadata_col,
    )
    expected = PriorityDispatchResult.STOP if same else PriorityDispatchResult.CONTINUE
    assert result is expected


# -- the old names (uuidv7, UuidV7): deprecated, still working for one minor version ----------

#: a migration file as autogenerate wrote it before server_uuid7(), offline against PostgreSQL
_OLD_MIGRATION = """
import sqlalchemy as sa
from alembic import op

import sqlalchemy_seqkeys


def upgrade() -> None:
    op.create_table(
        "events",
        sa.Column(
            "id",
            sqlalchemy_seqkeys.types.CombGuid(),
            server_default=sqlalchemy_seqkeys.uuidv7(),
            nullable=False,
        ),
        sa.PrimaryKeyConstraint("id"),
    )
"""


def test_a_migration_written_with_uuidv7_still_runs_and_warns() -> None:
    from alembic.migration import MigrationContext
    from alembic.operations import Operations

    buf = io.StringIO()
    ctx = MigrationContext.configure(
        dialect_name="postgresql", opts={"as_sql": True, "output_buffer": buf}
    )
    namespace: dict[str, Any] = {}
    exec(compile(_OLD_MIGRATION, "old_migration.py", "exec"), namespace)
    with (
        Operations.context(ctx),
        pytest.deprecated_call(match="use sqlalchemy_seqkeys.server_uuid7"),
    ):
        namespace["upgrade"]()
    assert "id UUID DEFAULT uuidv7() NOT NULL" in buf.getvalue()


def test_the_old_names_warn_and_give_the_new_ones() -> None:
    import sqlalchemy_seqkeys
    from sqlalchemy_seqkeys import uuid7_sql

    with pytest.deprecated_call(match="use sqlalchemy_seqkeys.server_uuid7"):
        old_function = uuid7_sql.uuidv7
    assert old_function is server_uuid7
    with pytest.deprecated_call(match="use sqlalchemy_seqkeys.server_uuid7"):
        assert sqlalchemy_seqkeys.uuidv7 is server_uuid7
    with pytest.deprecated_call(match="use sqlalchemy_seqkeys.ServerUuid7"):
        old_class = sqlalchemy_seqkeys.UuidV7
    assert old_class is ServerUuid7
    assert isinstance(server_uuid7(), old_class)  # isinstance checks in user code keep working
    with pytest.deprecated_call(match="uuid7_sql.UuidV7 is deprecated.*use sqlalchemy_seqkeys.Se"):
        assert uuid7_sql.UuidV7 is ServerUuid7
    with pytest.deprecated_call(match="use sqlalchemy_seqkeys.ServerUuid7"):
        from sqlalchemy_seqkeys.uuid7_sql import UuidV7
    assert UuidV7 is ServerUuid7
    with pytest.raises(AttributeError, match="has no attribute 'uuid_v7'"):
        uuid7_sql.uuid_v7  # noqa: B018
