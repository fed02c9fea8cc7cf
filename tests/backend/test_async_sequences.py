"""Table sequences under asyncio: every mode on every async driver, the awaitable API,
and the guarantees of the sync path (moved-backwards refusal, refill_timeout, exact
names, retries) on the async path.

Each test runs its own event loop (``asyncio.run``) and creates and disposes its
AsyncEngine inside it; setup and checks go through the sync engine on the same
database (``AsyncDatabase.sync``).
"""

from __future__ import annotations

import asyncio
import gc
import random
import time
from collections.abc import Awaitable, Callable, Iterator
from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

from sqlalchemy_seqkeys import (
    InvalidSequenceError,
    SeqKeysError,
    SequenceAllocationError,
    SequenceExistsError,
    SequenceMovedBackwardsError,
    SequenceNotFoundError,
    TableSequence,
    create_table_sequence,
    sequences_table,
)
from sqlalchemy_seqkeys.sequences import (
    create_table_sequence_async,
    drop_table_sequence_async,
    resync_table_sequence_async,
)
from sqlalchemy_seqkeys.sequences.table import read_next_value
from tests._async_run import run
from tests._helpers import fresh_table, fresh_tables, tenant_schemas
from tests._loopticker import BLOCKED_S, LoopTicker
from tests._sequences import MODES, sequences_db, sequences_server_db  # noqa: F401 - db, server_db fixtures
from tests.conftest import AsyncDatabase

pytestmark = pytest.mark.backend


@pytest.fixture
def pg_db(async_pg_database: AsyncDatabase) -> Iterator[AsyncDatabase]:
    with fresh_table(async_pg_database.sync, sequences_table):
        yield async_pg_database


def _set_row(engine: sa.Engine, name: str, next_value: int) -> None:
    table = sequences_table(sa.MetaData())
    with engine.begin() as conn:
        conn.execute(sa.update(table).where(table.c.name == name).values(next_value=next_value))


def _next_value(engine: sa.Engine, name: str, table: str = "sequences") -> int:
    with engine.connect() as conn:
        value = read_next_value(conn, name, table=table)
    assert value is not None
    return value


# -- every mode, every driver, concurrent tasks ---------------------------------------


def _models(sequence: TableSequence) -> tuple[type[Any], type[Any], sa.MetaData]:
    class Base(DeclarativeBase):
        pass

    class Row(Base):
        __tablename__ = "seqkeys_async_rows"
        id: Mapped[int] = mapped_column(
            sa.BigInteger, primary_key=True, default=sequence, autoincrement=False
        )
        task: Mapped[int]
        tx: Mapped[int]

    class Commit(Base):
        """One row per committed transaction, written last before its commit.

        Its autoincrement id is drawn outside any transaction's control: a
        transaction that took its keys later than another but wrote this row
        first gets the lower id. With ``in_transaction`` the sequence row stays
        locked from a transaction's first key to its commit, so the next
        transaction can take keys (and then draw its id) only after that
        commit: ordered by this id, the committed keys must run 1, 2, 3, ...
        """

        __tablename__ = "seqkeys_async_commits"
        id: Mapped[int] = mapped_column(sa.Integer, primary_key=True)
        task: Mapped[int]
        tx: Mapped[int]

    return Row, Commit, Base.metadata


@pytest.mark.parametrize("mode", MODES)
def test_every_mode_under_concurrent_async_sessions(db: AsyncDatabase, mode: str) -> None:
    """50 tasks (8 on SQLite) on a pool of 5: unique keys; in_transaction gapless, commit order."""
    name = f"every_{mode}"
    create_table_sequence(db.sync, name)
    sequence = TableSequence(name, mode=mode, batch_size=20, low_watermark=10)
    row_cls, commit_cls, metadata = _models(sequence)
    tasks = 8 if db.backend == "sqlite" else 50
    per_task, rows_per_tx = 3, 2

    async def body(engine: AsyncEngine) -> None:
        async def work(task: int) -> None:
            for tx in range(per_task):
                async with AsyncSession(engine) as session:
                    session.add_all(row_cls(task=task, tx=tx) for _ in range(rows_per_tx))
                    await session.flush()
                    await asyncio.sleep(0.005)  # the request's work, in its transaction
                    if (task + tx) % 5 == 4:  # some requests fail: their keys go back or gap
                        await session.rollback()
                        continue
                    session.add(commit_cls(task=task, tx=tx))
                    await session.commit()

        await asyncio.gather(*(work(task) for task in range(tasks)))

    with fresh_tables(db.sync, metadata):
        run(db, body, pool_size=5, max_overflow=0, pool_timeout=60)
        with db.sync.connect() as conn:
            rows = conn.execute(sa.select(row_cls.id, row_cls.task, row_cls.tx)).all()
            commits = conn.execute(
                sa.select(commit_cls.task, commit_cls.tx).order_by(commit_cls.id)
            ).all()
    ids = [row.id for row in rows]
    committed = sum((task + tx) % 5 != 4 for task in range(tasks) for tx in range(per_task))
    assert len(ids) == len(set(ids)) == committed * rows_per_tx
    assert len(commits) == committed
    if mode == "in_transaction":
        by_tx: dict[tuple[int, int], list[int]] = {}
        for row in rows:
            by_tx.setdefault((row.task, row.tx), []).append(row.id)
        in_commit_order = [key for commit in commits for key in sorted(by_tx[tuple(commit)])]
        assert in_commit_order == list(range(1, len(ids) + 1)), "gapless, in commit order"


@pytest.mark.parametrize("mode", ["separate", "batch", "async_batch"])
def test_the_event_loop_is_never_blocked(db: AsyncDatabase, mode: str) -> None:
    """A ticker waking every 5 ms is never 100 ms late while 50 tasks insert, refills under way.

    A gross bound: a blocking call (time.sleep in a retry, a thread join, sync
    I/O waiting on a locked row) fails it, scheduling noise does not. The
    tasks' pauses are spread, so the ticker does not queue behind 50 tasks
    woken at once.
    """
    name = f"ticker_{mode}"
    create_table_sequence(db.sync, name)
    sequence = TableSequence(name, mode=mode, batch_size=10, low_watermark=5)
    row_cls, _, metadata = _models(sequence)
    tasks = 10 if db.backend == "sqlite" else 50

    async def body(engine: AsyncEngine) -> LoopTicker:
        async def work(task: int) -> None:
            pause = random.Random(task)
            for tx in range(4):
                await asyncio.sleep(pause.uniform(0, 0.02))
                async with AsyncSession(engine) as session:
                    await session.execute(sa.insert(row_cls), [{"task": task, "tx": tx}] * 2)
                    await session.commit()

        async with LoopTicker() as ticker:
            await asyncio.gather(*(work(task) for task in range(tasks)))
        return ticker  # run() disposes of the engine, a refill perhaps still under way

    with fresh_tables(db.sync, metadata):
        ticker = run(db, body, pool_size=5, max_overflow=0, pool_timeout=60)
        assert _next_value(db.sync, name) > 40, "refills were under way"
        with db.sync.connect() as conn:
            ids = conn.scalars(sa.select(row_cls.id)).all()
    assert len(ids) == len(set(ids)) == tasks * 4 * 2
    assert ticker.ticks > 10
    assert ticker.max_late < BLOCKED_S, f"the event loop was blocked: {ticker}"


@pytest.mark.parametrize("mode", MODES)
def test_every_mode_on_in_memory_aiosqlite(mode: str) -> None:
    """sqlite+aiosqlite:// is one shared connection (StaticPool): no lane, values from it."""
    sequence = TableSequence("mem", mode=mode, batch_size=3, low_watermark=1)
    row_cls, _, metadata = _models(sequence)
    sequences_table(metadata)

    async def main() -> list[int]:
        from sqlalchemy.ext.asyncio import create_async_engine

        engine = create_async_engine("sqlite+aiosqlite://")
        try:
            async with engine.begin() as conn:
                await conn.run_sync(metadata.create_all)
            await sequence.create_async(engine)
            for flush in range(4):
                async with AsyncSession(engine) as session:
                    session.add_all(row_cls(task=flush, tx=i) for i in range(3))
                    await session.commit()
            async with engine.connect() as conn:
                return list((await conn.scalars(sa.select(row_cls.id).order_by(row_cls.id))).all())
        finally:
            await engine.dispose()

    ids = asyncio.run(main())
    assert len(ids) == len(set(ids)) == 12


# -- the awaitable API ------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
def test_awaitable_create_next_and_drop(db: AsyncDatabase, mode: str) -> None:
    sequence = TableSequence(f"api_{mode}", mode=mode, batch_size=4, low_watermark=1, start=10)

    async def body(engine: AsyncEngine) -> None:
        assert await sequence.create_async(engine) is True
        assert await sequence.create_async(engine, checkfirst=True) is False
        with pytest.raises(SequenceExistsError):
            await sequence.create_async(engine)
        assert await sequence.next_value_async(engine) == 10
        assert await sequence.next_values_async(engine, 3) == [11, 12, 13]
        assert await sequence.next_values_async(engine, 0) == []
        async with engine.connect() as conn:
            taken = await sequence.next_value_async(conn)
            await conn.rollback()
            again = await sequence.next_value_async(conn)
            await conn.commit()
        if mode == "in_transaction":  # joins the connection's transaction: rolled back, given back
            assert taken == again == 14
        else:  # a transaction of its own (or a block in memory): a rollback leaves a gap
            assert again > taken >= 14
        assert await sequence.drop_async(engine) is True
        assert await sequence.drop_async(engine, checkfirst=True) is False
        with pytest.raises(SequenceNotFoundError):
            await sequence.drop_async(engine)

    run(db, body)


def test_awaitable_functions_commit_on_an_engine_and_join_a_connection(db: AsyncDatabase) -> None:
    data = sa.Table(
        "seqkeys_async_import",
        sa.MetaData(),
        sa.Column("id", sa.BigInteger, primary_key=True, autoincrement=False),
    )
    data.create(db.sync)

    async def body(engine: AsyncEngine) -> None:
        async with engine.connect() as conn:  # joins: rolled back with the transaction
            assert await create_table_sequence_async(conn, "fn_seq", start=5) is True
            await conn.rollback()
        assert await create_table_sequence_async(engine, "fn_seq", start=5) is True
        async with engine.begin() as conn:
            await conn.execute(data.insert(), [{"id": 41}, {"id": 7}])
        assert await resync_table_sequence_async(engine, "fn_seq", data, "id") == 42
        async with engine.connect() as conn:
            assert await drop_table_sequence_async(conn, "fn_seq") is True
            await conn.rollback()
        assert await TableSequence("fn_seq", mode="separate").next_value_async(engine) == 42
        assert await drop_table_sequence_async(engine, "fn_seq") is True
        assert await drop_table_sequence_async(engine, "fn_seq", checkfirst=True) is False

    try:
        run(db, body)
    finally:
        data.drop(db.sync)


def test_the_sync_and_awaitable_forms_refuse_each_others_binds() -> None:
    from sqlalchemy.ext.asyncio import create_async_engine

    sequence = TableSequence("s", mode="separate")
    sync_engine = sa.create_engine("sqlite://")
    async_engine = create_async_engine("sqlite+aiosqlite://")
    for call in (
        lambda: sequence.next_value(async_engine),  # type: ignore[arg-type]
        lambda: sequence.next_values(async_engine, 2),  # type: ignore[arg-type]
        lambda: sequence.create(async_engine),  # type: ignore[arg-type]
        lambda: create_table_sequence(async_engine, "s"),  # type: ignore[arg-type]
    ):
        with pytest.raises(InvalidSequenceError, match="_async"):
            call()

    async def awaitable_forms() -> None:
        calls: list[Callable[[], Awaitable[object]]] = [
            lambda: sequence.next_value_async(sync_engine),  # type: ignore[arg-type]
            lambda: sequence.create_async(sync_engine),  # type: ignore[arg-type]
            lambda: create_table_sequence_async(sync_engine, "s"),  # type: ignore[arg-type]
        ]
        for call in calls:
            with pytest.raises(InvalidSequenceError, match="sync Engine"):
                await call()
        with pytest.raises(InvalidSequenceError, match="from 0 to"):
            await sequence.next_values_async(async_engine, -1)
        # the sync form from a coroutine, outside the greenlet: named, not MissingGreenlet
        with pytest.raises(InvalidSequenceError, match="next_value_async"):
            sequence.next_value(async_engine.sync_engine)
        await async_engine.dispose()

    asyncio.run(awaitable_forms())


def test_run_sync_and_the_sync_side_of_an_async_engine(db: AsyncDatabase) -> None:
    """Sync code run through run_sync (an app's shared helpers) takes values as well."""
    create_table_sequence(db.sync, "via_run_sync")
    sequence = TableSequence("via_run_sync", mode="batch", batch_size=3)

    async def body(engine: AsyncEngine) -> list[int]:
        async with engine.connect() as conn:
            first = await conn.run_sync(sequence.next_values, 4)
        async with engine.connect() as conn:
            second = await conn.run_sync(lambda sync_conn: sequence.next_value(sync_conn))
        return [*first, second]

    assert run(db, body) == [1, 2, 3, 4, 5]


# -- the sync path's guarantees, on the async path -------------------------------------


@pytest.mark.parametrize("mode", ["separate", "batch", "async_batch"])
def test_a_row_moved_back_is_refused_under_asyncio(db: AsyncDatabase, mode: str) -> None:
    name = f"restored_{mode}"
    create_table_sequence(db.sync, name)
    sequence = TableSequence(name, mode=mode, batch_size=5, low_watermark=1)

    async def body(engine: AsyncEngine) -> tuple[list[int], BaseException | None, list[int]]:
        handed = await sequence.next_values_async(engine, 6)  # batch modes hold 7..10 too
        _set_row(db.sync, name, 1)  # restored from a backup taken at the start
        error: BaseException | None = None
        for _ in range(40):
            try:
                handed.append(await sequence.next_value_async(engine))
            except SeqKeysError as exc:
                error = exc
                break
        with pytest.raises(SequenceMovedBackwardsError):  # refused again, never handed out
            await sequence.next_values_async(engine, 5)
        _set_row(db.sync, name, 1000)
        return handed, error, await sequence.next_values_async(engine, 12)

    handed, error, later = run(db, body)
    assert len(handed) == len(set(handed)), f"values handed out twice: {sorted(handed)}"
    assert isinstance(error, SequenceMovedBackwardsError), error
    assert "resync_table_sequence" in str(error)
    assert min(later) >= 1000
    assert not set(later) & set(handed)


def test_a_sync_and_an_async_engine_share_what_was_received(db: AsyncDatabase) -> None:
    """The moved-backwards check spans drivers: one database, whatever the URL's driver."""
    create_table_sequence(db.sync, "shared_floor")
    sequence = TableSequence("shared_floor", mode="separate")
    assert sequence.next_values(db.sync, 5) == [1, 2, 3, 4, 5]
    _set_row(db.sync, "shared_floor", 1)

    async def body(engine: AsyncEngine) -> None:
        with pytest.raises(SequenceMovedBackwardsError):
            await sequence.next_value_async(engine)

    run(db, body)


@pytest.mark.parametrize("mode", ["batch", "async_batch"])
def test_a_waiter_on_a_hung_refill_times_out_under_asyncio(pg_db: AsyncDatabase, mode: str) -> None:
    """A fetch stuck on a locked row: waiters give up after refill_timeout, the loop runs on."""
    name = f"hung_{mode}"
    create_table_sequence(pg_db.sync, name)
    sequence = TableSequence(name, mode=mode, batch_size=10, low_watermark=3, refill_timeout=0.5)
    table = sequences_table(sa.MetaData())

    async def body(engine: AsyncEngine) -> list[int]:
        locker = await engine.connect()
        await locker.begin()
        await locker.execute(sa.select(table).where(table.c.name == name).with_for_update())
        try:
            async with LoopTicker() as ticker:
                waiters = [sequence.next_value_async(engine) for _ in range(3)]
                outcomes = await asyncio.gather(*waiters, return_exceptions=True)
            assert all(isinstance(o, SequenceAllocationError) for o in outcomes), outcomes
            assert "refill_timeout" in str(outcomes[0])
            assert ticker.ticks > 20, ticker  # the loop ran while they waited
        finally:
            await locker.rollback()
            await locker.close()
        return await sequence.next_values_async(engine, 25)

    values = run(pg_db, body)
    assert sorted(values) == list(range(1, 26)), "the late block is used, none twice"


def test_an_old_case_insensitive_table_is_refused_under_asyncio(
    async_mysql_database: AsyncDatabase,
) -> None:
    sync = async_mysql_database.sync
    with sync.begin() as conn:
        conn.execute(sa.text("DROP TABLE IF EXISTS seqkeys_old_sequences"))
        conn.execute(
            sa.text(
                "CREATE TABLE seqkeys_old_sequences (name VARCHAR(64) NOT NULL, "
                "next_value BIGINT NOT NULL, PRIMARY KEY (name)) "
                "CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci"
            )
        )
        conn.execute(sa.text("INSERT INTO seqkeys_old_sequences VALUES ('old_id', 1)"))

    async def body(engine: AsyncEngine) -> None:
        for mode in ("separate", "async_batch", "in_transaction"):
            sequence = TableSequence("old_id", mode=mode, table="seqkeys_old_sequences")
            for _ in range(2):  # every time, not only the first
                with pytest.raises(SeqKeysError, match=r"op\.make_sequence_names_case_sensitive"):
                    await sequence.next_value_async(engine)

    try:
        run(async_mysql_database, body)
        assert _next_value(sync, "old_id", table="seqkeys_old_sequences") == 1
    finally:
        with sync.begin() as conn:
            conn.execute(sa.text("DROP TABLE IF EXISTS seqkeys_old_sequences"))


def _kill(sync: sa.Engine, driver_connection: Any) -> None:
    """End a server session from outside, as a failover or an idle timeout does."""
    with sync.connect() as conn:
        if sync.dialect.name == "postgresql":
            pid = getattr(driver_connection, "get_server_pid", None)
            pid = pid() if pid else driver_connection.info.backend_pid
            conn.execute(sa.text("SELECT pg_terminate_backend(:pid)"), {"pid": pid})
        else:
            conn.execute(sa.text(f"KILL CONNECTION {int(driver_connection.thread_id())}"))


# asyncmy and aiomysql warn when the connection the server killed is garbage-collected
@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
@pytest.mark.filterwarnings("ignore::ResourceWarning")
@pytest.mark.parametrize("mode", ["separate", "batch", "async_batch"])
def test_a_connection_killed_during_an_allocation_is_retried(
    server_db: AsyncDatabase, mode: str
) -> None:
    name = f"killed_{mode}"
    create_table_sequence(server_db.sync, name)
    sequence = TableSequence(name, mode=mode, batch_size=20, low_watermark=5)
    kills: list[str] = []
    kill_seconds: list[float] = []

    def kill_first_allocation(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        if conn.dialect.is_async and statement.startswith("UPDATE sequences") and not kills:
            kills.append(statement)
            started = time.perf_counter()
            # the test's own KILL runs on a sync connection, on the loop's thread
            _kill(server_db.sync, conn.connection.driver_connection)
            kill_seconds.append(time.perf_counter() - started)

    async def body(engine: AsyncEngine) -> list[int]:
        async with LoopTicker() as ticker:
            values = await sequence.next_values_async(engine, 60)
        # the loop may stand still while the test kills the connection, never longer
        assert ticker.max_late < BLOCKED_S + sum(kill_seconds), (ticker, kill_seconds)
        return values

    sa.event.listen(sa.engine.Engine, "before_cursor_execute", kill_first_allocation)
    try:
        values = run(server_db, body)
    finally:
        sa.event.remove(sa.engine.Engine, "before_cursor_execute", kill_first_allocation)
        gc.collect()  # any warning about the killed connection lands in this test
    assert kills, "the fault was injected"
    assert len(set(values)) == 60
    more = TableSequence(name, mode="separate").next_values(server_db.sync, 10)
    assert not set(more) & set(values)


def test_tenants_stay_apart_under_asyncio(pg_db: AsyncDatabase) -> None:
    schemas = ("seqkeys_async_tenant_a", "seqkeys_async_tenant_b")
    with tenant_schemas(pg_db.sync, *schemas) as tenants:
        for start, tenant in zip((100, 5000), tenants, strict=True):
            metadata = sa.MetaData()
            sequences_table(metadata)
            metadata.create_all(tenant)
            create_table_sequence(tenant, "orders", start=start)

        async def body(engine: AsyncEngine) -> dict[str, list[int]]:
            taken: dict[str, list[int]] = {}
            for mode in ("separate", "batch", "async_batch"):
                sequence = TableSequence("orders", mode=mode, batch_size=10, low_watermark=3)
                for schema in schemas:
                    tenant = engine.execution_options(schema_translate_map={None: schema})
                    taken.setdefault(schema, []).extend(
                        await sequence.next_values_async(tenant, 12)
                    )
            return taken

        taken = run(pg_db, body)
    a, b = taken[schemas[0]], taken[schemas[1]]
    assert all(100 <= v < 5000 for v in a), a
    assert all(v >= 5000 for v in b), b
    assert len(set(a)) == len(a)
    assert len(set(b)) == len(b)


def test_a_flush_holding_one_row_never_waits_behind_an_allocation_of_that_row(
    pg_db: AsyncDatabase,
) -> None:
    """No lock cycle through the lane.

    A flush takes an ``in_transaction`` value (row A stays locked to its
    commit) and then needs a ``separate`` value (row B). Meanwhile another
    request allocates from row A in a transaction of its own, which waits for
    the flush's lock. Were the lane one queue for every row, B's round trip
    would wait behind A's, which waits for the flush: a hang.
    """
    create_table_sequence(pg_db.sync, "row_a")
    create_table_sequence(pg_db.sync, "row_b")
    row_a = TableSequence("row_a", mode="in_transaction")
    row_b = TableSequence("row_b", mode="separate")

    async def body(engine: AsyncEngine) -> tuple[int, int, int]:
        async with engine.connect() as flush:
            a = await row_a.next_value_async(flush)  # row A locked until commit
            outside = asyncio.ensure_future(row_a.next_value_async(engine))  # waits for A
            await asyncio.sleep(0.1)  # its round trip is at the server, waiting
            b = await asyncio.wait_for(row_b.next_value_async(flush), timeout=10)
            await flush.commit()
        return a, b, await asyncio.wait_for(outside, timeout=10)

    assert run(pg_db, body) == (1, 1, 2)


def test_a_sequence_never_waits_for_another_on_a_small_pool(server_db: AsyncDatabase) -> None:
    """pool_size=1: sequence A's refill waits on A's locked row on the allocation lane, and a
    request on sequence B still gets its key (the lane's pool copied the app's limit of 1)."""
    first = TableSequence("small_a", mode="async_batch", batch_size=10, low_watermark=5)
    other = TableSequence("small_b", mode="separate")
    metadata = sa.MetaData()
    rows_a = sa.Table(
        "seqkeys_small_a", metadata, sa.Column("id", sa.BigInteger, primary_key=True, default=first)
    )
    rows_b = sa.Table(
        "seqkeys_small_b", metadata, sa.Column("id", sa.BigInteger, primary_key=True, default=other)
    )
    sequences = sequences_table(sa.MetaData())

    async def body(engine: AsyncEngine) -> None:
        await first.create_async(engine)
        await other.create_async(engine)
        async with engine.begin() as conn:
            await conn.run_sync(metadata.create_all)
        try:
            async with AsyncSession(engine) as session:
                await session.execute(rows_a.insert(), [{}])  # A's first block: 1 to 10
                await session.commit()
            with server_db.sync.connect() as locker, locker.begin():
                locker.execute(
                    sa.select(sequences).where(sequences.c.name == "small_a").with_for_update()
                )
                async with AsyncSession(engine) as session:  # to the watermark: a refill
                    await session.execute(rows_a.insert(), [{} for _ in range(5)])
                    await session.commit()
                async with AsyncSession(engine) as session:  # B's key, while A's refill waits
                    await asyncio.wait_for(session.execute(rows_b.insert(), [{}]), 20)
                    await session.commit()
        finally:
            async with engine.begin() as conn:
                await conn.run_sync(metadata.drop_all)

    run(server_db, body, pool_size=1, max_overflow=0, pool_timeout=2)
