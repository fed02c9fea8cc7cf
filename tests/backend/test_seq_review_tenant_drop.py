"""A tenant's sequences table, as its ``schema_translate_map`` says, when dropping and when
it is missing.

- ``drop(checkfirst=True)`` of a ``PooledSequence`` kept as a row (SQLite), and
  ``metadata.drop_all`` of an attached ``TableSequence``, asked whether the
  sequences table exists in the default schema (the inspector applies no
  ``schema_translate_map``): where the default schema had none, the tenant's
  row was left, silently (``drop`` returned False).
- A resync from a table the tenant lacks (the default schema has it) was probed in the
  default schema too, and raised the database's error instead of naming the table.
- A tenant without the sequences table, beside a default schema that has one:
  ``next_value``, ``create`` and ``drop(checkfirst=True)`` raised a generic
  ``SequenceAllocationError`` ("no such table: tenant_b.sequences") where the
  default schema's table was found, instead of ``SequencesTableNotFoundError``
  naming the tenant's schema, as without a tenant.

SQLite tenants are attached databases; PostgreSQL's schemas, MariaDB's databases.
The sequences table has a name of its own here, so that the default schema of the
run's database never has it unless the test makes it.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from sqlalchemy_seqkeys import (
    InvalidSequenceError,
    PooledSequence,
    SequencesTableNotFoundError,
    TableSequence,
    resync_table_sequence,
    sequences_table,
)
from tests._helpers import tenant_engines, tenant_schemas

pytestmark = pytest.mark.backend

TABLE = "tdrop_sequences"


def _rows(engine: sa.Engine, schema: str) -> list[tuple[Any, ...]]:
    with engine.connect() as conn:
        found = sa.inspect(conn).has_table(TABLE, schema=schema)
        if not found:
            return []
        table = sequences_table(sa.MetaData(), TABLE)
        table.schema = schema
        return [tuple(r) for r in conn.execute(sa.select(table.c.name, table.c.next_value))]


@pytest.fixture
def attached(tmp_path: Path) -> Iterator[tuple[sa.Engine, sa.Engine]]:
    """SQLite: a main database and a tenant ``tenant_a`` attached to every connection;
    the engine, and the engine under ``schema_translate_map={None: "tenant_a"}``."""
    engine = sa.create_engine(f"sqlite:///{tmp_path / 'main.db'}")
    tenant_file = tmp_path / "tenant.db"

    @sa.event.listens_for(engine, "connect")
    def attach(dbapi_connection: Any, record: Any) -> None:
        dbapi_connection.execute(f"ATTACH DATABASE '{tenant_file}' AS tenant_a")

    try:
        yield engine, engine.execution_options(schema_translate_map={None: "tenant_a"})
    finally:
        engine.dispose()


@pytest.fixture(params=["sqlite", "postgresql", "mysql"])
def tenant(request: pytest.FixtureRequest, engines: Any) -> Iterator[tuple[sa.Engine, str]]:
    """A tenant engine (a schema_translate_map) and its schema; the default schema has
    no TABLE; what the test makes is dropped after."""
    if request.param == "sqlite":
        yield request.getfixturevalue("attached")[1], "tenant_a"
        return
    engine: sa.Engine = engines.get(request.param)
    with contextlib.ExitStack() as stack:
        if request.param == "mysql":
            url = stack.enter_context(engines.fresh_database("mysql", "tdrop"))
            schema = str(sa.make_url(url).database)
            translated = tenant_engines(engine, [schema])[0]
        else:
            schema = "seqkeys_tdrop"
            translated = stack.enter_context(tenant_schemas(engine, schema))[0]
        try:
            yield translated, schema
        finally:
            sequences_table(sa.MetaData(), TABLE).drop(engine, checkfirst=True)


def test_pooled_drop_checkfirst_deletes_the_tenants_row(
    attached: tuple[sa.Engine, sa.Engine],
) -> None:
    engine, tenant_engine = attached
    pooled = PooledSequence("tdrop_pooled", batch_size=5, table=TABLE)
    assert pooled.create(tenant_engine)
    assert pooled.next_value(tenant_engine) == 1
    assert _rows(engine, "tenant_a") == [("tdrop_pooled", 6)]
    assert not sa.inspect(engine).has_table(TABLE), "the main database has no such table"
    assert pooled.drop(tenant_engine, checkfirst=True) is True
    assert _rows(engine, "tenant_a") == []
    assert pooled.drop(tenant_engine, checkfirst=True) is False


def test_drop_all_deletes_the_tenants_row(tenant: tuple[sa.Engine, str]) -> None:
    tenant_engine, schema = tenant
    seqs = sa.MetaData()
    sequences_table(seqs, TABLE)
    seqs.create_all(tenant_engine)  # the tenant's sequences table, none in the default schema
    app = sa.MetaData()
    order_id = TableSequence("tdrop_order", mode="batch", table=TABLE, metadata=app)
    sa.Table(
        "tdrop_orders", app, sa.Column("id", sa.BigInteger, primary_key=True, default=order_id)
    )
    app.create_all(tenant_engine)
    assert _rows(tenant_engine, schema) == [("tdrop_order", 1)]
    app.drop_all(tenant_engine)
    assert _rows(tenant_engine, schema) == [], "drop_all deleted the tenant's row"
    assert order_id.drop(tenant_engine, checkfirst=True) is False


def test_a_tenant_without_the_sequences_table_is_told_so(
    tenant: tuple[sa.Engine, str],
) -> None:
    """The default schema has the table, the tenant has none: the tenant's table is named."""
    tenant_engine, schema = tenant
    default_engine = tenant_engine.execution_options(schema_translate_map=None)
    sequences_table(sa.MetaData(), TABLE).create(default_engine)
    sequence = TableSequence("tdrop_missing", mode="batch", table=TABLE)
    for mode in ("batch", "separate", "in_transaction"):
        other = TableSequence("tdrop_missing", mode=mode, table=TABLE)
        with pytest.raises(
            SequencesTableNotFoundError, match=f"{schema}.*{TABLE}|{TABLE}.*{schema}"
        ):
            other.next_value(tenant_engine)
    with pytest.raises(SequencesTableNotFoundError, match=schema):
        sequence.create(tenant_engine)
    with pytest.raises(SequencesTableNotFoundError, match=schema):
        sequence.drop(tenant_engine, checkfirst=True)  # as without a tenant
    with tenant_engine.begin() as conn, pytest.raises(SequencesTableNotFoundError, match=schema):
        TableSequence("tdrop_missing", mode="in_transaction", table=TABLE).next_value(conn)
    if tenant_engine.dialect.name == "sqlite":  # a row there; native elsewhere
        assert (
            PooledSequence("tdrop_missing", table=TABLE).drop(tenant_engine, checkfirst=True)
            is False
        )
    assert sequence.create(default_engine), "the default schema's table is untouched"


def test_a_resync_from_a_table_the_tenant_lacks_names_the_tenants_table(
    tenant: tuple[sa.Engine, str],
) -> None:
    """The keys' table is in the default schema only: the tenant's is named missing."""
    tenant_engine, schema = tenant
    default_engine = tenant_engine.execution_options(schema_translate_map=None)
    sequences_table(sa.MetaData(), TABLE).create(tenant_engine)
    TableSequence("tdrop_resync", mode="batch", table=TABLE).create(tenant_engine)
    data = sa.MetaData()
    sa.Table("tdrop_data", data, sa.Column("id", sa.BigInteger, primary_key=True))
    data.create_all(default_engine)
    try:
        with pytest.raises(InvalidSequenceError, match=f"no table '{schema}.tdrop_data'"):
            resync_table_sequence(
                tenant_engine, "tdrop_resync", "tdrop_data", "id", sequences_table=TABLE
            )
    finally:
        data.drop_all(default_engine)
