"""AsyncWorkerLease: the worker-id lease on an AsyncEngine, on every async driver.

Claims, renewals and the release never block the event loop (a LoopTicker
task must never wake more than 100 ms late, a gross bound that a blocking
call fails and noise does not); every guarantee of the sync lease holds:
exclusive ids, renewal past the ttl, loss when no renewal happens in time,
the high-water mark kept at release and waited for by the next holder, clock
skew refused, a forward clock jump extending the mark before anything is
minted past it. No coroutine is left unawaited and no task pending (warnings
are errors in this suite, and asyncio's own complaints are checked).

Each test runs its own event loop and creates and disposes its AsyncEngine in
it; setup and checks go through the sync engine on the same database.
"""

from __future__ import annotations

import asyncio
import gc
import logging
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

from sqlalchemy_seqkeys import (
    ClockSkewError,
    InvalidSnowflakeError,
    NoWorkerIdError,
    Snowflake,
    WorkerLease,
    WorkerLeaseDatabaseError,
    WorkerLeaseLostError,
    workers_table,
)
from sqlalchemy_seqkeys.workers import AsyncWorkerLease
from tests._async_run import run
from tests._helpers import fresh_table, fresh_tables
from tests._leases import mint_or_refuse, ms_of, race_for_free_ids, split_at_mark
from tests._loopticker import BLOCKED_S, LoopTicker
from tests.conftest import AsyncDatabase
from tests.faults import _async_lease_procs

pytestmark = pytest.mark.backend

#: a gross bound on how late the ticker may wake: a blocking call fails it, noise passes
LATE = BLOCKED_S


@pytest.fixture
def db(async_database: AsyncDatabase, caplog: pytest.LogCaptureFixture) -> Iterator[AsyncDatabase]:
    """``async_database`` with a fresh lease table; asyncio must log nothing."""
    with fresh_table(async_database.sync, workers_table):
        with caplog.at_level(logging.WARNING, logger="asyncio"):
            yield async_database
            gc.collect()  # a task destroyed pending, a coroutine never awaited: shown now
        records = [*caplog.get_records("setup"), *caplog.get_records("call"), *caplog.records]
        complaints = [r.getMessage() for r in records if r.name == "asyncio"]
        assert not complaints, complaints


def row(database: AsyncDatabase, worker_id: int) -> Any:
    t = workers_table(sa.MetaData())
    with database.sync.connect() as conn:
        return conn.execute(sa.select(t).where(t.c.worker_id == worker_id)).one()


def rows(database: AsyncDatabase) -> list[Any]:
    t = workers_table(sa.MetaData())
    with database.sync.connect() as conn:
        return list(conn.execute(sa.select(t).order_by(t.c.worker_id)))


def shifted(offset_ms: float) -> Callable[[], int]:
    offset = int(offset_ms * 1_000_000)
    return lambda: time.time_ns() + offset


def test_concurrent_claims_get_different_ids_and_release_keeps_the_mark(
    db: AsyncDatabase,
) -> None:
    async def body(engine: AsyncEngine) -> tuple[list[int], list[int], LoopTicker]:
        async with LoopTicker() as ticker:
            leases = [AsyncWorkerLease(engine, ttl=10, max_worker_id=3) for _ in range(5)]
            claimed = await asyncio.gather(
                *(lease.start() for lease in leases), return_exceptions=True
            )
            won = [c for c in claimed if isinstance(c, AsyncWorkerLease)]
            lost = [c for c in claimed if not isinstance(c, AsyncWorkerLease)]
            assert len(won) == 4, claimed  # four ids, five claimants racing for them
            assert len(lost) == 1
            assert isinstance(lost[0], NoWorkerIdError), lost
            assert "all 4 worker ids" in str(lost[0])
            ids = Snowflake()
            ids.bind(won[0])
            minted = [ids() for _ in range(2000)]
            for lease in won:
                await lease.close()
        return sorted(lease.worker_id for lease in won), minted, ticker

    held, minted, ticker = run(db, body)
    assert held == [0, 1, 2, 3]
    assert ticker.max_late < LATE, ticker
    assert len(set(minted)) == len(minted)
    first = Snowflake(worker_id=0)  # decodes with the default layout
    released = {r.worker_id: r for r in rows(db)}
    assert all(r.expires_at == 0 for r in released.values())  # released, not deleted
    worker = first.decode(minted[0]).worker_id
    # lowered to the last millisecond actually minted, which the next holder must pass
    assert released[worker].high_water_ms == ms_of(first, max(minted))


def test_renewal_keeps_the_lease_past_its_ttl(db: AsyncDatabase) -> None:
    async def body(engine: AsyncEngine) -> tuple[int, int, LoopTicker]:
        async with (
            LoopTicker() as ticker,
            AsyncWorkerLease(engine, ttl=1, max_worker_id=0) as lease,
        ):
            ids = Snowflake(worker_id=lease)
            first_mark = await asyncio.to_thread(lambda: row(db, 0).high_water_ms)
            await asyncio.sleep(1.6)  # renewed every third of a second
            assert lease.valid
            assert ids() > 0
            with pytest.raises(NoWorkerIdError):
                await AsyncWorkerLease(engine, ttl=1, max_worker_id=0).start()
            later_mark = await asyncio.to_thread(lambda: row(db, 0).high_water_ms)
        return first_mark, later_mark, ticker

    first_mark, later_mark, ticker = run(db, body)
    assert later_mark > first_mark  # the mark moved on with the renewals
    assert ticker.max_late < LATE, ticker


def test_a_loop_blocked_past_the_ttl_loses_the_lease(db: AsyncDatabase) -> None:
    # The renewal task cannot run while the loop is blocked (a CPU-bound
    # handler): the lease lapses, and its generator stops before the row
    # can pass to another process.
    async def body(engine: AsyncEngine) -> str:
        async with AsyncWorkerLease(engine, ttl=1, max_worker_id=0) as lease:
            ids = Snowflake(worker_id=lease)
            ids()
            time.sleep(1.3)  # the fault under test: a blocked loop
            with pytest.raises(WorkerLeaseLostError, match="not renewed before it expired") as info:
                ids()
        return str(info.value)

    assert "AsyncWorkerLease" in run(db, body)


def test_a_renewal_the_database_does_not_answer_loses_the_lease(db: AsyncDatabase) -> None:
    # Another transaction holds the lease row (or, on SQLite, the database's
    # write lock): the renewals wait, the lease lapses on the holder's clock,
    # and its generator stops; once the database answers, renewal resumes.
    t = workers_table(sa.MetaData())

    async def body(engine: AsyncEngine) -> tuple[str, bool]:
        async with AsyncWorkerLease(engine, ttl=1, max_worker_id=0) as lease:
            ids = Snowflake(worker_id=lease)
            ids()
            blocker = db.sync.connect()
            try:
                if db.backend == "sqlite":
                    blocker.exec_driver_sql("BEGIN IMMEDIATE")
                else:
                    blocker.execute(sa.select(t).where(t.c.worker_id == 0).with_for_update())
                await asyncio.sleep(1.5)
                with pytest.raises(WorkerLeaseLostError, match="not renewed before") as info:
                    ids()
            finally:
                blocker.rollback()
                blocker.close()
            deadline = time.monotonic() + 10
            while not lease.valid and time.monotonic() < deadline:
                await asyncio.sleep(0.05)
            return str(info.value), lease.valid

    message, recovered = run(db, body)
    assert "worker id 0" in message
    assert recovered  # the row was still ours: the held-up renewal went through


def test_rebinding_to_a_new_lease_while_tasks_mint(db: AsyncDatabase) -> None:
    """The FastAPI pattern: declared unbound, bound in the lifespan, rebound to a new lease."""
    ids = Snowflake()

    async def body(engine: AsyncEngine) -> tuple[list[int], int, int]:
        first = await AsyncWorkerLease(engine, ttl=10, max_worker_id=0).start()
        ids.bind(first)
        stop = asyncio.Event()
        refused: list[int] = []

        async def mint() -> list[int]:
            out: list[int] = []
            while not stop.is_set():
                mint_or_refuse(ids, out, refused)
                await asyncio.sleep(0.0005)
            return out

        tasks = [asyncio.create_task(mint()) for _ in range(5)]
        await asyncio.sleep(0.2)
        await first.close()  # minting refuses from here
        released_mark = (await asyncio.to_thread(row, db, 0)).high_water_ms
        await asyncio.sleep(0.05)
        second = await AsyncWorkerLease(engine, ttl=10, max_worker_id=0).start()
        ids.bind(second)
        await asyncio.sleep(0.2)
        stop.set()
        every = [v for out in await asyncio.gather(*tasks) for v in out]
        await second.close()
        assert refused
        return every, released_mark, second.worker_id

    every, first_mark, worker = run(db, body)
    assert worker == 0  # the same worker id, released by the first lease
    assert len(set(every)) == len(every)
    by_first, by_second = split_at_mark(ids, every, first_mark)
    assert by_first
    assert by_second
    assert min(by_second) > max(by_first)


def test_the_next_holder_waits_past_the_mark_then_names_the_skew(db: AsyncDatabase) -> None:
    async def body(engine: AsyncEngine) -> tuple[list[int], int, LoopTicker]:
        async with AsyncWorkerLease(engine, ttl=10, max_worker_id=0, max_skew=10) as first:
            ahead = Snowflake(worker_id=first, clock=shifted(600))
            minted = [ahead() for _ in range(100)]
        with pytest.raises(ClockSkewError, match=r"ids reach \d+ ms past this host's clock"):
            await AsyncWorkerLease(engine, ttl=10, max_worker_id=0, max_wait=0.1).start()
        async with (  # the wait is an asyncio.sleep
            LoopTicker() as ticker,
            AsyncWorkerLease(engine, ttl=10, max_worker_id=0, max_wait=10) as patient,
        ):
            after = Snowflake(worker_id=patient)()
        return minted, after, ticker

    minted, after, ticker = run(db, body)
    assert after > max(minted)
    assert ticker.max_late < LATE, ticker


def test_a_clock_far_from_the_servers_is_refused(db: AsyncDatabase) -> None:
    async def body(engine: AsyncEngine) -> None:
        with pytest.raises(ClockSkewError, match=r"\+3[56]\d\d\.\d+ s from the database server's"):
            await AsyncWorkerLease(engine, ttl=10, clock=shifted(3_600_000)).start()

    run(db, body)
    assert rows(db) == []  # nothing claimed


class Base(DeclarativeBase):
    pass


jump = [0]
#: each run's own generator, bound by the test below: one generator rebound from a run's
#: lease to the next run's (each on a database of its own) would carry its ticks over,
#: 60 s ahead, as it must where both leases hold worker id 0 of one database
generators = [Snowflake()]


class Event(Base):
    __tablename__ = "seqkeys_async_lease_events"
    id: Mapped[int] = mapped_column(
        sa.BigInteger, primary_key=True, default=lambda: generators[0]()
    )


def test_a_clock_jumping_forward_extends_the_mark_first(db: AsyncDatabase) -> None:
    """Past the mark, nothing is minted before the database holds a later one."""
    Base.metadata.drop_all(db.sync)
    Base.metadata.create_all(db.sync)
    jumping = generators[0] = Snowflake()
    clock = lambda: time.time_ns() + jump[0]  # noqa: E731

    async def body(engine: AsyncEngine) -> tuple[list[int], LoopTicker]:
        async with AsyncWorkerLease(
            engine, ttl=2, max_worker_id=0, max_skew=120, clock=clock
        ) as lease:
            jumping.bind(lease)
            out = [jumping()]
            # from a coroutine: no round trip can be awaited there; it says so,
            # starts the extension, and the next call goes through
            jump[0] = 20 * 1_000_000_000
            with pytest.raises(ClockSkewError, match="retry in a moment"):
                jumping()
            for _ in range(500):  # up to 10 s: the extension is one round trip, on a busy host
                await asyncio.sleep(0.02)
                try:
                    out.append(jumping())
                    break
                except ClockSkewError:
                    continue
            # as a column default under AsyncSession: it waits for the extension
            jump[0] = 40 * 1_000_000_000
            async with LoopTicker() as ticker:
                async with AsyncSession(engine, expire_on_commit=False) as session:
                    events = [Event() for _ in range(5)]
                    session.add_all(events)
                    await session.commit()
                    out += [e.id for e in events]
                # from another thread: it waits for the lease's loop to renew
                jump[0] = 60 * 1_000_000_000
                out.append(await asyncio.to_thread(jumping))
        return out, ticker

    try:
        out, ticker = run(db, body)
    finally:
        jump[0] = 0
        Base.metadata.drop_all(db.sync)
    assert len(out) == 8
    assert out == sorted(out)
    assert ms_of(jumping, out[-1]) - ms_of(jumping, out[0]) >= 60_000
    assert ticker.max_late < LATE, ticker
    # the row kept the highest mark the lease reached, past every id minted
    assert row(db, 0).high_water_ms >= ms_of(jumping, max(out))


def test_loop_shutdown_with_the_lease_open_releases_it(db: AsyncDatabase) -> None:
    held: list[AsyncWorkerLease] = []

    async def body(engine: AsyncEngine) -> None:
        lease = await AsyncWorkerLease(engine, ttl=10, max_worker_id=0).start()
        held.append(lease)
        Snowflake(worker_id=lease)()
        # asyncio.run ends here: it cancels the renewal task, which closes the lease

    run(db, body)
    assert not held[0].valid
    assert row(db, 0).expires_at == 0


def test_wrong_engines_and_unclaimed_leases_say_what_to_do(db: AsyncDatabase) -> None:
    with pytest.raises(InvalidSnowflakeError, match=r"use `with WorkerLease\(engine\)"):
        AsyncWorkerLease(db.sync)  # type: ignore[arg-type]

    async def body(engine: AsyncEngine) -> None:
        with pytest.raises(InvalidSnowflakeError, match="AsyncWorkerLease"):
            WorkerLease(engine)  # type: ignore[arg-type]
        lease = AsyncWorkerLease(engine, ttl=10)  # no I/O yet
        with pytest.raises(NoWorkerIdError, match=r"await lease\.start\(\)"):
            Snowflake(worker_id=lease)
        with pytest.raises(NoWorkerIdError, match="has not claimed"):
            lease.check()
        async with lease:
            with pytest.raises(InvalidSnowflakeError, match="started already"):
                await lease.start()
        await lease.close()  # closing twice is harmless

    run(db, body)
    assert [r.expires_at for r in rows(db)] == [0]


@pytest.fixture(params=["postgresql+asyncpg", "mysql+asyncmy"])
def server_db(request: pytest.FixtureRequest, engines: Any) -> Iterator[AsyncDatabase]:
    from tests.conftest import _async_database

    database = _async_database(request.param, engines)
    with fresh_table(database.sync, workers_table):
        yield database


@pytest.mark.slow
def test_processes_racing_for_the_last_free_ids(server_db: AsyncDatabase, tmp_path: Path) -> None:
    # Six processes, each on its own event loop, claim at one moment and hold
    # until all six have tried: exactly the three free ids are won.
    sync_held = [WorkerLease(server_db.sync, ttl=30, max_worker_id=7).start() for _ in range(5)]
    url = server_db.url.render_as_string(hide_password=False)
    try:
        results = race_for_free_ids(_async_lease_procs.command, url, tmp_path, settle_s=1.5)
    finally:
        for lease in sync_held:
            lease.close()
    won = [int(r) for r in results if r != "none"]
    assert len(won) == 3, results
    assert len(set(won)) == 3
    assert not set(won) & {lease.worker_id for lease in sync_held}


# -- database errors on the claim and at close (issue 21, item 7) ---------------------------


def test_a_claim_the_database_refuses_is_a_seqkeys_error(
    async_server_database: AsyncDatabase,
) -> None:
    # (aiosqlite leaves the thread of a connection that failed to open running)
    db = async_server_database
    unknown = AsyncDatabase(db.label, db.url.set(database="nosuchdb_x"), db.sync)

    async def body(engine: AsyncEngine) -> None:
        with pytest.raises(WorkerLeaseDatabaseError, match="could not claim a worker id") as info:
            async with AsyncWorkerLease(engine, ttl=10):
                pass
        assert info.value.__cause__ is not None  # the driver's error, kept

    run(unknown, body)


def _drop_connection(database: AsyncDatabase, backend: int) -> None:
    with database.sync.connect() as admin:
        if database.backend == "postgresql":
            admin.execute(sa.text("SELECT pg_terminate_backend(:p)"), {"p": backend})
        else:
            admin.execute(sa.text(f"KILL {int(backend)}"))
    time.sleep(0.2)  # the server has closed it


@pytest.fixture
def lease_db(async_server_database: AsyncDatabase) -> Iterator[AsyncDatabase]:
    with fresh_table(async_server_database.sync, workers_table):
        yield async_server_database


def test_close_on_a_connection_the_server_dropped_releases_on_a_new_one(
    lease_db: AsyncDatabase,
) -> None:
    server_db = lease_db

    async def main() -> int:
        engine = server_db.engine(pool_size=1, max_overflow=0)
        try:
            lease = await AsyncWorkerLease(engine, ttl=10, max_worker_id=3).start()
            ids = Snowflake(worker_id=lease)
            ids()
            assert lease._db is not None  # the lease's own pool (of one connection)
            sql = (
                "SELECT pg_backend_pid()"
                if server_db.backend == "postgresql"
                else ("SELECT CONNECTION_ID()")
            )
            async with lease._db.connect() as conn:
                backend = int(await conn.scalar(sa.text(sql)))
            await asyncio.to_thread(_drop_connection, server_db, backend)
            await lease.close()  # raised the driver's error before
            return lease.worker_id
        finally:
            await engine.dispose()

    worker_id = asyncio.run(main())
    assert row(server_db, worker_id).expires_at == 0  # released


# -- the lease row held by another transaction: close and a clock step end, never hang ------
# (the sync lease's: tests/faults/test_lease_stuck_renewal.py)

#: far more than a bounded call takes (about the ttl); far less than forever, or
#: MariaDB's default 50 s lock wait
HANG_BOUND_S = 30.0


def _lock_row(database: AsyncDatabase, worker_id: int) -> sa.Connection:
    """A connection whose open transaction holds the lease row (an admin's FOR UPDATE)."""
    conn = sa.create_engine(database.sync.url, poolclass=sa.pool.NullPool).connect()
    t = workers_table(sa.MetaData())
    conn.execute(sa.select(t).where(t.c.worker_id == worker_id).with_for_update())
    return conn


def _unlock(conn: sa.Connection) -> None:
    conn.rollback()
    conn.close()


async def _settle() -> None:
    # What a bounded call stopped waiting for ends once the row is free.
    others = asyncio.all_tasks() - {asyncio.current_task()}
    if others:
        _, pending = await asyncio.wait(others, timeout=HANG_BOUND_S)
        assert not pending, pending


def _asyncio_complaints(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "asyncio"]


def test_close_with_the_row_locked_warns_and_returns(
    lease_db: AsyncDatabase, caplog: pytest.LogCaptureFixture
) -> None:
    async def main() -> LoopTicker:
        engine = lease_db.engine()
        locker = None
        try:
            lease = await AsyncWorkerLease(engine, ttl=2, max_worker_id=0).start()
            ids = Snowflake(worker_id=lease)
            ids()
            locker = await asyncio.to_thread(_lock_row, lease_db, lease.worker_id)
            async with LoopTicker() as ticker:
                try:
                    await asyncio.wait_for(lease.close(), HANG_BOUND_S)
                except asyncio.TimeoutError:
                    pytest.fail(f"close() waited {HANG_BOUND_S} s for the locked row")
            assert not lease.valid
            with pytest.raises(WorkerLeaseLostError, match="it was closed"):
                ids()
            return ticker
        finally:
            if locker is not None:
                await asyncio.to_thread(_unlock, locker)
            await _settle()
            await engine.dispose()

    with caplog.at_level(logging.WARNING):
        ticker = asyncio.run(main())
    assert "could not release worker id 0" in caplog.text
    assert "did not answer" in caplog.text
    assert ticker.max_late < LATE, ticker
    assert not _asyncio_complaints(caplog)
    assert row(lease_db, 0).expires_at == 0  # the release went through once the row was free


@pytest.mark.parametrize("caller", ["greenlet", "thread"])
def test_a_clock_step_with_the_row_locked_raises_instead_of_hanging(
    lease_db: AsyncDatabase, caplog: pytest.LogCaptureFixture, caller: str
) -> None:
    # The clock steps 20 s forward: the generator must renew before it mints
    # past the mark, and the row is locked. "greenlet": a column default under
    # an AsyncConnection; "thread": a call from another thread.
    offset = [0]
    clock = lambda: time.time_ns() + offset[0]  # noqa: E731
    ids = Snowflake(clock=clock)
    metadata = sa.MetaData()
    events = sa.Table(
        "seqkeys_stuck_lease_events",
        metadata,
        sa.Column("id", sa.BigInteger, primary_key=True, autoincrement=False, default=ids),
    )

    async def insert(engine: AsyncEngine) -> None:
        async with engine.begin() as conn:
            await conn.execute(events.insert())

    async def main() -> BaseException | None:
        engine = lease_db.engine()
        locker = None
        lease = AsyncWorkerLease(engine, ttl=2, max_worker_id=0, clock=clock, max_skew=120)
        try:
            await lease.start()
            ids.bind(lease)
            await insert(engine)
            locker = await asyncio.to_thread(_lock_row, lease_db, lease.worker_id)
            offset[0] = 20 * 1_000_000_000
            minting = insert(engine) if caller == "greenlet" else asyncio.to_thread(ids)
            try:
                await asyncio.wait_for(minting, HANG_BOUND_S)
            except asyncio.TimeoutError:
                pytest.fail(f"the generator waited {HANG_BOUND_S} s for the locked row")
            except sa.exc.StatementError as exc:  # raised by the column default
                return exc.orig
            except WorkerLeaseLostError as exc:
                return exc
            return None
        finally:
            offset[0] = 0
            if locker is not None:
                await asyncio.to_thread(_unlock, locker)
            await asyncio.wait_for(lease.close(), HANG_BOUND_S)
            await _settle()
            await engine.dispose()

    with fresh_tables(lease_db.sync, metadata), caplog.at_level(logging.WARNING):
        error = asyncio.run(main())
    assert isinstance(error, WorkerLeaseLostError), error
    assert "worker id 0" in str(error)
    assert not _asyncio_complaints(caplog)
