"""An AsyncEngine shared by many event loops (``asyncio.run`` per job, a loop per test):
the allocation lane of each loop is released when that loop ends, and at the latest by
``await engine.dispose()``, so no loop leaves server connections (or aiosqlite threads)
open for good; keys stay unique throughout.
"""

from __future__ import annotations

import asyncio
import gc
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncEngine

from sqlalchemy_seqkeys import TableSequence, sequences_table
from sqlalchemy_seqkeys.sequences import _lane
from tests._helpers import fresh_table
from tests.conftest import AsyncDatabase

#: the lanes are the same on every server: PostgreSQL (through both drivers) and SQLite run them
LANE_DRIVERS = ["sqlite+aiosqlite", "postgresql+asyncpg", "postgresql+psycopg_async"]
pytestmark = [
    pytest.mark.backend,
    pytest.mark.parametrize("async_database", LANE_DRIVERS, indirect=True),
]

LOOPS = 8
LANE_MODES = ["separate", "batch", "async_batch"]


@pytest.fixture
def lane_db(async_database: AsyncDatabase) -> Iterator[AsyncDatabase]:
    with fresh_table(async_database.sync, sequences_table):
        yield async_database


def _sequence(db: AsyncDatabase, name: str, mode: str) -> TableSequence:
    """A TableSequence of ``mode`` created on ``db``: blocks of 5 where it takes blocks,
    the next one taken ahead at 2 left (``async_batch``)."""
    kw: dict[str, Any] = {"batch_size": 5} if mode != "separate" else {}
    if mode == "async_batch":
        kw["low_watermark"] = 2
    seq = TableSequence(name, mode=mode, **kw)  # type: ignore[arg-type]
    seq.create(db.sync)
    return seq


def _tagged_engine(db: AsyncDatabase, tag: str) -> AsyncEngine:
    """The database's AsyncEngine, its connections named ``tag`` on PostgreSQL."""
    if db.label == "postgresql+asyncpg":
        return db.engine(connect_args={"server_settings": {"application_name": tag}})
    if db.label == "postgresql+psycopg_async":
        return db.engine(connect_args={"application_name": tag})
    return db.engine()


def _server_connections(db: AsyncDatabase, tag: str) -> int:
    with db.sync.connect() as conn:
        return int(
            conn.scalar(
                sa.text(
                    "SELECT count(*) FROM pg_stat_activity "
                    "WHERE datname = current_database() AND application_name = :tag"
                ),
                {"tag": tag},
            )
        )


@dataclass
class _Watched:
    """An AsyncEngine on ``db``, its connections named ``tag`` on PostgreSQL, and the
    aiosqlite threads running before it: what tells whether it left anything open."""

    db: AsyncDatabase
    engine: AsyncEngine
    tag: str
    threads_before: int

    @classmethod
    def on(cls, db: AsyncDatabase) -> _Watched:
        tag = "seqkeys_lanes_" + uuid.uuid4().hex[:8]
        threads_before = _aiosqlite_threads()
        return cls(db, _tagged_engine(db, tag), tag, threads_before)

    def server_connections(self) -> int:
        return _server_connections(self.db, self.tag)

    def assert_nothing_left_open(self) -> None:
        """No lane of the engine alive, and no server connection (PostgreSQL) or aiosqlite
        thread (SQLite) of it left."""
        assert _lanes_of(self.engine) == []
        if self.db.backend == "postgresql":
            assert self.server_connections() == 0
        else:
            assert _aiosqlite_threads() == self.threads_before


def _lanes_of(engine: AsyncEngine) -> list[Any]:
    """The lanes of ``engine`` still alive anywhere in the process (not only registered)."""
    gc.collect()
    return [
        obj
        for obj in gc.get_objects()
        if isinstance(obj, _lane.Lane) and obj._root() is engine.sync_engine
    ]


def _aiosqlite_threads() -> int:
    return sum(1 for t in threading.enumerate() if type(t).__module__.startswith("aiosqlite"))


@pytest.mark.parametrize("mode", LANE_MODES)
def test_loops_sharing_an_engine_leave_no_lane(lane_db: AsyncDatabase, mode: str) -> None:
    seq = _sequence(lane_db, f"loops_{mode}", mode)
    watched = _Watched.on(lane_db)
    engine = watched.engine
    taken: list[int] = []

    async def job() -> None:
        for _ in range(3):
            taken.extend(await seq.next_values_async(engine, 4))
            taken.append(await seq.next_value_async(engine))

    try:
        for _ in range(LOOPS):
            asyncio.run(job())
        # each loop's lane was closed as its loop ended (asyncio.run shuts it down)
        assert [lane for lane in _lanes_of(engine) if not lane.closed] == []
        if lane_db.backend == "postgresql":
            assert watched.server_connections() <= 1  # the engine's own pool at most
        asyncio.run(engine.dispose())
        watched.assert_nothing_left_open()
    finally:
        asyncio.run(engine.dispose())
    assert len(taken) == LOOPS * 3 * 5
    assert len(set(taken)) == len(taken)


@pytest.mark.parametrize("mode", LANE_MODES)
def test_loops_closed_without_shutdown_are_released_by_dispose(
    lane_db: AsyncDatabase, mode: str
) -> None:
    """Loops closed without shutting their async generators down (``loop.close()`` after
    ``run_until_complete``): ``await engine.dispose()`` releases their lanes, and the
    next loop's lane releases those of loops that ended before it.

    Not asyncpg: its connections belong to their loop, and once that is closed nothing
    public closes them (SQLAlchemy logs the failed close, the driver closes the socket
    when collected, with a ResourceWarning), as for the engine's own pool.
    """
    if lane_db.label == "postgresql+asyncpg":
        pytest.skip("asyncpg cannot close a connection of a closed loop")
    seq = _sequence(lane_db, f"closed_{mode}", mode)
    watched = _Watched.on(lane_db)
    engine = watched.engine
    taken: list[int] = []

    async def job() -> None:
        taken.extend(await seq.next_values_async(engine, 7))

    try:
        for _ in range(LOOPS):
            loop = asyncio.new_event_loop()
            try:
                loop.run_until_complete(job())
            finally:
                loop.close()
            del loop
        assert len([lane for lane in _lanes_of(engine) if not lane.closed]) <= 1
        asyncio.run(engine.dispose())
        watched.assert_nothing_left_open()
    finally:
        asyncio.run(engine.dispose())
    assert len(set(taken)) == len(taken) == LOOPS * 7


def test_a_sync_dispose_outside_any_loop_closes_the_lanes_of_closed_loops(
    lane_db: AsyncDatabase,
) -> None:
    """``engine.sync_engine.dispose()`` where no loop runs: the lanes of loops closed
    without a shutdown are closed too (on a loop of the call's own)."""
    if lane_db.label == "postgresql+asyncpg":
        pytest.skip("asyncpg cannot close a connection of a closed loop")
    seq = _sequence(lane_db, "sync_dispose", "batch")
    watched = _Watched.on(lane_db)
    engine = watched.engine
    loop = asyncio.new_event_loop()
    try:
        taken = loop.run_until_complete(seq.next_values_async(engine, 3))
    finally:
        loop.close()
    engine.sync_engine.dispose()
    watched.assert_nothing_left_open()
    assert len(taken) == 3


def test_dispose_closes_the_lane_of_a_loop_running_in_another_thread(
    lane_db: AsyncDatabase,
) -> None:
    """``await engine.dispose()`` on one loop closes the lane of a loop that runs on in
    another thread: on that loop, by a task of it; that loop's next value opens a new one."""
    seq = _sequence(lane_db, "other_thread", "batch")
    watched = _Watched.on(lane_db)
    engine = watched.engine
    other = asyncio.new_event_loop()
    thread = threading.Thread(target=other.run_forever, daemon=True)
    thread.start()

    def on_other(n: int) -> list[int]:
        future = asyncio.run_coroutine_threadsafe(seq.next_values_async(engine, n), other)
        return future.result(timeout=30)

    try:
        taken = on_other(3)
        lane = next(lane for lane in _lanes_of(engine) if lane.loop is other)
        asyncio.run(engine.dispose())
        deadline = time.monotonic() + 10
        while not lane.released and time.monotonic() < deadline:
            time.sleep(0.01)
        assert lane.released
        if lane_db.backend == "postgresql":
            while watched.server_connections() and time.monotonic() < deadline:
                time.sleep(0.05)
            assert watched.server_connections() == 0
        taken += on_other(9)  # a new lane on the other loop
        assert len(set(taken)) == len(taken) == 12
    finally:
        asyncio.run_coroutine_threadsafe(engine.dispose(), other).result(timeout=30)
        other.call_soon_threadsafe(other.stop)
        thread.join(10)
        other.run_until_complete(other.shutdown_asyncgens())
        other.close()
        asyncio.run(engine.dispose())
