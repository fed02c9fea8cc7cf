"""The seqkeys Alembic operations in a tenant's migration: checks and statements in one schema.

A tenant's migration runs on a connection with ``schema_translate_map={None: tenant}``:
SQLAlchemy sends the statements to the tenant's schema, while the inspector reads the
schema it is told. Each operation must check, and change, the tenant's objects, never the
default schema's (a table or sequence of the same name there must not answer for the
tenant's). On PostgreSQL the tenant is a schema of a fresh database, on MariaDB a second
fresh database; the real state of both is read back after each operation.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
import sqlalchemy as sa
from alembic.operations import Operations

import sqlalchemy_seqkeys.alembic
from sqlalchemy_seqkeys import MigrationError, ShardId, sequences_table, workers_table
from sqlalchemy_seqkeys.sequences.table import read_next_value
from tests._helpers import fresh_database_engine as database
from tests.backend.test_alembic_hostile import operations

sqlalchemy_seqkeys.alembic.register()  # where Alembic has not loaded the plugin (not installed)

pytestmark = pytest.mark.backend

#: the 0.1 worker-lease table: no high_water_ms
OLD_WORKERS = "(worker_id INTEGER PRIMARY KEY, owner VARCHAR(64), expires_at BIGINT)"


@dataclass
class Place:
    """A database whose default schema is not the tenant's, and the tenant's schema."""

    #: the engine on the database, without a map: its default schema
    engine: sa.Engine
    #: the tenant's schema (MariaDB: database)
    tenant: str

    def translated(self, translate: dict[str | None, str | None] | None = None) -> sa.Engine:
        """The engine as a tenant's migration has it: ``{None: tenant}`` unless told."""
        return self.engine.execution_options(schema_translate_map=translate or {None: self.tenant})


@pytest.fixture(params=["postgresql", "mysql"])
def place(request: pytest.FixtureRequest, engines: Any) -> Iterator[Place]:
    """A fresh database, and a tenant schema in it (MariaDB: a second fresh database)."""
    with database(engines, request.param, "tenant_ops") as engine:
        if request.param == "postgresql":
            with engine.begin() as conn:
                conn.execute(sa.text("CREATE SCHEMA seqkeys_tenant"))
            yield Place(engine, "seqkeys_tenant")  # dropped with the database
            return
        with engines.fresh_database("mysql", "tenant_ops_t") as url:
            yield Place(engine, str(sa.make_url(url).database))


def has_table(place: Place, table: str, schema: str | None) -> bool:
    with place.engine.connect() as conn:
        return bool(sa.inspect(conn).has_table(table, schema=schema))


def columns(place: Place, table: str, schema: str | None) -> list[str]:
    with place.engine.connect() as conn:
        return [c["name"] for c in sa.inspect(conn).get_columns(table, schema=schema)]


def row(place: Place, name: str, schema: str | None) -> int | None:
    """The sequences-table row ``name`` of ``schema`` (None: the default one)."""
    translate = {None: schema} if schema else None
    with place.engine.connect().execution_options(schema_translate_map=translate) as conn:
        return read_next_value(conn, name)


def has_sequence(place: Place, name: str, schema: str | None) -> bool:
    with place.engine.connect() as conn:
        return bool(sa.inspect(conn).has_sequence(name, schema=schema))


def keys_table(op: Operations, name: str, *keys: int) -> None:
    table = op.create_table(
        name, sa.Column("id", sa.BigInteger, primary_key=True, autoincrement=False)
    )
    assert table is not None
    op.bulk_insert(table, [{"id": key} for key in keys])


def test_upgrade_worker_lease_table_adds_the_column_to_the_tenants_table(place: Place) -> None:
    """The default schema's current table does not make the tenant's old one current."""
    tenant = place.tenant
    with place.engine.begin() as conn:
        workers_table(sa.MetaData()).create(conn)  # the default schema's: current
        conn.execute(sa.text(f"CREATE TABLE {tenant}.seqkeys_workers {OLD_WORKERS}"))
    with operations(place.translated()) as op:
        op.upgrade_worker_lease_table()
    assert "high_water_ms" in columns(place, "seqkeys_workers", tenant)
    with operations(place.translated()) as op:
        op.downgrade_worker_lease_table()
    assert "high_water_ms" not in columns(place, "seqkeys_workers", tenant)
    assert "high_water_ms" in columns(place, "seqkeys_workers", None)  # left as it was
    # the other way: the default schema's old table is neither checked nor altered
    with place.engine.begin() as conn:
        conn.execute(sa.text("DROP TABLE seqkeys_workers"))
        conn.execute(sa.text(f"CREATE TABLE seqkeys_workers {OLD_WORKERS}"))
    with operations(place.translated()) as op:
        op.upgrade_worker_lease_table()
        op.upgrade_worker_lease_table()  # a no-op: the tenant's is current now
    assert "high_water_ms" in columns(place, "seqkeys_workers", tenant)
    assert "high_water_ms" not in columns(place, "seqkeys_workers", None)
    with operations(place.translated()) as op:
        op.drop_worker_lease_table()
        assert not has_table(place, "seqkeys_workers", tenant)
        with pytest.raises(MigrationError, match="there is no worker-lease table"):
            op.upgrade_worker_lease_table()
        with pytest.raises(MigrationError, match="no worker-lease table 'seqkeys_workers' to"):
            op.drop_worker_lease_table()
        op.create_worker_lease_table()  # though the default schema has one
    assert "high_water_ms" in columns(place, "seqkeys_workers", tenant)


def test_the_tenants_sequences_table_and_rows(place: Place) -> None:
    """Created, filled, resynced and dropped in the tenant's schema, the default one empty."""
    tenant = place.tenant
    with operations(place.translated()) as op:
        op.create_sequences_table()
        op.create_table_sequence("inv", start=5)
        assert row(place, "inv", tenant) == 5
        keys_table(op, "inv_t", 1, 500)
        op.resync_table_sequence("inv", "inv_t", "id")
        assert row(place, "inv", tenant) == 501
        with pytest.raises(MigrationError, match="sequence 'inv' already exists in table"):
            op.create_table_sequence("inv")
        with pytest.raises(MigrationError, match="a table 'sequences' already exists"):
            op.create_sequences_table()
        op.drop_table_sequence("inv")
        assert row(place, "inv", tenant) is None
        op.drop_sequences_table()
        op.create_worker_lease_table()
        assert has_table(place, "seqkeys_workers", tenant)
        op.drop_worker_lease_table()
    assert not has_table(place, "sequences", tenant)
    assert not has_table(place, "seqkeys_workers", tenant)
    assert not has_table(place, "sequences", None)
    assert not has_table(place, "inv_t", None)


def test_the_default_schemas_tables_do_not_answer_for_the_tenants(place: Place) -> None:
    """Only the default schema has them: the tenant's operations see none (MigrationError)."""
    tenant = place.tenant
    with place.engine.begin() as conn:
        sequences_table(sa.MetaData()).create(conn)
        conn.execute(sa.text("INSERT INTO sequences (name, next_value) VALUES ('inv', 7)"))
        conn.execute(sa.text("CREATE TABLE inv_t (id BIGINT PRIMARY KEY)"))
        conn.execute(sa.text("INSERT INTO inv_t VALUES (900)"))
    with operations(place.translated()) as op:
        with pytest.raises(MigrationError, match="needs the sequences table 'sequences'"):
            op.create_table_sequence("inv")
        with pytest.raises(MigrationError, match="needs the sequences table 'sequences'"):
            op.resync_table_sequence("inv", "inv_t", "id")
        with pytest.raises(MigrationError, match="'inv' does not exist in table 'sequences'"):
            op.drop_table_sequence("inv")
        with pytest.raises(MigrationError, match="no sequences table 'sequences' to drop"):
            op.drop_sequences_table()
        op.create_sequences_table()  # the tenant has none
        with pytest.raises(MigrationError, match="'inv' does not exist in table 'sequences'"):
            op.drop_table_sequence("inv")
        op.create_table_sequence("inv", start=3)
        with pytest.raises(MigrationError, match="there is no table 'inv_t' to resync"):
            op.resync_table_sequence("inv", "inv_t", "id")
    assert row(place, "inv", tenant) == 3
    assert row(place, "inv", None) == 7  # the default schema's row, untouched
    assert has_table(place, "sequences", None)


def test_a_named_schema_the_map_translates(place: Place) -> None:
    """``schema="src"``, which the map sends to the tenant's: the tenant's table is read."""
    tenant = place.tenant
    translate: dict[str | None, str | None] = {None: tenant, "src": tenant}
    with operations(place.translated(translate)) as op:
        op.create_sequences_table()
        op.create_table_sequence("inv", start=1)
        keys_table(op, "inv_t", 40)
        op.resync_table_sequence("inv", "inv_t", "id", schema="src")
        with pytest.raises(MigrationError, match=r"table 'src.inv_t' has no column 'nope'"):
            op.resync_table_sequence("inv", "inv_t", "nope", schema="src")
    assert row(place, "inv", tenant) == 41


def test_native_sequences_in_the_tenants_schema(place: Place) -> None:
    """Created, resynced and dropped where the tenant's statements go, checked there too."""
    tenant = place.tenant
    with operations(place.engine) as op:  # the default schema's, of the same names
        op.create_bit_reversed_sequence("brs")
        op.create_pooled_sequence("pool", 10)
    with operations(place.translated()) as op:
        with pytest.raises(MigrationError, match="there is no sequence 'pool', so there is"):
            op.drop_pooled_sequence("pool", 10)
        op.create_bit_reversed_sequence("brs")
        op.create_pooled_sequence("pool", 10)
        assert has_sequence(place, "brs", tenant)
        assert has_sequence(place, "pool", tenant)
        with pytest.raises(MigrationError, match="a sequence 'pool' already exists"):
            op.create_pooled_sequence("pool", 10)
        keys_table(op, "inv_t", 500)
        op.resync_pooled_sequence("pool", "inv_t", "id")
        op.resync_bit_reversed_sequence("brs", "inv_t", "id")
        conn = op.get_bind()
        assert conn.execute(sa.Sequence("pool").next_value()).scalar_one() > 500
        op.drop_bit_reversed_sequence("brs")
        assert not has_sequence(place, "brs", tenant)
        with pytest.raises(MigrationError, match="there is no sequence 'brs', so there is"):
            op.drop_bit_reversed_sequence("brs")
    # the default schema's sequences: still there, never moved
    assert has_sequence(place, "brs", None)
    with place.engine.connect() as conn:
        assert conn.execute(sa.Sequence("pool").next_value()).scalar_one() == 1


def test_fill_shard_column_reads_the_tenants_table(place: Place) -> None:
    """Only the tenant has the table: found, and its rows filled."""
    logs = f"{place.tenant}.logs"
    with place.engine.begin() as conn:
        conn.execute(
            sa.text(f"CREATE TABLE {logs} (id BIGINT PRIMARY KEY, user_id BIGINT, shard BIGINT)")
        )
        conn.execute(sa.text(f"INSERT INTO {logs} VALUES (1, 42, NULL)"))
    with operations(place.translated()) as op:
        op.fill_shard_column("logs", "shard", ["user_id"], shards=16)
    with place.engine.connect() as conn:
        stored = conn.execute(sa.text(f"SELECT shard FROM {logs}")).scalar_one()
    assert stored == ShardId("user_id", shards=16).of(42)


@pytest.mark.parametrize("place", ["mysql"], indirect=True)  # case-insensitive names there
def test_names_made_case_sensitive_in_the_tenants_table(place: Place) -> None:
    """MariaDB: the tenant's 0.1 sequences table is converted, the default one's is not."""
    for schema in (None, place.tenant):
        where = f"{schema}.sequences" if schema else "sequences"
        with place.engine.begin() as conn:
            conn.execute(
                sa.text(
                    f"CREATE TABLE {where} (name VARCHAR(64) NOT NULL, next_value BIGINT NOT "
                    "NULL, PRIMARY KEY (name)) CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci"
                )
            )
    with operations(place.translated()) as op:
        op.make_sequence_names_case_sensitive()
        op.create_table_sequence("inv")  # the tenant's table is exact now: accepted
    query = sa.text(
        "SELECT COLLATION_NAME FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = "
        "COALESCE(:schema, DATABASE()) AND TABLE_NAME = 'sequences' AND COLUMN_NAME = 'name'"
    )
    with place.engine.connect() as conn:
        assert conn.execute(query, {"schema": place.tenant}).scalar_one() == "utf8mb4_bin"
        assert conn.execute(query, {"schema": None}).scalar_one() == "utf8mb4_general_ci"
    assert row(place, "inv", place.tenant) == 1
