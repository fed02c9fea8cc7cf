"""A lease's lifecycle under hostile timing: built before a fork and started in the child,
first starts racing to create the table, a close while the start is claiming, a ttl too
short to renew.

Each test states what was wrong before it: a lease started in a forked child claimed a row
it then called its parent's (never valid, never released, renewed for the life of the
process); concurrent first starts failed on "already exists"; a close during the claim
returned "never claimed" while the start went on to hold and renew the row; ttl=0.0003
wrote a row already expired and renewed it in a busy loop.
"""

from __future__ import annotations

import asyncio
import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import Engine

from sqlalchemy_seqkeys import (
    InvalidLeaseError,
    Snowflake,
    WorkerLease,
    WorkerLeaseLostError,
    workers_table,
)
from sqlalchemy_seqkeys.workers import AsyncWorkerLease
from tests._helpers import fresh_table, in_forked_child
from tests.conftest import AsyncDatabase, _async_database, _Engines

pytestmark = pytest.mark.backend

needs_fork = pytest.mark.skipif(not hasattr(os, "fork"), reason="os.fork() is POSIX-only")


@pytest.fixture(params=["sqlite", "postgresql"])
def lease_engine(request: pytest.FixtureRequest, engines: _Engines) -> Iterator[Engine]:
    with fresh_table(engines.get(request.param), workers_table) as fresh:
        yield fresh


@pytest.fixture(params=["sqlite+aiosqlite", "postgresql+asyncpg"])
def async_db(request: pytest.FixtureRequest, engines: _Engines) -> Iterator[AsyncDatabase]:
    database = _async_database(request.param, engines)
    with fresh_table(database.sync, workers_table):
        yield database


def _rows(engine: Engine) -> dict[int, Any]:
    t = workers_table(sa.MetaData())
    with engine.connect() as conn:
        return {r.worker_id: r for r in conn.execute(sa.select(t))}


def _lease_threads() -> list[str]:
    return [t.name for t in threading.enumerate() if t.name.startswith("seqkeys-lease")]


def _wait_for(path: Path, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists():
        assert time.monotonic() < deadline, f"{path.name} never appeared"
        time.sleep(0.01)


# -- 1. a lease built before a fork, started in the child -----------------------------------


@needs_fork
@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # fork() with threads alive
def test_a_lease_built_before_a_fork_is_the_childs_once_it_starts_there(
    lease_engine: Engine,
) -> None:
    # gunicorn --preload: the application module builds the lease, each worker starts it
    engine = sa.create_engine(lease_engine.url)
    lease = WorkerLease(engine, ttl=10)
    built_owner = lease.owner
    ids = Snowflake()

    def child() -> str:
        engine.dispose(close=False)
        lease.start()
        try:
            valid = lease.valid
            ids.bind(lease)
            minted = ids.decode(ids()).worker_id
            lease.check()
        finally:
            lease.close()
        return f"{lease.worker_id} {minted} {valid} {lease.closed} {lease.owner}"

    worker, minted, valid, closed, owner = in_forked_child(child).split()
    assert (valid, closed) == ("True", "True"), (worker, minted, valid, closed)
    assert minted == worker
    assert owner != built_owner  # drawn at the claim, in the process that claimed
    row = _rows(lease_engine)[int(worker)]
    assert row.owner == owner
    assert row.expires_at == 0  # released by the child's close
    # the parent's copy was never started: it starts here as a lease of its own
    with lease:
        assert lease.valid
        assert lease.owner not in (owner, built_owner)
    engine.dispose()


@needs_fork
@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # fork() with threads alive
def test_parent_and_child_starting_one_pre_fork_lease_hold_two_rows(
    lease_engine: Engine, tmp_path: Path
) -> None:
    engine = sa.create_engine(lease_engine.url)
    lease = WorkerLease(engine, ttl=10)
    held, parent_done = tmp_path / "held", tmp_path / "parent-done"

    def child() -> str:
        engine.dispose(close=False)
        with lease:
            held.write_text(f"{lease.worker_id} {lease.owner}")
            _wait_for(parent_done)
            assert lease.valid
            lease.check()
        return f"{lease.worker_id} {lease.owner} {lease.closed}"

    seen: dict[str, Any] = {}

    def parent() -> None:
        _wait_for(held)
        lease.start()
        seen["worker"], seen["owner"] = lease.worker_id, lease.owner
        seen["rows"] = _rows(lease_engine)
        parent_done.write_text("")

    said = in_forked_child(child, parent)
    try:
        child_worker, child_owner, child_closed = said.split()
        assert child_closed == "True", said
        assert int(child_worker) != seen["worker"]
        assert child_owner != seen["owner"]  # one owner each: no renewal of the other's row
        both = seen["rows"]
        assert both[int(child_worker)].owner == child_owner
        assert both[seen["worker"]].owner == seen["owner"]
        assert lease.valid
        assert _rows(lease_engine)[int(child_worker)].expires_at == 0
    finally:
        lease.close()
        engine.dispose()
    assert _rows(lease_engine)[seen["worker"]].expires_at == 0


@needs_fork
@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # fork() with threads alive
def test_a_lease_started_before_a_fork_stays_the_parents(lease_engine: Engine) -> None:
    engine = sa.create_engine(lease_engine.url)
    lease = WorkerLease(engine, ttl=10).start()

    def child() -> str:
        engine.dispose(close=False)
        with pytest.raises(InvalidLeaseError, match="forked from") as info:
            lease.start()
        lease.close()  # the parent's row: not released from here
        return f"{lease.valid} {lease.closed} | {info.value}"

    said = in_forked_child(child)
    try:
        assert said.startswith("False False | "), said
        assert "construct a new one in this process" in said
        assert lease.valid
        assert _rows(lease_engine)[lease.worker_id].expires_at > 0
    finally:
        lease.close()
        engine.dispose()


@needs_fork
@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # fork() with threads alive
def test_an_async_lease_built_before_a_fork_is_the_childs_once_it_starts_there(
    async_db: AsyncDatabase,
) -> None:
    engine = async_db.engine()  # no connection before the fork
    lease = AsyncWorkerLease(engine, ttl=10)
    built_owner = lease.owner
    ids = Snowflake()

    def child() -> str:
        async def main() -> str:
            try:
                async with lease:
                    valid = lease.valid
                    ids.bind(lease)
                    minted = ids.decode(ids()).worker_id
                    lease.check()
                return f"{lease.worker_id} {minted} {valid} {lease.closed} {lease.owner}"
            finally:
                await engine.dispose()

        return asyncio.run(main())

    worker, minted, valid, closed, owner = in_forked_child(child).split()
    assert (valid, closed) == ("True", "True"), (worker, minted, valid, closed)
    assert minted == worker
    assert owner != built_owner
    row = _rows(async_db.sync)[int(worker)]
    assert (row.owner, row.expires_at) == (owner, 0)

    async def parent() -> None:
        try:
            async with lease:
                assert lease.valid
        finally:
            await engine.dispose()

    asyncio.run(parent())


# -- 2. first starts racing to create the table ---------------------------------------------


def _first_starts_at_once(url: str, backend: str, racers: int = 8) -> list[object]:
    """``racers`` threads, an engine each, start a lease at one moment on a database with no
    lease table: each one's worker id, or its error."""
    kw: dict[str, Any] = {"connect_args": {"timeout": 30}} if backend == "sqlite" else {}
    pool = [sa.create_engine(url, **kw) for _ in range(racers)]
    barrier = threading.Barrier(racers)
    results: list[object] = []

    def claim(engine: Engine) -> None:
        barrier.wait()
        try:
            with WorkerLease(engine, ttl=10) as lease:
                results.append(lease.worker_id)
                time.sleep(0.3)  # every racer holds its id while the others claim
        except Exception as exc:  # collected, asserted by the caller
            results.append(exc)

    threads = [threading.Thread(target=claim, args=(e,)) for e in pool]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for e in pool:
        e.dispose()
    return results


@pytest.mark.parametrize("backend", ["sqlite", "postgresql", "mysql"])
def test_first_starts_racing_to_create_the_table_all_claim(backend: str, engines: _Engines) -> None:
    # PostgreSQL refused 5 to 7 of 8 with "duplicate key ... pg_type_typname_nsp_index" or
    # "relation ... already exists", as a WorkerLeaseDatabaseError about max_connections
    for trial in range(3):
        with engines.fresh_database(backend, f"leaserace{trial}") as url:
            results = _first_starts_at_once(url, backend)
        errors = [r for r in results if isinstance(r, BaseException)]
        assert not errors, [f"{type(e).__name__}: {e}" for e in errors]
        # all claimed (a racer that waited out SQLite's lock may take an id already released)
        assert len(results) == 8


def test_async_first_starts_racing_to_create_the_table_all_claim(engines: _Engines) -> None:
    pytest.importorskip("asyncpg")
    from sqlalchemy.ext.asyncio import create_async_engine

    with engines.fresh_database("postgresql", "leaserace_async") as url:

        async def main() -> list[object]:
            pool = [
                create_async_engine(sa.make_url(url).set(drivername="postgresql+asyncpg"))
                for _ in range(8)
            ]
            leases = [AsyncWorkerLease(e, ttl=10) for e in pool]
            try:
                return await asyncio.gather(
                    *(lease.start() for lease in leases), return_exceptions=True
                )
            finally:
                for lease in leases:
                    await lease.close()
                for e in pool:
                    await e.dispose()

        results = asyncio.run(main())
    errors = [r for r in results if isinstance(r, BaseException)]
    assert not errors, [f"{type(e).__name__}: {e}" for e in errors]


# -- 3. close() while start() is claiming ---------------------------------------------------


def _slow_claim(lease: WorkerLease, claiming: threading.Event, pause: Any) -> None:
    """The lease's claim commits, then takes a while before start() sees it."""
    claim = lease._row.claim

    def slow(conn: sa.Connection) -> Any:
        won = claim(conn)
        claiming.set()
        pause()
        return won

    lease._row.claim = slow  # type: ignore[method-assign]


def test_a_close_during_the_claim_leaves_nothing_held_or_renewed(lease_engine: Engine) -> None:
    lease = WorkerLease(lease_engine, ttl=1)
    claiming = threading.Event()
    _slow_claim(lease, claiming, lambda: time.sleep(0.5))
    outcome: list[object] = []

    def start() -> None:
        try:
            lease.start()
            outcome.append("started")
        except Exception as exc:  # asserted below
            outcome.append(exc)

    starter = threading.Thread(target=start)
    starter.start()
    assert claiming.wait(20)
    lease.close()  # a shutdown signal during startup
    assert lease.closed
    starter.join()
    assert len(outcome) == 1
    assert isinstance(outcome[0], WorkerLeaseLostError), outcome
    assert "closed while" in str(outcome[0])
    assert not lease.valid
    assert all(r.expires_at == 0 for r in _rows(lease_engine).values()), _rows(lease_engine)
    time.sleep(0.5)  # more than a renewal interval (ttl / 3)
    assert not _lease_threads()


def test_a_close_before_the_claim_makes_the_start_claim_nothing(lease_engine: Engine) -> None:
    lease = WorkerLease(lease_engine, ttl=1)
    original = lease._claim

    def closed_first(*args: Any) -> None:
        lease.close()  # another thread's close, between _begin_start and the claim
        original(*args)

    lease._claim = closed_first  # type: ignore[method-assign]
    with pytest.raises(WorkerLeaseLostError, match="closed while"):
        lease.start()
    assert _rows(lease_engine) == {}
    assert not _lease_threads()


def test_an_async_close_during_the_claim_leaves_nothing_held_or_renewed(
    async_db: AsyncDatabase,
) -> None:
    from sqlalchemy.util import await_only

    async def main() -> object:
        engine = async_db.engine()
        try:
            lease = AsyncWorkerLease(engine, ttl=1)
            claiming = threading.Event()
            _slow_claim(lease.sync_lease, claiming, lambda: await_only(asyncio.sleep(0.5)))
            starting = asyncio.ensure_future(lease.start())
            while not claiming.is_set():
                await asyncio.sleep(0.005)
            await lease.close()
            assert lease.closed
            try:
                await starting
            except Exception as exc:  # asserted below
                outcome: object = exc
            else:
                outcome = "started"
            await asyncio.sleep(0.5)  # more than a renewal interval
            tasks = [t.get_name() for t in asyncio.all_tasks() if "seqkeys-lease" in t.get_name()]
            assert not tasks, tasks
            return outcome
        finally:
            await engine.dispose()

    outcome = asyncio.run(main())
    assert isinstance(outcome, WorkerLeaseLostError), outcome
    assert "closed while" in str(outcome)
    assert all(r.expires_at == 0 for r in _rows(async_db.sync).values())


# -- 4. a ttl too short to renew ------------------------------------------------------------


@pytest.mark.parametrize("ttl", [0.0003, 0.001, 0.1, 0.2499])
def test_a_ttl_under_the_minimum_is_refused_naming_it(ttl: float, tmp_path: Path) -> None:
    engine = sa.create_engine(f"sqlite:///{tmp_path / 'ids.db'}")
    with pytest.raises(InvalidLeaseError, match=r"ttl must be at least 0\.25 s"):
        WorkerLease(engine, ttl=ttl)


def test_an_async_ttl_under_the_minimum_is_refused(tmp_path: Path) -> None:
    pytest.importorskip("aiosqlite")
    from sqlalchemy.ext.asyncio import create_async_engine

    engine = create_async_engine(f"sqlite+aiosqlite:///{tmp_path / 'ids.db'}")
    with pytest.raises(InvalidLeaseError, match=r"ttl must be at least 0\.25 s"):
        AsyncWorkerLease(engine, ttl=0.0003)


def test_the_minimum_ttl_claims_and_renews(lease_engine: Engine) -> None:
    with WorkerLease(lease_engine, ttl=0.25) as lease:
        ids = Snowflake(worker_id=lease)
        time.sleep(0.6)  # renewed every third of the ttl
        assert ids() > 0
        row = _rows(lease_engine)[lease.worker_id]
        assert row.expires_at > 0
