"""PooledSequence's "moved backwards" floor is the process's, per database, schema and name.

It outlives ``engine.dispose()``, is shared by every engine of the process on the same
database (a second engine, another driver), is kept by a forked child, and is
forgotten only when the sequence is created or dropped through this library. One name
in two schemas is two sequences (PooledSequence and BitReversedSequence alike).
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable
from typing import Any

import pytest
import sqlalchemy as sa
from alembic.migration import MigrationContext
from alembic.operations import Operations
from sqlalchemy.engine import Engine
from sqlalchemy.ext.asyncio import create_async_engine

import sqlalchemy_seqkeys.alembic
from sqlalchemy_seqkeys import (
    BitReversedSequence,
    PooledSequence,
    SequenceMovedBackwardsError,
    resync_pooled_sequence,
    reverse_bits,
)
from tests._faults_inject import created_anew_while_taking
from tests._helpers import in_forked_child
from tests.backend._pooled import ROWS, TABLE, execute
from tests.backend._tenants import Tenants, two_tenants  # noqa: F401 - the tenants fixture

sqlalchemy_seqkeys.alembic.register()  # where Alembic has not loaded the plugin (not installed)

pytestmark = pytest.mark.backend

NAME = "seqkeys_pooled_native"
SIZE = 10
#: an asyncio driver of each server (the sync twin's database, another driver)
ASYNC_DRIVER = {"postgresql": "postgresql+asyncpg", "mysql": "mysql+aiomysql"}


def restart(engine: Engine) -> None:
    """Move the sequence back to 1 by hand, as a restore from an old backup does."""
    execute(engine, f"ALTER SEQUENCE {NAME} RESTART WITH 1")


def taken_then_restarted(engine: Engine) -> list[int]:
    """Create the sequence anew, take 25 keys (blocks 1, 11, 21), and move it back."""
    sequence = PooledSequence(NAME, batch_size=SIZE, table=TABLE)
    sequence.create(engine)
    taken = sequence.next_values(engine, 25)
    restart(engine)
    return taken


def next_value_async(url: sa.URL) -> int:
    async def main() -> int:
        engine = create_async_engine(url)
        try:
            return await PooledSequence(NAME, batch_size=SIZE).next_value_async(engine)
        finally:
            await engine.dispose()

    return asyncio.run(main())


def test_the_floor_outlives_dispose_and_reaches_every_engine_of_the_database(
    native_engine: Engine,
) -> None:
    """After a restore, no engine of the process hands out a key it already handed out."""
    taken = taken_then_restarted(native_engine)
    assert taken == list(range(1, 26))
    sequence = PooledSequence(NAME, batch_size=SIZE, table=TABLE)
    with pytest.raises(SequenceMovedBackwardsError, match="moved backwards"):
        sequence.next_value(native_engine)
    native_engine.dispose()  # a new pool: a failover, a pool recycled by hand
    restart(native_engine)
    with pytest.raises(SequenceMovedBackwardsError, match="moved backwards"):
        sequence.next_value(native_engine)
    restart(native_engine)
    second = sa.create_engine(native_engine.url)  # e.g. the sync twin of an async app
    try:
        with pytest.raises(SequenceMovedBackwardsError, match="moved backwards"):
            PooledSequence(NAME, batch_size=SIZE, table=TABLE).next_value(second)
        restart(native_engine)
        backend = native_engine.url.get_backend_name()
        driver = ASYNC_DRIVER["postgresql" if backend == "postgresql" else "mysql"]
        with pytest.raises(SequenceMovedBackwardsError, match="moved backwards"):
            next_value_async(native_engine.url.set(drivername=driver))
        with native_engine.begin() as conn:
            conn.execute(sa.text(f"CREATE TABLE {ROWS} (id BIGINT PRIMARY KEY)"))
            conn.execute(sa.text(f"INSERT INTO {ROWS} (id) VALUES (100)"))
        assert resync_pooled_sequence(second, NAME, ROWS, "id") == 101
        assert sequence.next_value(native_engine) == 101  # past the keys in use: taken again
        assert PooledSequence(NAME, batch_size=SIZE).next_value(second) == 111
    finally:
        second.dispose()


def test_a_sequence_created_anew_through_the_library_starts_afresh(native_engine: Engine) -> None:
    """create/drop of any instance, and the Alembic operations, forget the floor."""
    taken_then_restarted(native_engine)
    other = PooledSequence(NAME, batch_size=SIZE, table=TABLE)  # another instance
    other.drop(native_engine)
    second = sa.create_engine(native_engine.url)
    try:
        other.create(second)
        assert PooledSequence(NAME, batch_size=SIZE).next_values(native_engine, 3) == [1, 2, 3]
        with second.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
            op = Operations(MigrationContext.configure(conn))
            op.drop_pooled_sequence(NAME, SIZE, table=TABLE)
            op.create_pooled_sequence(NAME, SIZE, table=TABLE)
        assert other.next_values(native_engine, 3) == [1, 2, 3]
    finally:
        second.dispose()


def test_a_sequence_created_anew_during_a_fetch_starts_afresh(native_engine: Engine) -> None:
    """A block of the former sequence, recorded after it was created anew, made the new
    sequence's first blocks look like a sequence moved backwards: refused."""
    engine = sa.create_engine(native_engine.url)
    sequence = PooledSequence(NAME, batch_size=SIZE, table=TABLE)
    sequence.create(engine)
    assert sequence.next_values(engine, 25)[-1] == 25  # blocks 1, 11, 21 received
    other = PooledSequence(NAME, batch_size=SIZE, table=TABLE)  # holds no block yet
    try:
        got = created_anew_while_taking(
            engine, sequence, lambda: [other.next_value(engine)], paused_after="nextval"
        )  # block 31..40 of the former sequence, fetched before it was created anew
        assert got == [31]
        assert sequence.next_values(engine, 3) == [1, 2, 3]  # was SequenceMovedBackwardsError
    finally:
        engine.dispose()


def test_a_create_that_created_nothing_keeps_the_floor(native_engine: Engine) -> None:
    """create(checkfirst=True) of an existing sequence, as every create_all does."""
    taken_then_restarted(native_engine)
    sequence = PooledSequence(NAME, batch_size=SIZE, table=TABLE)
    assert sequence.create(native_engine, checkfirst=True) is False
    metadata = sa.MetaData()
    sequence.attach(metadata)
    metadata.create_all(native_engine)
    with pytest.raises(SequenceMovedBackwardsError, match="moved backwards"):
        sequence.next_value(native_engine)


def test_tenants_keep_floors_of_their_own(tenants: Tenants) -> None:
    """One name in two schemas (MariaDB: databases) is two sequences: two floors."""
    engine, schemas, (a, b) = tenants
    for tenant in (a, b):
        PooledSequence("orders", batch_size=SIZE).create(tenant)
    sequence = PooledSequence("orders", batch_size=SIZE)
    assert sequence.next_values(a, 25) == list(range(1, 26))
    assert sequence.next_values(b, 5) == list(range(1, 6))  # not below a's keys: b's own
    execute(engine, f"ALTER SEQUENCE {schemas[0]}.orders RESTART WITH 1")
    with pytest.raises(SequenceMovedBackwardsError, match="moved backwards"):
        PooledSequence("orders", batch_size=SIZE).next_value(a)
    assert sequence.next_values(b, 6) == list(range(6, 12))


@pytest.mark.parametrize(
    "make",
    [
        lambda schema: PooledSequence("orders", batch_size=SIZE, schema=schema),
        lambda schema: BitReversedSequence("orders", schema=schema),
        lambda schema: BitReversedSequence("orders", batch_size=SIZE, schema=schema),
    ],
    ids=["pooled", "bit-reversed", "bit-reversed-blocks"],
)
def test_one_name_in_two_schemas_is_two_sequences(
    pg_engine: Engine, make: Callable[[str], Any]
) -> None:
    """Each takes its own schema's values (SQLAlchemy's statement cache keys next_value()
    by the sequence's name only) and keeps a floor of its own."""
    schemas = ["seqkeys_floor_a", "seqkeys_floor_b"]
    for schema in schemas:
        execute(pg_engine, f"DROP SCHEMA IF EXISTS {schema} CASCADE")
        execute(pg_engine, f"CREATE SCHEMA {schema}")
    try:
        a, b = (make(s) for s in schemas)
        a.create(pg_engine)
        b.create(pg_engine)
        counter = reverse_bits if isinstance(a, BitReversedSequence) else int
        assert [counter(v) for v in a.next_values(pg_engine, 25)] == list(range(1, 26))
        assert [counter(v) for v in b.next_values(pg_engine, 5)] == list(range(1, 6))
    finally:
        for schema in schemas:
            execute(pg_engine, f"DROP SCHEMA IF EXISTS {schema} CASCADE")


def test_engines_with_one_url_on_two_databases_keep_floors_of_their_own(engines: Any) -> None:
    """Engines made with creator= (as cloud SQL connectors are) share a URL that names no
    database: each keeps its own floor, as TableSequence's (sequences.table.database_key)."""
    import psycopg

    pg_engine = engines.get("postgresql")
    with engines.fresh_database("postgresql", "floor_creator") as other_url:
        urls = [pg_engine.url, sa.make_url(other_url)]
        made = [
            sa.create_engine(
                "postgresql+psycopg://",
                creator=lambda u=u: psycopg.connect(
                    host=u.host, port=u.port, user=u.username, dbname=u.database
                ),
            )
            for u in urls
        ]
        try:
            for engine in made:
                PooledSequence(NAME, batch_size=SIZE).drop(engine, checkfirst=True)
                PooledSequence(NAME, batch_size=SIZE).create(engine)
            sequence = PooledSequence(NAME, batch_size=SIZE)
            assert sequence.next_values(made[0], 25) == list(range(1, 26))
            assert sequence.next_values(made[1], 5) == list(range(1, 6))
            restart(made[0])
            made[0].dispose()
            with pytest.raises(SequenceMovedBackwardsError, match="moved backwards"):
                sequence.next_value(made[0])
        finally:
            PooledSequence(NAME, batch_size=SIZE).drop(made[0], checkfirst=True)
            for engine in made:
                engine.dispose()


@pytest.mark.skipif(not hasattr(os, "fork"), reason="os.fork() is POSIX-only")
@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # fork() with threads alive
def test_a_forked_child_keeps_the_parents_floor(native_engine: Engine) -> None:
    """The child drops the parent's blocks, not what the parent received: a lower bound."""
    engine = sa.create_engine(native_engine.url, poolclass=sa.pool.NullPool)
    try:
        taken_then_restarted(engine)
        sequence = PooledSequence(NAME, batch_size=SIZE, table=TABLE)

        def child() -> str:
            return str(sequence.next_value(engine))

        said = in_forked_child(child)
    finally:
        engine.dispose()
    assert said.startswith("SequenceMovedBackwardsError:"), said
