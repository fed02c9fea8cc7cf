"""Table sequences on real engines: every mode through the ORM, load, faults, fork."""

from __future__ import annotations

import gc
import multiprocessing
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from alembic.migration import MigrationContext
from alembic.operations import Operations
from sqlalchemy.engine import Engine
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column

import sqlalchemy_seqkeys.alembic  # noqa: F401 - registers op.create_table_sequence and the rest
from sqlalchemy_seqkeys import (
    BitReversed,
    BitReversedSequence,
    InvalidSequenceError,
    PooledSequence,
    SequenceAllocationError,
    SequenceExhaustedError,
    SequenceExistsError,
    SequenceMode,
    SequenceNotFoundError,
    SequencesTableNotFoundError,
    TableSequence,
    create_table_sequence,
    drop_table_sequence,
    reverse_bits,
    sequences_table,
)
from sqlalchemy_seqkeys.sequences import allocate
from sqlalchemy_seqkeys.sequences._allocator import refills
from sqlalchemy_seqkeys.sequences.table import MAX_VALUE, read_next_value
from tests._helpers import fresh_table, fresh_tables, in_forked_child, tenant_schemas

from . import _seq_workers

pytestmark = pytest.mark.backend

MODES = [m.value for m in SequenceMode]
ROOT = Path(__file__).parent.parent.parent


@pytest.fixture
def seq_engine(engine: Engine) -> Iterator[Engine]:
    """``engine`` with a fresh sequences table."""
    with fresh_table(engine, sequences_table) as fresh:
        try:
            yield fresh
        finally:
            # an async_batch refill started at the watermark may still run: the
            # Spanner emulator refuses the table's drop beside its transaction
            refills.wait_idle(30)


def make_model(default: TableSequence, table: str = "seqkeys_seq_rows") -> tuple[type[Any], Any]:
    class Base(DeclarativeBase):
        pass

    class Row(Base):
        __tablename__ = table
        id: Mapped[int] = mapped_column(
            sa.BigInteger, primary_key=True, default=default, autoincrement=False
        )
        note: Mapped[str] = mapped_column(sa.String(20))

    return Row, Base.metadata


@pytest.mark.parametrize("mode", MODES)
def test_every_mode_through_the_orm(seq_engine: Engine, mode: str) -> None:
    sequence = TableSequence("rows_id", mode=mode, batch_size=50, low_watermark=10, start=100)
    sequence.create(seq_engine)
    model, metadata = make_model(sequence)
    metadata.drop_all(seq_engine)
    metadata.create_all(seq_engine)
    try:
        with Session(seq_engine) as session:
            for flush in range(6):
                session.add_all(model(note=f"{flush}-{i}") for i in range(40))
                session.flush()
            session.commit()
            ids = session.scalars(sa.select(model.id).order_by(model.id)).all()
        assert len(ids) == len(set(ids)) == 240
        assert min(ids) >= 100
        if mode in ("in_transaction", "separate"):
            assert ids == list(range(100, 340))  # one process: ordered, no gaps
        with seq_engine.connect() as conn:
            stored = read_next_value(conn, "rows_id")
        assert stored is not None
        assert stored > max(ids)
    finally:
        metadata.drop_all(seq_engine)


def test_in_transaction_rollback_gives_values_back(seq_engine: Engine) -> None:
    sequence = TableSequence("rb_id", mode="in_transaction", start=1)
    sequence.create(seq_engine)
    model, metadata = make_model(sequence)
    metadata.drop_all(seq_engine)
    metadata.create_all(seq_engine)
    try:
        with Session(seq_engine) as session:
            session.add_all(model(note="lost") for _ in range(3))
            session.flush()
            session.rollback()
            session.add_all(model(note="kept") for _ in range(3))
            session.commit()
            ids = session.scalars(sa.select(model.id).order_by(model.id)).all()
        assert ids == [1, 2, 3]
    finally:
        metadata.drop_all(seq_engine)


def test_ten_thousand_objects_flush_in_batched_inserts(seq_engine: Engine) -> None:
    sequence = TableSequence("bulk_id", mode="async_batch", batch_size=1000, low_watermark=200)
    sequence.create(seq_engine)
    model, metadata = make_model(sequence)
    metadata.drop_all(seq_engine)
    metadata.create_all(seq_engine)
    inserts: list[int] = []

    def count(conn: Any, cursor: Any, statement: str, params: Any, *args: Any) -> None:
        if statement.lstrip().upper().startswith("INSERT INTO SEQKEYS_SEQ_ROWS"):
            inserts.append(1)

    sa.event.listen(seq_engine, "before_cursor_execute", count)
    try:
        with Session(seq_engine) as session:
            session.add_all(model(note=str(i)) for i in range(10_000))
            session.commit()
            total = session.scalar(sa.select(sa.func.count(sa.distinct(model.id))))
    finally:
        sa.event.remove(seq_engine, "before_cursor_execute", count)
        metadata.drop_all(seq_engine)
    assert total == 10_000
    # multi-row INSERTs (Spanner's 950-parameter limit makes its pages smaller)
    assert len(inserts) <= 40, f"{len(inserts)} INSERT statements for 10,000 rows"


def test_next_value_and_next_values_outside_the_orm(seq_engine: Engine) -> None:
    for mode in MODES:
        sequence = TableSequence(f"plain_{mode}", mode=mode, batch_size=5, low_watermark=2)
        sequence.create(seq_engine)
        values = [sequence.next_value(seq_engine) for _ in range(7)] + sequence.next_values(
            seq_engine, 4
        )
        assert len(set(values)) == 11
        if mode in ("in_transaction", "separate"):
            assert values == list(range(1, 12))
        with seq_engine.begin() as conn:
            more = sequence.next_values(conn, 3)
        assert not set(more) & set(values)


def test_create_table_sequence(seq_engine: Engine) -> None:
    assert create_table_sequence(seq_engine, "orders_id", start=500) is True
    with pytest.raises(SequenceExistsError, match="checkfirst=True"):
        create_table_sequence(seq_engine, "orders_id", start=1)
    assert create_table_sequence(seq_engine, "orders_id", start=1, checkfirst=True) is False
    with seq_engine.connect() as conn:
        assert read_next_value(conn, "orders_id") == 500  # left as it was


def test_missing_sequence_row(seq_engine: Engine) -> None:
    for mode in MODES:
        with pytest.raises(
            SequenceNotFoundError, match=r"create_table_sequence\(engine, 'ghost'\)"
        ):
            TableSequence("ghost", mode=mode).next_value(seq_engine)


def test_missing_sequences_table(engine: Engine) -> None:
    metadata = sa.MetaData()
    sequences_table(metadata)
    metadata.drop_all(engine)
    with pytest.raises(SequencesTableNotFoundError, match=r"sequences_table\(metadata\)"):
        TableSequence("x", mode="separate").next_value(engine)


def test_block_past_bigint_max_allocates_nothing(seq_engine: Engine) -> None:
    create_table_sequence(seq_engine, "big", start=MAX_VALUE - 100)
    with pytest.raises(SequenceExhaustedError, match="nothing was allocated"):
        TableSequence("big", mode="batch", batch_size=200).next_value(seq_engine)
    with seq_engine.connect() as conn:
        assert read_next_value(conn, "big") == MAX_VALUE - 100
    values = TableSequence("big", mode="batch", batch_size=50).next_values(seq_engine, 50)
    assert values == list(range(MAX_VALUE - 100, MAX_VALUE - 50))


def test_sqlite_single_writer_does_not_deadlock(tmp_path: Path) -> None:
    """A refill while the flush holds SQLite's write lock runs on the flush's connection."""
    engine = sa.create_engine(
        f"sqlite:///{tmp_path / 'single-writer.db'}", connect_args={"timeout": 1}
    )
    metadata = sa.MetaData()
    sequences_table(metadata)
    metadata.create_all(engine)
    for mode in ("separate", "batch", "async_batch"):
        sequence = TableSequence(f"w_{mode}", mode=mode, batch_size=3, low_watermark=1)
        sequence.create(engine)
        model, model_metadata = make_model(sequence, table=f"rows_{mode}")
        model_metadata.create_all(engine)
        started = time.monotonic()
        with Session(engine) as session:
            for i in range(10):  # ten flushes in one write transaction
                session.add(model(note=str(i)))
                session.flush()
            session.commit()
        with Session(engine) as session:
            session.add_all(model(note="rolled back") for _ in range(5))
            session.flush()
            session.rollback()
            session.add(model(note="after"))
            session.commit()
            ids = session.scalars(sa.select(model.id)).all()
        assert time.monotonic() - started < 5, "a refill waited for the write lock"
        assert len(ids) == len(set(ids)) == 11
    engine.dispose()


def test_async_batch_refill_failure_reaches_the_caller_then_recovers(seq_engine: Engine) -> None:
    sequence = TableSequence("flaky", mode="async_batch", batch_size=10, low_watermark=5)
    sequence.create(seq_engine)
    first = sequence.next_values(seq_engine, 6)  # 4 left, under the watermark: a refill starts
    metadata = sa.MetaData()
    table = sequences_table(metadata)
    # Wait for that refill, then make the next one fail: the row disappears.
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        with seq_engine.connect() as conn:
            if read_next_value(conn, "flaky") == 21:
                break
        time.sleep(0.01)
    else:
        pytest.fail("the background refill never happened")
    with seq_engine.begin() as conn:
        saved = conn.execute(sa.select(table.c.next_value)).scalar_one()
        conn.execute(sa.delete(table))
    rest = sequence.next_values(seq_engine, 14)  # 4 from the block, 10 from the spare
    assert first + rest == list(range(1, 21))
    with pytest.raises(SequenceNotFoundError):  # the refill's error, raised to this caller
        sequence.next_values(seq_engine, 1)
    with seq_engine.begin() as conn:
        conn.execute(sa.insert(table).values(name="flaky", next_value=saved))
    later = sequence.next_values(seq_engine, 3)  # the next call tries again
    assert later == [saved, saved + 1, saved + 2]


# -- load and faults: PostgreSQL and MariaDB ----------------------------------------------


@pytest.fixture(params=["postgresql", "mysql"])
def server_engine(request: pytest.FixtureRequest, engines: Any) -> Iterator[Engine]:
    with fresh_table(engines.get(request.param), sequences_table) as fresh:
        yield fresh


def url_of(engine: Engine) -> str:
    return engine.url.render_as_string(hide_password=False)


@pytest.mark.slow
@pytest.mark.parametrize("mode", MODES)
def test_four_processes_eight_threads_no_duplicates(server_engine: Engine, mode: str) -> None:
    name = f"load_{mode}"
    create_table_sequence(server_engine, name)
    # One transaction per value in these two modes: 32 clients contend for the
    # row with 400 values each; the batch modes take 2,000 each (blocks of 50).
    per_thread = 400 if mode in ("in_transaction", "separate") else 2000
    context = multiprocessing.get_context("spawn")
    with context.Pool(4) as pool:
        results = pool.starmap(
            _seq_workers.take_values, [(url_of(server_engine), name, mode, 8, per_thread)] * 4
        )
    values = [v for process in results for v in process]
    assert len(values) == 4 * 8 * per_thread
    assert len(set(values)) == len(values), "a value was handed out twice"
    if mode in ("in_transaction", "separate"):
        assert sorted(values) == list(range(1, len(values) + 1))  # nothing lost either


@pytest.mark.slow
def test_in_transaction_with_rollbacks_is_gapless_and_ordered(server_engine: Engine) -> None:
    create_table_sequence(server_engine, "gapless")
    order_column = {
        "postgresql": "ord BIGSERIAL UNIQUE",
        "mysql": "ord BIGINT AUTO_INCREMENT UNIQUE",
    }[server_engine.dialect.name]
    with server_engine.begin() as conn:
        conn.execute(sa.text("DROP TABLE IF EXISTS seqkeys_gapless_rows"))
        conn.execute(
            sa.text(f"CREATE TABLE seqkeys_gapless_rows (id BIGINT PRIMARY KEY, {order_column})")
        )
    try:
        context = multiprocessing.get_context("spawn")
        args = (url_of(server_engine), "gapless", "seqkeys_gapless_rows", 8, 80)
        with context.Pool(4) as pool:
            committed = sum(
                pool.starmap(_seq_workers.commit_or_roll_back, [(*args, seed) for seed in range(4)])
            )
        with server_engine.connect() as conn:
            ids = conn.scalars(sa.text("SELECT id FROM seqkeys_gapless_rows ORDER BY ord")).all()
        assert len(ids) == committed
        assert 0 < committed < 4 * 8 * 80  # some rolled back
        assert ids == list(range(1, committed + 1)), "committed values: gapless, in commit order"
    finally:
        with server_engine.begin() as conn:
            conn.execute(sa.text("DROP TABLE seqkeys_gapless_rows"))


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["batch", "async_batch"])
def test_sigkill_mid_batch_leaves_only_gaps(
    server_engine: Engine, mode: str, tmp_path: Path
) -> None:
    name = f"killed_{mode}"
    create_table_sequence(server_engine, name)
    out = tmp_path / "taken.txt"
    worker = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tests.backend._seq_workers",
            url_of(server_engine),
            name,
            mode,
            str(out),
        ],
        cwd=ROOT,
    )
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if out.exists() and len(out.read_text().splitlines()) >= 1250:  # mid-block
                break
            time.sleep(0.02)
    finally:
        worker.send_signal(signal.SIGKILL)
        worker.wait()
    taken = [int(line) for line in out.read_text().split()]
    assert len(taken) >= 1250
    later = TableSequence(name, mode=mode, batch_size=500, low_watermark=100).next_values(
        server_engine, 2000
    )
    assert not set(taken) & set(later)
    assert len(set(taken)) == len(taken)
    assert min(later) > max(taken)  # the killed process's unused block is a gap, never reused


def _kill_backend(engine: Engine, victim: Any) -> None:
    """Kill the server session behind DB-API connection ``victim`` from another connection."""
    with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        if engine.dialect.name == "postgresql":
            pid = victim.info.backend_pid
            conn.execute(sa.text("SELECT pg_terminate_backend(:pid)"), {"pid": pid})
        else:
            conn.execute(sa.text(f"KILL CONNECTION {int(victim.thread_id())}"))


# psycopg warns when the connection the server killed is garbage-collected
@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
@pytest.mark.filterwarnings("ignore::ResourceWarning")
@pytest.mark.parametrize("mode", ["batch", "async_batch", "separate"])
def test_connection_killed_during_refill_is_retried(server_engine: Engine, mode: str) -> None:
    name = f"refill_{mode}"
    create_table_sequence(server_engine, name)
    engine = sa.create_engine(server_engine.url)  # a pool of its own: its connections die
    sequence = TableSequence(name, mode=mode, batch_size=20, low_watermark=5)
    kills = []
    lock = threading.Lock()

    def kill_first_allocation(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        if statement.startswith("UPDATE sequences") and not kills:
            with lock:
                if not kills:
                    kills.append(statement)
                    _kill_backend(server_engine, conn.connection.dbapi_connection)

    sa.event.listen(engine, "before_cursor_execute", kill_first_allocation)
    try:
        values = sequence.next_values(engine, 100)
    finally:
        engine.dispose()
        gc.collect()  # any warning about the killed connection lands in this test
    assert kills, "the fault was injected"
    assert len(set(values)) == 100
    more = TableSequence(name, mode="separate").next_values(server_engine, 10)
    assert not set(more) & set(values)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="os.fork() is POSIX-only")
@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # fork() with threads alive
@pytest.mark.parametrize("mode", ["batch", "async_batch"])
def test_forked_child_never_uses_the_parents_block(server_engine: Engine, mode: str) -> None:
    name = f"fork_{mode}"
    create_table_sequence(server_engine, name)
    sequence = TableSequence(name, mode=mode, batch_size=100, low_watermark=10)
    before = sequence.next_values(server_engine, 10)  # the parent holds the rest of a block

    def child() -> str:
        server_engine.dispose(close=False)  # SQLAlchemy's rule for forked children
        return " ".join(map(str, sequence.next_values(server_engine, 150)))

    child_values = [int(v) for v in in_forked_child(child).split()]
    parent_values = sequence.next_values(server_engine, 150)
    assert len(child_values) == 150
    assert not set(child_values) & set(before + parent_values)
    assert not set(child_values) & set(range(before[0], before[0] + 100))  # not the parent's block


def test_compare_and_swap_without_returning_is_safe_in_autocommit(tmp_path: Path) -> None:
    """Engines without UPDATE ... RETURNING fall back to compare-and-swap, race-free."""
    engine = sa.create_engine(
        f"sqlite:///{tmp_path / 'cas.db'}",
        isolation_level="AUTOCOMMIT",
        connect_args={"timeout": 30},
    )
    engine.dialect.update_returning = False  # as on SQLite before 3.35
    metadata = sa.MetaData()
    sequences_table(metadata)
    metadata.create_all(engine)
    create_table_sequence(engine, "cas")
    sequence = TableSequence("cas", mode="separate")
    taken: list[int] = []
    lock = threading.Lock()

    def work() -> None:
        mine = [sequence.next_value(engine) for _ in range(150)]
        with lock:
            taken.extend(mine)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    engine.dispose()
    assert sorted(taken) == list(range(1, 601))


def test_schema_translate_map_keeps_tenants_apart(pg_engine: Engine) -> None:
    """Each tenant's sequences table hands out its own values, block state included."""
    with tenant_schemas(pg_engine, "seqkeys_tenant_a", "seqkeys_tenant_b") as tenants:
        for start, tenant in zip((100, 5000), tenants, strict=True):
            metadata = sa.MetaData()
            sequences_table(metadata)
            metadata.create_all(tenant)
            create_table_sequence(tenant, "orders", start=start)
        tenant_a, tenant_b = tenants
        for mode in ("separate", "batch", "async_batch"):
            sequence = TableSequence("orders", mode=mode, batch_size=10, low_watermark=3)
            a = sequence.next_values(tenant_a, 12)
            b = sequence.next_values(tenant_b, 12)
            assert all(100 <= v < 5000 for v in a), a
            assert all(v >= 5000 for v in b), b
            with tenant_b.connect() as conn:  # map on the engine
                c = sequence.next_values(conn, 3)
            assert all(v >= 5000 for v in c)
            assert not set(b) & set(c)


def _statement_tenant_defaults() -> dict[str, Any]:
    return {
        **{
            mode: TableSequence("st_orders", mode=mode, batch_size=10, low_watermark=3)
            for mode in MODES
        },
        "PooledSequence": PooledSequence("st_pooled", batch_size=10),
        "BitReversedSequence": BitReversedSequence("st_bitrev", batch_size=10),
        "BitReversed(Sequence)": BitReversed(sa.Sequence("st_native")),
        "BitReversed(TableSequence)": BitReversed(TableSequence("st_orders", mode="separate")),
    }


@pytest.mark.parametrize("kind", list(_statement_tenant_defaults()))
def test_a_schema_translate_map_given_per_statement_reaches_the_key(
    pg_engine: Engine, kind: str
) -> None:
    # conn.execute(insert, execution_options={"schema_translate_map": ...}): the row
    # goes to the tenant's table, so its key must come from the tenant's sequence
    # (as a plain sqlalchemy.Sequence's nextval, rendered in the INSERT, does). It
    # came from the default schema's: the tenant's next insert collided
    default = _statement_tenant_defaults()[kind]
    metadata = sa.MetaData()
    sequences_table(metadata)
    rows = _rows_keyed_by(default, "st_rows", metadata)
    with tenant_schemas(pg_engine, "seqkeys_st_a", "seqkeys_st_b") as tenants:
        for start, tenant in zip((1, 1_000_000), tenants, strict=True):
            metadata.create_all(tenant)
            create_table_sequence(tenant, "st_orders", start=start)
            PooledSequence("st_pooled", batch_size=10, start=start).create(tenant)
            BitReversedSequence("st_bitrev", batch_size=10, start=start).create(tenant)
            with tenant.begin() as conn:
                conn.execute(sa.schema.CreateSequence(sa.Sequence("st_native", start=start)))
        per_statement = {"schema_translate_map": {None: "seqkeys_st_b"}}
        with pg_engine.begin() as conn:
            conn.execute(rows.insert(), [{"n": 1}, {"n": 2}], execution_options=per_statement)
            conn.execute(rows.insert(), {"n": 3}, execution_options=per_statement)
        tenant_a, tenant_b = tenants
        with tenant_b.begin() as conn:  # the map on the connection: the usual way
            conn.execute(rows.insert(), [{"n": n} for n in range(4, 8)])
            ids = list(conn.scalars(sa.select(rows.c.id)))
        assert len(set(ids)) == 7
        if "BitReversed" in kind:
            ids = [reverse_bits(i) for i in ids]
        assert all(i >= 1_000_000 for i in ids), ids  # all from tenant b's sequence
        with tenant_a.connect() as conn:  # the other tenant: untouched
            assert list(conn.scalars(sa.select(rows.c.id))) == []


@pytest.mark.parametrize("pool", ["singleton", "static"])
def test_every_mode_on_in_memory_sqlite(pool: str) -> None:
    """An in-memory database is per thread (or one shared connection): no background refill."""
    for mode in MODES:
        sequence = TableSequence("mem", mode=mode, batch_size=3, low_watermark=1)
        model, metadata = make_model(sequence)
        sequences_table(metadata)
        kwargs: dict[str, Any] = {}
        if pool == "static":
            kwargs = {"poolclass": sa.pool.StaticPool, "connect_args": {"check_same_thread": False}}
        engine = sa.create_engine("sqlite://", **kwargs)
        metadata.create_all(engine)
        sequence.create(engine)
        with Session(engine) as session:
            for flush in range(4):
                session.add_all(model(note=str(flush)) for _ in range(3))
                session.flush()
            session.commit()
            ids = session.scalars(sa.select(model.id)).all()
        assert sorted(ids) == list(range(1, 13)), mode
        engine.dispose()


def test_the_keywords_of_0_1_are_gone(seq_engine: Engine) -> None:
    # if_not_exists= / if_exists= warned through 0.2 and went in 0.3 (CHANGELOG, "Removed")
    sequence = TableSequence("old_kw", mode="in_transaction")
    assert sequence.create(seq_engine, checkfirst=True) is True
    old: dict[str, Any] = {"if_not_exists": True}
    with pytest.raises(TypeError, match="unexpected keyword argument 'if_not_exists'"):
        sequence.create(seq_engine, **old)
    with pytest.raises(TypeError, match="unexpected keyword argument 'if_not_exists'"):
        create_table_sequence(seq_engine, "old_kw", **old)
    old = {"if_exists": True}
    with pytest.raises(TypeError, match="unexpected keyword argument 'if_exists'"):
        sequence.drop(seq_engine, **old)
    with pytest.raises(TypeError, match="unexpected keyword argument 'if_exists'"):
        drop_table_sequence(seq_engine, "old_kw", **old)
    assert sequence.next_value(seq_engine) == 1  # the row is still there, untouched
    assert sequence.drop(seq_engine, checkfirst=True) is True


@pytest.mark.parametrize("n", [1.5, True, 0, -1, 2**63, "3", None])
def test_allocate_refuses_a_count_that_is_not_a_whole_number_of_values(
    seq_engine: Engine, n: object
) -> None:
    # 1.5 used to return 0.5 and store 2.5 as SQLite's next value; True took a value
    create_table_sequence(seq_engine, "alloc_args", start=7)
    with seq_engine.begin() as conn, pytest.raises(InvalidSequenceError, match="n must be"):
        allocate(conn, "alloc_args", n)  # type: ignore[arg-type]
    with seq_engine.begin() as conn, pytest.raises(InvalidSequenceError):
        allocate(conn, 5, 1)  # type: ignore[arg-type]
    with seq_engine.connect() as conn:
        assert read_next_value(conn, "alloc_args") == 7  # nothing was taken


@pytest.mark.parametrize("mode", ["separate", "batch"])
def test_a_pool_with_no_connection_to_spare_is_a_clear_error(
    server_engine: Engine, mode: str
) -> None:
    # the flush holds the pool's only connection; the allocation of its own waits
    # pool_timeout for a second one: a SeqKeysError that says how to size the pool
    # (it was SQLAlchemy's bare TimeoutError)
    name = f"small_pool_{mode}"
    sequence = TableSequence(name, mode=mode, batch_size=10)
    metadata = sa.MetaData()
    rows = _rows_keyed_by(sequence, f"seqkeys_small_pool_{mode}", metadata)
    with fresh_table(server_engine, sequences_table), fresh_tables(server_engine, metadata):
        sequence.create(server_engine)
        small = sa.create_engine(server_engine.url, pool_size=1, max_overflow=0, pool_timeout=1)
        try:
            with small.begin() as conn, pytest.raises(sa.exc.StatementError) as info:
                conn.execute(rows.insert(), {"n": 1})
            assert isinstance(info.value.orig, SequenceAllocationError), info.value
            assert "pool_size" in str(info.value.orig)
        finally:
            small.dispose()
        assert read_next_value_of(server_engine, name) == 1  # nothing was taken


def read_next_value_of(engine: Engine, name: str) -> int | None:
    with engine.connect() as conn:
        return read_next_value(conn, name)


def _rows_keyed_by(sequence: object, name: str, metadata: sa.MetaData) -> sa.Table:
    """A table ``name`` whose BIGINT key ``id`` takes ``sequence``'s values, and a column ``n``."""
    return sa.Table(
        name,
        metadata,
        sa.Column("id", sa.BigInteger, primary_key=True, default=sequence, autoincrement=False),
        sa.Column("n", sa.Integer),
    )


@pytest.mark.parametrize("path", ["object", "functions", "alembic"])
@pytest.mark.parametrize("mode", ["batch", "async_batch"])
def test_a_sequence_created_anew_never_hands_out_its_former_blocks(
    seq_engine: Engine, mode: str, path: str
) -> None:
    # the process holds a block of the old row (1 to 10, 1 to 3 handed out); the new
    # row hands out 1 to 10 again, so a value left in the old block would repeat one
    name = f"anew_{mode}_{path}"
    sequence = TableSequence(name, mode=mode, batch_size=10, low_watermark=3)
    sequence.create(seq_engine)
    metadata = sa.MetaData()
    rows = _rows_keyed_by(sequence, f"seqkeys_anew_{mode}_{path}", metadata)
    with fresh_tables(seq_engine, metadata):
        with seq_engine.begin() as conn:
            conn.execute(rows.insert(), [{"n": n} for n in range(3)])
        if path == "object":
            assert sequence.drop(seq_engine) is True
            assert sequence.create(seq_engine) is True
        elif path == "functions":  # the sequence object is not told directly
            assert drop_table_sequence(seq_engine, name) is True
            assert create_table_sequence(seq_engine, name) is True
        else:  # a migration run in this process (tests, an app that migrates at startup)
            with seq_engine.begin() as conn:
                op = Operations(MigrationContext.configure(conn))
                op.drop_table_sequence(name)
                op.create_table_sequence(name)
        with seq_engine.begin() as conn:
            conn.execute(sa.delete(rows).where(sa.true()))
            conn.execute(rows.insert(), [{"n": n} for n in range(12)])
            ids = sorted(conn.scalars(sa.select(rows.c.id)))
        assert ids == list(range(1, 13)), "a value of the former row's block came back"


def _second_instance_recreates(sequence: Any, engine: Engine) -> None:
    assert sequence.drop(engine) is True
    assert sequence.create(engine) is True


def _migration_recreates(sequence: Any, engine: Engine) -> None:
    with engine.begin() as conn:
        op = Operations(MigrationContext.configure(conn))
        if isinstance(sequence, PooledSequence):
            op.drop_pooled_sequence(sequence.name, sequence.allocation_size)
            op.create_pooled_sequence(sequence.name, sequence.allocation_size)
        else:
            op.drop_bit_reversed_sequence(sequence.name)
            op.create_bit_reversed_sequence(sequence.name)


def _migration_names_the_default_schema(sequence: Any, engine: Engine) -> None:
    # schema="public" (PostgreSQL), the database's name (MariaDB) where the model names none
    with engine.begin() as conn:
        schema = conn.dialect.default_schema_name or None
        op = Operations(MigrationContext.configure(conn))
        op.drop_pooled_sequence(sequence.name, sequence.allocation_size, schema=schema)
        op.create_pooled_sequence(sequence.name, sequence.allocation_size, schema=schema)


@pytest.mark.parametrize(
    ("kind", "recreate"),
    [
        *[
            (kind, recreate)
            for kind in ("PooledSequence", "BitReversedSequence")
            for recreate in (_second_instance_recreates, _migration_recreates)
        ],
        ("PooledSequence", _migration_names_the_default_schema),  # the only op with a schema
    ],
)
def test_a_native_sequence_created_anew_elsewhere_in_the_process(
    seq_engine: Engine, kind: str, recreate: Any
) -> None:
    # the application's instance holds a block; another instance of the same
    # sequence (an admin task, a migration at startup) drops and creates it: the
    # application must not hand out the rest of its block, which the new
    # sequence hands out again
    name = f"seqkeys_anew_{kind.lower()}"
    app: PooledSequence | BitReversedSequence
    if kind == "PooledSequence":
        app, other = PooledSequence(name, batch_size=10), PooledSequence(name, batch_size=10)
    else:
        app = BitReversedSequence(name, batch_size=10)
        other = BitReversedSequence(name, batch_size=10)
    other.drop(seq_engine, checkfirst=True)
    other.create(seq_engine)
    try:
        before = [app.next_value(seq_engine) for _ in range(2)]
        recreate(other, seq_engine)
        after = [app.next_value(seq_engine) for _ in range(3)]
        theirs = [other.next_value(seq_engine) for _ in range(3)]
        values = before + after + theirs
        assert len(set(after + theirs)) == len(after + theirs), (before, after, theirs)
        assert len(values) == 8
    finally:
        other.drop(seq_engine, checkfirst=True)


@pytest.mark.parametrize("kind", ["TableSequence", "PooledSequence"])
def test_create_all_with_the_sequences_table_in_the_same_metadata(
    engine: Engine, kind: str
) -> None:
    # as the SequencesTableNotFoundError message advises: sequences_table(metadata). On
    # Spanner create_all used to report success and create nothing: the attached
    # sequence asked the catalog for a table whose CREATE the driver still held back,
    # sent a second CREATE, and the failed batch read as "the row was there"
    metadata = sa.MetaData()
    sequences_table(metadata)
    name = f"seqkeys_same_md_{kind.lower()}"
    sequence: TableSequence | PooledSequence = (
        TableSequence(name, mode="batch", batch_size=5, metadata=metadata)
        if kind == "TableSequence"
        else PooledSequence(name, batch_size=5, metadata=metadata)
    )
    data = sa.MetaData()
    rows = _rows_keyed_by(sequence, f"seqkeys_same_md_rows_{kind.lower()}", data)
    data.drop_all(engine)
    metadata.drop_all(engine)
    try:
        for _ in range(2):  # the second time, on what drop_all left: nothing, no block
            metadata.create_all(engine)
            with engine.connect() as conn:
                assert sa.inspect(conn).has_table("sequences")
            data.create_all(engine)
            with engine.begin() as conn:
                conn.execute(rows.insert(), [{"n": n} for n in range(3)])
                assert sorted(conn.scalars(sa.select(rows.c.id))) == [1, 2, 3]
            data.drop_all(engine)
            metadata.drop_all(engine)  # the row goes with the table (Spanner: no DELETE)
            with engine.connect() as conn:
                assert not sa.inspect(conn).has_table("sequences")
    finally:
        data.drop_all(engine)
        metadata.drop_all(engine)
        sequences_table(sa.MetaData()).drop(engine, checkfirst=True)


def test_a_failure_at_the_insert_is_not_an_existing_sequence(spanner_engine: Engine) -> None:
    # Spanner's driver holds DDL back and runs it as the next DML's statement: an error
    # of that DDL surfaces as the INSERT's IntegrityError, which must be raised (the cause of
    # a SequenceAllocationError), never read as "the sequence was there" (False: nothing to
    # do, when nothing was done)
    with fresh_table(spanner_engine, sequences_table):
        with spanner_engine.begin() as conn:
            sequences_table(sa.MetaData()).create(conn)  # exists: fails when it is run
            with pytest.raises(SequenceAllocationError) as raised:
                create_table_sequence(conn, "after_held_ddl", checkfirst=True)
            assert isinstance(raised.value.__cause__, sa.exc.IntegrityError)
            conn.rollback()
        with spanner_engine.connect() as conn:
            assert read_next_value(conn, "after_held_ddl") is None
