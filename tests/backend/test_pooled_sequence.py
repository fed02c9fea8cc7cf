"""pooled_sequence on real engines: blocks beside raw ``nextval`` writers, round trips
counted, a changed increment refused, the sequences-table fallback, resync, fork,
asyncio and the Alembic operations.

Native sequences (``CREATE SEQUENCE ... INCREMENT BY``) run on PostgreSQL 15 and
18 and MariaDB; SQLite and Spanner (and MySQL, played here by MariaDB with its
dialect told it has no sequences) use the sequences table.
"""

from __future__ import annotations

import asyncio
import math
import os
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest
import sqlalchemy as sa
from alembic.autogenerate import produce_migrations
from alembic.migration import MigrationContext
from alembic.operations import Operations
from sqlalchemy.engine import Engine
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column

import sqlalchemy_seqkeys.alembic
from sqlalchemy_seqkeys import (
    MigrationError,
    PooledSequence,
    PooledSequenceMismatchError,
    SequenceExhaustedError,
    SequenceMovedBackwardsError,
    SequenceNotFoundError,
    pooled_sequence,
    resync_pooled_sequence,
    sequences_table,
)
from sqlalchemy_seqkeys._dialect import incrementing_sequences
from sqlalchemy_seqkeys.alembic.pooled_ops import CreatePooledSequenceOp
from sqlalchemy_seqkeys.pooled import resync_pooled_sequence_async
from sqlalchemy_seqkeys.sequences.table import allocate, read_next_value
from tests._helpers import in_forked_child
from tests.conftest import AsyncDatabase

sqlalchemy_seqkeys.alembic.register()  # where Alembic has not loaded the plugin (not installed)

pytestmark = pytest.mark.backend

#: the sequences table of the fallback (its own name: other tests own "sequences")
TABLE = "seqkeys_pooled_sequences"
ROWS = "seqkeys_pooled_rows"
SIZE = 50

#: a writer outside the library: one nextval, one key (and a column default doing the same)
RAW_NEXTVAL = {
    "postgresql": "INSERT INTO {rows} (id, note) VALUES (nextval('{seq}'), 'raw')",
    "mysql": "INSERT INTO {rows} (id, note) VALUES (NEXTVAL({seq}), 'raw')",
}
SERVER_DEFAULT = {
    "postgresql": "ALTER TABLE {rows} ALTER COLUMN id SET DEFAULT nextval('{seq}')",
    "mysql": "ALTER TABLE {rows} ALTER COLUMN id SET DEFAULT (NEXTVAL({seq}))",
}


def native(engine: Engine) -> bool:
    with engine.connect() as conn:  # a dialect learns what the server has when it connects
        return incrementing_sequences(conn.dialect)


def is_spanner(engine: Engine) -> bool:
    return engine.dialect.name.startswith("spanner")


def make_model(default: PooledSequence) -> tuple[type[Any], sa.MetaData]:
    class Base(DeclarativeBase):
        pass

    default.attach(Base.metadata)

    class Row(Base):
        __tablename__ = ROWS
        id: Mapped[int] = mapped_column(
            sa.BigInteger, primary_key=True, default=default, autoincrement=False
        )
        note: Mapped[str] = mapped_column(sa.String(20))

    return Row, Base.metadata


def drop_everything(engine: Engine, *names: str) -> None:
    """Drop the rows table, the sequences named, and the fallback's sequences table."""
    metadata = sa.MetaData()
    sa.Table(ROWS, metadata)
    metadata.drop_all(engine, checkfirst=True)
    for name in names:
        pooled_sequence(name, table=TABLE).drop(engine, checkfirst=True)
    sequences_table(sa.MetaData(), TABLE).drop(engine, checkfirst=True)


@pytest.fixture
def declare(engine: Engine) -> Iterator[Callable[..., tuple[PooledSequence, type[Any]]]]:
    """Declare a pooled sequence and the rows table keyed by it, created anew."""
    names: list[str] = []

    def make(name: str, size: int = SIZE, start: int = 1) -> tuple[PooledSequence, type[Any]]:
        drop_everything(engine, name)
        sequence = pooled_sequence(name, size, start=start, table=TABLE)
        row, metadata = make_model(sequence)
        metadata.create_all(engine)
        names.append(name)
        return sequence, row

    yield make
    drop_everything(engine, *names)


@contextmanager
def counting(engine: Engine) -> Iterator[dict[str, int]]:
    """Count the statements that take a block (nextval, or the sequences-table UPDATE)."""
    counts = {"blocks": 0, "inserts": 0, "catalog": 0}

    def count(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        if conn.get_execution_options().get("seqkeys_raw"):
            return  # a raw writer's statement, not the library's
        text = statement.lstrip().lower()
        if "nextval(" in text or text.startswith(f"update {TABLE}"):
            counts["blocks"] += 1
        elif text.startswith(f"insert into {ROWS}"):
            counts["inserts"] += 1
        elif "seqincrement" in text or "cycle_option" in text:
            counts["catalog"] += 1

    sa.event.listen(engine, "before_cursor_execute", count)
    try:
        yield counts
    finally:
        sa.event.remove(engine, "before_cursor_execute", count)


def all_ids(engine: Engine) -> list[int]:
    with engine.connect() as conn:
        return [int(v) for v in conn.scalars(sa.text(f"SELECT id FROM {ROWS} ORDER BY id"))]


# -- every engine ----------------------------------------------------------------------


def test_a_2000_row_flush_takes_one_block_per_allocation_size(
    engine: Engine, declare: Callable[..., tuple[PooledSequence, type[Any]]]
) -> None:
    sequence, row = declare("seqkeys_pooled_flush")
    with counting(engine) as counts, Session(engine) as session:
        session.add_all(row(note=str(i)) for i in range(2000))
        session.commit()
    assert all_ids(engine) == list(range(1, 2001))  # one process, no other writer: no gaps
    assert counts["blocks"] == 2000 // SIZE, counts
    assert counts["inserts"] <= 10, counts  # still batched: keys are client-side
    assert counts["catalog"] == (1 if native(engine) else 0), counts  # once per pool
    if native(engine):
        assert sa.inspect(engine).has_sequence("seqkeys_pooled_flush")
    else:
        with engine.connect() as conn:
            assert read_next_value(conn, "seqkeys_pooled_flush", table=TABLE) == 2001
    assert sequence.next_values(engine, 3) == [2001, 2002, 2003]


def test_an_executemany_takes_its_keys_at_once_in_row_order_and_each_once(
    engine: Engine, declare: Callable[..., tuple[PooledSequence, type[Any]]]
) -> None:
    """An executemany takes all its rows' keys at its first row: the rows get them in
    order, across blocks, with one block statement per allocation_size, and a second
    column drawing on the same sequence still gets keys no other column got."""
    sequence, _ = declare("seqkeys_pooled_many")
    rows = 2 * SIZE + 3
    twice = sa.Table(
        "seqkeys_pooled_twice",
        sa.MetaData(),
        sa.Column("a", sa.BigInteger, default=sequence, primary_key=True, autoincrement=False),
        sa.Column("b", sa.BigInteger, default=sequence, nullable=False),
        sa.Column("n", sa.BigInteger, nullable=False),
    )
    twice.create(engine)
    try:
        with counting(engine) as counts, engine.begin() as conn:
            conn.execute(twice.insert(), [{"n": i} for i in range(rows)])
        with engine.connect() as conn:
            got = conn.execute(sa.select(twice.c.a, twice.c.b).order_by(twice.c.n)).all()
    finally:
        twice.drop(engine)
    a = [r.a for r in got]
    keys = a + [r.b for r in got]
    assert len(a) == rows
    assert a == sorted(a)  # in row order
    assert sorted(keys) == list(range(1, 2 * rows + 1))  # each once; one process: no gaps
    blocks = math.ceil(2 * rows / SIZE)
    assert counts["blocks"] == blocks, counts


def test_the_default_executed_on_its_own_gives_a_key_no_row_has(
    engine: Engine, declare: Callable[..., tuple[PooledSequence, type[Any]]]
) -> None:
    """``conn.scalar(column.default)``, as with any SQLAlchemy column default: a key
    from the same blocks, never one an insert got (its context has no rows)."""
    _, row = declare("seqkeys_pooled_alone")
    with Session(engine) as session:
        session.add_all([row(note="n") for _ in range(3)])
        session.commit()
    column = row.__table__.c.id
    with engine.begin() as conn:
        alone = [conn.scalar(column.default) for _ in range(SIZE + 2)]
    with Session(engine) as session:
        session.add_all([row(note="n") for _ in range(3)])
        session.commit()
    keys = all_ids(engine)
    assert len(set(alone)) == len(alone)
    assert not set(alone) & set(keys)
    assert sorted(alone + keys) == list(range(1, SIZE + 2 + 6 + 1))  # one process: no gaps


def test_orm_threads_beside_a_raw_writer_never_share_a_key(
    engine: Engine, declare: Callable[..., tuple[PooledSequence, type[Any]]]
) -> None:
    """8 threads of ORM flushes and a writer taking keys itself: every key once.

    On PostgreSQL and MariaDB the raw writer calls nextval itself (half of its
    rows through a column DEFAULT nextval(...)); on SQLite it takes values
    from the sequences table with one-value allocations. Spanner's emulator
    allows one read-write transaction at a time: there one thread, and the
    raw writer between its flushes.
    """
    name = "seqkeys_pooled_load"
    _, row = declare(name)
    has_native = native(engine)
    threads = 1 if is_spanner(engine) else 8
    flushes, per_flush, raw_rows = 5, 40, 60
    backend = engine.dialect.name
    if has_native:
        with engine.begin() as conn:
            conn.execute(sa.text(SERVER_DEFAULT[backend].format(rows=ROWS, seq=name)))

    def raw_insert(conn: sa.Connection, i: int) -> None:
        conn = conn.execution_options(seqkeys_raw=True)
        if not has_native:
            key = allocate(conn, name, 1, table=TABLE)
            conn.execute(sa.text(f"INSERT INTO {ROWS} (id, note) VALUES ({key}, 'raw')"))
        elif i % 2:
            conn.execute(sa.text(RAW_NEXTVAL[backend].format(rows=ROWS, seq=name)))
        else:
            conn.execute(sa.text(f"INSERT INTO {ROWS} (note) VALUES ('raw')"))

    raw_engine = engine if is_spanner(engine) else sa.create_engine(engine.url)
    errors: list[BaseException] = []
    start = threading.Barrier(threads + (0 if is_spanner(engine) else 1))

    def orm_worker() -> None:
        try:
            start.wait()
            for flush in range(flushes):
                with Session(engine) as session:
                    session.add_all(row(note=f"orm{flush}") for _ in range(per_flush))
                    session.commit()
                if is_spanner(engine):
                    with raw_engine.begin() as conn:
                        for i in range(raw_rows // flushes):
                            raw_insert(conn, i)
        except BaseException as exc:  # reported below
            errors.append(exc)

    def raw_worker() -> None:
        try:
            start.wait()
            for i in range(raw_rows):
                with raw_engine.begin() as conn:
                    raw_insert(conn, i)
        except BaseException as exc:  # reported below
            errors.append(exc)

    workers = [threading.Thread(target=orm_worker) for _ in range(threads)]
    if not is_spanner(engine):
        workers.append(threading.Thread(target=raw_worker))
    with counting(engine) as counts:
        for t in workers:
            t.start()
        for t in workers:
            t.join()
    if raw_engine is not engine:
        raw_engine.dispose()
    assert not errors, errors
    orm_rows = threads * flushes * per_flush
    with engine.connect() as conn:
        raw = [int(v) for v in conn.scalars(sa.text(f"SELECT id FROM {ROWS} WHERE note = 'raw'"))]
        orm = [int(v) for v in conn.scalars(sa.text(f"SELECT id FROM {ROWS} WHERE note <> 'raw'"))]
    assert len(raw) == raw_rows
    assert len(orm) == orm_rows
    assert len(set(raw + orm)) == raw_rows + orm_rows
    if has_native:
        # each raw key is a nextval value: the first of a block nobody else was given
        assert all((key - 1) % SIZE == 0 for key in raw), raw
        claimed = {key for first in raw for key in range(first, first + SIZE)}
        assert not claimed & set(orm)
    # one round trip per block; blocks fetched at once by several threads are all used
    # but for at most one left over per thread
    least = math.ceil(orm_rows / SIZE)
    assert least <= counts["blocks"] <= least + threads, counts


def test_create_all_and_drop_all_manage_the_sequence(engine: Engine) -> None:
    name = "seqkeys_pooled_md"
    drop_everything(engine, name)
    metadata = sa.MetaData()
    sequence = pooled_sequence(name, 10, start=500, table=TABLE, metadata=metadata)
    try:
        metadata.create_all(engine)
        metadata.create_all(engine)  # checkfirst: nothing changes
        assert sequence.next_values(engine, 12) == list(range(500, 512))
        metadata.drop_all(engine)
        with engine.connect() as conn:
            if native(engine):
                assert not sa.inspect(conn).has_sequence(name)
            else:
                assert read_next_value(conn, name, table=TABLE) is None
        metadata.create_all(engine)  # created anew: its keys start afresh
        assert sequence.next_value(engine) == 500
    finally:
        drop_everything(engine, name)


def test_resync_moves_past_imported_keys_and_never_back(
    engine: Engine, declare: Callable[..., tuple[PooledSequence, type[Any]]]
) -> None:
    name = "seqkeys_pooled_resync"
    _, row = declare(name)
    with Session(engine) as session:
        session.add_all(row(note="before") for _ in range(5))  # holds the rest of 1 .. 50
        session.commit()
    with engine.begin() as conn:  # an import, keys included
        conn.execute(sa.text(f"INSERT INTO {ROWS} (id, note) VALUES (900, 'i'), (4321, 'i')"))
    assert resync_pooled_sequence(engine, name, ROWS, "id", sequences_table=TABLE) == 4322
    with Session(engine) as session:
        session.add_all(row(note="after") for _ in range(60))  # 6 .. 50, then 4322 ..
        session.commit()
    ids = all_ids(engine)
    assert len(ids) == len(set(ids)) == 67
    assert ids[-1] == 4322 + 14
    assert resync_pooled_sequence(engine, name, ROWS, "id", sequences_table=TABLE) is None
    with pytest.raises(SequenceNotFoundError):
        resync_pooled_sequence(engine, "seqkeys_pooled_none", ROWS, "id", sequences_table=TABLE)


def test_alembic_operations_and_autogenerate(engine: Engine) -> None:
    name = "seqkeys_pooled_ops"
    drop_everything(engine, name)
    declared = sa.MetaData()
    sequence = pooled_sequence(name, 20, start=7, table=TABLE, metadata=declared)
    try:
        with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
            opts = {
                "target_metadata": declared,
                "autogenerate_plugins": ["alembic.autogenerate.*", "seqkeys"],
            }
            context = MigrationContext.configure(conn, opts=opts)
            op = Operations(context)
            missing = [
                o
                for o in produce_migrations(context, declared).upgrade_ops.ops
                if isinstance(o, CreatePooledSequenceOp)
            ]
            assert [(o.name, o.allocation_size, o.start) for o in missing] == [(name, 20, 7)]
            if not native(engine):
                op.create_sequences_table(TABLE)
            op.create_pooled_sequence(name, 20, start=7, table=TABLE)
            with pytest.raises(MigrationError, match="already exists"):
                op.create_pooled_sequence(name, 20, table=TABLE)
            assert not [
                o
                for o in produce_migrations(context, declared).upgrade_ops.ops
                if isinstance(o, CreatePooledSequenceOp)
            ]
            assert sequence.next_values(conn, 3) == [7, 8, 9]
            op.create_table(ROWS, sa.Column("id", sa.BigInteger, primary_key=True))
            op.execute(sa.text(f"INSERT INTO {ROWS} (id) VALUES (1000)"))
            op.resync_pooled_sequence(name, ROWS, "id", sequences_table=TABLE)
            assert pooled_sequence(name, 20, table=TABLE).next_value(conn) == 1001
            op.drop_pooled_sequence(name, 20, start=7, table=TABLE)
            with pytest.raises(MigrationError, match="nothing to drop"):
                op.drop_pooled_sequence(name, 20, table=TABLE)
    finally:
        drop_everything(engine, name)


# -- native sequences: PostgreSQL 15 and 18, MariaDB -------------------------------------


@pytest.fixture(params=["postgresql", "postgresql18", "mysql"])
def native_engine(request: pytest.FixtureRequest, engines: Any) -> Iterator[Engine]:
    engine = engines.get(request.param)
    yield engine
    drop_everything(engine, "seqkeys_pooled_native", "seqkeys_pooled_plain")


def execute(engine: Engine, sql: str) -> None:
    with engine.begin() as conn:
        conn.execute(sa.text(sql))


def raw_nextval(engine: Engine, name: str) -> int:
    with engine.connect() as conn:
        return int(conn.scalar(sa.select(sa.Sequence(name).next_value())))


def test_a_changed_increment_is_refused_and_nothing_is_handed_out(native_engine: Engine) -> None:
    name = "seqkeys_pooled_native"
    pooled_sequence(name, SIZE, table=TABLE).create(native_engine)
    execute(native_engine, f"ALTER SEQUENCE {name} INCREMENT BY 7")  # by hand
    sequence = pooled_sequence(name, SIZE, table=TABLE)
    row, metadata = make_model(sequence)
    metadata.create_all(native_engine, checkfirst=True)
    message = r"INCREMENT BY 7 in the database, .* declares allocation_size=50"
    with pytest.raises(PooledSequenceMismatchError, match=message):
        sequence.next_value(native_engine)
    with Session(native_engine) as session:
        session.add(row(note="refused"))
        # SQLAlchemy wraps what a column default raises, keeping it as .orig
        with pytest.raises(sa.exc.StatementError, match=message) as raised:
            session.commit()
        assert isinstance(raised.value.orig, PooledSequenceMismatchError)
    assert raw_nextval(native_engine, name) == 1  # no nextval was taken: nothing handed out
    execute(native_engine, f"ALTER SEQUENCE {name} INCREMENT BY {SIZE}")
    first = sequence.next_value(native_engine)  # a refusal is not remembered
    assert first > 1
    assert sequence.next_values(native_engine, SIZE - 1) == list(range(first + 1, first + SIZE))


def test_a_sequence_made_by_another_tool_is_refused(native_engine: Engine) -> None:
    execute(native_engine, "CREATE SEQUENCE seqkeys_pooled_plain")  # INCREMENT BY 1
    with pytest.raises(PooledSequenceMismatchError, match="INCREMENT BY 1 in the database"):
        pooled_sequence("seqkeys_pooled_plain", SIZE).next_value(native_engine)
    execute(native_engine, "DROP SEQUENCE seqkeys_pooled_plain")
    execute(native_engine, f"CREATE SEQUENCE seqkeys_pooled_plain INCREMENT BY {SIZE} CYCLE")
    with pytest.raises(PooledSequenceMismatchError, match="cycles"):
        pooled_sequence("seqkeys_pooled_plain", SIZE).next_value(native_engine)
    with pytest.raises(SequenceNotFoundError, match=r"op\.create_pooled_sequence"):
        pooled_sequence("seqkeys_pooled_absent", SIZE).next_value(native_engine)


def test_a_block_past_bigint_is_refused(native_engine: Engine) -> None:
    name = "seqkeys_pooled_native"
    start = 2**63 - 1 - 60
    sequence = pooled_sequence(name, SIZE, start=start, table=TABLE)
    sequence.create(native_engine)
    assert sequence.next_values(native_engine, SIZE) == list(range(start, start + SIZE))
    # the next nextval returns 2**63 - 11: its block would pass 2**63 - 1
    with pytest.raises(SequenceExhaustedError, match="would pass the BIGINT maximum"):
        sequence.next_value(native_engine)
    # then the sequence itself has no value left (PostgreSQL 2200H, MariaDB 4084)
    with pytest.raises(SequenceExhaustedError, match="no value left"):
        sequence.next_value(native_engine)


def test_a_sequence_moved_back_is_refused_until_resynced(native_engine: Engine) -> None:
    name = "seqkeys_pooled_native"
    sequence = pooled_sequence(name, SIZE, table=TABLE)
    sequence.create(native_engine)
    taken = sequence.next_values(native_engine, SIZE + 10)  # blocks 1 and 51
    execute(native_engine, f"ALTER SEQUENCE {name} RESTART")  # back to 1, by hand
    assert sequence.next_values(native_engine, SIZE - 10) == list(range(61, 101))
    with pytest.raises(SequenceMovedBackwardsError, match="moved backwards"):
        sequence.next_value(native_engine)
    with native_engine.begin() as conn:
        conn.execute(sa.text(f"CREATE TABLE {ROWS} (id BIGINT PRIMARY KEY)"))
        conn.execute(sa.text(f"INSERT INTO {ROWS} (id) VALUES (100)"))
    assert resync_pooled_sequence(native_engine, name, ROWS, "id") == 101
    assert sequence.next_value(native_engine) == 101
    assert taken == list(range(1, 61))


def test_resync_holds_nextval_back_until_its_transaction_ends(pg_engine: Engine) -> None:
    """No block can be taken between reading the sequence and moving it (ALTER's lock)."""
    name = "seqkeys_pooled_native"
    drop_everything(pg_engine, name)
    sequence = pooled_sequence(name, SIZE, table=TABLE)
    sequence.create(pg_engine)
    try:
        execute(pg_engine, f"CREATE TABLE {ROWS} (id BIGINT PRIMARY KEY)")
        execute(pg_engine, f"INSERT INTO {ROWS} (id) VALUES (500)")
        with pg_engine.connect() as conn, conn.begin():
            assert resync_pooled_sequence(conn, name, ROWS, "id") == 501
            with pg_engine.connect() as other:
                other.execute(sa.text("SET lock_timeout = '200ms'"))
                with pytest.raises(sa.exc.OperationalError, match="lock timeout"):
                    other.scalar(sa.select(sa.Sequence(name).next_value()))
        assert sequence.next_value(pg_engine) == 501
    finally:
        drop_everything(pg_engine, name)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="os.fork() is POSIX-only")
@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # fork() with threads alive
def test_a_forked_child_never_uses_the_parents_block(native_engine: Engine) -> None:
    """The child keeps the parent's pool object (NullPool: no connection to share).

    So its blocks are not new by accident of a new pool: they are forgotten
    because the process forked.
    """
    name = "seqkeys_pooled_native"
    engine = sa.create_engine(native_engine.url, poolclass=sa.pool.NullPool)
    sequence = pooled_sequence(name, SIZE, table=TABLE)
    sequence.create(engine)
    before = sequence.next_values(engine, 10)  # the parent holds 11 .. 50

    def child() -> str:
        return " ".join(map(str, sequence.next_values(engine, 60)))

    try:
        child_values = [int(v) for v in in_forked_child(child).split()]
        parent_values = sequence.next_values(engine, 60)
    finally:
        engine.dispose()
    assert len(child_values) == 60, child_values
    assert before == list(range(1, 11))
    assert not set(child_values) & set(range(1, SIZE + 1))  # not the parent's block
    assert not set(child_values) & set(parent_values)
    assert parent_values[:40] == list(range(11, 51))  # the parent's block stays its own


@pytest.fixture(params=["postgresql", "mysql"])
def tenants(request: pytest.FixtureRequest, engines: Any) -> Iterator[tuple[Engine, list[str]]]:
    """An engine and two schemas (MariaDB: databases) of this run, dropped afterwards."""
    engine = engines.get(request.param)
    if request.param == "mysql":
        with (
            engines.fresh_database("mysql", "pooled_a") as a,
            engines.fresh_database("mysql", "pooled_b") as b,
        ):
            yield engine, [str(sa.make_url(a).database), str(sa.make_url(b).database)]
        return
    schemas = ["seqkeys_pooled_a", "seqkeys_pooled_b"]
    for schema in schemas:
        execute(engine, f"DROP SCHEMA IF EXISTS {schema} CASCADE")
        execute(engine, f"CREATE SCHEMA {schema}")
    try:
        yield engine, schemas
    finally:
        for schema in schemas:
            execute(engine, f"DROP SCHEMA IF EXISTS {schema} CASCADE")


def test_tenants_have_their_own_sequences_and_blocks(
    tenants: tuple[Engine, list[str]],
) -> None:
    """A schema_translate_map reaches the catalog check, nextval and resync."""
    engine, schemas = tenants
    a, b = (engine.execution_options(schema_translate_map={None: s}) for s in schemas)
    for start, tenant in zip((100, 5000), (a, b), strict=True):
        pooled_sequence("orders", 10, start=start).create(tenant)
    sequence = pooled_sequence("orders", 10)
    assert sequence.next_values(a, 12) == list(range(100, 112))
    assert sequence.next_values(b, 12) == list(range(5000, 5012))
    execute(engine, f"ALTER SEQUENCE {schemas[1]}.orders INCREMENT BY 3")
    other = pooled_sequence("orders", 10)
    assert other.next_value(a) == 120  # tenant a is as declared
    with pytest.raises(PooledSequenceMismatchError, match="INCREMENT BY 3"):
        other.next_value(b)
    metadata = sa.MetaData()
    rows = sa.Table(ROWS, metadata, sa.Column("id", sa.BigInteger, primary_key=True))
    metadata.create_all(a)
    with a.begin() as conn:
        conn.execute(rows.insert(), [{"id": 7000}])
    assert resync_pooled_sequence(a, "orders", ROWS, "id") == 7001
    assert pooled_sequence("orders", 10).next_value(a) == 7001
    assert sequence.next_values(b, 8) == list(range(5012, 5020))  # b's block, untouched


# -- MySQL: the sequences table ----------------------------------------------------------


def test_mysql_without_sequences_uses_the_sequences_table(mysql_engine: Engine) -> None:
    """MySQL has no sequences. MariaDB plays it: its dialect is told it has none."""
    engine = sa.create_engine(mysql_engine.url)
    with engine.connect():
        pass  # the dialect learns the server version (and that MariaDB has sequences) here
    engine.dialect.supports_sequences = False  # as MySQL 8's dialect says
    name = "seqkeys_pooled_mysql"
    drop_everything(engine, name)
    try:
        assert not native(engine)
        sequence = pooled_sequence(name, SIZE, table=TABLE)
        row, metadata = make_model(sequence)
        metadata.create_all(engine)
        with counting(engine) as counts, Session(engine) as session:
            session.add_all(row(note="m") for _ in range(120))
            session.commit()
        assert all_ids(engine) == list(range(1, 121))
        assert counts["blocks"] == 3
        with engine.connect() as conn:
            assert read_next_value(conn, name, table=TABLE) == 151
        assert not sa.inspect(mysql_engine).has_sequence(name)
        assert resync_pooled_sequence(engine, name, ROWS, "id", sequences_table=TABLE) is None
    finally:
        drop_everything(engine, name)
        engine.dispose()


# -- asyncio ---------------------------------------------------------------------------------


def test_concurrent_async_sessions(async_database: AsyncDatabase) -> None:
    """Ten AsyncSessions flushing at once on one loop: every key once, blocks counted."""
    name = "seqkeys_pooled_async"
    sync = async_database.sync
    has_native = native(sync)
    drop_everything(sync, name)
    sequence = pooled_sequence(name, SIZE, table=TABLE)
    row, metadata = make_model(sequence)
    tasks, per_task = 10, 45

    async def main() -> dict[str, int]:
        engine = async_database.engine()
        try:
            async with engine.begin() as conn:
                await conn.run_sync(metadata.create_all)
            with counting(engine.sync_engine) as counts:

                async def insert(i: int) -> None:
                    async with AsyncSession(engine) as session:
                        session.add_all(row(note=f"a{i}") for _ in range(per_task))
                        await session.commit()

                await asyncio.gather(*(insert(i) for i in range(tasks)))
            if not has_native:  # allocated on the lane's own engine: read the row instead
                with sync.connect() as conn:
                    stored = read_next_value(conn, name, table=TABLE)
                assert stored is not None
                counts["blocks"] = (stored - 1) // SIZE
            assert len(await sequence.next_values_async(engine, 3)) == 3
            moved = await resync_pooled_sequence_async(
                engine, name, ROWS, "id", sequences_table=TABLE
            )
            assert moved is None  # every key came from the sequence
            await sequence.drop_async(engine)
            await sequence.create_async(engine)
            return counts
        finally:
            await engine.dispose()

    try:
        counts = asyncio.run(main())
        ids = all_ids(sync)
        assert len(ids) == len(set(ids)) == tasks * per_task
        least = math.ceil(tasks * per_task / SIZE)
        assert least <= counts["blocks"] <= least + tasks, counts
    finally:
        drop_everything(sync, name)
