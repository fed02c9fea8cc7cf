"""PooledSequence hands out blocks: one round trip per ``allocation_size`` keys on every
engine, keys never shared with a raw ``nextval`` writer, and never the parent's block in a
forked child.
"""

from __future__ import annotations

import math
import os
import threading
from collections.abc import Callable
from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import Engine
from sqlalchemy.orm import Session

from sqlalchemy_seqkeys import PooledSequence
from sqlalchemy_seqkeys.sequences.table import allocate, read_next_value
from tests._helpers import in_forked_child
from tests.backend._pooled import ROWS, SIZE, TABLE, all_ids, counting, is_spanner, native

pytestmark = pytest.mark.backend


#: a writer outside the library: one nextval, one key (and a column default doing the same)
RAW_NEXTVAL = {
    "postgresql": "INSERT INTO {rows} (id, note) VALUES (nextval('{seq}'), 'raw')",
    "mysql": "INSERT INTO {rows} (id, note) VALUES (NEXTVAL({seq}), 'raw')",
}


SERVER_DEFAULT = {
    "postgresql": "ALTER TABLE {rows} ALTER COLUMN id SET DEFAULT nextval('{seq}')",
    "mysql": "ALTER TABLE {rows} ALTER COLUMN id SET DEFAULT (NEXTVAL({seq}))",
}


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


@pytest.mark.skipif(not hasattr(os, "fork"), reason="os.fork() is POSIX-only")
@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # fork() with threads alive
def test_a_forked_child_never_uses_the_parents_block(native_engine: Engine) -> None:
    """The child keeps the parent's pool object (NullPool: no connection to share).

    So its blocks are not new by accident of a new pool: they are forgotten
    because the process forked.
    """
    name = "seqkeys_pooled_native"
    engine = sa.create_engine(native_engine.url, poolclass=sa.pool.NullPool)
    sequence = PooledSequence(name, batch_size=SIZE, table=TABLE)
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
