"""Table sequences under the faults that once handed out a value twice or lost values.

- Names differing only in case shared one row on MariaDB (a case-insensitive
  collation): each name must be its own sequence, and a table created before
  the fix must be refused at first use with the operation that fixes it.
- A row moved back (restored from a backup, recreated by hand) under a batch
  process: the process handed out values it had handed out before.
- A refill thread that cannot start: concurrent callers each fetched a block
  and installed it over the others', losing values.
- A refill that hangs (its row locked by another transaction): its waiters
  waited forever.
- ``in_transaction`` and statements that insert nothing: what a committed
  value sequence looks like afterwards (documented in the module docstring).
"""

from __future__ import annotations

import ctypes
import os
import select
import signal
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import Engine

from sqlalchemy_seqkeys import (
    SeqKeysError,
    SequenceAllocationError,
    SequenceMovedBackwardsError,
    TableSequence,
    create_table_sequence,
    sequences_table,
)
from sqlalchemy_seqkeys.sequences._allocator import refills
from sqlalchemy_seqkeys.sequences.table import read_next_value, received
from tests._forking import no_stragglers  # noqa: F401 - a fixture
from tests._helpers import fresh_table

# a forked child left running (hung in the interpreter) is killed, and fails its test
pytestmark = [pytest.mark.backend, pytest.mark.usefixtures("no_stragglers")]


@pytest.fixture(params=["sqlite", "postgresql", "mysql"])
def seq_engine(request: pytest.FixtureRequest, engines: Any) -> Iterator[Engine]:
    """A server engine (or SQLite file) with a fresh sequences table."""
    with fresh_table(engines.get(request.param), sequences_table) as fresh:
        yield fresh


@pytest.fixture
def mysql_sequences(mysql_engine: Engine) -> Iterator[Engine]:
    with fresh_table(mysql_engine, sequences_table) as fresh:
        yield fresh


@pytest.fixture
def pg_sequences(pg_engine: Engine) -> Iterator[Engine]:
    with fresh_table(pg_engine, sequences_table) as fresh:
        yield fresh


def _set_row(engine: Engine, name: str, next_value: int) -> None:
    table = sequences_table(sa.MetaData())
    with engine.begin() as conn:
        conn.execute(sa.update(table).where(table.c.name == name).values(next_value=next_value))


# -- names compare exactly ----------------------------------------------------------


def test_names_differing_only_in_case_are_two_sequences_on_mariadb(
    mysql_sequences: Engine,
) -> None:
    assert create_table_sequence(mysql_sequences, "Invoice_A", start=100) is True
    assert create_table_sequence(mysql_sequences, "invoice_a", start=5000) is True
    upper = TableSequence("Invoice_A", mode="separate")
    lower = TableSequence("invoice_a", mode="separate")
    assert upper.next_values(mysql_sequences, 3) == [100, 101, 102]
    assert lower.next_values(mysql_sequences, 3) == [5000, 5001, 5002]
    with mysql_sequences.connect() as conn:
        assert read_next_value(conn, "Invoice_A") == 103
        assert read_next_value(conn, "invoice_a") == 5003
        assert read_next_value(conn, "INVOICE_A") is None


def test_an_old_case_insensitive_table_is_refused_at_first_use(mysql_engine: Engine) -> None:
    with mysql_engine.begin() as conn:
        conn.execute(sa.text("DROP TABLE IF EXISTS seqkeys_old_sequences"))
        # the DDL of earlier versions: the database's default (case-insensitive) collation
        conn.execute(
            sa.text(
                "CREATE TABLE seqkeys_old_sequences (name VARCHAR(64) NOT NULL, "
                "next_value BIGINT NOT NULL, PRIMARY KEY (name)) "
                "CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci"
            )
        )
        conn.execute(sa.text("INSERT INTO seqkeys_old_sequences VALUES ('old_id', 1)"))
    try:
        sequence = TableSequence("old_id", mode="separate", table="seqkeys_old_sequences")
        for _ in range(2):  # refused every time, not only the first
            with pytest.raises(SeqKeysError, match=r"op\.make_sequence_names_case_sensitive"):
                sequence.next_value(mysql_engine)
        with mysql_engine.connect() as conn:  # nothing was allocated
            assert read_next_value(conn, "old_id", table="seqkeys_old_sequences") == 1
    finally:
        with mysql_engine.begin() as conn:
            conn.execute(sa.text("DROP TABLE IF EXISTS seqkeys_old_sequences"))


# -- a row moved back ------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["separate", "batch", "async_batch"])
def test_a_row_moved_back_under_a_batch_process(seq_engine: Engine, mode: str) -> None:
    name = f"restored_{mode}"
    create_table_sequence(seq_engine, name)
    sequence = TableSequence(name, mode=mode, batch_size=5, low_watermark=1)
    handed = sequence.next_values(seq_engine, 6)  # 1..6; batch modes hold 7..10 too
    _set_row(seq_engine, name, 1)  # the row restored from a backup taken at the start
    error: BaseException | None = None
    for _ in range(40):
        try:
            handed.append(sequence.next_value(seq_engine))
        except SeqKeysError as exc:
            error = exc
            break
    assert len(handed) == len(set(handed)), f"values handed out twice: {sorted(handed)}"
    assert error is not None, "the backwards move went unnoticed"
    assert isinstance(error, SequenceMovedBackwardsError)
    assert isinstance(error, SequenceAllocationError)
    assert "resync_table_sequence" in str(error)
    # refused again, never handed out, until the row is past what was handed out
    with pytest.raises(SequenceMovedBackwardsError):
        sequence.next_values(seq_engine, 5)
    _set_row(seq_engine, name, 1000)
    later = sequence.next_values(seq_engine, 12)
    assert min(later) >= 1000
    assert not set(later) & set(handed)


# -- a refill thread that cannot start -------------------------------------------------


@pytest.fixture
def failing_refill_threads(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """Refill threads cannot start (a thread limit): start() takes a moment, then raises."""
    refused: list[str] = []
    start = threading.Thread.start
    refills.retire_idle()  # refill threads live on: make the next refill start one

    def refuse(self: threading.Thread) -> None:
        if not self.name.startswith("seqkeys-refill"):
            start(self)
            return
        refused.append(self.name)
        time.sleep(0.005)
        raise RuntimeError("can't start new thread")

    monkeypatch.setattr(threading.Thread, "start", refuse)
    yield refused
    monkeypatch.undo()


def test_a_refill_thread_that_cannot_start_loses_no_values(
    seq_engine: Engine, failing_refill_threads: list[str]
) -> None:
    create_table_sequence(seq_engine, "no_threads")
    sequence = TableSequence("no_threads", mode="async_batch", batch_size=10, low_watermark=3)
    taken: list[list[int]] = [[] for _ in range(8)]
    errors: list[BaseException] = []
    barrier = threading.Barrier(len(taken))

    def work(out: list[int]) -> None:
        try:
            barrier.wait()
            for _ in range(30):
                out.append(sequence.next_value(seq_engine))
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(out,)) for out in taken]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    assert failing_refill_threads, "the fault was injected"
    values = [v for out in taken for v in out]
    assert len(values) == len(set(values)) == 240

    # Drain what the process still holds: once a value from a block allocated
    # after this point appears, every value allocated before it was handed out.
    with seq_engine.connect() as conn:
        allocated_up_to = read_next_value(conn, "no_threads")
    assert allocated_up_to is not None
    while (value := sequence.next_value(seq_engine)) < allocated_up_to:
        values.append(value)
    assert len(values) == len(set(values))
    lost = set(range(1, allocated_up_to)) - set(values)
    assert not lost, f"{len(lost)} values allocated and never handed out: {sorted(lost)[:20]}"


# -- a refill that hangs ------------------------------------------------------------------


def _wait_for_a_lock_wait(engine: Engine) -> None:
    """Return once a session of this database waits for a lock (at most 10 s)."""
    waiting = sa.text(
        "SELECT count(*) FROM pg_stat_activity "
        "WHERE datname = current_database() AND wait_event_type = 'Lock'"
    )
    deadline = time.monotonic() + 10
    with engine.connect() as conn:
        while not conn.scalar(waiting):
            assert time.monotonic() < deadline, "the fetching thread never reached the row lock"
            time.sleep(0.01)
            conn.rollback()


@pytest.mark.parametrize("mode", ["batch", "async_batch"])
def test_a_waiter_on_a_hung_refill_times_out_then_values_continue(
    pg_sequences: Engine, mode: str
) -> None:
    name = f"hung_{mode}"
    create_table_sequence(pg_sequences, name)
    sequence = TableSequence(name, mode=mode, batch_size=10, low_watermark=3, refill_timeout=0.5)
    table = sequences_table(sa.MetaData())
    locker = pg_sequences.connect()
    trans = locker.begin()
    locker.execute(sa.select(table).where(table.c.name == name).with_for_update())
    fetcher_values: list[int] = []
    fetcher = None
    try:
        if mode == "batch":  # a thread fetching the block itself, stuck on the lock
            fetcher = threading.Thread(
                target=lambda: fetcher_values.append(sequence.next_value(pg_sequences))
            )
            fetcher.start()
            _wait_for_a_lock_wait(pg_sequences)  # else this thread would fetch, and wait forever
        with pytest.raises(SequenceAllocationError, match="refill_timeout"):
            sequence.next_value(pg_sequences)  # waits for that fetch or the refill thread
    finally:
        trans.rollback()
        locker.close()
    if fetcher is not None:
        fetcher.join(10)
    values = fetcher_values + sequence.next_values(pg_sequences, 25)
    assert len(values) == 25 + (mode == "batch")
    assert sorted(values) == list(range(1, len(values) + 1)), "the late block is used, none twice"


# -- in_transaction: statements that insert nothing ---------------------------------------


@pytest.fixture(params=["postgresql", "mysql"])
def server_sequences(request: pytest.FixtureRequest, engines: Any) -> Iterator[Engine]:
    with fresh_table(engines.get(request.param), sequences_table) as fresh:
        yield fresh


def test_in_transaction_statements_that_insert_nothing(server_sequences: Engine) -> None:
    """What the module docstring says: a savepoint gives the value back, a skipped row does not."""
    engine = server_sequences
    create_table_sequence(engine, "skips")
    sequence = TableSequence("skips", mode="in_transaction")
    metadata = sa.MetaData()
    rows = sa.Table(
        "seqkeys_skip_rows",
        metadata,
        sa.Column("id", sa.BigInteger, primary_key=True, default=sequence, autoincrement=False),
        sa.Column("email", sa.String(40), nullable=False, unique=True),
    )
    metadata.drop_all(engine)
    metadata.create_all(engine)
    try:
        if engine.dialect.name == "postgresql":
            from sqlalchemy.dialects.postgresql import insert

            insert_if_absent = insert(rows).on_conflict_do_nothing()
        else:
            insert_if_absent = sa.insert(rows).prefix_with("IGNORE")
        with engine.begin() as conn:
            conn.execute(sa.insert(rows), {"email": "a@example.com"})  # id 1
            # a savepoint rolled back after an IntegrityError gives its value back
            savepoint = conn.begin_nested()
            with pytest.raises(sa.exc.IntegrityError):
                conn.execute(sa.insert(rows), {"email": "a@example.com"})
            savepoint.rollback()
            conn.execute(sa.insert(rows), {"email": "b@example.com"})  # id 2
            # an insert-if-absent that inserts nothing keeps its value: id 3 is skipped
            skipped = conn.execute(
                insert_if_absent.execution_options(preserve_rowcount=True),
                {"email": "a@example.com"},
            )
            assert skipped.rowcount == 0
            conn.execute(sa.insert(rows), {"email": "c@example.com"})  # id 4
            if engine.dialect.name == "mysql":
                # MariaDB undoes only the failed statement, not the transaction: an
                # IntegrityError caught without a savepoint keeps its value too (id 5)
                with pytest.raises(sa.exc.IntegrityError):
                    conn.execute(sa.insert(rows), {"email": "a@example.com"})
                conn.execute(sa.insert(rows), {"email": "d@example.com"})  # id 6
        with engine.connect() as conn:
            ids = conn.scalars(sa.select(rows.c.id).order_by(rows.c.email)).all()
        assert ids == ([1, 2, 4, 6] if engine.dialect.name == "mysql" else [1, 2, 4])
    finally:
        metadata.drop_all(engine)


# -- fork without Python's hooks -----------------------------------------------------------


def _libc_fork_child(work: Callable[[], str], deadline_s: float = 10.0) -> str:
    """Run ``work`` in a child forked by libc ``fork()`` (no at-fork hook runs); its output.

    A child that does not answer in time is killed and reported as deadlocked.
    """
    libc_fork = ctypes.PyDLL(None).fork  # holds the GIL across the call, as os.fork() does
    libc_fork.restype = ctypes.c_int
    read_fd, write_fd = os.pipe()
    pid = libc_fork()
    if pid == 0:  # pragma: no cover - the child
        try:
            try:
                text = work()
            except BaseException as exc:  # reported to the parent as text
                text = f"{type(exc).__name__}: {exc}"
            os.write(write_fd, text.encode())
        finally:
            os._exit(0)
    os.close(write_fd)
    chunks = []
    end = time.monotonic() + deadline_s
    try:
        while True:
            ready, _, _ = select.select([read_fd], [], [], max(0.0, end - time.monotonic()))
            if not ready:
                os.kill(pid, signal.SIGKILL)
                return "deadlocked"
            chunk = os.read(read_fd, 1 << 16)
            if not chunk:
                break
            chunks.append(chunk)
    finally:
        os.close(read_fd)
        os.waitpid(pid, 0)
    return b"".join(chunks).decode()


@pytest.mark.skipif(not hasattr(os, "fork"), reason="fork() is POSIX-only")
def test_a_libc_forked_child_never_uses_the_parents_block(pg_sequences: Engine) -> None:
    """uWSGI without lazy-apps forks through libc: no at-fork hook runs in the child."""
    create_table_sequence(pg_sequences, "libc_fork")
    sequence = TableSequence("libc_fork", mode="batch", batch_size=100)
    before = sequence.next_values(pg_sequences, 10)  # the parent holds 11..100
    # another thread of the parent is inside the library's locks at the moment of the fork
    blocks = sequence._allocations.blocks
    held = [blocks._lock, received._lock, blocks.of(pg_sequences).lock, refills._cond]
    for lock in held:
        lock.acquire()
    try:

        def child() -> str:
            pg_sequences.dispose(close=False)  # SQLAlchemy's rule for forked children
            return " ".join(map(str, sequence.next_values(pg_sequences, 20)))

        out = _libc_fork_child(child)
    finally:
        for lock in held:
            lock.release()
    assert out[:1].isdigit(), out
    child_values = [int(v) for v in out.split()]
    assert len(child_values) == 20
    parent_values = before + sequence.next_values(pg_sequences, 150)
    assert not set(child_values) & set(parent_values)
    assert min(child_values) > 100  # not from the parent's block
