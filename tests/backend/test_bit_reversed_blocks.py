"""BitReversedSequence(batch_size=N): N counters per statement, Spanner's values.

On the emulator a block gives exactly what Spanner's own sequence gives one
value at a time, skip range included; on every engine an ORM flush gets the
values of the definition (the model below) while reading the sequence once
per block. PostgreSQL and MariaDB take real load: threads, a second writer
taking one value at a time, a libc-forked child, tenants, and a MariaDB
server whose SEQUENCE engine is off.
"""

from __future__ import annotations

import itertools
import math
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import Engine
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column

from sqlalchemy_seqkeys import (
    BitReversedSequence,
    SequenceExhaustedError,
    reverse_bits,
    sequences_table,
)
from tests._forking import libc_fork as _libc_fork
from tests._helpers import in_forked_child
from tests._servers import MariaDBUnavailableError, private_mariadb
from tests.backend._tenants import Tenants, two_tenants  # noqa: F401 - the tenants fixture

pytestmark = pytest.mark.backend

START = 1000
#: about one counter in five from START on gives a value in here: skipped, consumed
SKIP = (2**60, 2**61 + 2**59)
BATCH = 7
#: a sequences table of these tests' own (SQLite; MySQL played by MariaDB)
TABLE = "seqkeys_brb_sequences"
ROWS = "seqkeys_brb_rows"


def model(start: int, skip: tuple[int, int] | None, n: int) -> list[int]:
    """The first ``n`` values of the sequence, from the definition alone."""
    low, high = skip or (1, 0)
    values = (reverse_bits(c) for c in itertools.count(start))
    return list(itertools.islice((v for v in values if not low <= v <= high), n))


def counters_consumed(start: int, values: list[int]) -> int:
    """Counters from ``start`` up to the last value's, skipped ones included."""
    return max(reverse_bits(v) for v in values) - start + 1


def is_spanner(engine: Engine) -> bool:
    return engine.dialect.name.startswith("spanner")


def native(engine: Engine) -> bool:
    with engine.connect() as conn:  # MariaDB's dialect learns it has sequences here
        return bool(conn.dialect.supports_sequences)


@contextmanager
def counting(engine: Engine) -> Iterator[dict[str, int]]:
    """Count the statements that read the sequence, and the INSERTs."""
    counts = {"reads": 0, "blocks": 0, "inserts": 0}

    def count(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        text = " ".join(statement.lower().split())
        if any(s in text for s in ("nextval(", "get_next_sequence_value", f"update {TABLE}")):
            counts["reads"] += 1
            if any(s in text for s in ("generate_series(", "seq_1_to_", "generate_array(")):
                counts["blocks"] += 1
        elif text.startswith(f"insert into {ROWS}"):
            counts["inserts"] += 1

    sa.event.listen(engine, "before_cursor_execute", count)
    try:
        yield counts
    finally:
        sa.event.remove(engine, "before_cursor_execute", count)


def declare(name: str, **kw: Any) -> BitReversedSequence:
    return BitReversedSequence(name, table=TABLE, **kw)


def make_model(sequence: BitReversedSequence) -> tuple[type[Any], sa.MetaData]:
    class Base(DeclarativeBase):
        pass

    sequences_table(Base.metadata, TABLE)  # used where the engine has no sequences
    sequence.attach(Base.metadata)

    class Row(Base):
        __tablename__ = ROWS
        id: Mapped[int] = mapped_column(
            sa.BigInteger, primary_key=True, default=sequence, autoincrement=False
        )
        note: Mapped[str] = mapped_column(sa.String(20))

    return Row, Base.metadata


@contextmanager
def rows_keyed_by(engine: Engine, sequence: BitReversedSequence) -> Iterator[type[Any]]:
    """The rows table with ``sequence`` as its key's default, created anew, dropped after."""
    row, metadata = make_model(sequence)
    metadata.drop_all(engine)
    metadata.create_all(engine)  # creates the sequence too
    try:
        yield row
    finally:
        metadata.drop_all(engine)


def ids(engine: Engine, where: str = "") -> list[int]:
    with engine.connect() as conn:
        return [int(v) for v in conn.scalars(sa.text(f"SELECT id FROM {ROWS} {where}"))]


# -- Spanner's values --------------------------------------------------------------------


def test_blocks_on_the_emulator_equal_spanners_one_by_one_values(spanner_engine: Engine) -> None:
    """Blocks of 7 and Spanner's own sequence read one value at a time: the same values.

    Spanner skips inside GET_NEXT_SEQUENCE_VALUE, so each block brings 7 values.
    """
    n = 300
    taken: dict[int, list[int]] = {}
    for batch in (1, BATCH):
        sequence = BitReversedSequence(
            f"seqkeys_brb_emu{batch}", start=START, skip_range=SKIP, batch_size=batch
        )
        sequence.drop(spanner_engine, checkfirst=True)
        sequence.create(spanner_engine)
        try:
            with counting(spanner_engine) as counts, spanner_engine.begin() as conn:
                taken[batch] = [sequence.next_value(conn) for _ in range(n)]
        finally:
            sequence.drop(spanner_engine)
        expected_reads = n if batch == 1 else math.ceil(n / batch)
        assert counts["reads"] == expected_reads, (batch, counts)
    assert taken[BATCH] == taken[1] == model(START, SKIP, n)
    assert counters_consumed(START, taken[1]) - n > 40  # the skip range was exercised


def test_an_orm_flush_gets_spanners_values_a_block_per_statement(engine: Engine) -> None:
    """On every engine, in flush order: the model's values; one read per block."""
    n = 300
    sequence = declare("seqkeys_brb_orm", start=START, skip_range=SKIP, batch_size=BATCH)
    with rows_keyed_by(engine, sequence) as row, counting(engine) as counts:
        with Session(engine) as session:
            rows = [row(note=str(i)) for i in range(n)]
            session.add_all(rows)
            session.commit()
            flushed = [r.id for r in rows]
        stored = ids(engine)
    expected = model(START, SKIP, n)
    assert flushed == expected  # one process, one thread: in counter order too
    assert sorted(stored) == sorted(expected)
    # Spanner skips server-side (7 values a block); elsewhere a block is 7 counters
    consumed = n if is_spanner(engine) else counters_consumed(START, expected)
    assert counts["reads"] == math.ceil(consumed / BATCH), counts
    assert counts["inserts"] <= 3, counts  # keys are client-side: the INSERTs stay batched


def test_a_2000_row_flush_reads_the_sequence_once_per_block(engine: Engine) -> None:
    size = 50
    sequence = declare("seqkeys_brb_2000", batch_size=size)
    with rows_keyed_by(engine, sequence) as row, counting(engine) as counts:
        with Session(engine) as session:
            session.add_all(row(note=str(i)) for i in range(2000))
            session.commit()
        stored = ids(engine)
    assert sorted(stored) == sorted(reverse_bits(c) for c in range(1, 2001))
    assert counts["reads"] == 2000 // size, counts
    if native(engine):
        assert counts["blocks"] == 2000 // size, counts  # one statement per block
    assert counts["inserts"] <= 10, counts


def test_a_skip_range_over_everything_is_reported_in_blocks(engine: Engine) -> None:
    sequence = declare("seqkeys_brb_all", skip_range=(0, 2**63 - 1), batch_size=500)
    sequences_table(sa.MetaData(), TABLE).create(engine, checkfirst=True)
    sequence.drop(engine, checkfirst=True)
    sequence.create(engine)
    try:
        if is_spanner(engine):  # Spanner checks the skip range itself: "is exhausted"
            with pytest.raises(SequenceExhaustedError, match="has no value left"):
                sequence.next_value(engine)
        else:
            with (
                counting(engine) as counts,
                pytest.raises(SequenceExhaustedError, match="covers nearly all"),
            ):
                sequence.next_value(engine)
            assert counts["reads"] == 10_000 // 500, counts  # 10,000 skipped, 20 reads
    finally:
        sequence.drop(engine)
        sequences_table(sa.MetaData(), TABLE).drop(engine, checkfirst=True)


def test_a_sequence_created_anew_forgets_the_blocks_held(engine: Engine) -> None:
    sequence = declare("seqkeys_brb_anew", start=5, batch_size=BATCH)
    sequences_table(sa.MetaData(), TABLE).create(engine, checkfirst=True)
    sequence.drop(engine, checkfirst=True)
    sequence.create(engine)
    try:
        assert sequence.next_value(engine) == reverse_bits(5)  # the block holds 6 .. 11
        sequence.drop(engine)
        sequence.create(engine)
        assert sequence.next_value(engine) == reverse_bits(5)  # the new sequence's first
        assert sequence.next_value(engine) == reverse_bits(6)
    finally:
        sequence.drop(engine, checkfirst=True)
        sequences_table(sa.MetaData(), TABLE).drop(engine, checkfirst=True)


# -- PostgreSQL and MariaDB under load ---------------------------------------------------


@pytest.fixture(params=["postgresql", "mysql"])
def server_engine(request: pytest.FixtureRequest, engines: Any) -> Engine:
    engine: Engine = engines.get(request.param)
    return engine


def test_threads_and_a_one_by_one_writer_never_share_a_value(server_engine: Engine) -> None:
    """8 threads of ORM flushes from blocks, and a writer taking one value per statement."""
    engine = server_engine
    size, threads, flushes, per_flush, single = 50, 8, 5, 40, 100
    name = "seqkeys_brb_load"
    sequence = declare(name, batch_size=size, skip_range=SKIP)
    one_by_one = declare(name, skip_range=SKIP)  # another writer of the same sequence
    errors: list[BaseException] = []
    start = threading.Barrier(threads + 1)
    single_values: list[int] = []

    with rows_keyed_by(engine, sequence) as row:

        def orm_worker() -> None:
            try:
                start.wait()
                for flush in range(flushes):
                    with Session(engine) as session:
                        session.add_all(row(note=f"orm{flush}") for _ in range(per_flush))
                        session.commit()
            except BaseException as exc:  # reported below
                errors.append(exc)

        def single_worker() -> None:
            try:
                start.wait()
                single_values.extend(one_by_one.next_value(engine) for _ in range(single))
            except BaseException as exc:  # reported below
                errors.append(exc)

        workers = [threading.Thread(target=orm_worker) for _ in range(threads)]
        workers.append(threading.Thread(target=single_worker))
        with counting(engine) as counts:
            for t in workers:
                t.start()
            for t in workers:
                t.join()
        orm_values = ids(engine)
    assert not errors, errors
    everything = orm_values + single_values
    assert len(orm_values) == threads * flushes * per_flush
    assert len(set(everything)) == len(everything)  # every value once
    low, high = SKIP
    assert not [v for v in everything if low <= v <= high]
    # each value is a counter's reversal: all of them from the counters handed out so far
    counters = {reverse_bits(v) for v in everything}
    assert counters <= set(range(1, max(counters) + 1))
    # One statement per block of 50 counters. A block's counters give ORM values
    # or skipped ones, and blocks fetched at once by several threads are all
    # used but for at most one left over per thread.
    skipped = sum(1 for c in range(1, max(counters) + 1) if low <= reverse_bits(c) <= high)
    most = math.ceil((len(orm_values) + skipped) / size) + threads
    assert math.ceil(len(orm_values) / size) <= counts["blocks"] <= most, counts


# -- fork -------------------------------------------------------------------------------


@pytest.fixture
def forking_engine(server_engine: Engine) -> Iterator[Engine]:
    # NullPool: the child opens connections of its own and keeps the parent's pool
    # object, so nothing but the fork marker can tell it the block is not its own
    engine = sa.create_engine(server_engine.url, poolclass=sa.pool.NullPool)
    declare("seqkeys_brb_fork").drop(engine, checkfirst=True)
    try:
        yield engine
    finally:
        declare("seqkeys_brb_fork").drop(engine, checkfirst=True)
        engine.dispose()


@pytest.mark.skipif(not hasattr(os, "fork"), reason="fork() is POSIX-only")
@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # fork() with threads alive
@pytest.mark.parametrize("how", ["libc fork()", "os.fork()"])
def test_a_forked_child_never_hands_out_the_parents_block(
    forking_engine: Engine, fork_marker: str, how: str
) -> None:
    size = 50
    sequence = declare("seqkeys_brb_fork", batch_size=size)
    sequence.create(forking_engine)
    first = sequence.next_value(forking_engine)  # the parent holds counters 2 .. 50

    def child() -> str:
        return " ".join(str(sequence.next_value(forking_engine)) for _ in range(60))

    text = in_forked_child(child, fork=_libc_fork if how == "libc fork()" else os.fork)
    assert text[:1].isdigit(), f"the child failed to take values: {text}"
    child_values = [int(v) for v in text.split()]
    parent_values = [sequence.next_value(forking_engine) for _ in range(60)]
    assert first == reverse_bits(1)
    assert len(child_values) == 60, child_values
    parents_block = {reverse_bits(c) for c in range(1, size + 1)}
    assert not set(child_values) & parents_block, "the child handed out the parent's block"
    assert not set(child_values) & set(parent_values)
    assert parent_values[:49] == [reverse_bits(c) for c in range(2, 51)]  # still its own


# -- tenants ------------------------------------------------------------------------------


def test_each_tenant_has_its_own_sequence_and_blocks(tenants: Tenants) -> None:
    """A schema_translate_map moves the block statement (MariaDB: seq_1_to_N too)."""
    _, _, (a, b) = tenants
    for start, tenant in ((100, a), (5000, b)):
        BitReversedSequence("orders", start=start).create(tenant)
    sequence = BitReversedSequence("orders", batch_size=BATCH)
    taken: dict[str, list[int]] = {"a": [], "b": []}
    for _ in range(10):  # interleaved: each tenant's block stays its own
        taken["a"].append(sequence.next_value(a))
        taken["b"].append(sequence.next_value(b))
    assert taken["a"] == [reverse_bits(c) for c in range(100, 110)]
    assert taken["b"] == [reverse_bits(c) for c in range(5000, 5010)]


# -- MariaDB without the SEQUENCE engine ---------------------------------------------------


@pytest.mark.slow
def test_mariadb_without_the_sequence_engine_uses_a_recursive_cte() -> None:
    """``mariadbd --sequence=OFF``: no seq_1_to_N tables; a recursive CTE fetches the block.

    The server stops recursing at max_recursive_iterations (1000 by default):
    a block of 2,000 then arrives as several statements of at most 1,001 values.
    """
    try:
        server = private_mariadb(options=["--sequence=OFF"])
        url = server.__enter__()
    except MariaDBUnavailableError as exc:
        if os.environ.get("CI"):
            pytest.fail(f"private MariaDB server: {exc}", pytrace=False)
        pytest.skip(f"private MariaDB server unavailable: {exc}")
    engine = sa.create_engine(url)
    try:
        with engine.connect() as conn:
            status = conn.scalar(
                sa.text(
                    "SELECT plugin_status FROM information_schema.plugins "
                    "WHERE plugin_name = 'SEQUENCE'"
                )
            )
        assert status == "DISABLED"
        for size, n in ((50, 300), (2000, 2500)):
            sequence = declare(f"seqkeys_brb_cte{size}", skip_range=SKIP, batch_size=size)
            with (
                rows_keyed_by(engine, sequence) as row,
                counting(engine) as counts,
                Session(engine) as session,
            ):
                rows = [row(note="c") for _ in range(n)]
                session.add_all(rows)
                session.commit()
                flushed = [r.id for r in rows]
            assert flushed == model(1, SKIP, n)
            # the first read met the missing seq_1_to_N table, then the CTE took over
            assert counts["reads"] == 1 + math.ceil(
                counters_consumed(1, flushed) / min(size, 1001)
            ), counts
    finally:
        engine.dispose()
        server.__exit__(None, None, None)
