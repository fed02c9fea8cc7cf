"""A lease's claims and renewals run again after an abort; a fork mid-start leaves the child free.

What was wrong before each test: on Spanner, leases started at once from threads failed
with WorkerLeaseDatabaseError ("The transaction was aborted ...; check that the server is
up"): the emulator aborts all but one of the read-write transactions running at once, and
a claim was never run again. A renewal that aborted was swallowed without a trace and
waited for the next tick, and leases of a short ttl were lost. A process forked while one
of its threads was inside ``start()`` gave the child the lease's start lock held: the
child's ``start()`` blocked forever.

The forced aborts are made where the real ones come from: the dialect's ``do_commit``
raises the dbapi's ``RetryAborted`` after rolling the transaction back (as Spanner's
client does once its replay of an aborted transaction fails), which SQLAlchemy wraps as
it wraps the real one. The threaded test makes the emulator abort transactions of its
own accord.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Iterator
from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import Engine

from sqlalchemy_seqkeys import WorkerLease, WorkerLeaseDatabaseError, workers_table
from tests._faults_inject import failing, retry_aborted
from tests._helpers import fresh_table, in_forked_child
from tests.conftest import _Engines

pytestmark = pytest.mark.backend


def _rows(engine: Engine) -> dict[int, Any]:
    t = workers_table(sa.MetaData())
    with engine.connect() as conn:
        return {r.worker_id: r for r in conn.execute(sa.select(t))}


@pytest.fixture(params=["spanner", "postgresql"])
def lease_engine(request: pytest.FixtureRequest, engines: _Engines) -> Iterator[Engine]:
    with fresh_table(engines.get(request.param), workers_table) as fresh:
        yield fresh


@pytest.fixture
def spanner_leases(engines: _Engines) -> Iterator[Engine]:
    with fresh_table(engines.get("spanner"), workers_table) as fresh:
        yield fresh


# -- 1. claims ------------------------------------------------------------------------------


def test_leases_started_at_once_from_threads_all_claim(lease_engine: Engine) -> None:
    threads = 8
    engine = sa.create_engine(lease_engine.url, pool_size=threads, max_overflow=0)
    if engine.dialect.name == "spanner":
        from tests._emulator import configure_engine

        configure_engine(engine)
    barrier = threading.Barrier(threads)
    leases: list[WorkerLease] = []
    errors: list[BaseException] = []

    def start() -> None:
        barrier.wait()
        try:
            leases.append(WorkerLease(engine, ttl=30).start())
        except BaseException as exc:
            errors.append(exc)

    pool = [threading.Thread(target=start) for _ in range(threads)]
    try:
        for t in pool:
            t.start()
        for t in pool:
            t.join()
        assert errors == []
        ids = [lease.worker_id for lease in leases]
        assert len(ids) == threads
        assert len(set(ids)) == threads
        rows = _rows(lease_engine)
        assert {rows[i].owner for i in ids} == {lease.owner for lease in leases}
    finally:
        for lease in leases:
            lease.close()
        engine.dispose()


def test_an_aborted_claim_runs_again(
    spanner_leases: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    WorkerLease(spanner_leases, ttl=30).start().close()  # the table, created
    commits = failing(
        monkeypatch,
        spanner_leases,
        "do_commit",
        lambda n: n in (1, 2),
        retry_aborted,
        roll_back=True,
    )
    lease = WorkerLease(spanner_leases, ttl=30, create_table=False).start()
    try:
        assert commits[:3] == [1, 2, 3]  # aborted twice, then committed
        monkeypatch.undo()
        rows = _rows(spanner_leases)
        assert [w for w, r in rows.items() if r.owner == lease.owner] == [lease.worker_id]
        assert lease.valid
    finally:
        monkeypatch.undo()
        lease.close()


def test_a_claim_that_keeps_aborting_says_contention_not_server_down(
    spanner_leases: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    WorkerLease(spanner_leases, ttl=30).start().close()
    failing(monkeypatch, spanner_leases, "do_commit", lambda n: True, retry_aborted, roll_back=True)
    lease = WorkerLease(spanner_leases, ttl=30, create_table=False)
    with pytest.raises(WorkerLeaseDatabaseError) as raised:
        lease.start()
    monkeypatch.undo()
    message = str(raised.value)
    assert "server is up" not in message
    assert "aborted the claim's transaction 10 times" in message
    assert isinstance(raised.value.__cause__, sa.exc.OperationalError)
    assert all(r.owner != lease.owner for r in _rows(spanner_leases).values())


def _lost_connection() -> Exception:
    import psycopg

    return psycopg.OperationalError("server closed the connection unexpectedly")


def test_a_claim_whose_answer_was_lost_adopts_its_own_row(
    engines: _Engines, monkeypatch: pytest.MonkeyPatch
) -> None:
    # PostgreSQL runs a lease's statements in autocommit: the INSERT that claims is its
    # own COMMIT. The server ran it and the connection dropped before the answer came:
    # the retry finds the row under its owner and holds it, not a second one.
    with fresh_table(engines.get("postgresql"), workers_table) as pg:
        WorkerLease(pg, ttl=30).start().close()  # the table, and row 0 released
        engine = sa.create_engine(pg.url)
        try:
            real = engine.dialect.do_execute
            claims: list[str] = []

            def execute(cursor: Any, statement: str, *args: Any) -> Any:
                if statement.lstrip().startswith(("INSERT INTO seqkeys_workers", "UPDATE")):
                    claims.append(statement)
                    real(cursor, statement, *args)  # committed: autocommit
                    if len(claims) == 1:  # and the connection drops before the answer
                        cursor.connection.close()
                        raise _lost_connection()
                    return None
                return real(cursor, statement, *args)

            monkeypatch.setattr(engine.dialect, "do_execute", execute)
            lease = WorkerLease(engine, ttl=30, create_table=False).start()
            monkeypatch.undo()
            try:
                assert len(claims) == 2, claims  # the lost one, then the adoption
                mine = [w for w, r in _rows(pg).items() if r.owner == lease.owner]
                assert mine == [lease.worker_id]
                assert lease.valid
                lease._renew_once()
                assert lease.valid
            finally:
                lease.close()
            assert _rows(pg)[lease.worker_id].expires_at == 0
        finally:
            monkeypatch.undo()
            engine.dispose()


# -- 2. renewals ----------------------------------------------------------------------------


def test_an_aborted_renewal_runs_again_at_once_and_says_so(
    spanner_leases: Engine, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    lease = WorkerLease(spanner_leases, ttl=30).start()  # the job renews in 10 s
    try:
        before = lease._valid_until
        mark = lease.mark_ms
        commits = failing(
            monkeypatch,
            spanner_leases,
            "do_commit",
            lambda n: n == 1,
            retry_aborted,
            roll_back=True,
        )
        with caplog.at_level(logging.DEBUG, logger="sqlalchemy_seqkeys.workers"):
            assert lease._renew_scheduled() is True
        monkeypatch.undo()
        assert commits == [1, 2]  # aborted, then run again in the same turn
        assert lease._valid_until > before
        assert lease.mark_ms > mark
        assert lease.valid
        said = [r for r in caplog.records if r.name == "sqlalchemy_seqkeys.workers"]
        assert len(said) == 1, [r.getMessage() for r in said]
        assert "aborted" in said[0].getMessage().lower() or "ran again" in said[0].getMessage()
    finally:
        monkeypatch.undo()
        lease.close()


def test_a_renewal_that_keeps_failing_warns_once_and_keeps_its_last_validity(
    spanner_leases: Engine, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    lease = WorkerLease(spanner_leases, ttl=30).start()
    try:
        before = lease._valid_until
        failing(
            monkeypatch, spanner_leases, "do_commit", lambda n: True, retry_aborted, roll_back=True
        )
        with caplog.at_level(logging.DEBUG, logger="sqlalchemy_seqkeys.workers"):
            assert lease._renew_scheduled() is True
            assert lease._renew_scheduled() is True
        monkeypatch.undo()
        assert lease._valid_until == before  # judged by the last renewal that committed
        warned = [
            r
            for r in caplog.records
            if r.name == "sqlalchemy_seqkeys.workers" and r.levelno == logging.WARNING
        ]
        assert len(warned) == 1, [r.getMessage() for r in warned]
        assert f"worker id {lease.worker_id}" in warned[0].getMessage()
        caplog.clear()
        with caplog.at_level(logging.DEBUG, logger="sqlalchemy_seqkeys.workers"):
            assert lease._renew_scheduled() is True
        assert lease._valid_until > before
        assert any("renewed again" in r.getMessage() for r in caplog.records)
    finally:
        monkeypatch.undo()
        lease.close()


# -- 3. a fork while a thread is inside start() ---------------------------------------------


@pytest.mark.skipif(not hasattr(os, "fork"), reason="os.fork() is POSIX-only")
@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # fork() with threads alive
def test_a_fork_while_a_thread_starts_the_lease_leaves_the_childs_start_free(
    engines: _Engines,
) -> None:
    with fresh_table(engines.get("postgresql"), workers_table) as pg:
        engine = sa.create_engine(pg.url)
        lease = WorkerLease(engine, ttl=10)
        parent_pid = os.getpid()
        inside, go_on = threading.Event(), threading.Event()
        real_begin = lease._begin_start

        def begin_start() -> None:
            if os.getpid() == parent_pid:
                inside.set()  # holding the start lock
                go_on.wait(30)
            real_begin()

        lease._begin_start = begin_start  # type: ignore[method-assign]
        starter = threading.Thread(target=lease.start)
        starter.start()
        assert inside.wait(10)

        def child() -> str:
            engine.dispose(close=False)
            said: list[str] = []

            def start() -> None:
                with lease:
                    said.append(f"{lease.worker_id} {lease.owner}")

            t = threading.Thread(target=start, daemon=True)
            t.start()
            t.join(20)
            return said[0] if said else "blocked"

        try:
            said = in_forked_child(child)
        finally:
            go_on.set()
            starter.join(20)
        try:
            assert said != "blocked", "the child inherited the start lock held"
            worker, owner = said.split()
            assert owner != lease.owner
            assert lease.valid
            assert int(worker) >= 0
            # released by the child (the parent's start may have claimed that id since)
            assert all(r.expires_at == 0 for r in _rows(pg).values() if r.owner == owner)
        finally:
            lease.close()
            engine.dispose()
