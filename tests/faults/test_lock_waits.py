"""A sequence's row locked by another transaction: one lock wait, one timeout, one SeqKeysError.

Issue 21, items 2 and 3:

- With the row held ``FOR UPDATE``, MariaDB allocations retried error 1205 and
  raised only after six ``innodb_lock_wait_timeout`` waits (12.2 s at 2 s, five
  minutes at the default 50 s); PostgreSQL raised a raw ``LockNotAvailable``
  after one ``lock_timeout``. Now every path (``separate``, ``batch``,
  ``async_batch``'s refill, ``in_transaction`` in the caller's transaction,
  resync, a pooled sequence's ``nextval``; sync and asyncio) raises
  :class:`~sqlalchemy_seqkeys.SequenceLockTimeoutError` after one wait, naming
  the setting and the sequence; callers that waited for the same block, or
  queued behind the same round trip in the asyncio lane, get the same error
  instead of each waiting another timeout.
- On MariaDB a resync beside an ``in_transaction`` insert deadlocked (its MAX
  subquery share-locks the data table's last keys, then waits for the
  sequence's row, whose holder then inserts) and surfaced raw error 1213. A
  resync in a transaction of its own is now retried; one joined to the
  caller's transaction cannot be, and says so with a SeqKeysError.

The lock timeout is set per session (a ``connect`` event on the test's own
engine), never globally. Each timed assertion is a behaviour check: the error
arrives after about one timeout, not several.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import Engine

from sqlalchemy_seqkeys import (
    PooledSequence,
    SeqKeysError,
    SequenceAllocationError,
    SequenceLockTimeoutError,
    TableSequence,
    create_table_sequence,
    drop_table_sequence,
    resync_pooled_sequence,
    resync_table_sequence,
    sequences_table,
)
from sqlalchemy_seqkeys.sequences import resync_table_sequence_async
from tests._helpers import fresh_table, fresh_tables
from tests._loopticker import BLOCKED_S, LoopTicker
from tests.conftest import AsyncDatabase, _async_database

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncEngine

pytestmark = pytest.mark.backend

#: the session lock timeout of the engines under test, in seconds
LOCK_TIMEOUT_S = 1
#: the setting a user changes, per backend
SETTINGS = {"postgresql": "lock_timeout", "mysql": "innodb_lock_wait_timeout"}
_SET_TIMEOUT = {
    "postgresql": f"SET lock_timeout = '{LOCK_TIMEOUT_S}s'",
    # a row lock waits innodb_lock_wait_timeout, a table lock (LOCK TABLES, a running
    # ALTER TABLE) lock_wait_timeout: a year by default
    "mysql": f"SET SESSION innodb_lock_wait_timeout = {LOCK_TIMEOUT_S}, "
    f"lock_wait_timeout = {LOCK_TIMEOUT_S}",
}
ROWS = "lockwait_rows"
#: a sequence that warms an engine's allocation lane up (its connection)
WARM = "lockwait_warm"
MODES = ["separate", "batch", "async_batch"]


def _bound_lock_waits(engine: Engine) -> None:
    """Every new connection of ``engine`` waits at most LOCK_TIMEOUT_S for a lock (its session)."""
    statement = _SET_TIMEOUT[engine.url.get_backend_name()]

    def on_connect(dbapi_connection: Any, record: Any) -> None:
        cursor = dbapi_connection.cursor()
        cursor.execute(statement)
        cursor.close()
        dbapi_connection.commit()  # a SET in a transaction rolled back later would be undone

    sa.event.listen(engine, "connect", on_connect)


def _rows_table() -> tuple[sa.MetaData, sa.Table]:
    metadata = sa.MetaData()
    return metadata, sa.Table(
        ROWS, metadata, sa.Column("id", sa.BigInteger, primary_key=True, autoincrement=False)
    )


@contextmanager
def _server(engine: Engine) -> Iterator[Engine]:
    """``engine`` with a fresh sequences table and an empty data table, dropped after."""
    metadata, _ = _rows_table()
    with fresh_table(engine, sequences_table), fresh_tables(engine, metadata):
        yield engine


@pytest.fixture(params=["postgresql", "postgresql18", "mysql"])
def plain(request: pytest.FixtureRequest, engines: Any) -> Iterator[Engine]:
    """A server engine with the server's own lock timeouts, fresh tables."""
    with _server(engines.get(request.param)) as engine:
        yield engine


@pytest.fixture
def bounded(plain: Engine) -> Iterator[Engine]:
    """An engine on ``plain``'s database whose sessions wait LOCK_TIMEOUT_S for a lock."""
    engine = sa.create_engine(plain.url)
    _bound_lock_waits(engine)
    # connected before the timed calls, which then measure lock waits, not connecting
    # (slow on a loaded machine): the locker and up to CALLERS threads at once
    warm = [engine.connect() for _ in range(CALLERS + 1)]
    for conn in warm:
        conn.close()
    try:
        yield engine
    finally:
        engine.dispose()


@pytest.fixture(
    params=[
        "postgresql+asyncpg",
        "postgresql+psycopg_async",
        "postgresql18+asyncpg",
        "mysql+asyncmy",
        "mysql+aiomysql",
    ]
)
def async_db(request: pytest.FixtureRequest, engines: Any) -> Iterator[AsyncDatabase]:
    """PostgreSQL 15 and 18 and MariaDB through each asyncio driver, fresh tables."""
    database = _async_database(request.param, engines)
    with _server(database.sync):
        create_table_sequence(database.sync, WARM)
        yield database


@contextmanager
def _row_locked(engine: Engine, name: str) -> Iterator[None]:
    """Hold sequence ``name``'s row ``FOR UPDATE`` in a transaction on another connection."""
    table = sequences_table(sa.MetaData())
    with engine.connect() as conn:
        trans = conn.begin()
        locked = sa.select(table.c.next_value).where(table.c.name == name).with_for_update()
        assert conn.execute(locked).scalar() is not None
        try:
            yield
        finally:
            trans.rollback()


def _check_one_timeout(
    exc: BaseException, elapsed: float, name: str, backend: str, within: float = 2
) -> None:
    """``exc`` came after about one lock timeout and says which setting and sequence."""
    assert isinstance(exc, SequenceLockTimeoutError), repr(exc)
    assert 0.8 * LOCK_TIMEOUT_S <= elapsed < within * LOCK_TIMEOUT_S, f"{elapsed:.2f} s: {exc}"
    message = str(exc)
    assert SETTINGS[backend] in message, message
    assert repr(name) in message, message
    assert isinstance(exc.__cause__, sa.exc.DBAPIError), "the database error is kept"


def _timed(call: Callable[[], object]) -> tuple[BaseException, float]:
    started = time.monotonic()
    with pytest.raises(SeqKeysError) as raised:
        call()
    return raised.value, time.monotonic() - started


# -- item 2: allocations, sync ------------------------------------------------------------


@pytest.mark.parametrize("mode", [*MODES, "in_transaction"])
def test_an_allocation_of_its_own_waits_one_lock_timeout(bounded: Engine, mode: str) -> None:
    """``next_value(engine)``: a transaction of its own in every mode (a refill in async_batch)."""
    name = f"locked_{mode}"
    create_table_sequence(bounded, name)
    sequence = TableSequence(name, mode=mode, batch_size=10, low_watermark=3)
    with _row_locked(bounded, name):
        exc, elapsed = _timed(lambda: sequence.next_value(bounded))
    _check_one_timeout(exc, elapsed, name, bounded.url.get_backend_name())
    assert sequence.next_values(bounded, 3) == [1, 2, 3], "nothing was taken, the row is free"


@pytest.mark.parametrize("plain", ["mysql"], indirect=True)
@pytest.mark.parametrize("mode", ["separate", "in_transaction"])
def test_a_locked_table_waits_one_lock_timeout(bounded: Engine, mode: str) -> None:
    """MariaDB's LOCK TABLES: bounded by lock_wait_timeout, which the message names too."""
    name = f"table_locked_{mode}"
    create_table_sequence(bounded, name)
    sequence = TableSequence(name, mode=mode)
    with bounded.connect() as locker:
        locker.exec_driver_sql("LOCK TABLES sequences WRITE")
        try:
            exc, elapsed = _timed(lambda: sequence.next_value(bounded))
        finally:
            locker.exec_driver_sql("UNLOCK TABLES")
    _check_one_timeout(exc, elapsed, name, "mysql")
    assert "waits lock_wait_timeout instead" in str(exc)
    assert sequence.next_values(bounded, 2) == [1, 2], "nothing was taken, the table is free"


def test_in_transaction_in_the_callers_transaction_waits_one_lock_timeout(
    bounded: Engine,
) -> None:
    """The error is a SeqKeysError too, and says the transaction is the caller's to roll back."""
    name = "locked_in_tx"
    create_table_sequence(bounded, name)
    sequence = TableSequence(name, mode="in_transaction")
    metadata = sa.MetaData()
    rows = sa.Table(
        ROWS,
        metadata,
        sa.Column("id", sa.BigInteger, primary_key=True, autoincrement=False, default=sequence),
    )
    backend = bounded.url.get_backend_name()
    with _row_locked(bounded, name), bounded.connect() as conn:
        trans = conn.begin()
        exc, elapsed = _timed(lambda: sequence.next_value(conn))
        trans.rollback()
        _check_one_timeout(exc, elapsed, name, backend)
        assert "roll back" in str(exc), str(exc)
        trans = conn.begin()
        started = time.monotonic()
        # SQLAlchemy wraps what a column default raises, keeping it as .orig
        with pytest.raises(sa.exc.StatementError) as raised:
            conn.execute(rows.insert())
        trans.rollback()
        _check_one_timeout(raised.value.orig, time.monotonic() - started, name, backend)  # type: ignore[arg-type]
    with bounded.begin() as conn:
        conn.execute(rows.insert())
        assert conn.execute(sa.select(rows.c.id)).scalars().all() == [1], "gapless still"


# -- item 2: allocations, asyncio -----------------------------------------------------------


def _bounded_async(database: AsyncDatabase) -> AsyncEngine:
    engine = database.engine()
    _bound_lock_waits(engine.sync_engine)
    return engine


async def _warmed(database: AsyncDatabase) -> AsyncEngine:
    """A bounded AsyncEngine whose pool and allocation lane hold a connection already.

    The timed calls then measure lock waits, not connecting (slow on a loaded machine).
    """
    engine = _bounded_async(database)
    async with engine.connect():
        pass
    await TableSequence(WARM, mode="separate").next_value_async(engine)
    return engine


@pytest.mark.parametrize("mode", MODES)
def test_an_async_allocation_waits_one_lock_timeout(async_db: AsyncDatabase, mode: str) -> None:
    name = f"alocked_{mode}"
    create_table_sequence(async_db.sync, name)
    sequence = TableSequence(name, mode=mode, batch_size=10, low_watermark=3)

    async def locked() -> tuple[BaseException, float, LoopTicker]:
        engine = await _warmed(async_db)
        try:
            async with LoopTicker() as ticker:
                started = time.monotonic()
                with pytest.raises(SeqKeysError) as raised:
                    await sequence.next_value_async(engine)
                elapsed = time.monotonic() - started
            return raised.value, elapsed, ticker
        finally:
            await engine.dispose()

    with _row_locked(async_db.sync, name):
        exc, elapsed, ticker = asyncio.run(locked())
    _check_one_timeout(exc, elapsed, name, async_db.backend)
    assert ticker.max_late < BLOCKED_S, ticker

    async def after() -> list[int]:
        engine = _bounded_async(async_db)
        try:
            return await sequence.next_values_async(engine, 3)
        finally:
            await engine.dispose()

    assert asyncio.run(after()) == [1, 2, 3]


def test_async_in_transaction_waits_one_lock_timeout(async_db: AsyncDatabase) -> None:
    name = "alocked_in_tx"
    create_table_sequence(async_db.sync, name)
    sequence = TableSequence(name, mode="in_transaction")

    async def locked() -> tuple[BaseException, float]:
        engine = await _warmed(async_db)
        try:
            async with engine.connect() as conn:
                trans = await conn.begin()
                started = time.monotonic()
                with pytest.raises(SeqKeysError) as raised:
                    await sequence.next_value_async(conn)
                elapsed = time.monotonic() - started
                await trans.rollback()
            return raised.value, elapsed
        finally:
            await engine.dispose()

    with _row_locked(async_db.sync, name):
        exc, elapsed = asyncio.run(locked())
    _check_one_timeout(exc, elapsed, name, async_db.backend)


# -- many callers, one locked row: each waits about one timeout, not one per caller before it --

CALLERS = 4


@pytest.mark.parametrize("mode", MODES)
def test_callers_waiting_together_each_wait_one_lock_timeout(bounded: Engine, mode: str) -> None:
    """Threads waiting for the same block share its fetch's error instead of fetching again."""
    name = f"crowd_{mode}"
    create_table_sequence(bounded, name)
    sequence = TableSequence(name, mode=mode, batch_size=10, low_watermark=3)
    start = threading.Barrier(CALLERS)
    outcomes: list[tuple[BaseException, float]] = []

    def call() -> None:
        start.wait()
        outcomes.append(_timed(lambda: sequence.next_value(bounded)))

    with _row_locked(bounded, name):
        threads = [threading.Thread(target=call) for _ in range(CALLERS)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)
    assert len(outcomes) == CALLERS
    backend = bounded.url.get_backend_name()
    # PostgreSQL's lock_timeout bounds each lock a statement waits for: of several
    # statements waiting for one row, one first queues for the row's tuple lock
    # behind another, then waits for the holder: up to twice the timeout (plain
    # UPDATEs do the same). Only separate has several statements waiting at once.
    within = 3 if backend == "postgresql" and mode == "separate" else 2
    for exc, elapsed in outcomes:
        _check_one_timeout(exc, elapsed, name, backend, within)
    assert sequence.next_values(bounded, 3) == [1, 2, 3]


# separate: round trips queued in the lane; async_batch: callers waiting for one fetch task
@pytest.mark.parametrize("mode", ["separate", "async_batch"])
def test_async_callers_waiting_together_each_wait_one_lock_timeout(
    async_db: AsyncDatabase, mode: str
) -> None:
    """The lane runs one round trip per row at a time: those queued behind a timeout share it."""
    name = f"acrowd_{mode}"
    create_table_sequence(async_db.sync, name)
    sequence = TableSequence(name, mode=mode, batch_size=10, low_watermark=3)

    async def one(engine: AsyncEngine) -> tuple[BaseException, float]:
        started = time.monotonic()
        with pytest.raises(SeqKeysError) as raised:
            await sequence.next_value_async(engine)
        return raised.value, time.monotonic() - started

    async def locked() -> list[tuple[BaseException, float]]:
        engine = await _warmed(async_db)
        try:
            return await asyncio.gather(*(one(engine) for _ in range(CALLERS)))
        finally:
            await engine.dispose()

    with _row_locked(async_db.sync, name):
        outcomes = asyncio.run(locked())
    for exc, elapsed in outcomes:
        _check_one_timeout(exc, elapsed, name, async_db.backend)


# -- item 2: a resync that waits for the row -------------------------------------------------


@pytest.mark.parametrize("bind", ["engine", "connection"])
def test_a_resync_waits_one_lock_timeout(bounded: Engine, bind: str) -> None:
    name = "locked_resync"
    create_table_sequence(bounded, name)
    _, rows = _rows_table()
    with bounded.begin() as conn:
        conn.execute(rows.insert(), [{"id": 500}])
    with _row_locked(bounded, name), bounded.connect() as conn:
        if bind == "engine":
            exc, elapsed = _timed(lambda: resync_table_sequence(bounded, name, ROWS, "id"))
        else:
            trans = conn.begin()
            exc, elapsed = _timed(lambda: resync_table_sequence(conn, name, ROWS, "id"))
            trans.rollback()
    _check_one_timeout(exc, elapsed, name, bounded.url.get_backend_name())
    assert resync_table_sequence(bounded, name, ROWS, "id") == 501, "it works once the row is free"


@pytest.mark.parametrize("call", ["drop", "create"])
def test_a_drop_or_create_waits_one_lock_timeout(bounded: Engine, call: str) -> None:
    """They raised the driver's LockNotAvailable / error 1205."""
    name = "locked_ddl"
    create_table_sequence(bounded, name)
    if call == "drop":
        with _row_locked(bounded, name):
            exc, elapsed = _timed(lambda: drop_table_sequence(bounded, name))
    else:
        # another transaction inserted the same name and has not committed: the
        # INSERT waits to learn whether that row stays
        drop_table_sequence(bounded, name)
        with bounded.connect() as other:
            other.begin()
            create_table_sequence(other, name)
            exc, elapsed = _timed(lambda: create_table_sequence(bounded, name, checkfirst=True))
            other.rollback()
    _check_one_timeout(exc, elapsed, name, bounded.url.get_backend_name())
    assert "nothing was changed" in str(exc)
    # once free, it works
    assert create_table_sequence(bounded, name, checkfirst=True) is (call == "create")
    assert drop_table_sequence(bounded, name) is True


def test_an_async_resync_waits_one_lock_timeout(async_db: AsyncDatabase) -> None:
    name = "alocked_resync"
    create_table_sequence(async_db.sync, name)
    _, rows = _rows_table()
    with async_db.sync.begin() as conn:  # else PostgreSQL's WHERE is false without a lock
        conn.execute(rows.insert(), [{"id": 500}])

    async def locked() -> tuple[BaseException, float]:
        engine = await _warmed(async_db)
        try:
            started = time.monotonic()
            with pytest.raises(SeqKeysError) as raised:
                await resync_table_sequence_async(engine, name, ROWS, "id")
            return raised.value, time.monotonic() - started
        finally:
            await engine.dispose()

    with _row_locked(async_db.sync, name):
        exc, elapsed = asyncio.run(locked())
    _check_one_timeout(exc, elapsed, name, async_db.backend)


# -- a pooled native sequence held by a resync's ALTER SEQUENCE (PostgreSQL) ----------------


def test_a_pooled_block_waits_one_lock_timeout(pg_engine: Engine) -> None:
    """nextval waits for the lock of an ALTER SEQUENCE until its transaction ends: one timeout.

    (MariaDB commits its ALTER SEQUENCE at once: nothing stays held there.)
    """
    name = "lockwait_pooled"
    sequence = PooledSequence(name, batch_size=50)
    with _server(pg_engine):
        sequence.drop(pg_engine, checkfirst=True)
        sequence.create(pg_engine)
        engine = sa.create_engine(pg_engine.url)
        _bound_lock_waits(engine)
        _, rows = _rows_table()
        try:
            with engine.connect():  # connected before the timed call
                pass
            with pg_engine.begin() as conn:
                conn.execute(rows.insert(), [{"id": 500}])
            with pg_engine.connect() as holder, holder.begin():
                assert resync_pooled_sequence(holder, name, ROWS, "id") == 501
                exc, elapsed = _timed(lambda: sequence.next_value(engine))
            _check_one_timeout(exc, elapsed, name, "postgresql")
            assert sequence.next_value(engine) == 501, "nothing was taken while it waited"
        finally:
            engine.dispose()
            sequence.drop(pg_engine, checkfirst=True)


# -- item 3: a resync beside an in_transaction insert ----------------------------------------

_LOCK_WAITS = {
    "postgresql": "SELECT count(*) FROM pg_stat_activity "
    "WHERE datname = current_database() AND wait_event_type = 'Lock'",
    # INNODB_TRX sometimes leaves out a waiting transaction (MariaDB 10.11): the
    # resync's UPDATE running for 200 ms while the row is held is waiting for it
    "mysql": "SELECT count(*) FROM information_schema.PROCESSLIST "
    "WHERE DB = DATABASE() AND INFO LIKE 'UPDATE sequences%' AND TIME_MS > 200",
}


def _wait_for_a_lock_wait(engine: Engine) -> None:
    """Return once a session on this database waits for a row lock (at most 10 s)."""
    waiting = sa.text(_LOCK_WAITS[engine.url.get_backend_name()])
    deadline = time.monotonic() + 10
    with engine.connect() as conn:
        while not conn.scalar(waiting):
            assert time.monotonic() < deadline, "the resync never reached the row lock"
            time.sleep(0.01)
            conn.rollback()


def _in_thread(call: Callable[[], object]) -> tuple[threading.Thread, list[object]]:
    outcome: list[object] = []

    def run() -> None:
        try:
            outcome.append(call())
        except Exception as exc:  # the test looks at it
            outcome.append(exc)

    thread = threading.Thread(target=run)
    thread.start()
    return thread, outcome


def _resync_beside_an_insert(engine: Engine, resync: Callable[[], object]) -> object:
    """Take an in_transaction value, let ``resync`` wait for its row, insert it, commit."""
    name = "beside_insert"
    sequence = TableSequence(name, mode="in_transaction")
    create_table_sequence(engine, name)
    _, rows = _rows_table()
    with engine.begin() as conn:
        conn.execute(rows.insert(), [{"id": 100}])  # imported: the sequence is behind
    with engine.connect() as app:
        trans = app.begin()
        value = sequence.next_value(app)
        thread, outcome = _in_thread(resync)
        try:
            _wait_for_a_lock_wait(engine)
            app.execute(rows.insert(), [{"id": value}])
            trans.commit()
        finally:
            thread.join(30)
    assert value == 1
    assert not thread.is_alive()
    return outcome[0]


def test_a_resync_beside_an_in_transaction_insert_is_retried(plain: Engine) -> None:
    """MariaDB deadlocks the two (PostgreSQL does not): a resync of its own runs again."""
    outcome = _resync_beside_an_insert(
        plain, lambda: resync_table_sequence(plain, "beside_insert", ROWS, "id")
    )
    assert outcome == 101, repr(outcome)
    sequence = TableSequence("beside_insert", mode="separate")
    assert sequence.next_value(plain) == 101


def test_a_resync_in_the_callers_transaction_beside_an_insert_says_so(
    mysql_engine: Engine,
) -> None:
    """Joined to a transaction the deadlock rolled back, a resync cannot run again alone."""
    with _server(mysql_engine) as engine:

        def resync() -> int:
            with engine.connect() as conn, conn.begin():
                return resync_table_sequence(conn, "beside_insert", ROWS, "id")

        outcome = _resync_beside_an_insert(engine, resync)
        assert isinstance(outcome, SequenceAllocationError), repr(outcome)
        assert "deadlock" in str(outcome).lower(), str(outcome)
        assert "transaction" in str(outcome), str(outcome)
        assert isinstance(outcome.__cause__, sa.exc.DBAPIError)
        assert resync_table_sequence(engine, "beside_insert", ROWS, "id") == 101


def test_an_async_resync_beside_an_in_transaction_insert_is_retried(
    async_db: AsyncDatabase,
) -> None:
    name = "beside_insert"
    sequence = TableSequence(name, mode="in_transaction")
    create_table_sequence(async_db.sync, name)
    _, rows = _rows_table()
    with async_db.sync.begin() as conn:
        conn.execute(rows.insert(), [{"id": 100}])
    waiting = sa.text(_LOCK_WAITS[async_db.backend])

    async def main() -> tuple[int, object]:
        engine = async_db.engine()
        try:
            async with engine.connect() as app:
                trans = await app.begin()
                value = await sequence.next_value_async(app)
                resync = asyncio.ensure_future(
                    resync_table_sequence_async(engine, name, ROWS, "id")
                )
                async with engine.connect() as probe:
                    deadline = time.monotonic() + 10
                    while not await probe.scalar(waiting):
                        assert time.monotonic() < deadline, "the resync never reached the row"
                        await asyncio.sleep(0.01)
                        await probe.rollback()
                await app.execute(rows.insert(), [{"id": value}])
                await trans.commit()
            try:
                outcome: object = await asyncio.wait_for(resync, 30)
            except Exception as exc:  # the test looks at it
                outcome = exc
            return value, outcome
        finally:
            await engine.dispose()

    value, outcome = asyncio.run(main())
    assert value == 1
    assert outcome == 101, repr(outcome)
