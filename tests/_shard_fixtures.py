"""What the shard-column tests share. The ``logs`` table before and after its shard column is
added, an engine on a database of its own to add it on (autogenerate compares the whole
database), a migration run on it, an insert through an engine that fills the column; the
table of test_shard_orm's shard column created anew on the suite's engine, its ORM class
and the shard ids it holds. A test module takes a fixture by importing it:
``shard_logs_engine`` is the ``logs_engine`` fixture, ``shard_table`` the ``table`` one."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
import sqlalchemy as sa
from alembic.migration import MigrationContext
from alembic.operations import Operations
from sqlalchemy.engine import Engine

from sqlalchemy_seqkeys import spanner_shard_column
from tests._helpers import fresh_database_engine, fresh_tables
from tests.backend.test_shard_orm import shard_column_table

LOGS = "logs"
#: the engines where the library fills a shard column on INSERT (Spanner computes it)
FILLED_ENGINES = ["sqlite", "postgresql", "mysql"]
#: a test's ``logs_engine`` on ``FILLED_ENGINES`` only
on_filled_engines = pytest.mark.parametrize("logs_engine", FILLED_ENGINES, indirect=True)


@pytest.fixture(name="logs_engine", params=[*FILLED_ENGINES, "spanner"])
def shard_logs_engine(request: pytest.FixtureRequest, engines: Any) -> Iterator[Engine]:
    """An engine on a database of its own: autogenerate sees only the tables its test made."""
    with fresh_database_engine(engines, request.param, "logs") as engine:
        yield engine


def old_logs(metadata: sa.MetaData, name: str = LOGS) -> sa.Table:
    """The table before the shard column."""
    return sa.Table(
        name,
        metadata,
        sa.Column("user_id", sa.BigInteger, primary_key=True, autoincrement=False),
        sa.Column("note", sa.String(20)),
    )


def new_logs(metadata: sa.MetaData, name: str = LOGS, *, shards: int, **shard_kw: Any) -> sa.Table:
    """The table as the model has it now: a shard column of ``user_id``, NOT NULL unless
    ``shard_kw`` says."""
    return sa.Table(
        name,
        metadata,
        sa.Column("user_id", sa.BigInteger, primary_key=True, autoincrement=False),
        sa.Column("note", sa.String(20)),
        spanner_shard_column("shard", "user_id", shards=shards, **shard_kw),
    )


#: the name of the ``table`` fixture's table
SHARD_TABLE = "seqkeys_shard_filled"


@pytest.fixture(name="table")
def shard_table(engine: Engine) -> Iterator[sa.Table]:
    """test_shard_orm's shard table, created anew on the suite's engine, dropped after."""
    metadata = sa.MetaData()
    made = shard_column_table(metadata, SHARD_TABLE)
    with fresh_tables(engine, metadata):
        yield made


class Row:
    """The ORM's class for the shard table (mapped per test, on a registry of its own)."""

    def __init__(self, **values: Any) -> None:
        for key, value in values.items():
            setattr(self, key, value)


def stored_shard_ids(engine: Engine, table: sa.Table) -> dict[Any, int]:
    """The shard id each row of the shard table holds, by its ``n``."""
    with engine.connect() as conn:
        return dict(conn.execute(sa.select(table.c.n, table.c.shard)).all())


def is_spanner(engine: Engine) -> bool:
    return engine.dialect.name.startswith("spanner")


def migrate(engine: Engine, run: Callable[[Operations], object], **opts: Any) -> None:
    """``run(op)`` in an Alembic migration on ``engine`` (Spanner's DDL is not transactional)."""
    autocommit = {"isolation_level": "AUTOCOMMIT"} if is_spanner(engine) else {}
    with engine.connect().execution_options(**autocommit) as conn:
        context = MigrationContext.configure(conn, opts=opts)
        with Operations.context(context) as op:
            run(op)
        if not is_spanner(engine):
            conn.commit()


def insert_filling(engine: Engine, table: sa.Table, rows: list[dict[str, Any]]) -> None:
    """Insert ``rows`` through an engine on ``engine``'s database that opted in to the
    shard filling (``plugins=["seqkeys_shards"]``), as the application does."""
    filling = sa.create_engine(engine.url, plugins=["seqkeys_shards"])
    if is_spanner(engine):
        from tests._emulator import configure_engine

        configure_engine(filling)
    try:
        with filling.begin() as conn:
            conn.execute(sa.insert(table), rows)
    finally:
        filling.dispose()
